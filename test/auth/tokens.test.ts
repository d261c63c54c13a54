import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bearerToken, issueToken, TOKEN_TTL_MS, verifyToken } from '../../src/auth/tokens.js';

const SECRET = 'test-secret';
const T0 = Date.UTC(2025, 0, 1, 12, 0, 0);

describe('session tokens', () => {
  it('are valid for exactly 8 hours', () => {
    expect(TOKEN_TTL_MS).toBe(8 * 3600 * 1000);
    const t = issueToken('alice', SECRET, T0);
    expect(verifyToken(t, SECRET, T0)).toBe('alice');
    expect(verifyToken(t, SECRET, T0 + TOKEN_TTL_MS - 1)).toBe('alice');
    expect(verifyToken(t, SECRET, T0 + TOKEN_TTL_MS)).toBeUndefined();
    expect(verifyToken(t, SECRET, T0 + 24 * 3600 * 1000)).toBeUndefined();
  });

  it('use the real clock by default', () => {
    const t = issueToken('alice', SECRET);
    expect(verifyToken(t, SECRET)).toBe('alice');
    expect(verifyToken(t, SECRET, Date.now() + TOKEN_TTL_MS + 1000)).toBeUndefined();
  });

  it('have the documented format: base64url JSON payload . base64url HMAC-SHA256', () => {
    const t = issueToken('alice', SECRET, T0);
    const [payload, sig] = t.split('.') as [string, string];
    expect(JSON.parse(Buffer.from(payload, 'base64url').toString())).toEqual({ v: 1, sub: 'alice', iat: T0, exp: T0 + TOKEN_TTL_MS });
    expect(sig).toBe(createHmac('sha256', SECRET).update(payload).digest('base64url'));
    expect(t).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  });

  it('carry any username, including non-ASCII and dots', () => {
    for (const u of ['bob.smith', 'Jörg', 'a:b', '"quoted"']) expect(verifyToken(issueToken(u, SECRET, T0), SECRET, T0)).toBe(u);
  });

  it('signed with another secret are refused', () => {
    const t = issueToken('alice', 'node-a-secret', T0);
    expect(verifyToken(t, 'node-b-secret', T0)).toBeUndefined();
    expect(verifyToken(t, 'node-a-secret', T0)).toBe('alice');
    expect(verifyToken(t, '', T0)).toBeUndefined();
  });

  it('that were tampered with are refused', () => {
    const t = issueToken('alice', SECRET, T0);
    const [payload, sig] = t.split('.') as [string, string];
    // another user, or a later expiry, with the original signature
    const forged = (claims: object) => `${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${sig}`;
    expect(verifyToken(forged({ v: 1, sub: 'admin', iat: T0, exp: T0 + TOKEN_TTL_MS }), SECRET, T0)).toBeUndefined();
    expect(verifyToken(forged({ v: 1, sub: 'alice', iat: T0, exp: T0 + 100 * TOKEN_TTL_MS }), SECRET, T0)).toBeUndefined();
    // one signature character changed
    const flipped = sig.slice(0, 5) + (sig[5] === 'A' ? 'B' : 'A') + sig.slice(6);
    expect(verifyToken(`${payload}.${flipped}`, SECRET, T0)).toBeUndefined();
    // truncated / extended signature
    expect(verifyToken(`${payload}.${sig.slice(0, -1)}`, SECRET, T0)).toBeUndefined();
    expect(verifyToken(`${payload}.${sig}A`, SECRET, T0)).toBeUndefined();
  });

  it('that are malformed are refused without throwing', () => {
    const t = issueToken('alice', SECRET, T0);
    const signed = (payload: string) => `${payload}.${createHmac('sha256', SECRET).update(payload).digest('base64url')}`;
    const b64 = (s: string) => Buffer.from(s).toString('base64url');
    for (const bad of [
      '',
      '.',
      'abc',
      `${t}.x`,
      `.${t.split('.')[1]}`,
      t.replace('.', '.='),
      `${t} `,
      'x'.repeat(5000),
      // correctly signed but not valid claims
      signed(b64('not json')),
      signed(b64('null')),
      signed(b64('"alice"')),
      signed(b64(JSON.stringify({ v: 2, sub: 'alice', exp: T0 + 1000 }))),
      signed(b64(JSON.stringify({ v: 1, sub: '', exp: T0 + 1000 }))),
      signed(b64(JSON.stringify({ v: 1, sub: 5, exp: T0 + 1000 }))),
      signed(b64(JSON.stringify({ v: 1, sub: 'alice', exp: String(T0 + 1000) }))),
      signed(b64(JSON.stringify({ v: 1, sub: 'alice' }))),
    ]) {
      expect(verifyToken(bad, SECRET, T0), bad.slice(0, 60)).toBeUndefined();
    }
    expect(verifyToken(undefined as unknown as string, SECRET, T0)).toBeUndefined();
    // the same shape with valid claims is accepted: the checks above are about content
    expect(verifyToken(signed(b64(JSON.stringify({ v: 1, sub: 'alice', exp: T0 + 1000 }))), SECRET, T0)).toBe('alice');
  });

  it('cannot be issued without a secret or a username', () => {
    expect(() => issueToken('alice', '', T0)).toThrow(/SVC_AUTH_SECRET/);
    expect(() => issueToken('', SECRET, T0)).toThrow(/username/);
  });
});

describe('bearerToken', () => {
  it('reads Authorization: Bearer <token>', () => {
    expect(bearerToken('Bearer abc.def')).toBe('abc.def');
    expect(bearerToken('bearer abc')).toBe('abc');
    expect(bearerToken('  Bearer   abc  ')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeUndefined();
    expect(bearerToken('Bearer')).toBeUndefined();
    expect(bearerToken('Bearer a b')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
    expect(bearerToken(['Bearer a'])).toBeUndefined();
  });
});
