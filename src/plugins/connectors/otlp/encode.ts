// svc records to OTLP export requests, the sink's half of the mapping in docs/opentelemetry.md (the
// source's half, decode.ts, is its inverse: a record that came from the otlp source goes out as the
// same log record, data point or span). Each record is mapped alone (mapRecord): refused ones are
// dead-lettered with the reason; the rest are grouped by resource and scope into one request, in
// protobufjs' object form, ready for its encode() as it is (no fromObject): 64-bit integers are
// numbers when safe and otherwise two 32-bit words (bits64.ts), which protobufjs writes as they are.
import { NOT_A_TIME, timeParser } from '../../common/time.js';
import type { Rec } from '../../types.js';
import { RESERVED } from './decode.js';
import type { Signal } from './proto.js';
import { bitsToNumber, int64FromBigInt, int64FromSafe, isZero, nanosFromMs, uint64FromDecimal, type Bits64 } from './bits64.js';

export interface MapOptions {
  signal: Signal;
  nameField: string;
  valueFields: string[];
  timestampField: string;
  /** Only these fields become attributes (undefined: every other field). */
  attributeFields?: string[];
  excludeFields: string[];
  /** Record field to resource attribute (sysName: host.name). */
  resourceFields: Record<string, string>;
  resourceAttributes: Record<string, string>;
  /** `*`: every value field is a counter. */
  counterFields: string[];
  /** Temporality of Sums not told otherwise (a record's `temporality`). */
  sumTemporality: 'cumulative' | 'delta';
  /** Record field with the start of a point's interval (a PM file's begin_time). */
  startTimeField?: string;
  typeField: string;
  unitField: string;
  unit?: string;
  bodyField: string;
  scopeName: string;
  scopeVersion: string;
}

type AnyV = Record<string, unknown>;
type KV = { key: string; value: AnyV };

/** One mapped record: its resource and scope (as keys and attribute lists) and what it adds. */
export interface Mapped {
  resourceKey: string;
  resource: KV[];
  scopeKey: string;
  scope: { name: string; version: string; attributes: KV[] };
  /** Metrics: one point per value field, each with its metric's identity. */
  metrics?: {
    key: string;
    metric: Record<string, unknown>;
    kind: 'gauge' | 'sum' | 'histogram' | 'exponentialHistogram' | 'summary';
    point: Record<string, unknown>;
  }[];
  log?: Record<string, unknown>;
  span?: Record<string, unknown>;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

/** A JSON value as an AnyValue (depth-bounded: deeper values become their JSON text). */
export function toAnyValue(v: unknown, depth = 0): AnyV {
  if (v === null || v === undefined) return {};
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'number') return Number.isSafeInteger(v) ? { intValue: v } : { doubleValue: v };
  if (typeof v === 'bigint') return v >= INT64_MIN && v <= INT64_MAX ? { intValue: v.toString() } : { stringValue: v.toString() };
  if (depth >= 16) return { stringValue: JSON.stringify(v) };
  if (Array.isArray(v)) return { arrayValue: { values: v.map((x) => toAnyValue(x, depth + 1)) } };
  if (isObj(v)) return { kvlistValue: { values: Object.entries(v).map(([key, x]) => ({ key, value: toAnyValue(x, depth + 1) })) } };
  return { stringValue: String(v) };
}

/**
 * A data point value: an integer (int64, exact from text or bigint) as asInt (a number when safe,
 * else 64-bit words), any other number as asDouble; undefined when absent, null when not a number.
 */
export function pointValue(v: unknown): { asInt: number | Bits64 } | { asDouble: number } | null | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number') return Number.isSafeInteger(v) ? { asInt: v } : { asDouble: v };
  if (typeof v === 'bigint') return v >= INT64_MIN && v <= INT64_MAX ? { asInt: int64FromBigInt(v) } : { asDouble: Number(v) };
  if (typeof v === 'boolean') return { asInt: v ? 1 : 0 };
  if (typeof v === 'string') {
    const t = v.trim();
    if (/^-?\d+$/.test(t)) {
      const n = Number(t);
      if (Number.isSafeInteger(n)) return { asInt: n };
      const b = BigInt(t);
      return b >= INT64_MIN && b <= INT64_MAX ? { asInt: int64FromBigInt(b) } : { asDouble: n };
    }
    if (/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t)) return { asDouble: Number(t) };
    if (t === 'NaN') return { asDouble: NaN };
    if (t === '+Inf' || t === 'Inf' || t === 'Infinity') return { asDouble: Infinity };
    if (t === '-Inf' || t === '-Infinity') return { asDouble: -Infinity };
  }
  return null;
}

/** What a type name says of a value field: a counter (Sum) or a gauge; undefined when it says nothing. */
function kindOf(t: unknown): 'sum' | 'gauge' | undefined {
  if (typeof t !== 'string') return undefined;
  const l = t.toLowerCase();
  if (l === 'counter32' || l === 'counter64' || l === 'counter' || l === 'sum') return 'sum';
  if (l === 'gauge32' || l === 'gauge' || l === 'timeticks' || l === 'integer' || l === 'integer32' || l === 'unsigned32') return 'gauge';
  return undefined;
}

const SYSLOG_SEVERITY = [21, 19, 18, 17, 13, 10, 9, 5]; // emerg alert crit err warning notice info debug
const SEVERITY_TEXT = ['EMERGENCY', 'ALERT', 'CRITICAL', 'ERROR', 'WARNING', 'NOTICE', 'INFO', 'DEBUG'];
const SEVERITY_NAMES: Record<string, number> = {
  emerg: 0,
  emergency: 0,
  panic: 0,
  alert: 1,
  crit: 2,
  critical: 2,
  err: 3,
  error: 3,
  warning: 4,
  warn: 4,
  notice: 5,
  info: 6,
  informational: 6,
  debug: 7,
};
const KINDS: Record<string, number> = { unspecified: 0, internal: 1, server: 2, client: 3, producer: 4, consumer: 5 };
const STATUS: Record<string, number> = { unset: 0, ok: 1, error: 2 };
const TEMPORALITY: Record<string, number> = { unspecified: 0, delta: 1, cumulative: 2 };

/** Nanoseconds since the epoch from decimal text or a safe integer (what the otlp source writes); 0 counts as absent. */
const nanosOf = (v: unknown): Bits64 | undefined => {
  const b = typeof v === 'string' ? uint64FromDecimal(v) : typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? int64FromSafe(v) : undefined;
  return b && !isZero(b) ? b : undefined;
};
const msToNanos = nanosFromMs;
const NO_TIME: Bits64 = { low: 0, high: 0 };

/** A point value as a number (a reset is a value lower than the last). */
const numberOf = (v: { asInt: number | Bits64 } | { asDouble: number }) =>
  'asDouble' in v ? v.asDouble : typeof v.asInt === 'number' ? v.asInt : bitsToNumber(v.asInt, true);

/** Entries of each of the mapper's caches (contexts, metric identities): emptied when full, so memory stays bounded whatever the records hold. */
const MAPPER_CACHE_MAX = 10_000;

type Context = Pick<Mapped, 'resourceKey' | 'resource' | 'scopeKey' | 'scope'>;
type MetricIdentity = {
  kind: 'sum' | 'gauge';
  unit: string;
  temporality: number;
  monotonic: boolean;
  description: string;
  key: string;
  metric: Record<string, unknown>;
};

export class RecordMapper {
  private readonly parseTime = timeParser({});
  private readonly skip: Set<string>;
  /** Cumulative sums: per series, the start time and the last value (a decrease is a reset: a new start). */
  private readonly starts = new Map<string, { start: Bits64; last: number }>();
  private readonly done = new WeakMap<Rec, Mapped | { refused: string }>();
  resets = 0;

  constructor(
    private readonly o: MapOptions,
    private readonly maxSeries = 1_000_000,
  ) {
    this.resourceFieldNames = Object.keys(o.resourceFields);
    this.wildcard = o.valueFields.includes('*');
    this.allCounters = o.counterFields.includes('*');
    this.skip = new Set([
      ...o.valueFields,
      ...(o.startTimeField ? [o.startTimeField] : []),
      o.timestampField,
      o.nameField,
      o.typeField,
      o.unitField,
      o.bodyField,
      ...o.excludeFields,
      ...Object.keys(o.resourceFields),
      ...RESERVED[o.signal],
    ]);
  }

  private readonly wildcard: boolean;
  private readonly allCounters: boolean;

  /**
   * The value fields of a record: those named, or with `*` every field holding a number (not
   * numeric text: identifiers such as a PM job id stay text) that is no attribute, resource, time, name or type field (a PM record's counters,
   * named from their measType).
   */
  private valueFieldsOf(r: Rec): string[] {
    if (!this.wildcard) return this.o.valueFields;
    const attrs = this.o.attributeFields ? new Set(this.o.attributeFields) : undefined;
    const out: string[] = [];
    for (const k of Object.keys(r)) {
      if (k === '*' || k.charCodeAt(0) === 95 || this.skip.has(k) || attrs?.has(k) || k.startsWith('resource.') || k.startsWith('scope.')) continue;
      const v = r[k];
      if (typeof v === 'number' || typeof v === 'bigint') out.push(k);
    }
    return out;
  }

  /** Whether the record being mapped took something from the mapper's state or the clock (its mapping is kept). */
  private remember = false;

  /**
   * A record's mapping; the same object for the same record when the runtime writes its batch again
   * and the mapping took a series' start (the reset state moved on) or the current time. Other
   * mappings follow from the record alone and are not kept: a WeakMap entry per record (each an
   * ephemeron the garbage collector has to trace) cost more than mapping it again.
   */
  map(r: Rec, nowMs: number): Mapped | { refused: string } {
    const known = this.done.get(r);
    if (known) return known;
    this.remember = false;
    const m = this.build(r, nowMs);
    if (this.remember) this.done.set(r, m);
    return m;
  }

  /** The current time as nanoseconds, for a record that has none (its mapping is kept: see map). */
  private nowNanos(nowMs: number): Bits64 {
    this.remember = true;
    return msToNanos(nowMs);
  }

  private timeNanos(r: Rec, field: string, nowMs: number): Bits64 | { refused: string } {
    const exact = nanosOf(r[field === 'timestamp' ? 'time_unix_nano' : `${field}_unix_nano`]);
    if (exact) return exact;
    const t = r[field];
    if (t === undefined || t === null) return this.nowNanos(nowMs);
    const ms = this.parseTime(t);
    if (ms === NOT_A_TIME) return { refused: `field '${field}' is not a time: ${JSON.stringify(t).slice(0, 60)}` };
    // The records of one poll share their time: its nanoseconds made once (nothing changes them).
    if (ms !== this.lastMs) {
      this.lastMs = ms;
      this.lastNanos = msToNanos(ms);
    }
    return this.lastNanos;
  }

  /** The last time timeNanos converted, in milliseconds, and its nanoseconds. */
  private lastMs = NaN;
  private lastNanos: Bits64 = NO_TIME;

  /** Contexts of records that carry no resource or scope of their own, by their resource fields' values (bounded). */
  private readonly plainContexts = new Map<string, Context>();
  private readonly resourceFieldNames: string[];

  /**
   * The resource and scope of a record. Most records carry none of their own (no `resource` or
   * `scope`, no `resource.*` or `scope.*` field): theirs follows from the values of the resource
   * fields alone, built once per distinct set of values.
   */
  private context(r: Rec): Context {
    if (isObj(r.resource) || isObj(r.scope)) return this.fullContext(r);
    for (const k in r) {
      const c = k.charCodeAt(0);
      if ((c === 114 && k.startsWith('resource.')) || (c === 115 && k.startsWith('scope.'))) return this.fullContext(r);
    }
    // Records come in runs from one device: the same resource field values as the record before
    // (scalars, compared as they are) give its context without building a key.
    const names = this.resourceFieldNames;
    const last = this.lastValues;
    let same = this.lastContext !== undefined;
    for (let i = 0; same && i < names.length; i++) {
      const v = r[names[i]!];
      same = v === last[i] && (typeof v !== 'object' || v === null);
    }
    if (same) return this.lastContext!;
    // JSON text of each value: no delimiter can occur inside one (control characters are escaped).
    let key = '';
    for (const f of names) key += `${JSON.stringify(r[f]) ?? ''}\u0001`;
    let ctx = this.plainContexts.get(key);
    if (!ctx) {
      if (this.plainContexts.size >= MAPPER_CACHE_MAX) this.plainContexts.clear();
      ctx = this.fullContext(r);
      this.plainContexts.set(key, ctx);
    }
    for (let i = 0; i < names.length; i++) last[i] = r[names[i]!];
    this.lastContext = ctx;
    return ctx;
  }

  /** The resource field values of the last record context() built or found a context for, and that context. */
  private readonly lastValues: unknown[] = [];
  private lastContext: Context | undefined;

  private fullContext(r: Rec): Context {
    const res = new Map<string, unknown>();
    for (const [k, v] of Object.entries(this.o.resourceAttributes)) res.set(k, v);
    for (const [f, attr] of Object.entries(this.o.resourceFields)) if (r[f] !== undefined && r[f] !== null && r[f] !== '') res.set(attr, r[f]);
    if (isObj(r.resource)) for (const [k, v] of Object.entries(r.resource)) res.set(k, v);
    const scope = { name: this.o.scopeName, version: this.o.scopeVersion, attributes: [] as KV[] };
    const scopeAttrs: [string, unknown][] = [];
    if (isObj(r.scope)) {
      if (typeof r.scope.name === 'string') scope.name = r.scope.name;
      if (typeof r.scope.version === 'string') scope.version = r.scope.version;
      if (isObj(r.scope.attributes)) for (const [k, v] of Object.entries(r.scope.attributes)) scopeAttrs.push([k, v]);
    }
    for (const k of Object.keys(r)) {
      if (k.startsWith('resource.')) res.set(k.slice(9), r[k]);
      else if (k === 'scope.name' && typeof r[k] === 'string') scope.name = r[k] as string;
      else if (k === 'scope.version' && typeof r[k] === 'string') scope.version = r[k] as string;
      else if (k.startsWith('scope.attributes.')) scopeAttrs.push([k.slice(17), r[k]]);
    }
    const resource = [...res].map(([key, v]) => ({ key, value: toAnyValue(v) }));
    scope.attributes = scopeAttrs.map(([key, v]) => ({ key, value: toAnyValue(v) }));
    return { resourceKey: JSON.stringify([...res]), resource, scopeKey: JSON.stringify([scope.name, scope.version, scopeAttrs]), scope };
  }

  private attributes(r: Rec, values?: string[]): KV[] {
    const out: KV[] = [];
    const vals = values && this.wildcard ? new Set(values) : undefined;
    if (this.o.attributeFields) {
      for (const f of this.o.attributeFields) if (r[f] !== undefined) out.push({ key: f, value: toAnyValue(r[f]) });
      return out;
    }
    for (const k of Object.keys(r)) {
      const v = r[k];
      if (v === undefined || v === null) continue;
      if (k === 'attributes' && isObj(v)) {
        for (const [a, x] of Object.entries(v)) out.push({ key: a, value: toAnyValue(x) });
        continue;
      }
      if (k.startsWith('attributes.')) {
        out.push({ key: k.slice(11), value: toAnyValue(v) });
        continue;
      }
      if (
        k.charCodeAt(0) === 95 ||
        this.skip.has(k) ||
        vals?.has(k) ||
        k === 'resource' ||
        k === 'scope' ||
        k.startsWith('resource.') ||
        k.startsWith('scope.')
      )
        continue;
      out.push({ key: k, value: toAnyValue(v) });
    }
    return out;
  }

  private build(r: Rec, nowMs: number): Mapped | { refused: string } {
    const ctx = this.context(r);
    if (this.o.signal === 'metrics') return this.metric(r, nowMs, ctx);
    if (this.o.signal === 'logs') return this.log(r, nowMs, ctx);
    return this.span(r, ctx);
  }

  private metric(r: Rec, nowMs: number, ctx: Context): Mapped | { refused: string } {
    const o = this.o;
    const base = typeof r[o.nameField] === 'string' && r[o.nameField] !== '' ? (r[o.nameField] as string) : undefined;
    if (o.valueFields.length === 1 && !this.wildcard && !base && !['histogram', 'exponential_histogram', 'summary'].includes(r.type as string))
      return { refused: `no metric name: field '${o.nameField}' is missing or not text` };
    const time = this.timeNanos(r, o.timestampField, nowMs);
    if ('refused' in time) return time;
    const attributes = this.attributes(r, this.wildcard ? this.valueFieldsOf(r) : undefined);
    let attrKey: string | undefined; // the series' key for start times: only cumulative Sums without one need it
    const unit = o.unit ?? (typeof r[o.unitField] === 'string' ? (r[o.unitField] as string) : '');
    const description = typeof r.description === 'string' ? r.description : '';
    let given = nanosOf(r.start_time_unix_nano);
    if (!given && o.startTimeField && r[o.startTimeField] !== undefined && r[o.startTimeField] !== null) {
      const ms = this.parseTime(r[o.startTimeField]);
      if (ms === NOT_A_TIME) return { refused: `field '${o.startTimeField}' is not a time: ${JSON.stringify(r[o.startTimeField]).slice(0, 60)}` };
      given = msToNanos(ms);
    }
    const flags = typeof r.flags === 'number' ? r.flags : 0;
    const out: Mapped['metrics'] = [];
    const t = r[o.typeField];
    // Histograms and summaries, as the otlp source writes them.
    if (t === 'histogram' || t === 'exponential_histogram' || t === 'summary') {
      if (!base) return { refused: `no metric name: field '${o.nameField}' is missing or not text` };
      const point: Record<string, unknown> = {
        attributes,
        timeUnixNano: time,
        startTimeUnixNano: given ?? NO_TIME,
        flags,
        count: String(r.count ?? 0),
      };
      if (typeof r.sum === 'number') point.sum = r.sum;
      if (typeof r.min === 'number') point.min = r.min;
      if (typeof r.max === 'number') point.max = r.max;
      const temporality = TEMPORALITY[String(r.temporality)] ?? 2;
      const longs = (a: unknown) => (Array.isArray(a) ? a.map((x) => String(x)) : []);
      if (t === 'histogram') {
        point.bucketCounts = longs(r.bucket_counts);
        point.explicitBounds = Array.isArray(r.explicit_bounds) ? r.explicit_bounds.map(Number) : [];
        out.push({ key: `${base}\u0000h\u0000${unit}\u0000${temporality}`, kind: 'histogram', metric: { name: base, description, unit, temporality }, point });
      } else if (t === 'exponential_histogram') {
        point.scale = typeof r.scale === 'number' ? r.scale : 0;
        point.zeroCount = String(r.zero_count ?? 0);
        if (typeof r.zero_threshold === 'number') point.zeroThreshold = r.zero_threshold;
        const b = (x: unknown) => (isObj(x) ? { offset: typeof x.offset === 'number' ? x.offset : 0, bucketCounts: longs(x.bucket_counts) } : undefined);
        point.positive = b(r.positive);
        point.negative = b(r.negative);
        out.push({
          key: `${base}\u0000e\u0000${unit}\u0000${temporality}`,
          kind: 'exponentialHistogram',
          metric: { name: base, description, unit, temporality },
          point,
        });
      } else {
        point.sum = typeof r.sum === 'number' ? r.sum : 0;
        point.quantileValues = Array.isArray(r.quantile_values)
          ? r.quantile_values.filter(isObj).map((q) => ({ quantile: Number(q.quantile), value: Number(q.value) }))
          : [];
        out.push({ key: `${base}\u0000s\u0000${unit}`, kind: 'summary', metric: { name: base, description, unit }, point });
      }
      return { ...ctx, metrics: out };
    }
    const typed = kindOf(t);
    const widths = isObj(r._snmp_widths) ? r._snmp_widths : undefined;
    for (const f of this.valueFieldsOf(r)) {
      const v = pointValue(r[f]);
      if (v === undefined) continue;
      if (v === null) return { refused: `value field '${f}' is not a number: ${JSON.stringify(r[f]).slice(0, 60)}` };
      const width = widths?.[f];
      const kind: 'sum' | 'gauge' = width === 32 || width === 64 || this.allCounters || o.counterFields.includes(f) ? 'sum' : (typed ?? 'gauge');
      const name = o.valueFields.length === 1 && !this.wildcard ? base! : base ? `${base}.${f}` : f;
      const temporality = kind === 'sum' ? (TEMPORALITY[String(r.temporality)] ?? TEMPORALITY[o.sumTemporality]!) : 0;
      const monotonic = kind === 'sum' ? r.monotonic !== false : false;
      // A literal of one shape per value kind (a spread of `v` made a new shape per point).
      const point: Record<string, unknown> =
        'asDouble' in v ? { attributes, timeUnixNano: time, asDouble: v.asDouble } : { attributes, timeUnixNano: time, asInt: v.asInt };
      if (flags) point.flags = flags;
      if (kind === 'sum') {
        let start = given;
        if (!start && temporality === 2) {
          attrKey ??= JSON.stringify(attributes);
          start = this.startOf(`${ctx.resourceKey}\u0001${name}\u0001${attrKey}`, time, numberOf(v));
        }
        if (start) point.startTimeUnixNano = start;
      } else if (given) point.startTimeUnixNano = given;
      const id = this.identity(name, kind, unit, temporality, monotonic, description);
      out.push({ key: id.key, kind, metric: id.metric, point });
    }
    if (out.length === 0)
      return { refused: this.wildcard ? 'the record holds no number to send' : `none of the value fields (${o.valueFields.join(', ')}) holds a value` };
    return { resourceKey: ctx.resourceKey, resource: ctx.resource, scopeKey: ctx.scopeKey, scope: ctx.scope, metrics: out };
  }

  /** The last identity made for each metric name (bounded). */
  private readonly identities = new Map<string, MetricIdentity>();

  /**
   * A Gauge or Sum's grouping key and its metric, shared by every point of that metric: one key
   * string (its hash computed once, where the requests group points by it) and one object, instead
   * of a new string and object per point. Nothing downstream changes them.
   */
  private identity(name: string, kind: 'sum' | 'gauge', unit: string, temporality: number, monotonic: boolean, description: string): MetricIdentity {
    const known = this.identities.get(name);
    if (
      known &&
      known.kind === kind &&
      known.unit === unit &&
      known.temporality === temporality &&
      known.monotonic === monotonic &&
      known.description === description
    )
      return known;
    const id: MetricIdentity = {
      kind,
      unit,
      temporality,
      monotonic,
      description,
      key: `${name}\u0000${kind}\u0000${unit}\u0000${temporality}\u0000${monotonic}`,
      metric: kind === 'sum' ? { name, description, unit, temporality, monotonic } : { name, description, unit },
    };
    if (this.identities.size >= MAPPER_CACHE_MAX) this.identities.clear();
    this.identities.set(name, id);
    return id;
  }

  /** The start time of a cumulative series: its first point's time, and a new one when the value goes down (the counter reset). */
  private startOf(key: string, time: Bits64, value: number): Bits64 {
    this.remember = true;
    const s = this.starts.get(key);
    if (!s) {
      if (this.starts.size >= this.maxSeries) this.starts.delete(this.starts.keys().next().value!);
      this.starts.set(key, { start: time, last: value });
      return time;
    }
    if (value < s.last) {
      // A reset (an agent restart, or a 32-bit counter that wrapped): the series starts again now.
      this.resets++;
      s.start = time;
    }
    s.last = value;
    return s.start;
  }

  private log(r: Rec, nowMs: number, ctx: Context): Mapped | { refused: string } {
    const time = this.timeNanos(r, this.o.timestampField, nowMs);
    if ('refused' in time) return time;
    const log: Record<string, unknown> = { timeUnixNano: time, attributes: this.attributes(r) };
    log.observedTimeUnixNano = nanosOf(r.observed_time_unix_nano) ?? this.nowNanos(nowMs);
    if (typeof r.severity_number === 'number') log.severityNumber = r.severity_number;
    else {
      // Syslog severities (0-7, or their names) as the OpenTelemetry specification maps them.
      const s = typeof r.severity === 'number' ? r.severity : typeof r.severity === 'string' ? SEVERITY_NAMES[r.severity.toLowerCase()] : undefined;
      if (s !== undefined && s >= 0 && s <= 7) {
        log.severityNumber = SYSLOG_SEVERITY[s];
        log.severityText = SEVERITY_TEXT[s];
      }
    }
    if (typeof r.severity_text === 'string') log.severityText = r.severity_text;
    const body = r[this.o.bodyField] !== undefined ? r[this.o.bodyField] : r.message;
    if (body !== undefined) log.body = toAnyValue(body);
    for (const [f, len, key] of [
      ['trace_id', 16, 'traceId'],
      ['span_id', 8, 'spanId'],
    ] as const) {
      const v = r[f];
      if (v === undefined || v === '') continue;
      if (typeof v !== 'string' || !/^[0-9a-fA-F]*$/.test(v) || v.length !== 2 * len)
        return { refused: `${f} is not ${len} bytes of hex: ${JSON.stringify(v).slice(0, 60)}` };
      log[key] = Buffer.from(v, 'hex');
    }
    if (typeof r.flags === 'number') log.flags = r.flags;
    if (typeof r.event_name === 'string') log.eventName = r.event_name;
    return { ...ctx, log };
  }

  private span(r: Rec, ctx: Context): Mapped | { refused: string } {
    const span: Record<string, unknown> = { name: typeof r.name === 'string' ? r.name : '', attributes: this.attributes(r) };
    for (const [f, len, key, optional] of [
      ['trace_id', 16, 'traceId', false],
      ['span_id', 8, 'spanId', false],
      ['parent_span_id', 8, 'parentSpanId', true],
    ] as const) {
      const v = r[f];
      if ((v === undefined || v === '') && optional) continue;
      if (typeof v !== 'string' || !/^[0-9a-fA-F]*$/.test(v) || v.length !== 2 * len)
        return { refused: `${f} is not ${len} bytes of hex: ${JSON.stringify(v ?? null).slice(0, 60)}` };
      span[key] = Buffer.from(v, 'hex');
    }
    const start = nanosOf(r.start_time_unix_nano);
    const end = nanosOf(r.end_time_unix_nano);
    if (!start || !end) return { refused: 'a span needs start_time_unix_nano and end_time_unix_nano (decimal nanoseconds)' };
    span.startTimeUnixNano = start;
    span.endTimeUnixNano = end;
    if (typeof r.trace_state === 'string') span.traceState = r.trace_state;
    span.kind = KINDS[String(r.kind)] ?? 0;
    span.status = { code: STATUS[String(r.status_code)] ?? 0, message: typeof r.status_message === 'string' ? r.status_message : '' };
    if (typeof r.flags === 'number') span.flags = r.flags;
    if (Array.isArray(r.events))
      span.events = r.events.filter(isObj).map((e) => ({
        timeUnixNano: nanosOf(e.time_unix_nano) ?? NO_TIME,
        name: typeof e.name === 'string' ? e.name : '',
        attributes: isObj(e.attributes) ? Object.entries(e.attributes).map(([key, x]) => ({ key, value: toAnyValue(x) })) : [],
      }));
    if (Array.isArray(r.links))
      span.links = r.links.filter(isObj).map((k) => ({
        traceId: typeof k.trace_id === 'string' ? Buffer.from(k.trace_id, 'hex') : Buffer.alloc(0),
        spanId: typeof k.span_id === 'string' ? Buffer.from(k.span_id, 'hex') : Buffer.alloc(0),
        traceState: typeof k.trace_state === 'string' ? k.trace_state : '',
        attributes: isObj(k.attributes) ? Object.entries(k.attributes).map(([key, x]) => ({ key, value: toAnyValue(x) })) : [],
      }));
    return { ...ctx, span };
  }
}

/** The export request (protobufjs object form) of some mapped records, grouped by resource, scope and metric. */
export function buildRequest(signal: Signal, mapped: Mapped[]): Record<string, unknown> {
  const resources = new Map<
    string,
    { resource: KV[]; scopes: Map<string, { scope: Mapped['scope']; items: unknown[]; metrics: Map<string, Record<string, unknown>> }> }
  >();
  for (const m of mapped) {
    let res = resources.get(m.resourceKey);
    if (!res) resources.set(m.resourceKey, (res = { resource: m.resource, scopes: new Map() }));
    let sc = res.scopes.get(m.scopeKey);
    if (!sc) res.scopes.set(m.scopeKey, (sc = { scope: m.scope, items: [], metrics: new Map() }));
    if (m.metrics) {
      for (const x of m.metrics) {
        let metric = sc.metrics.get(x.key);
        if (!metric) {
          const { temporality, monotonic, ...head } = x.metric as { temporality?: number; monotonic?: boolean } & Record<string, unknown>;
          const data: Record<string, unknown> = { dataPoints: [] };
          if (x.kind === 'sum') Object.assign(data, { aggregationTemporality: temporality, isMonotonic: monotonic });
          else if (x.kind === 'histogram' || x.kind === 'exponentialHistogram') data.aggregationTemporality = temporality;
          metric = { ...head, [x.kind]: data };
          sc.metrics.set(x.key, metric);
          sc.items.push(metric);
        }
        ((metric[x.kind] as { dataPoints: unknown[] }).dataPoints as unknown[]).push(x.point);
      }
    } else sc.items.push(m.log ?? m.span);
  }
  const [outer, inner, items] =
    signal === 'metrics'
      ? ['resourceMetrics', 'scopeMetrics', 'metrics']
      : signal === 'logs'
        ? ['resourceLogs', 'scopeLogs', 'logRecords']
        : ['resourceSpans', 'scopeSpans', 'spans'];
  return {
    [outer]: [...resources.values()].map((r) => ({
      resource: { attributes: r.resource },
      [inner]: [...r.scopes.values()].map((s) => ({ scope: s.scope, [items]: s.items })),
    })),
  };
}
