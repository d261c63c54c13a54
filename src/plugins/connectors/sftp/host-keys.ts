// Host-key checking for the sftp connector, in OpenSSH's terms: known_hosts lines (plain names,
// `[host]:port` for other ports than 22, hashed `|1|salt|hash` entries, `*`/`?` wildcards, `!`
// negation, `@revoked`), SHA256 fingerprints as `ssh-keygen -l` prints them, and the modes of
// StrictHostKeyChecking: `accept-new` (the default: a host seen for the first time is accepted,
// logged and remembered; a known host offering another key is refused), `strict` (only keys already
// in known_hosts) and `off`. A pinned `host_key_fingerprint` replaces the file.
import { createHash, createHmac } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

export type HostKeyCheck = 'accept-new' | 'strict' | 'off';

export interface HostKeyPolicy {
  check: HostKeyCheck;
  /** The known_hosts file consulted (and appended to under accept-new when `record` is set). */
  file: string;
  /** SHA256:... : only this key is accepted, the file is neither read nor written. */
  fingerprint?: string;
  /** Remember a newly accepted key; false for reachability checks, which change nothing. */
  record: boolean;
}

export type Verdict = { ok: true; added?: string } | { ok: false; reason: string };

/** `SHA256:<base64 without padding>`, as `ssh-keygen -l -E sha256` and `ssh` print it. */
export const fingerprintOf = (key: Buffer): string => `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;

/** A fingerprint as users paste it: with or without the `SHA256:` prefix and base64 padding. */
const normalFingerprint = (f: string): string =>
  `SHA256:${f
    .trim()
    .replace(/^SHA256:/i, '')
    .replace(/=+$/, '')}`;

/** The key type named inside an SSH public key blob (`ssh-ed25519`, `ssh-rsa`...). */
export function keyTypeOf(key: Buffer): string {
  if (key.length < 4) return 'unknown';
  const n = key.readUInt32BE(0);
  return key.subarray(4, 4 + n).toString('latin1');
}

/** How known_hosts names a server: `host` on port 22, `[host]:port` on any other. */
export const knownHostsName = (host: string, port: number): string => (port === 22 ? host : `[${host}]:${port}`);

interface KnownKey {
  marker?: string;
  type: string;
  key: Buffer;
  line: number;
}

const globToRegExp = (glob: string): RegExp =>
  new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    'i',
  );

/** OpenSSH's host pattern list: any positive match, and no negated (`!pattern`) match. */
function hostMatches(patterns: string, name: string): boolean {
  let matched = false;
  for (const p of patterns.split(',')) {
    if (p.startsWith('|1|')) {
      const [, , salt, hash] = p.split('|');
      if (salt && hash && createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64') === hash) matched = true;
      continue;
    }
    const negated = p.startsWith('!');
    if (globToRegExp(negated ? p.slice(1) : p).test(name)) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}

/** The keys a known_hosts text holds for `name` (certificate authorities left out). */
export function knownKeys(text: string, name: string): KnownKey[] {
  const out: KnownKey[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const fields = line.split(/\s+/);
    const marker = fields[0]!.startsWith('@') ? fields.shift()!.slice(1) : undefined;
    const [hosts, type, b64] = fields;
    if (!hosts || !type || !b64 || marker === 'cert-authority') return;
    if (hostMatches(hosts, name)) out.push({ marker, type, key: Buffer.from(b64, 'base64'), line: i + 1 });
  });
  return out;
}

async function readKnownHosts(file: string): Promise<string> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw new Error(`cannot read known_hosts file ${file}: ${(e as Error).message}`, { cause: e });
  }
}

/** Host-key algorithms ssh2 can negotiate, per known_hosts key type. */
const ALGORITHMS: Record<string, string[]> = {
  'ssh-ed25519': ['ssh-ed25519'],
  'ecdsa-sha2-nistp256': ['ecdsa-sha2-nistp256'],
  'ecdsa-sha2-nistp384': ['ecdsa-sha2-nistp384'],
  'ecdsa-sha2-nistp521': ['ecdsa-sha2-nistp521'],
  'ssh-rsa': ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'],
  'ssh-dss': ['ssh-dss'],
};

/**
 * The host-key algorithms to offer first: those of the keys already known for the server, so a
 * server with several host keys shows the one known_hosts holds (as OpenSSH's client does).
 */
export async function preferredAlgorithms(policy: HostKeyPolicy, host: string, port: number): Promise<string[]> {
  if (policy.check === 'off' || policy.fingerprint) return [];
  const keys = knownKeys(await readKnownHosts(policy.file), knownHostsName(host, port)).filter((k) => !k.marker);
  return [...new Set(keys.flatMap((k) => ALGORITHMS[k.type] ?? []))];
}

/** Judges the key a server offered; under accept-new a first-seen key is appended to the file. */
export async function verifyHostKey(policy: HostKeyPolicy, host: string, port: number, key: Buffer): Promise<Verdict> {
  if (policy.check === 'off') return { ok: true };
  const name = knownHostsName(host, port);
  const type = keyTypeOf(key);
  const offered = `${type} ${fingerprintOf(key)}`;
  if (policy.fingerprint) {
    if (fingerprintOf(key) === normalFingerprint(policy.fingerprint)) return { ok: true };
    return {
      ok: false,
      reason: `host key of ${name} is ${offered}, not host_key_fingerprint ${policy.fingerprint}; if the server's key was replaced on purpose, update host_key_fingerprint`,
    };
  }
  const known = knownKeys(await readKnownHosts(policy.file), name);
  const revoked = known.find((k) => k.marker === 'revoked' && k.key.equals(key));
  if (revoked) return { ok: false, reason: `host key of ${name} (${offered}) is marked @revoked in ${policy.file} line ${revoked.line}` };
  const plain = known.filter((k) => !k.marker);
  if (plain.some((k) => k.key.equals(key))) return { ok: true };
  if (plain.length > 0) {
    return {
      ok: false,
      reason: `host key of ${name} has CHANGED: the server offered ${offered}, but ${policy.file} line ${plain[0]!.line} holds another key for it (someone may be intercepting the connection); if the key was replaced on purpose, remove the old entry (ssh-keygen -R '${name}' -f ${policy.file}) and connect again`,
    };
  }
  if (policy.check === 'strict') {
    return {
      ok: false,
      reason: `host key of ${name} (${offered}) is not in ${policy.file} and host_key_check is strict; add it (ssh-keyscan -p ${port} ${host} >> ${policy.file}) or use host_key_check: accept-new`,
    };
  }
  if (!policy.record) return { ok: true };
  await fs.mkdir(path.dirname(policy.file), { recursive: true, mode: 0o700 });
  await fs.appendFile(policy.file, `${name} ${type} ${key.toString('base64')}\n`, { mode: 0o600 });
  return { ok: true, added: offered };
}
