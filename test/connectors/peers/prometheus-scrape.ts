// Peers of the prometheus_scrape source: Debian's `prometheus-node-exporter` (1.5) started on a
// free loopback port and killed by its PID, and the conformance fixture: an HTTP server whose
// /<channel>/metrics exposes, in the text format, one sample `conformance_seq{seq="N"} N` per
// published body, behind basic auth (wrong credentials are a 401).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '../../helpers/net.js';
import { peerProcess } from './process.js';
import type { Peer, PeerFixture, SourceSide } from '../conformance.js';

export interface NodeExporter {
  url: string;
  /** host:port, as Prometheus' instance label. */
  target: string;
  stop(): Promise<void>;
}

export async function nodeExporter(): Promise<NodeExporter> {
  const port = await freePort();
  const proc = peerProcess(
    'prometheus-node-exporter',
    [
      `--web.listen-address=127.0.0.1:${port}`,
      // No textfile directory of the machine's (it may hold anything): an empty one of our own is not needed.
      '--no-collector.textfile',
      '--log.level=warn',
    ],
    port,
  );
  await proc.start();
  return { url: `http://127.0.0.1:${port}/metrics`, target: `127.0.0.1:${port}`, stop: () => proc.kill() };
}

export const SCRAPE_USER = 'scraper';
export const SCRAPE_PASSWORD = 'scrape-conformance';

/** An exposition server: per path, the body it answers (text format), behind basic auth. */
export interface ExpositionServer {
  base: string;
  /** The body served at /<path>; with a content type (default the text format's). */
  set(path: string, body: string | Buffer, contentType?: string): void;
  /** Answers at /<path> are held this long first (a slow target). */
  delay(path: string, ms: number): void;
  close(): Promise<void>;
}

export async function expositionServer(opts: { auth?: boolean } = {}): Promise<ExpositionServer> {
  const bodies = new Map<string, { body: string | Buffer; type: string }>();
  const delays = new Map<string, number>();
  const expected = `Basic ${Buffer.from(`${SCRAPE_USER}:${SCRAPE_PASSWORD}`).toString('base64')}`;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (opts.auth && req.headers.authorization !== expected) {
      res.writeHead(401, { 'www-authenticate': 'Basic' }).end('Unauthorized');
      return;
    }
    const path = (req.url ?? '/').replace(/^\//, '');
    const b = bodies.get(path);
    const answer = () => {
      if (!b) res.writeHead(404).end('not found');
      else res.writeHead(200, { 'content-type': b.type }).end(b.body);
    };
    const d = delays.get(path);
    if (d) setTimeout(answer, d);
    else answer();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    set: (path, body, type = 'text/plain; version=0.0.4; charset=utf-8') => bodies.set(path, { body, type }),
    delay: (path, ms) => delays.set(path, ms),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** The text-format body of published `{seq}` bodies: one sample each. */
export function seqExposition(bodies: Buffer[]): string {
  const lines = ['# HELP conformance_seq The sequence number of a published body.', '# TYPE conformance_seq gauge'];
  for (const b of bodies) {
    const { seq } = JSON.parse(b.toString('utf8')) as { seq: number };
    lines.push(`conformance_seq{seq="${seq}"} ${seq}`);
  }
  return lines.join('\n') + '\n';
}

export const prometheusScrapeFixture: PeerFixture = {
  type: 'prometheus_scrape',
  badConfig: { role: 'source', set: { timeout_seconds: 0 }, path: 'timeout_seconds' },
  async start(): Promise<Peer> {
    const srv = await expositionServer({ auth: true });
    const source: SourceSide = {
      config: (channel) => ({
        type: 'prometheus_scrape',
        targets: [`${srv.base}/${channel}/metrics`],
        auth_type: 'basic',
        username: SCRAPE_USER,
        password: SCRAPE_PASSWORD,
      }),
      async prepare(channel) {
        srv.set(`${channel}/metrics`, seqExposition([]));
      },
      async publish(channel, bodies) {
        srv.set(`${channel}/metrics`, seqExposition(bodies));
      },
      transforms: [{ type: 'rename', fields: { value: 'seq' } }],
    };
    return {
      source,
      wrongPort: (cfg) => ({ ...cfg, targets: ['http://127.0.0.1:1/metrics'] }),
      wrongCredentials: (cfg) => ({ ...cfg, password: 'wrong-password' }),
      stop: () => srv.close(),
    };
  },
};
