// hex_decode: every input form, every output, failure modes, and end to end.
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { RecordError } from '../../../src/core/errors.js';
import plugin from '../../../src/plugins/transforms/hex_decode/index.js';
import { runTransform, transformOf } from './_harness.js';

const { one: apply } = transformOf(plugin);

/** Decodes one value (field `v`) with extra config; throws like the transform. */
const dec = (v: unknown, cfg: object = {}) => apply({ fields: ['v'], ...cfg }, { v }).v;

describe('transform hex_decode', () => {
  it('has defaults: output text, utf-8, trim_nul, on_failure error', () => {
    expect(Value.Default(plugin.config, { fields: ['v'] })).toEqual({ fields: ['v'], output: 'text', encoding: 'utf-8', trim_nul: true, on_failure: 'error' });
    expect(Value.Check(plugin.config, { fields: ['v'], output: 'hex', encoding: 'utf-8', trim_nul: true, on_failure: 'error' })).toBe(false);
    expect(Value.Check(plugin.config, { fields: [], output: 'text', encoding: 'utf-8', trim_nul: true, on_failure: 'error' })).toBe(false);
  });

  it('reads 0x-prefixed, contiguous, colon-, dash- and space-separated hex in any case', () => {
    expect(dec('0x4e6f6b6961')).toBe('Nokia');
    expect(dec('0X4E6F6B6961')).toBe('Nokia');
    expect(dec('4e6f6b6961')).toBe('Nokia');
    expect(dec('4e:6f:6b')).toBe('Nok');
    expect(dec('4E 6F')).toBe('No');
    expect(dec(' 4e-6f  6b ')).toBe('Nok');
    expect(dec('4e6f 6b69 61')).toBe('Nokia');
    expect(dec('0x')).toBe('');
  });

  it('text: utf-8 (strict) or latin1, trailing NULs trimmed unless trim_nul is false', () => {
    expect(dec('c3a9')).toBe('é');
    expect(dec('e9', { encoding: 'latin1' })).toBe('é');
    expect(() => dec('e9')).toThrow(`hex_decode: field 'v' value "e9" does not decode as text (utf-8)`);
    expect(dec('41420000')).toBe('AB');
    expect(dec('41420000', { trim_nul: false })).toBe('AB\u0000\u0000');
    expect(dec('00410042')).toBe('\u0000A\u0000B');
  });

  it('base64: the bytes as they are', () => {
    expect(dec('ff:00:10', { output: 'base64' })).toBe('/wAQ');
    expect(dec('4e6f6b6961', { output: 'base64' })).toBe('Tm9raWE=');
  });

  it('mac: 6 or 8 bytes, lower case with colons; single-digit groups are padded', () => {
    expect(dec('0x001B2C3D4E5F', { output: 'mac' })).toBe('00:1b:2c:3d:4e:5f');
    expect(dec('0:1b:2c:3d:4e:5f', { output: 'mac' })).toBe('00:1b:2c:3d:4e:5f');
    expect(dec('00 1B 2C 3D 4E 5F 60 71', { output: 'mac' })).toBe('00:1b:2c:3d:4e:5f:60:71');
    expect(() => dec('001b2c3d4e', { output: 'mac' })).toThrow('does not decode as mac');
  });

  it('ipv4: 4 bytes dotted', () => {
    expect(dec('0xc0a80101', { output: 'ipv4' })).toBe('192.168.1.1');
    expect(dec('0a 00 00 ff', { output: 'ipv4' })).toBe('10.0.0.255');
    expect(() => dec('c0a801', { output: 'ipv4' })).toThrow('does not decode as ipv4');
  });

  it('ipv6: 16 bytes in RFC 5952 form', () => {
    expect(dec('20010db8000000000000000000000001', { output: 'ipv6' })).toBe('2001:db8::1');
    expect(dec('00000000000000000000000000000000', { output: 'ipv6' })).toBe('::');
    expect(dec('00000000000000000000000000000001', { output: 'ipv6' })).toBe('::1');
    expect(dec('fe800000000000000000000000000000', { output: 'ipv6' })).toBe('fe80::');
    // The longest zero run wins, the first on a tie, and a single zero group stays.
    expect(dec('20010db8000000010000000000000001', { output: 'ipv6' })).toBe('2001:db8:0:1::1');
    expect(dec('20010000000000010000000000010001', { output: 'ipv6' })).toBe('2001::1:0:0:1:1');
    expect(dec('20010db8000100020003000400050006', { output: 'ipv6' })).toBe('2001:db8:1:2:3:4:5:6');
    expect(() => dec('c0a80101', { output: 'ipv6' })).toThrow('does not decode as ipv6');
  });

  it('int: unsigned big-endian, exact as a decimal string beyond 2^53-1', () => {
    expect(dec('0x01f4', { output: 'int' })).toBe(500);
    expect(dec('ff', { output: 'int' })).toBe(255);
    expect(dec('ffffffffffff', { output: 'int' })).toBe(281474976710655);
    expect(dec('001fffffffffffff', { output: 'int' })).toBe(9007199254740991);
    expect(dec('0020000000000000', { output: 'int' })).toBe('9007199254740992');
    expect(dec('ffffffffffffffff', { output: 'int' })).toBe('18446744073709551615');
    expect(() => dec('', { output: 'int' })).toThrow('does not decode as int');
  });

  describe('failures', () => {
    const bad: unknown[] = ['xyz', '4e6', '4e:6f6:6b', '4e::6f', 'Nokia', 12, true, { a: 1 }, '0x' + 'ab'.repeat(140_000)];
    it('error (default) throws a record error', () => {
      for (const v of bad) expect(() => dec(v), JSON.stringify(v).slice(0, 20)).toThrow(RecordError);
      expect(() => dec('xyz')).toThrow(`hex_decode: field 'v' value "xyz" is not hex`);
    });
    it('null sets null, keep leaves the value', () => {
      for (const v of bad) {
        expect(dec(v, { on_failure: 'null' })).toBeNull();
        expect(dec(v, { on_failure: 'keep' })).toEqual(v);
      }
      expect(apply({ fields: ['v'], target: 't', on_failure: 'null' }, { v: 'zz' })).toEqual({ v: 'zz', t: null });
      expect(apply({ fields: ['v'], target: 't', on_failure: 'keep' }, { v: 'zz' })).toEqual({ v: 'zz' });
    });
  });

  it('decodes several fields; missing, null and inherited ones are left alone', () => {
    expect(apply({ fields: ['a', 'b', 'c', 'toString'] }, { a: '41', b: null })).toEqual({ a: 'A', b: null });
  });

  it('target keeps the source field; target needs exactly one field', () => {
    expect(apply({ fields: ['ifPhysAddress'], target: 'mac', output: 'mac' }, { ifPhysAddress: '0x001b2c3d4e5f' })).toEqual({
      ifPhysAddress: '0x001b2c3d4e5f',
      mac: '00:1b:2c:3d:4e:5f',
    });
    expect(plugin.lint!({ fields: ['a', 'b'], target: 'x' } as never)).toEqual([{ path: 'target', message: 'target needs exactly one field in fields' }]);
    expect(plugin.lint!({ fields: ['a'], target: 'x' } as never)).toEqual([]);
  });

  it('end to end: decoded fields, and an undecodable value as a record error', async () => {
    const { record, out } = await runTransform(
      [{ sysDescr: '0x4e6f6b6961', mac: '00:1b:2c:3d:4e:5f' }, { sysDescr: 'zz' }],
      '{ type: hex_decode, fields: [sysDescr] }',
    );
    expect(out).toEqual([{ sysDescr: 'Nokia', mac: '00:1b:2c:3d:4e:5f' }]);
    expect(record).toMatchObject({ status: 'success', records_in: 2, records_out: 1, records_skipped: 1 });
    expect(record.errors).toEqual([`transform error in in.ndjson: transforms[0] (hex_decode): hex_decode: field 'sysDescr' value "zz" is not hex`]);
    const m = await runTransform([{ a: 'c0a80001' }], '{ type: hex_decode, fields: [a], target: ip, output: ipv4 }');
    expect(m.out).toEqual([{ a: 'c0a80001', ip: '192.168.0.1' }]);
  });
});
