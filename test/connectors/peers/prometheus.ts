// Peer fixture for the prometheus_rw source: Debian's real `prometheus` (2.42) in agent mode,
// started by the test on a free loopback port, scraping a target (the daemon's own /metrics) every
// second and remote-writing what it scraped to the daemon's /webhooks/<path> with a bearer token.
// Killed by its PID. Also a small sink that holds its answers (a blocked downstream) and the
// conformance fixture, which POSTs remote-write bodies it builds itself to the served path.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../../helpers/net.js';
import { tempDir } from '../../helpers/fs.js';
import { encodeBody } from '../../../src/plugins/connectors/prometheus_rw/decode.js';
import { peerProcess } from './process.js';
import Fastify from 'fastify';
import { WebhookHub } from '../../../src/plugins/connector-runtime/webhook-hub.js';
import webhookRoutes from '../../../src/engine/webhook-routes.js';
import { loadSettings } from '../../../src/settings.js';
import type { ApiDeps } from '../../../src/api/deps.js';
import type { Peer, PeerFixture, SourceSide } from '../conformance.js';
import { pace } from '../../helpers/wait.js';

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

export const RW_HEADERS = { 'content-type': 'application/x-protobuf', 'content-encoding': 'snappy', 'x-prometheus-remote-write-version': '0.1.0' };

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
