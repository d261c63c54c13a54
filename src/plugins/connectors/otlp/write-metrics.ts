// The otlp sink's metrics requests written straight into a protobufjs Writer from the mapped
// records (encode.ts), without the request object graph buildRequest makes for protobufjs'
// generated encode(): no resource, scope or metric objects per request, no data point arrays.
// Gauges and Sums only (all an SNMP poll or a PM file makes); a request with a histogram or a
// summary goes the buildRequest way. The bytes are those encode() writes of buildRequest's request
// (test/connectors/otlp-encode.test.ts checks it): fields in field-number order; as protobufjs 8
// writes proto3, a plain field holding its default ('', 0, false, a zero 64-bit value) left out
// and a oneof member (AnyValue's, a point's asInt or asDouble) or a message written whenever set;
// empty repeated fields left out; the same Writer calls for each field type.
import protobuf from 'protobufjs';
import type { Mapped } from './encode.js';

type AnyV = Record<string, unknown>;
type KV = { key: string; value: AnyV };
type Point = Mapped['metrics'] extends (infer X)[] | undefined ? X : never;

// Wire tags: (field number << 3) | wire type (0 varint, 1 64-bit, 2 length-delimited).
const LEN = 2;
const tag = (field: number, wire: number) => (field << 3) | wire;

function writeAnyValue(w: protobuf.Writer, v: AnyV): void {
  if (v.stringValue != null) w.uint32(tag(1, LEN)).string(v.stringValue as string);
  if (v.boolValue != null) w.uint32(tag(2, 0)).bool(v.boolValue as boolean);
  if (v.intValue != null) w.uint32(tag(3, 0)).int64(v.intValue as number);
  if (v.doubleValue != null) w.uint32(tag(4, 1)).double(v.doubleValue as number);
  if (v.arrayValue != null) {
    w.uint32(tag(5, LEN)).fork();
    for (const x of (v.arrayValue as { values: AnyV[] }).values) {
      w.uint32(tag(1, LEN)).fork();
      writeAnyValue(w, x);
      w.ldelim();
    }
    w.ldelim();
  }
  if (v.kvlistValue != null) {
    w.uint32(tag(6, LEN)).fork();
    writeKeyValues(w, 1, (v.kvlistValue as { values: KV[] }).values);
    w.ldelim();
  }
}

function writeKeyValues(w: protobuf.Writer, field: number, kvs: KV[]): void {
  for (const kv of kvs) {
    w.uint32(tag(field, LEN)).fork();
    if (kv.key !== '') w.uint32(tag(1, LEN)).string(kv.key);
    w.uint32(tag(2, LEN)).fork();
    writeAnyValue(w, kv.value);
    w.ldelim();
    w.ldelim();
  }
}

/** A 64-bit value protobufjs writes (words or a number that is not 0). */
const nonZero64 = (v: unknown): boolean =>
  v != null && (typeof v === 'object' ? ((v as { low: number; high: number }).low || (v as { low: number; high: number }).high) !== 0 : v !== 0);

/** A NumberDataPoint (the point object encode.ts maps: attributes, times, asInt or asDouble, flags). */
function writeNumberPoint(w: protobuf.Writer, p: Record<string, unknown>): void {
  if (nonZero64(p.startTimeUnixNano)) w.uint32(tag(2, 1)).fixed64(p.startTimeUnixNano as number);
  if (nonZero64(p.timeUnixNano)) w.uint32(tag(3, 1)).fixed64(p.timeUnixNano as number);
  if (p.asDouble != null) w.uint32(tag(4, 1)).double(p.asDouble as number);
  if (p.asInt != null) w.uint32(tag(6, 1)).sfixed64(p.asInt as number);
  const attrs = p.attributes as KV[] | undefined;
  if (attrs && attrs.length) writeKeyValues(w, 7, attrs);
  if (p.flags != null && p.flags !== 0) w.uint32(tag(8, 0)).uint32(p.flags as number);
}

/** Whether every point of these records is a Gauge or a Sum (what writeMetricsRequest writes). */
export function onlyNumberPoints(mapped: Mapped[]): boolean {
  for (const m of mapped) {
    if (!m.metrics) return false;
    for (const x of m.metrics) if (x.kind !== 'gauge' && x.kind !== 'sum') return false;
  }
  return true;
}

/**
 * An ExportMetricsServiceRequest of mapped Gauge and Sum points, grouped by resource, scope and
 * metric in order of first appearance (as buildRequest groups them).
 */
export function writeMetricsRequest(mapped: Mapped[]): Uint8Array {
  // Grouping: only maps and arrays of the points themselves, no objects in the request's shape.
  const resources = new Map<string, { resource: KV[]; scopes: Map<string, { scope: Mapped['scope']; metrics: Map<string, Point[]> }> }>();
  for (const m of mapped) {
    let res = resources.get(m.resourceKey);
    if (!res) resources.set(m.resourceKey, (res = { resource: m.resource, scopes: new Map() }));
    let sc = res.scopes.get(m.scopeKey);
    if (!sc) res.scopes.set(m.scopeKey, (sc = { scope: m.scope, metrics: new Map() }));
    for (const x of m.metrics!) {
      const points = sc.metrics.get(x.key);
      if (points) points.push(x);
      else sc.metrics.set(x.key, [x]);
    }
  }
  const w = protobuf.Writer.create();
  for (const res of resources.values()) {
    w.uint32(tag(1, LEN)).fork(); // ResourceMetrics
    w.uint32(tag(1, LEN)).fork(); // Resource
    writeKeyValues(w, 1, res.resource);
    w.ldelim();
    for (const sc of res.scopes.values()) {
      w.uint32(tag(2, LEN)).fork(); // ScopeMetrics
      w.uint32(tag(1, LEN)).fork(); // InstrumentationScope
      if (sc.scope.name !== '') w.uint32(tag(1, LEN)).string(sc.scope.name);
      if (sc.scope.version !== '') w.uint32(tag(2, LEN)).string(sc.scope.version);
      writeKeyValues(w, 3, sc.scope.attributes);
      w.ldelim();
      for (const points of sc.metrics.values()) {
        const first = points[0]!;
        const metric = first.metric as { name: string; description: string; unit: string; temporality?: number; monotonic?: boolean };
        w.uint32(tag(2, LEN)).fork(); // Metric
        if (metric.name !== '') w.uint32(tag(1, LEN)).string(metric.name);
        if (metric.description !== '') w.uint32(tag(2, LEN)).string(metric.description);
        if (metric.unit !== '') w.uint32(tag(3, LEN)).string(metric.unit);
        const sum = first.kind === 'sum';
        w.uint32(tag(sum ? 7 : 5, LEN)).fork(); // Sum or Gauge
        for (const p of points) {
          w.uint32(tag(1, LEN)).fork();
          writeNumberPoint(w, p.point);
          w.ldelim();
        }
        if (sum) {
          if (metric.temporality) w.uint32(tag(2, 0)).int32(metric.temporality);
          if (metric.monotonic) w.uint32(tag(3, 0)).bool(metric.monotonic);
        }
        w.ldelim();
        w.ldelim();
      }
      w.ldelim();
    }
    w.ldelim();
  }
  return w.finish();
}
