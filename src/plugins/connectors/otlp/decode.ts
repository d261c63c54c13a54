// OTLP export requests to svc records, the inverse of the sink's mapping (docs/opentelemetry.md):
// one record per log record, data point or span, with its resource's and scope's attributes either
// flattened into it (`resource.<key>`, `scope.name`, `scope.version`, `scope.attributes.<key>`,
// the record's own attributes as top-level fields) or nested (`resource`, `scope`, `attributes`).
// Bodies come here only after walk.ts passed them, so protobufjs decodes within its bounds.
import { gunzipSync } from 'node:zlib';
import type Long from 'long';
import { OtlpDecodeError, MAX_DEPTH } from './walk.js';
import { requestType, type Signal } from './proto.js';
import type { Rec } from '../../types.js';

export type Layout = 'flat' | 'nested';

type L = Long | number | string | null | undefined;
interface KV {
  key?: string;
  value?: AnyV;
}
interface AnyV {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: L;
  doubleValue?: number;
  arrayValue?: { values?: AnyV[] };
  kvlistValue?: { values?: KV[] };
  bytesValue?: Uint8Array;
}
interface Scope {
  name?: string;
  version?: string;
  attributes?: KV[];
}
interface Resource {
  attributes?: KV[];
}

/** Fields of a record of each signal: an attribute of the same name is written `attributes.<key>` in the flat layout. */
export const RESERVED: Record<Signal, Set<string>> = {
  metrics: new Set([
    'signal',
    'name',
    'description',
    'unit',
    'type',
    'temporality',
    'monotonic',
    'value',
    'timestamp',
    'time_unix_nano',
    'start_time_unix_nano',
    'flags',
    'count',
    'sum',
    'min',
    'max',
    'bucket_counts',
    'explicit_bounds',
    'scale',
    'zero_count',
    'zero_threshold',
    'positive',
    'negative',
    'quantile_values',
  ]),
  logs: new Set([
    'signal',
    'timestamp',
    'time_unix_nano',
    'observed_time_unix_nano',
    'severity_number',
    'severity_text',
    'body',
    'trace_id',
    'span_id',
    'flags',
    'event_name',
  ]),
  traces: new Set([
    'signal',
    'name',
    'timestamp',
    'trace_id',
    'span_id',
    'parent_span_id',
    'trace_state',
    'kind',
    'start_time_unix_nano',
    'end_time_unix_nano',
    'status_code',
    'status_message',
    'events',
    'links',
    'flags',
  ]),
};

const KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];
const STATUS = ['unset', 'ok', 'error'];
const TEMPORALITY = ['unspecified', 'delta', 'cumulative'];

/** An int64 as a number when exact, else its decimal text. */
function int(v: L): number | string {
  if (v === null || v === undefined) return 0;
  if (typeof v === 'number') return v;
  if (typeof v === 'string') return Number.isSafeInteger(Number(v)) ? Number(v) : v;
  const n = v.toNumber();
  return Number.isSafeInteger(n) ? n : v.toString();
}
const isZero = (v: L) => v === null || v === undefined || v === 0 || v === '0' || (typeof v === 'object' && v.isZero());

/**
 * The last time converted, kept for the next: the points of a request mostly share their times
 * (one collection), and a Long's decimal text and a Date's ISO text cost more than the rest of a
 * point. Keyed by the Long's two words (or the number or text as it came).
 */
class LastTime<T> {
  private low = NaN;
  private high = NaN;
  private value!: T;
  constructor(private readonly convert: (v: L) => T) {}
  get(v: L): T {
    const low = typeof v === 'object' && v !== null ? v.low : v;
    const high = typeof v === 'object' && v !== null ? v.high : typeof v;
    if (low !== this.low || high !== this.high) {
      this.value = this.convert(v);
      this.low = low as number;
      this.high = high as number;
    }
    return this.value;
  }
}
/**
 * Text V8 holds flat. Long's toString and protobufjs' string reader build text with `+=`: past a
 * dozen characters a rope, which JSON.stringify walks again for every record that holds it. A
 * time or a metric's or resource's text is shared by many records (every point of a metric): a
 * rope there cost about twice the writing of the rest of the record (bench otlp-ingest). Copied
 * once, it is flat. (A point's own attribute values are written once each: left as they are.)
 */
const flat = (s: string) => Buffer.from(s, 'utf8').toString('utf8');
const flatValue = (v: unknown) => (typeof v === 'string' ? flat(v) : v);
/** A fixed64 nanosecond time as decimal text ('0' when unset). */
const nanosText = new LastTime((v) => (v === null || v === undefined ? '0' : typeof v === 'object' ? flat(v.toString()) : String(v)));
const nanos = (v: L): string => nanosText.get(v);
/** ISO 8601 (ms) of a nanosecond time; undefined for 0. */
const isoText = new LastTime((v): string | undefined => {
  if (isZero(v)) return undefined;
  const n = typeof v === 'object' ? v!.toNumber() : Number(v);
  const d = new Date(Math.floor(n / 1e6));
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
});
const iso = (v: L): string | undefined => isoText.get(v);
const hex = (b: Uint8Array | undefined) => (b && b.length ? Buffer.from(b.buffer, b.byteOffset, b.length).toString('hex') : undefined);

/**
 * Whether a decoded message has `k` set: protobufjs puts every field's default on the prototype,
 * so the members of a oneof (and proto3 optional fields) are told apart by own properties.
 */
const has = (o: object, k: string) => Object.prototype.hasOwnProperty.call(o, k);

/** An AnyValue as JSON: text, boolean, number (an int64 beyond 2^53 as text), base64 bytes, array, object. */
export function anyValue(v: AnyV | undefined): unknown {
  if (!v) return null;
  if (has(v, 'stringValue')) return v.stringValue;
  if (has(v, 'boolValue')) return v.boolValue;
  if (has(v, 'intValue')) return int(v.intValue);
  if (has(v, 'doubleValue')) return v.doubleValue;
  if (has(v, 'arrayValue')) return (v.arrayValue?.values ?? []).map(anyValue);
  if (has(v, 'kvlistValue')) return attrs(v.kvlistValue?.values);
  if (has(v, 'bytesValue')) return Buffer.from(v.bytesValue ?? []).toString('base64');
  return null;
}

function attrs(kvs: KV[] | undefined): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  if (kvs) for (const kv of kvs) if (kv.key !== undefined) o[kv.key] = anyValue(kv.value);
  return o;
}

/** The fields a resource and a scope add to each of their records. */
function context(resource: Resource | undefined, scope: Scope | undefined, layout: Layout): Rec {
  const out: Rec = {};
  if (layout === 'nested') {
    out.resource = attrs(resource?.attributes);
    const sc: Rec = {};
    if (scope?.name) sc.name = scope.name;
    if (scope?.version) sc.version = scope.version;
    if (scope?.attributes?.length) sc.attributes = attrs(scope.attributes);
    out.scope = sc;
    return out;
  }
  for (const kv of resource?.attributes ?? []) if (kv.key !== undefined) out[`resource.${kv.key}`] = flatValue(anyValue(kv.value));
  if (scope?.name) out['scope.name'] = flat(scope.name);
  if (scope?.version) out['scope.version'] = flat(scope.version);
  for (const kv of scope?.attributes ?? []) if (kv.key !== undefined) out[`scope.attributes.${kv.key}`] = flatValue(anyValue(kv.value));
  return out;
}

/** A record's own attributes: top-level fields (flat; `attributes.<key>` where the name is taken) or `attributes` (nested). */
function addAttributes(r: Rec, kvs: KV[] | undefined, reserved: Set<string>, layout: Layout) {
  if (layout === 'nested') {
    r.attributes = attrs(kvs);
    return;
  }
  if (!kvs) return;
  for (const kv of kvs) {
    const k = kv.key;
    if (k === undefined) continue;
    const taken = reserved.has(k) || k.startsWith('resource.') || k.startsWith('scope.') || k.startsWith('attributes.');
    r[taken ? `attributes.${k}` : k] = anyValue(kv.value);
  }
}

/** Decompresses a body by its Content-Encoding (gzip or none), at most `max` bytes out. */
export function inflate(body: Buffer, encoding: string | undefined, max: number): Buffer {
  const e = (encoding ?? '').trim().toLowerCase();
  if (e === '' || e === 'identity') return body;
  if (e !== 'gzip') throw new OtlpDecodeError(`Content-Encoding ${e} is not supported (gzip or none)`);
  try {
    return gunzipSync(body, { maxOutputLength: max });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw new OtlpDecodeError(`the body inflates past ${max} bytes (max_body_bytes)`);
    throw new OtlpDecodeError(`the gzip body does not inflate: ${(err as Error).message}`);
  }
}

/** Deepest JSON nesting taken: two levels (an object and an array) per message. */
const MAX_JSON_DEPTH = 2 * MAX_DEPTH;

function checkDepth(v: unknown) {
  // Iterative: a body of a hundred thousand nested arrays must not take the stack.
  const stack: [unknown, number][] = [[v, 1]];
  while (stack.length) {
    const [x, d] = stack.pop()!;
    if (typeof x !== 'object' || x === null) continue;
    if (d > MAX_JSON_DEPTH) throw new OtlpDecodeError(`JSON nested deeper than ${MAX_JSON_DEPTH}`);
    for (const y of Array.isArray(x) ? x : Object.values(x)) if (typeof y === 'object' && y !== null) stack.push([y, d + 1]);
  }
}

const ID_KEYS = new Set(['traceId', 'spanId', 'parentSpanId']);

/** OTLP/JSON ids are hex (not proto3 JSON's base64): turned into bytes before protobufjs reads the object. */
function hexIds(v: unknown) {
  const stack: unknown[] = [v];
  while (stack.length) {
    const x = stack.pop();
    if (typeof x !== 'object' || x === null) continue;
    if (Array.isArray(x)) {
      for (const y of x) stack.push(y);
      continue;
    }
    const o = x as Record<string, unknown>;
    for (const k of Object.keys(o)) {
      const y = o[k];
      if (ID_KEYS.has(k) && typeof y === 'string') {
        if (!/^([0-9a-fA-F]{2})*$/.test(y)) throw new OtlpDecodeError(`${k} '${y.slice(0, 40)}' is not hex`);
        o[k] = Buffer.from(y, 'hex');
      } else if (typeof y === 'object' && y !== null && k !== 'body' && k !== 'value') stack.push(y);
    }
  }
}

/** An OTLP/JSON request as the protobuf bytes of the same request (what the spool holds). */
export function jsonToProtobuf(signal: Signal, body: Buffer): Buffer {
  let v: unknown;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch (e) {
    throw new OtlpDecodeError(`the body is not JSON: ${(e as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new OtlpDecodeError('the body is not a JSON object');
  checkDepth(v);
  hexIds(v);
  const t = requestType(signal);
  try {
    return Buffer.from(t.encode(t.fromObject(v as Record<string, unknown>)).finish());
  } catch (e) {
    throw new OtlpDecodeError(`the JSON is not an OTLP ${signal} request: ${(e as Error).message}`);
  }
}

export interface DecodeOptions {
  layout: Layout;
}

/** The records of an export request (protobuf, already walked), handed to `emit` one by one. */
export function decodeRequest(signal: Signal, buf: Uint8Array, o: DecodeOptions, emit: (r: Rec) => void): void {
  const msg = requestType(signal).decode(buf) as unknown as Record<string, unknown>;
  if (signal === 'metrics') metrics(msg, o, emit);
  else if (signal === 'logs') logs(msg, o, emit);
  else traces(msg, o, emit);
}

interface Point {
  attributes?: KV[];
  startTimeUnixNano?: L;
  timeUnixNano?: L;
  asDouble?: number | null;
  asInt?: L;
  flags?: number;
  count?: L;
  sum?: number | null;
  min?: number | null;
  max?: number | null;
  bucketCounts?: L[];
  explicitBounds?: number[];
  scale?: number;
  zeroCount?: L;
  zeroThreshold?: number;
  positive?: { offset?: number; bucketCounts?: L[] };
  negative?: { offset?: number; bucketCounts?: L[] };
  quantileValues?: { quantile?: number; value?: number }[];
}
interface MetricMsg {
  name?: string;
  description?: string;
  unit?: string;
  gauge?: { dataPoints?: Point[] };
  sum?: { dataPoints?: Point[]; aggregationTemporality?: number; isMonotonic?: boolean };
  histogram?: { dataPoints?: Point[]; aggregationTemporality?: number };
  exponentialHistogram?: { dataPoints?: Point[]; aggregationTemporality?: number };
  summary?: { dataPoints?: Point[] };
}

function metrics(msg: Record<string, unknown>, o: DecodeOptions, emit: (r: Rec) => void) {
  const reserved = RESERVED.metrics;
  for (const rm of (msg.resourceMetrics as { resource?: Resource; scopeMetrics?: { scope?: Scope; metrics?: MetricMsg[] }[] }[]) ?? []) {
    for (const sm of rm.scopeMetrics ?? []) {
      const ctx = context(rm.resource, sm.scope, o.layout);
      for (const m of sm.metrics ?? []) {
        if (!m.name) continue; // refused (walk.ts): reported in the partial success
        const head: Rec = { signal: 'metrics', name: flat(m.name) };
        if (m.description) head.description = flat(m.description);
        if (m.unit) head.unit = flat(m.unit);
        let points: Point[] = [];
        if (m.gauge) {
          head.type = 'gauge';
          points = m.gauge.dataPoints ?? [];
        } else if (m.sum) {
          head.type = 'sum';
          head.temporality = TEMPORALITY[m.sum.aggregationTemporality ?? 0] ?? 'unspecified';
          head.monotonic = m.sum.isMonotonic === true;
          points = m.sum.dataPoints ?? [];
        } else if (m.histogram) {
          head.type = 'histogram';
          head.temporality = TEMPORALITY[m.histogram.aggregationTemporality ?? 0] ?? 'unspecified';
          points = m.histogram.dataPoints ?? [];
        } else if (m.exponentialHistogram) {
          head.type = 'exponential_histogram';
          head.temporality = TEMPORALITY[m.exponentialHistogram.aggregationTemporality ?? 0] ?? 'unspecified';
          points = m.exponentialHistogram.dataPoints ?? [];
        } else if (m.summary) {
          head.type = 'summary';
          points = m.summary.dataPoints ?? [];
        }
        for (const p of points) {
          const r: Rec = { ...head };
          const ts = iso(p.timeUnixNano);
          if (ts !== undefined) r.timestamp = ts;
          r.time_unix_nano = nanos(p.timeUnixNano);
          if (!isZero(p.startTimeUnixNano)) r.start_time_unix_nano = nanos(p.startTimeUnixNano);
          if (p.flags) r.flags = p.flags;
          switch (head.type) {
            case 'gauge':
            case 'sum':
              r.value = has(p, 'asDouble') ? p.asDouble : has(p, 'asInt') ? int(p.asInt) : null;
              break;
            case 'histogram':
              r.count = int(p.count);
              if (has(p, 'sum')) r.sum = p.sum;
              if (has(p, 'min')) r.min = p.min;
              if (has(p, 'max')) r.max = p.max;
              r.bucket_counts = (p.bucketCounts ?? []).map(int);
              r.explicit_bounds = p.explicitBounds ?? [];
              break;
            case 'exponential_histogram':
              r.count = int(p.count);
              if (has(p, 'sum')) r.sum = p.sum;
              if (has(p, 'min')) r.min = p.min;
              if (has(p, 'max')) r.max = p.max;
              r.scale = p.scale ?? 0;
              r.zero_count = int(p.zeroCount);
              if (p.zeroThreshold) r.zero_threshold = p.zeroThreshold;
              r.positive = { offset: p.positive?.offset ?? 0, bucket_counts: (p.positive?.bucketCounts ?? []).map(int) };
              r.negative = { offset: p.negative?.offset ?? 0, bucket_counts: (p.negative?.bucketCounts ?? []).map(int) };
              break;
            case 'summary':
              r.count = int(p.count);
              r.sum = p.sum ?? 0;
              r.quantile_values = (p.quantileValues ?? []).map((q) => ({ quantile: q.quantile ?? 0, value: q.value ?? 0 }));
              break;
          }
          addAttributes(r, p.attributes, reserved, o.layout);
          emit(Object.assign(r, ctx));
        }
      }
    }
  }
}

interface LogMsg {
  timeUnixNano?: L;
  observedTimeUnixNano?: L;
  severityNumber?: number;
  severityText?: string;
  body?: AnyV;
  attributes?: KV[];
  flags?: number;
  traceId?: Uint8Array;
  spanId?: Uint8Array;
  eventName?: string;
}

const idOk = (b: Uint8Array | undefined, len: number, optional: boolean) => (b?.length ?? 0) === len || (optional && (b?.length ?? 0) === 0);

function logs(msg: Record<string, unknown>, o: DecodeOptions, emit: (r: Rec) => void) {
  const reserved = RESERVED.logs;
  for (const rl of (msg.resourceLogs as { resource?: Resource; scopeLogs?: { scope?: Scope; logRecords?: LogMsg[] }[] }[]) ?? []) {
    for (const sl of rl.scopeLogs ?? []) {
      const ctx = context(rl.resource, sl.scope, o.layout);
      for (const l of sl.logRecords ?? []) {
        if (!idOk(l.traceId, 16, true) || !idOk(l.spanId, 8, true)) continue; // refused (walk.ts)
        const r: Rec = { signal: 'logs' };
        const ts = iso(l.timeUnixNano) ?? iso(l.observedTimeUnixNano);
        if (ts !== undefined) r.timestamp = ts;
        if (!isZero(l.timeUnixNano)) r.time_unix_nano = nanos(l.timeUnixNano);
        if (!isZero(l.observedTimeUnixNano)) r.observed_time_unix_nano = nanos(l.observedTimeUnixNano);
        if (l.severityNumber) r.severity_number = l.severityNumber;
        if (l.severityText) r.severity_text = l.severityText;
        if (l.body) r.body = anyValue(l.body);
        const t = hex(l.traceId);
        if (t) r.trace_id = t;
        const s = hex(l.spanId);
        if (s) r.span_id = s;
        if (l.flags) r.flags = l.flags;
        if (l.eventName) r.event_name = l.eventName;
        addAttributes(r, l.attributes, reserved, o.layout);
        emit(Object.assign(r, ctx));
      }
    }
  }
}

interface SpanMsg {
  traceId?: Uint8Array;
  spanId?: Uint8Array;
  parentSpanId?: Uint8Array;
  traceState?: string;
  flags?: number;
  name?: string;
  kind?: number;
  startTimeUnixNano?: L;
  endTimeUnixNano?: L;
  attributes?: KV[];
  events?: { timeUnixNano?: L; name?: string; attributes?: KV[] }[];
  links?: { traceId?: Uint8Array; spanId?: Uint8Array; traceState?: string; attributes?: KV[]; flags?: number }[];
  status?: { message?: string; code?: number };
}

function traces(msg: Record<string, unknown>, o: DecodeOptions, emit: (r: Rec) => void) {
  const reserved = RESERVED.traces;
  for (const rs of (msg.resourceSpans as { resource?: Resource; scopeSpans?: { scope?: Scope; spans?: SpanMsg[] }[] }[]) ?? []) {
    for (const ss of rs.scopeSpans ?? []) {
      const ctx = context(rs.resource, ss.scope, o.layout);
      for (const s of ss.spans ?? []) {
        if (!idOk(s.traceId, 16, false) || !idOk(s.spanId, 8, false) || !idOk(s.parentSpanId, 8, true)) continue; // refused (walk.ts)
        const r: Rec = { signal: 'traces', name: s.name ?? '' };
        const ts = iso(s.startTimeUnixNano);
        if (ts !== undefined) r.timestamp = ts;
        r.trace_id = hex(s.traceId)!;
        r.span_id = hex(s.spanId)!;
        const parent = hex(s.parentSpanId);
        if (parent) r.parent_span_id = parent;
        if (s.traceState) r.trace_state = s.traceState;
        r.kind = KINDS[s.kind ?? 0] ?? String(s.kind);
        r.start_time_unix_nano = nanos(s.startTimeUnixNano);
        r.end_time_unix_nano = nanos(s.endTimeUnixNano);
        r.status_code = STATUS[s.status?.code ?? 0] ?? String(s.status?.code);
        if (s.status?.message) r.status_message = s.status.message;
        if (s.flags) r.flags = s.flags;
        if (s.events?.length) r.events = s.events.map((e) => ({ time_unix_nano: nanos(e.timeUnixNano), name: e.name ?? '', attributes: attrs(e.attributes) }));
        if (s.links?.length)
          r.links = s.links.map((k) => ({
            trace_id: hex(k.traceId) ?? '',
            span_id: hex(k.spanId) ?? '',
            ...(k.traceState ? { trace_state: k.traceState } : {}),
            attributes: attrs(k.attributes),
          }));
        addAttributes(r, s.attributes, reserved, o.layout);
        emit(Object.assign(r, ctx));
      }
    }
  }
}
