// Hostile OTLP bodies against the otlp source's pre-walk (walk.ts) and JSON reader (decode.ts):
// AnyValues nested 100,000 deep (built in linear time: lengths first, then one buffer written
// outside in), a million metrics in a small gzip body, counts and lengths beyond the bytes that
// follow, a resource whose attributes every record would repeat, and the same bodies posted to a
// running source (answered 400 and dead-lettered, the source still answering afterwards).
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { jsonToProtobuf, inflate } from '../../src/plugins/connectors/otlp/decode.js';
import { requestType } from '../../src/plugins/connectors/otlp/proto.js';
import { OtlpDecodeError, walkRequest } from '../../src/plugins/connectors/otlp/walk.js';
import { runPipeline } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { loadPipeline, outputRecords, until } from '../connectors/helpers.js';
import { tempDir } from '../helpers/fs.js';
import { freePort } from '../helpers/net.js';

const CAP = 64 * 1024 * 1024;

const varintLen = (n: number) => {
  let k = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    k++;
  }
  return k;
};
function putVarint(b: Buffer, at: number, n: number): number {
  while (n >= 128) {
    b[at++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  b[at++] = n;
  return at;
}

/**
 * A logs request whose one log record's body is an AnyValue of arrays nested `depth` deep, in
 * O(depth): the length of each level is computed from the inside out, then the bytes are written
 * from the outside in (each level: AnyValue.array_value (5) holding ArrayValue.values (1)).
 */
function deepLogs(depth: number): Buffer {
  const inner = Buffer.from([0x0a, 0x01, 0x78]); // AnyValue { string_value: "x" }
  // len[i]: length of the AnyValue at level i (level depth is the innermost).
  const any = new Array<number>(depth + 1);
  const arr = new Array<number>(depth + 1);
  any[depth] = inner.length;
  for (let i = depth - 1; i >= 0; i--) {
    arr[i] = 1 + varintLen(any[i + 1]!) + any[i + 1]!;
    any[i] = 1 + varintLen(arr[i]!) + arr[i]!;
  }
  const logRecord = 1 + varintLen(any[0]!) + any[0]!; // LogRecord.body (5)
  const scopeLogs = 1 + varintLen(logRecord) + logRecord; // ScopeLogs.log_records (2)
  const resourceLogs = 1 + varintLen(scopeLogs) + scopeLogs; // ResourceLogs.scope_logs (2)
  const total = 1 + varintLen(resourceLogs) + resourceLogs; // request.resource_logs (1)
  const b = Buffer.alloc(total);
  let p = 0;
  b[p++] = 0x0a;
  p = putVarint(b, p, resourceLogs);
  b[p++] = 0x12;
  p = putVarint(b, p, scopeLogs);
  b[p++] = 0x12;
  p = putVarint(b, p, logRecord);
  b[p++] = 0x2a;
  p = putVarint(b, p, any[0]!);
  for (let i = 0; i < depth; i++) {
    b[p++] = 0x2a; // AnyValue.array_value
    p = putVarint(b, p, arr[i]!);
    b[p++] = 0x0a; // ArrayValue.values
    p = putVarint(b, p, any[i + 1]!);
  }
  inner.copy(b, p);
  expect(p + inner.length).toBe(total);
  return b;
}

/** A metrics request of `n` metrics of `each` bytes (repeated ScopeMetrics.metrics), written once. */
function manyMetrics(n: number, metric: Buffer): Buffer {
  const one = Buffer.concat([Buffer.from([0x12]), Buffer.from([metric.length]), metric]);
  const scope = one.length * n;
  const rm = 1 + varintLen(scope) + scope;
  const b = Buffer.alloc(1 + varintLen(rm) + rm);
  let p = 0;
  b[p++] = 0x0a;
  p = putVarint(b, p, rm);
  b[p++] = 0x12;
  p = putVarint(b, p, scope);
  for (let i = 0; i < n; i++) p += one.copy(b, p);
  return b;
}

const timed = <T>(f: () => T): { v?: T; e?: unknown; ms: number } => {
  const t0 = performance.now();
  try {
    return { v: f(), ms: performance.now() - t0 };
  } catch (e) {
    return { e, ms: performance.now() - t0 };
  }
};

describe('otlp: hostile bodies against the pre-walk', () => {
  it('refuses AnyValues nested 100,000 deep at once, without recursion', () => {
    const t0 = performance.now();
    const body = deepLogs(100_000);
    expect(performance.now() - t0).toBeLessThan(2000); // linear to build
    const r = timed(() => walkRequest('logs', body, CAP));
    expect(r.e).toBeInstanceOf(OtlpDecodeError);
    expect(String(r.e)).toMatch(/nested deeper than 32/);
    expect(r.ms).toBeLessThan(1000);
    // 32 deep is taken.
    expect(walkRequest('logs', deepLogs(31), CAP).records).toBe(1);
  });

  it('refuses JSON arrays nested 100,000 deep', () => {
    const json = Buffer.from(`{"resourceLogs":${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
    const r = timed(() => jsonToProtobuf('logs', json));
    expect(r.e).toBeInstanceOf(OtlpDecodeError);
    expect(String(r.e)).toMatch(/nested deeper/);
    expect(r.ms).toBeLessThan(3000);
  });

  it('walks a million empty metrics from a small gzip body in linear time, and caps a million points', () => {
    const empty = manyMetrics(1_000_000, Buffer.from([0x0a, 0x01, 0x6d])); // Metric { name: "m" }
    const gz = gzipSync(empty);
    expect(gz.length).toBeLessThan(100_000);
    const body = inflate(gz, 'gzip', 20 * 1024 * 1024);
    const r = timed(() => walkRequest('metrics', body, CAP));
    expect(r.v).toMatchObject({ records: 0, refused: 0 });
    expect(r.ms).toBeLessThan(5000);
    // Metric { name: "m", gauge { data_points {} } }: a million records, over the output cap.
    const points = manyMetrics(1_000_000, Buffer.from([0x0a, 0x01, 0x6d, 0x2a, 0x02, 0x0a, 0x00]));
    const p = timed(() => walkRequest('metrics', points, CAP));
    expect(String(p.e)).toMatch(/would take more than 67108864 bytes/);
    expect(p.ms).toBeLessThan(5000);
    // And gzip that inflates past the body limit is refused while inflating.
    expect(() => inflate(gzipSync(Buffer.alloc(50_000_000)), 'gzip', 20 * 1024 * 1024)).toThrow(/inflates past/);
  });

  it('refuses lengths and counts beyond the bytes that follow', () => {
    const cases: [Buffer, RegExp][] = [
      [Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00]), /runs past/], // a length of 2^32-1 with 1 byte behind
      [Buffer.from([0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]), /longer than 10 bytes/],
      [Buffer.from([0x0a, 0x05, 0x12, 0x10, 0x00, 0x00, 0x00]), /runs past/], // a child longer than its parent
      [Buffer.from([0x0b]), /wire type 3/],
      [Buffer.from([0x09, 0, 0, 0]), /wire type 1|runs past/],
    ];
    for (const [b, why] of cases) expect(() => walkRequest('metrics', b, CAP), b.toString('hex')).toThrow(why);
  });

  it('refuses a request whose records would repeat a large resource past the output cap', () => {
    const t = requestType('metrics');
    const attrs = Array.from({ length: 2000 }, (_, i) => ({ key: `k${i}`, value: { stringValue: 'v'.repeat(100) } }));
    const body = Buffer.from(
      t
        .encode(
          t.fromObject({
            resourceMetrics: [
              {
                resource: { attributes: attrs },
                scopeMetrics: [{ metrics: [{ name: 'm', gauge: { dataPoints: Array.from({ length: 1000 }, () => ({ asInt: 1 })) } }] }],
              },
            ],
          }),
        )
        .finish(),
    );
    expect(body.length).toBeLessThan(300_000);
    expect(() => walkRequest('metrics', body, CAP)).toThrow(/would take more than/);
  });

  it('a running source answers the deep body 400, dead-letters it, and keeps answering', async () => {
    const port = await freePort();
    const dlq = tempDir('svc-otlp-hostile-dlq-');
    const out = tempDir('svc-otlp-hostile-out-');
    const stop = new AbortController();
    const running = runPipeline(
      loadPipeline({
        name: 'otlp-hostile',
        schedule: { type: 'stream' },
        source: { type: 'otlp', host: '127.0.0.1', grpc_port: 0, http_port: port },
        serializer_in: { type: 'json' },
        serializer_out: { type: 'ndjson' },
        sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
        on_error: 'dlq',
        dlq: { type: 'local', path: dlq, filename_template: 'dlq.ndjson' },
      }),
      { signal: stop.signal, log: silentLogger, processed: new MemoryProcessedFiles() },
    );
    try {
      const post = (body: Buffer) =>
        fetch(`http://127.0.0.1:${port}/v1/logs`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' },
          body: gzipSync(body),
        }).catch(() => undefined);
      await until(async () => (await post(Buffer.alloc(0)))?.status === 200, 20_000, 'the source');
      const r = await post(deepLogs(100_000));
      expect(r?.status).toBe(400);
      await until(() => outputRecords(dlq).length === 1, 20_000, 'the deep body dead-lettered');
      expect(JSON.stringify(outputRecords(dlq)[0])).toMatch(/nested deeper than 32/);
      expect((await post(deepLogs(3)))?.status).toBe(200);
      await until(() => outputRecords(out).length === 1, 20_000, 'the next body delivered');
    } finally {
      stop.abort();
      await running;
    }
  }, 90_000);
});
