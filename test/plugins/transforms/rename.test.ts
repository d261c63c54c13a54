import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import plugin from '../../../src/plugins/transforms/rename/index.js';
import { silentLogger } from '../../../src/observability/log.js';
import type { Rec, RecordContext } from '../../../src/plugins/types.js';

const rc: RecordContext = { meta: {}, note: () => {} };
const make = (cfg: object) => plugin.create(Value.Default(plugin.config, cfg) as never, { pipeline: 't', log: silentLogger });
const apply = (cfg: object, r: Rec) => make(cfg).apply(r, rc);

describe('transform rename', () => {
  it('renames every mapped field', () => {
    expect(apply({ fields: { ifInOctets: 'in_octets', ifOutOctets: 'out_octets' } }, { ifInOctets: 1, ifOutOctets: 2, ifIndex: 3 })).toEqual({
      in_octets: 1,
      out_octets: 2,
      ifIndex: 3,
    });
  });

  it('leaves records without the mapped fields untouched', () => {
    const r = { a: 1, b: 2 };
    const out = apply({ fields: { x: 'y' } }, r);
    expect(out).toEqual({ a: 1, b: 2 });
    expect(Object.keys(out as Rec)).toEqual(['a', 'b']);
    expect(apply({ fields: { x: 'y', a: 'z' } }, { a: 1 })).toEqual({ z: 1 });
  });

  it('does not treat inherited properties (constructor, toString) as fields', () => {
    const out = apply({ fields: { constructor: 'ctor', toString: 'ts', hasOwnProperty: 'h' } }, { a: 1 }) as Rec;
    expect(out).toEqual({ a: 1 });
    expect(Object.keys(out)).toEqual(['a']);
    expect('ctor' in out).toBe(false);
    // ...but a real field with such a name is renamed.
    expect(apply({ fields: { constructor: 'ctor' } }, JSON.parse('{"constructor": 5}'))).toEqual({ ctor: 5 });
  });

  it('lets the renamed value win over an existing target, wherever the target sits', () => {
    expect(apply({ fields: { a: 'b' } }, { a: 1, b: 2 })).toEqual({ b: 1 });
    expect(apply({ fields: { a: 'b' } }, { b: 2, a: 1 })).toEqual({ b: 1 });
    expect(apply({ fields: { a: 'b' } }, { b: 2, x: 0, a: 1 })).toEqual({ b: 1, x: 0 });
    // A null renamed value still wins.
    expect(apply({ fields: { a: 'b' } }, { a: null, b: 2 })).toEqual({ b: null });
  });

  it('swaps two fields', () => {
    const out = apply({ fields: { a: 'b', b: 'a' } }, { a: 1, b: 2, c: 3 }) as Rec;
    expect(out).toEqual({ a: 2, b: 1, c: 3 });
    expect(Object.keys(out)).toEqual(['b', 'a', 'c']);
    // Only one side present: a plain rename.
    expect(apply({ fields: { a: 'b', b: 'a' } }, { a: 1 })).toEqual({ b: 1 });
  });

  it('renames along a chain without cascading', () => {
    expect(apply({ fields: { a: 'b', b: 'c' } }, { a: 1, b: 2 })).toEqual({ b: 1, c: 2 });
  });

  it('keeps the field order: a renamed field stays at its position', () => {
    const out = apply({ fields: { b: 'B' } }, { a: 1, b: 2, c: 3 }) as Rec;
    expect(Object.keys(out)).toEqual(['a', 'B', 'c']);
    expect(JSON.stringify(out)).toBe('{"a":1,"B":2,"c":3}');
  });

  it('keeps values as they are (objects by reference, falsy values)', () => {
    const nested = { x: [1, 2] };
    const out = apply({ fields: { n: 'm', z: 'zero', e: 'empty', f: 'no' } }, { n: nested, z: 0, e: '', f: false }) as Rec;
    expect(out).toEqual({ m: nested, zero: 0, empty: '', no: false });
    expect(out.m).toBe(nested);
  });

  it('keeps a field literally named __proto__ as data', () => {
    const out = apply({ fields: { a: 'b' } }, JSON.parse('{"a":1,"__proto__":{"x":1}}')) as Rec;
    expect(JSON.parse(JSON.stringify(out))).toEqual(JSON.parse('{"b":1,"__proto__":{"x":1}}'));
    expect(Object.keys(out)).toEqual(['b', '__proto__']);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });

  it('lint refuses an empty map; the schema refuses empty names', () => {
    expect(plugin.lint!(Value.Default(plugin.config, { fields: {} }) as never)).toEqual([{ path: 'fields', message: 'names no field to rename' }]);
    expect(plugin.lint!(Value.Default(plugin.config, { fields: { a: 'b' } }) as never)).toEqual([]);
    expect(Value.Check(plugin.config, { fields: { a: '' } })).toBe(false);
    expect(Value.Check(plugin.config, { fields: { a: 'b' }, extra: 1 })).toBe(false);
  });
});
