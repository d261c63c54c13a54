// Records to InfluxDB line protocol, through the client library's Point (its escaping of the
// measurement, tag keys and values, field keys and string values follows the line-protocol spec).
// What a record cannot become is refused here, with a reason, before anything is sent:
//
// - tag_fields become tags (values as text; null, missing or empty ones are left out);
// - timestamp_field becomes the point's time; every other field with a value becomes a field;
// - a whole number (a safe integer) is an integer field (`42i`), any other number a float, unless the
//   field is in float_fields (always a float); booleans are booleans; strings are strings; objects
//   and lists are written as their JSON text; null is left out.
import type { Point } from '@influxdata/influxdb-client';
import type { Rec } from '../../types.js';
import { influxSdk } from './client.js';

/** Loads what toLine needs (the client library's Point): await it before the first toLine. */
export async function loadLineProtocol(): Promise<void> {
  await influxSdk();
}

export type Precision = 's' | 'ms' | 'us' | 'ns';
export type FieldType = 'float' | 'integer' | 'string' | 'boolean';

export interface LineOptions {
  measurement: string;
  /** tag_fields, as a set: built once per sink, not per record. */
  tagFields: ReadonlySet<string>;
  timestampField?: string;
  precision: Precision;
  floatFields: ReadonlySet<string>;
}

/** A record as one line, with the type of each field (to match a server's field type conflict). */
export interface Line {
  text: string;
  fields: Map<string, FieldType>;
}

/** Nanoseconds per unit of each precision. */
const NS: Record<Precision, bigint> = { s: 1_000_000_000n, ms: 1_000_000n, us: 1_000n, ns: 1n };
/** InfluxDB's time range (models.MinNanoTime / MaxNanoTime). */
const MIN_NS = -9_223_372_036_854_775_806n;
const MAX_NS = 9_223_372_036_854_775_806n;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** RFC 3339 / ISO 8601 date-time; no offset means UTC. */
const ISO = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2})?)(?:\.(\d{1,9})\d*)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i;

/** Line protocol cannot end a name or tag value with a backslash (it would escape the separator). */
const endsInBackslash = (s: string) => s.endsWith('\\');

class Refusal extends Error {}

/** A timestamp value in units of `precision`; throws a Refusal for what is not a time. */
export function timestampOf(v: unknown, field: string, precision: Precision): bigint {
  let ns: bigint;
  if (typeof v === 'bigint') ns = v * NS[precision];
  else if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Refusal(`timestamp_field '${field}' is not a finite number`);
    ns = BigInt(Math.floor(v)) * NS[precision];
  } else if (typeof v === 'string' && /^-?\d+$/.test(v.trim())) ns = BigInt(v.trim()) * NS[precision];
  else if (typeof v === 'string') {
    const m = ISO.exec(v.trim());
    const zone = m?.[4] ? (m[4].toUpperCase() === 'Z' ? 'Z' : m[4].length === 5 ? `${m[4].slice(0, 3)}:${m[4].slice(3)}` : m[4]) : 'Z';
    const ms = m ? Date.parse(`${m[1]}T${m[2] ?? '00:00'}${m[2] && m[2].length === 5 ? ':00' : ''}${zone}`) : NaN;
    if (!Number.isFinite(ms)) throw new Refusal(`timestamp_field '${field}' is not a date-time or epoch number: ${JSON.stringify(v.slice(0, 40))}`);
    ns = BigInt(ms) * 1_000_000n + BigInt((m![3] ?? '').padEnd(9, '0') || '0');
  } else if (v instanceof Date && Number.isFinite(v.getTime())) ns = BigInt(v.getTime()) * 1_000_000n;
  else
    throw new Refusal(
      v === undefined || v === null || v === ''
        ? `the record has no value in timestamp_field '${field}'`
        : `timestamp_field '${field}' holds a ${typeof v}, not a time`,
    );
  if (ns < MIN_NS || ns > MAX_NS)
    throw new Refusal(`timestamp_field '${field}' is outside InfluxDB's time range (1677-09-21 to 2262-04-11) in precision ${precision}`);
  // Floor division: a time before 1970 rounds down like a positive one.
  const unit = NS[precision];
  return ns >= 0n || ns % unit === 0n ? ns / unit : ns / unit - 1n;
}

function tagText(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  const s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  return s === '' ? undefined : s;
}

function addField(p: Point, types: Map<string, FieldType>, key: string, v: unknown, o: LineOptions) {
  if (v === undefined || v === null) return;
  if (key === 'time') throw new Refusal("field 'time' is reserved by InfluxDB: rename it, or set timestamp_field: time");
  if (endsInBackslash(key)) throw new Refusal(`field name ${JSON.stringify(key)} ends with a backslash, which line protocol cannot carry`);
  if (typeof v === 'boolean') {
    p.booleanField(key, v);
    types.set(key, 'boolean');
  } else if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Refusal(`field '${key}' is ${v}, which InfluxDB cannot store`);
    if (Number.isSafeInteger(v) && !o.floatFields.has(key)) {
      p.intField(key, v);
      types.set(key, 'integer');
    } else {
      p.floatField(key, v);
      types.set(key, 'float');
    }
  } else if (typeof v === 'bigint') {
    if (o.floatFields.has(key)) {
      p.floatField(key, Number(v));
      types.set(key, 'float');
    } else {
      if (v < INT64_MIN || v > INT64_MAX) throw new Refusal(`field '${key}' (${v}) is outside the 64-bit integer range`);
      p.fields[key] = `${v}i`; // Point.intField parses through a double, which would round it
      types.set(key, 'integer');
    }
  } else {
    p.stringField(key, typeof v === 'string' ? v : v instanceof Date ? v.toISOString() : JSON.stringify(v));
    types.set(key, 'string');
  }
}

/** One record as a line, or the reason it cannot be one. */
export function toLine(r: Rec, o: LineOptions): Line | { refused: string } {
  const PointClass = influxSdk.loaded?.Point;
  if (!PointClass) throw new Error('toLine: await loadLineProtocol() first');
  try {
    const p = new PointClass(o.measurement);
    const types = new Map<string, FieldType>();
    for (const t of o.tagFields) {
      const v = tagText(r[t]);
      if (v === undefined) continue;
      if (t === 'time') throw new Refusal("tag 'time' is reserved by InfluxDB: rename the field");
      if (endsInBackslash(t) || endsInBackslash(v))
        throw new Refusal(`tag ${t} = ${JSON.stringify(v)} ends with a backslash, which line protocol cannot carry`);
      p.tag(t, v);
    }
    for (const [k, v] of Object.entries(r)) {
      if (o.tagFields.has(k) || k === o.timestampField) continue;
      addField(p, types, k, v, o);
    }
    if (types.size === 0) throw new Refusal('the record has no field value to write (line protocol needs at least one field besides tags and time)');
    if (o.timestampField !== undefined) p.timestamp(String(timestampOf(r[o.timestampField], o.timestampField, o.precision)));
    // convertTime: without it, Point stamps a point that has no time with the client's clock in ns.
    return { text: p.toLineProtocol({ convertTime: (t) => (typeof t === 'string' ? t : undefined) })!, fields: types };
  } catch (e) {
    if (e instanceof Refusal) return { refused: e.message };
    return { refused: (e as Error).message }; // Point's own range checks
  }
}

/** Whether the measurement name can be written at all (checked once, by lint). */
export const measurementProblem = (m: string) =>
  endsInBackslash(m)
    ? 'ends with a backslash, which line protocol cannot carry'
    : m.startsWith('#')
      ? "starts with '#', which makes every line a comment the server skips"
      : undefined;
