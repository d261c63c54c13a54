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
// by the test. It can be stopped and started again on the same ports.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { runPipeline } from '../../../src/engine/runner.js';
import { silentLogger } from '../../../src/observability/log.js';
import { MemoryProcessedFiles } from '../../../src/plugins/connector-runtime/processed-files.js';
import { tempDir } from '../../helpers/fs.js';
import { freePort } from '../../helpers/net.js';
import { loadPipeline } from '../helpers.js';
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

export async function startOtlpCollector(opts: { token?: string } = {}): Promise<OtlpCollector> {
  const httpPort = await freePort();
  const grpcPort = await freePort();
  let http: Server | undefined;
  let g: grpc.Server | undefined;
  const c: OtlpCollector = {
    httpUrl: `http://127.0.0.1:${httpPort}`,
    grpcUrl: `http://127.0.0.1:${grpcPort}`,
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
    http = createServer((req, res) => {
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
    });
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
      g!.bindAsync(`127.0.0.1:${grpcPort}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? reject(e) : resolve())),
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

/** svc's own otlp source (gRPC or HTTP on a free port) writing what it receives to an NDJSON file: the far end of a round trip. */
export async function startOtlpToFile(name: string, transport: 'grpc' | 'http' = 'grpc'): Promise<{ port: number; out: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const out = tempDir(`svc-${name}-`);
  const abort = new AbortController();
  const running = runPipeline(
    loadPipeline({
      name,
      schedule: { type: 'stream' },
      source: { type: 'otlp', host: '127.0.0.1', grpc_port: transport === 'grpc' ? port : 0, http_port: transport === 'http' ? port : 0 },
      serializer_in: { type: 'json' },
      serializer_out: { type: 'ndjson' },
      sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
    }),
    { signal: abort.signal, log: silentLogger, processed: new MemoryProcessedFiles() },
  );
  return {
    port,
    out,
    stop: async () => {
      abort.abort();
      await running;
    },
  };
}
