// The prometheus_rw sink against Debian's real Prometheus (2.42, server mode with
// --web.enable-remote-write-receiver, basic auth): the conformance suite, then the samples read back
// through the query API and compared value for value (names sanitised, several value fields, SNMP
// counters unwrapped, timestamps), a kill -9 and restart of Prometheus in the middle of a run with
// nothing acknowledged lost; and against a scripted receiver, what the remote-write specification
// asks of a sender: 5xx and 429 retried (Retry-After honoured), other 4xx dead-lettered with the
// receiver's message, max_samples_per_send, headers and bearer auth.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPipeline } from '../../src/engine/runner.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { silentLogger } from '../../src/observability/log.js';
import { decodeBody } from '../../src/plugins/connectors/prometheus_rw/decode.js';
import { encodeWriteRequest, labelBytes, snappyBlock } from '../../src/plugins/connectors/prometheus_rw/encode.js';
import { labelName, metricName, SeriesMapper } from '../../src/plugins/connectors/prometheus_rw/series.js';
import { retryAfterMs } from '../../src/plugins/connector-runtime/http-client.js';
import { tempDir } from '../helpers/fs.js';
import { secretsOf } from '../../src/core/secrets.js';
import { registry } from '../../src/plugins/registry.js';
import { conformance, uniqueChannel, type Cfg, type Rec } from './conformance.js';
import { loadPipeline, outputRecords } from './helpers.js';
import { PROM_PASSWORD, PROM_USER, prometheusRwSinkFixture, prometheusServer, type PrometheusServer } from './peers/prometheus.js';
import { pace, until } from '../helpers/wait.js';

conformance(prometheusRwSinkFixture);

type Dead = { _stage: string; _error: string; record: Rec };

/** One manual run of `files` (each a list of records, NDJSON) into `sinks`; a DLQ directory. */
async function sinkRun(sinks: Cfg[], files: Rec[][], extra: Cfg = {}) {
  const dir = tempDir('svc-promrw-in-');
  mkdirSync(join(dir, 'in'));
  files.forEach((records, i) => writeFileSync(join(dir, 'in', `f${String(i).padStart(3, '0')}.ndjson`), records.map((r) => JSON.stringify(r) + '\n').join('')));
  const dlqDir = tempDir('svc-promrw-dlq-');
  const config = loadPipeline({
    name: 'promrw-sink',
    schedule: { type: 'manual' },
    source: { type: 'local', path: join(dir, 'in') },
    serializer_in: { type: 'ndjson' },
    sinks,
    on_error: 'dlq',
    dlq: { type: 'local', path: dlqDir, filename_template: 'dlq.ndjson' },
    ...extra,
  });
  const rec = await runPipeline(config, { log: silentLogger, processed: new MemoryProcessedFiles() });
  return { rec, dead: outputRecords(dlqDir) as unknown as Dead[] };
}

describe('prometheus_rw sink: series read back from Prometheus', () => {
  let prom: PrometheusServer;
  beforeAll(async () => {
    prom = await prometheusServer();
  }, 60_000);
  afterAll(() => prom?.stop());

  const sink = (extra: Cfg = {}) => ({ type: 'prometheus_rw', url: prom.writeUrl, auth_type: 'basic', username: PROM_USER, password: PROM_PASSWORD, ...extra });

  /** Every raw sample of the series matching `selector` in the last hour, by the series' labels. */
  async function samples(selector: string): Promise<Map<string, [number, number][]>> {
    const res = await prom.query(`${selector}[1h]`);
    const out = new Map<string, [number, number][]>();
    for (const s of res) {
      const key = Object.entries(s.metric)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      out.set(
        key,
        s.values!.map(([t, v]) => [Math.round(t * 1000), Number(v)]),
      );
    }
    return out;
  }

  it('writes each value field as a series with the record labels and times, value for value', async () => {
    const run = uniqueChannel('p');
    const t0 = Date.now() - 120_000;
    const records: Rec[] = [];
    for (let i = 0; i < 50; i++)
      records.push({
        metric: 'if.octets',
        'agent-address': '10.0.0.1',
        ifIndex: i % 5,
        run,
        in: i * 1000.5,
        out: i * 7,
        poll_time: new Date(t0 + i * 1000).toISOString(),
        note: '',
      });
    const { rec, dead } = await sinkRun(
      [sink({ name_field: 'metric', value_fields: ['in', 'out'], timestamp_field: 'poll_time', static_labels: { job: 'svc-test' } })],
      [records],
      { record_chunk_size: 7 },
    );
    expect(rec.status, JSON.stringify(rec.errors)).toBe('success');
    expect(dead).toEqual([]);
    expect(rec.records_out).toBe(50);
    // Names sanitised (if.octets_in → if_octets_in), label names too (agent-address → agent_address), empty labels left out.
    const got = await samples(`{__name__=~"if_octets_(in|out)", run="${run}"}`);
    expect(got.size).toBe(10);
    for (const r of records) {
      for (const f of ['in', 'out'] as const) {
        const key = `__name__=if_octets_${f},agent_address=10.0.0.1,ifIndex=${r.ifIndex},job=svc-test,run=${run}`;
        const series = got.get(key);
        expect(series, key).toBeDefined();
        expect(series).toContainEqual([Date.parse(r.poll_time as string), r[f] as number]);
      }
    }
    expect([...got.values()].reduce((n, s) => n + s.length, 0)).toBe(100);
  });

  it('sends SNMP Counter32 values monotonic across a wrap (named _total), gauges as read', async () => {
    const run = uniqueChannel('p');
    const t0 = Date.now() - 60_000;
    const raw = [4294967000, 4294967290, 100, 5000, 3]; // a wrap, then a reset (agent restarted)
    const records = raw.map((v, i) => ({ name: 'ifInOctets', host: 'r1', run, value: v, timestamp: t0 + i * 10_000, _snmp_widths: { value: 32 } }));
    const gauges = raw.map((v, i) => ({ name: 'ifSpeed', host: 'r1', run, value: v, timestamp: t0 + i * 10_000 }));
    const { rec } = await sinkRun([sink()], [records, gauges]);
    expect(rec.status, JSON.stringify(rec.errors)).toBe('success');
    const counter = await samples(`ifInOctets_total{run="${run}"}`);
    expect([...counter.values()][0]!.map(([, v]) => v)).toEqual([4294967000, 4294967290, 4294967296 + 100, 4294967296 + 5000, 3]);
    const gauge = await samples(`ifSpeed{run="${run}"}`);
    expect([...gauge.values()][0]!.map(([, v]) => v)).toEqual(raw);
    // Prometheus sees one counter reset (the agent restart), not the wrap.
    const inc = await prom.query(`resets(ifInOctets_total{run="${run}"}[1h])`);
    expect(Number(inc[0]!.value![1])).toBe(1);
  });

  it('loses nothing acknowledged when Prometheus is killed and restarted mid-run', async () => {
    const run = uniqueChannel('p');
    const t0 = Date.now() - 300_000;
    // 30 files of 20 records, 4 writes a second: the run lasts about 8 s and the kill lands in it.
    const files = Array.from({ length: 30 }, (_, f) =>
      Array.from({ length: 20 }, (_, i) => ({ name: 'restart_seq', run, value: f * 20 + i, timestamp: t0 + (f * 20 + i) * 100 })),
    );
    const running = sinkRun([sink({ retry_count: 12, retry_delay_seconds: 0.2 })], files, { record_chunk_size: 20, rate_limit_rps: 4 });
    await until(async () => ((await samples(`restart_seq{run="${run}"}`).catch(() => new Map())).size ? true : undefined), 20_000, 'the first samples');
    const before = [...(await samples(`restart_seq{run="${run}"}`)).values()][0]!.length;
    await prom.kill();
    // Everything Prometheus acknowledged before the kill is in its WAL, and comes back.
    await pace(500); // the sink meets the outage
    await prom.start();
    const after = [...(await samples(`restart_seq{run="${run}"}`)).values()][0]!;
    expect(after.length).toBeGreaterThanOrEqual(before);
    const { rec, dead } = await running;
    expect(rec.status, JSON.stringify(rec.errors)).toBe('success');
    expect(dead).toEqual([]);
    expect(rec.records_out).toBe(600);
    const all = [...(await samples(`restart_seq{run="${run}"}`)).values()][0]!;
    expect(all.map(([, v]) => v)).toEqual(Array.from({ length: 600 }, (_, i) => i));
    expect(all.map(([t]) => t)).toEqual(Array.from({ length: 600 }, (_, i) => t0 + i * 100));
    console.log(`[prometheus_rw sink] restart: ${before} samples acknowledged before the kill, all 600 after the run`);
  }, 90_000);

  it('dead-letters a record Prometheus refuses with its message, and records it cannot map', async () => {
    const run = uniqueChannel('p');
    const t = Date.now() - 30_000;
    // Same series and time, another value: Prometheus answers 400 (duplicate sample for timestamp).
    const { rec: first } = await sinkRun([sink()], [[{ name: 'dup_test', run, value: 1, timestamp: t }]]);
    expect(first.status).toBe('success');
    const { rec, dead } = await sinkRun(
      [sink()],
      [
        [{ name: 'dup_test', run, value: 2, timestamp: t }],
        [
          { run, value: 'high' },
          { name: 'x', run, value: 1, timestamp: 'never' },
        ],
      ],
    );
    expect(rec.status).toBe('success');
    expect(dead.map((d) => d._error).sort()).toEqual([
      expect.stringMatching(/prometheus_rw: POST .* returned 400 Bad Request: duplicate sample for timestamp/),
      expect.stringMatching(/prometheus_rw: field 'timestamp' is not a time/),
      expect.stringMatching(/prometheus_rw: no metric name/),
    ]);
    expect(dead.every((d) => d._stage === 'sink')).toBe(true);
  });
});

// ---- a scripted receiver: the remote-write specification's retry rules ------------------------

interface Scripted {
  url: string;
  /** Bodies decoded, with the headers of each request and when it came. */
  requests: { headers: IncomingMessage['headers']; samples: number; names: string[]; at: number }[];
  /** The answers to give, in order; then 204. */
  answers: { status: number; headers?: Record<string, string>; body?: string }[];
  close(): Promise<void>;
}

async function scripted(): Promise<Scripted> {
  const s: Scripted = { url: '', requests: [], answers: [], close: async () => {} };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { records } = decodeBody(Buffer.concat(chunks));
      s.requests.push({ headers: req.headers, samples: records.length, names: records.map((r) => r.name), at: Date.now() });
      const a = s.answers.shift() ?? { status: 204 };
      res.writeHead(a.status, a.headers).end(a.body ?? '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  s.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/write`;
  s.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return s;
}

describe('prometheus_rw sink: the specification against a scripted receiver', () => {
  let rx: Scripted;
  beforeAll(async () => {
    rx = await scripted();
  });
  afterAll(() => rx.close());
  const recs = (n: number) => Array.from({ length: n }, (_, i) => ({ name: 'm', i, value: i }));

  it('retries a 5xx and a 429, waiting the Retry-After the receiver asked for', async () => {
    rx.requests.length = 0;
    rx.answers.push({ status: 503, body: 'overloaded' }, { status: 429, headers: { 'retry-after': '1' }, body: 'slow down' });
    const { rec, dead } = await sinkRun([{ type: 'prometheus_rw', url: rx.url, retry_count: 3, retry_delay_seconds: 0.05 }], [recs(3)]);
    expect(rec.status, JSON.stringify(rec.errors)).toBe('success');
    expect(dead).toEqual([]);
    expect(rx.requests.map((r) => r.samples)).toEqual([3, 3, 3]);
    // The third request came no sooner than the second's Retry-After (1 s), not after the 0.1 s backoff.
    expect(rx.requests[2]!.at - rx.requests[1]!.at).toBeGreaterThanOrEqual(950);
    const h = rx.requests[0]!.headers;
    expect(h['content-encoding']).toBe('snappy');
    expect(h['content-type']).toBe('application/x-protobuf');
    expect(h['x-prometheus-remote-write-version']).toBe('0.1.0');
  });

  it('does not retry another 4xx: the records of that request go to the DLQ with the message; the other requests land', async () => {
    rx.requests.length = 0;
    rx.answers.push({ status: 204 }, { status: 400, body: 'out of bounds' });
    const { rec, dead } = await sinkRun([{ type: 'prometheus_rw', url: rx.url, max_samples_per_send: 4, retry_count: 3 }], [recs(10)]);
    expect(rec.status).toBe('success');
    expect(rx.requests.map((r) => r.samples)).toEqual([4, 4, 2]);
    expect(dead.map((d) => d.record.i)).toEqual([4, 5, 6, 7]);
    expect(dead[0]!._error).toMatch(/returned 400 Bad Request: out of bounds/);
    expect(rec.records_out).toBe(6);
  });

  it('with a 5xx after earlier requests landed, sends only the rest again', async () => {
    rx.requests.length = 0;
    rx.answers.push({ status: 204 }, { status: 500, body: 'boom' });
    const { rec, dead } = await sinkRun(
      [{ type: 'prometheus_rw', url: rx.url, max_samples_per_send: 5, retry_count: 2, retry_delay_seconds: 0.05 }],
      [recs(10)],
    );
    expect(rec.status).toBe('success');
    expect(dead).toEqual([]);
    expect(rx.requests.map((r) => r.samples)).toEqual([5, 5, 5]);
  });

  it('sends headers and a bearer token, and does not show them in errors', async () => {
    rx.requests.length = 0;
    rx.answers.push({ status: 401, body: 'no' });
    const { dead } = await sinkRun(
      [{ type: 'prometheus_rw', url: rx.url, auth_type: 'bearer', token: 'tok-secret-123', headers: { 'X-Scope-OrgID': 'tenant-7' } }],
      [recs(1)],
    );
    expect(rx.requests[0]!.headers.authorization).toBe('Bearer tok-secret-123');
    expect(rx.requests[0]!.headers['x-scope-orgid']).toBe('tenant-7');
    expect(dead[0]!._error).toMatch(/401 Unauthorized \(the receiver refused the credentials/);
    expect(JSON.stringify(dead)).not.toContain('tok-secret-123');
  });
});

describe('prometheus_rw sink: names and values', () => {
  it('sanitises metric and label names as Prometheus requires', () => {
    expect(metricName('if.octets-in')).toBe('if_octets_in');
    expect(metricName('5g:cell')).toBe('_5g:cell');
    expect(labelName('agent-address')).toBe('agent_address');
    expect(labelName('1st')).toBe('key_1st');
    expect(labelName('__secret')).toBe('key__secret');
    expect(labelName('a:b')).toBe('a_b');
  });

  it('joins the values of labels whose names collide, drops empty ones, and takes a labels object', () => {
    const m = new SeriesMapper({
      nameField: 'name',
      valueFields: ['value'],
      excludeLabels: ['timestamp_ms', 'stale'],
      staticLabels: { job: 'j', site: 'static' },
      timestampField: 'timestamp',
      counterFields: [],
      totalSuffix: true,
      snmpWraps: 'unwrap',
      maxSeries: 10,
    });
    const r = m.map({ name: 'up', value: 1, 'a.b': 'x', a_b: 'y', empty: '', labels: { instance: 'h:9100' }, site: 's1', timestamp_ms: 5, obj: [1] }, 1000);
    expect('samples' in r && r.samples[0]!.labels).toEqual([
      ['__name__', 'up'],
      ['a_b', 'x;y'],
      ['instance', 'h:9100'],
      ['job', 'j'],
      ['site', 's1'],
    ]);
  });

  it('masks header values, the password and the token like every secret', () => {
    const plugin = registry.sink.get('prometheus_rw')!;
    const found = secretsOf(plugin.config, { headers: { 'X-Scope-OrgID': 'tenant-7' }, token: 'tok-1', password: 'pw-1', username: 'svc-user' });
    expect([...found].sort()).toEqual(['pw-1', 'tenant-7', 'tok-1']);
  });

  it('takes counter semantics from a type field: Counter32 wraps, counter never, gauges as read', () => {
    const m = new SeriesMapper({
      nameField: 'name',
      valueFields: ['value'],
      excludeLabels: ['type'],
      staticLabels: {},
      timestampField: 'timestamp',
      counterFields: [],
      typeField: 'type',
      totalSuffix: true,
      snmpWraps: 'unwrap',
      maxSeries: 10,
    });
    const out = (recs: Rec[]) =>
      recs.map((r) => {
        const x = m.map(r, 0);
        return 'samples' in x ? [x.samples[0]!.labels[0]![1], x.samples[0]!.value] : x.refused;
      });
    expect(
      out([
        { name: 'ifInOctets', type: 'Counter32', value: 4294967000 },
        { name: 'ifInOctets', type: 'Counter32', value: 10 },
      ]),
    ).toEqual([
      ['ifInOctets_total', 4294967000],
      ['ifInOctets_total', 4294967306],
    ]);
    // A Prometheus counter (a scraped record) keeps its name and reads a decrease as a reset.
    expect(
      out([
        { name: 'x_total', type: 'counter', value: 50 },
        { name: 'x_total', type: 'counter', value: 5 },
      ]),
    ).toEqual([
      ['x_total', 50],
      ['x_total', 5],
    ]);
    expect(out([{ name: 'ifSpeed', type: 'Gauge32', value: 7 }])).toEqual([['ifSpeed', 7]]);
  });

  it('encodes a series with its cached labels to the same bytes, and decodes back to the same samples', () => {
    const labels: [string, string][] = [
      ['__name__', 'up'],
      ['instance', 'h:9100'],
      ['job', 'ñode'],
    ];
    const samples = [
      { value: 1.5, timestamp_ms: 1764000000000 },
      { value: -2, timestamp_ms: -1000 },
    ];
    const plain = encodeWriteRequest([{ labels, samples }]);
    expect(encodeWriteRequest([{ labels: [], samples, encoded: labelBytes(labels) }])).toEqual(plain);
    const { records } = decodeBody(snappyBlock(plain));
    expect(records.map((r) => [r.name, r.labels, r.value, r.timestamp_ms])).toEqual([
      ['up', { instance: 'h:9100', job: 'ñode' }, 1.5, 1764000000000],
      ['up', { instance: 'h:9100', job: 'ñode' }, -2, -1000],
    ]);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs({ 'retry-after': '3' })).toBe(3000);
    expect(retryAfterMs({ 'retry-after': new Date(10_000).toUTCString() }, 4000)).toBe(6000);
    expect(retryAfterMs({})).toBeUndefined();
    expect(retryAfterMs({ 'retry-after': 'soon' })).toBeUndefined();
  });
});
