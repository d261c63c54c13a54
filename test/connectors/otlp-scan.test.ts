// The one-pass metrics path (scan.ts) against the general path (walk.ts, then decode.ts over
// protobufjs) on the same bytes: generated requests of every number point and AnyValue type and
// their edge cases, fields out of the usual order, and the same bodies cut and mutated byte by byte.
// Where the one pass takes a body it must give the general path's records, byte for byte as JSON,
// and its walk result; a body the general path refuses it must leave to the general path.
import { describe, expect, it } from 'vitest';
import { decodeRequest, type Layout } from '../../src/plugins/connectors/otlp/decode.js';
import { requestType, otlpType } from '../../src/plugins/connectors/otlp/proto.js';
import { scanMetrics } from '../../src/plugins/connectors/otlp/scan.js';
import { walkRequest } from '../../src/plugins/connectors/otlp/walk.js';
import { ingestRequest } from '../../bench/otlp-requests.js';

const CAP = 1 << 20;

/** A small seeded PRNG (mulberry32): the same cases every run. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  return { next, int, pick };
}
type R = ReturnType<typeof prng>;

const TEXTS = ['', 'a', 'ge-0/0/12', 'x'.repeat(40), 'Zürich', '\uFEFFbom', '😀 東京', 'ü'.repeat(20), 'tail é'];
const KEYS = [
  'host',
  'ifName',
  'ifIndex',
  '',
  'name',
  'value',
  'signal',
  'timestamp',
  'resource.x',
  'scope.y',
  'attributes.z',
  '__proto__',
  'constructor',
  'é-key',
  'host',
];
const INTS = ['0', '1', '-1', '9007199254740991', '9007199254740992', '-9007199254740993', '9223372036854775807', '-9223372036854775808', '123456'];
const DOUBLES = [0, -0, 1.5, -2.25, 1e300, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 5e-324];
const TIMES = ['0', '1', '1767322800000000000', '1767322800123456789', '18446744073709551615', '9007199254740993000'];

function anyValue(r: R, depth: number): Record<string, unknown> {
  const k = r.int(depth > 2 ? 5 : 8);
  switch (k) {
    case 0:
      return { stringValue: r.pick(TEXTS) };
    case 1:
      return { boolValue: r.next() < 0.5 };
    case 2:
      return { intValue: r.pick(INTS) };
    case 3:
      return { doubleValue: r.pick(DOUBLES) };
    case 4:
      return { bytesValue: Buffer.from(r.pick(TEXTS)) };
    case 5:
      return { arrayValue: { values: Array.from({ length: r.int(3) }, () => anyValue(r, depth + 1)) } };
    case 6:
      return { kvlistValue: { values: attributes(r, depth + 1, 3) } };
    default:
      return {}; // an AnyValue without a value
  }
}
function attributes(r: R, depth: number, max: number) {
  return Array.from({ length: r.int(max + 1) }, () => (r.next() < 0.1 ? { key: r.pick(KEYS) } : { key: r.pick(KEYS), value: anyValue(r, depth) }));
}
function point(r: R) {
  const p: Record<string, unknown> = { attributes: attributes(r, 0, 4) };
  if (r.next() < 0.9) p.timeUnixNano = r.pick(TIMES);
  if (r.next() < 0.4) p.startTimeUnixNano = r.pick(TIMES);
  const v = r.int(3);
  if (v === 0) p.asDouble = r.pick(DOUBLES);
  else if (v === 1) p.asInt = r.pick(INTS);
  if (r.next() < 0.2) p.flags = r.pick([0, 1, 4294967295]);
  if (r.next() < 0.1) p.exemplars = [{ asDouble: 1, filteredAttributes: attributes(r, 0, 2), spanId: Buffer.alloc(8, 1) }];
  return p;
}
function metric(r: R, kinds: readonly string[]) {
  const m: Record<string, unknown> = { name: r.next() < 0.97 ? r.pick(['m', 'if.metric.1', 'Zürich-öl']) : '' };
  if (r.next() < 0.3) m.description = r.pick(TEXTS);
  if (r.next() < 0.5) m.unit = r.pick(['By', '1', '']);
  if (r.next() < 0.1) m.metadata = attributes(r, 0, 2);
  const points = Array.from({ length: r.int(5) }, () => point(r));
  const kind = r.pick(kinds);
  if (kind === 'gauge') m.gauge = { dataPoints: points };
  else if (kind === 'sum') m.sum = { dataPoints: points, aggregationTemporality: r.pick([0, 1, 2, 7]), isMonotonic: r.next() < 0.5 };
  else if (kind === 'histogram') m.histogram = { dataPoints: [{ count: 3, bucketCounts: [1, 2], explicitBounds: [1] }], aggregationTemporality: 2 };
  else if (kind === 'summary') m.summary = { dataPoints: [{ count: 1, sum: 2, quantileValues: [{ quantile: 0.5, value: 1 }] }] };
  return m;
}
function request(r: R, kinds: readonly string[] = ['gauge', 'sum']) {
  return {
    resourceMetrics: Array.from({ length: 1 + r.int(2) }, () => ({
      ...(r.next() < 0.85 ? { resource: { attributes: attributes(r, 0, 3), droppedAttributesCount: r.int(2) } } : {}),
      schemaUrl: r.next() < 0.2 ? 'https://opentelemetry.io/schemas/1.21.0' : '',
      scopeMetrics: Array.from({ length: 1 + r.int(2) }, () => ({
        ...(r.next() < 0.8 ? { scope: { name: r.pick(TEXTS), version: r.pick(['', '1.0']), attributes: attributes(r, 0, 2) } } : {}),
        metrics: Array.from({ length: r.int(4) }, () => metric(r, kinds)),
      })),
    })),
  };
}
const encode = (name: string, o: object) => {
  const t = otlpType(name);
  return Buffer.from(t.encode(t.fromObject(o as Record<string, unknown>)).finish());
};
/** A length-delimited field: its tag byte, its length (varint), its bytes. */
function field(tag: number, bytes: Buffer): Buffer {
  const len: number[] = [];
  let n = bytes.length;
  while (n >= 128) {
    len.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  len.push(n);
  return Buffer.concat([Buffer.from([tag, ...len]), bytes]);
}
const encodeRequest = (o: object) => encode(requestType('metrics').fullName.replace(/^\./, ''), o);

/** The general path's outcome: its records as JSON lines and its walk result, or its refusal. */
function general(body: Buffer, layout: Layout) {
  let w;
  try {
    w = walkRequest('metrics', body, CAP);
  } catch (e) {
    return { refused: (e as Error).message };
  }
  const lines: string[] = [];
  decodeRequest('metrics', body, { layout }, (r) => lines.push(JSON.stringify(r)));
  return { lines, walk: w };
}

/** Both paths on `body`: equal where the one pass takes it. Returns whether it took it. */
function compare(body: Buffer, layout: Layout): boolean {
  const g = general(body, layout);
  const s = scanMetrics(body, CAP, layout);
  if (!s) return false;
  expect(g.refused, 'the one pass took a body the general path refuses').toBeUndefined();
  expect(s.records.map((r) => JSON.stringify(r))).toEqual(g.lines);
  expect(s.walk).toEqual(g.walk);
  return true;
}

describe('otlp: the one-pass metrics path against the general path', () => {
  it('gives the same records for generated gauges and sums of every value and attribute type, both layouts', () => {
    const r = prng(30);
    let taken = 0;
    let records = 0;
    for (let i = 0; i < 600; i++) {
      const body = encodeRequest(request(r));
      for (const layout of ['flat', 'nested'] as const) {
        if (compare(body, layout)) {
          taken++;
          records += scanMetrics(body, CAP, layout)!.records.length;
        }
      }
    }
    // It takes what every encoder writes (left to the general path: metrics without a name).
    expect(taken).toBeGreaterThan(1000);
    expect(records).toBeGreaterThan(5000);
  });

  it('the bench shape is taken, and gives the same NDJSON', () => {
    const body = ingestRequest(0);
    expect(compare(body, 'flat')).toBe(true);
    expect(compare(body, 'nested')).toBe(true);
    expect(scanMetrics(body, CAP, 'flat')!.records[0]).toEqual({
      signal: 'metrics',
      name: 'if.metric.0',
      unit: 'By',
      type: 'gauge',
      timestamp: '2026-09-21T14:13:20.000Z',
      time_unix_nano: '1790000000000000000',
      value: 0,
      ifIndex: 0,
      ifName: 'ge-0/0/0',
      host: 'host-0',
      'resource.service.name': 'router-0',
      'scope.name': 'svc-bench',
      'scope.version': '1',
    });
  });

  it('leaves histograms, summaries and metrics without a name to the general path, which still reads them', () => {
    const r = prng(7);
    let left = 0;
    for (let i = 0; i < 100; i++) {
      const body = encodeRequest(request(r, ['histogram', 'summary', 'gauge']));
      if (!compare(body, 'flat')) left++;
    }
    expect(left).toBeGreaterThan(50);
    const unnamed = encodeRequest({ resourceMetrics: [{ scopeMetrics: [{ metrics: [{ gauge: { dataPoints: [{ asDouble: 1 }] } }] }] }] });
    expect(scanMetrics(unnamed, CAP, 'flat')).toBeUndefined();
    expect(general(unnamed, 'flat').walk?.refused).toBe(1);
  });

  it('reads fields in any order (a message is the concatenation of its fields)', () => {
    const M = 'opentelemetry.proto.metrics.v1.Metric';
    const point = { timeUnixNano: '1767322800000000000', asInt: '7', attributes: [{ key: 'a', value: { stringValue: 'b' } }] };
    // Data before name and unit; a sum's temporality before its points (encoders write it after).
    const metric1 = Buffer.concat([encode(M, { gauge: { dataPoints: [point, point] } }), encode(M, { name: 'late', unit: 'By' })]);
    const sum = Buffer.concat([
      encode('opentelemetry.proto.metrics.v1.Sum', { aggregationTemporality: 2, isMonotonic: true }),
      encode('opentelemetry.proto.metrics.v1.Sum', { dataPoints: [point] }),
    ]);
    const metric2 = Buffer.concat([encode(M, { name: 's' }), field(0x3a, sum)]);
    // Metrics before their scope, scope metrics before their resource; an attribute's value before its key.
    const SM = 'opentelemetry.proto.metrics.v1.ScopeMetrics';
    const scopeMetrics = Buffer.concat([field(0x12, metric1), field(0x12, metric2), encode(SM, { scope: { name: 'sc', version: '2' } })]);
    const RM = 'opentelemetry.proto.metrics.v1.ResourceMetrics';
    const kv = Buffer.concat([
      encode('opentelemetry.proto.common.v1.KeyValue', { value: { intValue: 5 } }),
      encode('opentelemetry.proto.common.v1.KeyValue', { key: 'k' }),
    ]);
    const rm = Buffer.concat([field(0x12, scopeMetrics), field(0x0a, field(0x0a, kv)), encode(RM, { schemaUrl: 'u' })]);
    const body = field(0x0a, rm);
    for (const layout of ['flat', 'nested'] as const) expect(compare(body, layout)).toBe(true);
    expect(scanMetrics(body, CAP, 'flat')!.records.map((x) => [x.name, x.unit, x.temporality, x['resource.k'], x['scope.name']])).toEqual([
      ['late', 'By', undefined, 5, 'sc'],
      ['late', 'By', undefined, 5, 'sc'],
      ['s', undefined, 'cumulative', 5, 'sc'],
    ]);
  });

  it('a point attribute named as a resource or scope field: the points built as copies of the first keep their context', () => {
    const attrs = [
      { key: 'scope.name', value: { stringValue: 'from the point' } },
      { key: 'resource.k', value: { stringValue: 'from the point' } },
    ];
    const point = (v: number) => ({ timeUnixNano: '1767322800000000000', asInt: String(v), attributes: attrs });
    const body = encodeRequest({
      resourceMetrics: [
        {
          resource: { attributes: [{ key: 'k', value: { stringValue: 'from the resource' } }] },
          scopeMetrics: [{ scope: { name: 'from the scope' }, metrics: [{ name: 'm', gauge: { dataPoints: [point(1), point(2), point(3)] } }] }],
        },
      ],
    });
    for (const layout of ['flat', 'nested'] as const) expect(compare(body, layout)).toBe(true);
    // A point's attributes are fields of their own (`attributes.<key>`), so a copied record keeps its context.
    const taken = scanMetrics(body, CAP, 'flat')!.records;
    expect(taken.map((x) => [x.value, x['attributes.scope.name'], x['scope.name'], x['resource.k']])).toEqual(
      [1, 2, 3].map((v) => [v, 'from the point', 'from the scope', 'from the resource']),
    );
  });

  it('leaves a oneof or singular message set twice to the general path', () => {
    const AV = 'opentelemetry.proto.common.v1.AnyValue';
    const twice = Buffer.concat([encode(AV, { stringValue: 'a' }), encode(AV, { intValue: 3 })]);
    const kv = Buffer.concat([encode('opentelemetry.proto.common.v1.KeyValue', { key: 'k' }), field(0x12, twice)]);
    const metric = Buffer.concat([encode('opentelemetry.proto.metrics.v1.Metric', { name: 'm' }), field(0x2a, field(0x0a, field(0x3a, kv)))]);
    const body = field(0x0a, field(0x12, field(0x12, metric)));
    expect(general(body, 'flat').lines).toHaveLength(1);
    expect(scanMetrics(body, CAP, 'flat')).toBeUndefined();
  });

  it('never takes a body the general path refuses, and agrees on those it takes: cut and mutated bodies', () => {
    const r = prng(99);
    let taken = 0;
    let refused = 0;
    for (let i = 0; i < 3000; i++) {
      const base = encodeRequest(request(r));
      const body = Buffer.from(base);
      const op = r.int(4);
      if (op === 0 && body.length) body[r.int(body.length)] = r.int(256);
      else if (op === 1 && body.length) body[r.int(body.length)] ^= 1 << r.int(8);
      const cut = op === 2 ? body.subarray(0, r.int(body.length + 1)) : op === 3 ? Buffer.concat([body, Buffer.from([r.int(256), r.int(256)])]) : body;
      if (general(cut, 'flat').refused) refused++;
      if (compare(cut, r.next() < 0.5 ? 'flat' : 'nested')) taken++;
    }
    expect(refused).toBeGreaterThan(300);
    expect(taken).toBeGreaterThan(300);
  });

  it('stays within the output cap as walk.ts counts it: a body just over it is left to the general path, which refuses it', () => {
    const body = encodeRequest({
      resourceMetrics: [
        {
          resource: { attributes: [{ key: 'host.name', value: { stringValue: 'rtr1' } }] },
          scopeMetrics: [
            { scope: { name: 's' }, metrics: [{ name: 'm', unit: 'By', gauge: { dataPoints: [{ asDouble: 1 }, { asInt: 2 }, { asDouble: 3 }] } }] },
          ],
        },
      ],
    });
    const s = scanMetrics(body, CAP, 'flat')!;
    expect(s.records).toHaveLength(3);
    expect(s.walk.estimate).toBeGreaterThan(0);
    expect(scanMetrics(body, s.walk.estimate, 'flat')?.records.length).toBe(s.records.length);
    expect(scanMetrics(body, s.walk.estimate - 1, 'flat')).toBeUndefined();
    expect(() => walkRequest('metrics', body, s.walk.estimate - 1)).toThrow(/SVC_OTLP_MAX_OUTPUT_BYTES/);
  });

  it('takes AnyValues nested to the deepest walk.ts takes, and no deeper', () => {
    const nest = (d: number): Record<string, unknown> => (d === 1 ? { stringValue: 'x' } : { arrayValue: { values: [nest(d - 1)] } });
    const nestKv = (d: number): Record<string, unknown> => (d === 1 ? { intValue: 1 } : { kvlistValue: { values: [{ key: 'k', value: nestKv(d - 1) }] } });
    const body = (v: Record<string, unknown>) =>
      encodeRequest({
        resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'm', gauge: { dataPoints: [{ asDouble: 1, attributes: [{ key: 'a', value: v }] }] } }] }] }],
      });
    for (const [make, deepest] of [
      [nest, 32],
      [nestKv, 31],
    ] as const) {
      expect(compare(body(make(deepest)), 'flat')).toBe(true);
      expect(general(body(make(deepest + 1)), 'flat').refused).toMatch(/nested deeper/);
      expect(scanMetrics(body(make(deepest + 1)), CAP, 'flat')).toBeUndefined();
    }
  });
});
