// otlp-ingest: OTLP/HTTP protobuf metrics bodies through the otlp source (docs/connectors/otlp.md).
// 400 ExportMetricsServiceRequests of 1,000 gauge data points each (2 resources, 10 metrics,
// 3 attributes per point), built before timing, POSTed by 8 concurrent senders. Measured in the
// same process, rounds alternated, medians:
//   - reference_points_per_sec: a bare node:http server that reads each body and decodes it with
//     the same protobufjs type (src/plugins/connectors/otlp/proto.ts), then answers 200;
//   - svc_points_per_sec: the otlp source (bounded pre-walk, decode into records) -> NDJSON into
//     a local file, until every point is written. ratio = svc / reference (goal >= 0.6).
import { createServer, request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Measured, Scenario } from './scenarios.js';
import { loadPipelineText } from '../src/config/load.js';
import { runPipeline } from '../src/engine/runner.js';
import { MemoryProcessedFiles } from '../src/plugins/connector-runtime/processed-files.js';
import { silentLogger } from '../src/observability/log.js';
import { requestType } from '../src/plugins/connectors/otlp/proto.js';

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
