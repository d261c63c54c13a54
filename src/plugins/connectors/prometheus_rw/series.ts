// Records to remote-write series for the sink: the metric name, the labels, the value(s) and the
// time of each record, named as Prometheus requires, and SNMP counters kept monotonic across
// 32-bit wraps. The rules are the connector page's (docs/connectors/prometheus_rw.md); where the
// issue is silent they follow the OpenTelemetry Collector's prometheusremotewrite exporter.
import type { Rec } from '../../types.js';
import { NOT_A_TIME, timeParser } from '../../common/time.js';

export interface SeriesOptions {
  nameField: string;
  /** A fixed metric name for every record (the record's name field is then a label like any other). */
  metricName?: string;
  valueFields: string[];
  /** Only these fields become labels; undefined: every other scalar field. */
  labelFields?: string[];
  excludeLabels: string[];
  staticLabels: Record<string, string>;
  timestampField: string;
  counterFields: string[];
  /** Record field naming the type of the record's values: a MIB type (Counter32, Counter64, Gauge32, TimeTicks) or a Prometheus one (counter, gauge). */
  typeField?: string;
  /** Append `_total` to counters' names (OpenMetrics' rule for counters). */
  totalSuffix: boolean;
  /** Keep Counter32 values monotonic across wraps (`unwrap`), or send them as read (`raw`). */
  snmpWraps: 'unwrap' | 'raw';
  /** Series whose last counter value is remembered (the oldest are forgotten first). */
  maxSeries: number;
}

/** One sample of one series: labels sorted by name, `__name__` among them. */
export interface OutSample {
  key: string;
  labels: [string, string][];
  value: number;
  timestamp_ms: number;
}

export type Mapped = { samples: OutSample[] } | { refused: string };

/** `[a-zA-Z_:][a-zA-Z0-9_:]*`: other characters become `_`, a leading digit gets a `_` before it. */
export function metricName(s: string): string {
  const t = s.replace(/[^a-zA-Z0-9_:]/g, '_');
  return /^[0-9]/.test(t) ? `_${t}` : t;
}

/**
 * `[a-zA-Z_][a-zA-Z0-9_]*`, and never `__`-prefixed (Prometheus reserves those): as the Collector's
 * translator does, other characters become `_`, a leading digit gets `key_`, a leading `_` gets `key`.
 */
export function labelName(s: string): string {
  const t = s.replace(/[^a-zA-Z0-9_]/g, '_');
  if (/^[0-9]/.test(t)) return `key_${t}`;
  if (t.startsWith('_')) return `key${t}`;
  return t;
}

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;
const SPECIAL: Record<string, number> = { NaN: NaN, '+Inf': Infinity, Inf: Infinity, '-Inf': -Infinity };

/** A sample value from a record value; undefined when absent, null when not a number. */
export function sampleNumber(v: unknown): number | null | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string') {
    const t = v.trim();
    if (NUMBER.test(t)) return Number(t);
    if (t in SPECIAL) return SPECIAL[t]!;
  }
  return null;
}

const TWO32 = 4294967296;
const scalar = (v: unknown) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint';
const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Counter widths a record declares (`_snmp_widths` from snmp_poll: field to 32 or 64). */
function widthOf(r: Rec, field: string): 32 | 64 | undefined {
  const w = (r._snmp_widths as Record<string, unknown> | undefined)?.[field];
  return w === 32 || w === 64 ? w : undefined;
}

/** What a type name says of a value: a counter of a width, a counter (Prometheus' `counter`: never wraps), or nothing. */
function typeCounter(t: unknown): 32 | 64 | 'counter' | undefined {
  if (typeof t !== 'string') return undefined;
  const l = t.toLowerCase();
  return l === 'counter32' ? 32 : l === 'counter64' ? 64 : l === 'counter' ? 'counter' : undefined;
}

export class SeriesMapper {
  private readonly parseTime = timeParser({});
  private readonly skip: Set<string>;
  /** Per counter series: the last value read and what has been added for wraps. */
  private readonly counters = new Map<string, { last: number; offset: number }>();
  /** A record keeps its samples when the runtime writes its batch again (the wrap state moved on). */
  private readonly done = new WeakMap<Rec, Mapped>();
  wraps = 0;
  resets = 0;

  constructor(private readonly o: SeriesOptions) {
    this.skip = new Set([...o.valueFields, o.timestampField, ...o.excludeLabels]);
    if (o.metricName === undefined) this.skip.add(o.nameField);
  }

  map(r: Rec, nowMs: number): Mapped {
    const known = this.done.get(r);
    if (known !== undefined) return known;
    const m = this.build(r, nowMs);
    // Only what moved the wrap state needs remembering (a WeakMap entry per record costs the GC).
    if (this.stateful) this.done.set(r, m);
    return m;
  }

  /** Set by build() when the record's samples went through the wrap state. */
  private stateful = false;
  /** Sanitised label names by field name (fields repeat record after record). */
  private readonly names = new Map<string, string>();

  private nameOf(field: string): string {
    let n = this.names.get(field);
    if (n === undefined) {
      n = labelName(field);
      if (this.names.size < 10_000) this.names.set(field, n);
    }
    return n;
  }

  private labelsOf(r: Rec): Map<string, string[]> {
    const out = new Map<string, string[]>();
    const add = (name: string, v: unknown) => {
      if (!scalar(v)) return;
      const value = typeof v === 'string' ? v : String(v);
      if (value === '') return; // Prometheus reads an empty label as an absent one
      const n = this.nameOf(name);
      if (n === '' || n === 'key_') return;
      const list = out.get(n);
      if (list) list.push(value);
      else out.set(n, [value]);
    };
    const fields = this.o.labelFields ?? Object.keys(r);
    for (const f of fields) {
      if (this.o.labelFields === undefined && (f.charCodeAt(0) === 95 || this.skip.has(f))) continue; // _...
      const v = r[f];
      // An object of labels (the prometheus_rw source's `labels`) gives its entries.
      if (isPlainObject(v)) for (const [k, x] of Object.entries(v)) add(k, x);
      else add(f, v);
    }
    for (const [k, v] of Object.entries(this.o.staticLabels)) if (!out.has(labelName(k))) add(k, v);
    return out;
  }

  private build(r: Rec, nowMs: number): Mapped {
    const o = this.o;
    this.stateful = false;
    const base = o.metricName ?? (typeof r[o.nameField] === 'string' ? (r[o.nameField] as string) : undefined);
    if (o.valueFields.length === 1 && !base)
      return { refused: `no metric name: field '${o.nameField}' is missing or not text (set name_field, or metric_name for a fixed name)` };
    let ts = nowMs;
    const t = r[o.timestampField];
    if (t !== undefined && t !== null) {
      ts = this.parseTime(t);
      if (ts === NOT_A_TIME) return { refused: `field '${o.timestampField}' is not a time: ${JSON.stringify(t).slice(0, 60)}` };
    }
    // Colliding names (a.b and a_b) join their values with ';', ordered by the original name, as the Collector does.
    const labels: [string, string][] = [];
    for (const [k, v] of this.labelsOf(r)) if (k !== '__name__') labels.push([k, v.length === 1 ? v[0]! : v.join(';')]);
    labels.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const samples: OutSample[] = [];
    const typed = o.typeField === undefined ? undefined : typeCounter(r[o.typeField]);
    for (const f of o.valueFields) {
      const v = sampleNumber(r[f]);
      if (v === undefined) continue;
      if (v === null) return { refused: `value field '${f}' is not a number: ${JSON.stringify(r[f]).slice(0, 60)}` };
      const width = widthOf(r, f) ?? (typed === 32 || typed === 64 ? typed : undefined);
      const counter = width !== undefined || typed === 'counter' || o.counterFields.includes(f);
      let name = o.valueFields.length === 1 ? base! : base ? `${base}_${f}` : f;
      if (counter && o.totalSuffix && !name.endsWith('_total')) name += '_total';
      name = metricName(name);
      // The labels are sorted; __name__ goes before every name that sorts after "__name__".
      const all: [string, string][] = [];
      let placed = false;
      let key = '';
      for (const l of labels) {
        if (!placed && l[0] > '__name__') {
          all.push(['__name__', name]);
          key += `__name__\u0000${name}\u0001`;
          placed = true;
        }
        all.push(l);
        key += `${l[0]}\u0000${l[1]}\u0001`;
      }
      if (!placed) {
        all.push(['__name__', name]);
        key += `__name__\u0000${name}\u0001`;
      }
      const unwrap = counter && o.snmpWraps === 'unwrap';
      if (unwrap) this.stateful = true;
      samples.push({ key, labels: all, value: unwrap ? this.unwrap(key, v, width ?? 64) : v, timestamp_ms: ts });
    }
    if (samples.length === 0) return { refused: `none of the value fields (${o.valueFields.join(', ')}) holds a value` };
    return { samples };
  }

  /**
   * A Counter32 that went down by less than half its range wrapped: 2^32 is added from then on, so
   * the series stays monotonic and rate() is right. Any other decrease is a reset (the agent
   * restarted): the value goes out as read, and Prometheus takes the drop for a counter reset.
   */
  private unwrap(key: string, v: number, width: 32 | 64): number {
    if (!Number.isFinite(v) || v < 0) return v;
    const s = this.counters.get(key);
    if (s === undefined) {
      if (this.counters.size >= this.o.maxSeries) this.counters.delete(this.counters.keys().next().value!);
      this.counters.set(key, { last: v, offset: 0 });
      return v;
    }
    if (v < s.last) {
      if (width === 32 && s.last < TWO32 && TWO32 - s.last + v < TWO32 / 2) {
        s.offset += TWO32;
        this.wraps++;
      } else {
        s.offset = 0;
        this.resets++;
      }
    }
    s.last = v;
    return v + s.offset;
  }
}
