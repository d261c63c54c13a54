// Session tokens of browser login (spec doc 2 section 5): valid 8 hours, HMAC-SHA256 signed with
// SVC_AUTH_SECRET. Format: `<payload>.<signature>`, both base64url without padding; payload is the
// JSON `{"v":1,"sub":<username>,"iat":<ms>,"exp":<ms>}` (epoch milliseconds), signature is
// HMAC-SHA256(secret, <payload as sent>). Stateless: a token stays valid until `exp` (no revocation).
import { createHmac, timingSafeEqual } from 'node:crypto';

export const TOKEN_TTL_MS = 8 * 60 * 60 * 1000;
/** Longer tokens are refused before any work (a username is at most a few hundred bytes). */
const MAX_TOKEN_LENGTH = 4096;
const B64URL = /^[A-Za-z0-9_-]+$/;

const sign = (payload: string, secret: string) => createHmac('sha256', secret).update(payload, 'utf8').digest('base64url');

/** A token for `username`, expiring TOKEN_TTL_MS after `nowMs`. Throws on an empty secret or username. */
export function issueToken(username: string, secret: string, nowMs: number = Date.now()): string {
  if (!secret) throw new Error('session tokens need a secret (SVC_AUTH_SECRET)');
  if (!username) throw new Error('session tokens need a username');
  const payload = Buffer.from(JSON.stringify({ v: 1, sub: username, iat: nowMs, exp: nowMs + TOKEN_TTL_MS }), 'utf8').toString('base64url');
  return `${payload}.${sign(payload, secret)}`;
}

/**
 * The username of a valid token, else undefined: malformed, signed with another secret (checked in
 * constant time), or expired (`nowMs >= exp`).
 */
export function verifyToken(token: string, secret: string, nowMs: number = Date.now()): string | undefined {
  if (!secret || typeof token !== 'string' || token.length > MAX_TOKEN_LENGTH) return undefined;
  const dot = token.indexOf('.');
  if (dot < 0 || dot !== token.lastIndexOf('.')) return undefined;
  const payload = token.slice(0, dot);
  const signature = token.slice(dot + 1);
  if (!B64URL.test(payload) || !B64URL.test(signature)) return undefined;
  const expected = Buffer.from(sign(payload, secret), 'ascii');
  const given = Buffer.from(signature, 'ascii');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof claims !== 'object' || claims === null) return undefined;
  const { v, sub, exp } = claims as Record<string, unknown>;
  if (v !== 1 || typeof sub !== 'string' || sub === '' || typeof exp !== 'number' || !Number.isFinite(exp)) return undefined;
  return nowMs < exp ? sub : undefined;
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), else undefined. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  const m = /^\s*Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}
