// OpenTelemetry traces (SVC_OTEL_ENDPOINT, SVC_OTEL_SERVICE) against a real wire peer: an
// OTLP/gRPC collector served here with @grpc/grpc-js, whose raw Export requests are decoded with
// protobufjs (both come with the OTLP exporter). A real daemon runs pipelines and serves requests;
// on stop it flushes, and the collector must hold the run and request spans.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Server, ServerCredentials, type ServiceDefinition } from '@grpc/grpc-js';
import { InMemorySpanExporter, BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import Fastify from 'fastify';
import { pino } from 'pino';
import protobuf from 'protobufjs';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/observability/log.js';
import { parentFromTraceparent, startRunSpan, startTracing, traceRequests } from '../../src/observability/tracing.js';
import { testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/fs.js';
import { until } from '../helpers/wait.js';

// ------------------------------------------------------------------------------------------------
// The collector

const EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';

/** The part of the OTLP trace protocol (opentelemetry-proto, v1) the assertions read; field numbers as upstream. */
const OTLP_PROTO = `
syntax = "proto3";
package otlp;
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message Resource { repeated KeyValue attributes = 1; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; }
message InstrumentationScope { string name = 1; string version = 2; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; bytes parent_span_id = 4; string name = 5; int32 kind = 6;
  fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8; repeated KeyValue attributes = 9;
  repeated Event events = 11; Status status = 15;
  message Event { fixed64 time_unix_nano = 1; string name = 2; repeated KeyValue attributes = 3; }
}
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; bytes bytes_value = 7; }
}
`;
const RequestType = protobuf.parse(OTLP_PROTO, { keepCase: true }).root.lookupType('otlp.ExportTraceServiceRequest');

type Value = string | number | boolean | undefined;
interface RawKV {
  key: string;
  value?: { string_value?: string; bool_value?: boolean; int_value?: number; double_value?: number };
}
interface DecodedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attrs: Record<string, Value>;
  events: string[];
  status: { code: number; message: string };
  resource: Record<string, Value>;
  scope: string;
}

const kvs = (list: RawKV[] | undefined) =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, kv.value?.string_value ?? kv.value?.int_value ?? kv.value?.double_value ?? kv.value?.bool_value]));
const hex = (b: Uint8Array | undefined) => Buffer.from(b ?? []).toString('hex');

/** Every span of every Export request received, decoded. */
function decode(requests: Buffer[]): DecodedSpan[] {
  const out: DecodedSpan[] = [];
  for (const raw of requests) {
    const msg = RequestType.toObject(RequestType.decode(raw), { longs: Number, defaults: true }) as any;
    for (const rs of msg.resource_spans) {
      const resource = kvs(rs.resource?.attributes);
      for (const ss of rs.scope_spans) {
        for (const s of ss.spans) {
          out.push({
            traceId: hex(s.trace_id),
            spanId: hex(s.span_id),
            parentSpanId: hex(s.parent_span_id),
            name: s.name,
            kind: s.kind,
            attrs: kvs(s.attributes),
            events: (s.events ?? []).map((e: { name: string }) => e.name),
            status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
            resource,
            scope: ss.scope?.name ?? '',
          });
        }
      }
    }
  }
  return out;
}

interface Collector {
  port: number;
  requests: Buffer[];
  spans(): DecodedSpan[];
  close(): Promise<void>;
}

const collectors: Collector[] = [];
afterEach(async () => {
  for (const c of collectors.splice(0)) await c.close();
});

/** A plaintext OTLP/gRPC trace collector on 127.0.0.1, port 0: records raw Export request bytes, answers an empty response. */
async function startCollector(): Promise<Collector> {
  const server = new Server();
  const requests: Buffer[] = [];
  const identity = (b: Buffer) => b;
  const service = {
    Export: {
      path: EXPORT_PATH,
      requestStream: false,
      responseStream: false,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    },
  } satisfies ServiceDefinition;
  server.addService(service, {
    Export: (call: { request: Buffer }, callback: (err: null, res: Buffer) => void) => {
      requests.push(Buffer.from(call.request));
      callback(null, Buffer.alloc(0)); // ExportTraceServiceResponse{} encodes as zero bytes
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const c: Collector = {
    port,
    requests,
    spans: () => decode(requests),
    close: async () => server.forceShutdown(),
  };
  collectors.push(c);
  return c;
}

// ------------------------------------------------------------------------------------------------
// Daemon helpers

function lineLogger() {
  const lines: Record<string, any>[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { log: pino({ level: 'info', base: undefined }, stream), lines };
}

/** A manual pipeline: NDJSON files in a temp dir -> out.ndjson in another (or a missing input dir, which fails the run). */
function pipelineYaml(name: string, opts: { lines?: number; missingInput?: boolean } = {}) {
  const root = tempDir('svc-otel-');
  const inDir = join(root, 'in');
  const outDir = join(root, 'out');
  if (!opts.missingInput) {
    mkdirSync(inDir);
    let text = '';
    for (let i = 0; i < (opts.lines ?? 3); i++) text += JSON.stringify({ i, host: `ne-${i}` }) + '\n';
    writeFileSync(join(inDir, 'a.ndjson'), text);
  }
  return [
    'version: "1"',
    'pipeline:',
    `  name: ${name}`,
    '  schedule: { type: manual }',
    `  source: { type: local, path: ${JSON.stringify(inDir)}, file_pattern: "*.ndjson" }`,
    '  serializer_in: { type: ndjson }',
    '  serializer_out: { type: ndjson }',
    '  sinks:',
    `    - { type: local, path: ${JSON.stringify(outDir)}, filename_template: out.ndjson }`,
    '',
  ].join('\n');
}

async function registerAndRun(d: TestDaemon, yaml: string, name: string): Promise<Record<string, any>> {
  const reg = await d.call('POST', '/api/pipelines', { yaml });
  expect(reg.status, reg.text).toBe(201);
  const run = await d.call('POST', `/api/pipelines/${name}/run`);
  expect(run.status, run.text).toBe(202);
  const runId = run.body.run_id as string;
  return until(
    async () => {
      const r = await d.call('GET', `/api/runs/${runId}`);
      return r.status === 200 && r.body.status !== 'running' ? r.body : undefined;
    },
    15_000,
    `run ${runId} to finish`,
  );
}

// ------------------------------------------------------------------------------------------------

describe('tracing to an OTLP/gRPC collector', () => {
  it('exports a pipeline.run span per run and a span per request, flushed when the daemon stops', async () => {
    const collector = await startCollector();
    const { log, lines } = lineLogger();
    const d = await testDaemon({ SVC_OTEL_ENDPOINT: `http://127.0.0.1:${collector.port}`, SVC_OTEL_SERVICE: 'svc-test' }, { log });

    const ok = await registerAndRun(d, pipelineYaml('traced', { lines: 3 }), 'traced');
    expect(ok).toMatchObject({ status: 'success', records_in: 3, records_out: 3 });
    const bad = await registerAndRun(d, pipelineYaml('broken', { missingInput: true }), 'broken');
    expect(bad.status).toBe('failed');

    expect((await d.call('GET', '/api/pipelines/traced')).status).toBe(200);
    expect((await d.call('GET', '/api/pipelines/nope')).status).toBe(404);
    expect((await d.call('GET', '/no/such/route')).status).toBe(404);
    // A caller's W3C trace context is continued.
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    expect((await d.call('GET', '/api/health', { headers: { traceparent: `00-${callerTrace}-${callerSpan}-01` } })).status).toBe(200);

    await d.stop(); // flushes the batch processor
    expect(collector.requests.length).toBeGreaterThan(0);
    const spans = collector.spans();

    // Resource and scope.
    for (const s of spans) {
      expect(s.resource['service.name']).toBe('svc-test');
      expect(s.resource['service.instance.id']).toBe('test-node');
      expect(s.scope).toBe('svc');
    }

    // The runs.
    const runs = spans.filter((s) => s.name === 'pipeline.run');
    expect(runs).toHaveLength(2);
    const good = runs.find((s) => s.attrs.pipeline === 'traced')!;
    expect(good.kind).toBe(1 + SpanKind.INTERNAL); // OTLP enum: 1 = INTERNAL
    expect(good.attrs).toMatchObject({
      pipeline: 'traced',
      run_id: ok.run_id,
      status: 'success',
      records_in: 3,
      records_out: 3,
      records_skipped: 0,
      dlq_count: 0,
    });
    expect(good.status.code).toBe(0); // UNSET
    const failed = runs.find((s) => s.attrs.pipeline === 'broken')!;
    expect(failed.attrs).toMatchObject({ run_id: bad.run_id, status: 'failed', records_in: 0 });
    expect(failed.status.code).toBe(2); // ERROR
    expect(failed.status.message).toContain('does not exist');

    // The run's log lines carry its trace id.
    const runLines = lines.filter((l) => l.run_id === ok.run_id);
    expect(runLines.length).toBeGreaterThan(0);
    for (const l of runLines) expect(l.trace_id).toBe(good.traceId);

    // The requests: route pattern as the name, HTTP attributes, status code.
    const get = spans.find((s) => s.name === 'GET /api/pipelines/:name' && s.attrs['url.path'] === '/api/pipelines/traced')!;
    expect(get).toBeDefined();
    expect(get.kind).toBe(1 + SpanKind.SERVER);
    expect(get.attrs).toMatchObject({
      'http.request.method': 'GET',
      'http.route': '/api/pipelines/:name',
      'url.scheme': 'http',
      'http.response.status_code': 200,
      'client.address': '127.0.0.1',
    });
    expect(get.status.code).toBe(0);
    const missing = spans.find((s) => s.attrs['url.path'] === '/api/pipelines/nope')!;
    expect(missing.name).toBe('GET /api/pipelines/:name');
    expect(missing.attrs['http.response.status_code']).toBe(404);
    expect(missing.status.code).toBe(0); // 4xx is the client's error, not the server's
    const unmatched = spans.find((s) => s.attrs['url.path'] === '/no/such/route')!;
    expect(unmatched.name).toBe('GET');
    expect(unmatched.attrs['http.route']).toBeUndefined();
    const posts = spans.filter((s) => s.name === 'POST /api/pipelines/:name/run');
    expect(posts.map((s) => s.attrs['url.path']).sort()).toEqual(['/api/pipelines/broken/run', '/api/pipelines/traced/run']);
    expect(posts.every((s) => s.attrs['http.response.status_code'] === 202)).toBe(true);
    expect(spans.filter((s) => s.name === 'POST /api/pipelines' && s.attrs['http.response.status_code'] === 201)).toHaveLength(2);
    expect(spans.some((s) => s.name === 'GET /api/runs/:run_id')).toBe(true);
    const health = spans.find((s) => s.name === 'GET /api/health')!;
    expect(health.traceId).toBe(callerTrace);
    expect(health.parentSpanId).toBe(callerSpan);
    // The other request spans are roots of their own traces.
    expect(get.parentSpanId).toBe('');
  });

  it('with an https:// endpoint the exporter speaks TLS: a plaintext collector receives nothing, and shutdown stays bounded', async () => {
    const collector = await startCollector();
    const t = startTracing({ OTEL_ENDPOINT: `https://127.0.0.1:${collector.port}`, OTEL_SERVICE: 'svc-tls' }, silentLogger, { shutdownTimeoutMs: 3000 });
    expect(t.tracer).toBeDefined();
    startRunSpan(t.tracer, 'p', 'r1')!.end({ status: 'success', records_in: 1, records_out: 1, records_skipped: 0, dlq_count: 0 });
    const started = Date.now();
    await t.shutdown();
    expect(Date.now() - started).toBeLessThan(4500);
    expect(collector.requests).toHaveLength(0);
  });
});

describe('tracing off (SVC_OTEL_ENDPOINT empty)', () => {
  it('creates no tracer, exports nothing, and the daemon works as before', async () => {
    const collector = await startCollector();
    const t = startTracing({ OTEL_ENDPOINT: '', OTEL_SERVICE: 'svc' }, silentLogger);
    expect(t.tracer).toBeUndefined();
    expect(startRunSpan(undefined, 'p', 'r')).toBeUndefined();
    await t.shutdown();

    const { log, lines } = lineLogger();
    // The collector is up but not configured: nothing may reach it.
    const d = await testDaemon({ SVC_OTEL_SERVICE: 'svc-test' }, { log });
    const run = await registerAndRun(d, pipelineYaml('plain', { lines: 2 }), 'plain');
    expect(run).toMatchObject({ status: 'success', records_in: 2, records_out: 2 });
    expect((await d.call('GET', '/api/pipelines/plain')).status).toBe(200);
    await d.stop();
    const runLines = lines.filter((l) => l.run_id === run.run_id);
    expect(runLines.length).toBeGreaterThan(0);
    for (const l of runLines) expect(l).not.toHaveProperty('trace_id');
    expect(lines.some((l) => /tracing/.test(String(l.msg)))).toBe(false);
    expect(collector.requests).toHaveLength(0);
  });
});

describe('traceRequests', () => {
  function inMemory() {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    return { exporter, tracer: provider.getTracer('test') };
  }

  it('marks 5xx responses as errors and records the exception', async () => {
    const { exporter, tracer } = inMemory();
    const app = Fastify();
    traceRequests(app, tracer);
    app.get('/boom/:id', async () => {
      throw new Error('kaboom');
    });
    app.get('/fine', async () => 'ok');
    await app.ready();
    expect((await app.inject({ method: 'GET', url: '/boom/7?x=1' })).statusCode).toBe(500);
    expect((await app.inject({ method: 'GET', url: '/fine' })).statusCode).toBe(200);
    await app.close();
    const [boom, fine] = exporter.getFinishedSpans();
    expect(boom!.name).toBe('GET /boom/:id');
    expect(boom!.kind).toBe(SpanKind.SERVER);
    expect(boom!.attributes).toMatchObject({ 'http.route': '/boom/:id', 'url.path': '/boom/7', 'http.response.status_code': 500, 'error.type': '500' });
    expect(boom!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'kaboom' });
    expect(boom!.events.map((e) => e.name)).toEqual(['exception']);
    expect(fine!.name).toBe('GET /fine');
    expect(fine!.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('adds no hooks when the tracer is undefined', async () => {
    const app = Fastify();
    traceRequests(app, undefined);
    app.get('/x', async () => 'ok');
    await app.ready();
    expect(app.printRoutes({ includeHooks: true })).not.toContain('onRequest');
    expect((await app.inject({ method: 'GET', url: '/x' })).statusCode).toBe(200);
    await app.close();
  });

  it('ignores malformed or invalid traceparent headers', () => {
    for (const bad of [
      undefined,
      '',
      'garbage',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      ['a', 'b'],
    ]) {
      expect(parentFromTraceparent(bad)).toBe(parentFromTraceparent(undefined));
    }
    expect(parentFromTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).not.toBe(parentFromTraceparent(undefined));
  });
});
