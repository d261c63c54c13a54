// Source `otlp` (stream): an OpenTelemetry Protocol receiver, as the Collector's otlp receiver.
// OTLP/gRPC on grpc_port (4317) and OTLP/HTTP on http_port (4318: POST /v1/logs, /v1/metrics,
// /v1/traces, protobuf or JSON, gzip or not). Each request is checked whole before it is answered
// (walk.ts: bounds, nesting, the output cap), then held as the webhook source holds its bodies
// (src/plugins/connector-runtime/webhook-stream.ts: a bounded queue, and under the daemon a spool on
// disk): the answer goes out only once the request is durably accepted, and the spool is committed
// only after its records were delivered. A full queue answers as OTLP says (HTTP 503 with
// Retry-After; gRPC UNAVAILABLE with RetryInfo), which every OTLP exporter retries. A body that
// does not decode is answered 400 (gRPC INVALID_ARGUMENT), which exporters drop, and dead-lettered
// with its reason. Records refused one by one are reported in the answer's partial_success.
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { isIPv6, type AddressInfo } from 'node:net';
import { Type, type Static } from '@sinclair/typebox';
import type * as GrpcJs from '@grpc/grpc-js';
import { SourceError } from '../../../core/errors.js';
import { readSetting } from '../../../settings.js';
import { lazyModule } from '../../connector-runtime/lazy.js';
import { listenError, probeTcpListen } from '../../connector-runtime/listen.js';
import { rateLimitedWarn } from '../../connector-runtime/rate-limited-warn.js';
import { WebhookHub, type Delivery, type WebhookMessage } from '../../connector-runtime/webhook-hub.js';
import { webhookStream, type HeldBody } from '../../connector-runtime/webhook-stream.js';
import { defineSource, type LintIssue, type PluginContext, type Rec, type Source } from '../../types.js';
import { decodeRequest, inflate, jsonToProtobuf, type Layout } from './decode.js';
import { encodeResponse, otlpType, retryStatusDetails, SIGNAL_INFO, SIGNALS, type Signal } from './proto.js';
import { scanMetrics } from './scan.js';
import { OtlpDecodeError, walkRequest, type WalkResult } from './walk.js';

const grpcModule = lazyModule(() => import('@grpc/grpc-js'));

const config = Type.Object(
  {
    host: Type.String({
      default: '0.0.0.0',
      minLength: 1,
      description: 'Address both listeners bind: 0.0.0.0 (every IPv4 interface), :: (IPv6 and IPv4), or one address of this machine.',
    }),
    grpc_port: Type.Integer({ minimum: 0, maximum: 65535, default: 4317, description: 'OTLP/gRPC port; 0 turns gRPC off.' }),
    http_port: Type.Integer({
      minimum: 0,
      maximum: 65535,
      default: 4318,
      description: 'OTLP/HTTP port (POST /v1/logs, /v1/metrics, /v1/traces; protobuf or JSON; gzip); 0 turns HTTP off.',
    }),
    signals: Type.Array(Type.Union([Type.Literal('logs'), Type.Literal('metrics'), Type.Literal('traces')]), {
      minItems: 1,
      uniqueItems: true,
      default: ['logs', 'metrics', 'traces'],
      description: 'Signals taken; a request for another is answered 404 (gRPC UNIMPLEMENTED), as the Collector does for a signal without a pipeline.',
    }),
    layout: Type.Union([Type.Literal('flat'), Type.Literal('nested')], {
      default: 'flat',
      description:
        "flat: the resource attributes as `resource.<key>` fields, the scope as `scope.name`, `scope.version`, `scope.attributes.<key>`, the record's own attributes as top-level fields (`attributes.<key>` where the name is one of the record's fields). nested: `resource`, `scope` and `attributes` objects.",
    }),
    secret: Type.Optional(
      Type.String({
        minLength: 1,
        writeOnly: true,
        description: 'Bearer token senders must present (`Authorization: Bearer <secret>`, an exporter header); HTTP 401 / gRPC UNAUTHENTICATED otherwise.',
      }),
    ),
    tls_cert: Type.Optional(Type.String({ minLength: 1, description: 'PEM certificate (chain) file: both listeners serve TLS (https, gRPC over TLS).' })),
    tls_key: Type.Optional(Type.String({ minLength: 1, description: 'PEM private key file of tls_cert.' })),
    tls_client_ca: Type.Optional(Type.String({ minLength: 1, description: 'PEM CA file: senders must present a client certificate it signed (mutual TLS).' })),
    max_body_bytes: Type.Integer({
      minimum: 1024,
      default: 20971520,
      description:
        "Largest request taken, after gzip is undone (the Collector's max_request_body_size); larger ones are answered 413 (gRPC RESOURCE_EXHAUSTED).",
    }),
    max_queue_size: Type.Integer({
      minimum: 1,
      default: 1000,
      description:
        'Requests held before the pipeline takes them; beyond it senders are answered 503 with Retry-After (gRPC UNAVAILABLE with RetryInfo) and retry.',
    }),
    retry_after_seconds: Type.Integer({
      minimum: 1,
      maximum: 3600,
      default: 1,
      description: 'The delay a full queue asks senders to wait (Retry-After, RetryInfo).',
    }),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

function lint(c: Config): LintIssue[] {
  const out: LintIssue[] = [];
  if (c.grpc_port === 0 && c.http_port === 0) out.push({ path: 'http_port', message: 'grpc_port and http_port are both 0: nothing would listen' });
  if (c.grpc_port !== 0 && c.grpc_port === c.http_port) out.push({ path: 'http_port', message: 'grpc_port and http_port are the same port' });
  if ((c.tls_cert === undefined) !== (c.tls_key === undefined))
    out.push({ path: c.tls_cert === undefined ? 'tls_cert' : 'tls_key', message: 'tls_cert and tls_key go together' });
  if (c.tls_client_ca !== undefined && c.tls_cert === undefined) out.push({ path: 'tls_client_ca', message: 'tls_client_ca needs tls_cert and tls_key' });
  return out;
}

// A held body: one byte (the signal's index, POISON set for a body refused on arrival), then the
// request as protobuf; a poison body: a 2-byte reason length, the reason, the body as it came.
const POISON = 0x80;
const PATH = 'otlp';
/**
 * Estimated output (walk.ts' estimate) of the records built on arrival and held until the pipeline
 * takes their request; past it, a request's records are built again when it is taken.
 */
const HELD_RECORDS_BUDGET = 32 * 1024 * 1024;

function held(signal: Signal, pb: Buffer): Buffer {
  const out = Buffer.allocUnsafe(pb.length + 1);
  out[0] = SIGNALS.indexOf(signal);
  pb.copy(out, 1);
  return out;
}
function poison(signal: Signal, why: string, raw: Buffer): Buffer {
  const reason = Buffer.from(why.slice(0, 1000));
  const head = Buffer.alloc(3);
  head[0] = SIGNALS.indexOf(signal) | POISON;
  head.writeUInt16BE(reason.length, 1);
  return Buffer.concat([head, reason, raw]);
}

/** What the listeners answer for one request. */
export type Outcome =
  | { ok: true; rejected: number; message: string }
  | { ok: false; status: 400 | 401 | 404 | 413 | 415 | 503; grpc: number; message: string; retry?: boolean };

// gRPC status codes (grpc-js Status), here so the HTTP path needs no gRPC module.
const G = { INVALID_ARGUMENT: 3, RESOURCE_EXHAUSTED: 8, UNIMPLEMENTED: 12, UNAVAILABLE: 14, UNAUTHENTICATED: 16 } as const;

export default defineSource({
  key: 'otlp',
  summary: 'Receive OpenTelemetry (OTLP/gRPC and OTLP/HTTP, protobuf or JSON): one record per log record, data point or span.',
  mode: 'stream',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a request is answered success only once it is on disk in the spool (under svc serve), and committed there only after its records were delivered; a full queue answers 503 / UNAVAILABLE with a retry delay, which OTLP exporters retry, and a crash replays what was not committed.',
  },
  config,
  lint,
  resources: (c) => [
    ...(c.grpc_port ? [{ kind: 'listen' as const, protocol: 'tcp' as const, host: c.host, port: c.grpc_port, name: 'otlp-grpc', pushes: true }] : []),
    ...(c.http_port ? [{ kind: 'listen' as const, protocol: 'tcp' as const, host: c.host, port: c.http_port, name: 'otlp-http', pushes: true }] : []),
  ],
  async test(c) {
    // Binds each listener's port briefly and releases it, and reads the TLS files: proves the
    // address and ports are free and allowed and the certificate is there (nothing to reach: it listens).
    if (c.tls_cert) readTlsFiles(c);
    for (const [port, what] of [
      [c.http_port, 'HTTP'],
      [c.grpc_port, 'gRPC'],
    ] as const) {
      if (port) await probeTcpListen(c.host, port).catch((e: unknown) => Promise.reject(bindError(e, c, port, what)));
    }
  },
  examples: [
    { title: 'The OTLP ports of a Collector (gRPC 4317, HTTP 4318), every signal', yaml: 'type: otlp' },
    {
      title: 'Metrics only over HTTP with TLS and a bearer token',
      yaml: 'type: otlp\ngrpc_port: 0\nhttp_port: 4318\nsignals: [metrics]\nsecret: ${OTLP_TOKEN:-change-me}\ntls_cert: /etc/svc/otlp.crt\ntls_key: /etc/svc/otlp.key',
    },
  ],
  create(c, ctx) {
    return otlpSource(c, ctx);
  },
});

function otlpSource(c: Config, ctx: PluginContext): Source {
  const maxOutput = readSetting('OTLP_MAX_OUTPUT_BYTES');
  const layout: Layout = c.layout;
  const enabled = new Set<Signal>(c.signals);
  const hub = new WebhookHub();
  const throttled = rateLimitedWarn(
    ctx.log,
    (n) => `otlp: the queue is full (max_queue_size ${c.max_queue_size}): ${n} requests answered 503 / UNAVAILABLE with a retry delay; the senders retry them`,
  );
  /** The walk of each message validate() passed, for the answer's partial success. */
  const walks = new WeakMap<WebhookMessage, WalkResult>();
  /** The bodies validate() walked in this process (the same Buffer reaches decode() unless it was read back from the spool). */
  const walked = new WeakSet<Buffer>();
  /**
   * Metrics requests read in one pass on arrival (scan.ts): their records, until decode() takes
   * them, within HELD_RECORDS_BUDGET (their estimates summed in `heldBytes`).
   */
  const heldRecords = new WeakMap<Buffer, { records: Rec[]; estimate: number }>();
  let heldBytes = 0;
  /** Bodies the one pass left to the general path on arrival (walk.ts, decode.ts). */
  const generalPath = new WeakSet<Buffer>();
  const takeHeld = (body: Buffer): Rec[] | undefined => {
    const h = heldRecords.get(body);
    if (!h) return undefined;
    heldRecords.delete(body);
    heldBytes -= h.estimate;
    return h.records;
  };

  const inner = webhookStream({ path: PATH, secret: c.secret, max_queue_size: c.max_queue_size }, ctx, {
    type: 'otlp',
    hub,
    reportConnection: true,
    validate(m) {
      const signal = SIGNALS[m.body[0]! & 3]!;
      if (m.body[0]! & POISON) return undefined;
      try {
        const scanned = signal === 'metrics' ? scanMetrics(m.body.subarray(1), maxOutput, layout) : undefined;
        if (scanned) {
          walks.set(m, scanned.walk);
          walked.add(m.body);
          if (heldBytes + scanned.walk.estimate <= HELD_RECORDS_BUDGET) {
            heldRecords.set(m.body, { records: scanned.records, estimate: scanned.walk.estimate });
            heldBytes += scanned.walk.estimate;
          }
          return undefined;
        }
        generalPath.add(m.body);
        walks.set(m, walkRequest(signal, m.body.subarray(1), maxOutput));
        walked.add(m.body);
        return undefined;
      } catch (e) {
        if (e instanceof OtlpDecodeError) return e.message;
        throw e;
      }
    },
    decode(m: HeldBody) {
      const signal = SIGNALS[m.body[0]! & 3];
      if (!signal) return { records: [], undecodable: [{ raw: m.body, why: 'otlp: a spooled body of an unknown kind' }] };
      if (m.body[0]! & POISON) {
        const n = m.body.readUInt16BE(1);
        return { records: [], undecodable: [{ raw: m.body.subarray(3 + n), why: `otlp: ${signal}: ${m.body.toString('utf8', 3, 3 + n)}` }] };
      }
      const held = takeHeld(m.body);
      if (held) return { records: held };
      const records: Rec[] = [];
      try {
        // Read in one pass when it can be (scan.ts checks the bounds itself). Else walked again
        // when it was not walked by this process (read back from the spool): a spool written
        // under a larger SVC_OTLP_MAX_OUTPUT_BYTES is held to today's.
        const scanned = signal === 'metrics' && !generalPath.has(m.body) ? scanMetrics(m.body.subarray(1), maxOutput, layout) : undefined;
        if (scanned) return { records: scanned.records };
        if (!walked.has(m.body)) walkRequest(signal, m.body.subarray(1), maxOutput);
        decodeRequest(signal, m.body.subarray(1), { layout }, (r) => records.push(r));
      } catch (e) {
        return { records: [], undecodable: [{ raw: m.body.subarray(1), why: `otlp: ${signal}: ${(e as Error).message}` }] };
      }
      return { records };
    },
  });

  /** Offers one request (already inflated); the outcome the listener answers. */
  async function receive(signal: Signal, pb: Buffer | { raw: Buffer; why: string }, authorization: string | undefined): Promise<Outcome> {
    const receivedAt = new Date().toISOString();
    const m: WebhookMessage = { body: Buffer.isBuffer(pb) ? held(signal, pb) : poison(signal, pb.why, pb.raw), receivedAt };
    let d: Delivery | undefined;
    try {
      d = await hub.deliver(PATH, authorization, m);
    } finally {
      // Not queued (full, refused, not stored): decode() never takes its records.
      if (d !== 'queued') takeHeld(m.body);
    }
    if (d === 'queued') {
      if (!Buffer.isBuffer(pb)) return { ok: false, status: 400, grpc: G.INVALID_ARGUMENT, message: pb.why };
      const w = walks.get(m);
      return { ok: true, rejected: w?.refused ?? 0, message: w?.refused ? w.reason : '' };
    }
    if (d === 'unauthorized')
      return { ok: false, status: 401, grpc: G.UNAUTHENTICATED, message: 'a bearer token is required (Authorization: Bearer <secret>)' };
    if (d === 'full') throttled.add(1, { signal });
    if (d === 'full' || d === 'unknown')
      return { ok: false, status: 503, grpc: G.UNAVAILABLE, message: d === 'full' ? 'the queue is full; retry later' : 'not ready yet; retry', retry: true };
    if ('invalid' in d) {
      // Refused on arrival: answered 400, and held as poison so that it is dead-lettered with its reason.
      if (Buffer.isBuffer(pb)) return receive(signal, { raw: pb, why: d.invalid }, authorization);
      return { ok: false, status: 400, grpc: G.INVALID_ARGUMENT, message: d.invalid };
    }
    return { ok: false, status: 503, grpc: G.UNAVAILABLE, message: `the request could not be stored (${d.failed}); retry`, retry: true };
  }

  /** A request body as protobuf: inflated, JSON converted; an Outcome when it is refused before it is offered. */
  function prepare(signal: Signal, body: Buffer, encoding: string | undefined, json: boolean): Buffer | { raw: Buffer; why: string } | Outcome {
    let plain: Buffer;
    try {
      plain = inflate(body, encoding, c.max_body_bytes);
    } catch (e) {
      const why = (e as Error).message;
      if (/past \d+ bytes/.test(why)) return { ok: false, status: 413, grpc: G.RESOURCE_EXHAUSTED, message: why };
      return { raw: body, why };
    }
    if (!json) return plain;
    try {
      return jsonToProtobuf(signal, plain);
    } catch (e) {
      if (e instanceof OtlpDecodeError) return { raw: plain, why: e.message };
      throw e;
    }
  }

  let http: HttpServer | undefined;
  let grpcServer: GrpcJs.Server | undefined;
  /** The TLS files, read when the listeners start (create() does no I/O). */
  let tls: { cert: Buffer; key: Buffer; ca?: Buffer } | undefined;
  function readTls() {
    if (c.tls_cert) tls = readTlsFiles(c);
  }

  async function startHttp() {
    const handler = (req: IncomingMessage, res: ServerResponse) => void serveHttp(req, res);
    http = tls
      ? createHttpsServer({ cert: tls.cert, key: tls.key, ca: tls.ca, requestCert: !!tls.ca, rejectUnauthorized: !!tls.ca }, handler)
      : createHttpServer(handler);
    await new Promise<void>((resolve, reject) => {
      http!.once('error', (e) => reject(bindError(e, c, c.http_port, 'HTTP')));
      http!.listen(c.http_port, c.host, () => resolve());
    });
    ctx.log.info({ port: (http.address() as AddressInfo).port, host: c.host }, 'otlp: OTLP/HTTP listening');
  }

  async function serveHttp(req: IncomingMessage, res: ServerResponse) {
    const url = req.url?.split('?')[0] ?? '';
    const signal = SIGNALS.find((s) => SIGNAL_INFO[s].httpPath === url);
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const json = type === 'application/json';
    const send = (status: number, body: Buffer, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': json ? 'application/json' : 'application/x-protobuf', 'content-length': body.length, ...headers });
      res.end(body);
    };
    // Errors are a google.rpc.Status, in the request's encoding (the OTLP/HTTP specification).
    const fail = (status: number, code: number, message: string, headers: Record<string, string> = {}) => {
      const body = json ? Buffer.from(JSON.stringify({ code, message })) : Buffer.from(statusBytes(code, message));
      send(status, body, headers);
    };
    if (req.method !== 'POST') return fail(405, G.UNIMPLEMENTED, `${req.method} is not allowed; OTLP/HTTP takes POST`, { allow: 'POST' });
    if (!signal || !enabled.has(signal)) {
      req.resume();
      return fail(404, G.UNIMPLEMENTED, `nothing is served at ${url} (this source takes ${[...enabled].map((s) => SIGNAL_INFO[s].httpPath).join(', ')})`);
    }
    if (!json && type !== 'application/x-protobuf') {
      req.resume();
      return fail(415, G.INVALID_ARGUMENT, `Content-Type ${type || '(none)'} is not OTLP: application/x-protobuf or application/json`);
    }
    // Read at most max_body_bytes (compressed bytes count too).
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    try {
      for await (const chunk of req as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > c.max_body_bytes) {
          tooLarge = true;
          break;
        }
        chunks.push(chunk);
      }
    } catch {
      return; // the sender went away
    }
    if (tooLarge) {
      res.setHeader('connection', 'close');
      return fail(413, G.RESOURCE_EXHAUSTED, `the body is larger than ${c.max_body_bytes} bytes (max_body_bytes)`);
    }
    const p = prepare(signal, Buffer.concat(chunks, size), req.headers['content-encoding'], json);
    const o = 'ok' in p ? p : await receive(signal, p, req.headers.authorization);
    if (o.ok) {
      const body = encodeResponse(signal, o.rejected, o.message);
      if (json) return send(200, Buffer.from(JSON.stringify(o.rejected || o.message ? { partialSuccess: partialJson(signal, o.rejected, o.message) } : {})));
      return send(200, body);
    }
    return fail(o.status, o.grpc, o.message, o.retry ? { 'retry-after': String(c.retry_after_seconds) } : {});
  }

  async function startGrpc() {
    const grpc = await grpcModule();
    const server = new grpc.Server({ 'grpc.max_receive_message_length': c.max_body_bytes, 'grpc.max_send_message_length': 4 * 1024 * 1024 });
    for (const signal of SIGNALS) {
      if (!enabled.has(signal)) continue;
      const def: GrpcJs.ServiceDefinition = {
        Export: {
          path: SIGNAL_INFO[signal].grpcPath,
          requestStream: false,
          responseStream: false,
          requestSerialize: (b: Buffer) => b,
          requestDeserialize: (b: Buffer) => b,
          responseSerialize: (b: Buffer) => b,
          responseDeserialize: (b: Buffer) => b,
        },
      };
      server.addService(def, {
        Export: (call: GrpcJs.ServerUnaryCall<Buffer, Buffer>, cb: GrpcJs.sendUnaryData<Buffer>) => {
          const auth = call.metadata.get('authorization')[0];
          void (async () => {
            const p = prepare(signal, call.request, undefined, false);
            const o = 'ok' in p ? p : await receive(signal, p, typeof auth === 'string' ? auth : auth?.toString());
            if (o.ok) return cb(null, encodeResponse(signal, o.rejected, o.message));
            const md = new grpc.Metadata();
            if (o.retry) md.set('grpc-status-details-bin', retryStatusDetails(o.grpc, o.message, c.retry_after_seconds * 1000));
            cb({ code: o.grpc, details: o.message, metadata: md });
          })().catch((e: Error) => cb({ code: grpc.status.INTERNAL, details: e.message }));
        },
      });
    }
    const creds = tls
      ? grpc.ServerCredentials.createSsl(tls.ca ?? null, [{ cert_chain: tls.cert, private_key: tls.key }], !!tls.ca)
      : grpc.ServerCredentials.createInsecure();
    const address = c.host.includes(':') ? `[${c.host}]:${c.grpc_port}` : `${c.host}:${c.grpc_port}`;
    await new Promise<void>((resolve, reject) => server.bindAsync(address, creds, (e) => (e ? reject(bindError(e, c, c.grpc_port, 'gRPC')) : resolve())));
    grpcServer = server;
    ctx.log.info({ address }, 'otlp: OTLP/gRPC listening');
  }

  async function stop() {
    const h = http;
    http = undefined;
    if (h) await new Promise<void>((r) => h.close(() => r()));
    h?.closeAllConnections();
    const g = grpcServer;
    grpcServer = undefined;
    if (g) await new Promise<void>((r) => g.tryShutdown(() => r()));
  }

  return {
    async *units(signal: AbortSignal) {
      try {
        readTls();
        if (c.http_port) await startHttp();
        if (c.grpc_port) await startGrpc();
        yield* inner.units(signal);
      } finally {
        throttled.stop();
        await stop();
      }
    },
    close: () => inner.close?.() ?? Promise.resolve(),
  };
}

/** A listener of this source that cannot bind, with what to do (connector-runtime/listen.ts). */
const bindError = (e: unknown, c: Config, port: number, what: string): SourceError =>
  listenError(e, c.host, `tcp ${isIPv6(c.host) ? `[${c.host}]` : c.host}:${port} (${what})`, 'an OpenTelemetry Collector, or another pipeline');

function readTlsFiles(c: Config): { cert: Buffer; key: Buffer; ca?: Buffer } {
  try {
    return { cert: readFileSync(c.tls_cert!), key: readFileSync(c.tls_key!), ca: c.tls_client_ca ? readFileSync(c.tls_client_ca) : undefined };
  } catch (e) {
    throw new SourceError(`otlp: cannot read the TLS files: ${(e as Error).message}`);
  }
}

function partialJson(signal: Signal, rejected: number, message: string) {
  return { [SIGNAL_INFO[signal].rejectedField]: String(rejected), errorMessage: message };
}

function statusBytes(code: number, message: string): Uint8Array {
  return otlpType('google.rpc.Status').encode({ code, message }).finish();
}
