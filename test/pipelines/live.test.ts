// The live figures of running runs (src/pipelines/live.ts): rates over the last window, the overlay
// on a stored `running` record, and the stats rows with running runs added.
import { describe, expect, it, vi } from 'vitest';
import { LiveRun, RATE_WINDOW_MS, statsWithLive, withLive } from '../../src/pipelines/live.js';
import type { StoredRun } from '../../src/store/types.js';

const progress = (records_in: number, records_out: number, extra: Record<string, unknown> = {}) => ({
  units: 1,
  records_in,
  records_out,
  records_filtered: 0,
  records_skipped: 0,
  dlq_count: 0,
  bytes_in: records_in * 10,
  bytes_out: records_out * 10,
  ...extra,
});

const stored = (over: Partial<StoredRun> = {}): StoredRun => ({
  run_id: 'r1',
  pipeline: 'p',
  node_id: 'n',
  status: 'running',
  started_at: '2026-01-01T00:00:00.000Z',
  finished_at: null,
  records_in: 3,
  records_out: 3,
  records_filtered: 0,
  records_skipped: 0,
  bytes_in: 30,
  bytes_out: 30,
  dlq_count: 0,
  error: null,
  errors: [],
  pipeline_version: 1,
  ...over,
});

describe('LiveRun', () => {
  it('rates: since the start while young, then over the last window only', () => {
    vi.useFakeTimers({ now: 0 });
    try {
      const l = new LiveRun('r1', 'p');
      vi.setSystemTime(2000);
      l.update(progress(100, 50));
      l.sample();
      expect(l.rates()).toEqual({ records_in_per_sec: 50, records_out_per_sec: 25 });
      // 20 s at 10/s in, then nothing more for a whole window: the rate falls to 0.
      for (let t = 3000; t <= 22_000; t += 1000) {
        vi.setSystemTime(t);
        l.update(progress(100 + ((t - 2000) / 1000) * 10, 50));
        l.sample();
      }
      expect(l.rates().records_in_per_sec).toBeCloseTo(10, 0);
      expect(l.rates().records_out_per_sec).toBe(0);
      for (let t = 23_000; t <= 23_000 + RATE_WINDOW_MS + 1000; t += 1000) {
        vi.setSystemTime(t);
        l.sample();
      }
      expect(l.rates().records_in_per_sec).toBe(0);
      expect(l.figures()).toMatchObject({ run_id: 'r1', started_at: new Date(0).toISOString(), updated_at: new Date(22_000).toISOString() });
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('withLive', () => {
  it('lays the live counters and errors over a running record, never lower than the stored ones', () => {
    const l = new LiveRun('r1', 'p');
    l.update(progress(12, 11, { records_skipped: 1, dlq_count: 1, errors: ['parse error in x: bad'] }));
    const r = withLive(stored(), l);
    expect(r).toMatchObject({ records_in: 12, records_out: 11, records_skipped: 1, dlq_count: 1, bytes_in: 120, errors: ['parse error in x: bad'] });
    expect(r.live).toMatchObject({ run_id: 'r1' });
    // A stored figure ahead of the report (written by an earlier report) is kept.
    expect(withLive(stored({ records_in: 20 }), l).records_in).toBe(20);
  });

  it('leaves finished runs, other runs and runs with no live figures as they are', () => {
    const l = new LiveRun('r1', 'p');
    l.update(progress(12, 11));
    const done = stored({ status: 'success', finished_at: '2026-01-01T00:01:00.000Z' });
    expect(withLive(done, l)).toBe(done);
    expect(withLive(stored({ run_id: 'other' }), l).records_in).toBe(3);
    expect(withLive(stored(), undefined)).toEqual(stored());
  });
});

describe('statsWithLive', () => {
  it("adds a running run's counts to its pipeline's row, and makes a row for a pipeline with only a running run", () => {
    const a = new LiveRun('r1', 'a');
    a.update(progress(10, 10, { records_skipped: 2 }));
    const b = new LiveRun('r2', 'b');
    b.update(progress(5, 4));
    const rows = statsWithLive([{ pipeline: 'a', records_in: 90, records_out: 90, error_rate: 0.1, avg_duration_seconds: 2, run_count: 3 }], [a, b]);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({ pipeline: 'a', records_in: 100, records_out: 100, run_count: 3, avg_duration_seconds: 2, running: 1 });
    expect(rows[0]!.error_rate).toBeCloseTo(11 / 100);
    expect(rows[1]).toMatchObject({ pipeline: 'b', records_in: 5, records_out: 4, run_count: 0, running: 1, error_rate: 0 });
  });
});
