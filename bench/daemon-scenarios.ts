// Daemon scenarios: a real `svc serve` daemon in this process (SQLite in a temp dir) and load from
// autocannon in a separate process, so the load generator does not share the daemon's event loop.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDaemon, type Daemon } from '../src/daemon/daemon.js';
import { silentLogger } from '../src/observability/log.js';
import { loadSettings } from '../src/settings.js';
import type { Measured, Scenario } from './scenarios.js';
import { ALARM_BODY, cannon, countLines, webhookIngestYaml } from './http-load.js';

async function daemon(dir: string, env: Record<string, string> = {}): Promise<Daemon> {
  const settings = loadSettings({
    SVC_HOST: '127.0.0.1',
    SVC_PORT: '0',
    SVC_DB_PATH: join(dir, 'svc.db'),
    SVC_PIPELINE_DIR: join(dir, 'none'),
    SVC_NODE_ID: 'bench',
    ...env,
  });
  return startDaemon({ settings, log: silentLogger });
}

const manualPipeline = (name: string, dir: string) => `version: "1"
pipeline:
  name: ${name}
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(join(dir, 'in'))} }
  serializer_in: { type: ndjson }
  sinks: [{ type: local, path: ${JSON.stringify(join(dir, 'out'))} }]
`;

/** GET /api/pipelines with 200 pipelines and GET /api/runs?limit=100 over 100,000 runs: latency. */
export const apiRead: Scenario = {
  async run(): Promise<Measured> {
    const dir = mkdtempSync(join(tmpdir(), 'svc-bench-api-'));
    const d = await daemon(dir);
    try {
      for (let i = 0; i < 200; i++) await d.manager.register(manualPipeline(`p${String(i).padStart(3, '0')}`, dir), { origin: 'api' });
      const t0 = Date.parse('2026-01-01T00:00:00Z');
      for (let i = 0; i < 100_000; i++) {
        const started = new Date(t0 + i * 1000).toISOString();
        await d.store.runs.finish({
          run_id: `run-${i}`,
          pipeline: `p${String(i % 200).padStart(3, '0')}`,
          node_id: 'bench',
          status: i % 50 === 0 ? 'failed' : 'success',
          started_at: started,
          finished_at: new Date(t0 + i * 1000 + 800).toISOString(),
          records_in: 1000,
          records_out: 990,
          records_filtered: 0,
          records_skipped: 10,
          bytes_in: 120_000,
          bytes_out: 118_000,
          dlq_count: 0,
          error: i % 50 === 0 ? 'source unreachable' : null,
          errors: [],
        });
      }
      const duration = 10;
      const list = await cannon(['-c', '10', '-d', String(duration), `${d.url}/api/pipelines`]);
      const runs = await cannon(['-c', '10', '-d', String(duration), `${d.url}/api/runs?limit=100`]);
      if (list.non2xx || runs.non2xx || list.errors || runs.errors) throw new Error('api-read: requests failed');
      return {
        pipelines_p50_ms: list.latency.p50,
        pipelines_p99_ms: list.latency.p99,
        pipelines_req_per_sec: Math.round(list.requests.average),
        runs_p50_ms: runs.latency.p50,
        runs_p99_ms: runs.latency.p99,
        runs_req_per_sec: Math.round(runs.requests.average),
      };
    } finally {
      await d.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

/** 1 KB JSON bodies POSTed to a webhook pipeline writing NDJSON for 30 s; every accepted one counted. */
export const webhookIngest: Scenario = {
  async run(): Promise<Measured> {
    const dir = mkdtempSync(join(tmpdir(), 'svc-bench-webhook-'));
    const d = await daemon(dir);
    try {
      await d.manager.register(webhookIngestYaml(join(dir, 'out'), 'ingest.ndjson'), { origin: 'api' });
      const duration = Number(process.env.BENCH_SECONDS ?? 30);
      const r = await cannon([
        '-c',
        process.env.BENCH_CONNECTIONS ?? '50',
        '-p',
        process.env.BENCH_PIPELINING ?? '10',
        '-d',
        String(duration),
        '-m',
        'POST',
        '-H',
        'content-type=application/json',
        '-b',
        ALARM_BODY,
        `${d.url}/webhooks/ingest`,
      ]);
      await d.manager.stop('ingest'); // drains: every accepted body is written before this resolves
      const out = join(dir, 'out');
      let lines = 0;
      for (const f of readdirSync(out)) lines += await countLines(join(out, f));
      return {
        seconds: duration,
        accepted: r['2xx'],
        refused: r.non2xx,
        errors: r.errors,
        accepted_per_sec: Math.round(r['2xx'] / duration),
        records_written: lines,
        // Requests still in flight when the load stopped are written but not counted by autocannon.
        lost: Math.max(0, r['2xx'] - lines),
        p99_ms: r.latency.p99,
      };
    } finally {
      await d.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
