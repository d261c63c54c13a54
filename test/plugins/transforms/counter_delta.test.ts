import { describe, expect, it } from 'vitest';
import { Value } from '@sinclair/typebox/value';
import type { Rec, TransformEvent } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/counter_delta/index.js';
import { silentLogger } from '../../../src/observability/log.js';
import { loadPipelineText } from '../../../src/config/load.js';
import { formatDiagnostic } from '../../../src/config/diagnostics.js';
import { diagnostics, pipelineYaml, transformOf } from './_harness.js';
import { elapse } from '../../helpers/wait.js';

const { rc } = transformOf(plugin);

/** A fresh instance with its events counted. */
function make(c: object) {
  const events: Partial<Record<TransformEvent, number>> = {};
  const t = plugin.create(Value.Default(plugin.config, structuredClone(c)) as never, {
    pipeline: 't',
    log: silentLogger,
    count: (e, n = 1) => void (events[e] = (events[e] ?? 0) + n),
  });
  const feed = (...rs: Rec[]) => rs.map((r) => t.apply(r, rc));
  return { t, events, feed };
}

const base = { key_fields: ['host', 'if'], counters: ['in'], time_field: 'ts' };
const s = (ts: number, inV: unknown, extra: Rec = {}): Rec => ({ host: 'r1', if: 1, ts, in: inV, ...extra });

describe('transform counter_delta', () => {
  it('first sample: dropped (no delta), or passed through unchanged with emit_first', () => {
    expect(make(base).feed(s(0, 100))).toEqual([null]);
    expect(make({ ...base, emit_first: true }).feed(s(0, 100))).toEqual([s(0, 100)]);
  });

  it('emits the delta per series, and the rate per second when asked', () => {
    const { feed } = make({ ...base, rate: true });
    const out = feed(s(1000, 100), s(1060, 700), { host: 'r2', if: 1, ts: 1000, in: 5 }, s(1120, 760));
    expect(out[0]).toBeNull();
    expect(out[1]).toMatchObject({ in: 700, in_delta: 600, in_rate: 10 });
    expect(out[2]).toBeNull(); // another series: its own first sample
    expect(out[3]).toMatchObject({ in_delta: 60, in_rate: 1 });
  });

  it('delta_suffix empty replaces the counter; rate_suffix names the rate', () => {
    const { feed } = make({ ...base, delta_suffix: '', rate: true, rate_suffix: '_ps' });
    expect(feed(s(0, 10), s(10, 30))[1]).toEqual({ host: 'r1', if: 1, ts: 10, in: 20, in_ps: 2 });
  });

  it('32-bit wrap: bridged and counted', () => {
    const { feed, events } = make({ ...base, width: 32 });
    const out = feed(s(0, 4294967000), s(60, 200));
    expect(out[1]).toMatchObject({ in_delta: 4294967296 - 4294967000 + 200 });
    expect(events).toEqual({ counter_wraps: 1 });
  });

  it('64-bit wrap with values beyond 2^53 given as strings (Counter64), exact', () => {
    const { feed, events } = make({ ...base, width: 64 });
    const out = feed(s(0, '18446744073709551000'), s(60, '100'));
    expect(out[1]).toMatchObject({ in_delta: 616 + 100 });
    expect(events.counter_wraps).toBe(1);
    // Large increasing Counter64 values: exact deltas from strings and bigints.
    const b = make({ ...base, width: 64 });
    expect(b.feed(s(0, '9007199254740993000'), s(1, 9007199254740993500n))[1]).toMatchObject({ in_delta: 500 });
  });

  it('a drop that is not a plausible wrap is a reset: no delta, counted; the next sample deltas from the new value', () => {
    const { feed, events } = make({ ...base, width: 32 });
    const out = feed(s(0, 1_000_000_000), s(60, 500), s(120, 800));
    expect(out[1]).toBeNull();
    expect(out[2]).toMatchObject({ in_delta: 300 });
    expect(events).toEqual({ counter_resets: 1 });
  });

  it('max_wrap_fraction decides between wrap and reset', () => {
    // Wrapped delta here is 2^32 - 3e9 + 10 ~ 1.29e9, 30% of the range.
    expect(make({ ...base, width: 32, max_wrap_fraction: 0.5 }).feed(s(0, 3e9), s(1, 10))[1]).toMatchObject({ in_delta: 4294967296 - 3e9 + 10 });
    expect(make({ ...base, width: 32, max_wrap_fraction: 0.2 }).feed(s(0, 3e9), s(1, 10))[1]).toBeNull();
  });

  it('width auto: _snmp_widths is authoritative; else 64 once a value exceeds 2^32-1, else 32', () => {
    // Declared 64-bit: a drop from a 32-bit-sized value is not a 32-bit wrap but a reset.
    const declared = make(base);
    expect(declared.feed(s(0, 4294967000, { _snmp_widths: { in: 64 } }), s(60, 200, { _snmp_widths: { in: 64 } }))[1]).toBeNull();
    expect(declared.events).toEqual({ counter_resets: 1 });
    // Undeclared and small: a 32-bit wrap.
    const guessed = make(base);
    expect(guessed.feed(s(0, 4294967000), s(60, 200))[1]).toMatchObject({ in_delta: 496 });
    // Undeclared but beyond 32 bits: 64-bit arithmetic, a drop near 2^33 is a reset.
    const big = make(base);
    expect(big.feed(s(0, 8_000_000_000), s(60, 100))[1]).toBeNull();
  });

  it('uptime going back (reboot) resets every counter of the series: no delta, counted per counter', () => {
    const { feed, events } = make({ ...base, counters: ['in', 'out'], uptime_field: 'sysUpTime' });
    const out = feed(
      { host: 'r1', if: 1, ts: 0, in: 10, out: 10, sysUpTime: 5000 },
      { host: 'r1', if: 1, ts: 60, in: 20, out: 30, sysUpTime: 11000 },
      { host: 'r1', if: 1, ts: 120, in: 25, out: 40, sysUpTime: 300 },
      { host: 'r1', if: 1, ts: 180, in: 35, out: 41, sysUpTime: 6300 },
    );
    expect(out[1]).toMatchObject({ in_delta: 10, out_delta: 20 });
    expect(out[2]).toBeNull();
    expect(out[3]).toMatchObject({ in_delta: 10, out_delta: 1 });
    expect(events).toEqual({ counter_resets: 2 });
  });

  it('a missing counter is noted and skipped; the others still get deltas', () => {
    const { t } = make({ ...base, counters: ['in', 'out'] });
    const notes: string[] = [];
    const ctx = { meta: {}, note: (m: string) => notes.push(m) };
    t.apply({ host: 'r1', if: 1, ts: 0, in: 1, out: 1 }, ctx);
    expect(t.apply({ host: 'r1', if: 1, ts: 1, out: 5 }, ctx)).toMatchObject({ out_delta: 4 });
    expect(notes).toEqual(["counter_delta: counter 'in' missing in series r1/1"]);
    // The missing counter kept its last value: the next sample deltas from it.
    expect(t.apply({ host: 'r1', if: 1, ts: 2, in: 3, out: 6 }, ctx)).toMatchObject({ in_delta: 2, out_delta: 1 });
  });

  it('record errors (rule 6): missing key field, non-counter value, bad time', () => {
    const { t } = make(base);
    expect(() => t.apply({ if: 1, ts: 0, in: 1 }, rc)).toThrow("key field 'host' is missing");
    expect(() => t.apply(s(0, 'abc'), rc)).toThrow('counter \'in\' value "abc" is not a non-negative integer');
    expect(() => t.apply(s(0, -5), rc)).toThrow('not a non-negative integer');
    expect(() => t.apply({ ...s(0, 1), ts: 'yesterday' }, rc)).toThrow('time_field \'ts\' value "yesterday" is not a timestamp');
  });

  it('without time_field the processing time is used (rate over the wall clock)', async () => {
    const { feed } = make({ key_fields: ['k'], counters: ['c'], rate: true });
    feed({ k: 1, c: 0 });
    await elapse(50);
    const out = feed({ k: 1, c: 100 })[0] as Rec;
    expect(out.c_delta).toBe(100);
    expect(out.c_rate as number).toBeGreaterThan(100 / 1);
    expect(out.c_rate as number).toBeLessThan(100 / 0.04);
  });

  it('ISO 8601 sample times work for rates', () => {
    const { feed } = make({ ...base, rate: true });
    const out = feed({ ...s(0, 0), ts: '2026-01-01T00:00:00Z' }, { ...s(0, 900), ts: '2026-01-01T00:15:00Z' });
    expect(out[1]).toMatchObject({ in_delta: 900, in_rate: 1 });
  });

  it('max_series forgets the oldest series first', () => {
    const { feed } = make({ key_fields: ['k'], counters: ['c'], time_field: 't', max_series: 2 });
    feed({ k: 'a', t: 0, c: 1 }, { k: 'b', t: 0, c: 1 }, { k: 'c', t: 0, c: 1 });
    // 'a' was forgotten: its next sample is a first sample again; 'c' is known.
    expect(feed({ k: 'a', t: 1, c: 5 }, { k: 'c', t: 1, c: 5 })).toEqual([null, { k: 'c', t: 1, c: 5, c_delta: 4 }]);
  });

  it('state: save and load carry the series to a new instance; corrupt bodies are refused', () => {
    const a = make(base);
    a.feed(s(0, 100));
    const body = JSON.parse(JSON.stringify(a.t.state!.save())) as unknown;
    const b = make(base);
    b.t.state!.load(body);
    expect(b.feed(s(60, 160))[0]).toMatchObject({ in_delta: 60 });
    expect(() => b.t.state!.load('nope')).toThrow('must be an object');
    expect(() => b.t.state!.load({ x: { v: {} } })).toThrow("series 'x' is malformed");
  });

  it('state by target (sharded runs): split by the records’ _target, and the parts of any shard join into a body that carries on', () => {
    const a = make(base);
    a.feed(s(0, 100, { host: 'r1', _target: 'r1:161' }), s(0, 5, { host: 'r2', _target: 'r2:161' }), s(0, 7, { host: 'r3', if: 9 }));
    const parts = plugin.targetState!.split(JSON.parse(JSON.stringify(a.t.state!.save())));
    // r3's records named no target: its series cannot be placed on a shard ('').
    expect([...parts.keys()].sort()).toEqual(['', 'r1:161', 'r2:161']);
    expect(Object.keys(parts.get('r1:161') as object)).toEqual(['r1\u00001']);
    // r1 moved to another worker: that worker loads r1's part alone and gives the true delta, not a first sample.
    const b = make(base);
    b.t.state!.load(plugin.targetState!.join([parts.get('r1:161')]));
    expect(b.feed(s(60, 160, { host: 'r1', _target: 'r1:161' }), s(60, 9, { host: 'r2', _target: 'r2:161' }))).toEqual([
      expect.objectContaining({ in_delta: 60 }),
      null, // r2's state stayed with its own shard: here it is a first sample, never a delta against a stranger's value
    ]);
    // The target is kept through save and load, so the next split still places the series.
    expect([...plugin.targetState!.split(b.t.state!.save()).keys()].sort()).toEqual(['r1:161', 'r2:161']);
    expect(plugin.targetState!.join(['nope', null, { x: { t: 0, v: {} } }])).toEqual({ x: { t: 0, v: {} } });
    expect(plugin.targetState!.split('nope').size).toBe(0);
  });

  it('validation: rule 4 (thread_workers > 1, sink level) and SVC_STATEFUL_TRANSFORMS=0', () => {
    const t = { type: 'counter_delta', key_fields: ['k'], counters: ['c'] };
    expect(diagnostics(t)).toEqual([]);
    const threaded = loadPipelineText(pipelineYaml(t, undefined, '  thread_workers: 2'), { env: {} });
    expect(threaded.diagnostics.map((d) => `${d.code} ${d.message}`)).toEqual([
      "CFG_STATEFUL 'counter_delta' keeps state per record identity and needs thread_workers: 1 (got 2)",
    ]);
    const off = loadPipelineText(pipelineYaml(t), { env: { SVC_STATEFUL_TRANSFORMS: '0' } });
    expect(off.config).toBeUndefined();
    expect(off.diagnostics.map((d) => formatDiagnostic(d))).toEqual([
      "pipeline.transforms[0].type: 'counter_delta' is disabled on this node (SVC_STATEFUL_TRANSFORMS=0); enable stateful transforms or remove it (line 9) [CFG_STATEFUL]",
    ]);
    // Any other value keeps them on (spec: unrecognised values count as 1).
    expect(loadPipelineText(pipelineYaml(t), { env: { SVC_STATEFUL_TRANSFORMS: 'no' } }).diagnostics).toEqual([]);
  });
});
