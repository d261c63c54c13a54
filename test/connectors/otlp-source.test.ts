// The otlp source against the OpenTelemetry JavaScript SDK's own exporters (the npm registry's
// @opentelemetry/exporter-{logs,metrics,trace}-otlp-{grpc,proto,http}): logs, metrics and traces
// over OTLP/gRPC, OTLP/HTTP protobuf and OTLP/HTTP JSON arrive as records; a full queue is answered
// 503 with Retry-After and the HTTP exporter's retries lose nothing; over gRPC (whose JS exporter
// retries nothing) UNAVAILABLE with RetryInfo, honoured by a gRPC client, loses nothing. Then the wire cases
// by hand: gzip, the secret, unknown paths and content types, a poison body (400 and dead-lettered
// with its reason), a partial success, the body limit. The spool itself is webhook-stream's, tested with the webhook and prometheus_rw sources.
// Plus the conformance suite over OTLP/HTTP and OTLP/gRPC, with the SDK's log exporters as the sender,
// and TLS on both listeners (mutual TLS with tls_client_ca) with certificates openssl makes here.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpsRequest } from 'node:https';
import { gzipSync } from 'node:zlib';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { OTLPLogExporter as LogsGrpc } from '@opentelemetry/exporter-logs-otlp-grpc';
import { OTLPLogExporter as LogsHttp } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as LogsProto } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPMetricExporter as MetricsGrpc } from '@opentelemetry/exporter-metrics-otlp-grpc';
import { OTLPMetricExporter as MetricsHttp } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as MetricsProto } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as TracesGrpc } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as TracesHttp } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as TracesProto } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { loadComponent, loadPipelineText } from '../../src/config/load.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { runPipeline, type RunTelemetry } from '../../src/engine/runner.js';
import { silentLogger, type Logger } from '../../src/observability/log.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { requestType, retryDelayOf, SIGNAL_INFO } from '../../src/plugins/connectors/otlp/proto.js';
import { serverNameOnlyForHostNames } from '../../src/plugins/connector-runtime/grpc-tls.js';
import { holdPort } from './peers/syslog.js';
import type { ConnectionState } from '../../src/plugins/types.js';
import { tempDir } from '../helpers/fs.js';
import { freePort } from '../helpers/net.js';
import { capture, testRegistry } from '../helpers/plugins.js';
import { outputRecords, until, type Cfg, type Rec } from './helpers.js';
import { pace } from '../helpers/wait.js';
import { conformance } from './conformance.js';
import { otlpSourceFixture, publishOtlpLogs } from './peers/otlp.js';
import { makeCerts, type Certs } from '../helpers/certs.js';

conformance(otlpSourceFixture('http/protobuf'));
conformance(otlpSourceFixture('grpc'));

const resource = () => resourceFromAttributes({ 'service.name': 'svc-test', 'host.name': 'rtr1' });

interface Run {
  http: number;
  grpc: number;
  out: string;
  records(): Rec[];
  dead(): Rec[];
  logs: Rec[];
  end(): Promise<unknown>;
}
const runs: Run[] = [];
afterEach(async () => {
  for (const r of runs.splice(0)) await r.end();
});

/** A stream pipeline from an otlp source on free ports into NDJSON (or the sink given), DLQ to a directory. */
async function start(source: Cfg = {}, opts: { sink?: Cfg; stateDir?: string } = {}): Promise<Run> {
  const http = await freePort();
  const grpc = await freePort();
  const out = tempDir('svc-otlp-out-');
  const dlq = tempDir('svc-otlp-dlq-');
  const lines: Rec[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as Rec) }) as unknown as Logger;
  const states: ConnectionState[] = [];
  const telemetry: RunTelemetry = { connection: (component, _t, s) => void (component === 'source' && states.push(s)) };
  const text = stringify({
    version: '1',
    pipeline: {
      name: 'otlp-test',
      schedule: { type: 'stream' },
      source: { type: 'otlp', host: '127.0.0.1', http_port: http, grpc_port: grpc, ...source },
      serializer_in: { type: 'json' },
      serializer_out: { type: 'ndjson' },
      sinks: [opts.sink ?? { type: 'local', path: out, filename_template: 'out.ndjson' }],
      on_error: 'dlq',
      dlq: { type: 'local', path: dlq, filename_template: 'dlq.ndjson' },
    },
  });
  const r = loadPipelineText(text, { env: {}, registry: testRegistry });
  if (!r.config) throw new Error(r.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
  const stop = new AbortController();
  const done = runPipeline(r.config, {
    signal: stop.signal,
    telemetry,
    log: log ?? silentLogger,
    registry: testRegistry,
    processed: new MemoryProcessedFiles(),
    services: opts.stateDir ? { stateDir: opts.stateDir } : undefined,
  });
  await until(() => states.includes('connected') || states.includes('disconnected'), 20_000, 'the otlp source listening');
  const run: Run = {
    http,
    grpc,
    out,
    logs: lines,
    records: () => outputRecords(out),
    dead: () => outputRecords(dlq),
    async end() {
      stop.abort();
      return done;
    },
  };
  runs.push(run);
  return run;
}

async function sendMetrics(exporter: ConstructorParameters<typeof PeriodicExportingMetricReader>[0]['exporter'], attrs: Record<string, string>) {
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ resource: resource(), readers: [reader] });
  const meter = provider.getMeter('svc-test-meter', '1.2.3');
  meter.createCounter('if.in.octets', { unit: 'By', description: 'octets in' }).add(1234, attrs);
  meter.createGauge('cpu.load').record(0.75, attrs);
  await provider.forceFlush();
  await provider.shutdown();
}

async function sendLogs(exporter: ConstructorParameters<typeof SimpleLogRecordProcessor>[0]['exporter'], attrs: Record<string, string>) {
  const provider = new LoggerProvider({ resource: resource(), processors: [new SimpleLogRecordProcessor({ exporter })] });
  provider.getLogger('svc-test-logger').emit({ severityNumber: SeverityNumber.WARN, severityText: 'WARN', body: 'link down', attributes: attrs });
  await provider.forceFlush();
  await provider.shutdown();
}

async function sendSpan(exporter: ConstructorParameters<typeof SimpleSpanProcessor>[0], attrs: Record<string, string>) {
  const provider = new BasicTracerProvider({ resource: resource(), spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const span = provider.getTracer('svc-test-tracer').startSpan('poll', { attributes: attrs });
  span.end();
  await provider.forceFlush();
  await provider.shutdown();
}

describe('otlp source: the OpenTelemetry JS SDK exporters', () => {
  for (const proto of ['grpc', 'http/protobuf', 'http/json'] as const) {
    it(`takes logs, metrics and traces over ${proto}`, async () => {
      const run = await start();
      const base = `http://127.0.0.1:${run.http}`;
      const g = `http://127.0.0.1:${run.grpc}`;
      const tag = { via: proto };
      if (proto === 'grpc') {
        await sendMetrics(new MetricsGrpc({ url: g }), tag);
        await sendLogs(new LogsGrpc({ url: g }), tag);
        await sendSpan(new TracesGrpc({ url: g }), tag);
      } else if (proto === 'http/protobuf') {
        await sendMetrics(new MetricsProto({ url: `${base}/v1/metrics` }), tag);
        await sendLogs(new LogsProto({ url: `${base}/v1/logs` }), tag);
        await sendSpan(new TracesProto({ url: `${base}/v1/traces` }), tag);
      } else {
        await sendMetrics(new MetricsHttp({ url: `${base}/v1/metrics` }), tag);
        await sendLogs(new LogsHttp({ url: `${base}/v1/logs` }), tag);
        await sendSpan(new TracesHttp({ url: `${base}/v1/traces` }), tag);
      }
      await until(
        () => ['if.in.octets', 'cpu.load', 'poll'].every((n) => run.records().some((r) => r.name === n)) && run.records().some((r) => r.signal === 'logs'),
        20_000,
        'a counter, a gauge, a log record and a span',
      );
      const recs = run.records();
      const counter = recs.find((r) => r.name === 'if.in.octets')!;
      expect(counter).toMatchObject({
        signal: 'metrics',
        type: 'sum',
        monotonic: true,
        temporality: 'cumulative',
        unit: 'By',
        description: 'octets in',
        value: 1234,
        via: proto,
        'resource.service.name': 'svc-test',
        'resource.host.name': 'rtr1',
        'scope.name': 'svc-test-meter',
        'scope.version': '1.2.3',
      });
      expect(typeof counter.timestamp).toBe('string');
      expect(counter.time_unix_nano).toMatch(/^\d{19}$/);
      expect(counter.start_time_unix_nano).toMatch(/^\d{19}$/);
      expect(recs.find((r) => r.name === 'cpu.load')).toMatchObject({ signal: 'metrics', type: 'gauge', value: 0.75, via: proto });
      expect(recs.find((r) => r.signal === 'logs')).toMatchObject({
        severity_number: 13,
        severity_text: 'WARN',
        body: 'link down',
        via: proto,
        'resource.host.name': 'rtr1',
        'scope.name': 'svc-test-logger',
      });
      const span = recs.find((r) => r.signal === 'traces')!;
      expect(span).toMatchObject({ name: 'poll', kind: 'internal', status_code: 'unset', via: proto, 'scope.name': 'svc-test-tracer' });
      expect(span.trace_id).toMatch(/^[0-9a-f]{32}$/);
      expect(span.span_id).toMatch(/^[0-9a-f]{16}$/);
      expect(run.dead()).toEqual([]);
    }, 60_000);
  }

  it('answers a full queue so that the http/protobuf exporter retries (503, Retry-After), and nothing is lost', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const cap = capture('otlp-full-http', { onWrite: () => gate });
    const run = await start({ max_queue_size: 1 }, { sink: { type: 'memory', id: 'otlp-full-http' } });
    const n = 8;
    const sends = Array.from({ length: n }, (_, i) => sendLogs(new LogsProto({ url: `http://127.0.0.1:${run.http}/v1/logs` }), { seq: String(i) }));
    // The sink holds the first unit, one request waits in the queue: the others are throttled.
    await until(() => run.logs.some((l) => String(l.msg).includes('the queue is full')), 20_000, 'a throttled request');
    release();
    await Promise.all(sends);
    await until(() => cap.text.split('\n').filter(Boolean).length >= n, 30_000, `${n} log records`);
    const seqs = cap.text
      .split('\n')
      .filter(Boolean)
      .map((l) => Number((JSON.parse(l) as Rec).seq));
    expect(new Set(seqs)).toEqual(new Set(Array.from({ length: n }, (_, i) => i)));
  }, 90_000);

  // The JS SDK's gRPC exporter retries nothing (any error fails the export: otlp-grpc-exporter-base),
  // so the answer is checked as the Collector's exporters read it: UNAVAILABLE with a RetryInfo
  // detail, retried after its delay by a gRPC client, and nothing is lost.
  it('answers a full queue over gRPC with UNAVAILABLE and RetryInfo; a client retrying after the delay loses nothing', async () => {
    const grpc = await import('@grpc/grpc-js');
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const cap = capture('otlp-full-grpc', { onWrite: () => gate });
    const run = await start({ max_queue_size: 1, retry_after_seconds: 1 }, { sink: { type: 'memory', id: 'otlp-full-grpc' } });
    const client = new grpc.Client(`127.0.0.1:${run.grpc}`, grpc.credentials.createInsecure());
    const t = requestType('logs');
    const body = (i: number) =>
      Buffer.from(
        t
          .encode(
            t.fromObject({
              resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: 'x' }, attributes: [{ key: 'seq', value: { intValue: i } }] }] }] }],
            }),
          )
          .finish(),
      );
    const call = (b: Buffer) =>
      new Promise<{ code: number; delay?: number }>((resolve) =>
        client.makeUnaryRequest(
          SIGNAL_INFO.logs.grpcPath,
          (x: Buffer) => x,
          (x: Buffer) => x,
          b,
          (err) => resolve(err ? { code: err.code, delay: retryDelayOf(err.metadata?.get('grpc-status-details-bin')[0] as Buffer | undefined) } : { code: 0 }),
        ),
      );
    const n = 6;
    let throttled = 0;
    const sends = Array.from({ length: n }, async (_, i) => {
      for (;;) {
        const r = await call(body(i));
        if (r.code === 0) return;
        expect(r.code).toBe(grpc.status.UNAVAILABLE);
        expect(r.delay).toBe(1000);
        throttled++;
        if (throttled === 1) release();
        await pace(r.delay!); // the delay the server asked for, as a retrying client waits
      }
    });
    await Promise.all(sends);
    client.close();
    expect(throttled).toBeGreaterThan(0);
    await until(() => cap.text.split('\n').filter(Boolean).length >= n, 30_000, `${n} log records`);
    expect(
      new Set(
        cap.text
          .split('\n')
          .filter(Boolean)
          .map((l) => (JSON.parse(l) as Rec).seq),
      ),
    ).toEqual(new Set(Array.from({ length: n }, (_, i) => i)));
  }, 90_000);
});

const metricsBody = (points: number, name = 'm') =>
  Buffer.from(
    requestType('metrics')
      .encode(
        requestType('metrics').fromObject({
          resourceMetrics: [
            {
              resource: { attributes: [{ key: 'host.name', value: { stringValue: 'rtr1' } }] },
              scopeMetrics: [
                {
                  metrics: [
                    {
                      name,
                      gauge: { dataPoints: Array.from({ length: points }, (_, i) => ({ asInt: i, timeUnixNano: '1767322800000000000', attributes: [] })) },
                    },
                  ],
                },
              ],
            },
          ],
        }),
      )
      .finish(),
  );

const post = (run: Run, path: string, body: Buffer, headers: Record<string, string> = { 'content-type': 'application/x-protobuf' }) =>
  fetch(`http://127.0.0.1:${run.http}${path}`, { method: 'POST', headers, body });

describe('otlp source: the wire', () => {
  it('takes gzip, OTLP/JSON with hex ids, and answers 404, 405 and 415 as the Collector does', async () => {
    const run = await start({ signals: ['metrics', 'logs'] });
    const r1 = await post(run, '/v1/metrics', gzipSync(metricsBody(3)), { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' });
    expect(r1.status).toBe(200);
    expect(r1.headers.get('content-type')).toBe('application/x-protobuf');
    const json = {
      resourceLogs: [
        {
          resource: { attributes: [{ key: 'host.name', value: { stringValue: 'sw2' } }] },
          scopeLogs: [
            {
              logRecords: [
                {
                  timeUnixNano: '1767322800123000000',
                  severityNumber: 17,
                  body: { kvlistValue: { values: [{ key: 'if', value: { intValue: '3' } }] } },
                  traceId: '5b8efff798038103d269b633813fc60c',
                  spanId: 'eee19b7ec3c1b174',
                  attributes: [
                    { key: 'body', value: { stringValue: 'collides' } },
                    { key: 'name', value: { stringValue: 'free' } },
                  ],
                },
              ],
            },
          ],
        },
      ],
    };
    const r2 = await post(run, '/v1/logs', Buffer.from(JSON.stringify(json)), { 'content-type': 'application/json' });
    expect(r2.status).toBe(200);
    expect(await r2.json()).toEqual({});
    expect((await post(run, '/v1/traces', metricsBody(1))).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${run.http}/v1/metrics`)).status).toBe(405);
    expect((await post(run, '/v1/metrics', metricsBody(1), { 'content-type': 'text/plain' })).status).toBe(415);
    await until(() => run.records().length >= 4, 20_000, 'records');
    const recs = run.records();
    expect(recs.filter((r) => r.name === 'm').map((r) => r.value)).toEqual([0, 1, 2]);
    expect(recs.find((r) => r.name === 'm')).toMatchObject({
      timestamp: '2026-01-02T03:00:00.000Z',
      time_unix_nano: '1767322800000000000',
      'resource.host.name': 'rtr1',
    });
    expect(recs.find((r) => r.signal === 'logs')).toEqual({
      signal: 'logs',
      timestamp: '2026-01-02T03:00:00.123Z',
      time_unix_nano: '1767322800123000000',
      severity_number: 17,
      body: { if: 3 },
      trace_id: '5b8efff798038103d269b633813fc60c',
      span_id: 'eee19b7ec3c1b174',
      'attributes.body': 'collides',
      name: 'free',
      'resource.host.name': 'sw2',
    });
  }, 60_000);

  it('answers a poison body 400 with the reason, dead-letters it, and reports records refused one by one', async () => {
    const run = await start();
    // A length that runs past the end of the body.
    const bad = Buffer.from([0x0a, 0x64, 0x0a, 0x02]);
    const r = await post(run, '/v1/metrics', bad);
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toBe('application/x-protobuf');
    await until(() => run.dead().length === 1, 20_000, 'the poison body dead-lettered');
    expect(JSON.stringify(run.dead()[0])).toMatch(/runs past/);
    // JSON that is not JSON: 400 with a JSON google.rpc.Status.
    const r2 = await post(run, '/v1/logs', Buffer.from('{"resourceLogs": ['), { 'content-type': 'application/json' });
    expect(r2.status).toBe(400);
    expect(((await r2.json()) as Rec).message).toMatch(/not JSON/);
    // A span with a 3-byte trace id among good ones: partial success.
    const t = requestType('traces');
    const span = (trace: string, name: string) => ({
      traceId: Buffer.from(trace, 'hex'),
      spanId: Buffer.from('0102030405060708', 'hex'),
      name,
      startTimeUnixNano: 1,
      endTimeUnixNano: 2,
    });
    const body = Buffer.from(
      t
        .encode(
          t.fromObject({
            resourceSpans: [{ scopeSpans: [{ spans: [span('00'.repeat(16), 'good'), span('abcdef', 'bad'), span('11'.repeat(16), 'good2')] }] }],
          }),
        )
        .finish(),
    );
    // OTLP/JSON ids are hex (not proto3 JSON's base64).
    const r3 = await post(
      run,
      '/v1/traces',
      Buffer.from(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'AAECAwQFBgcICQoLDA0ODw==', name: 'b64' }] }] }] })),
      {
        'content-type': 'application/json',
      },
    );
    expect(r3.status).toBe(400);
    expect(((await r3.json()) as Rec).message).toMatch(/not hex/);
    const r4 = await post(run, '/v1/traces', body);
    expect(r4.status).toBe(200);
    const resp = requestType('traces')
      .root.lookupType('opentelemetry.proto.collector.ExportTraceServiceResponse')
      .decode(Buffer.from(await r4.arrayBuffer())) as unknown as {
      partialSuccess: { rejectedSpans: { toNumber(): number }; errorMessage: string };
    };
    expect(resp.partialSuccess.rejectedSpans.toNumber()).toBe(1);
    expect(resp.partialSuccess.errorMessage).toMatch(/trace_id of 3 bytes/);
    await until(() => run.records().filter((x) => x.signal === 'traces').length === 2, 20_000, 'the two good spans');
    expect(run.records().map((x) => x.name)).toEqual(['good', 'good2']);
    // Every poison body is dead-lettered, each with its reason.
    await until(() => run.dead().length === 3, 20_000, 'three poison bodies dead-lettered');
    expect(JSON.stringify(run.dead())).toMatch(/not hex/);
  }, 60_000);

  it('checks the secret, and refuses a body over max_body_bytes (413) and one that inflates past it', async () => {
    const run = await start({ secret: 's3cret', max_body_bytes: 4096 });
    expect((await post(run, '/v1/metrics', metricsBody(1))).status).toBe(401);
    expect((await post(run, '/v1/metrics', metricsBody(1), { 'content-type': 'application/x-protobuf', authorization: 'Bearer nope' })).status).toBe(401);
    expect((await post(run, '/v1/metrics', metricsBody(1), { 'content-type': 'application/x-protobuf', authorization: 'Bearer s3cret' })).status).toBe(200);
    const auth = { 'content-type': 'application/x-protobuf', authorization: 'Bearer s3cret' };
    expect((await post(run, '/v1/metrics', metricsBody(2000), auth)).status).toBe(413);
    const bomb = gzipSync(Buffer.alloc(1_000_000));
    expect(bomb.length).toBeLessThan(4096);
    expect((await post(run, '/v1/metrics', bomb, { ...auth, 'content-encoding': 'gzip' })).status).toBe(413);
    await until(() => run.records().length === 1, 20_000, 'the one accepted point');
  }, 60_000);
});

/** A plain request (no exporter) over TLS to an OTLP/HTTP port: the status, or the error that ended it (a handshake refused). */
function httpsPost(port: number, tls: { ca: Buffer; cert?: Buffer; key?: Buffer }): Promise<{ status?: number; error?: string }> {
  return new Promise((resolve) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/logs',
        headers: { 'content-type': 'application/x-protobuf', authorization: 'Bearer conformance-token' },
        ...tls,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode }));
      },
    );
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
    req.end(Buffer.alloc(0));
  });
}

/** An empty gRPC Export over TLS with `creds`: the status code (0: OK). */
async function grpcExport(port: number, creds: import('@grpc/grpc-js').ChannelCredentials): Promise<number> {
  const grpc = await import('@grpc/grpc-js');
  // grpc-js would send the IP address as the TLS server name, which Node 26 refuses (grpc-tls.ts).
  const client = new grpc.Client(`127.0.0.1:${port}`, serverNameOnlyForHostNames(creds));
  const md = new grpc.Metadata();
  md.set('authorization', 'Bearer conformance-token');
  const code = await new Promise<number>((resolve) =>
    client.makeUnaryRequest(
      SIGNAL_INFO.logs.grpcPath,
      (x: Buffer) => x,
      (x: Buffer) => x,
      Buffer.alloc(0),
      md,
      { deadline: Date.now() + 10_000 },
      (err) => resolve(err ? err.code : 0),
    ),
  );
  client.close();
  return code;
}

describe('otlp source: TLS on both listeners (certificates made by openssl in the test)', () => {
  let certs: Certs;
  let pem: { ca: Buffer; otherCa: Buffer; clientCert: Buffer; clientKey: Buffer };
  // Not tempDir(): that is removed after each test, and the certificates serve all of them.
  const certDir = mkdtempSync(join(tmpdir(), 'svc-otlp-certs-'));
  afterAll(() => rmSync(certDir, { recursive: true, force: true }));
  beforeAll(async () => {
    certs = await makeCerts(certDir);
    pem = {
      ca: readFileSync(certs.ca),
      otherCa: readFileSync(certs.otherCa),
      clientCert: readFileSync(certs.clientCert),
      clientKey: readFileSync(certs.clientKey),
    };
  }, 60_000);
  const seqOf = (r: Rec) => JSON.parse(r.body as string).seq as number;
  const bodies = (n: number) => Array.from({ length: n }, (_, i) => Buffer.from(JSON.stringify({ seq: i })));

  it('serves OTLP/HTTP as https and OTLP/gRPC over TLS: the SDK exporters trusting the CA deliver; plain and untrusting clients are refused', async () => {
    const run = await start({ secret: 'conformance-token', tls_cert: certs.serverCert, tls_key: certs.serverKey });
    await publishOtlpLogs('http/protobuf', run.http, bodies(3), { tls: { ca: certs.ca } });
    await publishOtlpLogs('grpc', run.grpc, bodies(3), { tls: { ca: certs.ca } });
    await until(() => run.records().length >= 6, 20_000, 'six log records over TLS');
    expect(run.records().map(seqOf).sort()).toEqual([0, 0, 1, 1, 2, 2]);
    // An https client that trusts another CA refuses the certificate; a plain client gets no OTLP answer.
    expect((await httpsPost(run.http, { ca: pem.otherCa })).error).toMatch(/UNABLE_TO_VERIFY|SELF_SIGNED|CERT/);
    expect(await fetch(`http://127.0.0.1:${run.http}/v1/logs`, { method: 'POST', body: '' }).catch(() => 'refused')).toBe('refused');
    expect((await httpsPost(run.http, { ca: pem.ca })).status).toBe(200);
    const grpc = await import('@grpc/grpc-js');
    expect(await grpcExport(run.grpc, grpc.credentials.createSsl(pem.otherCa))).toBe(grpc.status.UNAVAILABLE);
    expect(await grpcExport(run.grpc, grpc.credentials.createInsecure())).toBe(grpc.status.UNAVAILABLE);
    expect(await grpcExport(run.grpc, grpc.credentials.createSsl(pem.ca))).toBe(grpc.status.OK);
    expect(run.records()).toHaveLength(6);
  });

  it('mutual TLS (tls_client_ca): senders with a client certificate the CA signed deliver; without one the handshake is refused', async () => {
    const run = await start({ secret: 'conformance-token', tls_cert: certs.serverCert, tls_key: certs.serverKey, tls_client_ca: certs.ca });
    const mutual = { ca: certs.ca, cert: certs.clientCert, key: certs.clientKey };
    await publishOtlpLogs('http/protobuf', run.http, bodies(2), { tls: mutual });
    await publishOtlpLogs('grpc', run.grpc, bodies(2), { tls: mutual });
    await until(() => run.records().length >= 4, 20_000, 'four log records over mutual TLS');
    expect((await httpsPost(run.http, { ca: pem.ca })).error).toBeDefined();
    const grpc = await import('@grpc/grpc-js');
    expect(await grpcExport(run.grpc, grpc.credentials.createSsl(pem.ca))).toBe(grpc.status.UNAVAILABLE);
    expect(await grpcExport(run.grpc, grpc.credentials.createSsl(pem.ca, pem.clientKey, pem.clientCert))).toBe(grpc.status.OK);
    expect((await httpsPost(run.http, { ca: pem.ca, cert: pem.clientCert, key: pem.clientKey })).status).toBe(200);
    expect(run.records()).toHaveLength(4);
  });

  it('test() reads the TLS files: one that cannot be read fails it clearly', async () => {
    const cfg = (extra: Cfg) => {
      const r = loadComponent('source', { type: 'otlp', host: '127.0.0.1', http_port: 0, grpc_port: 0, ...extra }, { env: {} });
      if (!r.config) throw new Error(r.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
      return r.config;
    };
    const port = await freePort();
    const good = await testConnector('source', cfg({ http_port: port, tls_cert: certs.serverCert, tls_key: certs.serverKey }));
    expect(good, JSON.stringify(good)).toMatchObject({ ok: true });
    const bad = await testConnector('source', cfg({ http_port: port, tls_cert: certs.serverCert, tls_key: '/nonexistent/otlp.key' }));
    expect(bad.ok).toBe(false);
    expect(bad.error).toMatch(/^otlp: cannot read the TLS files: .*nonexistent/);
  });

  it('test() binds each listener briefly: a port held elsewhere fails it with the port, the listener and what to do', async () => {
    const held = await holdPort();
    try {
      for (const [field, what] of [
        ['http_port', 'HTTP'],
        ['grpc_port', 'gRPC'],
      ] as const) {
        const r = loadComponent('source', { type: 'otlp', host: '127.0.0.1', http_port: 0, grpc_port: 0, [field]: held.port }, { env: {} });
        const result = await testConnector('source', r.config!);
        expect(result.ok).toBe(false);
        expect(result.error).toBe(
          `otlp: cannot listen on tcp 127.0.0.1:${held.port} (${what}): the port is already in use (an OpenTelemetry Collector, or another pipeline); stop it or choose another port`,
        );
      }
    } finally {
      await held.release();
    }
  });
});
