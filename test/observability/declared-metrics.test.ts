// The generic mechanism behind connector metrics: a plugin declares each metric (name, help, kind,
// labels, buckets), the daemon's Metrics registers every declaration once with `pipeline` first,
// a component reaches them by name through its telemetry, and a pipeline's series go with it. The
// declared connector metrics read on /metrics exactly as they did when each was a field of Metrics.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { componentMetrics, Metrics } from '../../src/observability/metrics.js';
import { connectorMetrics } from '../../src/plugins/registry.js';
import type { MetricDeclaration } from '../../src/plugins/types.js';

const declared: MetricDeclaration[] = [
  { name: 'svc_test_things_total', help: 'Things, per thing and why.', kind: 'counter', labels: ['thing', 'why'] },
  { name: 'svc_test_depth', help: 'Depth, per thing.', kind: 'gauge', labels: ['thing'] },
  { name: 'svc_test_seconds', help: 'Time, per thing.', kind: 'histogram', labels: ['thing'], buckets: [0.5, 2] },
];

describe('declared connector metrics', () => {
  it('registers each declaration once, pipeline first, and records by kind', async () => {
    const m = new Metrics({ defaults: false, connectorMetrics: [...declared, declared[0]!] });
    const warnings: string[] = [];
    const metric = componentMetrics(m.telemetry('p'), declared, (w) => warnings.push(w))!;
    // Labels are written in their declared order whatever order they are given in; numbers as text.
    metric('svc_test_things_total').inc({ why: 'late', thing: 7 }, 2);
    metric('svc_test_things_total').inc({ thing: 7, why: 'late' });
    metric('svc_test_depth').set({ thing: 'a' }, 4);
    metric('svc_test_depth').inc({ thing: 'a' }, 1);
    metric('svc_test_seconds').observe({ thing: 'a' }, 1);
    const text = await m.registry.metrics();
    expect(text).toContain('# HELP svc_test_things_total Things, per thing and why.\n# TYPE svc_test_things_total counter');
    expect(text).toContain('svc_test_things_total{pipeline="p",thing="7",why="late"} 3');
    expect(text).toContain('# TYPE svc_test_depth gauge');
    expect(text).toContain('svc_test_depth{pipeline="p",thing="a"} 5');
    expect(text).toContain('# TYPE svc_test_seconds histogram');
    expect(text).toContain('svc_test_seconds_bucket{le="0.5",pipeline="p",thing="a"} 0');
    expect(text).toContain('svc_test_seconds_bucket{le="2",pipeline="p",thing="a"} 1');
    expect(warnings).toEqual([]);
  });

  it('an undeclared name or an update its kind has not records nothing and fails nothing', async () => {
    const m = new Metrics({ defaults: false, connectorMetrics: declared });
    const warnings: string[] = [];
    // The component's plugin declares only the counter: the others are not its to update.
    const metric = componentMetrics(m.telemetry('p'), [declared[0]!], (w) => warnings.push(w))!;
    metric('svc_test_depth').set({ thing: 'a' }, 1);
    metric('svc_test_depth').set({ thing: 'b' }, 1);
    metric('svc_nowhere_total').inc({});
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain('svc_test_depth is not declared by this connector');
    // A counter is neither set nor observed, nor counted down.
    metric('svc_test_things_total').set({ thing: 'a', why: 'x' }, 5);
    metric('svc_test_things_total').observe({ thing: 'a', why: 'x' }, 5);
    metric('svc_test_things_total').inc({ thing: 'a', why: 'x' }, -1);
    const text = await m.registry.metrics();
    expect(text).not.toMatch(/svc_test_depth\{/);
    expect(text).not.toMatch(/svc_test_things_total\{/);
  });

  it('without connector metrics in the run, a component gets no metric() (nothing to compute for them)', () => {
    expect(componentMetrics({ connection: () => {} }, declared, () => {})).toBeUndefined();
  });

  it("forgets a deleted pipeline's declared series, keeping the others'", async () => {
    const m = new Metrics({ defaults: false, connectorMetrics: declared });
    for (const p of ['gone', 'kept']) {
      const metric = componentMetrics(m.telemetry(p), declared, () => {})!;
      metric('svc_test_things_total').inc({ thing: 'a', why: 'x' });
      metric('svc_test_depth').set({ thing: 'a' }, 1);
      metric('svc_test_seconds').observe({ thing: 'a' }, 1);
    }
    m.forget('gone');
    const text = await m.registry.metrics();
    expect(text).not.toContain('pipeline="gone"');
    expect(text).toContain('svc_test_things_total{pipeline="kept",thing="a",why="x"} 1');
    expect(text).toContain('svc_test_seconds_count{pipeline="kept",thing="a"} 1');
  });

  it('registers what the connectors declare, with the names, help and types users scrape', async () => {
    const text = await new Metrics({ defaults: false, connectorMetrics: connectorMetrics() }).registry.metrics();
    // As each was registered before the connectors declared their own (docs/observability.md).
    const before: [string, string, string][] = [
      ['svc_kafka_consumer_lag', 'gauge', 'Messages between the committed offset and the high watermark, per topic and partition (empty labels: the total).'],
      ['svc_snmp_poll_seconds', 'histogram', 'Time snmp_poll took to poll one target (all its requests), per target.'],
      ['svc_snmp_poll_errors_total', 'counter', 'Targets snmp_poll could not poll, per target and reason (timeout, unreachable, refused, deadline, error).'],
      ['svc_prometheus_scrape_seconds', 'histogram', 'Time prometheus_scrape took to scrape one target (request, body and parsing), per target.'],
      [
        'svc_prometheus_scrape_errors_total',
        'counter',
        'Targets prometheus_scrape could not scrape, per target and reason (timeout, unreachable, status, too_large, parse, error).',
      ],
      [
        'svc_flow_sequence_gaps_total',
        'counter',
        'Sequence numbers a flow exporter skipped, per exporter: flows for NetFlow v5, data records for IPFIX, datagrams for NetFlow v9 and sFlow.',
      ],
      [
        'svc_flow_exporter_restarts_total',
        'counter',
        'Restarts of a flow exporter (its sysUptime went back, or its IPFIX sequence number started over), per exporter.',
      ],
      [
        'svc_flow_enrich_failures_total',
        'counter',
        'Polls of a flow exporter’s interfaces (IF-MIB over SNMP, enrich_interfaces) that failed, per exporter: its flows are delivered without interface names.',
      ],
      [
        'svc_flow_enrich_unnamed_total',
        'counter',
        'Flows delivered without interface names because their exporter’s first IF-MIB poll had not ended (enrich_interfaces), per exporter and reason: wait_timeout (wait_seconds ran out), wait_full (max_queue_size flows were already waiting).',
      ],
    ];
    for (const [name, type, help] of before) expect(text).toContain(`# HELP ${name} ${help}\n# TYPE ${name} ${type}\n`);
    expect(
      connectorMetrics()
        .map((d) => d.name)
        .sort(),
    ).toEqual(before.map(([n]) => n).sort());
    // The histograms keep their buckets.
    const buckets = connectorMetrics().find((d) => d.name === 'svc_snmp_poll_seconds')!.buckets;
    expect(buckets).toEqual([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]);
  });

  it('every declared metric is in the table of docs/observability.md, with its type', () => {
    const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'observability.md'), 'utf8');
    for (const d of connectorMetrics()) expect(doc, d.name).toContain(`| \`${d.name}\` | ${d.kind} |`);
  });
});
