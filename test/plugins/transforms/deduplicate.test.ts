import { Value } from '@sinclair/typebox/value';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Rec } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/deduplicate/index.js';
import { applyThenDrain, diagnostics, runFiles, runTransform, transformOf } from './_harness.js';

const { cfg, make, rc } = transformOf(plugin);
const kept = (c: object, records: Rec[]) => applyThenDrain(make(c), records, 'unit').out;
const T0 = Date.parse('2026-01-01T00:00:00Z');

afterEach(() => {
  vi.restoreAllMocks();
});

describe('transform deduplicate', () => {
  it('default: whole-record duplicates in the run are dropped; the first one wins', () => {
    const a = { x: 1, y: 'a' };
    const out = kept({}, [a, { x: 1, y: 'a' }, { x: 1 }, { x: 1, y: null }, { x: 1, y: 'a' }, { x: '1', y: 'a' }, { x: 1 }]);
    expect(out).toEqual([{ x: 1, y: 'a' }, { x: 1 }, { x: 1, y: null }, { x: '1', y: 'a' }]);
    expect(out[0]).toBe(a);
  });

  it('fields: only those fields make the key (missing counts as null; values keep their type)', () => {
    expect(
      kept({ fields: ['id'] }, [{ id: 1, v: 'a' }, { id: 1, v: 'b' }, { id: 2, v: 'c' }, { v: 'd' }, { id: null, v: 'e' }, { id: '1', v: 'f' }]).map(
        (r) => r.v,
      ),
    ).toEqual(['a', 'c', 'd', 'f']);
    const rs = [
      { a: 1, b: 1, n: 0 },
      { a: 1, b: 2, n: 1 },
      { a: 1, b: 1, n: 2 },
      { a: 2, b: 1, n: 3 },
      { a: 1, n: 4 },
      { a: 1, b: null, n: 5 },
    ];
    expect(kept({ fields: ['a', 'b'] }, rs).map((r) => r.n)).toEqual([0, 1, 3, 4]);
    // Nested values compare by their JSON.
    expect(kept({ fields: ['o'] }, [{ o: { p: [1] } }, { o: { p: [1] } }, { o: { p: [2] } }])).toHaveLength(2);
  });

  it('window with time_field (ISO 8601 and epoch seconds/milliseconds are the same instants)', () => {
    const c = { fields: ['alarm'], window_seconds: 300, time_field: 't' };
    const rs = [
      { alarm: 'A', t: '2026-01-01T00:00:00Z', n: 0 },
      { alarm: 'A', t: T0 / 1000 + 10, n: 1 }, // epoch s, 10 s later: duplicate
      { alarm: 'B', t: T0 + 20_000, n: 2 }, // epoch ms
      { alarm: 'A', t: '2026-01-01T01:04:59+01:00', n: 3 }, // 299 s after the first A: duplicate
      { alarm: 'A', t: String(T0 / 1000 + 300), n: 4 }, // exactly 300 s: a new window opens
      { alarm: 'A', t: '2026-01-01T00:09:59.999Z', n: 5 }, // within 300 s of n=4
      { alarm: 'B', t: '2026-01-01T00:05:20Z', n: 6 }, // 300 s after B: new
      { alarm: 'A', t: '2026-01-01T00:10:00Z', n: 7 }, // 300 s after n=4: new
    ];
    expect(kept(c, rs).map((r) => r.n)).toEqual([0, 2, 4, 6, 7]);
  });

  it('the window runs from the first record of the key, not from the last duplicate', () => {
    const c = { fields: ['k'], window_seconds: 10, time_field: 't' };
    const rs = [0, 4, 8, 9.999, 10, 14, 19, 20].map((s, n) => ({ k: 1, t: T0 / 1000 + s, n }));
    expect(kept(c, rs).map((r) => r.n)).toEqual([0, 4, 7]);
  });

  it('expired keys are forgotten as newer times arrive (other keys pass, old ones open new windows)', () => {
    const t = make({ fields: ['k'], window_seconds: 1, time_field: 't' });
    const at = (k: number, s: number) => t.apply({ k, t: T0 + s * 1000 }, rc);
    for (let k = 0; k < 5; k++) expect(at(k, 0)).not.toBeNull();
    expect(at(0, 0.5)).toBeNull();
    expect(at(9, 5)).not.toBeNull();
    for (let k = 0; k < 5; k++) expect(at(k, 5.1)).not.toBeNull();
  });

  it('without time_field the window is in processing time', () => {
    let now = T0;
    vi.spyOn(Date, 'now').mockImplementation(() => now);
    const t = make({ window_seconds: 60 });
    expect(t.apply({ a: 1 }, rc)).toEqual({ a: 1 });
    now += 59_999;
    expect(t.apply({ a: 1 }, rc)).toBeNull();
    now += 1;
    expect(t.apply({ a: 1 }, rc)).toEqual({ a: 1 });
    expect(t.apply({ a: 1 }, rc)).toBeNull();
  });

  it('without window_seconds, a key is remembered for the whole run', () => {
    let now = T0;
    vi.spyOn(Date, 'now').mockImplementation(() => now);
    const t = make({ fields: ['a'] });
    expect(t.apply({ a: 1 }, rc)).not.toBeNull();
    now += 365 * 86400_000;
    expect(t.apply({ a: 1 }, rc)).toBeNull();
    expect(t.drain!('unit')).toEqual([]);
    expect(t.apply({ a: 1 }, rc)).toBeNull();
  });

  it('max_keys: when full, the oldest key is forgotten first', () => {
    const t = make({ fields: ['k'], max_keys: 2 });
    const pass = (k: string) => t.apply({ k }, rc) !== null;
    expect(['a', 'b', 'a', 'b'].map(pass)).toEqual([true, true, false, false]);
    expect(pass('c')).toBe(true); // forgets a
    expect(pass('b')).toBe(false);
    expect(pass('a')).toBe(true); // forgets b
    expect(pass('c')).toBe(false);
    expect(pass('b')).toBe(true);
  });

  it('a time_field value that is not a time is a record error (thrown), and the key is not remembered', () => {
    const t = make({ fields: ['k'], window_seconds: 60, time_field: 't' });
    expect(() => t.apply({ k: 1, t: 'yesterday' }, rc)).toThrow(`time_field 't' value "yesterday" is not a timestamp`);
    expect(() => t.apply({ k: 1 }, rc)).toThrow(`time_field 't' value null is not a timestamp`);
    expect(() => t.apply({ k: 1, t: true }, rc)).toThrow(/is not a timestamp/);
    expect(() => t.apply({ k: 1, t: '2026-02-30T00:00:00Z' }, rc)).toThrow(/is not a timestamp/);
    expect(t.apply({ k: 1, t: '2026-01-01T00:00:00Z' }, rc)).not.toBeNull();
  });

  it('schema: defaults fields [] and max_keys 1000000; window_seconds > 0; max_keys >= 1', () => {
    expect(cfg({})).toEqual({ fields: [], max_keys: 1000000 });
    const ok = (c: object) => Value.Check(plugin.config, cfg(c));
    expect(ok({ window_seconds: 0.5, time_field: 't' })).toBe(true);
    expect(ok({ window_seconds: 0 })).toBe(false);
    expect(ok({ max_keys: 0 })).toBe(false);
    expect(ok({ fields: [''] })).toBe(false);
    expect(ok({ fields: 'k' })).toBe(false);
    expect(diagnostics('{ type: deduplicate, window_seconds: -1 }')).toEqual([expect.stringMatching(/^pipeline\.transforms\[0\]\.window_seconds: /)]);
  });

  it('in the engine: a bad time under on_error dlq is dead-lettered with stage transform', async () => {
    const rows = [
      { id: 1, t: '2026-01-01T00:00:00Z' },
      { id: 1, t: 'soon' },
      { id: 1, t: '2026-01-01T00:00:01Z' },
      { id: 2, t: 1767225600 },
    ];
    const { record, out, dlq } = await runTransform(rows, '{ type: deduplicate, fields: [id], window_seconds: 60, time_field: t }', {
      onError: 'dlq',
      dlq: true,
    });
    expect(out).toEqual([rows[0], rows[3]]);
    expect(record).toMatchObject({ status: 'success', records_in: 4, records_out: 2, records_skipped: 1, dlq_count: 1 });
    expect(dlq).toEqual([
      expect.objectContaining({ _stage: 'transform', _error: `transforms[0] (deduplicate): time_field 't' value "soon" is not a timestamp`, record: rows[1] }),
    ]);
  });

  for (const threads of [1, 2]) {
    it(`in the engine, thread_workers ${threads}, many chunks: duplicates across files and chunks are dropped, first ones kept in input order`, async () => {
      const files = {
        'a.ndjson': Array.from({ length: 200 }, (_, i) => ({ id: i % 50, f: 'a', i })),
        'b.ndjson': Array.from({ length: 200 }, (_, i) => ({ id: 25 + (i % 50), f: 'b', i })),
      };
      const { record, out } = await runFiles(files, '{ type: deduplicate, fields: [id] }', { extra: `  thread_workers: ${threads}`, chunkBytes: 300 });
      expect(out).toEqual([...files['a.ndjson'].slice(0, 50), ...files['b.ndjson'].slice(25, 50)]);
      expect(record).toMatchObject({ status: 'success', records_in: 400, records_out: 75, records_skipped: 0, errors: [] });
    });
  }
});
