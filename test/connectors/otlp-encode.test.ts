// The otlp sink's encoding: its requests go to protobufjs' encode() as built (no fromObject), with
// 64-bit integers as numbers or two 32-bit words (bits64.ts, no BigInt on the hot path). Checked
// against what fromObject would have made of the same request (the bytes are the same) and against
// BigInt arithmetic (the words are the same).
import { describe, expect, it } from 'vitest';
import { bitsToDecimal, bitsToNumber, int64FromBigInt, int64FromSafe, nanosFromMs, uint64FromDecimal } from '../../src/plugins/connectors/otlp/bits64.js';
import { buildRequest, RecordMapper, type Mapped, type MapOptions } from '../../src/plugins/connectors/otlp/encode.js';
import { requestType, type Signal } from '../../src/plugins/connectors/otlp/proto.js';
import { onlyNumberPoints, writeMetricsRequest } from '../../src/plugins/connectors/otlp/write-metrics.js';

const asBig = (b: { low: number; high: number }) => (BigInt(b.high) << 32n) | BigInt(b.low);

describe('otlp: 64-bit words without BigInt', () => {
  it('decimal text, milliseconds and safe integers give the words BigInt gives', () => {
    for (const t of ['0', '1', '4294967295', '4294967296', '1790000000123456789', '9007199254740993', '18446744073709551615', '000123']) {
      expect(asBig(uint64FromDecimal(t)!)).toBe(BigInt(t));
      expect(bitsToDecimal(uint64FromDecimal(t)!)).toBe(BigInt(t).toString());
    }
    for (const t of ['18446744073709551616', '99999999999999999999', '123456789012345678901', '-1', '1.5', '']) expect(uint64FromDecimal(t)).toBeUndefined();
    for (const ms of [0, 1, 1_790_000_000_123, 1_790_000_000_123.456, 253_402_300_799_999, -1, -1_000.5]) {
      const want = BigInt(Math.round(ms * 1000)) * 1000n;
      expect(asBig(nanosFromMs(ms))).toBe(BigInt.asUintN(64, want));
    }
    for (const n of [0, 1, -1, 2 ** 32, -(2 ** 32) - 5, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]) {
      expect(asBig(int64FromSafe(n))).toBe(BigInt.asUintN(64, BigInt(n)));
      expect(bitsToNumber(int64FromSafe(n), true)).toBe(n);
    }
    for (const v of [9223372036854775807n, -9223372036854775808n, -(2n ** 53n) - 7n]) expect(asBig(int64FromBigInt(v))).toBe(BigInt.asUintN(64, v));
  });
});

const options = (signal: Signal, extra: Partial<MapOptions> = {}): MapOptions => ({
  signal,
  nameField: 'name',
  valueFields: ['value'],
  timestampField: 'timestamp',
  excludeFields: [],
  resourceFields: { sysName: 'host.name' },
  resourceAttributes: { 'service.name': 'svc-test' },
  counterFields: [],
  sumTemporality: 'cumulative',
  typeField: 'type',
  unitField: 'unit',
  bodyField: 'body',
  scopeName: 'svc',
  scopeVersion: '1.0.0',
  ...extra,
});

/** The bytes of the request as the sink writes it, and as fromObject then encode would. */
function bothWays(signal: Signal, records: Record<string, unknown>[], extra: Partial<MapOptions> = {}) {
  const mapper = new RecordMapper(options(signal, extra));
  const mapped = records.map((r) => mapper.map(r, 1_790_000_000_000)).filter((m): m is Mapped => !('refused' in m));
  expect(mapped).toHaveLength(records.length);
  const T = requestType(signal);
  const request = buildRequest(signal, mapped);
  return { direct: Buffer.from(T.encode(request).finish()), viaFromObject: Buffer.from(T.encode(T.fromObject(request)).finish()), T };
}

describe('otlp sink: requests encoded as built are what fromObject makes of them', () => {
  it('metrics: gauges, cumulative and delta sums with start times, int64 past 2^53 and negative, histograms, summaries', () => {
    const t0 = '2026-01-02T03:00:00.000Z';
    const { direct, viaFromObject, T } = bothWays('metrics', [
      { name: 'if.in', value: '18446744073', type: 'Counter64', sysName: 'rtr1', ifIndex: 1, timestamp: t0 },
      { name: 'if.in', value: '9223372036854775807', type: 'Counter64', sysName: 'rtr1', ifIndex: 2, timestamp: t0 },
      { name: 'temp', value: -12, sysName: 'rtr1', timestamp: t0, time_unix_nano: '1790000000123456789' },
      { name: 'load', value: 0.75, temporality: 'delta', type: 'sum', start_time_unix_nano: '1789999999000000000', timestamp: t0 },
      { name: 'big', value: -9007199254740993n, timestamp: t0 },
      { name: 'lat', type: 'histogram', count: 3, sum: 1.5, bucket_counts: [1, 2], explicit_bounds: [0.5], temporality: 'cumulative', timestamp: t0 },
      { name: 'q', type: 'summary', count: 2, sum: 3, quantile_values: [{ quantile: 0.5, value: 1 }, 'junk'], timestamp: t0 },
    ]);
    expect(direct.equals(viaFromObject)).toBe(true);
    const back = T.toObject(T.decode(direct), { longs: String }) as {
      resourceMetrics: { scopeMetrics: { metrics: Record<string, { dataPoints: Record<string, unknown>[] }>[] }[] }[];
    };
    const metrics = back.resourceMetrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics));
    const points = (name: string) =>
      metrics.filter((m) => (m.name as unknown as string) === name).flatMap((m) => (m.gauge ?? m.sum ?? m.histogram ?? m.summary)!.dataPoints);
    expect(points('if.in').map((p) => p.asInt)).toEqual(['18446744073', '9223372036854775807']);
    expect(points('temp')[0]).toMatchObject({ asInt: '-12', timeUnixNano: '1790000000123456789' });
    expect(points('load')[0]).toMatchObject({ asDouble: 0.75, startTimeUnixNano: '1789999999000000000', timeUnixNano: String(Date.parse(t0) * 1_000_000) });
    expect(points('big')[0]).toMatchObject({ asInt: '-9007199254740993' });
  });

  it('logs and spans: times, ids, severities, bodies', () => {
    const logs = bothWays('logs', [
      {
        body: 'link down',
        severity: 3,
        hostname: 'rtr1',
        timestamp: '2026-01-02T03:00:00.123Z',
        trace_id: '0af7651916cd43dd8448eb211c80319c',
        span_id: 'b7ad6b7169203331',
      },
      { body: { k: [1, 'x'] }, severity_number: 9, observed_time_unix_nano: '1790000000000000001' },
    ]);
    expect(logs.direct.equals(logs.viaFromObject)).toBe(true);
    const spans = bothWays('traces', [
      {
        name: 'poll',
        trace_id: '0af7651916cd43dd8448eb211c80319c',
        span_id: 'b7ad6b7169203331',
        start_time_unix_nano: '1790000000000000000',
        end_time_unix_nano: '1790000000500000000',
        kind: 'client',
        status_code: 'error',
        events: [{ time_unix_nano: '1790000000100000000', name: 'retry', attributes: { n: 1 } }],
      },
    ]);
    expect(spans.direct.equals(spans.viaFromObject)).toBe(true);
  });
});

describe('otlp sink: Gauge and Sum points written straight into a Writer', () => {
  /** The bytes writeMetricsRequest writes and those encode() writes of buildRequest's request. */
  function directAndBuilt(records: Record<string, unknown>[], extra: Partial<MapOptions> = {}) {
    const mapper = new RecordMapper(options('metrics', extra));
    const mapped = records.map((r) => mapper.map(r, 1_790_000_000_000)).filter((m): m is Mapped => !('refused' in m));
    expect(mapped).toHaveLength(records.length);
    expect(onlyNumberPoints(mapped)).toBe(true);
    const T = requestType('metrics');
    return { direct: Buffer.from(writeMetricsRequest(mapped)), built: Buffer.from(T.encode(buildRequest('metrics', mapped)).finish()), T };
  }

  it('gauges, sums (cumulative with start times kept per series, delta, monotonic or not), int and double values, every attribute type, several resources and scopes', () => {
    const t0 = '2026-01-02T03:00:00.000Z';
    const t1 = '2026-01-02T03:01:00.000Z';
    const records: Record<string, unknown>[] = [
      { name: 'if.in', value: 100, type: 'Counter64', sysName: 'rtr1', ifIndex: 1, ifName: 'ge-0/0/1', up: true, timestamp: t0 },
      { name: 'if.in', value: 150, type: 'Counter64', sysName: 'rtr1', ifIndex: 1, ifName: 'ge-0/0/1', up: true, timestamp: t1 },
      { name: 'if.in', value: 20, type: 'Counter64', sysName: 'rtr1', ifIndex: 1, ifName: 'ge-0/0/1', up: true, timestamp: t1 }, // a reset
      { name: 'if.in', value: '9223372036854775807', type: 'Counter64', sysName: 'rtr2', ifIndex: 2, timestamp: t0 },
      { name: 'temp', value: -12, sysName: 'rtr1', ratio: 0.5, zero: 0, empty: '', timestamp: t0, time_unix_nano: '1790000000123456789' },
      { name: 'temp', value: 0, sysName: 'rtr1', timestamp: t0, flags: 1, unit: 'Cel', description: 'chassis temperature' },
      { name: 'load', value: 0.75, temporality: 'delta', type: 'sum', monotonic: false, start_time_unix_nano: '1789999999000000000', timestamp: t0 },
      { name: 'load', value: 0, temporality: 'delta', type: 'sum', timestamp: t0, attributes: { nested: { a: [1, 'x', null, false, 2.5] }, list: [] } },
      { name: 'big', value: -9007199254740993n, timestamp: t0, tags: { k: 'v' }, count: 12345678901234567890n },
      { name: 'scoped', value: 1, 'scope.name': 'other', 'scope.version': '', 'scope.attributes.team': 'noc', timestamp: t0 },
      { name: 'scoped', value: 2, resource: { 'service.name': 'elsewhere', 'host.name': '' }, timestamp: t0 },
      { name: 'gauge-start', value: 3, start_time_unix_nano: '1789999999000000001', timestamp: t0, '': 'empty key' },
    ];
    const { direct, built, T } = directAndBuilt(records);
    expect(direct.equals(built)).toBe(true);
    const back = T.toObject(T.decode(direct), { longs: String }) as { resourceMetrics: { scopeMetrics: unknown[] }[] };
    expect(back.resourceMetrics.length).toBeGreaterThanOrEqual(3);
    expect(back.resourceMetrics.flatMap((r) => r.scopeMetrics).length).toBeGreaterThanOrEqual(4);
    // PM-style: every numeric field a counter, with an interval start from a field.
    const pm = directAndBuilt(
      [
        { measObjLdn: 'cell=1', begin_time: t0, timestamp: t1, pmA: 5, pmB: 7.5, sysName: 'gnb1' },
        { measObjLdn: 'cell=2', begin_time: t0, timestamp: t1, pmA: 0, pmB: -1, sysName: 'gnb1' },
      ],
      { valueFields: ['*'], counterFields: ['*'], startTimeField: 'begin_time', nameField: 'measInfo' },
    );
    expect(pm.direct.equals(pm.built)).toBe(true);
  });

  it('one metric name with another unit, type, temporality or monotonicity each time is a metric of its own, however its records alternate', () => {
    const t0 = '2026-01-02T03:00:00.000Z';
    const records: Record<string, unknown>[] = [
      { name: 'm', value: 1, timestamp: t0 },
      { name: 'm', value: 2, unit: 'By', timestamp: t0 },
      { name: 'm', value: 3, timestamp: t0 },
      { name: 'm', value: 4, type: 'counter', timestamp: t0 },
      { name: 'm', value: 5, type: 'counter', temporality: 'delta', timestamp: t0 },
      { name: 'm', value: 6, description: 'described later', timestamp: t0 },
      { name: 'm', value: 7, type: 'counter', monotonic: false, timestamp: t0 },
      { name: 'm', value: 8, timestamp: t0 },
    ];
    const { direct, built, T } = directAndBuilt(records);
    expect(direct.equals(built)).toBe(true);
    type M = {
      unit?: string;
      description?: string;
      gauge?: { dataPoints: unknown[] };
      sum?: { dataPoints: unknown[]; aggregationTemporality: number; isMonotonic?: boolean };
    };
    const back = T.toObject(T.decode(direct)) as { resourceMetrics: { scopeMetrics: { metrics: M[] }[] }[] };
    const metrics = back.resourceMetrics[0]!.scopeMetrics[0]!.metrics;
    // A point whose description alone differs joins its metric (the first point's description).
    expect(metrics.map((x) => [x.unit ?? '', x.description ?? '', x.gauge ? 'gauge' : 'sum', (x.gauge ?? x.sum)!.dataPoints.length])).toEqual([
      ['', '', 'gauge', 4],
      ['By', '', 'gauge', 1],
      ['', '', 'sum', 1],
      ['', '', 'sum', 1],
      ['', '', 'sum', 1],
    ]);
    expect(metrics.slice(2).map((x) => [x.sum!.aggregationTemporality, x.sum!.isMonotonic ?? false])).toEqual([
      [2, true],
      [1, true],
      [2, false],
    ]);
  });

  it('a batch with a histogram or a summary is left to the request path', () => {
    const mapper = new RecordMapper(options('metrics'));
    const mapped = [
      { name: 'g', value: 1 },
      { name: 'lat', type: 'histogram', count: 1, bucket_counts: [1], explicit_bounds: [] },
    ].map((r) => mapper.map(r, 1_790_000_000_000) as Mapped);
    expect(onlyNumberPoints(mapped)).toBe(false);
    expect(onlyNumberPoints(mapped.slice(0, 1))).toBe(true);
  });
});

describe('otlp sink: a batch written again maps to the same points', () => {
  it('a cumulative sum keeps its series start, a record without a time keeps its time, a timed gauge maps alike', () => {
    const mapper = new RecordMapper(options('metrics'));
    const first = { name: 'if.in', value: 100, type: 'Counter64', sysName: 'rtr1', timestamp: '2026-01-02T03:00:00.000Z' };
    const reset = { name: 'if.in', value: 5, type: 'Counter64', sysName: 'rtr1', timestamp: '2026-01-02T03:01:00.000Z' };
    const untimed = { name: 'temp', value: 3, sysName: 'rtr1' };
    const gauge = { name: 'temp', value: 4, sysName: 'rtr1', timestamp: '2026-01-02T03:00:00.000Z' };
    const once = [first, reset, untimed, gauge].map((r) => mapper.map(r, 1_790_000_000_000) as Mapped);
    const again = [first, reset, untimed, gauge].map((r) => mapper.map(r, 1_790_000_060_000) as Mapped);
    expect(mapper.resets).toBe(1);
    expect(again[0]).toBe(once[0]);
    expect(again[1]).toBe(once[1]);
    expect(again[2]).toBe(once[2]);
    expect(Buffer.from(writeMetricsRequest(again)).equals(Buffer.from(writeMetricsRequest(once)))).toBe(true);
  });
});

describe('otlp sink: the resource of each record', () => {
  it('records in runs and interleaved from several devices each get their own resource; 7 and "7" differ; an object changed between records is read again', () => {
    const mapper = new RecordMapper(options('metrics'));
    const device = { name: 'sys', site: 'a' };
    const records: Record<string, unknown>[] = [
      { name: 'm', value: 1, sysName: 'rtr1', timestamp: 1 },
      { name: 'm', value: 2, sysName: 'rtr1', timestamp: 1 },
      { name: 'm', value: 3, sysName: 'rtr2', timestamp: 1 },
      { name: 'm', value: 4, sysName: 'rtr1', timestamp: 1 },
      { name: 'm', value: 5, timestamp: 1 },
      { name: 'm', value: 6, sysName: 7, timestamp: 1 },
      { name: 'm', value: 7, sysName: '7', timestamp: 1 },
      { name: 'm', value: 8, sysName: device, timestamp: 1 },
    ];
    const host = (m: Mapped) => m.resource.find((kv) => kv.key === 'host.name')?.value;
    const mapped = records.map((r) => mapper.map(r, 1_790_000_000_000) as Mapped);
    device.site = 'b';
    const after = mapper.map({ name: 'm', value: 9, sysName: device, timestamp: 1 }, 1_790_000_000_000) as Mapped;
    expect([...mapped, after].map(host)).toEqual([
      { stringValue: 'rtr1' },
      { stringValue: 'rtr1' },
      { stringValue: 'rtr2' },
      { stringValue: 'rtr1' },
      undefined,
      { intValue: 7 },
      { stringValue: '7' },
      {
        kvlistValue: {
          values: [
            { key: 'name', value: { stringValue: 'sys' } },
            { key: 'site', value: { stringValue: 'a' } },
          ],
        },
      },
      {
        kvlistValue: {
          values: [
            { key: 'name', value: { stringValue: 'sys' } },
            { key: 'site', value: { stringValue: 'b' } },
          ],
        },
      },
    ]);
    expect(mapped.every((m) => m.resource.some((kv) => kv.key === 'service.name'))).toBe(true);
    expect(new Set(mapped.map((m) => m.resourceKey)).size).toBe(6);
  });
});
