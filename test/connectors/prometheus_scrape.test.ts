// The prometheus_scrape source: the conformance suite (an exposition server of ours behind basic
// auth), then Debian's real `prometheus-node-exporter` and Prometheus' own /metrics, scraped by
// the source and by Prometheus 2.42 itself: the same series, with the same type and help, stable
// values equal and moving counters within the interval of Prometheus' own scrapes around ours.
// Then the fleet rules (a slow, a refusing, a failing and a too-large target each a note and a
// metric, the others scraped), a poison body dead-lettered whole with its line, honor_labels and
// honor_timestamps, and the parser on both formats.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPipeline } from '../../src/engine/runner.js';
import { Metrics } from '../../src/observability/metrics.js';
import { connectorMetrics } from '../../src/plugins/registry.js';
import { silentLogger } from '../../src/observability/log.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { ExpositionError, parseExposition, type ParsedSample } from '../../src/plugins/connectors/prometheus_scrape/parse.js';
import { tempDir } from '../helpers/fs.js';
import { conformance, type Cfg } from './conformance.js';
import { loadPipeline, outputRecords } from './helpers.js';
import { PROM_PASSWORD, PROM_USER, prometheusServer, type PrometheusServer } from './peers/prometheus.js';
import { expositionServer, nodeExporter, prometheusScrapeFixture, type ExpositionServer, type NodeExporter } from './peers/prometheus-scrape.js';
import { until } from '../helpers/wait.js';

conformance(prometheusScrapeFixture);

type Dead = { _stage: string; _error: string; raw?: string };

/**
 * A scrape is stamped when it starts and read a little later: Prometheus' samples this far before
 * and after ours are surely read before and after ours (it scrapes every second).
 */
const MARGIN_MS = 300;

/** One manual run of the source into NDJSON (and a DLQ): its records, dead letters and run record. */
async function scrape(source: Cfg, opts: { metrics?: Metrics; name?: string } = {}) {
  const out = tempDir('svc-scrape-out-');
  const dlqDir = tempDir('svc-scrape-dlq-');
  const name = opts.name ?? 'scrape';
  const config = loadPipeline({
    name,
    schedule: { type: 'manual' },
    source: source,
    serializer_in: { type: 'json' },
    serializer_out: { type: 'ndjson' },
    sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
    on_error: 'dlq',
    dlq: { type: 'local', path: dlqDir, filename_template: 'dlq.ndjson' },
  });
  const rec = await runPipeline(config, { log: silentLogger, processed: new MemoryProcessedFiles(), telemetry: opts.metrics?.telemetry(name) });
  return { rec, records: outputRecords(out), dead: outputRecords(dlqDir) as unknown as Dead[] };
}

const key = (name: string, labels: Record<string, string>) =>
  `${name}{${Object.entries(labels)
    .filter(([k]) => k !== 'job')
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(',')}}`;

describe("prometheus_scrape: node exporter and Prometheus, compared with Prometheus' own scrape", () => {
  let node: NodeExporter;
  let prom: PrometheusServer;
  let promTarget: string;
  beforeAll(async () => {
    node = await nodeExporter();
    // Prometheus scrapes the node exporter and itself every second (its own /metrics behind its basic auth).
    prom = await prometheusServer({
      scrape: [
        { job: 'node', targets: [node.target] },
        { job: 'self', targets: ['SELF'] },
      ],
    });
    promTarget = new URL(prom.url).host;
    await until(async () => ((await prom.query('up{job=~"node|self"} == 1')).length === 2 ? true : undefined), 30_000, 'Prometheus scraping both targets');
  }, 60_000);
  afterAll(async () => {
    await prom?.stop();
    await node?.stop();
  });

  /** Prometheus' raw samples of a series over the last minute: [ms, value][]. */
  async function promSamples(name: string, labels: Record<string, string>, job: string): Promise<[number, number][]> {
    const sel = Object.entries({ ...labels, job })
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join(',');
    const res = await prom.query(`${name}{${sel}}[1m]`);
    if (res.length !== 1) throw new Error(`${name}{${sel}}: ${res.length} series at Prometheus`);
    return res[0]!.values!.map(([t, v]) => [Math.round(t * 1000), Number(v)]);
  }

  it('scrapes the node exporter: the series, types, help and values Prometheus scraped', async () => {
    const { rec, records, dead } = await scrape({ type: 'prometheus_scrape', targets: [node.url], job: 'node' });
    expect(rec.status, JSON.stringify(rec.errors)).toBe('success');
    expect(rec.errors).toEqual([]);
    expect(dead).toEqual([]);
    expect(records.length).toBeGreaterThan(100);
    for (const r of records) expect(r).toMatchObject({ labels: { job: 'node', instance: node.target }, _target: node.url });

    // The same families and series as Prometheus' last scrape (its own up and scrape_* series aside).
    const ours = new Set(records.map((r) => key(r.name as string, r.labels as Record<string, string>)));
    const theirs = new Set(
      (await prom.query('{job="node"}'))
        .filter((s) => !/^(up|scrape_)/.test(s.metric.__name__!))
        .map((s) => {
          const { __name__, ...labels } = s.metric;
          return key(__name__!, labels);
        }),
    );
    const stableFamily = (k: string) =>
      /^(node_cpu_seconds_total|node_memory_MemTotal_bytes|node_boot_time_seconds|node_filesystem_size_bytes|node_exporter_build_info|node_uname_info)\{/.test(
        k,
      );
    expect([...ours].filter(stableFamily).sort()).toEqual([...theirs].filter(stableFamily).sort());
    expect([...ours].filter(stableFamily).length).toBeGreaterThan(5);

    // Type and help as Prometheus' metadata API has them.
    const meta = (await (await fetch(`${prom.url}/api/v1/metadata?metric=node_cpu_seconds_total`, { headers: { authorization: prom.auth } })).json()) as {
      data: Record<string, { type: string; help: string }[]>;
    };
    const cpu = records.filter((r) => r.name === 'node_cpu_seconds_total');
    expect(cpu[0]).toMatchObject({ type: meta.data.node_cpu_seconds_total![0]!.type, help: meta.data.node_cpu_seconds_total![0]!.help });

    // Values that do not move are equal; counters that move lie within Prometheus' scrapes before and after ours.
    const one = (name: string) => records.find((r) => r.name === name)!;
    for (const name of ['node_memory_MemTotal_bytes', 'node_boot_time_seconds', 'node_exporter_build_info']) {
      const r = one(name);
      const { job: _job, ...labels } = r.labels as Record<string, string>;
      const s = await promSamples(name, labels, 'node');
      expect(r.value, name).toBe(s.at(-1)![1]);
    }
    let checked = 0;
    for (const r of cpu.slice(0, 8)) {
      const { job: _job, ...labels } = r.labels as Record<string, string>;
      const at = r.timestamp_ms as number;
      // Wait for Prometheus' first scrape after ours, then bracket our value.
      const s = await until(
        async () => {
          const xs = await promSamples('node_cpu_seconds_total', labels, 'node');
          return xs.some(([t]) => t >= at + MARGIN_MS) ? xs : undefined;
        },
        10_000,
        'a scrape by Prometheus after ours',
      );
      const before = s.filter(([t]) => t <= at - MARGIN_MS).at(-1);
      const after = s.find(([t]) => t >= at + MARGIN_MS)!;
      if (before) expect(r.value as number).toBeGreaterThanOrEqual(before[1]);
      expect(r.value as number).toBeLessThanOrEqual(after[1]);
      checked++;
    }
    expect(checked).toBe(8);
  }, 60_000);

  it("scrapes Prometheus' own /metrics behind its basic auth: stable values equal, counters within the interval", async () => {
    const url = `${prom.url}/metrics`;
    const { rec, records } = await scrape({
      type: 'prometheus_scrape',
      targets: [url],
      job: 'self',
      auth_type: 'basic',
      username: PROM_USER,
      password: PROM_PASSWORD,
    });
    expect(rec.status, JSON.stringify(rec.errors)).toBe('success');
    expect(rec.errors).toEqual([]);
    const one = (name: string) => records.find((r) => r.name === name)!;
    for (const name of ['prometheus_build_info', 'process_start_time_seconds', 'prometheus_config_last_reload_successful', 'go_info']) {
      const r = one(name);
      const { job: _job, ...labels } = r.labels as Record<string, string>;
      expect(labels.instance).toBe(promTarget);
      const s = await promSamples(name, labels, 'self');
      expect(r.value, name).toBe(s.at(-1)![1]);
      expect(r.type).toBe('gauge');
    }
    const r = one('process_cpu_seconds_total');
    expect(r.type).toBe('counter');
    const { job: _job, ...labels } = r.labels as Record<string, string>;
    const at = r.timestamp_ms as number;
    const s = await until(
      async () => {
        const xs = await promSamples('process_cpu_seconds_total', labels, 'self');
        return xs.some(([t]) => t >= at + MARGIN_MS) ? xs : undefined;
      },
      10_000,
      'a scrape by Prometheus after ours',
    );
    const before = s.filter(([t]) => t <= at - MARGIN_MS).at(-1);
    if (before) expect(r.value as number).toBeGreaterThanOrEqual(before[1]);
    expect(r.value as number).toBeLessThanOrEqual(s.find(([t]) => t >= at + MARGIN_MS)![1]);
    // Histograms: every bucket, _sum and _count of a family carries the family's type.
    const buckets = records.filter((x) => (x.name as string).startsWith('prometheus_http_request_duration_seconds'));
    expect(new Set(buckets.map((x) => x.type))).toEqual(new Set(['histogram']));
    expect(buckets.some((x) => (x.labels as Record<string, string>).le === '+Inf')).toBe(true);
  }, 60_000);
});

describe('prometheus_scrape: a fleet, each target on its own', () => {
  let srv: ExpositionServer;
  beforeAll(async () => {
    srv = await expositionServer();
  });
  afterAll(() => srv.close());

  it('a slow, a failing, a refused and a too-large target are each a note and a metric; the others are scraped', async () => {
    srv.set('good/metrics', '# TYPE up_things gauge\nup_things{a="1"} 1\nup_things{a="2"} 2\n');
    srv.set('slow/metrics', 'x 1\n');
    srv.delay('slow/metrics', 3000);
    srv.set('big/metrics', `big 1\n${'# padding\n'.repeat(20_000)}`);
    const metrics = new Metrics({ defaults: false, connectorMetrics: connectorMetrics() });
    const began = Date.now();
    const { rec, records, dead } = await scrape(
      {
        type: 'prometheus_scrape',
        targets: [
          `${srv.base}/good/metrics`,
          `${srv.base}/slow/metrics`,
          `${srv.base}/missing/metrics`,
          'http://127.0.0.1:1/metrics',
          `${srv.base}/big/metrics`,
        ],
        timeout_seconds: 0.5,
        max_body_bytes: 100_000,
      },
      { metrics, name: 'fleet' },
    );
    expect(Date.now() - began).toBeLessThan(2900); // the slow target did not hold the run
    expect(rec.status).toBe('success');
    expect(dead).toEqual([]);
    expect(records.map((r) => [r.name, r.value])).toEqual([
      ['up_things', 1],
      ['up_things', 2],
    ]);
    expect(rec.errors.sort()).toEqual(
      [
        'prometheus_scrape: http://127.0.0.1:1/metrics: connection refused (nothing listens there)',
        `prometheus_scrape: GET ${srv.base}/missing/metrics returned 404 Not Found: not found`,
        `prometheus_scrape: ${srv.base}/big/metrics: the response body is larger than 100000 bytes (max_body_bytes)`,
        `prometheus_scrape: ${srv.base}/slow/metrics: no complete answer within timeout_seconds (0.5s); skipped`,
      ].sort(),
    );
    const text = await metrics.registry.metrics();
    for (const [t, reason] of [
      [`${srv.base}/slow/metrics`, 'timeout'],
      [`${srv.base}/missing/metrics`, 'status'],
      ['http://127.0.0.1:1/metrics', 'unreachable'],
      [`${srv.base}/big/metrics`, 'too_large'],
    ])
      expect(text).toContain(`svc_prometheus_scrape_errors_total{pipeline="fleet",target="${t}",reason="${reason}"} 1`);
    expect(text).toContain(`svc_prometheus_scrape_seconds_count{pipeline="fleet",target="${srv.base}/good/metrics"} 1`);
  });

  it('dead-letters a body that does not parse whole, with the line that is wrong; the other targets are read', async () => {
    const poison = '# TYPE a counter\na_total 1\na_total{x="unterminated} 2\n';
    srv.set('poison/metrics', poison);
    srv.set('fine/metrics', 'b 7\n');
    const metrics = new Metrics({ defaults: false, connectorMetrics: connectorMetrics() });
    const { rec, records, dead } = await scrape(
      { type: 'prometheus_scrape', targets: [`${srv.base}/poison/metrics`, `${srv.base}/fine/metrics`] },
      { metrics, name: 'poison' },
    );
    expect(rec.status).toBe('success');
    expect(records.map((r) => [r.name, r.value])).toEqual([['b', 7]]);
    expect(dead).toHaveLength(1);
    expect(dead[0]!._error).toMatch(/prometheus_scrape: .*poison\/metrics: line 3: unterminated label value/);
    expect(JSON.stringify(dead[0])).toContain('unterminated');
    expect(rec.errors.join('\n')).toMatch(/the body does not parse \(line 3: unterminated label value\)/);
    expect(await metrics.registry.metrics()).toContain(
      `svc_prometheus_scrape_errors_total{pipeline="poison",target="${srv.base}/poison/metrics",reason="parse"} 1`,
    );
  });

  it('adds job and instance as Prometheus does: clashing scraped labels exported_, or kept with honor_labels; exposed timestamps kept or not', async () => {
    srv.set('labels/metrics', 'm{job="theirs",instance="x",k="v"} 1 1700000000000\n');
    const url = `${srv.base}/labels/metrics`;
    const instance = new URL(url).host;
    const { records } = await scrape({ type: 'prometheus_scrape', targets: [url], job: 'mine', labels: { site: 's1' } });
    expect(records[0]).toMatchObject({
      labels: { exported_job: 'theirs', exported_instance: 'x', k: 'v', job: 'mine', instance, site: 's1' },
      timestamp_ms: 1700000000000,
      timestamp: '2023-11-14T22:13:20.000Z',
      type: 'untyped',
    });
    const honored = await scrape({ type: 'prometheus_scrape', targets: [url], job: 'mine', honor_labels: true, honor_timestamps: false });
    expect(honored.records[0]!.labels).toEqual({ job: 'theirs', instance: 'x', k: 'v' });
    expect(Math.abs((honored.records[0]!.timestamp_ms as number) - Date.now())).toBeLessThan(60_000);
  });

  it('reads OpenMetrics when the target answers with it', async () => {
    srv.set(
      'om/metrics',
      '# TYPE req counter\n# UNIT req requests\n# HELP req Requests \\"served\\".\nreq_total{path="/"} 5 1700000000.5 # {trace_id="abc"} 1 1700000000.1\nreq_created{path="/"} 1700000000\n# EOF\n',
      'application/openmetrics-text; version=1.0.0; charset=utf-8',
    );
    const { records, dead } = await scrape({ type: 'prometheus_scrape', targets: [`${srv.base}/om/metrics`] });
    expect(dead).toEqual([]);
    expect(records.map((r) => [r.name, r.value, r.timestamp_ms, r.type, r.help, r.unit])).toEqual([
      ['req_total', 5, 1700000000500, 'counter', 'Requests "served".', 'requests'],
      ['req_created', 1700000000, expect.any(Number), 'counter', 'Requests "served".', 'requests'],
    ]);
  });
});

describe('prometheus_scrape: the parser', () => {
  const parse = (body: string, format: 'text' | 'openmetrics' = 'text') => {
    const out: ParsedSample[] = [];
    parseExposition(body, format, undefined, (s) => out.push(s));
    return out;
  };

  it('reads the text format: escapes, spaces, NaN and infinities, comments, metadata of histogram and summary samples', () => {
    const out = parse(
      [
        '# a comment',
        '# HELP h A histogram\\nwith two lines \\\\ end.',
        '# TYPE h histogram',
        'h_bucket{le="0.1"} 1',
        'h_bucket{le="+Inf"} 3',
        'h_sum 0.5',
        'h_count 3',
        '# TYPE s summary',
        's{quantile="0.5"} NaN',
        's_count 0',
        '',
        'weird { a = "x\\"y\\\\z\\n" , } +Inf 123',
        'neg -Inf',
        'exp 1.5e3',
      ].join('\n'),
    );
    expect(out.map((s) => [s.name, s.type])).toEqual([
      ['h_bucket', 'histogram'],
      ['h_bucket', 'histogram'],
      ['h_sum', 'histogram'],
      ['h_count', 'histogram'],
      ['s', 'summary'],
      ['s_count', 'summary'],
      ['weird', 'untyped'],
      ['neg', 'untyped'],
      ['exp', 'untyped'],
    ]);
    expect(out[0]!.help).toBe('A histogram\nwith two lines \\ end.');
    expect(out[4]!.value).toBeNaN();
    expect(out[6]).toMatchObject({ labels: { a: 'x"y\\z\n' }, value: Infinity, timestamp_ms: 123 });
    expect(out[7]!.value).toBe(-Infinity);
    expect(out[8]!.value).toBe(1500);
  });

  it('takes a label named __proto__ as a label', () => {
    const [s] = parse('m{__proto__="p"} 1\n');
    expect(Object.getPrototypeOf(s!.labels)).toBe(Object.prototype);
    expect(Object.keys(s!.labels)).toEqual(['__proto__']);
  });

  it('refuses malformed bodies with the line, in either format', () => {
    const bad: [string, 'text' | 'openmetrics', RegExp][] = [
      ['m{a="1"', 'text', /line 1: unterminated label value|expected/],
      ['m 1 2 3', 'text', /line 1: unexpected/],
      ['m x', 'text', /line 1: "x" is not a sample value/],
      ['1m 1', 'text', /line 1: expected a metric name/],
      ['m{a="1",a="2"} 1', 'text', /label a twice/],
      ['# TYPE m nonsense', 'text', /unknown type/],
      ['# TYPE m gauge\n# TYPE m gauge', 'text', /second TYPE/],
      ['m 1 1.5', 'text', /integer milliseconds/],
      ['m 1', 'openmetrics', /no # EOF/],
      ['m 1\n# EOF\nm 2', 'openmetrics', /line 3: text after # EOF/],
      ['m  1\n# EOF', 'openmetrics', /not a sample value/],
      ['m{a="\\q"} 1', 'text', /invalid escape/],
    ];
    for (const [body, format, re] of bad) expect(() => parse(body, format), body).toThrow(re);
    expect(() => parse('m{a="1"', 'text')).toThrow(ExpositionError);
  });

  it('bounds every count and size', () => {
    const lim = { maxSamples: 3, maxLabels: 2, maxLabelNameBytes: 5, maxLabelValueBytes: 8, maxLineBytes: 100, maxFamilies: 2 };
    const p = (b: string) => parseExposition(b, 'text', lim, () => {});
    expect(() => p('a 1\nb 1\nc 1\nd 1\n')).toThrow(/line 4: more than 3 samples/);
    expect(() => p('a{x="1",y="2",z="3"} 1')).toThrow(/more than 2 labels/);
    expect(() => p('a{abcdef="1"} 1')).toThrow(/label name longer than 5 bytes/);
    expect(() => p('a{x="123456789"} 1')).toThrow(/label value longer than 8/);
    expect(() => p(`a 1 ${'1'.repeat(200)}`)).toThrow(/longer than 100 bytes/);
    expect(() => p('# TYPE a gauge\n# TYPE b gauge\n# TYPE c gauge')).toThrow(/more than 2 metric families/);
  });
});
