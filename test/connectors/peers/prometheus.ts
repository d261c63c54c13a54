// Peer fixture for the prometheus_rw source: Debian's real `prometheus` (2.42) in agent mode,
// started by the test on a free loopback port, scraping a target (the daemon's own /metrics) every
// second and remote-writing what it scraped to the daemon's /webhooks/<path> with a bearer token.
// Killed by its PID. Also a small sink that holds its answers (a blocked downstream) and the
// conformance fixture, which POSTs remote-write bodies it builds itself to the served path.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../../helpers/net.js';
import { tempDir } from '../../helpers/fs.js';
import { encodeBody, REMOTE_WRITE_HEADERS } from '../../../src/plugins/connectors/prometheus_rw/encode.js';
import { peerProcess } from './process.js';
import Fastify from 'fastify';
import { WebhookHub } from '../../../src/plugins/connector-runtime/webhook-hub.js';
import webhookRoutes from '../../../src/engine/webhook-routes.js';
import { loadSettings } from '../../../src/settings.js';
import type { ApiDeps } from '../../../src/api/deps.js';
import type { Peer, PeerFixture, SinkSide, SourceSide } from '../conformance.js';
import { pace, until } from '../../helpers/wait.js';

export interface PrometheusAgent {
  port: number;
  url: string;
  /** Prometheus' own /metrics text (its remote-storage counters). */
  metrics(): Promise<string>;
  /** The value of one of its own series (summed over label sets), NaN when absent. */
  value(metric: string): Promise<number>;
  stop(): Promise<void>;
}

export interface AgentOptions {
  /** host:port of the scrape target (the daemon). */
  target: string;
  /** Where remote write goes: http://.../webhooks/<path>. */
  remoteWriteUrl: string;
  /** Sent as `authorization: {credentials}` (Authorization: Bearer <secret>). */
  secret?: string;
}

/**
 * `prometheus --enable-feature=agent`: scrapes `target` every second and remote-writes with a short
 * send deadline (1 s) and short backoffs (50 ms to 500 ms), so a test sees samples and re-sends in
 * seconds rather than Prometheus' defaults (5 s deadline, 30 ms to 5 s backoff).
 */
export async function prometheusAgent(o: AgentOptions): Promise<PrometheusAgent> {
  const dir = tempDir('svc-prom-agent-');
  const port = await freePort();
  const cfg = {
    global: { scrape_interval: '1s', scrape_timeout: '900ms' },
    scrape_configs: [{ job_name: 'svc', metrics_path: '/metrics', static_configs: [{ targets: [o.target] }] }],
    remote_write: [
      {
        url: o.remoteWriteUrl,
        ...(o.secret ? { authorization: { credentials: o.secret } } : {}),
        queue_config: { batch_send_deadline: '1s', min_backoff: '50ms', max_backoff: '500ms' },
      },
    ],
  };
  const file = join(dir, 'prometheus.yml');
  writeFileSync(file, stringify(cfg));
  const proc = peerProcess(
    'prometheus',
    [
      '--enable-feature=agent',
      `--config.file=${file}`,
      `--storage.agent.path=${join(dir, 'wal')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    port,
  );
  await proc.start();
  const url = `http://127.0.0.1:${port}`;
  const metrics = async () => (await fetch(`${url}/metrics`)).text();
  return {
    port,
    url,
    metrics,
    async value(metric) {
      let sum = NaN;
      for (const line of (await metrics()).split('\n')) {
        const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
        if (m && m[1] === metric) sum = (Number.isNaN(sum) ? 0 : sum) + Number(m[3]);
      }
      return sum;
    },
    stop: () => proc.kill(),
  };
}

/**
 * An HTTP sink target that can hold its answers: while blocked, requests wait unanswered (a
 * downstream that stopped taking writes), so the pipeline stops taking units and the source's
 * queue fills. Stores every NDJSON line it was sent.
 */
export interface HoldingServer {
  url: string;
  lines: string[];
  block(): void;
  release(): void;
  close(): Promise<void>;
}

export async function holdingServer(): Promise<HoldingServer> {
  const lines: string[] = [];
  let blocked = false;
  const waiting: (() => void)[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = () => {
        for (const l of Buffer.concat(chunks).toString('utf8').split('\n')) if (l.trim()) lines.push(l);
        res.writeHead(204).end();
      };
      if (blocked) waiting.push(answer);
      else answer();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/in`,
    lines,
    block: () => (blocked = true),
    release() {
      blocked = false;
      for (const a of waiting.splice(0)) a();
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** One remote-write body per published message: a sample of `conformance_seq` whose value is the body's `seq`. */
export function seqWriteRequest(body: Buffer, at: number): Buffer {
  const { seq } = JSON.parse(body.toString('utf8')) as { seq: number };
  return encodeBody([{ labels: { __name__: 'conformance_seq', job: 'conformance', seq: String(seq) }, samples: [{ value: seq, timestamp_ms: at }] }]);
}

// ---- conformance ------------------------------------------------------------------------------
//
// prometheus_rw is served by the daemon: its "peer" is whoever POSTs remote write to
// /webhooks/<path>. The fixture serves a WebhookHub through the product's own route module
// (src/engine/webhook-routes.ts on Fastify, on a free loopback port), hands that hub to the runs the
// suite starts (`services`), and publishes each body `{seq, pad}` as one remote-write request: one
// sample of `conformance_seq` whose value is seq; the `rename` transform brings it back as `seq`.
// The cases that cannot apply say why (`noReachability`, `noDisrupt`), as `noCredentials` does.

export const RW_HEADERS: Record<string, string> = { ...REMOTE_WRITE_HEADERS };

/** POSTs one remote-write request per body, in order, as Prometheus does: a 503 is sent again after a pause. */
export async function publishRemoteWrite(baseUrl: string, channel: string, bodies: Buffer[], secret?: string) {
  const at = Date.now();
  for (const b of bodies) {
    const body = seqWriteRequest(b, at);
    for (let attempt = 0; ; attempt++) {
      const r = await fetch(`${baseUrl}/webhooks/${channel}`, {
        method: 'POST',
        headers: { ...RW_HEADERS, ...(secret ? { authorization: `Bearer ${secret}` } : {}) },
        body,
      });
      await r.arrayBuffer();
      if (r.status === 204) break;
      if (r.status !== 503 || attempt > 200) throw new Error(`remote write to /webhooks/${channel}: ${r.status}`);
      await pace(50); // Prometheus pauses before it sends again
    }
  }
}

export const prometheusRwFixture: PeerFixture = {
  type: 'prometheus_rw',
  roles: ['source'],
  label: 'source',
  badConfig: { role: 'source', set: { max_queue_size: 0 }, path: 'max_queue_size' },
  async start(): Promise<Peer> {
    const hub = new WebhookHub();
    const app = Fastify();
    await app.register(async (scope) => webhookRoutes(scope, { webhooks: hub, settings: loadSettings({}) } as unknown as ApiDeps));
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const source: SourceSide = {
      config: (channel) => ({ type: 'prometheus_rw', path: channel, secret: 'conformance-token' }),
      publish: (channel, bodies) => publishRemoteWrite(url, channel, bodies, 'conformance-token'),
      publishTo: (baseUrl, channel, bodies) => publishRemoteWrite(baseUrl, channel, bodies, 'conformance-token'),
      services: { webhooks: hub },
      transforms: [{ type: 'rename', fields: { value: 'seq' } }],
    };
    return {
      source,
      wrongPort: (cfg) => cfg,
      noCredentials: 'test() has nothing to reach (the daemon serves the path); the secret is checked per request: 401 in prometheus_rw.test.ts',
      noReachability: 'test() has nothing to reach: the daemon serves the path, so there is no port to get wrong',
      noDisrupt:
        'no connection of ours to break: a sender that was refused (503) sends again (the real Prometheus in prometheus_rw.test.ts), and a daemon killed after a 204 replays its spool (same file)',
      stop: () => app.close(),
    };
  },
};

// ---- a Prometheus server that takes remote write (the prometheus_rw sink's peer) ----------------
//
// Debian's `prometheus` in server mode with --web.enable-remote-write-receiver, its own config and
// data directory, on a free loopback port; basic auth on every endpoint (web config, bcrypt cost 4
// so a check is cheap), killed by its PID and started again on the same port and data directory
// (the WAL holds what it acknowledged). Optional scrape targets for the prometheus_scrape tests.

export const PROM_USER = 'svc';
export const PROM_PASSWORD = 'svc-conformance';
const PROM_PASSWORD_BCRYPT = '$2b$04$jZ7gftkYlxJqdHhAUw/ml.I9tl57N2FXicBrj5wNdzCFEy4ehDbPe';

export interface PrometheusServer {
  url: string;
  /** The remote-write endpoint (/api/v1/write). */
  writeUrl: string;
  /** Basic auth of every request. */
  auth: string;
  /** GET /api/v1/query: the result of an instant query (at `time`, s since the epoch, or now). */
  query(q: string, time?: number): Promise<{ metric: Record<string, string>; value?: [number, string]; values?: [number, string][] }[]>;
  /** SIGKILL, and wait for the exit (what it acknowledged is in its WAL). */
  kill(): Promise<void>;
  /** Started again on the same port and data directory; resolves once it answers ready. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** `scrape`: jobs Prometheus scrapes (every second unless `interval`); the target `SELF` is Prometheus itself. */
export async function prometheusServer(opts: { scrape?: { job: string; targets: string[]; interval?: string }[] } = {}): Promise<PrometheusServer> {
  // Not tempDir(): that is removed after each test, and this server outlives one.
  const dir = mkdtempSync(join(tmpdir(), 'svc-prom-server-'));
  const port = await freePort();
  const cfg = {
    global: { scrape_interval: '1s', scrape_timeout: '900ms' },
    scrape_configs: (opts.scrape ?? []).map((s) => ({
      job_name: s.job,
      ...(s.interval ? { scrape_interval: s.interval, scrape_timeout: s.interval } : {}),
      // SELF: Prometheus itself, whose /metrics sits behind the web config's basic auth.
      static_configs: [{ targets: s.targets.map((t) => (t === 'SELF' ? `127.0.0.1:${port}` : t)) }],
      ...(s.targets.includes('SELF') ? { basic_auth: { username: PROM_USER, password: PROM_PASSWORD } } : {}),
    })),
  };
  writeFileSync(join(dir, 'prometheus.yml'), stringify(cfg));
  writeFileSync(join(dir, 'web.yml'), stringify({ basic_auth_users: { [PROM_USER]: PROM_PASSWORD_BCRYPT } }));
  const proc = peerProcess(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--web.config.file=${join(dir, 'web.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--web.enable-remote-write-receiver',
      '--log.level=warn',
    ],
    port,
  );
  const url = `http://127.0.0.1:${port}`;
  const auth = `Basic ${Buffer.from(`${PROM_USER}:${PROM_PASSWORD}`).toString('base64')}`;
  const start = async () => {
    await proc.start();
    await until(
      async () => (await fetch(`${url}/-/ready`, { headers: { authorization: auth } }).catch(() => undefined))?.status === 200,
      30_000,
      'prometheus ready',
    );
  };
  await start();
  return {
    url,
    writeUrl: `${url}/api/v1/write`,
    auth,
    async query(q, time) {
      const u = new URL(`${url}/api/v1/query`);
      u.searchParams.set('query', q);
      if (time !== undefined) u.searchParams.set('time', String(time));
      const r = await fetch(u, { headers: { authorization: auth } });
      const j = (await r.json()) as { status: string; error?: string; data: { result: never[] } };
      if (j.status !== 'success') throw new Error(`query ${q}: ${j.error}`);
      return j.data.result;
    },
    kill: () => proc.kill(),
    start,
    async stop() {
      await proc.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The prometheus_rw sink's conformance: `{seq}` records as samples of conformance_seq{channel, seq}, read back by query. */
export const prometheusRwSinkFixture: PeerFixture = {
  type: 'prometheus_rw',
  roles: ['sink'],
  label: 'sink, Prometheus 2.42',
  badConfig: { role: 'sink', set: { max_samples_per_send: 0 }, path: 'max_samples_per_send' },
  async start(): Promise<Peer> {
    const prom = await prometheusServer();
    const sink: SinkSide = {
      config: (channel) => ({
        type: 'prometheus_rw',
        url: prom.writeUrl,
        auth_type: 'basic',
        username: PROM_USER,
        password: PROM_PASSWORD,
        metric_name: 'conformance_seq',
        value_fields: ['seq'],
        label_fields: ['seq'],
        static_labels: { channel },
      }),
      async collect(channel) {
        let records: Record<string, unknown>[] = [];
        let stopped = false;
        // records() is read synchronously by the suite: a loop keeps the last query's answer.
        const loop = (async () => {
          while (!stopped) {
            try {
              const res = await prom.query(`last_over_time(conformance_seq{channel="${channel}"}[1h])`);
              records = res.map((s) => ({ seq: Number(s.value![1]) }));
            } catch {
              // restarting: the next round asks again
            }
            await pace(200);
          }
        })();
        return {
          records: () => records,
          async close() {
            stopped = true;
            await loop;
          },
        };
      },
    };
    return {
      sink,
      wrongPort: (cfg) => ({ ...cfg, url: 'http://127.0.0.1:1/api/v1/write' }),
      wrongCredentials: (cfg) => ({ ...cfg, password: 'wrong-password' }),
      async disrupt() {
        await prom.kill();
        // Down for a second: the suite writes 5 batches a second, so writes meet the refused port.
        await pace(1000);
        await prom.start();
      },
      stop: () => prom.stop(),
    };
  },
};
