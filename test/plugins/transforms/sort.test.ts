import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { Rec } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/sort/index.js';
import { pyJson } from '../serializers/helpers.js';
import { applyThenDrain, diagnostics, runFiles, runTransform, transformOf } from './_harness.js';

const { cfg, make, rc } = transformOf(plugin);
const sorted = (c: object, records: Rec[]) => applyThenDrain(make(c), records, 'unit').out;
const ids = (rs: Rec[]) => rs.map((r) => r.id);

describe('transform sort', () => {
  it('multi-key, asc/desc, nulls first/last and stability agree with Python sorted() (stable) on random records', () => {
    const cases = pyJson<{ records: Rec[]; expected: Record<string, number[]> }>(`
import json, random
random.seed(11)
records = []
for i in range(300):
    r = {'id': i}
    k = random.random()
    if k < 0.1: r['a'] = None
    elif k < 0.2: pass
    else: r['a'] = random.randint(0, 6)
    r['b'] = random.choice(['x', 'y', 'z', 'ab', 'B'])
    if random.random() < 0.05: del r['b']
    records.append(r)
def srt(rs, keys, nulls):
    # Stable sorts from the last key to the first; None kept aside per key as Python cannot compare it.
    out = list(rs)
    for field, desc in reversed(keys):
        present = [r for r in out if r.get(field) is not None]
        missing = [r for r in out if r.get(field) is None]
        present.sort(key=lambda r: r[field], reverse=desc)
        out = present + missing if nulls == 'last' else missing + present
    return [r['id'] for r in out]
expected = {
  'a': srt(records, [('a', False)], 'last'),
  'a_desc': srt(records, [('a', True)], 'last'),
  'a_desc_b': srt(records, [('a', True), ('b', False)], 'last'),
  'b_a_desc_first': srt(records, [('b', False), ('a', True)], 'first'),
}
print(json.dumps({'records': records, 'expected': expected}))
`);
    const { records, expected } = cases;
    const run = (c: object) => ids(sorted(c, structuredClone(records)));
    expect(run({ by: [{ field: 'a' }] })).toEqual(expected.a);
    expect(run({ by: [{ field: 'a', order: 'desc' }] })).toEqual(expected.a_desc);
    expect(run({ by: [{ field: 'a', order: 'desc' }, { field: 'b' }] })).toEqual(expected.a_desc_b);
    expect(run({ by: [{ field: 'b' }, { field: 'a', order: 'desc' }], nulls: 'first' })).toEqual(expected.b_a_desc_first);
  });

  it('is stable: records with equal keys keep their input order (asc and desc)', () => {
    const rs = [
      { k: 2, id: 'a' },
      { k: 1, id: 'b' },
      { k: 2, id: 'c' },
      { k: 1, id: 'd' },
      { k: 2, id: 'e' },
    ];
    expect(ids(sorted({ by: [{ field: 'k' }] }, rs))).toEqual(['b', 'd', 'a', 'c', 'e']);
    expect(ids(sorted({ by: [{ field: 'k', order: 'desc' }] }, rs))).toEqual(['a', 'c', 'e', 'b', 'd']);
  });

  it('nulls (null or missing) go last by default and first with nulls: first, whatever the order', () => {
    const rs = [{ id: 1, k: null }, { id: 2, k: 5 }, { id: 3 }, { id: 4, k: 1 }];
    expect(ids(sorted({ by: [{ field: 'k' }] }, rs))).toEqual([4, 2, 1, 3]);
    expect(ids(sorted({ by: [{ field: 'k', order: 'desc' }] }, rs))).toEqual([2, 4, 1, 3]);
    expect(ids(sorted({ by: [{ field: 'k' }], nulls: 'first' }, rs))).toEqual([1, 3, 4, 2]);
    expect(ids(sorted({ by: [{ field: 'k', order: 'desc' }], nulls: 'first' }, rs))).toEqual([1, 3, 2, 4]);
  });

  it('mixed types: numbers, then strings, then booleans, then other values (by their JSON); desc reverses it all', () => {
    const vals = [true, 'b', 10, { a: 1 }, 'a', 9, [0], false, '10', -1.5];
    const rs = vals.map((k, id) => ({ id, k }));
    expect(sorted({ by: [{ field: 'k' }] }, rs).map((r) => r.k)).toEqual([-1.5, 9, 10, '10', 'a', 'b', false, true, [0], { a: 1 }]);
    expect(sorted({ by: [{ field: 'k', order: 'desc' }] }, rs).map((r) => r.k)).toEqual([{ a: 1 }, [0], true, false, 'b', 'a', '10', 10, 9, -1.5]);
  });

  it('strings compare as text (numbers read from CSV as text sort lexically)', () => {
    const rs = ['9', '10', '100', 'B', 'a'].map((k) => ({ k }));
    expect(sorted({ by: [{ field: 'k' }] }, rs).map((r) => r.k)).toEqual(['10', '100', '9', 'B', 'a']);
  });

  it('holds records until drained; a drain hands them on once', () => {
    const t = make({ by: [{ field: 'k' }] });
    expect(t.apply({ k: 2 }, rc)).toBeNull();
    expect(t.apply({ k: 1 }, rc)).toBeNull();
    expect(t.drain!('unit')).toEqual([{ k: 1 }, { k: 2 }]);
    expect(t.drain!('unit')).toEqual([]);
  });

  it('max_records: when reached, the records held are handed on sorted among themselves, with a note', () => {
    const { out, notes } = applyThenDrain(
      make({ by: [{ field: 'k' }], max_records: 3 }),
      [5, 4, 3, 2, 1, 0, 9].map((k) => ({ k })),
      'unit',
    );
    expect(out.map((r) => r.k)).toEqual([3, 4, 5, 0, 1, 2, 9]);
    expect(notes).toEqual([
      'sort: max_records (3) reached; 3 records handed on sorted among themselves only',
      'sort: max_records (3) reached; 3 records handed on sorted among themselves only',
    ]);
  });

  it('scope unit sorts per drain point; scope run only at the end of the run (or flush), deferring units', () => {
    const unit = make({ by: [{ field: 'k' }] });
    expect(plugin.defersUnits!(cfg({ by: [{ field: 'k' }] }))).toBe(false);
    expect(applyThenDrain(unit, [{ k: 2 }, { k: 1 }], 'unit').out).toEqual([{ k: 1 }, { k: 2 }]);
    const run = make({ by: [{ field: 'k' }], scope: 'run' });
    expect(plugin.defersUnits!(cfg({ by: [{ field: 'k' }], scope: 'run' }))).toBe(true);
    expect(applyThenDrain(run, [{ k: 3 }, { k: 1 }], 'unit').out).toEqual([]);
    expect(applyThenDrain(run, [{ k: 2 }], 'unit').out).toEqual([]);
    expect(run.drain!('run')).toEqual([{ k: 1 }, { k: 2 }, { k: 3 }]);
    expect(applyThenDrain(run, [{ k: 2 }, { k: 0 }], 'flush').out).toEqual([{ k: 0 }, { k: 2 }]);
  });

  it('schema: defaults (order asc, nulls last, scope unit, max_records 1000000); by needs a key', () => {
    expect(cfg({ by: [{ field: 'k' }] })).toEqual({ by: [{ field: 'k', order: 'asc' }], nulls: 'last', scope: 'unit', max_records: 1000000 });
    const ok = (c: object) => Value.Check(plugin.config, cfg(c));
    expect(ok({ by: [] })).toBe(false);
    expect(ok({})).toBe(false);
    expect(ok({ by: [{ field: 'k', order: 'down' }] })).toBe(false);
    expect(ok({ by: [{ field: 'k' }], nulls: 'middle' })).toBe(false);
    expect(ok({ by: [{ field: 'k' }], max_records: 0 })).toBe(false);
    expect(ok({ by: ['k'] })).toBe(false);
    expect(diagnostics('{ type: sort, by: [{ field: k, order: up }] }')).toEqual([expect.stringMatching(/^pipeline\.transforms\[0\]\.by\[0\]\.order: /)]);
  });

  it('in the engine: one file sorted; records_out counts the sorted records', async () => {
    const rows = [{ ts: 3, h: 'b' }, { ts: 1, h: 'z' }, { ts: 3, h: 'a' }, { h: 'n' }, { ts: 2, h: 'c' }];
    const { record, out } = await runTransform(rows, '{ type: sort, by: [{ field: ts, order: desc }, { field: h }] }');
    expect(out).toEqual([{ ts: 3, h: 'a' }, { ts: 3, h: 'b' }, { ts: 2, h: 'c' }, { ts: 1, h: 'z' }, { h: 'n' }]);
    expect(record).toMatchObject({ status: 'success', records_in: 5, records_out: 5, records_skipped: 0, errors: [] });
  });

  const files = { 'a.ndjson': [{ k: 3 }, { k: 1 }], 'b.ndjson': [{ k: 2 }, { k: 0 }] };

  it('in the engine: scope unit sorts each file on its own; scope run sorts the whole run', async () => {
    const unit = await runFiles(files, '{ type: sort, by: [{ field: k }] }');
    expect(unit.out).toEqual([{ k: 1 }, { k: 3 }, { k: 0 }, { k: 2 }]);
    const run = await runFiles(files, '{ type: sort, scope: run, by: [{ field: k }] }', { source: 'move_after_read: __DONE__' });
    expect(run.out).toEqual([{ k: 0 }, { k: 1 }, { k: 2 }, { k: 3 }]);
    expect(run.record).toMatchObject({ status: 'success', records_in: 4, records_out: 4 });
    expect(run.done()).toEqual(['a.ndjson', 'b.ndjson']);
  });

  it('in the engine: max_records adds its note to the run record', async () => {
    const { record, out } = await runTransform(
      [3, 2, 1, 0].map((k) => ({ k })),
      '{ type: sort, by: [{ field: k }], max_records: 2 }',
    );
    expect(out.map((r) => r.k)).toEqual([2, 3, 0, 1]);
    expect(record).toMatchObject({ status: 'success', records_out: 4, records_skipped: 0 });
    expect(record.errors).toEqual(['sort: max_records (2) reached; 2 records handed on sorted among themselves only (x2)']);
  });
});
