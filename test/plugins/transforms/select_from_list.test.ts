import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { RecordError } from '../../../src/core/errors.js';
import type { Rec } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/select_from_list/index.js';
import { runTransform, transformOf } from './_harness.js';

const { cfg, run, apply } = transformOf(plugin);

const attrs = [
  { name: 'imsi', value: '208011234567890' },
  { name: 'cell', value: 42 },
  { name: 'imsi', value: 'second' },
];
const base = { field: 'attributes', match_field: 'name', match_value: 'imsi', value_field: 'value', target: 'imsi' };

describe('transform select_from_list', () => {
  it('copies value_field of the first matching element to target', () => {
    expect(apply(base, { attributes: attrs, x: 1 })).toEqual({ attributes: attrs, x: 1, imsi: '208011234567890' });
  });

  it('pick: last takes the last match', () => {
    expect((apply({ ...base, pick: 'last' }, { attributes: attrs }) as Rec).imsi).toBe('second');
  });

  it('without value_field copies the whole element', () => {
    const { value_field: _v, ...whole } = base;
    expect((apply({ ...whole, match_value: 'cell', target: 'c' }, { attributes: attrs }) as Rec).c).toEqual({ name: 'cell', value: 42 });
  });

  it('compares as text: 1 matches "1", true matches "true"; null matches only null', () => {
    const list = [{ id: '1', v: 'a' }, { id: true, v: 'b' }, { id: null, v: 'c' }, { v: 'd' }, { id: 'null', v: 'e' }];
    const c = { field: 'l', match_field: 'id', value_field: 'v', target: 't' };
    expect((apply({ ...c, match_value: 1 }, { l: list }) as Rec).t).toBe('a');
    expect((apply({ ...c, match_value: 'true' }, { l: list }) as Rec).t).toBe('b');
    expect((apply({ ...c, match_value: null }, { l: list }) as Rec).t).toBe('c');
    expect((apply({ ...c, match_value: 'null' }, { l: list }) as Rec).t).toBe('e');
    // Objects never match as text.
    expect((apply({ ...c, match_value: '[object Object]', on_no_match: 'null' }, { l: [{ id: {}, v: 'x' }] }) as Rec).t).toBeNull();
  });

  it('skips elements that are not objects or lack match_field; a matched element without value_field gives null', () => {
    expect((apply(base, { attributes: [null, 3, 'imsi', ['imsi'], { value: 'no name' }, { name: 'imsi' }] }) as Rec).imsi).toBeNull();
  });

  it('overwrites an existing target', () => {
    expect((apply(base, { attributes: attrs, imsi: 'old' }) as Rec).imsi).toBe('208011234567890');
  });

  it('on_no_match keep (default): record unchanged', () => {
    expect(run(base, { attributes: [{ name: 'x', value: 1 }] })).toEqual({ out: { attributes: [{ name: 'x', value: 1 }] }, notes: [] });
    expect(run(base, { other: 1 })).toEqual({ out: { other: 1 }, notes: [] });
  });

  it('on_no_match null: target set to null (also when the field is missing or not a list)', () => {
    expect(apply({ ...base, on_no_match: 'null' }, { attributes: [] })).toEqual({ attributes: [], imsi: null });
    expect(apply({ ...base, on_no_match: 'null' }, { attributes: 'x' })).toEqual({ attributes: 'x', imsi: null });
  });

  it('on_no_match drop: dropped with a note', () => {
    expect(run({ ...base, on_no_match: 'drop' }, { attributes: [] })).toEqual({
      out: null,
      notes: ['select_from_list: record dropped: no element of \'attributes\' has name = "imsi"'],
    });
    expect(run({ ...base, on_no_match: 'drop' }, {})).toEqual({ out: null, notes: ["select_from_list: record dropped: field 'attributes' is not a list"] });
  });

  it('on_no_match error: a RecordError', () => {
    expect(() => apply({ ...base, on_no_match: 'error' }, { attributes: [] })).toThrow(RecordError);
    expect(() => apply({ ...base, on_no_match: 'error' }, { attributes: [] })).toThrow('select_from_list: no element of \'attributes\' has name = "imsi"');
  });

  it('inherited members are neither lists nor element fields', () => {
    expect(apply({ ...base, field: 'constructor', on_no_match: 'null' }, {})).toEqual({ imsi: null });
    expect(apply({ ...base, match_field: 'toString', match_value: 'x', on_no_match: 'null' }, { attributes: [{}] })).toEqual({ attributes: [{}], imsi: null });
  });

  it('schema: field, match_field, match_value and target are required', () => {
    expect(Value.Check(plugin.config, cfg(base))).toBe(true);
    for (const k of ['field', 'match_field', 'match_value', 'target']) {
      const c: Record<string, unknown> = { ...base };
      delete c[k];
      expect(Value.Check(plugin.config, cfg(c)), k).toBe(false);
    }
    expect(Value.Check(plugin.config, cfg({ ...base, match_value: [1] }))).toBe(false);
    expect(Value.Check(plugin.config, cfg({ ...base, on_no_match: 'skip' }))).toBe(false);
  });

  it('end to end: selected values, a no-match dead-lettered with _stage transform', async () => {
    const { record, out, dlq } = await runTransform(
      [
        { id: 1, attributes: attrs },
        { id: 2, attributes: [{ name: 'cell', value: 1 }] },
      ],
      '    - { type: select_from_list, field: attributes, match_field: name, match_value: imsi, value_field: value, target: imsi, on_no_match: error }\n    - { type: drop, fields: [attributes] }',
      { onError: 'dlq', dlq: true },
    );
    expect(out).toEqual([{ id: 1, imsi: '208011234567890' }]);
    expect(record).toMatchObject({ status: 'success', records_in: 2, records_out: 1, records_skipped: 1, dlq_count: 1 });
    expect(dlq).toEqual([
      expect.objectContaining({
        _stage: 'transform',
        _error: `transforms[0] (select_from_list): select_from_list: no element of 'attributes' has name = "imsi"`,
        record: { id: 2, attributes: [{ name: 'cell', value: 1 }] },
      }),
    ]);
  });
});
