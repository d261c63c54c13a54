import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { Rec } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/mask/index.js';
import { runTransform, transformOf } from './_harness.js';

const { cfg, make, apply, rc } = transformOf(plugin);
const sha = (alg: string, s: string, enc: 'hex' | 'base64' = 'hex') => createHash(alg).update(s).digest(enc);

describe('transform mask', () => {
  it('partial: keeps keep_first and keep_last characters, masks the rest with mask_char, keeps the length', () => {
    expect(apply({ fields: ['imsi'] }, { imsi: '208011234567890', x: 1 })).toEqual({ imsi: '***********7890', x: 1 });
    expect(apply({ fields: ['imsi'], keep_first: 5, keep_last: 2, mask_char: '#' }, { imsi: '208011234567890' })).toEqual({ imsi: '20801########90' });
    expect(apply({ fields: ['a'], keep_first: 2, keep_last: 0 }, { a: 'abcdef' })).toEqual({ a: 'ab****' });
  });

  it('partial: a value not longer than keep_first + keep_last is masked entirely', () => {
    expect(apply({ fields: ['a'], keep_first: 2, keep_last: 2 }, { a: 'abcd' })).toEqual({ a: '****' });
    expect(apply({ fields: ['a'] }, { a: 'abc' })).toEqual({ a: '***' });
    expect(apply({ fields: ['a'] }, { a: '' })).toEqual({ a: '' });
  });

  it('masks numbers as text (MSISDN read as a number) and several fields', () => {
    expect(apply({ fields: ['msisdn', 'imei'], keep_last: 2 }, { msisdn: 33612345678, imei: '35' })).toEqual({ msisdn: '*********78', imei: '**' });
  });

  it('hash: matches crypto.createHash for every algorithm and output', () => {
    for (const algorithm of ['sha256', 'sha1', 'md5']) {
      expect(apply({ fields: ['m'], mode: 'hash', algorithm }, { m: '33612345678' })).toEqual({ m: sha(algorithm, '33612345678') });
      expect(apply({ fields: ['m'], mode: 'hash', algorithm, output: 'base64' }, { m: '33612345678' })).toEqual({ m: sha(algorithm, '33612345678', 'base64') });
    }
    // Default algorithm is sha256, numbers hash as their text.
    expect(apply({ fields: ['m'], mode: 'hash' }, { m: 42 })).toEqual({ m: sha('sha256', '42') });
  });

  it('hash: salt is hashed before the value, and is reused correctly across records', () => {
    const t = make({ fields: ['m'], mode: 'hash', salt: 's3cr3t' });
    expect(t.apply({ m: 'a' }, rc)).toEqual({ m: sha('sha256', 's3cr3ta') });
    expect(t.apply({ m: 'b' }, rc)).toEqual({ m: sha('sha256', 's3cr3tb') });
    expect(t.apply({ m: 'a' }, rc)).toEqual({ m: sha('sha256', 's3cr3ta') });
    expect(apply({ fields: ['m'], mode: 'hash' }, { m: 'a' })).not.toEqual({ m: sha('sha256', 's3cr3ta') });
  });

  it('hash: truncate keeps the first N characters of the encoded digest', () => {
    expect(apply({ fields: ['m'], mode: 'hash', truncate: 16 }, { m: 'x' })).toEqual({ m: sha('sha256', 'x').slice(0, 16) });
    expect(apply({ fields: ['m'], mode: 'hash', output: 'base64', truncate: 8, algorithm: 'md5' }, { m: 'x' })).toEqual({
      m: sha('md5', 'x', 'base64').slice(0, 8),
    });
  });

  it('redact: replaces the value with replacement (any type)', () => {
    expect(apply({ fields: ['a', 'b'], mode: 'redact' }, { a: 'secret', b: { x: 1 } })).toEqual({ a: '***', b: '***' });
    expect(apply({ fields: ['a'], mode: 'redact', replacement: '[hidden]' }, { a: 5 })).toEqual({ a: '[hidden]' });
  });

  it('ipv4: keeps the first ipv4_prefix bits; non-IPv4 values are redacted', () => {
    expect(apply({ fields: ['ip'], mode: 'ipv4' }, { ip: '10.1.2.3' })).toEqual({ ip: '10.1.2.0' });
    expect(apply({ fields: ['ip'], mode: 'ipv4', ipv4_prefix: 16 }, { ip: '192.168.200.9' })).toEqual({ ip: '192.168.0.0' });
    expect(apply({ fields: ['ip'], mode: 'ipv4', ipv4_prefix: 20 }, { ip: '172.16.255.1' })).toEqual({ ip: '172.16.240.0' });
    expect(apply({ fields: ['ip'], mode: 'ipv4', ipv4_prefix: 32 }, { ip: '255.255.255.255' })).toEqual({ ip: '255.255.255.255' });
    expect(apply({ fields: ['ip'], mode: 'ipv4', ipv4_prefix: 0 }, { ip: '8.8.8.8' })).toEqual({ ip: '0.0.0.0' });
    expect(apply({ fields: ['ip'], mode: 'ipv4' }, { ip: '2001:db8::1' })).toEqual({ ip: '***' });
    expect(apply({ fields: ['ip'], mode: 'ipv4', replacement: 'n/a' }, { ip: '10.1.2.300' })).toEqual({ ip: 'n/a' });
    expect(apply({ fields: ['ip'], mode: 'ipv4' }, { ip: 167837955 })).toEqual({ ip: '***' });
  });

  it('leaves missing, null and inherited fields alone; a __proto__ field stays data', () => {
    expect(apply({ fields: ['a', 'constructor'], mode: 'redact' }, { a: null, b: 1 })).toEqual({ a: null, b: 1 });
    expect(apply({ fields: ['a'], mode: 'redact' }, { b: 1 })).toEqual({ b: 1 });
    const r = JSON.parse('{"__proto__": "x"}') as Rec;
    const out = apply({ fields: ['__proto__'], mode: 'redact' }, r) as Rec;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(out, '__proto__')?.value).toBe('***');
  });

  it('schema: needs fields; mask_char is one character; ipv4_prefix 0..32', () => {
    expect(Value.Check(plugin.config, cfg({ fields: ['a'] }))).toBe(true);
    expect(Value.Check(plugin.config, cfg({ fields: [] }))).toBe(false);
    expect(Value.Check(plugin.config, cfg({ fields: ['a'], mask_char: 'ab' }))).toBe(false);
    expect(Value.Check(plugin.config, cfg({ fields: ['a'], ipv4_prefix: 33 }))).toBe(false);
    expect(Value.Check(plugin.config, cfg({ fields: ['a'], mode: 'hash', algorithm: 'sha512' }))).toBe(false);
    expect(Value.Check(plugin.config, cfg({ fields: ['a'], truncate: 0 }))).toBe(false);
  });

  it('lint: parameters of another mode are flagged', () => {
    expect(plugin.lint!(cfg({ fields: ['a'], mode: 'hash', keep_first: 3 }))).toEqual([
      { path: 'keep_first', message: 'applies to mode partial only (mode is hash)' },
    ]);
    expect(plugin.lint!(cfg({ fields: ['a'], salt: 'x', truncate: 4 })).map((i) => i.path)).toEqual(['salt', 'truncate']);
    expect(plugin.lint!(cfg({ fields: ['a'], mode: 'redact', ipv4_prefix: 16 })).map((i) => i.path)).toEqual(['ipv4_prefix']);
  });

  it('end to end: salt from ${VAR}, hash, partial and ipv4 in one pipeline', async () => {
    const { record, out, dirs } = await runTransform(
      [
        { imsi: '208011234567890', msisdn: '33612345678', ip: '10.20.30.40' },
        { imsi: '1', ip: 'bad' },
      ],
      [
        '{ type: mask, fields: [msisdn], mode: hash, salt: "${SALT}", truncate: 12 }',
        '{ type: mask, fields: [imsi], keep_first: 5, keep_last: 2 }',
        '{ type: mask, fields: [ip], mode: ipv4, ipv4_prefix: 24 }',
      ],
      { env: { SALT: 'pepper' } },
    );
    expect(record).toMatchObject({ status: 'success', records_in: 2, records_out: 2, records_skipped: 0, errors: [] });
    expect(readdirSync(dirs.out)).toEqual(['out.ndjson']);
    expect(out).toEqual([
      { imsi: '20801########90'.replaceAll('#', '*'), msisdn: sha('sha256', 'pepper33612345678').slice(0, 12), ip: '10.20.30.0' },
      { imsi: '*', ip: '***' },
    ]);
  });
});
