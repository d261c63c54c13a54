import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { Rec } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/json_flatten/index.js';
import { runTransform, transformOf } from './_harness.js';

const { apply, notes } = transformOf(plugin);

describe('transform json_flatten', () => {
  const payload = JSON.stringify({ cpu: { user: 1, sys: 2 }, up: true, tags: ['a', 'b'] });

  it('parses the field, flattens it at its position and drops the source by default', () => {
    const out = apply({ field: 'p' }, { id: 1, p: payload, z: 0 }) as Rec;
    expect(out).toEqual({ id: 1, 'cpu.user': 1, 'cpu.sys': 2, up: true, tags: ['a', 'b'], z: 0 });
    expect(Object.keys(out)).toEqual(['id', 'cpu.user', 'cpu.sys', 'up', 'tags', 'z']);
  });

  it('drop_source false keeps the text in place before the new keys', () => {
    const out = apply({ field: 'p', drop_source: false }, { p: '{"a":{"b":1}}', z: 0 }) as Rec;
    expect(out).toEqual({ p: '{"a":{"b":1}}', 'a.b': 1, z: 0 });
    expect(Object.keys(out)).toEqual(['p', 'a.b', 'z']);
  });

  it('prefix roots the new keys, joined with the separator', () => {
    expect(apply({ field: 'p', prefix: 'attr' }, { p: '{"a":{"b":1},"c":2}' })).toEqual({ 'attr.a.b': 1, 'attr.c': 2 });
    expect(apply({ field: 'p', prefix: 'attr', separator: '_' }, { p: '{"a":{"b":1}}' })).toEqual({ attr_a_b: 1 });
    // The source name may be reused as the prefix.
    expect(apply({ field: 'p', prefix: 'p' }, { p: '{"a":1}' })).toEqual({ 'p.a': 1 });
  });

  it('separator, max_depth and arrays behave as in flatten', () => {
    expect(apply({ field: 'p', separator: '/' }, { p: '{"a":{"b":{"c":1}}}' })).toEqual({ 'a/b/c': 1 });
    expect(apply({ field: 'p', max_depth: 1 }, { p: '{"a":{"b":{"c":1}}}' })).toEqual({ 'a.b': { c: 1 } });
    expect(apply({ field: 'p', max_depth: 1, prefix: 'x' }, { p: '{"a":{"b":{"c":1}}}' })).toEqual({ 'x.a.b': { c: 1 } });
    expect(apply({ field: 'p', arrays: 'index' }, { p: '{"t":["a",{"k":1}]}' })).toEqual({ 't.0': 'a', 't.1.k': 1 });
  });

  it('new keys win over existing fields of the same name', () => {
    const out = apply({ field: 'p' }, { a: 'old', p: '{"a":"new","b":2}', b: 'old' }) as Rec;
    expect(out).toEqual({ a: 'new', b: 2 });
    expect(Object.keys(out)).toEqual(['a', 'b']);
    // ...including the source field itself when kept.
    expect(apply({ field: 'p', drop_source: false }, { p: '{"p":1}' })).toEqual({ p: 1 });
  });

  it('an object value is flattened without parsing; an empty object adds nothing', () => {
    expect(apply({ field: 'p' }, { p: { a: { b: 1 } } })).toEqual({ 'a.b': 1 });
    expect(apply({ field: 'p' }, { p: '{}', x: 1 })).toEqual({ x: 1 });
    expect(apply({ field: 'p', drop_source: false }, { p: '{}', x: 1 })).toEqual({ p: '{}', x: 1 });
  });

  it('missing, null or inherited fields: the record passes unchanged, no error', () => {
    for (const on_error of ['error', 'skip_field', 'keep']) {
      const r = { x: 1 };
      expect(apply({ field: 'p', on_error }, r)).toBe(r);
      const n = { p: null };
      expect(apply({ field: 'p', on_error }, n)).toBe(n);
      expect(apply({ field: 'constructor', on_error }, r)).toBe(r);
    }
    expect(notes).toEqual([]);
  });

  it('on_error error (default): invalid JSON and non-objects are record errors with fixed messages', () => {
    expect(() => apply({ field: 'p' }, { p: '{"a":' })).toThrow(
      expect.objectContaining({ name: 'RecordError', message: "json_flatten: field 'p' is not valid JSON" }),
    );
    for (const p of ['[1,2]', '5', '"s"', 'null', 7, true, [1]]) {
      expect(() => apply({ field: 'p' }, { p }), JSON.stringify(p)).toThrow("json_flatten: field 'p' is not a JSON object");
    }
  });

  it('on_error skip_field removes the field; keep passes the record as it was; neither adds a message', () => {
    expect(apply({ field: 'p', on_error: 'skip_field' }, { a: 1, p: 'nope', b: 2 })).toEqual({ a: 1, b: 2 });
    expect(apply({ field: 'p', on_error: 'skip_field' }, { p: '[1]' })).toEqual({});
    const r = { a: 1, p: 'nope' };
    expect(apply({ field: 'p', on_error: 'keep' }, r)).toBe(r);
    expect(r).toEqual({ a: 1, p: 'nope' });
    expect(notes).toEqual([]);
    expect(Value.Check(plugin.config, { field: 'p', on_error: 'null' })).toBe(false);
    expect(Value.Check(plugin.config, { on_error: 'keep' })).toBe(false);
  });

  it('keeps keys named __proto__ as data', () => {
    const out = apply({ field: 'p' }, { p: '{"__proto__":{"polluted":1},"a":1}' }) as Rec;
    expect(Object.keys(out)).toEqual(['__proto__.polluted', 'a']);
    const top = apply({ field: 'p', max_depth: 1 }, { p: '{"__proto__":{"x":{"y":1}}}' }) as Rec;
    expect(Object.keys(top)).toEqual(['__proto__.x']);
    const raw = apply({ field: 'p', arrays: 'keep' }, { p: '{"__proto__":[1]}' }) as Rec;
    expect(Object.getOwnPropertyDescriptor(raw, '__proto__')?.value).toEqual([1]);
    expect(Object.getPrototypeOf(raw)).toBe(Object.prototype);
    expect(({} as Rec).polluted).toBeUndefined();
  });

  it('end to end: flattened records, invalid JSON as a record error and in the DLQ', async () => {
    const { record, out, dlq } = await runTransform(
      [{ n: 1, attrs: '{"site":{"id":"par1"},"vendor":"x"}' }, { n: 2, attrs: 'not json' }, { n: 3 }],
      '    - { type: json_flatten, field: attrs, prefix: attr }',
      { onError: 'dlq', dlq: true },
    );
    expect(out).toEqual([{ n: 1, 'attr.site.id': 'par1', 'attr.vendor': 'x' }, { n: 3 }]);
    expect(record).toMatchObject({ status: 'success', records_in: 3, records_out: 2, records_skipped: 1, dlq_count: 1 });
    expect(record.errors).toEqual([`transform error in in.ndjson: transforms[0] (json_flatten): json_flatten: field 'attrs' is not valid JSON`]);
    expect(dlq).toEqual([expect.objectContaining({ _stage: 'transform', record: { n: 2, attrs: 'not json' } })]);
  });

  it('end to end: on_error skip_field and keep pass every record without errors', async () => {
    const rows = [
      { n: 1, j: '{"a":1}' },
      { n: 2, j: '{' },
    ];
    const s = await runTransform(rows, '    - { type: json_flatten, field: j, on_error: skip_field }');
    expect(s.out).toEqual([{ n: 1, a: 1 }, { n: 2 }]);
    expect(s.record).toMatchObject({ records_out: 2, records_skipped: 0, errors: [] });
    const k = await runTransform(rows, '    - { type: json_flatten, field: j, on_error: keep, drop_source: false }');
    expect(k.out).toEqual([
      { n: 1, j: '{"a":1}', a: 1 },
      { n: 2, j: '{' },
    ]);
    expect(k.record).toMatchObject({ records_out: 2, records_skipped: 0, errors: [] });
  });
});
