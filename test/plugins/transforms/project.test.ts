import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { Rec } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/project/index.js';
import { runTransform, transformOf } from './_harness.js';

const { cfg, apply } = transformOf(plugin);

describe('transform project', () => {
  it('keeps only the listed fields, in the listed order', () => {
    const out = apply({ fields: ['c', 'a'] }, { a: 1, b: 2, c: 3 }) as Rec;
    expect(out).toEqual({ c: 3, a: 1 });
    expect(Object.keys(out)).toEqual(['c', 'a']);
  });

  it('renames with {name: new_name} entries and with the rename map', () => {
    const out = apply({ fields: ['a', { b: 'bee' }, 'c'], rename: { c: 'sea' } }, { c: 3, b: 2, a: 1, z: 0 }) as Rec;
    expect(out).toEqual({ a: 1, bee: 2, sea: 3 });
    expect(Object.keys(out)).toEqual(['a', 'bee', 'sea']);
    // rename wins over an entry's own new name.
    expect(apply({ fields: [{ b: 'x' }], rename: { b: 'y' } }, { b: 1 })).toEqual({ y: 1 });
  });

  it('missing: omit (default) leaves absent fields out, null sets them to null', () => {
    expect(apply({ fields: ['a', 'b'] }, { a: 1 })).toEqual({ a: 1 });
    const out = apply({ fields: ['a', { b: 'bee' }, 'c'], missing: 'null' }, { a: 1, c: null }) as Rec;
    expect(out).toEqual({ a: 1, bee: null, c: null });
    expect(Object.keys(out)).toEqual(['a', 'bee', 'c']);
  });

  it('a field may be kept twice under two names; inherited members are not fields; __proto__ stays data', () => {
    expect(apply({ fields: ['a', { a: 'a2' }] }, { a: 1 })).toEqual({ a: 1, a2: 1 });
    expect(apply({ fields: ['constructor', 'toString'], missing: 'null' }, {})).toEqual({ constructor: null, toString: null });
    const out = apply({ fields: ['__proto__'] }, JSON.parse('{"__proto__": {"x": 1}}') as Rec) as Rec;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(out, '__proto__')?.value).toEqual({ x: 1 });
  });

  it('returns a new object; the input is not changed', () => {
    const r = { a: 1, b: 2 };
    expect(apply({ fields: ['a'] }, r)).not.toBe(r);
    expect(r).toEqual({ a: 1, b: 2 });
  });

  it('schema: needs a non-empty fields list; a rename entry has exactly one key', () => {
    expect(Value.Check(plugin.config, cfg({ fields: ['a', { b: 'c' }] }))).toBe(true);
    expect(Value.Check(plugin.config, cfg({ fields: [] }))).toBe(false);
    expect(Value.Check(plugin.config, cfg({ fields: [{}] }))).toBe(false);
    expect(Value.Check(plugin.config, cfg({ fields: [{ a: 'x', b: 'y' }] }))).toBe(false);
    expect(Value.Check(plugin.config, cfg({ fields: ['a'], missing: 'drop' }))).toBe(false);
  });

  it('lint: duplicate output names and rename keys not listed', () => {
    expect(plugin.lint!(cfg({ fields: ['a', { b: 'a' }] }))).toEqual([{ path: 'fields.1', message: "output field 'a' is produced twice" }]);
    expect(plugin.lint!(cfg({ fields: ['a'], rename: { b: 'c' } }))).toEqual([{ path: 'rename.b', message: "'b' is not listed in fields" }]);
  });

  it('end to end', async () => {
    const { record, out } = await runTransform(
      [
        { imsi: '1', junk: 'x', cell_id: 7, duration: 3 },
        { duration: 4, imsi: '2' },
      ],
      '    - { type: project, fields: [imsi, { cell_id: cell }, duration], missing: "null" }',
    );
    expect(record).toMatchObject({ status: 'success', records_in: 2, records_out: 2, records_skipped: 0, errors: [] });
    expect(out).toEqual([
      { imsi: '1', cell: 7, duration: 3 },
      { imsi: '2', cell: null, duration: 4 },
    ]);
    expect(Object.keys(out[1]!)).toEqual(['imsi', 'cell', 'duration']);
  });
});
