// Sharded batch runs (issue 33), the parts without processes: rendezvous hashing (balance,
// stability, what moves when a worker joins or leaves), the config rules of `workers` on a batch
// pipeline, and the cycle a lost shard may still be re-dispatched in.
import { describe, expect, it } from 'vitest';
import { assign, ownerOf } from '../../src/cluster/hrw.js';
import { cycleEnd } from '../../src/cluster/shards.js';
import { loadPipelineText } from '../../src/config/load.js';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { owned } from '../../src/plugins/connector-runtime/target-fleet.js';

const targets = Array.from({ length: 10_000 }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:161`);

describe('rendezvous hashing', () => {
  it('balances 10,000 targets over 3 workers within 10 % and gives every target exactly one worker', () => {
    const plan = assign(targets, ['http://w0:8766', 'http://w1:8766', 'http://w2:8766']);
    const sizes = [...plan.values()].map((t) => t.length);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(targets.length);
    expect(new Set([...plan.values()].flat()).size).toBe(targets.length);
    for (const n of sizes) expect(Math.abs(n - targets.length / 3) / (targets.length / 3)).toBeLessThan(0.1);
  });

  it('is stable: the same target lands on the same worker whatever the order of workers and targets', () => {
    const a = assign(targets, ['a', 'b', 'c']);
    const b = assign([...targets].reverse(), ['c', 'a', 'b']);
    for (const w of ['a', 'b', 'c']) expect(new Set(b.get(w))).toEqual(new Set(a.get(w)));
  });

  it('a worker added takes about 1/N of the targets, all from the others; a worker lost gives up only its own', () => {
    const before = new Map(targets.map((t) => [t, ownerOf(t, ['a', 'b', 'c'])]));
    const after = new Map(targets.map((t) => [t, ownerOf(t, ['a', 'b', 'c', 'd'])]));
    const moved = targets.filter((t) => before.get(t) !== after.get(t));
    expect(moved.every((t) => after.get(t) === 'd')).toBe(true);
    expect(moved.length / targets.length).toBeGreaterThan(0.22);
    expect(moved.length / targets.length).toBeLessThan(0.28);
    const lost = new Map(targets.map((t) => [t, ownerOf(t, ['a', 'c'])]));
    const movedOnLoss = targets.filter((t) => before.get(t) !== lost.get(t));
    expect(movedOnLoss.every((t) => before.get(t) === 'b')).toBe(true);
    expect(movedOnLoss.length).toBe(targets.filter((t) => before.get(t) === 'b').length);
  });

  it('a shard polls only the targets it owns, and names those it owns but does not list', () => {
    const missing: string[][] = [];
    const got = owned(
      ['a', 'b', 'c'],
      (t) => t,
      { index: 0, targets: new Set(['b', 'x']) },
      (ids) => missing.push(ids),
    );
    expect(got).toEqual(['b']);
    expect(missing).toEqual([['x']]);
    expect(owned(['a', 'b'], (t) => t, undefined)).toEqual(['a', 'b']);
  });
});

const pipeline = (extra: string, source = 'type: snmp_poll\n    targets: [{ host: 127.0.0.1 }]\n    oids: [1.3.6.1.2.1.1.5.0]') =>
  `version: "1"\npipeline:\n  name: p\n  schedule: { type: interval, interval_seconds: 60 }\n  source:\n    ${source}\n${extra}  sinks:\n    - type: local\n      path: /tmp/out\n`;
const messages = (yaml: string) =>
  loadPipelineText(yaml, { file: 'p.yaml' })
    .diagnostics.filter((d) => d.severity === 'error')
    .map((d) => formatDiagnostic(d));

describe('workers on a batch pipeline', () => {
  it('is valid on a source that can split (snmp_poll, prometheus_scrape)', () => {
    expect(messages(pipeline('  workers: { count: all }\n'))).toEqual([]);
    expect(messages(pipeline('  workers: { count: 2 }\n', 'type: prometheus_scrape\n    targets: [http://127.0.0.1:9100/metrics]'))).toEqual([]);
  });

  it('is refused on a source that cannot split, naming the field', () => {
    const got = messages(pipeline('  workers: { count: all }\n', 'type: local\n    path: /tmp/in'));
    expect(got).toHaveLength(1);
    expect(got[0]).toMatch(/pipeline\.workers: source 'local' cannot split its work over workers/);
    // The sources that can are those whose plugin declares shard, listed from the registry.
    expect(got[0]).toContain('(sources that can: prometheus_scrape, snmp_poll)');
  });

  it('takes counter_delta, and window_aggregate grouped by _target, with it (their state follows the targets); refuses window_aggregate grouped otherwise, at the transform', () => {
    expect(
      messages(pipeline('  workers: { count: all }\n  transforms:\n    - type: counter_delta\n      key_fields: [_target]\n      counters: [x]\n')),
    ).toEqual([]);
    const windows = (groupBy: string) =>
      messages(
        pipeline(
          `  workers: { count: all }\n  transforms:\n    - type: window_aggregate\n      time_field: t\n      window_seconds: 60\n      group_by: ${groupBy}\n      aggregations: [{ function: count }]\n`,
        ),
      );
    expect(windows('[_target, ifIndex]')).toEqual([]);
    const got = windows('[severity]');
    expect(
      got.some((m) =>
        /pipeline\.transforms\[0\]\.type: 'window_aggregate' in a sharded run \(pipeline\.workers\) keeps its state by target: group_by must include _target/.test(
          m,
        ),
      ),
      got.join('\n'),
    ).toBe(true);
  });

  it('keeps rule 4: counter_delta with thread_workers > 1 is refused, sharded or not', () => {
    const got = messages(
      pipeline('  workers: { count: all }\n  thread_workers: 2\n  transforms:\n    - type: counter_delta\n      key_fields: [_target]\n      counters: [x]\n'),
    );
    expect(
      got.some((m) => /CFG_STATEFUL/.test(m) && /thread_workers/.test(m)),
      got.join('\n'),
    ).toBe(true);
  });
});

describe('the cycle of a sharded run', () => {
  const at = new Date('2026-01-01T00:00:30Z');
  const cfg = (schedule: object) => ({ schedule }) as never;
  it('ends at the next interval, the next cron fire, or never for a manual run', () => {
    expect(cycleEnd(cfg({ type: 'interval', interval_seconds: 60 }), at)).toBe(at.getTime() + 60_000);
    expect(cycleEnd(cfg({ type: 'cron', cron: '*/5 * * * *' }), at)).toBe(Date.parse('2026-01-01T00:05:00Z'));
    expect(cycleEnd(cfg({ type: 'manual' }), at)).toBe(Number.POSITIVE_INFINITY);
  });
});
