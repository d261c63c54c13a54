// Sink `otlp`: records as OpenTelemetry metrics, logs or traces to an OTLP receiver (a Collector,
// Grafana Alloy, Mimir/Loki/Tempo's OTLP endpoints, a vendor), over OTLP/gRPC or OTLP/HTTP
// (protobuf or JSON), as the Collector's otlp/otlphttp exporters. encode.ts maps each record
// (docs/opentelemetry.md); a batch goes out as requests of at most max_records_per_request records.
// Retries are the runtime's (retry_count, backoff): exactly what the OTLP specification calls
// retryable is thrown as retryable (HTTP 429/502/503/504; gRPC CANCELLED, DEADLINE_EXCEEDED,
// ABORTED, OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS, and RESOURCE_EXHAUSTED only with RetryInfo),
// with the server's Retry-After or RetryInfo delay; anything else dead-letters the request's
// records with the server's message, and so does a partial success that refused records.
import { gzipSync } from 'node:zlib';
import { Type, type Static } from '@sinclair/typebox';
import type * as GrpcJs from '@grpc/grpc-js';
import { WriteError } from '../../../core/errors.js';
import {
  describeTarget,
  excerpt,
  HttpClient,
  networkError,
  readTlsFiles,
  retryAfterMs,
  statusText,
  TlsFilesError,
  type HttpResponse,
  type TlsFiles,
} from '../../connector-runtime/http-client.js';
import { serverNameOnlyForHostNames } from '../../connector-runtime/grpc-tls.js';
import { lazyModule } from '../../connector-runtime/lazy.js';
import { PeerPresence } from '../../connector-runtime/presence.js';
import { defineSink, type LintIssue, type PluginContext, type WriteResult } from '../../types.js';
import { version } from '../../../version.js';
import { buildRequest, RecordMapper, type Mapped } from './encode.js';
import { onlyNumberPoints, writeMetricsRequest } from './write-metrics.js';
import { partialOf, requestType, responseType, retryDelayOf, SIGNAL_INFO, type Signal } from './proto.js';

const grpcModule = lazyModule(() => import('@grpc/grpc-js'));

const config = Type.Object(
  {
    endpoint: Type.String({
      minLength: 1,
      pattern: '^https?://',
      description:
        'The receiver. HTTP: a base URL (`http://collector:4318`: /v1/<signal> is appended, as OTEL_EXPORTER_OTLP_ENDPOINT) or the full URL of the signal (a path other than `/`). gRPC: `http://host:4317` (plain) or `https://host:4317` (TLS).',
    }),
    protocol: Type.Union([Type.Literal('grpc'), Type.Literal('http/protobuf'), Type.Literal('http/json')], {
      default: 'http/protobuf',
      description: 'OTLP transport, as OTEL_EXPORTER_OTLP_PROTOCOL: grpc, http/protobuf or http/json.',
    }),
    signal: Type.Union([Type.Literal('metrics'), Type.Literal('logs'), Type.Literal('traces')], {
      default: 'metrics',
      description: 'What each record becomes: a metric data point per value field, a log record, or a span (docs/opentelemetry.md).',
    }),
    headers: Type.Optional(
      Type.Record(Type.String(), Type.String({ writeOnly: true }), {
        description: 'Headers (HTTP) or metadata (gRPC) on every request: vendor keys, `authorization`; their values are masked like secrets.',
      }),
    ),
    compression: Type.Union([Type.Literal('gzip'), Type.Literal('none')], {
      default: 'gzip',
      description: "Request compression (the Collector exporters' default is gzip).",
    }),
    timeout: Type.Number({ exclusiveMinimum: 0, default: 10, description: "Seconds one request may take (the OTLP exporters' default is 10)." }),
    verify_ssl: Type.Boolean({
      default: true,
      description:
        'Check the certificate of an https:// receiver; false accepts any certificate (self-signed test receivers), which also accepts an attacker in the middle.',
    }),
    tls_ca: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          "PEM file of the CA certificates that sign an https:// receiver's certificate (the Collector exporter's ca_file); default: the system's trusted CAs.",
      }),
    ),
    tls_cert: Type.Optional(
      Type.String({ minLength: 1, description: 'PEM client certificate (chain) file, presented to a receiver that asks for one (mutual TLS; cert_file).' }),
    ),
    tls_key: Type.Optional(Type.String({ minLength: 1, description: 'PEM private key file of tls_cert (key_file).' })),
    max_records_per_request: Type.Integer({
      minimum: 1,
      default: 1000,
      description:
        'Records per request at most; a larger batch goes out as several requests, in order. Smaller requests also narrow what a partial success refers to.',
    }),
    name_field: Type.String({
      minLength: 1,
      default: 'name',
      description: 'metrics: record field with the metric name (with several value fields: `<name>.<field>`).',
    }),
    value_fields: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      default: ['value'],
      description:
        "metrics: record fields holding values, one data point each. A missing or null field gives none; text that is not a number dead-letters the record. `*`: every field holding a number that is not an attribute_fields, name, time or type field (a pm_xml record's counters, each named from its measType).",
    }),
    timestamp_field: Type.String({
      minLength: 1,
      default: 'timestamp',
      description:
        'Record field with the time (epoch s/ms/us/ns by magnitude, or ISO 8601); `time_unix_nano` beside it wins (exact). Absent: the time of the write.',
    }),
    type_field: Type.String({
      minLength: 1,
      default: 'type',
      description:
        "metrics: record field naming the values' type: Counter32, Counter64, counter or sum make cumulative monotonic Sums; Gauge32, TimeTicks, Integer, gauge make Gauges; histogram, exponential_histogram and summary are read as the otlp source writes them. `_snmp_widths` (snmp_poll) and counter_fields make Sums too; anything else is a Gauge.",
    }),
    counter_fields: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'metrics: value fields that are counters (monotonic Sums); `*`: all of them.',
    }),
    sum_temporality: Type.Union([Type.Literal('cumulative'), Type.Literal('delta')], {
      default: 'cumulative',
      description:
        "metrics: the temporality of Sums (a record's `temporality` wins): cumulative for SNMP counters (totals since the agent started), delta for 3GPP PM counters (each value counts one granularity period).",
    }),
    start_time_field: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          "metrics: record field with the start of each point's interval (pm_xml: begin_time); a record's start_time_unix_nano wins. Unset, cumulative Sums start at their series' first point and again at each reset.",
      }),
    ),
    unit_field: Type.String({ minLength: 1, default: 'unit', description: "metrics: record field with the metric's unit (UCUM: By, s, 1)." }),
    unit: Type.Optional(Type.String({ description: 'metrics: one unit for every metric, instead of unit_field.' })),
    body_field: Type.String({
      minLength: 1,
      default: 'body',
      description: 'logs: record field with the log body (absent: `message`, as syslog records have it).',
    }),
    attribute_fields: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        description:
          'Only these fields become attributes. Unset: every other field (not the name, value, time, type, unit or body fields, not those of resource_fields or exclude_fields, not fields starting with `_`, `resource.` or `scope.`).',
      }),
    ),
    exclude_fields: Type.Array(Type.String({ minLength: 1 }), { default: [], description: 'Fields that never become attributes.' }),
    resource_fields: Type.Optional(
      Type.Record(Type.String(), Type.String({ minLength: 1 }), {
        description:
          'Record fields that become resource attributes, field: attribute. Default: sysName and hostname to host.name, _target to svc.target, sysObjectID to svc.snmp.sys_object_id (docs/opentelemetry.md). Fields `resource.<key>` always do.',
      }),
    ),
    resource_attributes: Type.Optional(
      Type.Record(Type.String(), Type.String(), { description: 'Resource attributes added to every record (service.name...).' }),
    ),
    scope_name: Type.String({ minLength: 1, default: 'svc', description: "The instrumentation scope's name (a record's `scope.name` wins)." }),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

export const DEFAULT_RESOURCE_FIELDS: Record<string, string> = {
  sysName: 'host.name',
  hostname: 'host.name',
  _target: 'svc.target',
  sysObjectID: 'svc.snmp.sys_object_id',
};

function lint(c: Config): LintIssue[] {
  const out: LintIssue[] = [];
  if (/^https?:\/\/[^/?#]*@/i.test(c.endpoint)) out.push({ path: 'endpoint', message: 'credentials in the URL are not sent; put them in headers' });
  if (c.protocol === 'grpc' && /^https?:\/\/[^/]+\/./.test(c.endpoint))
    out.push({ path: 'endpoint', message: 'a gRPC endpoint has no path (http://host:4317)' });
  if ((c.tls_cert === undefined) !== (c.tls_key === undefined))
    out.push({ path: c.tls_cert === undefined ? 'tls_cert' : 'tls_key', message: 'tls_cert and tls_key go together' });
  if (/^http:/i.test(c.endpoint))
    for (const k of ['tls_ca', 'tls_cert', 'tls_key'] as const)
      if (c[k] !== undefined) out.push({ path: k, message: `${k} is used only with an https:// endpoint (this one is plain http)` });
  if (c.tls_ca !== undefined && c.verify_ssl === false)
    out.push({ path: 'tls_ca', message: 'verify_ssl: false checks no certificate: tls_ca would be ignored; use one or the other' });
  (c.value_fields ?? []).forEach((f, i) => {
    if (f === c.timestamp_field) out.push({ path: `value_fields[${i}]`, message: `'${f}' is also timestamp_field` });
  });
  return out;
}

/** The HTTP URL of a signal: the endpoint with /v1/<signal> when it has no path of its own. */
export function signalUrl(endpoint: string, signal: Signal): URL {
  const u = new URL(endpoint);
  if (u.pathname === '/' || u.pathname === '') u.pathname = SIGNAL_INFO[signal].httpPath;
  return u;
}

const HTTP_RETRYABLE = new Set([429, 502, 503, 504]);
// gRPC: CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS (the OTLP specification).
const GRPC_RETRYABLE = new Set([1, 4, 10, 11, 14, 15]);
const RESOURCE_EXHAUSTED = 8;

/** The TLS files of the config, for an https:// endpoint. */
const tlsFiles = (c: Config): TlsFiles | undefined => (c.tls_ca || c.tls_cert ? { ca: c.tls_ca, cert: c.tls_cert, key: c.tls_key } : undefined);

/** One request's outcome. */
type Sent =
  | { ok: true; rejected: number; message: string; bytes: number }
  | { ok: false; retryable: boolean; message: string; retryAfterMs?: number; cause?: unknown };

interface Transport {
  send(body: Uint8Array, signal: AbortSignal | undefined): Promise<Sent>;
  close(): Promise<void>;
}

function httpTransport(c: Config, sig: Signal): Transport {
  const http = new HttpClient({ verifySsl: c.verify_ssl, timeoutS: c.timeout, tls: tlsFiles(c) });
  const url = signalUrl(c.endpoint, sig);
  const target = describeTarget('POST', url);
  const json = c.protocol === 'http/json';
  const headers: Record<string, string> = {
    ...(c.headers ?? {}),
    'content-type': json ? 'application/json' : 'application/x-protobuf',
    'user-agent': `svc/${version}`,
    ...(c.compression === 'gzip' ? { 'content-encoding': 'gzip' } : {}),
  };
  return {
    async send(body, signal) {
      const wire = c.compression === 'gzip' ? gzipSync(body) : body;
      let res: HttpResponse;
      try {
        res = await http.send({ method: 'POST', url, headers, body: wire, signal }, { maxBodyBytes: 4 * 1024 * 1024 });
      } catch (e) {
        if (e instanceof TlsFilesError) return { ok: false, retryable: false, message: e.message, cause: e };
        return { ok: false, retryable: true, message: networkError(e, target, c.timeout), cause: e };
      }
      const s = res.status;
      if (s >= 200 && s < 300) {
        let partial = { rejected: 0, message: '' };
        try {
          if (res.body.length)
            partial = json
              ? partialOf(sig, JSON.parse(res.body.toString('utf8')) as { partialSuccess?: Record<string, unknown> })
              : partialOfBytes(sig, res.body);
        } catch {
          // An answer that does not decode: the request was taken (2xx); nothing is known of refusals.
        }
        return { ok: true, ...partial, bytes: wire.length };
      }
      const message = `${target} returned ${statusText(s)}: ${statusMessage(res.body, json)}`;
      return { ok: false, retryable: HTTP_RETRYABLE.has(s), message, retryAfterMs: retryAfterMs(res.headers) };
    },
    close: () => http.close(),
  };
}

function partialOfBytes(sig: Signal, body: Buffer) {
  return partialOf(sig, responseType(sig).decode(body) as unknown as { partialSuccess?: Record<string, unknown> });
}

/** The message of an error answer: a google.rpc.Status (protobuf or JSON) when it is one, else an excerpt. */
function statusMessage(body: Buffer, json: boolean): string {
  try {
    if (json) {
      const m = (JSON.parse(body.toString('utf8')) as { message?: unknown }).message;
      if (typeof m === 'string') return m;
    } else {
      const st = requestType('metrics').root.lookupType('google.rpc.Status').decode(body) as unknown as { message?: string };
      if (st.message) return st.message;
    }
  } catch {
    // not a Status
  }
  return excerpt(body, 500);
}

function grpcTransport(c: Config, sig: Signal): Transport {
  let client: GrpcJs.Client | undefined;
  const u = new URL(c.endpoint);
  const address = `${u.hostname.includes(':') ? `[${u.hostname}]` : u.hostname}:${u.port || (u.protocol === 'https:' ? 443 : 4317)}`;
  const path = SIGNAL_INFO[sig].grpcPath;
  return {
    async send(body, signal) {
      const grpc = await grpcModule();
      if (!client) {
        let creds: GrpcJs.ChannelCredentials;
        if (u.protocol === 'https:') {
          let pem;
          try {
            pem = readTlsFiles(tlsFiles(c) ?? {});
          } catch (e) {
            if (e instanceof TlsFilesError) return { ok: false, retryable: false, message: e.message, cause: e };
            throw e;
          }
          creds = serverNameOnlyForHostNames(
            grpc.credentials.createSsl(
              pem.ca ?? null,
              pem.key ?? null,
              pem.cert ?? null,
              c.verify_ssl ? {} : { rejectUnauthorized: false, checkServerIdentity: () => undefined },
            ),
          );
        } else creds = grpc.credentials.createInsecure();
        client = new grpc.Client(address, creds, {
          'grpc.max_receive_message_length': 4 * 1024 * 1024,
          ...(c.compression === 'gzip' ? { 'grpc.default_compression_algorithm': 2 } : {}),
          'grpc.primary_user_agent': `svc/${version}`,
        });
      }
      const md = new grpc.Metadata();
      for (const [k, v] of Object.entries(c.headers ?? {})) md.set(k.toLowerCase(), v);
      const buf = Buffer.from(body.buffer, body.byteOffset, body.length);
      return new Promise<Sent>((resolve) => {
        const call = client!.makeUnaryRequest(
          path,
          (x: Buffer) => x,
          (x: Buffer) => x,
          buf,
          md,
          { deadline: Date.now() + c.timeout * 1000 },
          (err, res) => {
            signal?.removeEventListener('abort', cancel);
            if (!err) {
              let partial = { rejected: 0, message: '' };
              try {
                if (res?.length) partial = partialOfBytes(sig, res);
              } catch {
                // taken; nothing known of refusals
              }
              return resolve({ ok: true, ...partial, bytes: buf.length });
            }
            const delay = retryDelayOf(err.metadata?.get('grpc-status-details-bin')[0] as Buffer | undefined);
            const retryable = GRPC_RETRYABLE.has(err.code) || (err.code === RESOURCE_EXHAUSTED && delay !== undefined);
            resolve({ ok: false, retryable, message: `gRPC ${address}${path}: ${grpc.status[err.code] ?? err.code}: ${err.details}`, retryAfterMs: delay });
          },
        );
        const cancel = () => call.cancel();
        signal?.addEventListener('abort', cancel, { once: true });
      });
    },
    async close() {
      client?.close();
      client = undefined;
    },
  };
}

export default defineSink({
  key: 'otlp',
  summary:
    'Send records as OpenTelemetry metrics, logs or traces (OTLP/gRPC, OTLP/HTTP protobuf or JSON): SNMP counters as monotonic Sums, syslog and traps as LogRecords.',
  accepts: 'records',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a request counts as written once the receiver answered success; what OTLP calls retryable (HTTP 429/502/503/504, gRPC UNAVAILABLE and the rest) and a lost connection are sent again by the runtime, honouring Retry-After and RetryInfo; a data point sent twice has the same time and series.',
  },
  config,
  lint,
  examples: [
    {
      title: 'Interface counters from snmp_poll to a Collector over OTLP/HTTP',
      yaml: 'type: otlp\nendpoint: http://otel-collector:4318\nvalue_fields: [ifHCInOctets, ifHCOutOctets]\nattribute_fields: [ifIndex, ifName]\nresource_attributes:\n  service.name: svc-snmp',
    },
    {
      title: 'Syslog as logs to Grafana Cloud over gRPC with a key',
      yaml: 'type: otlp\nendpoint: https://otlp-gateway.example.net:443\nprotocol: grpc\nsignal: logs\nheaders:\n  authorization: Basic ${OTLP_KEY:-change-me}',
    },
  ],
  // An empty export request: the receiver checks the path and the credentials and stores nothing.
  async test(c, { signal }) {
    const t = c.protocol === 'grpc' ? grpcTransport(c, c.signal ?? 'metrics') : httpTransport(c, c.signal ?? 'metrics');
    try {
      const body = c.protocol === 'http/json' ? Buffer.from('{}') : new Uint8Array(0);
      const r = await t.send(body, signal);
      if (!r.ok) throw new Error(r.message);
    } finally {
      await t.close();
    }
  },
  create(c, ctx) {
    return otlpSink(c, ctx);
  },
});

function otlpSink(c: Config, ctx: PluginContext) {
  const sig = c.signal;
  const transport = c.protocol === 'grpc' ? grpcTransport(c, sig) : httpTransport(c, sig);
  const presence = new PeerPresence(ctx, 'otlp');
  const mapper = new RecordMapper({
    signal: sig,
    nameField: c.name_field,
    valueFields: c.value_fields,
    timestampField: c.timestamp_field,
    attributeFields: c.attribute_fields,
    excludeFields: c.exclude_fields,
    resourceFields: c.resource_fields ?? DEFAULT_RESOURCE_FIELDS,
    resourceAttributes: c.resource_attributes ?? {},
    counterFields: c.counter_fields,
    sumTemporality: c.sum_temporality,
    startTimeField: c.start_time_field,
    typeField: c.type_field,
    unitField: c.unit_field,
    unit: c.unit,
    bodyField: c.body_field,
    scopeName: c.scope_name,
    scopeVersion: version,
  });
  const type = requestType(sig);
  const encode = (mapped: Mapped[]): Uint8Array => {
    // The request is built in the form protobufjs' encode() writes as it is (encode.ts): no
    // fromObject, whose Message objects and decimal 64-bit conversions cost more than the encoding.
    // Gauges and Sums (all a poll or a PM file makes) are written straight into a Writer, without
    // even that request (write-metrics.ts); the same bytes.
    if (sig === 'metrics' && c.protocol !== 'http/json' && onlyNumberPoints(mapped)) return writeMetricsRequest(mapped);
    const request = buildRequest(sig, mapped);
    if (c.protocol !== 'http/json') return type.encode(request).finish();
    const msg = type.fromObject(request);
    return Buffer.from(JSON.stringify(toOtlpJson(type.toObject(msg, { longs: String, enums: Number, bytes: String, defaults: false }))));
  };
  return {
    async write(batch: { records?: Record<string, unknown>[] }): Promise<WriteResult | void> {
      const records = batch.records ?? [];
      const rejected: { index: number; reason: string }[] = [];
      const now = Date.now();
      let next = 0; // the first record not yet mapped
      // The next request: the records that follow, mapped (the refused ones noted) up to
      // max_records_per_request, and encoded. The mapped points are garbage once encoded: not held
      // through the exchange, where a scavenge would copy them. A plain loop, not a closure per
      // record: with records.forEach the scavenges of the bench's leg (otlp-export,
      // docs/benchmarks.md) promoted about 15 times more bytes to old space.
      const take = (): { body: Uint8Array; index: number[] } | undefined => {
        const mapped: Mapped[] = [];
        const index: number[] = [];
        for (; next < records.length && index.length < c.max_records_per_request; next++) {
          const m = mapper.map(records[next]!, now);
          if ('refused' in m) rejected.push({ index: next, reason: `otlp: ${m.refused}` });
          else {
            mapped.push(m);
            index.push(next);
          }
        }
        return index.length ? { body: encode(mapped), index } : undefined;
      };
      let bytes = 0;
      let first = true;
      for (let req = take(); req; first = false) {
        presence.connecting();
        const sending = transport.send(req.body, ctx.signal);
        sending.catch(() => undefined); // awaited below; not an unhandled rejection meanwhile
        // The next request is mapped and encoded while this one is on the wire and the receiver
        // decodes it; it is sent once this one is answered (in order, one at a time). Both HTTP
        // clients write a request on a later turn of the event loop (undici on a kept-alive
        // socket: in a setImmediate), so the encoding waits two turns not to delay that write.
        let following: ReturnType<typeof take> = undefined;
        if (next < records.length) {
          await afterTwoTurns();
          following = take();
        }
        const r = await sending;
        if (r.ok) {
          presence.answered();
          bytes += r.bytes;
          if (r.rejected > 0) {
            // The receiver refused some points and does not say which (OTLP's partial success): the
            // request's records go to the DLQ with its message; resending them is not allowed.
            const what = sig === 'metrics' ? 'data points' : sig === 'logs' ? 'log records' : 'spans';
            const reason = `otlp: the receiver refused ${r.rejected} ${what} of a request of ${req.index.length} records (it does not say which): ${r.message || '(no message)'}`;
            ctx.log.warn(
              { rejected: r.rejected, records: req.index.length, message: r.message },
              "otlp: partial success: the request's records are dead-lettered",
            );
            for (const index of req.index) rejected.push({ index, reason });
          }
        } else {
          const message = `otlp: ${r.message}`;
          if (r.retryable) {
            presence.lost(message);
            // This request, the one encoded behind it and the records not yet mapped are sent again.
            const later = [...req.index, ...(following?.index ?? [])];
            for (let i = next; i < records.length; i++) later.push(i);
            if (first && rejected.length === 0) throw new WriteError(message, true, { cause: r.cause, retryAfterMs: r.retryAfterMs });
            return { rejected, retry: later.map((index) => ({ index, reason: message })), retryAfterMs: r.retryAfterMs, bytes };
          }
          presence.answered();
          // Not retryable (400, 401, 404, INVALID_ARGUMENT...): sending the same request again cannot help.
          for (const index of req.index) rejected.push({ index, reason: message });
        }
        req = following;
      }
      return { rejected, bytes };
    },
    close: () => transport.close(),
  };
}

/** Resolves two turns of the event loop later (after the setImmediate callbacks queued meanwhile). */
const afterTwoTurns = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));

/** protobufjs' JSON form as OTLP/JSON: ids as hex (not base64). */
function toOtlpJson(v: unknown, key = ''): unknown {
  if (Array.isArray(v)) return v.map((x) => toOtlpJson(x, key));
  if (typeof v === 'object' && v !== null) {
    const o: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) o[k] = toOtlpJson(x, k);
    return o;
  }
  if (typeof v === 'string' && (key === 'traceId' || key === 'spanId' || key === 'parentSpanId')) return Buffer.from(v, 'base64').toString('hex');
  return v;
}
