// Peer fixture for the mqtt connector: a PRIVATE Mosquitto (`mosquitto -c <tmp conf>`) on a free
// loopback port, with a password file (so wrong credentials are real), persistence in its temporary
// directory (so a restart keeps persistent sessions, the disruption of the conformance suite) and,
// when asked, a TLS listener with a CA and server certificate made here with openssl. Mosquitto's
// own tools publish (mosquitto_pub, source side) and collect (mosquitto_sub, sink side). Every
// broker is stopped by its PID; nothing is left running.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../helpers/net.js';
import { makeCerts, type Certs } from '../../helpers/certs.js';
import type { Cfg, Collector, Peer, PeerFixture, Rec } from '../conformance.js';
import { until } from '../../helpers/wait.js';

const run = promisify(execFile);

export const USER = 'svc';
export const PASSWORD = 'right-secret';

export interface BrokerOptions {
  /** Users and passwords (password_file); none: anonymous access. */
  users?: Record<string, string>;
  /** Also a TLS listener (certificates in `certs`). */
  tls?: boolean;
  /** Persistence in the broker's directory (default true: a restart keeps sessions). */
  persistence?: boolean;
  /** Extra lines of mosquitto.conf (max_inflight_messages, max_queued_messages, acl_file...). */
  extra?: string[];
}

export interface Broker {
  host: '127.0.0.1';
  port: number;
  tlsPort?: number;
  certs?: Certs;
  dir: string;
  /** SIGTERM (Mosquitto saves its persistence file) and start again on the same ports. */
  restart(): Promise<void>;
  /** kill -9: nothing saved since the last autosave. */
  kill9(): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP / SIGCONT: the broker keeps its connections open but answers nothing (a hung peer). */
  freeze(): void;
  thaw(): void;
  stop(): Promise<void>;
}

/** Resolves once something accepts TCP connections on `port`. */
async function listening(port: number, child: ChildProcess, log: () => string, ms = 10_000) {
  const accepts = () =>
    new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
  const ok = await until(async () => child.exitCode !== null || (await accepts()), ms, `mosquitto to listen on ${port}`, 50).catch(() => false);
  if (child.exitCode !== null) throw new Error(`mosquitto exited (${child.exitCode}): ${log()}`);
  if (!ok) throw new Error(`mosquitto not listening on ${port} after ${ms} ms: ${log()}`);
}

export async function startBroker(opts: BrokerOptions = {}): Promise<Broker> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-mosquitto-'));
  const port = await freePort();
  const tlsPort = opts.tls ? await freePort() : undefined;
  const certs = opts.tls ? await makeCerts(dir) : undefined;
  const lines = [
    'user root', // ignored unless run as root; as root, keeps mosquitto from switching to a user that cannot read this directory
    `listener ${port} 127.0.0.1`,
    ...(opts.persistence === false ? [] : ['persistence true', `persistence_location ${dir}/`, 'autosave_interval 3600']),
    'log_dest stderr',
    'log_type error',
    'log_type warning',
  ];
  if (opts.users) {
    let first = true;
    for (const [u, p] of Object.entries(opts.users)) {
      await run('mosquitto_passwd', ['-b', ...(first ? ['-c'] : []), join(dir, 'passwd'), u, p]);
      first = false;
    }
    lines.push(`password_file ${join(dir, 'passwd')}`, 'allow_anonymous false');
  } else lines.push('allow_anonymous true');
  if (tlsPort) {
    lines.push(`listener ${tlsPort} 127.0.0.1`, `cafile ${certs!.ca}`, `certfile ${certs!.serverCert}`, `keyfile ${certs!.serverKey}`);
  }
  // Global options (per_listener_settings is false): they apply to both listeners.
  lines.push(...(opts.extra ?? []));
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(conf, lines.join('\n') + '\n');

  let child: ChildProcess | undefined;
  let log = '';
  const start = async () => {
    log = '';
    child = spawn('mosquitto', ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.setEncoding('utf8').on('data', (s: string) => (log += s).length > 20_000 && (log = log.slice(-10_000)));
    await listening(port, child, () => log);
    if (tlsPort) await listening(tlsPort, child, () => log);
  };
  const halt = async (signal: NodeJS.Signals) => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGCONT'); // a frozen broker cannot act on SIGTERM
    c.kill(signal);
    await exited;
  };
  await start();
  return {
    host: '127.0.0.1',
    port,
    tlsPort,
    certs,
    dir,
    start,
    async restart() {
      await halt('SIGTERM');
      await start();
    },
    freeze: () => void child?.kill('SIGSTOP'),
    thaw: () => void child?.kill('SIGCONT'),
    async kill9() {
      await halt('SIGKILL');
    },
    async stop() {
      await halt('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface ClientAuth {
  port: number;
  user?: string;
  password?: string;
  /** MQTT protocol of the tool: 31, 311 or 5. */
  version?: '311' | '5';
}

const authArgs = (a: ClientAuth) => [
  '-h',
  '127.0.0.1',
  '-p',
  String(a.port),
  ...(a.user ? ['-u', a.user, '-P', a.password ?? ''] : []),
  ...(a.version ? ['-V', a.version === '5' ? 'mqttv5' : 'mqttv311'] : []),
];

/** Publishes each body as one message with mosquitto_pub -l (bodies must not contain newlines). */
export async function publish(a: ClientAuth, topic: string, bodies: Buffer[], opts: { qos?: 0 | 1 | 2; retain?: boolean } = {}): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    // Bounded: a mosquitto_pub that hangs fails the test with its reason instead of a test timeout.
    const p = spawn('mosquitto_pub', [...authArgs(a), '-t', topic, '-q', String(opts.qos ?? 1), ...(opts.retain ? ['-r'] : []), '-l'], {
      stdio: ['pipe', 'ignore', 'pipe'],
      timeout: 20_000,
    });
    let err = '';
    p.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
    p.on('error', reject);
    p.on('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`mosquitto_pub ${signal ? `killed (${signal}) after 20 s` : `exited ${code}`}: ${err}`)),
    );
    p.stdin.end(Buffer.concat(bodies.flatMap((b) => [b, Buffer.from('\n')])));
  });
}

export interface Subscription {
  /** Lines received (payloads; with `format`, as formatted). */
  lines(): string[];
  close(): Promise<void>;
}

/**
 * mosquitto_sub on `topic`, started so that nothing published after this resolves is missed: a
 * persistent session is made first (-E exits once subscribed), then the collector resumes it, and
 * it reconnects on its own after a broker restart.
 */
export async function subscribe(a: ClientAuth, topic: string, opts: { qos?: 0 | 1 | 2; format?: string; id?: string } = {}): Promise<Subscription> {
  const id = opts.id ?? `collect-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const q = String(opts.qos ?? 1);
  await run('mosquitto_sub', [...authArgs(a), '-c', '-i', id, '-q', q, '-t', topic, '-E'], { timeout: 10_000 });
  const p = spawn('mosquitto_sub', [...authArgs(a), '-c', '-i', id, '-q', q, '-t', topic, ...(opts.format ? ['-F', opts.format] : [])], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const got: string[] = [];
  let partial = '';
  p.stdout.setEncoding('utf8').on('data', (s: string) => {
    const parts = (partial + s).split('\n');
    partial = parts.pop()!;
    got.push(...parts);
  });
  return {
    lines: () => got,
    async close() {
      if (p.exitCode !== null || p.signalCode !== null) return;
      const exited = new Promise((r) => p.once('exit', r));
      p.kill('SIGTERM');
      await exited;
      // End the persistent session (a clean connect under its id), or it stays on a shared broker for ever.
      await run('mosquitto_sub', [...authArgs(a), '-i', id, '-t', topic, '-E'], { timeout: 5000 }).catch(() => {});
    },
  };
}

/** Conformance: one private broker with a user and persistence, restarted by disrupt(). */
export const mosquitto: PeerFixture = {
  type: 'mqtt',
  badConfig: { role: 'source', set: { qos: 3 }, path: 'qos' },
  async start(): Promise<Peer> {
    const broker = await startBroker({ users: { [USER]: PASSWORD } });
    const auth: ClientAuth = { port: broker.port, user: USER, password: PASSWORD };
    const base = { type: 'mqtt', host: broker.host, port: broker.port, username: USER, password: PASSWORD };
    return {
      source: {
        config: (topic) => ({ ...base, topic, qos: 1 }),
        publish: (topic, bodies) => publish(auth, topic, bodies, { qos: 1 }),
        settleMs: 100,
      },
      sink: {
        config: (topic) => ({ ...base, topic, qos: 1 }),
        async collect(topic): Promise<Collector> {
          const s = await subscribe(auth, topic, { qos: 1 });
          return { records: () => s.lines().map((l) => JSON.parse(l) as Rec), close: () => s.close() };
        },
      },
      wrongPort: (cfg: Cfg) => ({ ...cfg, port: 1 }),
      wrongCredentials: (cfg: Cfg) => ({ ...cfg, password: 'wrong-secret' }),
      disrupt: () => broker.restart(),
      stop: () => broker.stop(),
    };
  },
};
