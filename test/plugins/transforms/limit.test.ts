import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { Rec } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/limit/index.js';
import { applyThenDrain, diagnostics, runFiles, transformOf } from './_harness.js';

const { cfg, make } = transformOf(plugin);
const nums = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ i: from + i }));
const is = (rs: Rec[]) => rs.map((r) => r.i);

describe('transform limit', () => {
  it('lets through the first count records, in order, after dropping offset records', () => {
    expect(is(applyThenDrain(make({ count: 3 }), nums(10), null).out)).toEqual([0, 1, 2]);
    expect(is(applyThenDrain(make({ count: 3, offset: 4 }), nums(10), null).out)).toEqual([4, 5, 6]);
    expect(is(applyThenDrain(make({ count: 5, offset: 8 }), nums(10), null).out)).toEqual([8, 9]);
    expect(is(applyThenDrain(make({ count: 5, offset: 10 }), nums(10), null).out)).toEqual([]);
    expect(is(applyThenDrain(make({ count: 0 }), nums(10), null).out)).toEqual([]);
    expect(is(applyThenDrain(make({ count: 100 }), nums(10), null).out)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('dropped records are not errors and make no notes; the record itself passes unchanged', () => {
    const t = make({ count: 1 });
    const r = { a: 1 };
    const { out, notes } = applyThenDrain(t, [r, { a: 2 }], 'unit');
    expect(out[0]).toBe(r);
    expect(out).toHaveLength(1);
    expect(notes).toEqual([]);
  });

  it('scope run (default) counts across drain points; scope unit starts again at the end of each unit', () => {
    const run = make({ count: 3 });
    expect(is(applyThenDrain(run, nums(2), 'unit').out)).toEqual([0, 1]);
    expect(is(applyThenDrain(run, nums(2, 2), 'unit').out)).toEqual([2]);
    expect(plugin.defersUnits).toBeUndefined();
    const unit = make({ count: 1, offset: 1, scope: 'unit' });
    expect(is(applyThenDrain(unit, nums(3), 'unit').out)).toEqual([1]);
    expect(is(applyThenDrain(unit, nums(3, 10), 'unit').out)).toEqual([11]);
    // drain hands on nothing: limit holds no records, it only counts in order on one thread.
    expect(unit.drain!('run')).toEqual([]);
  });

  it('schema: count required (>= 0), offset default 0, scope default run', () => {
    expect(cfg({ count: 5 })).toEqual({ count: 5, offset: 0, scope: 'run' });
    const ok = (c: object) => Value.Check(plugin.config, cfg(c));
    expect(ok({})).toBe(false);
    expect(ok({ count: -1 })).toBe(false);
    expect(ok({ count: 1.5 })).toBe(false);
    expect(ok({ count: 1, offset: -1 })).toBe(false);
    expect(ok({ count: 1, scope: 'file' })).toBe(false);
    expect(diagnostics('{ type: limit }')).toEqual(['pipeline.transforms[0].count: is required (line 9) [CFG_REQUIRED]']);
  });

  // Three files of 300 records, cut into many small chunks: the first N records in input order.
  const files = Object.fromEntries(['a', 'b', 'c'].map((f, n) => [`${f}.ndjson`, nums(300, n * 1000).map((r) => ({ ...r, pad: 'x'.repeat(20) }))]));
  const all = Object.values(files).flat();

  for (const threads of [1, 2]) {
    it(`in the engine, thread_workers ${threads}, many chunks: scope run keeps records offset..offset+count of the run in input order`, async () => {
      const { record, out } = await runFiles(files, '{ type: limit, count: 400, offset: 250 }', { extra: `  thread_workers: ${threads}`, chunkBytes: 256 });
      expect(is(out)).toEqual(is(all.slice(250, 650)));
      expect(record).toMatchObject({ status: 'success', records_in: 900, records_out: 400, records_skipped: 0, errors: [] });
    });
  }

  for (const threads of [1, 2]) {
    it(`in the engine, thread_workers ${threads}, many chunks: scope unit keeps the first records of each file`, async () => {
      const { record, out } = await runFiles(files, '{ type: limit, count: 5, offset: 2, scope: unit }', {
        extra: `  thread_workers: ${threads}`,
        chunkBytes: 200,
      });
      expect(is(out)).toEqual([2, 3, 4, 5, 6, 1002, 1003, 1004, 1005, 1006, 2002, 2003, 2004, 2005, 2006]);
      expect(record).toMatchObject({ status: 'success', records_in: 900, records_out: 15, records_skipped: 0, errors: [] });
    });
  }

  it('in the engine: record_chunk_size windows (thread_workers 1) keep the run count', async () => {
    const { out } = await runFiles(files, '{ type: limit, count: 7, offset: 298 }', { extra: '  record_chunk_size: 3' });
    expect(is(out)).toEqual([298, 299, 1000, 1001, 1002, 1003, 1004]);
  });
});
