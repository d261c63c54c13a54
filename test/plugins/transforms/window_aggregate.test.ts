import { describe, expect, it } from 'vitest';
import { Value } from '@sinclair/typebox/value';
import type { Rec, TransformEvent } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/window_aggregate/index.js';
import { silentLogger } from '../../../src/observability/log.js';
import { diagnostics } from './_harness.js';

function make(c: object) {
  const events: Partial<Record<TransformEvent, number>> = {};
  const notes: string[] = [];
  const t = plugin.create(Value.Default(plugin.config, structuredClone(c)) as never, {
    pipeline: 't',
    log: silentLogger,
    count: (e, n = 1) => void (events[e] = (events[e] ?? 0) + n),
  });
  const ctx = { meta: {}, note: (m: string) => notes.push(m) };
  /** Everything emitted while feeding these records, in order. */
  const feed = (...rs: Rec[]): Rec[] =>
    rs.flatMap((r) => {
      const o = t.apply(r, ctx);
      return o === null ? [] : Array.isArray(o) ? o : [o];
    });
  return { t, events, notes, feed };
}

const iso = (s: number) => new Date(s * 1000).toISOString();
const base = { time_field: 'ts', window_seconds: 60, aggregations: [{ function: 'sum', field: 'v' }, { function: 'count' }] };

describe('transform window_aggregate', () => {
  it('tumbling: a window is emitted once the newest time passes its end; aligned to the epoch', () => {
    const { feed, events } = make(base);
    expect(feed({ ts: 5, v: 1 }, { ts: 30, v: 2 }, { ts: 59, v: 3 })).toEqual([]);
    expect(feed({ ts: 61, v: 10 })).toEqual([{ window_start: iso(0), window_end: iso(60), v_sum: 6, count: 3, window_complete: true }]);
    expect(feed({ ts: 200, v: 1 })).toEqual([{ window_start: iso(60), window_end: iso(120), v_sum: 10, count: 1, window_complete: true }]);
    expect(events.windows_emitted).toBe(2);
  });

  it('group_by: one output per window and group, groups in first-seen order', () => {
    const { feed } = make({ ...base, group_by: ['host'] });
    const out = feed({ ts: 1, host: 'b', v: 1 }, { ts: 2, host: 'a', v: 2 }, { ts: 3, host: 'b', v: 3 }, { ts: 70, host: 'a', v: 0 });
    expect(out).toEqual([
      { window_start: iso(0), window_end: iso(60), host: 'b', v_sum: 4, count: 2, window_complete: true },
      { window_start: iso(0), window_end: iso(60), host: 'a', v_sum: 2, count: 1, window_complete: true },
    ]);
  });

  it('allowed lateness: windows wait; records for emitted windows are dropped, noted and counted', () => {
    const { feed, events, notes } = make({ ...base, allowed_lateness_seconds: 30 });
    expect(feed({ ts: 10, v: 1 }, { ts: 70, v: 1 })).toEqual([]); // 70 < 60 + 30
    expect(feed({ ts: 20, v: 5 })).toEqual([]); // late but within lateness: counted in
    const out = feed({ ts: 95, v: 1 });
    expect(out).toEqual([{ window_start: iso(0), window_end: iso(60), v_sum: 6, count: 2, window_complete: true }]);
    expect(feed({ ts: 30, v: 100 })).toEqual([]); // its window is gone: dropped
    expect(events.window_late_dropped).toBe(1);
    expect(notes).toEqual([`window_aggregate: late record dropped (event time ${iso(30)}, its windows were already emitted)`]);
  });

  it('sliding: each record counts in every window that holds it', () => {
    const { feed } = make({ ...base, window_seconds: 60, slide_seconds: 30, aggregations: [{ function: 'count' }] });
    const out = feed({ ts: 10 }, { ts: 40 }, { ts: 70 }, { ts: 200 });
    expect(out.map((r) => [r.window_start, r.count])).toEqual([
      [iso(-30), 1],
      [iso(0), 2],
      [iso(30), 2],
      [iso(60), 1],
    ]);
  });

  it('functions: min, max, avg, first, last, count_distinct, percentile; nulls ignored', () => {
    const { feed } = make({
      time_field: 'ts',
      window_seconds: 10,
      aggregations: [
        { function: 'min', field: 'v' },
        { function: 'max', field: 'v' },
        { function: 'avg', field: 'v' },
        { function: 'first', field: 'v' },
        { function: 'last', field: 'v' },
        { function: 'count_distinct', field: 'k' },
        { function: 'percentile', field: 'v', percentile: 50, as: 'median' },
        { function: 'count', field: 'v', as: 'n' },
      ],
    });
    const out = feed({ ts: 1, v: 4, k: 'a' }, { ts: 2, v: '2', k: 'b' }, { ts: 3, v: null, k: 'a' }, { ts: 4, v: 9, k: 'a' }, { ts: 11 });
    expect(out).toEqual([
      {
        window_start: iso(0),
        window_end: iso(10),
        v_min: 2,
        v_max: 9,
        v_avg: 5,
        v_first: 4,
        v_last: 9,
        k_count_distinct: 2,
        median: 4,
        n: 3,
        window_complete: true,
      },
    ]);
  });

  it('flush: open windows come out as partials (window_complete false) and are forgotten', () => {
    const { t, feed, events } = make(base);
    feed({ ts: 5, v: 1 }, { ts: 65, v: 2 });
    expect(t.drain!('unit')).toEqual([]);
    expect(t.drain!('run')).toEqual([]);
    expect(t.drain!('flush')).toEqual([{ window_start: iso(60), window_end: iso(120), v_sum: 2, count: 1, window_complete: false }]);
    expect(t.drain!('flush')).toEqual([]);
    expect(events.windows_emitted).toBe(2);
  });

  it('state: open windows and the watermark carry over to a new instance', () => {
    const a = make({ ...base, group_by: ['h'] });
    a.feed({ ts: 5, h: 'x', v: 1 }, { ts: 65, h: 'x', v: 2 });
    const body = JSON.parse(JSON.stringify(a.t.state!.save())) as unknown;
    const b = make({ ...base, group_by: ['h'] });
    b.t.state!.load(body);
    // Late for the emitted window [0, 60): dropped; the open one continues.
    expect(b.feed({ ts: 6, h: 'x', v: 100 })).toEqual([]);
    expect(b.events.window_late_dropped).toBe(1);
    expect(b.feed({ ts: 70, h: 'x', v: 3 }, { ts: 130, h: 'x', v: 0 })).toEqual([
      { window_start: iso(60), window_end: iso(120), h: 'x', v_sum: 5, count: 2, window_complete: true },
    ]);
    expect(() => b.t.state!.load('garbage')).toThrow('windows list');
    expect(() => b.t.state!.load({ windows: [{ start: 'x' }] })).toThrow('malformed window');
  });

  it('state by target (sharded runs): windows grouped by _target split by target, and a moved target’s open window is emitted whole by its new shard', () => {
    const cfg = { ...base, group_by: ['_target'] };
    expect(plugin.targetState!.refuse!(Value.Default(plugin.config, structuredClone(cfg)) as never)).toBeUndefined();
    expect(plugin.targetState!.refuse!(Value.Default(plugin.config, structuredClone({ ...base, group_by: ['severity'] })) as never)).toMatch(
      /group_by must include _target/,
    );
    const a = make(cfg);
    a.feed({ ts: 5, _target: 'r1', v: 1 }, { ts: 6, _target: 'r2', v: 10 });
    const parts = plugin.targetState!.split(JSON.parse(JSON.stringify(a.t.state!.save())));
    expect([...parts.keys()].sort()).toEqual(['r1', 'r2']);
    // r1 moves to a shard that held r3: both continue their windows there, and the watermark is the newest of the two.
    const b = make(cfg);
    b.feed({ ts: 7, _target: 'r3', v: 100 });
    const mine = plugin.targetState!.split(JSON.parse(JSON.stringify(b.t.state!.save()))).get('r3');
    const c = make(cfg);
    c.t.state!.load(plugin.targetState!.join([parts.get('r1'), mine, 'garbage']));
    expect(c.feed({ ts: 30, _target: 'r1', v: 2 }, { ts: 61, _target: 'r3', v: 0 })).toEqual([
      { window_start: iso(0), window_end: iso(60), _target: 'r1', v_sum: 3, count: 2, window_complete: true },
      { window_start: iso(0), window_end: iso(60), _target: 'r3', v_sum: 100, count: 1, window_complete: true },
    ]);
    expect(plugin.targetState!.join([])).toEqual({ newest: -Infinity, closed_before: -Infinity, windows: [] });
    expect(plugin.targetState!.split('nope').size).toBe(0);
  });

  it('record errors (rule 6): missing or bad time; non-numeric value for sum; max_open', () => {
    const { t } = make(base);
    const ctx = { meta: {}, note: () => {} };
    expect(() => t.apply({ v: 1 }, ctx)).toThrow("time_field 'ts' value null is not a timestamp");
    expect(() => t.apply({ ts: 'soon', v: 1 }, ctx)).toThrow('is not a timestamp');
    expect(() => t.apply({ ts: 1, v: 'x' }, ctx)).toThrow('field \'v\' value "x" is not a number (sum)');
    const small = make({ ...base, group_by: ['g'], max_open: 2 });
    small.feed({ ts: 1, g: 1 }, { ts: 1, g: 2 });
    expect(() => small.t.apply({ ts: 1, g: 3 }, ctx)).toThrow('more than max_open (2) open windows');
  });

  it('validation: slide longer than the window, duplicate outputs, percentile without percentile', () => {
    expect(diagnostics({ type: 'window_aggregate', time_field: 't', window_seconds: 60, slide_seconds: 120, aggregations: [{ function: 'count' }] })).toEqual([
      expect.stringContaining('pipeline.transforms[0].slide_seconds: must not exceed window_seconds'),
    ]);
    expect(
      diagnostics({ type: 'window_aggregate', time_field: 't', window_seconds: 60, aggregations: [{ function: 'count' }, { function: 'count' }] })[0],
    ).toContain("output field 'count' is produced twice");
    expect(diagnostics({ type: 'window_aggregate', time_field: 't', window_seconds: 60, aggregations: [{ function: 'percentile', field: 'v' }] })[0]).toContain(
      'percentile needs percentile: 0-100',
    );
  });
});
