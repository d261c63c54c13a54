// The bounded pre-walk of an OTLP export request, run on every body before it is accepted: it reads
// the protobuf wire format against the OTLP schema without building anything, and refuses (400) a
// body whose lengths run past the bytes that follow, whose wire types contradict the schema, whose
// messages nest deeper than MAX_DEPTH or whose AnyValues nest deeper than MAX_ANY_DEPTH, or whose
// records would take more than the output cap as svc records (each record repeats its resource's
// and scope's attributes, so a small body can stand for a large output). It counts the records and
// those refused one by one (the partial success): spans and log records with a trace or span id of
// the wrong length, data points of a metric without a name (docs/connectors/otlp.md). What passes
// decodes with protobufjs within these bounds (decode.ts).
import { isUtf8 } from 'node:buffer';
import type protobuf from 'protobufjs';
import { otlpRoot, otlpType, SIGNAL_INFO, type Signal } from './proto.js';

/** Deepest message nesting taken (an OTLP request without nested AnyValues is 8 deep). */
export const MAX_DEPTH = 100;
/** Deepest AnyValue nesting taken (arrays and maps inside attribute values and log bodies). */
export const MAX_ANY_DEPTH = 32;
/** Estimated output of one record beyond its own bytes (field names, the ISO time, the signal). */
export const RECORD_OVERHEAD = 256;
/** Estimated output per input byte (a fixed64 time becomes a decimal string and an ISO time). */
export const EXPANSION = 4;

export class OtlpDecodeError extends Error {}

const enum Role {
  Plain = 0,
  /** Holds records (request, resource, scope, metric, metric data): its own bytes repeat in each. */
  Container = 1,
  Record = 2,
}

interface FieldInfo {
  /** Wire types accepted for the field. */
  wires: number;
  msg?: TypeInfo;
  /** The field's bytes are repeated in each record of the message holding it. */
  repeated: boolean;
  /** A string field: its bytes must be UTF-8 (as proto3 requires and protobufjs checks). */
  utf8?: boolean;
  /** A repeated number that may come packed: its element size (8, 4), or 0 for varints. */
  packed?: number;
}
interface TypeInfo {
  name: string;
  role: Role;
  any: boolean;
  fields: Map<number, FieldInfo>;
  /** For a record: field ids of ids that must have this length (or be empty, when `optional`). */
  ids?: { id: number; len: number; optional: boolean; what: string }[];
  /** Metric: its name is field 1; without one its data points are refused. */
  metric?: boolean;
}

const WIRE: Record<string, number> = {
  double: 1,
  fixed64: 1,
  sfixed64: 1,
  float: 5,
  fixed32: 5,
  sfixed32: 5,
  string: 2,
  bytes: 2,
};
const bit = (w: number) => 1 << w;

const RECORDS = new Set([
  'opentelemetry.proto.logs.v1.LogRecord',
  'opentelemetry.proto.trace.v1.Span',
  'opentelemetry.proto.metrics.v1.NumberDataPoint',
  'opentelemetry.proto.metrics.v1.HistogramDataPoint',
  'opentelemetry.proto.metrics.v1.ExponentialHistogramDataPoint',
  'opentelemetry.proto.metrics.v1.SummaryDataPoint',
]);
const CONTAINERS = new Set([
  'opentelemetry.proto.collector.ExportLogsServiceRequest',
  'opentelemetry.proto.collector.ExportMetricsServiceRequest',
  'opentelemetry.proto.collector.ExportTraceServiceRequest',
  'opentelemetry.proto.logs.v1.ResourceLogs',
  'opentelemetry.proto.logs.v1.ScopeLogs',
  'opentelemetry.proto.metrics.v1.ResourceMetrics',
  'opentelemetry.proto.metrics.v1.ScopeMetrics',
  'opentelemetry.proto.metrics.v1.Metric',
  'opentelemetry.proto.metrics.v1.Gauge',
  'opentelemetry.proto.metrics.v1.Sum',
  'opentelemetry.proto.metrics.v1.Histogram',
  'opentelemetry.proto.metrics.v1.ExponentialHistogram',
  'opentelemetry.proto.metrics.v1.Summary',
  'opentelemetry.proto.trace.v1.ResourceSpans',
  'opentelemetry.proto.trace.v1.ScopeSpans',
]);
const IDS: Record<string, TypeInfo['ids']> = {
  'opentelemetry.proto.trace.v1.Span': [
    { id: 1, len: 16, optional: false, what: 'trace_id' },
    { id: 2, len: 8, optional: false, what: 'span_id' },
    { id: 4, len: 8, optional: true, what: 'parent_span_id' },
  ],
  'opentelemetry.proto.logs.v1.LogRecord': [
    { id: 9, len: 16, optional: true, what: 'trace_id' },
    { id: 10, len: 8, optional: true, what: 'span_id' },
  ],
};

let tables: Map<string, TypeInfo> | undefined;

function info(t: protobuf.Type, seen: Map<string, TypeInfo>): TypeInfo {
  const name = t.fullName.replace(/^\./, '');
  const known = seen.get(name);
  if (known) return known;
  const ti: TypeInfo = {
    name,
    role: RECORDS.has(name) ? Role.Record : CONTAINERS.has(name) ? Role.Container : Role.Plain,
    any: name === 'opentelemetry.proto.common.v1.AnyValue',
    fields: new Map(),
    ids: IDS[name],
    metric: name === 'opentelemetry.proto.metrics.v1.Metric',
  };
  seen.set(name, ti);
  for (const f of t.fieldsArray) {
    f.resolve();
    const rt = f.resolvedType;
    if (rt && 'fieldsArray' in rt) {
      const sub = info(rt as protobuf.Type, seen);
      ti.fields.set(f.id, { wires: bit(2), msg: sub, repeated: sub.role === Role.Plain });
      continue;
    }
    // Enums, bools and integers are varints; a repeated number may come packed (length-delimited).
    const w = rt ? 0 : (WIRE[f.type] ?? 0);
    const packed = f.repeated && w !== 2 ? (w === 1 ? 8 : w === 5 ? 4 : 0) : undefined;
    ti.fields.set(f.id, { wires: bit(w) | (packed !== undefined ? bit(2) : 0), repeated: true, utf8: f.type === 'string', packed });
  }
  return ti;
}

function table(s: Signal): TypeInfo {
  if (!tables) {
    otlpRoot();
    tables = new Map();
  }
  return info(otlpType(SIGNAL_INFO[s].request), tables);
}

export interface WalkResult {
  /** Records the body holds (refused ones included). */
  records: number;
  /** Records refused one by one, and the first reason. */
  refused: number;
  reason: string;
  /** Estimated bytes of the records as svc records. */
  estimate: number;
}

interface Frame {
  t: TypeInfo;
  start: number;
  end: number;
  records: number;
  refused: number;
  estimate: number;
  /** Bytes of this message repeated in each of its records. */
  own: number;
  /** The field of the parent this message came in (Metric's data fields matter). */
  field: number;
  /** Metric: whether its last name was not empty. */
  named: boolean;
  /** Record: the length of the last occurrence of each id field (protobufjs keeps the last). */
  idLens?: Map<number, number>;
  /** Metric: the records of each data field's last occurrence (a singular field: the last wins). */
  data?: Map<number, { records: number; refused: number; estimate: number }>;
}

/** Metric's data fields in the order decode.ts reads them: the first present is the metric's data. */
const METRIC_DATA = [5, 7, 9, 10, 11];
const frame = (t: TypeInfo, start: number, end: number, field: number): Frame => ({
  t,
  start,
  end,
  field,
  records: 0,
  refused: 0,
  estimate: 0,
  own: 0,
  named: false,
});

/**
 * Walks an export request of `signal` (protobuf bytes). Throws OtlpDecodeError with the reason
 * when the body is malformed or its records would exceed `maxOutput` bytes.
 */
export function walkRequest(signal: Signal, buf: Uint8Array, maxOutput: number): WalkResult {
  const top = frame(table(signal), 0, buf.length, 0);
  const stack: Frame[] = [top];
  let anyDepth = 0;
  let reason = '';
  let pos = 0;
  const fail = (why: string): never => {
    throw new OtlpDecodeError(`${why} (at byte ${pos})`);
  };
  const varint = (): number => {
    // Values past 2^53 lose precision here, which a length or tag never needs; only the bytes count.
    let v = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (pos >= buf.length) fail('a varint runs past the end of the body');
      const b = buf[pos++]!;
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 128;
    }
    return fail('a varint is longer than 10 bytes');
  };
  for (;;) {
    let f = stack[stack.length - 1]!;
    while (pos === f.end) {
      // The message ends: account for it in its parent.
      stack.pop();
      const parent = stack[stack.length - 1];
      const t = f.t;
      if (t.any) anyDepth--;
      if (t.role === Role.Record) {
        f.records = 1;
        if (t.ids)
          for (const x of t.ids) {
            const len = f.idLens?.get(x.id) ?? 0;
            if (len !== x.len && !(x.optional && len === 0)) {
              f.refused = 1;
              if (!reason) reason = `a ${x.what} of ${len} bytes (OTLP ids are ${x.len} bytes)`;
              break;
            }
          }
        f.estimate = RECORD_OVERHEAD + EXPANSION * (f.end - f.start);
      } else if (t.role === Role.Container) {
        if (t.metric) {
          // What decode.ts makes of it: the first data field present, its last occurrence.
          const d = METRIC_DATA.map((id) => f.data?.get(id)).find((x) => x !== undefined);
          f.records = d?.records ?? 0;
          f.refused = d?.refused ?? 0;
          f.estimate = d?.estimate ?? 0;
          if (!f.named && f.records > f.refused) {
            if (!reason) reason = 'a metric without a name: its data points are refused';
            f.refused = f.records;
          }
        }
        f.estimate += f.records * EXPANSION * f.own;
      }
      if (!parent) {
        return { records: f.records, refused: f.refused, reason, estimate: f.estimate };
      }
      if (t.role !== Role.Plain && parent.t.metric) {
        (parent.data ??= new Map()).set(f.field, { records: f.records, refused: f.refused, estimate: f.estimate });
        if (f.estimate > maxOutput)
          fail(`the records of this request would take more than ${maxOutput} bytes (SVC_OTLP_MAX_OUTPUT_BYTES): send smaller requests`);
      } else if (t.role !== Role.Plain) {
        parent.records += f.records;
        parent.refused += f.refused;
        parent.estimate += f.estimate;
        if (parent.estimate > maxOutput)
          fail(`the records of this request would take more than ${maxOutput} bytes (SVC_OTLP_MAX_OUTPUT_BYTES): send smaller requests`);
      }
      f = parent;
    }
    if (pos > f.end) fail('a field runs past the end of its message');
    const fieldStart = pos;
    const tag = varint();
    const id = Math.floor(tag / 8);
    const wire = tag & 7;
    if (id === 0 || id > 536870911) fail(`field number ${id}`);
    const fi = f.t.fields.get(id);
    if (fi && !(fi.wires & bit(wire))) fail(`field ${id} of ${f.t.name} has wire type ${wire}`);
    switch (wire) {
      case 0:
        varint();
        break;
      case 1:
        pos += 8;
        break;
      case 5:
        pos += 4;
        break;
      case 2: {
        const len = varint();
        if (len > f.end - pos) fail(`a length of ${len} bytes runs past the ${f.end - pos} bytes left in its message`);
        if (fi?.msg) {
          if (stack.length >= MAX_DEPTH) fail(`messages nested deeper than ${MAX_DEPTH}`);
          if (fi.msg.any && ++anyDepth > MAX_ANY_DEPTH) fail(`attribute values (AnyValue) nested deeper than ${MAX_ANY_DEPTH}`);
          // A plain message (resource, scope, attributes) inside a container or record is walked for
          // its bounds, and its bytes repeat in each record.
          if (fi.repeated) f.own += pos + len - fieldStart;
          stack.push(frame(fi.msg, pos, pos + len, id));
          continue;
        }
        if (f.t.metric && id === 1) f.named = len > 0;
        if (f.t.ids) (f.idLens ??= new Map()).set(id, len);
        if (fi?.utf8 && !isUtf8(buf.subarray(pos, pos + len))) fail(`field ${id} of ${f.t.name} is not UTF-8`);
        if (fi?.packed !== undefined) {
          // Packed numbers end exactly at the field's end (a reader would run past it otherwise).
          if (fi.packed && len % fi.packed) fail(`packed field ${id} of ${f.t.name}: ${len} bytes is not a multiple of ${fi.packed}`);
          if (!fi.packed) {
            const end = pos + len;
            while (pos < end) varint();
            if (pos !== end) fail(`packed field ${id} of ${f.t.name}: a varint runs past its end`);
            f.own += pos - fieldStart;
            continue;
          }
        }
        pos += len;
        break;
      }
      default:
        fail(`wire type ${wire} (groups are not OTLP)`);
    }
    if (pos > f.end) fail('a field runs past the end of its message');
    f.own += pos - fieldStart;
  }
}
