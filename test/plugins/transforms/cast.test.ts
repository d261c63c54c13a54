import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import plugin from '../../../src/plugins/transforms/cast/index.js';
import { RecordError } from '../../../src/core/errors.js';
import { silentLogger } from '../../../src/observability/log.js';
import type { Rec, RecordContext } from '../../../src/plugins/types.js';

const rc: RecordContext = { meta: {}, note: () => {} };
const make = (cfg: object) => plugin.create(Value.Default(plugin.config, cfg) as never, { pipeline: 't', log: silentLogger });
/** Casts one value (field `v`) and returns the result; throws like the transform. */
const cast = (type: string, v: unknown, on_failure?: string) =>
  (make({ fields: { v: type }, ...(on_failure ? { on_failure } : {}) }).apply({ v }, rc) as Rec).v;

describe('transform cast', () => {
  it('defaults on_failure to error', () => {
    expect(Value.Default(plugin.config, { fields: {} })).toEqual({ fields: {}, on_failure: 'error' });
    expect(Value.Check(plugin.config, { fields: { a: 'number' } })).toBe(false);
    expect(Value.Check(plugin.config, { fields: { a: 'int' }, on_failure: 'drop' })).toBe(false);
  });

  describe('int', () => {
    it('parses integer text, with sign and surrounding spaces', () => {
      expect(cast('int', '12')).toBe(12);
      expect(cast('int', ' 7 ')).toBe(7);
      expect(cast('int', '-3')).toBe(-3);
      expect(cast('int', '+4')).toBe(4);
      expect(cast('int', '007')).toBe(7);
    });
    it('parses hexadecimal text with 0x', () => {
      expect(cast('int', '0x1F')).toBe(31);
      expect(cast('int', '0xff')).toBe(255);
      expect(cast('int', ' 0X10 ')).toBe(16);
    });
    it('truncates numbers and decimal text toward zero', () => {
      expect(cast('int', 12.9)).toBe(12);
      expect(cast('int', -12.9)).toBe(-12);
      expect(cast('int', '12.9')).toBe(12);
      expect(cast('int', '1e3')).toBe(1000);
      expect(cast('int', 5)).toBe(5);
    });
    it('turns booleans into 1 and 0', () => {
      expect(cast('int', true)).toBe(1);
      expect(cast('int', false)).toBe(0);
    });
    it('fails on text that is not a number, empty text, null, lists and objects', () => {
      for (const v of ['abc', '', '   ', '12abc', '0xZZ', 'Infinity', null, [1], { a: 1 }]) {
        expect(() => cast('int', v), JSON.stringify(v)).toThrow(RecordError);
      }
      expect(() => cast('int', 'abc')).toThrow(`cast: field 'v' value "abc" is not a valid int`);
    });
  });

  describe('float', () => {
    it('parses decimal and exponent text and keeps numbers', () => {
      expect(cast('float', '3.25')).toBe(3.25);
      expect(cast('float', ' -0.5 ')).toBe(-0.5);
      expect(cast('float', '.5')).toBe(0.5);
      expect(cast('float', '2.5e-3')).toBe(0.0025);
      expect(cast('float', '12')).toBe(12);
      expect(cast('float', 7.5)).toBe(7.5);
      expect(cast('float', true)).toBe(1);
      expect(cast('float', false)).toBe(0);
    });
    it('fails on text that is not a number and on values JSON cannot carry (NaN, Infinity)', () => {
      for (const v of ['abc', '', '1.2.3', 'NaN', 'Infinity', '-Infinity', null, {}, [], NaN, Infinity]) {
        expect(() => cast('float', v), String(v)).toThrow(RecordError);
      }
      expect(() => cast('float', 'x1')).toThrow(`cast: field 'v' value "x1" is not a valid float`);
    });
  });

  describe('string', () => {
    it('writes numbers, booleans, lists and objects as text', () => {
      expect(cast('string', 12)).toBe('12');
      expect(cast('string', 2.5)).toBe('2.5');
      expect(cast('string', -0.25)).toBe('-0.25');
      expect(cast('string', true)).toBe('true');
      expect(cast('string', false)).toBe('false');
      expect(cast('string', { a: 1, b: [2, 'x'] })).toBe('{"a":1,"b":[2,"x"]}');
      expect(cast('string', [1, 2])).toBe('[1,2]');
      expect(cast('string', 'kept')).toBe('kept');
      expect(cast('string', '')).toBe('');
    });
    it('fails on null', () => {
      expect(() => cast('string', null)).toThrow(`cast: field 'v' value null is not a valid string`);
      expect(cast('string', null, 'keep')).toBeNull();
    });
  });

  describe('bool', () => {
    it('reads yes/no, on/off, true/false, 1/0, t/f, y/n in any case and with spaces', () => {
      for (const v of ['yes', 'on', 'true', '1', 't', 'y', 'YES', ' On ', 'True']) expect(cast('bool', v), v).toBe(true);
      for (const v of ['no', 'off', 'false', '0', 'f', 'n', 'NO', ' Off ', 'FALSE', '']) expect(cast('bool', v), v).toBe(false);
    });
    it('turns numbers into true unless 0 and keeps booleans', () => {
      expect(cast('bool', 1)).toBe(true);
      expect(cast('bool', 0)).toBe(false);
      expect(cast('bool', -2.5)).toBe(true);
      expect(cast('bool', true)).toBe(true);
      expect(cast('bool', false)).toBe(false);
    });
    it('fails on other text, null and objects', () => {
      for (const v of ['maybe', '2', 'yess', null, {}, []]) expect(() => cast('bool', v), JSON.stringify(v)).toThrow(RecordError);
      expect(() => cast('bool', 'maybe')).toThrow(`cast: field 'v' value "maybe" is not a valid bool`);
    });
  });

  describe('on_failure', () => {
    const rec = () => ({ a: '1', bad: 'x', c: '2.5' });
    it('error: throws a RecordError naming the field, value and type', () => {
      const t = make({ fields: { a: 'int', bad: 'int', c: 'float' }, on_failure: 'error' });
      const r = rec();
      let err: unknown;
      try {
        t.apply(r, rc);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(RecordError);
      expect((err as Error).message).toBe(`cast: field 'bad' value "x" is not a valid int`);
    });
    it('null: sets the failing field to null and converts the others', () => {
      expect(make({ fields: { a: 'int', bad: 'int', c: 'float' }, on_failure: 'null' }).apply(rec(), rc)).toEqual({ a: 1, bad: null, c: 2.5 });
    });
    it('keep: leaves the failing field as it was and converts the others', () => {
      expect(make({ fields: { a: 'int', bad: 'int', c: 'float' }, on_failure: 'keep' }).apply(rec(), rc)).toEqual({ a: 1, bad: 'x', c: 2.5 });
    });
  });

  it('leaves missing fields alone under every policy', () => {
    for (const on_failure of ['error', 'null', 'keep']) {
      expect(make({ fields: { missing: 'int' }, on_failure }).apply({ a: 1 }, rc)).toEqual({ a: 1 });
    }
  });

  it('does not treat inherited properties (constructor, toString) as fields', () => {
    const t = make({ fields: { constructor: 'int', toString: 'string', valueOf: 'bool' } });
    expect(t.apply({ a: 1 }, rc)).toEqual({ a: 1 });
    expect(t.apply(JSON.parse('{"constructor":"5"}'), rc)).toEqual({ constructor: 5 });
  });

  it('converts several fields of one record, keeping the field order', () => {
    const out = make({ fields: { ifIndex: 'int', ifSpeed: 'float', ifAdminUp: 'bool', id: 'string' } }).apply(
      { id: 7, ifIndex: '3', ifSpeed: '1e9', ifAdminUp: 'yes', other: 'x' },
      rc,
    ) as Rec;
    expect(out).toEqual({ id: '7', ifIndex: 3, ifSpeed: 1e9, ifAdminUp: true, other: 'x' });
    expect(Object.keys(out)).toEqual(['id', 'ifIndex', 'ifSpeed', 'ifAdminUp', 'other']);
  });
});
