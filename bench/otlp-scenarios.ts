// otlp-ingest: OTLP/HTTP protobuf metrics bodies through the otlp source (docs/connectors/otlp.md).
// 400 ExportMetricsServiceRequests of 1,000 gauge data points each (2 resources, 10 metrics,
// 3 attributes per point), built before timing, POSTed by 8 concurrent senders. Measured in the
// same process, rounds alternated, medians:
//   - reference_points_per_sec: a bare node:http server that reads each body and decodes it with
//     the same protobufjs type (src/plugins/connectors/otlp/proto.ts), then answers 200;
//   - svc_points_per_sec: the otlp source (bounded pre-walk, decode into records) -> NDJSON into
//     a local file, until every point is written. ratio = svc / reference (goal >= 0.6).
import { createServer, request } from 'node:http';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Measured, Scenario } from './scenarios.js';
import { loadPipelineText } from '../src/config/load.js';
import { runPipeline } from '../src/engine/runner.js';
import { MemoryProcessedFiles } from '../src/plugins/connector-runtime/processed-files.js';
import { silentLogger } from '../src/observability/log.js';
import { requestType } from '../src/plugins/connectors/otlp/proto.js';
import type { Rec } from '../src/plugins/types.js';
import { alternate, childMeasure, ratio } from './compare.js';
import { timedRun } from './pipeline.js';
import { startOtlpCollector, type OtlpCollector } from '../test/connectors/peers/otlp.js';
import { ValueType } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AggregationTemporality, DataPointType, type MetricData, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';

const BODIES = Number(process.env.BENCH_OTLP_BODIES ?? 400);
const POINTS = 1000;
const ROUNDS = 3;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function body(b: number): Buffer {
  const T = requestType('metrics');
  const t = BigInt(1_790_000_000_000 + b * 1000) * 1_000_000n;
  const resourceMetrics = [0, 1].map((r) => ({
    resource: { attributes: [{ key: 'service.name', value: { stringValue: `router-${r}` } }] },
    scopeMetrics: [
      {
        scope: { name: 'svc-bench', version: '1' },
        metrics: Array.from({ length: 10 }, (_, m) => ({
          name: `if.metric.${m}`,
          unit: 'By',
          gauge: {
            dataPoints: Array.from({ length: POINTS / 20 }, (_, i) => ({
              timeUnixNano: t.toString(),
              asDouble: i * 0.5 + b,
              attributes: [
                { key: 'ifIndex', value: { intValue: i } },
                { key: 'ifName', value: { stringValue: `ge-0/0/${i}` } },
                { key: 'host', value: { stringValue: `host-${(b + i) % 50}` } },
              ],
            })),
          },
        })),
      },
    ],
  }));
  return Buffer.from(T.encode(T.fromObject({ resourceMetrics })).finish());
}

async function post(port: number, bodies: Buffer[]): Promise<void> {
  let next = 0;
  const sender = async () => {
    while (next < bodies.length) {
      const b = bodies[next++]!;
      for (;;) {
        const status = await new Promise<number>((resolve, reject) => {
          const req = request(
            { host: '127.0.0.1', port, method: 'POST', path: '/v1/metrics', headers: { 'content-type': 'application/x-protobuf' } },
            (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode ?? 0));
            },
          );
          req.on('error', reject);
          req.end(b);
        });
        if (status === 200) break;
        if (status !== 503) throw new Error(`otlp POST answered ${status}`);
        await new Promise((r) => setTimeout(r, 5));
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, sender));
}

async function reference(bodies: Buffer[]): Promise<number> {
  const T = requestType('metrics');
  let points = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const m = T.decode(Buffer.concat(chunks)) as unknown as { resourceMetrics: { scopeMetrics: { metrics: { gauge: { dataPoints: unknown[] } }[] }[] }[] };
      for (const rm of m.resourceMetrics) for (const sm of rm.scopeMetrics) for (const mt of sm.metrics) points += mt.gauge.dataPoints.length;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const t0 = performance.now();
  await post((server.address() as AddressInfo).port, bodies);
  const s = (performance.now() - t0) / 1000;
  await new Promise<void>((r) => server.close(() => r()));
  if (points !== bodies.length * POINTS) throw new Error(`reference decoded ${points} points`);
  return points / s;
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const p = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return p;
}

async function svc(bodies: Buffer[]): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-otlp-'));
  try {
    const http = await freePort();
    const grpc = await freePort();
    const { config, diagnostics } = loadPipelineText(`
version: "1"
pipeline:
  name: otlp-bench
  schedule: { type: stream }
  source: { type: otlp, host: 127.0.0.1, http_port: ${http}, grpc_port: ${grpc}, signals: [metrics] }
  serializer_in: { type: json }
  serializer_out: { type: ndjson }
  sinks: [{ type: local, path: ${JSON.stringify(join(dir, 'out'))}, filename_template: out.ndjson }]
`);
    if (!config) throw new Error(diagnostics.map((d) => d.message).join('\n'));
    const stop = new AbortController();
    const done = runPipeline(config, { signal: stop.signal, log: silentLogger, processed: new MemoryProcessedFiles() });
    // wait for the listener
    for (;;) {
      const ok = await new Promise<boolean>((resolve) => {
        const req = request({ host: '127.0.0.1', port: http, method: 'GET', path: '/' }, (res) => {
          res.resume();
          resolve(true);
        });
        req.on('error', () => resolve(false));
        req.end();
      });
      if (ok) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    const t0 = performance.now();
    await post(http, bodies);
    stop.abort();
    const record = await done;
    const s = (performance.now() - t0) / 1000;
    if (record.status !== 'success' || record.records_out !== bodies.length * POINTS) throw new Error(`bench run failed: ${JSON.stringify(record)}`);
    return record.records_out / s;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const otlpIngest: Scenario = {
  async run(): Promise<Measured> {
    const bodies = Array.from({ length: BODIES }, (_, b) => body(b));
    const ref: number[] = [];
    const ours: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      if (r % 2 === 0) {
        ref.push(await reference(bodies));
        ours.push(await svc(bodies));
      } else {
        ours.push(await svc(bodies));
        ref.push(await reference(bodies));
      }
    }
    const reference_points_per_sec = Math.round(median(ref));
    const svc_points_per_sec = Math.round(median(ours));
    return {
      bodies: BODIES,
      points: BODIES * POINTS,
      reference_points_per_sec,
      svc_points_per_sec,
      ratio: Number((svc_points_per_sec / reference_points_per_sec).toFixed(3)),
      goal: 0.6,
    };
  },
};

// otlp-export: records to the otlp sink against the test collector (test/connectors/peers/otlp.ts,
// the official opentelemetry-proto definitions, decoding every request), beside the OpenTelemetry
// JS SDK's own exporter (@opentelemetry/exporter-metrics-otlp-proto) sending the same data points
// to the same collector. 200,000 gauge points: 1 resource (host.name router-0), 20 metrics, 50
// interfaces (3 attributes), 200 steps; 1,000 points (one step) per request on both sides, requests
// one after the other, OTLP/HTTP protobuf without compression on both sides. Each leg runs in a
// fresh process (bench/compare.ts) with its own collector in that process (both sides pay for the
// collector alike), legs alternated over 3 rounds, medians. The svc leg reads the records from an
// NDJSON file (written before timing) through a pipeline; the SDK leg's ResourceMetrics are built
// before timing and only exported. ratio = svc / sdk (goal >= 1).
const EXPORT_STEPS = Number(process.env.BENCH_OTLP_STEPS ?? 200);
const EXPORT_METRICS = 20;
const EXPORT_IFS = 50;
const PER_STEP = EXPORT_METRICS * EXPORT_IFS;
const EXPORT_T0 = 1_790_000_000_000;

/** Data points the collector decoded (and lets go of, so a leg holds no more than a few requests). */
function pointCounter(c: OtlpCollector): () => number {
  let n = 0;
  return () => {
    for (const r of c.received.splice(0)) {
      const rms = (r.request.resource_metrics ?? []) as { scope_metrics?: { metrics?: { gauge?: { data_points?: unknown[] } }[] }[] }[];
      for (const rm of rms) for (const sm of rm.scope_metrics ?? []) for (const m of sm.metrics ?? []) n += m.gauge?.data_points?.length ?? 0;
    }
    return n;
  };
}

function exportRecords(): Rec[] {
  const out: Rec[] = [];
  for (let s = 0; s < EXPORT_STEPS; s++)
    for (let m = 0; m < EXPORT_METRICS; m++)
      for (let i = 0; i < EXPORT_IFS; i++)
        out.push({
          hostname: 'router-0',
          name: `if.metric.${m}`,
          value: i * 0.5 + s + 0.25,
          timestamp: EXPORT_T0 + s * 1000,
          ifIndex: i,
          ifName: `ge-0/0/${i}`,
          host: `host-${(s + i) % 50}`,
        });
  return out;
}

async function withCollector(leg: (url: string) => Promise<number>): Promise<Measured> {
  // The test collector parses the vendored .proto files beside its source; the compiled bench
  // (.bench-build) has none of them, so they are copied there from the repository (npm run bench
  // runs from its root).
  const protoDir = fileURLToPath(new URL('../src/plugins/connectors/otlp/proto/', import.meta.url));
  if (!existsSync(join(protoDir, 'common.proto'))) cpSync(join(process.cwd(), 'src/plugins/connectors/otlp/proto'), protoDir, { recursive: true });
  const c = await startOtlpCollector();
  const count = pointCounter(c);
  const timer = setInterval(count, 50);
  try {
    const seconds = await leg(c.httpUrl);
    const points = count();
    const refused = c.refused.length;
    if (points !== EXPORT_STEPS * PER_STEP || refused) throw new Error(`otlp-export: the collector decoded ${points} points (${refused} requests refused)`);
    return { points, seconds: Number(seconds.toFixed(2)), points_per_sec: Math.round(points / seconds) };
  } finally {
    clearInterval(timer);
    await c.stop();
  }
}

/** The sink's leg: an NDJSON file -> otlp sink (http/protobuf, 1,000 records per request). */
export const otlpExportSvc: Scenario = {
  hidden: true,
  threads: [1],
  run: () =>
    withCollector(async (url) => {
      const dir = mkdtempSync(join(tmpdir(), 'svc-bench-otlp-export-'));
      try {
        mkdirSync(join(dir, 'in'));
        writeFileSync(
          join(dir, 'in', 'points.ndjson'),
          exportRecords()
            .map((r) => JSON.stringify(r))
            .join('\n') + '\n',
        );
        const { record, seconds } = await timedRun(
          `
version: "1"
pipeline:
  name: otlp-export
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(join(dir, 'in'))} }
  serializer_in: { type: ndjson }
  record_chunk_size: ${PER_STEP}
  sinks:
    - { type: otlp, endpoint: ${JSON.stringify(url)}, protocol: http/protobuf, compression: none, max_records_per_request: ${PER_STEP} }
`,
          { log: silentLogger, processed: new MemoryProcessedFiles() },
        );
        if (record.status !== 'success' || record.records_out !== EXPORT_STEPS * PER_STEP || record.dlq_count)
          throw new Error(`otlp-export: the sink's run did not write every point: ${JSON.stringify(record)}`);
        return seconds;
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }),
};

/** The reference leg: the SDK's proto exporter, one ResourceMetrics (one step) per export, in order. */
export const otlpExportSdk: Scenario = {
  hidden: true,
  threads: [1],
  run: () =>
    withCollector(async (url) => {
      const resource = resourceFromAttributes({ 'host.name': 'router-0' });
      const batches: ResourceMetrics[] = [];
      for (let s = 0; s < EXPORT_STEPS; s++) {
        const t = EXPORT_T0 + s * 1000;
        const time: [number, number] = [Math.floor(t / 1000), (t % 1000) * 1_000_000];
        const metrics: MetricData[] = Array.from({ length: EXPORT_METRICS }, (_, m) => ({
          descriptor: { name: `if.metric.${m}`, description: '', unit: '', valueType: ValueType.DOUBLE },
          aggregationTemporality: AggregationTemporality.CUMULATIVE,
          dataPointType: DataPointType.GAUGE,
          dataPoints: Array.from({ length: EXPORT_IFS }, (_, i) => ({
            startTime: time,
            endTime: time,
            attributes: { ifIndex: i, ifName: `ge-0/0/${i}`, host: `host-${(s + i) % 50}` },
            value: i * 0.5 + s + 0.25,
          })),
        }));
        batches.push({ resource, scopeMetrics: [{ scope: { name: 'svc-bench' }, metrics }] });
      }
      const exporter = new OTLPMetricExporter({ url: `${url}/v1/metrics` }); // compression: none, its default;
      const t0 = performance.now();
      for (const b of batches)
        await new Promise<void>((resolve, reject) =>
          exporter.export(b, (r) => (r.code === 0 /* ExportResultCode.SUCCESS */ ? resolve() : reject(r.error ?? new Error('SDK export failed')))),
        );
      const seconds = (performance.now() - t0) / 1000;
      await exporter.shutdown();
      return seconds;
    }),
};

export const otlpExport: Scenario = {
  async run(): Promise<Measured> {
    const { medians, seen } = alternate(
      ROUNDS,
      { sdk: () => childMeasure('otlp-export-sdk', 1), svc: () => childMeasure('otlp-export-svc', 1) },
      'points_per_sec',
    );
    return {
      points: EXPORT_STEPS * PER_STEP,
      points_per_request: PER_STEP,
      svc_points_per_sec: medians.svc!,
      sdk_points_per_sec: medians.sdk!,
      ratio: ratio(medians.svc!, medians.sdk!),
      goal: 1,
      runs: JSON.stringify(seen),
    };
  },
};
