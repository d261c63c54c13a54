import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { Rec } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/melt/index.js';
import { loadTransforms, runTransform, transformOf } from './_harness.js';

const { cfg, apply, notes } = transformOf(plugin);

describe('transform melt', () => {
  const pm = () => ({ node: 'n1', cell: 'c1', succ: 95, att: 100 });

  it('gives one record per field not in id_fields: ids, then metric and value (pandas.melt)', () => {
    const out = apply({ id_fields: ['node', 'cell'] }, pm()) as Rec[];
    expect(out).toEqual([
      { node: 'n1', cell: 'c1', metric: 'succ', value: 95 },
      { node: 'n1', cell: 'c1', metric: 'att', value: 100 },
    ]);
    expect(Object.keys(out[0]!)).toEqual(['node', 'cell', 'metric', 'value']);
    expect(out[0]).not.toBe(out[1]);
  });

  it('id fields keep the order of id_fields, and a missing id is simply absent', () => {
    expect(apply({ id_fields: ['cell', 'node', 'time'] }, { node: 'n', cell: 'c', x: 1 })).toEqual([{ cell: 'c', node: 'n', metric: 'x', value: 1 }]);
  });

  it('id_fields defaults to none: every field is melted', () => {
    expect(apply({}, { a: 1, b: 'x' })).toEqual([
      { metric: 'a', value: 1 },
      { metric: 'b', value: 'x' },
    ]);
  });

  it('value_fields melts only those, in their order; other fields are dropped; missing ones give no record', () => {
    expect(apply({ id_fields: ['cell'], value_fields: ['att', 'missing', 'succ'] }, pm())).toEqual([
      { cell: 'c1', metric: 'att', value: 100 },
      { cell: 'c1', metric: 'succ', value: 95 },
    ]);
    expect(apply({ value_fields: ['constructor', 'att'] }, pm())).toEqual([{ metric: 'att', value: 100 }]);
    expect(Value.Check(plugin.config, cfg({ value_fields: [] }))).toBe(false);
  });

  it('var_name and value_name name the output fields', () => {
    expect(apply({ id_fields: ['cell'], value_fields: ['att'], var_name: 'counter', value_name: 'v' }, pm())).toEqual([{ cell: 'c1', counter: 'att', v: 100 }]);
  });

  it('values are kept as they are (null, objects, falsy); drop_null gives no record for null', () => {
    const obj = { x: 1 };
    const r = { id: 1, n: null, o: obj, z: 0, s: '' };
    const out = apply({ id_fields: ['id'] }, r) as Rec[];
    expect(out.map((o) => o.value)).toEqual([null, obj, 0, '']);
    expect(out[1]!.value).toBe(obj);
    expect((apply({ id_fields: ['id'], drop_null: true }, r) as Rec[]).map((o) => o.metric)).toEqual(['o', 'z', 's']);
    expect((apply({ id_fields: ['id'], value_fields: ['n', 'z'], drop_null: true }, r) as Rec[]).map((o) => o.metric)).toEqual(['z']);
  });

  it('nothing to melt: no record, with a noted skip saying why', () => {
    expect(apply({ id_fields: ['a'] }, { a: 1 })).toBeNull();
    expect(apply({ value_fields: ['x'] }, { a: 1 })).toBeNull();
    expect(apply({ drop_null: true }, { a: null })).toBeNull();
    expect(notes).toEqual([
      'melt: record has no field besides id_fields: dropped',
      'melt: record has none of the value_fields: dropped',
      'melt: every value to melt is null (drop_null): record dropped',
    ]);
  });

  it('keeps fields named __proto__ as data (ids, names and output names)', () => {
    const out = apply({ id_fields: ['__proto__'] }, JSON.parse('{"__proto__":{"id":1},"x":2}')) as Rec[];
    expect(out).toHaveLength(1);
    expect(Object.keys(out[0]!)).toEqual(['__proto__', 'metric', 'value']);
    expect(Object.getOwnPropertyDescriptor(out[0], '__proto__')?.value).toEqual({ id: 1 });
    const v = apply({ value_name: '__proto__' }, { x: 2 }) as Rec[];
    expect(Object.getOwnPropertyDescriptor(v[0], '__proto__')?.value).toBe(2);
    expect(Object.getPrototypeOf(v[0])).toBe(Object.prototype);
  });

  it('lint refuses clashing output names and fields both id and value', () => {
    expect(plugin.lint!(cfg({ id_fields: ['a'], value_fields: ['b'] }))).toEqual([]);
    expect(plugin.lint!(cfg({ var_name: 'x', value_name: 'x' }))).toEqual([{ path: 'value_name', message: "is the same as var_name 'x'" }]);
    expect(plugin.lint!(cfg({ id_fields: ['metric', 'value'] }))).toEqual([
      { path: 'var_name', message: "'metric' is also an id field" },
      { path: 'value_name', message: "'value' is also an id field" },
    ]);
    expect(plugin.lint!(cfg({ id_fields: ['a'], value_fields: ['b', 'a'] }))).toEqual([{ path: 'value_fields/1', message: "'a' is also an id field" }]);
    expect(Value.Check(plugin.config, cfg({ var_name: '' }))).toBe(false);
    const r = loadTransforms('    - { type: melt, var_name: v, value_name: v }');
    expect(r.config).toBeUndefined();
    expect(r.diagnostics.join('\n')).toContain('value_name');
  });

  it('end to end: PM counters wide to long, then a filter on the long records', async () => {
    const { record, out } = await runTransform(
      [
        { node: 'n1', time: 't0', succ: 95, att: 100, drops: null },
        { node: 'n2', time: 't0' },
        { node: 'n3', time: 't1', succ: 1 },
      ],
      "    - { type: melt, id_fields: [node, time], var_name: counter, drop_null: true }\n    - { type: filter, expression: counter != 'att' }",
    );
    expect(out).toEqual([
      { node: 'n1', time: 't0', counter: 'succ', value: 95 },
      { node: 'n3', time: 't1', counter: 'succ', value: 1 },
    ]);
    expect(record).toMatchObject({ status: 'success', records_in: 3, records_out: 2, records_skipped: 0 });
    expect(record.errors).toEqual(['melt: record has no field besides id_fields: dropped']);
  });
});
