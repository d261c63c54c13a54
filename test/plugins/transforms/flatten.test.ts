import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { Rec } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/flatten/index.js';
import { runTransform, transformOf } from './_harness.js';

const { cfg, apply } = transformOf(plugin);

describe('transform flatten', () => {
  it('flattens nested objects into dotted keys at the position of their parent', () => {
    const out = apply({}, { id: 1, a: { b: 2, c: { d: 3 } }, z: 'x' }) as Rec;
    expect(out).toEqual({ id: 1, 'a.b': 2, 'a.c.d': 3, z: 'x' });
    expect(Object.keys(out)).toEqual(['id', 'a.b', 'a.c.d', 'z']);
  });

  it('returns the same record, untouched, when nothing is nested', () => {
    const r = { a: 1, b: [1, { x: 1 }], c: null, e: {} };
    expect(apply({}, r)).toBe(r);
    expect(r).toEqual({ a: 1, b: [1, { x: 1 }], c: null, e: {} });
  });

  it('separator joins the levels', () => {
    expect(apply({ separator: '_' }, { a: { b: { c: 1 } } })).toEqual({ a_b_c: 1 });
    expect(apply({ separator: '::' }, { a: { b: 1 } })).toEqual({ 'a::b': 1 });
    expect(Value.Check(plugin.config, { separator: '' })).toBe(false);
  });

  it('max_depth limits the levels flattened; deeper objects stay values', () => {
    const r = () => ({ a: { b: { c: { d: 1 } } }, x: 1 });
    expect(apply({ max_depth: 1 }, r())).toEqual({ 'a.b': { c: { d: 1 } }, x: 1 });
    expect(apply({ max_depth: 2 }, r())).toEqual({ 'a.b.c': { d: 1 }, x: 1 });
    expect(apply({ max_depth: 9 }, r())).toEqual({ 'a.b.c.d': 1, x: 1 });
    expect(apply({}, r())).toEqual({ 'a.b.c.d': 1, x: 1 });
    expect(Value.Check(plugin.config, { max_depth: 0 })).toBe(false);
    expect(Value.Check(plugin.config, { max_depth: 1.5 })).toBe(false);
  });

  it('fields flattens only the listed fields; missing ones and non-objects are left alone', () => {
    const r = { a: { x: 1 }, b: { y: 2 }, c: 5 };
    expect(apply({ fields: ['a'] }, structuredClone(r))).toEqual({ 'a.x': 1, b: { y: 2 }, c: 5 });
    expect(apply({ fields: ['a', 'c', 'missing'] }, structuredClone(r))).toEqual({ 'a.x': 1, b: { y: 2 }, c: 5 });
    const same = { b: { y: 2 } };
    expect(apply({ fields: ['a', 'missing'] }, same)).toBe(same);
    // Inherited names are not fields.
    expect(apply({ fields: ['constructor', 'toString'] }, same)).toBe(same);
    expect(Value.Check(plugin.config, { fields: [] })).toBe(false);
    expect(plugin.lint!(cfg({ fields: ['a', 'a'] }))).toEqual([{ path: 'fields', message: 'names a field more than once' }]);
    expect(plugin.lint!(cfg({ fields: ['a'] }))).toEqual([]);
  });

  it('arrays: keep (default) leaves arrays as values, index expands them 0-based', () => {
    const r = () => ({ a: { l: [1, { x: 2 }], e: [] } });
    expect(apply({}, r())).toEqual({ 'a.l': [1, { x: 2 }], 'a.e': [] });
    expect(apply({ arrays: 'keep' }, r())).toEqual({ 'a.l': [1, { x: 2 }], 'a.e': [] });
    expect(apply({ arrays: 'index' }, r())).toEqual({ 'a.l.0': 1, 'a.l.1.x': 2, 'a.e': [] });
    expect(apply({ arrays: 'index' }, { t: ['x', 'y'] })).toEqual({ 't.0': 'x', 't.1': 'y' });
    // Arrays count as a level for max_depth.
    expect(apply({ arrays: 'index', max_depth: 1 }, { t: [{ a: 1 }] })).toEqual({ 't.0': { a: 1 } });
    expect(Value.Check(plugin.config, { arrays: 'split' })).toBe(false);
  });

  it('keeps empty objects and non-plain objects (Date) as values, and falsy values', () => {
    const d = new Date(0);
    expect(apply({}, { a: { e: {}, d, n: null, z: 0, s: '' } })).toEqual({ 'a.e': {}, 'a.d': d, 'a.n': null, 'a.z': 0, 'a.s': '' });
  });

  it('on a name clash the later field in record order wins, at the first position', () => {
    const out = apply({}, { 'a.b': 1, a: { b: 2 }, c: 3 }) as Rec;
    expect(out).toEqual({ 'a.b': 2, c: 3 });
    expect(apply({}, { a: { b: 2 }, 'a.b': 1 })).toEqual({ 'a.b': 1 });
  });

  it('keeps keys named __proto__ as data', () => {
    const out = apply({}, JSON.parse('{"a":{"__proto__":{"x":1}},"__proto__":{"y":2}}')) as Rec;
    expect(Object.keys(out)).toEqual(['a.__proto__.x', '__proto__.y']);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    const top = apply({ max_depth: 1 }, JSON.parse('{"__proto__":5,"a":{"b":1}}')) as Rec;
    expect(Object.keys(top)).toEqual(['__proto__', 'a.b']);
    expect(Object.getOwnPropertyDescriptor(top, '__proto__')?.value).toBe(5);
  });

  it('end to end through the real engine', async () => {
    const { record, out } = await runTransform(
      [{ node: 'n1', if: { name: 'ge-0', counters: { in: 1, out: 2 } }, tags: ['a'] }, { node: 'n2' }],
      '    - { type: flatten, separator: _, arrays: index }',
    );
    expect(record).toMatchObject({ status: 'success', records_in: 2, records_out: 2, records_skipped: 0, errors: [] });
    expect(out).toEqual([{ node: 'n1', if_name: 'ge-0', if_counters_in: 1, if_counters_out: 2, tags_0: 'a' }, { node: 'n2' }]);
  });
});
