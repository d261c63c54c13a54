// Peer fixture for the nats connector: the shared nats-server at 127.0.0.1:4222 (no auth) for the
// flow cases, and private `nats-server -a 127.0.0.1 -p N` instances (user/password, token, a config
// file, a monitoring port) for authentication and restarts, each stopped by its PID.
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { freePort } from '../../helpers/daemon.js';
import type { Collector, Peer, PeerFixture, Rec } from '../conformance.js';
import { peerProcess } from './process.js';

export const SHARED_URL = 'nats://127.0.0.1:4222';

export interface NatsServer {
  port: number;
  url: string;
  /** HTTP monitoring port (/varz, /connz), when asked for. */
  httpPort?: number;
  pid(): number;
  /** Kills the server (SIGKILL) and starts it again on the same port; resolves once it accepts connections. */
  restart(): Promise<void>;
  kill(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** A private nats-server on a free loopback port; `args` adds options (--user/--pass, --auth, -c file). */
export async function natsServer(args: string[] = [], opts: { monitor?: boolean } = {}): Promise<NatsServer> {
  const port = await freePort();
  const httpPort = opts.monitor ? await freePort() : undefined;
  const proc = peerProcess('nats-server', ['-a', '127.0.0.1', '-p', String(port), ...(httpPort ? ['-m', String(httpPort)] : []), ...args], port);
  const { start, kill } = proc;
  await start();
  return {
    port,
    url: `nats://127.0.0.1:${port}`,
    httpPort,
    pid: proc.pid,
    async restart() {
      await kill();
      await start();
    },
    kill,
    start,
    stop: kill,
  };
}

/** Subscriptions the server holds for the connection named `name` (monitoring /connz), -1 when there is none. */
export async function subscriptionsOf(server: NatsServer, name: string): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${server.httpPort}/connz?subs=1`);
  const body = (await r.json()) as { connections?: { name?: string; subscriptions: number }[] };
  return body.connections?.find((c) => c.name === name)?.subscriptions ?? -1;
}

/** Publishes `bodies` on `subject` (or on the subjects `subjectOf(i)`) and flushes. */
export async function publishAll(
  url: string,
  subject: string | ((i: number) => string),
  bodies: Buffer[],
  auth: { user?: string; pass?: string; token?: string } = {},
) {
  const nc = await connect({ servers: url, ...auth });
  try {
    bodies.forEach((b, i) => nc.publish(typeof subject === 'string' ? subject : subject(i), b));
    await nc.flush();
  } finally {
    await nc.close();
  }
}

/** Subscribes (before anything is written) and keeps the JSON bodies it receives. */
export async function collectSubject(url: string, subject: string): Promise<Collector & { subjects: string[] }> {
  const nc: NatsConnection = await connect({ servers: url });
  const got: Rec[] = [];
  const subjects: string[] = [];
  nc.subscribe(subject, {
    callback: (err, m) => {
      if (err) return;
      subjects.push(m.subject);
      got.push(JSON.parse(m.string()) as Rec);
    },
  });
  await nc.flush();
  return { records: () => got, subjects, close: () => nc.close().catch(() => {}) };
}

export const nats: PeerFixture = {
  type: 'nats',
  badConfig: { role: 'sink', set: { subject: 'alarms.>' }, path: 'subject' },
  async start(): Promise<Peer> {
    // The shared server takes no credentials: the wrong-credentials case needs a private one that does.
    const authed = await natsServer(['--user', 'svc', '--pass', 'right-secret']);
    return {
      source: {
        config: (subject) => ({ type: 'nats', servers: [SHARED_URL], subject }),
        publish: (subject, bodies) => publishAll(SHARED_URL, subject, bodies),
        // The subscription is in place when the source reports `connected` (connect flushes it).
        settleMs: 100,
      },
      sink: {
        config: (subject) => ({ type: 'nats', servers: [SHARED_URL], subject }),
        collect: (subject) => collectSubject(SHARED_URL, subject),
      },
      wrongPort: (cfg) => ({ ...cfg, servers: ['nats://127.0.0.1:1'] }),
      wrongCredentials: (cfg) => ({ ...cfg, servers: [authed.url], username: 'svc', password: 'wrong-secret' }),
      async stop() {
        await authed.stop();
      },
    };
  },
};
