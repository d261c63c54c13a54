// A test OTLP collector: OTLP/HTTP (protobuf and JSON, gzip) and OTLP/gRPC receivers written on the
// official opentelemetry-proto definitions (the .proto files vendored in
// src/plugins/connectors/otlp/proto/, parsed here with protobufjs on their own, snake_case, not
// through the connector's generated descriptor). No OpenTelemetry Collector binary can be installed
// here, so this peer checks what the Collector's otlp receiver checks: POST to /v1/<signal>,
// Content-Type application/x-protobuf or application/json (415), Content-Encoding gzip or none
// (400), a body that decodes as the signal's Export*ServiceRequest (400 with a google.rpc.Status),
// trace ids of 16 bytes and span ids of 8 (pdata's ID types refuse other lengths), and the bearer
// token when one is set (401 / UNAUTHENTICATED). It answers with the specification's shapes:
// success, partial_success, or an error status (HTTP with Retry-After, gRPC with RetryInfo) queued
// by the test. It can be stopped and started again on the same ports, and serve TLS (mutual TLS with
// a client CA) with certificates the test makes.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { OTLPLogExporter as LogsGrpc } from '@opentelemetry/exporter-logs-otlp-grpc';
import { OTLPLogExporter as LogsProto } from '@opentelemetry/exporter-logs-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import { runPipeline } from '../../../src/engine/runner.js';
import { serverNameOnlyForHostNames } from '../../../src/plugins/connector-runtime/grpc-tls.js';
import { silentLogger } from '../../../src/observability/log.js';
import { MemoryProcessedFiles } from '../../../src/plugins/connector-runtime/processed-files.js';
import { freePort } from '../../helpers/net.js';
import { stringify } from 'yaml';
import { loadPipelineText } from '../../../src/config/load.js';
import type { Cfg, Peer, PeerFixture, Rec, SinkSide } from '../conformance.js';
import { pace } from '../../helpers/wait.js';

type Signal = 'logs' | 'metrics' | 'traces';
const SIGNALS: Signal[] = ['logs', 'metrics', 'traces'];
const HTTP_PATH: Record<Signal, string> = { logs: '/v1/logs', metrics: '/v1/metrics', traces: '/v1/traces' };
const GRPC_PATH: Record<Signal, string> = {
  logs: '/opentelemetry.proto.collector.logs.v1.LogsService/Export',
  metrics: '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export',
  traces: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
};
const REQ: Record<Signal, string> = { logs: 'ExportLogsServiceRequest', metrics: 'ExportMetricsServiceRequest', traces: 'ExportTraceServiceRequest' };
const RESP: Record<Signal, [string, string]> = {
  logs: ['ExportLogsServiceResponse', 'rejected_log_records'],
  metrics: ['ExportMetricsServiceResponse', 'rejected_data_points'],
  traces: ['ExportTraceServiceResponse', 'rejected_spans'],
};

const dir = fileURLToPath(new URL('../../../src/plugins/connectors/otlp/proto/', import.meta.url));
let root: protobuf.Root | undefined;
function proto(): protobuf.Root {
  if (!root) {
    root = new protobuf.Root();
    for (const f of ['common', 'resource', 'logs', 'metrics', 'trace', 'collector', 'status'])
      protobuf.parse(readFileSync(`${dir}${f}.proto`, 'utf8'), root, { keepCase: true });
    root.resolveAll();
  }
  return root;
}
const type = (name: string) => proto().lookupType(name);
const collectorType = (n: string) => type(`opentelemetry.proto.collector.${n}`);

/** A queued answer for the next request(s). */
export interface Answer {
  /** HTTP status and gRPC code to answer with (an error), with their retry delay. */
  status?: number;
  grpcCode?: number;
  retryAfterSeconds?: number;
  /** Success with a partial_success refusing this many items. */
  partial?: { rejected: number; message: string };
}

export interface Received {
  signal: Signal;
  transport: 'http/protobuf' | 'http/json' | 'grpc';
  gzip: boolean;
  /** The request decoded (snake_case field names, 64-bit integers as text, ids as hex). */
  request: Rec;
  headers: Record<string, string>;
}

export interface OtlpCollector {
  httpUrl: string;
  grpcUrl: string;
  received: Received[];
  /** Requests refused, with the reason (what a Collector would log). */
  refused: { status: number; reason: string }[];
  answers: Answer[];
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** ids as hex, longs as text (the decoded request as a test compares it). */
function toPlain(t: protobuf.Type, m: protobuf.Message): Rec {
  const o = t.toObject(m, { longs: String, enums: Number, bytes: String, defaults: false, oneofs: false }) as Rec;
  const fix = (v: unknown, key: string): unknown => {
    if (Array.isArray(v)) return v.map((x) => fix(x, key));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fix(x, k)]));
    if (typeof v === 'string' && /^(trace_id|span_id|parent_span_id)$/.test(key)) return Buffer.from(v, 'base64').toString('hex');
    return v;
  };
  return fix(o, '') as Rec;
}

/** The Collector's pdata refuses ids of any other length (protobuf: 0 or exact; JSON: hex of the exact length). */
function checkIds(v: unknown, key = ''): string | undefined {
  if (Array.isArray(v)) {
    for (const x of v) {
      const e = checkIds(x, key);
      if (e) return e;
    }
    return undefined;
  }
  if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      if ((k === 'trace_id' || k === 'span_id' || k === 'parent_span_id') && x instanceof Uint8Array) {
        const want = k === 'trace_id' ? 16 : 8;
        if (x.length !== 0 && x.length !== want) return `invalid length for ${k}: ${x.length}`;
      } else {
        const e = checkIds(x, k);
        if (e) return e;
      }
    }
  }
  return undefined;
}

/** OTLP/JSON (lowerCamelCase, hex ids) into the snake_case object protobufjs reads with keepCase. */
function fromJson(v: unknown, key = ''): unknown {
  if (Array.isArray(v)) return v.map((x) => fromJson(x, key));
  if (v && typeof v === 'object') {
    const o: Rec = {};
    for (const [k, x] of Object.entries(v)) {
      const snake = k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
      if ((snake === 'trace_id' || snake === 'span_id' || snake === 'parent_span_id') && typeof x === 'string') {
        if (!/^([0-9a-fA-F]{2})*$/.test(x)) throw new Error(`invalid ${k}: not hex`);
        o[snake] = Buffer.from(x, 'hex');
      } else o[snake] = fromJson(x, snake);
    }
    return o;
  }
  return v;
}

/** TLS of the test collector's listeners (PEM file paths); `clientCa`: senders must present a client certificate it signed. */
export interface CollectorTls {
  cert: string;
  key: string;
  clientCa?: string;
}

export async function startOtlpCollector(opts: { token?: string; tls?: CollectorTls } = {}): Promise<OtlpCollector> {
  const httpPort = await freePort();
  const grpcPort = await freePort();
  let http: Server | undefined;
  let g: grpc.Server | undefined;
  const scheme = opts.tls ? 'https' : 'http';
  const tls = opts.tls && {
    cert: readFileSync(opts.tls.cert),
    key: readFileSync(opts.tls.key),
    ca: opts.tls.clientCa ? readFileSync(opts.tls.clientCa) : undefined,
  };
  const c: OtlpCollector = {
    httpUrl: `${scheme}://127.0.0.1:${httpPort}`,
    grpcUrl: `${scheme}://127.0.0.1:${grpcPort}`,
    received: [],
    refused: [],
    answers: [],
    start,
    stop,
  };

  function decode(signal: Signal, body: Buffer, json: boolean): { request: Rec } | { error: string } {
    const t = collectorType(REQ[signal]);
    try {
      const m = json ? t.fromObject(fromJson(JSON.parse(body.toString('utf8'))) as Rec) : t.decode(body);
      const err = t.verify(m);
      if (err) return { error: err };
      const bad = checkIds(m);
      if (bad) return { error: bad };
      return { request: toPlain(t, m) };
    } catch (e) {
      return { error: (e as Error).message };
    }
  }

  function response(signal: Signal, a: Answer | undefined): Buffer {
    const [name, field] = RESP[signal];
    const t = collectorType(name);
    if (!a?.partial) return Buffer.from(t.encode(t.create({})).finish());
    return Buffer.from(t.encode(t.fromObject({ partial_success: { [field]: a.partial.rejected, error_message: a.partial.message } })).finish());
  }

  async function start() {
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (d: Buffer) => chunks.push(d));
      req.on('end', () => {
        const signal = SIGNALS.find((s) => HTTP_PATH[s] === req.url);
        const ct = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
        const json = ct === 'application/json';
        const status = (code: number, st: number, message: string, headers: Record<string, string> = {}) => {
          c.refused.push({ status: code, reason: message });
          const t = type('google.rpc.Status');
          const body = json ? Buffer.from(JSON.stringify({ code: st, message })) : Buffer.from(t.encode(t.fromObject({ code: st, message })).finish());
          res.writeHead(code, { 'content-type': json ? 'application/json' : 'application/x-protobuf', ...headers });
          res.end(body);
        };
        if (req.method !== 'POST') return status(405, 12, 'method not allowed');
        if (!signal) return status(404, 12, 'not found');
        if (!json && ct !== 'application/x-protobuf') return status(415, 3, `unsupported content type ${ct}`);
        if (opts.token && req.headers.authorization !== `Bearer ${opts.token}`) return status(401, 16, 'unauthenticated');
        let body = Buffer.concat(chunks);
        const enc = req.headers['content-encoding'];
        if (enc === 'gzip') {
          try {
            body = gunzipSync(body);
          } catch (e) {
            return status(400, 3, `gzip: ${(e as Error).message}`);
          }
        } else if (enc && enc !== 'identity') return status(400, 3, `unsupported content encoding ${enc}`);
        const d = decode(signal, body, json);
        if ('error' in d) return status(400, 3, d.error);
        const a = c.answers.shift();
        if (a?.status)
          return status(a.status, 14, 'the test collector refuses for now', a.retryAfterSeconds ? { 'retry-after': String(a.retryAfterSeconds) } : {});
        c.received.push({
          signal,
          transport: json ? 'http/json' : 'http/protobuf',
          gzip: enc === 'gzip',
          request: d.request,
          headers: req.headers as Record<string, string>,
        });
        const out = response(signal, a);
        if (json) {
          const camel = RESP[signal][1].replace(/_(\w)/g, (_x, y: string) => y.toUpperCase());
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.end(JSON.stringify(a?.partial ? { partialSuccess: { [camel]: String(a.partial.rejected), errorMessage: a.partial.message } } : {}));
        }
        res.writeHead(200, { 'content-type': 'application/x-protobuf' });
        res.end(out);
      });
    };
    http = tls ? createHttpsServer({ ...tls, requestCert: !!tls.ca, rejectUnauthorized: !!tls.ca }, handler) : createServer(handler);
    await new Promise<void>((r) => http!.listen(httpPort, '127.0.0.1', () => r()));
    g = new grpc.Server();
    for (const signal of SIGNALS) {
      g.addService(
        {
          Export: {
            path: GRPC_PATH[signal],
            requestStream: false,
            responseStream: false,
            requestSerialize: (b: Buffer) => b,
            requestDeserialize: (b: Buffer) => b,
            responseSerialize: (b: Buffer) => b,
            responseDeserialize: (b: Buffer) => b,
          },
        },
        {
          Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
            if (opts.token && call.metadata.get('authorization')[0] !== `Bearer ${opts.token}`) {
              c.refused.push({ status: 16, reason: 'unauthenticated' });
              return cb({ code: grpc.status.UNAUTHENTICATED, details: 'unauthenticated' });
            }
            const d = decode(signal, call.request, false);
            if ('error' in d) {
              c.refused.push({ status: 3, reason: d.error });
              return cb({ code: grpc.status.INVALID_ARGUMENT, details: d.error });
            }
            const a = c.answers.shift();
            if (a?.grpcCode !== undefined) {
              const md = new grpc.Metadata();
              if (a.retryAfterSeconds !== undefined) {
                const ri = type('google.rpc.RetryInfo');
                const st = type('google.rpc.Status');
                const detail = ri.encode(ri.fromObject({ retry_delay: { seconds: a.retryAfterSeconds, nanos: 0 } })).finish();
                md.set(
                  'grpc-status-details-bin',
                  Buffer.from(
                    st
                      .encode(
                        st.fromObject({
                          code: a.grpcCode,
                          message: 'later',
                          details: [{ type_url: 'type.googleapis.com/google.rpc.RetryInfo', value: detail }],
                        }),
                      )
                      .finish(),
                  ),
                );
              }
              c.refused.push({ status: a.grpcCode, reason: 'queued answer' });
              return cb({ code: a.grpcCode, details: 'the test collector refuses for now', metadata: md });
            }
            c.received.push({ signal, transport: 'grpc', gzip: false, request: d.request, headers: call.metadata.getMap() as Record<string, string> });
            cb(null, response(signal, a));
          },
        },
      );
    }
    await new Promise<void>((resolve, reject) =>
      g!.bindAsync(
        `127.0.0.1:${grpcPort}`,
        tls
          ? grpc.ServerCredentials.createSsl(tls.ca ?? null, [{ cert_chain: tls.cert, private_key: tls.key }], !!tls.ca)
          : grpc.ServerCredentials.createInsecure(),
        (e) => (e ? reject(e) : resolve()),
      ),
    );
  }

  async function stop() {
    const h = http;
    http = undefined;
    if (h) {
      h.closeAllConnections();
      await new Promise<void>((r) => h.close(() => r()));
    }
    const s = g;
    g = undefined;
    s?.forceShutdown();
  }

  await start();
  return c;
}

/** Every log record / data point / span of the requests received, each with its resource attributes and own attributes as plain values. */
export function receivedItems(c: OtlpCollector, signal: Signal): { resource: Rec; scope: Rec; item: Rec; attributes: Rec; metric?: Rec }[] {
  const out: { resource: Rec; scope: Rec; item: Rec; attributes: Rec; metric?: Rec }[] = [];
  const attrs = (kvs: unknown): Rec => Object.fromEntries(((kvs as Rec[] | undefined) ?? []).map((kv) => [kv.key as string, anyPlain(kv.value)]));
  for (const r of c.received.filter((x) => x.signal === signal)) {
    const outer = signal === 'metrics' ? 'resource_metrics' : signal === 'logs' ? 'resource_logs' : 'resource_spans';
    const inner = signal === 'metrics' ? 'scope_metrics' : signal === 'logs' ? 'scope_logs' : 'scope_spans';
    for (const rs of (r.request[outer] as Rec[]) ?? []) {
      const resource = attrs((rs.resource as Rec | undefined)?.attributes);
      for (const ss of (rs[inner] as Rec[]) ?? []) {
        const scope = (ss.scope as Rec) ?? {};
        if (signal === 'metrics') {
          for (const m of (ss.metrics as Rec[]) ?? []) {
            const data = (m.gauge ?? m.sum ?? m.histogram ?? m.exponential_histogram ?? m.summary) as Rec;
            for (const p of (data?.data_points as Rec[]) ?? []) out.push({ resource, scope, item: p, attributes: attrs(p.attributes), metric: m });
          }
        } else {
          for (const it of (ss[signal === 'logs' ? 'log_records' : 'spans'] as Rec[]) ?? [])
            out.push({ resource, scope, item: it, attributes: attrs(it.attributes) });
        }
      }
    }
  }
  return out;
}

export function anyPlain(v: unknown): unknown {
  const a = (v ?? {}) as Rec;
  if ('string_value' in a) return a.string_value;
  if ('bool_value' in a) return a.bool_value;
  if ('int_value' in a) return Number(a.int_value);
  if ('double_value' in a) return a.double_value;
  if ('array_value' in a) return (((a.array_value as Rec).values as unknown[]) ?? []).map(anyPlain);
  if ('kvlist_value' in a) return Object.fromEntries((((a.kvlist_value as Rec).values as Rec[]) ?? []).map((kv) => [kv.key, anyPlain(kv.value)]));
  return null;
}

/** The otlp sink's conformance: `{seq}` records as log records tagged with the channel, read back from the test collector. */
export function otlpSinkFixture(protocol: 'grpc' | 'http/protobuf' | 'http/json'): PeerFixture {
  return {
    type: 'otlp',
    roles: ['sink'],
    label: `sink ${protocol}, test collector`,
    badConfig: { role: 'sink', set: { max_records_per_request: 0 }, path: 'max_records_per_request' },
    async start(): Promise<Peer> {
      const col = await startOtlpCollector({ token: 'collector-token' });
      const endpoint = protocol === 'grpc' ? col.grpcUrl : col.httpUrl;
      const sink: SinkSide = {
        config: (channel) => ({
          type: 'otlp',
          endpoint,
          protocol,
          signal: 'logs',
          headers: { authorization: 'Bearer collector-token' },
          resource_attributes: { channel },
          timeout: 5,
        }),
        async collect(channel) {
          return {
            records: () =>
              receivedItems(col, 'logs')
                .filter((x) => x.resource.channel === channel)
                .map((x) => ({ seq: x.attributes.seq })),
            async close() {},
          };
        },
      };
      return {
        sink,
        wrongPort: (cfg: Cfg) => ({ ...cfg, endpoint: protocol === 'grpc' ? 'http://127.0.0.1:1' : 'http://127.0.0.1:1' }),
        wrongCredentials: (cfg: Cfg) => ({ ...cfg, headers: { authorization: 'Bearer wrong' } }),
        async disrupt() {
          await col.stop();
          await pace(1000);
          await col.start();
        },
        stop: () => col.stop(),
      };
    },
  };
}

// ---- the otlp source's conformance: the OpenTelemetry JS SDK's own log exporters as the sender ----
//
// The source listens, so every conformance channel is a port of its own (taken ahead: config() is
// synchronous), with only the listener under test open. publish(channel) emits each body `{seq,
// pad}` as the body text of one log record through the SDK (a LoggerProvider, a batch processor,
// the OTLP exporter of the protocol), with the source's bearer token; json_flatten brings the
// body's fields back to the top of the record.

const SOURCE_TOKEN = 'conformance-token';

/** A sender's TLS: the CA it trusts, and a client certificate for mutual TLS (PEM file paths). */
export interface SenderTls {
  ca: string;
  cert?: string;
  key?: string;
}

/**
 * Emits each body as one log record through the SDK's exporter for `protocol` (over TLS with `tls`),
 * and waits until every export is answered. The SDK reports a failed export only to its diagnostic
 * logger, so callers check what arrived.
 */
export async function publishOtlpLogs(protocol: 'grpc' | 'http/protobuf', port: number, bodies: Buffer[], opts: { token?: string; tls?: SenderTls } = {}) {
  const token = opts.token ?? SOURCE_TOKEN;
  const scheme = opts.tls ? 'https' : 'http';
  const pem = opts.tls && {
    ca: readFileSync(opts.tls.ca),
    cert: opts.tls.cert ? readFileSync(opts.tls.cert) : undefined,
    key: opts.tls.key ? readFileSync(opts.tls.key) : undefined,
  };
  const exporter =
    protocol === 'grpc'
      ? new LogsGrpc({
          url: `${scheme}://127.0.0.1:${port}`,
          metadata: bearerMetadata(token),
          ...(pem ? { credentials: serverNameOnlyForHostNames(grpc.credentials.createSsl(pem.ca, pem.key ?? null, pem.cert ?? null)) } : {}),
        })
      : new LogsProto({
          url: `${scheme}://127.0.0.1:${port}/v1/logs`,
          headers: { authorization: `Bearer ${token}` },
          ...(pem ? { httpAgentOptions: { ca: pem.ca, cert: pem.cert, key: pem.key } } : {}),
        });
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': 'svc-conformance' }),
    processors: [new BatchLogRecordProcessor({ exporter, maxExportBatchSize: 100, maxQueueSize: Math.max(2048, bodies.length), scheduledDelayMillis: 50 })],
  });
  const logger = provider.getLogger('svc-conformance');
  for (const b of bodies) logger.emit({ severityNumber: SeverityNumber.INFO, body: b.toString() });
  await provider.forceFlush();
  await provider.shutdown();
}

function bearerMetadata(token: string) {
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${token}`);
  return md;
}

/** A loopback TCP port held by another socket until released: a listener cannot bind it. */
async function holdTcpPort(): Promise<{ port: number; release(): Promise<void> }> {
  const server = createNetServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { port: (server.address() as { port: number }).port, release: () => new Promise<void>((r) => server.close(() => r())) };
}

export function otlpSourceFixture(protocol: 'grpc' | 'http/protobuf'): PeerFixture {
  const portField = protocol === 'grpc' ? 'grpc_port' : 'http_port';
  return {
    type: 'otlp',
    roles: ['source'],
    label: `source ${protocol}, the OpenTelemetry JS SDK's exporter`,
    badConfig: { role: 'source', set: { max_queue_size: 0 }, path: 'max_queue_size' },
    async start(): Promise<Peer> {
      const held = await holdTcpPort();
      const pool: number[] = [];
      while (pool.length < 16) {
        const p = await freePort();
        if (p !== held.port && !pool.includes(p)) pool.push(p);
      }
      const ports = new Map<string, number>();
      const portOf = (channel: string) => {
        let p = ports.get(channel);
        if (p === undefined) {
          p = pool.shift();
          if (p === undefined) throw new Error('otlp source fixture: out of pre-allocated ports');
          ports.set(channel, p);
        }
        return p;
      };
      return {
        source: {
          config: (channel) => ({
            type: 'otlp',
            host: '127.0.0.1',
            grpc_port: 0,
            http_port: 0,
            [portField]: portOf(channel),
            signals: ['logs'],
            secret: SOURCE_TOKEN,
          }),
          publish: (channel, bodies) => publishOtlpLogs(protocol, portOf(channel), bodies),
          transforms: [{ type: 'json_flatten', field: 'body' }],
        },
        wrongPort: (cfg) => ({ ...cfg, [portField]: held.port }),
        noCredentials:
          'test() has nothing to reach (the source listens); the secret is checked per request: 401 / UNAUTHENTICATED in otlp-source.test.ts, and every publish here presents it',
        noDisrupt:
          'no connection of ours to break (the source listens): a sender refused with 503 / UNAVAILABLE sends again (the SDK exporters in otlp-source.test.ts), and what was answered success is in the spool, replayed after a crash (webhook-stream, tested with the webhook and prometheus_rw sources)',
        stop: () => held.release(),
      };
    },
  };
}

/**
 * svc's own otlp source (gRPC or HTTP on a free port) writing what it receives to an NDJSON file in
 * `out`: the far end of a round trip. (This module imports nothing of vitest: the benchmarks use
 * its collector, so the caller makes the directory.)
 */
export async function startOtlpToFile(
  name: string,
  out: string,
  transport: 'grpc' | 'http' = 'grpc',
): Promise<{ port: number; out: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const abort = new AbortController();
  const { config, diagnostics } = loadPipelineText(
    stringify({
      version: '1',
      pipeline: {
        name,
        schedule: { type: 'stream' },
        source: { type: 'otlp', host: '127.0.0.1', grpc_port: transport === 'grpc' ? port : 0, http_port: transport === 'http' ? port : 0 },
        serializer_in: { type: 'json' },
        serializer_out: { type: 'ndjson' },
        sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
      },
    }),
    { env: {} },
  );
  if (!config) throw new Error(diagnostics.map((d) => d.message).join('\n'));
  const running = runPipeline(config, { signal: abort.signal, log: silentLogger, processed: new MemoryProcessedFiles() });
  return {
    port,
    out,
    stop: async () => {
      abort.abort();
      await running;
    },
  };
}
