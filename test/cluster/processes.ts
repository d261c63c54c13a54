// A manager and its workers as real `svc serve` processes on loopback ports, the manager's store a
// fresh PostgreSQL database. Ports are chosen up front so that each side can be restarted where
// the other expects it (a worker on its volume, the manager on its database).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { postgresDb, type TestDb } from '../connectors/peers/sql.js';
import { freePort, serveChild } from '../helpers/daemon.js';
import { until } from '../helpers/wait.js';
import { tempDir } from '../helpers/fs.js';

export interface Proc {
  url: string;
  child: import('node:child_process').ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
}

export interface WorkerSlot {
  id: string;
  agentPort: number;
  ingressPort: number;
  dataDir: string;
  proc?: Proc;
  agentUrl: string;
  ingressUrl: string;
}

export interface Cluster {
  db: TestDb;
  managerUrl: string;
  /** The port of a second manager on the same database (the workers' SVC_MANAGER_URL names it too). */
  standbyPort: number;
  manager?: Proc;
  workers: WorkerSlot[];
  root: string;
  /** `port`: another manager on the same database (HA); `standby`: do not wait for it to lead. */
  startManager(env?: Record<string, string>, o?: { port?: number; standby?: boolean }): Promise<Proc>;
  startWorker(i: number, env?: Record<string, string>): Promise<Proc>;
  /** SIGKILL (or the given signal) and wait for the exit. */
  kill(p: Proc | undefined, signal?: NodeJS.Signals): Promise<void>;
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any; text: string }>;
  stop(): Promise<void>;
}

/** Workers in network namespaces of their own (test/cluster/netns.ts), by index. */
export interface ClusterNet {
  workers: Record<number, { host: string; prefix: string[]; managerHost: string }>;
}

export async function startCluster(
  n: number,
  env: {
    manager?: Record<string, string>;
    worker?: Record<string, string> /** Kept across the tests of a file (tempDir's go after each test); the caller removes it. */;
    root?: string;
  } = {},
  net?: ClusterNet,
): Promise<Cluster> {
  const db = await postgresDb();
  const root = env.root ?? tempDir('svc-cluster-');
  const managerPort = await freePort();
  const managerUrl = `http://127.0.0.1:${managerPort}`;
  // Where a second manager listens (high availability): workers know both, as they would know a Service.
  const standbyPort = await freePort();
  const workers: WorkerSlot[] = [];
  for (let i = 0; i < n; i++) {
    const agentPort = await freePort();
    const ingressPort = await freePort();
    const dataDir = join(root, `worker-${i}`);
    mkdirSync(dataDir, { recursive: true });
    const host = net?.workers[i]?.host ?? '127.0.0.1';
    workers.push({ id: `w${i}`, agentPort, ingressPort, dataDir, agentUrl: `http://${host}:${agentPort}`, ingressUrl: `http://${host}:${ingressPort}` });
  }
  mkdirSync(join(root, 'pipelines'), { recursive: true });
  const c: Cluster = {
    db,
    managerUrl,
    standbyPort,
    workers,
    root,
    async startManager(extra = {}, o: { port?: number; standby?: boolean } = {}) {
      const proc = await serveChild(
        {
          SVC_MODE: 'manager',
          SVC_NODE_ID: 'manager',
          SVC_DB_URL: db.url,
          SVC_PIPELINE_DIR: join(root, 'pipelines'),
          SVC_WORKER_URLS: workers.map((w) => w.agentUrl).join(','),
          SVC_WORKER_HEALTH_INTERVAL: '1',
          // A killed leader's lease runs out in 5 s (default 15) for a restarted manager to take over.
          SVC_LEADER_LEASE_SECONDS: '5',
          SVC_UI_DIR: '',
          SVC_SCHEMA_DIR: join(root, 'manager-schemas'),
          // Each manager process its own state folder (one daemon per state folder is enforced).
          SVC_STATE_DIR: join(root, `manager-${o.port ?? managerPort}-state`),
          // Reachable from workers in other network namespaces too.
          ...(net ? { SVC_HOST: '0.0.0.0' } : {}),
          ...env.manager,
          ...extra,
        },
        // Generous: several real processes start at once on a loaded machine.
        { port: o.port ?? managerPort, keep: true, readyMs: 60_000 },
      );
      // Serving once it leads (a standby answers 503 on /api/ready): after the lease of a killed
      // leader runs out (5 s) and the pipelines are loaded, which two test files on two cores slow.
      if (o.standby !== true)
        await until(async () => (await fetch(`${proc.url}/api/ready`).catch(() => undefined))?.status === 200, 40_000, '/api/ready 200', 100);
      // A standby: once its start is over (the console too), /api/ready says `standby`, not `starting`.
      else
        await until(
          async () => ((await (await fetch(`${proc.url}/api/ready`)).json()) as { scheduler?: string }).scheduler === 'standby',
          40_000,
          '/api/ready to say standby',
          100,
        );
      if (o.port === undefined) c.manager = proc;
      return proc;
    },
    async startWorker(i, extra = {}) {
      const w = workers[i]!;
      const ns = net?.workers[i];
      const managerHost = ns?.managerHost ?? '127.0.0.1';
      w.proc = await serveChild(
        {
          SVC_MODE: 'worker',
          SVC_WORKER_ID: w.id,
          SVC_WORKER_PORT: String(w.agentPort),
          SVC_WORKER_INGRESS_PORT: String(w.ingressPort),
          SVC_DATA_DIR: w.dataDir,
          SVC_MANAGER_URL: `http://${managerHost}:${managerPort},http://${managerHost}:${standbyPort}`,
          SVC_STATS_INTERVAL: '1',
          SVC_SHUTDOWN_TIMEOUT_SECONDS: '10',
          ...(ns ? { SVC_HOST: ns.host } : {}),
          ...env.worker,
          ...extra,
        },
        { port: w.agentPort, ready: '/agent/health', keep: true, readyMs: 60_000, ...(ns ? { host: ns.host, prefix: ns.prefix } : {}) },
      );
      return w.proc;
    },
    async kill(p, signal = 'SIGKILL') {
      if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
      p.child.kill(signal);
      await p.exited;
    },
    async call(method, path, body, headers = {}) {
      const h: Record<string, string> = { ...headers };
      if (body !== undefined) h['content-type'] ??= typeof body === 'string' ? 'application/yaml' : 'application/json';
      const res = await fetch((path.startsWith('http') ? '' : managerUrl) + path, {
        method,
        headers: h,
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        // not JSON
      }
      return { status: res.status, body: parsed as any, text };
    },
    async stop() {
      if (process.env.SVC_TEST_CLUSTER_LOGS) {
        for (const p of [c.manager, ...workers.map((w) => w.proc)]) if (p) console.log(`--- ${p.url}\n${p.stderr()}`);
      }
      await c.kill(c.manager, 'SIGKILL');
      for (const w of workers) await c.kill(w.proc, 'SIGKILL');
      await db.stop();
    },
  };
  return c;
}
