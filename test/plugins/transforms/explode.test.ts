import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { Rec } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/explode/index.js';
import { loadTransforms, runTransform, transformOf } from './_harness.js';

const { cfg, apply, notes } = transformOf(plugin);

describe('transform explode', () => {
  it('gives one record per element, the element in place of the array', () => {
    const out = apply({ field: 'v' }, { id: 1, v: [10, 20, 30], z: 'x' }) as Rec[];
    expect(out).toEqual([
      { id: 1, v: 10, z: 'x' },
      { id: 1, v: 20, z: 'x' },
      { id: 1, v: 30, z: 'x' },
    ]);
    expect(Object.keys(out[1]!)).toEqual(['id', 'v', 'z']);
  });

  it('new records are distinct objects; elements (objects too) are kept as they are', () => {
    const el = { a: 1 };
    const out = apply({ field: 'v' }, { n: 1, v: [el, [1, 2], null] }) as Rec[];
    expect(out).toEqual([
      { n: 1, v: el },
      { n: 1, v: [1, 2] },
      { n: 1, v: null },
    ]);
    expect(out[0]).not.toBe(out[1]);
    expect(out[0]!.v).toBe(el);
    out[0]!.n = 9;
    expect(out[1]!.n).toBe(1);
  });

  it('target receives the element and the array field is removed; an existing target is replaced', () => {
    expect(apply({ field: 'vals', target: 'val' }, { a: 1, vals: [1, 2] })).toEqual([
      { a: 1, val: 1 },
      { a: 1, val: 2 },
    ]);
    const out = apply({ field: 'vals', target: 'val' }, { val: 'old', vals: [1], b: 2 }) as Rec[];
    expect(out).toEqual([{ val: 1, b: 2 }]);
    expect(Object.keys(out[0]!)).toEqual(['val', 'b']);
  });

  it('index_field adds the 0-based position next to the element', () => {
    const out = apply({ field: 'v', index_field: 'i' }, { v: ['a', 'b'], x: 1 }) as Rec[];
    expect(out).toEqual([
      { v: 'a', i: 0, x: 1 },
      { v: 'b', i: 1, x: 1 },
    ]);
    expect(Object.keys(out[0]!)).toEqual(['v', 'i', 'x']);
    expect(apply({ field: 'v', target: 't', index_field: 'i' }, { i: 'old', v: ['a'] })).toEqual([{ t: 'a', i: 0 }]);
  });

  it('keep_empty false (default): an empty array drops the record with a noted skip', () => {
    expect(apply({ field: 'v' }, { v: [], x: 1 })).toBeNull();
    expect(apply({ field: 'v', keep_empty: false }, { v: [] })).toBeNull();
    expect(notes).toEqual(["explode: field 'v' is an empty array: record dropped", "explode: field 'v' is an empty array: record dropped"]);
  });

  it('keep_empty true: an empty array gives one record with the target null and no index', () => {
    expect(apply({ field: 'v', keep_empty: true, index_field: 'i' }, { v: [], x: 1 })).toEqual({ v: null, x: 1 });
    expect(apply({ field: 'v', target: 't', keep_empty: true }, { v: [], x: 1 })).toEqual({ t: null, x: 1 });
    expect(notes).toEqual([]);
  });

  it('missing, null or inherited fields: the record passes unchanged, no message', () => {
    const r = { x: 1 };
    expect(apply({ field: 'v', target: 't', index_field: 'i' }, r)).toBe(r);
    const n = { v: null };
    expect(apply({ field: 'v', target: 't', index_field: 'i' }, n)).toBe(n);
    expect(apply({ field: 'constructor' }, r)).toBe(r);
    expect(notes).toEqual([]);
  });

  it('a non-array value counts as a one-element array (a lone XML element)', () => {
    const r = { v: { a: 1 }, x: 1 };
    expect(apply({ field: 'v' }, r)).toBe(r);
    expect(apply({ field: 'v', target: 't', index_field: 'i' }, { v: 'one', x: 1 })).toEqual({ t: 'one', i: 0, x: 1 });
    expect(apply({ field: 'v', index_field: 'i' }, { v: 5 })).toEqual({ v: 5, i: 0 });
  });

  it('keeps keys named __proto__ as data', () => {
    const out = apply({ field: '__proto__', target: 'el' }, JSON.parse('{"__proto__":[1,2],"a":1}')) as Rec[];
    expect(out).toEqual([
      { el: 1, a: 1 },
      { el: 2, a: 1 },
    ]);
    const t = apply({ field: 'v', target: '__proto__' }, { v: [{ x: 1 }] }) as Rec[];
    expect(Object.getOwnPropertyDescriptor(t[0], '__proto__')?.value).toEqual({ x: 1 });
    expect(Object.getPrototypeOf(t[0])).toBe(Object.prototype);
  });

  it('lint refuses an index_field equal to the target; the schema needs field', () => {
    expect(plugin.lint!(cfg({ field: 'v', index_field: 'v' }))).toEqual([{ path: 'index_field', message: "is the same field as the target 'v'" }]);
    expect(plugin.lint!(cfg({ field: 'v', target: 't', index_field: 't' }))[0]?.path).toBe('index_field');
    expect(plugin.lint!(cfg({ field: 'v', target: 't', index_field: 'v' }))).toEqual([]);
    expect(Value.Check(plugin.config, { target: 't' })).toBe(false);
    expect(Value.Check(plugin.config, { field: 'v', keep_empty: 'yes' })).toBe(false);
    const r = loadTransforms('    - { type: explode, field: v, index_field: v }');
    expect(r.config).toBeUndefined();
    expect(r.diagnostics.join('\n')).toContain('index_field');
  });

  it('end to end: records multiply, empty arrays are noted, later transforms see each copy', async () => {
    const { record, out } = await runTransform(
      [{ cell: 'c1', meas: [{ k: 'a' }, { k: 'b' }] }, { cell: 'c2', meas: [] }, { cell: 'c3' }],
      '    - { type: explode, field: meas, target: m, index_field: pos }\n    - { type: add_field, fields: { tag: "1" } }',
    );
    expect(out).toEqual([
      { cell: 'c1', m: { k: 'a' }, pos: 0, tag: 1 },
      { cell: 'c1', m: { k: 'b' }, pos: 1, tag: 1 },
      { cell: 'c3', tag: 1 },
    ]);
    expect(record).toMatchObject({ status: 'success', records_in: 3, records_out: 3, records_skipped: 0 });
    expect(record.errors).toEqual(["explode: field 'meas' is an empty array: record dropped"]);
  });
});
