// cluster-dispatch (issue 15): 1,000 manual runs of a tiny local -> local batch pipeline (10 NDJSON
// records) through a manager and 3 workers, each a real `svc serve` process on loopback, the
// manager's store a fresh PostgreSQL database. The reference, in the same run: the same 1,000 runs
// on one standalone `svc serve` with the same kind of store (a fresh database of its own), so the
// ratio is what dispatch costs and not SQLite vs PostgreSQL.
// The load: PIPELINES pipelines, each run again as soon as its last run is over (a pipeline refuses
// a second run while one is in progress), so PIPELINES runs are in flight at a time. Per run:
//  - start: the run record's started_at (the executing process's clock; same host) minus the time
//    the POST /run was sent. The 202 can arrive after a standalone run started, so the request,
//    not the answer, is the origin; the cluster's start minus the standalone's is the dispatch;
//  - end to end: the POST /run sent to the GET /api/runs/{id} that first shows it over (polled
//    every POLL_MS, the same for both sides);
//  - outcome: the record's finished_at to that GET: on a worker, the way back (the outbox's
//    pipeline-stats and run-complete, the manager storing the outcome), plus up to POLL_MS;
//  - runs/s: the 1,000 runs over the wall time from the first POST to the last run seen over;
//  - refused_409: POSTs refused although the record of the pipeline's last run already showed it
//    over (the pipeline frees its slot a moment after storing the outcome); asked again.
// One warm-up run of every pipeline comes first and is not counted. The daemons are spawned from
// this build (.bench-build/src/cli/main.js), as users run svc, and killed by PID, also on failure.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { freePort } from '../test/helpers/net.js';
import type { Measured, Scenario } from './scenarios.js';
import { ALARM_BODY, cannon, countLines, webhookIngestYaml } from './http-load.js';

const RUNS = Number(process.env.SVC_BENCH_CLUSTER_RUNS ?? 1000);
const PIPELINES = Number(process.env.SVC_BENCH_CLUSTER_PIPELINES ?? 12);
const WORKERS = 3;
const RECORDS = 10;
const POLL_MS = 10;
const MAIN = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const PG = { host: '127.0.0.1', port: 5432, user: 'postgres' };

export interface Proc {
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Every process this scenario started: killed on exit too, should a failure skip the stops. */
const started = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `svc serve` with `env`, resolved when `readyUrl` answers 200. */
export async function serve(env: Record<string, string>, readyUrl: string, scratch: string): Promise<Proc> {
  const child = spawn(process.execPath, [MAIN, 'serve'], {
    env: {
      ...process.env,
      SVC_HOST: '127.0.0.1',
      SVC_CONSOLE_PORT: '0',
      SVC_LOG_LEVEL: 'ERROR',
      SVC_UI_DIR: '',
      SVC_SHUTDOWN_TIMEOUT_SECONDS: '5',
      SVC_DB_PATH: join(scratch, 'svc.db'),
      SVC_PIPELINE_DIR: join(scratch, 'pipelines'),
      SVC_MIB_DIR: join(scratch, 'mibs'),
      SVC_MIB_SOURCE_DIR: join(scratch, 'mib-sources'),
      SVC_MIB_BUNDLED_SOURCE_DIR: '',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  started.add(child);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr = (stderr + s).slice(-4000)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      if (await Promise.race([exited.then(() => false), sleep(8000).then(() => true)])) child.kill('SIGKILL');
      await exited;
    }
    started.delete(child);
  };
  const end = Date.now() + 30_000;
  while ((await fetch(readyUrl).catch(() => undefined))?.status !== 200) {
    if (child.exitCode !== null || Date.now() > end) {
      await stop();
      throw new Error(`svc serve (${env.SVC_MODE}) did not get ready at ${readyUrl}: ${stderr}`);
    }
    await sleep(100);
  }
  return { child, stop };
}

export async function call(method: string, url: string, body?: string): Promise<{ status: number; body: any; text: string }> {
  const res = await fetch(url, { method, headers: body === undefined ? {} : { 'content-type': 'application/yaml' }, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed, text };
}

/** A fresh PostgreSQL database, dropped by `drop()` (connections to it closed by force). */
export async function freshDatabase(name: string): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = new pg.Client({ ...PG, database: 'postgres' });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  return {
    url: `postgresql://${PG.user}@${PG.host}:${PG.port}/${name}`,
    async drop() {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await admin.end().catch(() => {});
    },
  };
}

const pipelineYaml = (name: string, dir: string) => `version: "1"
pipeline:
  name: ${name}
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(join(dir, 'in'))}, file_pattern: "*.ndjson" }
  serializer_in: { type: ndjson }
  serializer_out: { type: ndjson }
  sinks: [{ type: local, path: ${JSON.stringify(join(dir, 'out'))}, filename_template: out.ndjson }]
`;

/** PIPELINES pipelines over one small input file each, registered through `api`. */
async function registerPipelines(api: string, root: string): Promise<string[]> {
  let input = '';
  for (let i = 0; i < RECORDS; i++) input += JSON.stringify({ ifIndex: i, host: `ne-${i}`, ifInOctets: 1000 * i }) + '\n';
  const names: string[] = [];
  for (let i = 0; i < PIPELINES; i++) {
    const name = `tiny-${String(i).padStart(2, '0')}`;
    const dir = join(root, name);
    mkdirSync(join(dir, 'in'), { recursive: true });
    writeFileSync(join(dir, 'in', 'a.ndjson'), input);
    const r = await call('POST', `${api}/api/pipelines`, pipelineYaml(name, dir));
    if (r.status !== 201) throw new Error(`registering ${name}: ${r.status} ${r.text}`);
    names.push(name);
  }
  return names;
}

/** 409s to a run asked for after the record of the pipeline's last run showed it over. */
let refusedWhileOver = 0;

interface Timed {
  sent: number;
  startedAt: number;
  finishedAt: number;
  seen: number;
  node: string;
}

/** One run of `name`, polled until it is over; it must have read and written every record. */
async function oneRun(api: string, name: string): Promise<Timed> {
  let sent: number;
  let r: Awaited<ReturnType<typeof call>>;
  // The record of the last run can show it over a moment before the pipeline takes a new run
  // (409): counted and asked again.
  for (;;) {
    sent = Date.now();
    r = await call('POST', `${api}/api/pipelines/${name}/run`);
    if (r.status !== 409) break;
    refusedWhileOver++;
    await sleep(1);
  }
  if (r.status !== 202) throw new Error(`run ${name}: ${r.status} ${r.text}`);
  const runId = r.body.run_id as string;
  for (;;) {
    await sleep(POLL_MS);
    const g = await call('GET', `${api}/api/runs/${runId}`);
    if (g.status === 404) continue; // a dispatched run is stored once a worker has taken it
    if (g.status !== 200) throw new Error(`GET run ${runId}: ${g.status} ${g.text}`);
    if (g.body.status === 'running') continue;
    const seen = Date.now();
    if (g.body.status !== 'success' || g.body.records_out !== RECORDS) throw new Error(`run ${runId} of ${name}: ${g.text}`);
    return { sent, startedAt: Date.parse(g.body.started_at), finishedAt: Date.parse(g.body.finished_at), seen, node: g.body.node_id };
  }
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

/** A warm-up run of each pipeline, then RUNS runs spread over them, all pipelines busy at once. */
async function load(api: string, names: string[]) {
  await Promise.all(names.map((n) => oneRun(api, n)));
  const timed: Timed[] = [];
  let next = 0;
  refusedWhileOver = 0;
  const t0 = Date.now();
  await Promise.all(
    names.map(async (n) => {
      while (next < RUNS) {
        next++;
        timed.push(await oneRun(api, n));
      }
    }),
  );
  const seconds = (Date.now() - t0) / 1000;
  const start = timed.map((t) => t.startedAt - t.sent).sort((a, b) => a - b);
  const e2e = timed.map((t) => t.seen - t.sent).sort((a, b) => a - b);
  const outcome = timed.map((t) => t.seen - t.finishedAt).sort((a, b) => a - b);
  const perNode = new Map<string, number>();
  for (const t of timed) perNode.set(t.node, (perNode.get(t.node) ?? 0) + 1);
  return {
    seconds,
    runsPerSec: timed.length / seconds,
    startP50: percentile(start, 50),
    startP99: percentile(start, 99),
    e2eP50: percentile(e2e, 50),
    e2eP99: percentile(e2e, 99),
    outcomeP50: percentile(outcome, 50),
    outcomeP99: percentile(outcome, 99),
    refused: refusedWhileOver,
    perNode: [...perNode.entries()]
      .sort()
      .map(([k, v]) => `${k}:${v}`)
      .join(' '),
  };
}

/** Fresh database and directory for one side; everything it started stopped and removed after. */
export async function side<T>(label: string, f: (db: string, root: string, procs: Proc[]) => Promise<T>): Promise<T> {
  const root = mkdtempSync(join(tmpdir(), `svc-bench-${label}-`));
  const db = await freshDatabase(`svc_bench_${process.pid}_${label}`);
  const procs: Proc[] = [];
  try {
    return await f(db.url, root, procs);
  } finally {
    // Manager (or standalone) first, so that no run is dispatched to a worker on its way out.
    for (const p of procs.reverse()) await p.stop();
    await db.drop();
    rmSync(root, { recursive: true, force: true });
  }
}

async function standalone() {
  return side('standalone', async (db, root, procs) => {
    const port = await freePort();
    const api = `http://127.0.0.1:${port}`;
    const scratch = join(root, 'daemon');
    mkdirSync(join(scratch, 'pipelines'), { recursive: true });
    procs.push(await serve({ SVC_MODE: 'standalone', SVC_PORT: String(port), SVC_DB_URL: db, SVC_NODE_ID: 'standalone' }, `${api}/api/health`, scratch));
    return load(api, await registerPipelines(api, join(root, 'work')));
  });
}

/** A manager and `workers` workers on database `db`; their ingress URLs, once every worker is healthy. */
export async function startCluster(
  db: string,
  root: string,
  procs: Proc[],
  workers: number,
  env: { manager?: Record<string, string> } = {},
): Promise<{ api: string; ingress: string[] }> {
  const managerPort = await freePort();
  const api = `http://127.0.0.1:${managerPort}`;
  const agents: string[] = [];
  const ingress: string[] = [];
  for (let i = 0; i < workers; i++) {
    const [agentPort, ingressPort] = [await freePort(), await freePort()];
    const scratch = join(root, `worker-${i}`);
    mkdirSync(join(scratch, 'pipelines'), { recursive: true });
    const agent = `http://127.0.0.1:${agentPort}`;
    procs.push(
      await serve(
        {
          SVC_MODE: 'worker',
          SVC_WORKER_ID: `w${i}`,
          SVC_WORKER_PORT: String(agentPort),
          SVC_WORKER_INGRESS_PORT: String(ingressPort),
          SVC_DATA_DIR: scratch,
          SVC_MANAGER_URL: api,
        },
        `${agent}/agent/health`,
        scratch,
      ),
    );
    agents.push(agent);
    ingress.push(`http://127.0.0.1:${ingressPort}`);
  }
  const scratch = join(root, 'manager');
  mkdirSync(join(scratch, 'pipelines'), { recursive: true });
  procs.push(
    await serve(
      {
        SVC_MODE: 'manager',
        SVC_PORT: String(managerPort),
        SVC_NODE_ID: 'manager',
        SVC_DB_URL: db,
        SVC_WORKER_URLS: agents.join(','),
        SVC_WORKER_HEALTH_INTERVAL: '1',
        ...env.manager,
      },
      `${api}/api/health`,
      scratch,
    ),
  );
  const end = Date.now() + 20_000;
  for (;;) {
    const nodes = await call('GET', `${api}/api/cluster/nodes`);
    const ok = (nodes.body?.workers ?? []).filter((w: { ok: boolean }) => w.ok).length;
    if (ok === workers) break;
    if (Date.now() > end) throw new Error(`${ok} of ${workers} workers healthy after 20 s: ${nodes.text}`);
    await sleep(200);
  }
  return { api, ingress };
}

async function cluster() {
  return side('cluster', async (db, root, procs) => {
    const { api } = await startCluster(db, root, procs, WORKERS);
    return load(api, await registerPipelines(api, join(root, 'work')));
  });
}

const round = (n: number, digits = 1) => Number(n.toFixed(digits));

export const clusterDispatch: Scenario = {
  async run(): Promise<Measured> {
    const ref = await standalone();
    const c = await cluster();
    return {
      runs: RUNS,
      pipelines: PIPELINES,
      workers: WORKERS,
      runs_per_sec: round(c.runsPerSec),
      start_p50_ms: c.startP50,
      start_p99_ms: c.startP99,
      e2e_p50_ms: c.e2eP50,
      e2e_p99_ms: c.e2eP99,
      outcome_p50_ms: c.outcomeP50,
      outcome_p99_ms: c.outcomeP99,
      runs_per_worker: c.perNode,
      refused_409: c.refused,
      standalone_runs_per_sec: round(ref.runsPerSec),
      standalone_start_p50_ms: ref.startP50,
      standalone_start_p99_ms: ref.startP99,
      standalone_e2e_p50_ms: ref.e2eP50,
      standalone_e2e_p99_ms: ref.e2eP99,
      standalone_outcome_p50_ms: ref.outcomeP50,
      standalone_outcome_p99_ms: ref.outcomeP99,
      standalone_refused_409: ref.refused,
      // What dispatch adds to a run's start (p50), and the throughput kept (cluster / standalone).
      dispatch_p50_ms: c.startP50 - ref.startP50,
      dispatch_p99_ms: c.startP99 - ref.startP99,
      runs_per_sec_ratio: round(c.runsPerSec / ref.runsPerSec, 2),
    };
  },
};

// webhook-cluster (issue 15): 1 KB JSON bodies POSTed for INGEST_SECONDS to a webhook stream, on
// one standalone `svc serve` and, in the same run, through the ingress of 2 workers (the stream has
// a slot on each; the load is split between them, as a Service would). Each side's pipeline is
// stopped after the load (the slots drain), and every body an ingress answered 2xx must be in the
// sink's files: `lost` counts those that are not.
const INGEST_SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const INGEST_CONNECTIONS = 50;

/** Registers the stream, waits until `ready()`, loads every URL at once, stops it and counts. */
async function ingest(api: string, urls: string[], out: string, ready: () => Promise<boolean>) {
  const r = await call('POST', `${api}/api/pipelines`, webhookIngestYaml(out, '{run_id}.ndjson'));
  if (r.status !== 201) throw new Error(`registering the stream: ${r.status} ${r.text}`);
  const end = Date.now() + 30_000;
  while (!(await ready())) {
    if (Date.now() > end) throw new Error('the webhook stream did not start in 30 s');
    await sleep(200);
  }
  const runId = (await call('GET', `${api}/api/pipelines/ingest`)).body.active_run_id as string;
  const each = Math.ceil(INGEST_CONNECTIONS / urls.length);
  const results = await Promise.all(
    urls.map((u) =>
      cannon([
        '-c',
        String(each),
        '-p',
        '10',
        '-d',
        String(INGEST_SECONDS),
        '-m',
        'POST',
        '-H',
        'content-type=application/json',
        '-b',
        ALARM_BODY,
        `${u}/webhooks/ingest`,
      ]),
    ),
  );
  const stop = await call('POST', `${api}/api/pipelines/ingest/stop`);
  if (stop.status !== 200) throw new Error(`stopping the stream: ${stop.status} ${stop.text}`);
  const until = Date.now() + 60_000;
  while ((await call('GET', `${api}/api/runs/${runId}`)).body?.status === 'running') {
    if (Date.now() > until) throw new Error('the stream did not stop in 60 s');
    await sleep(200);
  }
  let written = 0;
  for (const f of readdirSync(out)) written += await countLines(join(out, f));
  const accepted = results.reduce((n, x) => n + x['2xx'], 0);
  return {
    accepted,
    refused: results.reduce((n, x) => n + x.non2xx + x.errors, 0),
    acceptedPerSec: accepted / INGEST_SECONDS,
    p99: Math.max(...results.map((x) => x.latency.p99)),
    written,
    lost: Math.max(0, accepted - written),
  };
}

export const webhookCluster: Scenario = {
  async run(): Promise<Measured> {
    const ref = await side('wh_standalone', async (db, root, procs) => {
      const port = await freePort();
      const api = `http://127.0.0.1:${port}`;
      const scratch = join(root, 'daemon');
      mkdirSync(join(scratch, 'pipelines'), { recursive: true });
      procs.push(await serve({ SVC_MODE: 'standalone', SVC_PORT: String(port), SVC_DB_URL: db, SVC_NODE_ID: 'standalone' }, `${api}/api/health`, scratch));
      return ingest(api, [api], join(root, 'out'), async () => (await call('GET', `${api}/api/pipelines/ingest`)).body?.status === 'running');
    });
    const c = await side('wh_cluster', async (db, root, procs) => {
      const { api, ingress } = await startCluster(db, root, procs, 2);
      return ingest(
        api,
        ingress,
        join(root, 'out'),
        async () => (await call('GET', `${api}/api/pipelines/ingest/placement`)).body?.active_slots === ingress.length,
      );
    });
    return {
      seconds: INGEST_SECONDS,
      workers: 2,
      accepted: c.accepted,
      refused: c.refused,
      accepted_per_sec: Math.round(c.acceptedPerSec),
      p99_ms: c.p99,
      written: c.written,
      lost: c.lost,
      standalone_accepted: ref.accepted,
      standalone_refused: ref.refused,
      standalone_accepted_per_sec: Math.round(ref.acceptedPerSec),
      standalone_p99_ms: ref.p99,
      standalone_lost: ref.lost,
      accepted_per_sec_ratio: round(c.acceptedPerSec / ref.acceptedPerSec, 2),
    };
  },
};
