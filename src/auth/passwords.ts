// Password hashing for browser login (spec doc 2 section 5): stored as `scrypt$<salt>$<digest>`.
// Salt and digest are lower-case hex. Parameters are fixed (node:crypto scrypt defaults:
// N=16384, r=8, p=1), salt 16 random bytes, digest 32 bytes; verifyPassword derives the digest
// length from the stored digest, so hashes with another digest length (16..64 bytes) still verify.
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

export const SCRYPT_PARAMS: Readonly<ScryptOptions> = Object.freeze({ N: 16384, r: 8, p: 1 });
const SALT_BYTES = 16;
const DIGEST_BYTES = 32;

function derive(password: string, salt: Buffer, keylen: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, keylen, SCRYPT_PARAMS, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** `scrypt$<salt hex>$<digest hex>` with a fresh random 16-byte salt. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const digest = await derive(password, salt, DIGEST_BYTES);
  return `scrypt$${salt.toString('hex')}$${digest.toString('hex')}`;
}

const HEX = /^(?:[0-9a-f]{2})+$/i;

/**
 * True when `password` matches `stored` (constant-time digest comparison). A malformed stored
 * value (wrong scheme, not three `$`-separated parts, non-hex, digest outside 16..64 bytes) is false.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  if (typeof password !== 'string' || typeof stored !== 'string') return false;
  const parts = stored.split('$');
  if (parts.length !== 3 || parts[0] !== 'scrypt') return false;
  const [, saltHex, digestHex] = parts as [string, string, string];
  if (!HEX.test(saltHex) || !HEX.test(digestHex)) return false;
  const expected = Buffer.from(digestHex, 'hex');
  if (expected.length < 16 || expected.length > 64) return false;
  const actual = await derive(password, Buffer.from(saltHex, 'hex'), expected.length);
  return timingSafeEqual(actual, expected);
}

export interface ParsedAuthUsers {
  /** username -> plain-text bootstrap password. */
  users: Map<string, string>;
  /** One line per ignored entry; never contains the entry itself (it may be a password). */
  warnings: string[];
}

/**
 * SVC_AUTH_USERS entries (`user:password`, already split on commas) -> users. The password is
 * everything after the first ':' (so it may contain ':'). Entries without ':' or with an empty
 * user name are ignored with a warning; a repeated user name keeps the last entry (warning too).
 */
export function parseAuthUsers(list: readonly string[]): ParsedAuthUsers {
  const users = new Map<string, string>();
  const warnings: string[] = [];
  list.forEach((raw, i) => {
    const entry = raw.trim();
    if (entry === '') return;
    const at = entry.indexOf(':');
    if (at < 0) {
      warnings.push(`SVC_AUTH_USERS entry ${i + 1} has no ':' (expected user:password); ignored`);
      return;
    }
    const user = entry.slice(0, at).trim();
    if (user === '') {
      warnings.push(`SVC_AUTH_USERS entry ${i + 1} has an empty user name (expected user:password); ignored`);
      return;
    }
    if (users.has(user)) warnings.push(`SVC_AUTH_USERS lists user ${JSON.stringify(user)} more than once; the last entry wins`);
    users.set(user, entry.slice(at + 1));
  });
  return { users, warnings };
}
