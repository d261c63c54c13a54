import { describe, expect, it } from 'vitest';
import { safeEqual } from '../../src/auth/compare.js';
import { hashPassword, parseAuthUsers, verifyPassword } from '../../src/auth/passwords.js';

describe('hashPassword / verifyPassword', () => {
  it('stores scrypt$<16-byte salt hex>$<32-byte digest hex> with a fresh salt each time', async () => {
    const a = await hashPassword('s3cret');
    const b = await hashPassword('s3cret');
    expect(a).toMatch(/^scrypt\$[0-9a-f]{32}\$[0-9a-f]{64}$/);
    expect(a).not.toBe(b);
    expect(await verifyPassword('s3cret', a)).toBe(true);
    expect(await verifyPassword('s3cret', b)).toBe(true);
  });

  it('refuses a wrong password', async () => {
    const h = await hashPassword('s3cret');
    expect(await verifyPassword('s3cret ', h)).toBe(false);
    expect(await verifyPassword('', h)).toBe(false);
    expect(await verifyPassword('S3cret', h)).toBe(false);
  });

  it('handles passwords with $, : and non-ASCII text', async () => {
    const pw = 'p$a:ss wörd ✓';
    const h = await hashPassword(pw);
    expect(h.split('$')).toHaveLength(3);
    expect(await verifyPassword(pw, h)).toBe(true);
    // NFC and NFD spellings of the same text are the same password
    expect(await verifyPassword('p$a:ss wo\u0308rd ✓', h)).toBe(true);
  });

  it('is false (never throws) on malformed stored values', async () => {
    const good = await hashPassword('x');
    const [, salt, digest] = good.split('$');
    const malformed = [
      '',
      'x',
      'scrypt',
      `scrypt$${salt}`,
      `bcrypt$${salt}$${digest}`,
      `scrypt$${salt}$${digest}$extra`,
      `scrypt$$${digest}`,
      `scrypt$${salt}$`,
      `scrypt$zz${salt!.slice(2)}$${digest}`,
      `scrypt$${salt}$${digest!.slice(1)}`, // odd hex length
      `scrypt$${salt}$${digest!.slice(0, 30)}`, // 15-byte digest: too short
      `scrypt$${salt}$${'ab'.repeat(65)}`, // 65-byte digest: too long
      `SCRYPT$${salt}$${digest}`,
    ];
    for (const stored of malformed) expect(await verifyPassword('x', stored), stored).toBe(false);
    expect(await verifyPassword('x', undefined as unknown as string)).toBe(false);
  });

  it('detects a changed digest or salt', async () => {
    const h = await hashPassword('x');
    const [, salt, digest] = h.split('$') as [string, string, string];
    const flip = (hex: string) => (hex[0] === '0' ? '1' : '0') + hex.slice(1);
    expect(await verifyPassword('x', `scrypt$${salt}$${flip(digest)}`)).toBe(false);
    expect(await verifyPassword('x', `scrypt$${flip(salt)}$${digest}`)).toBe(false);
    expect(await verifyPassword('x', `scrypt$${salt.toUpperCase()}$${digest.toUpperCase()}`)).toBe(true);
  });
});

describe('parseAuthUsers', () => {
  it('splits at the first colon, so passwords may contain colons', () => {
    const { users, warnings } = parseAuthUsers(['admin:pa:ss', 'ops:', ' bob : x ']);
    expect([...users]).toEqual([
      ['admin', 'pa:ss'],
      ['ops', ''],
      ['bob', ' x'],
    ]);
    expect(warnings).toEqual([]);
  });

  it('ignores entries without a colon or without a user, with warnings that do not repeat the entry', () => {
    const { users, warnings } = parseAuthUsers(['admin:pw', 'secretpassword', ':nouser', '']);
    expect([...users.keys()]).toEqual(['admin']);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/entry 2 has no ':'/);
    expect(warnings[1]).toMatch(/entry 3 has an empty user name/);
    for (const w of warnings) expect(w).not.toMatch(/secretpassword|nouser/);
  });

  it('keeps the last entry of a repeated user and says so', () => {
    const { users, warnings } = parseAuthUsers(['a:1', 'a:2']);
    expect(users.get('a')).toBe('2');
    expect(warnings).toEqual(['SVC_AUTH_USERS lists user "a" more than once; the last entry wins']);
  });
});

describe('safeEqual', () => {
  it('compares strings of any length', () => {
    expect(safeEqual('key', 'key')).toBe(true);
    expect(safeEqual('key', 'kez')).toBe(false);
    expect(safeEqual('key', 'key2')).toBe(false);
    expect(safeEqual('', '')).toBe(true);
    expect(safeEqual('', 'x')).toBe(false);
  });
});
