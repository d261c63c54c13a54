// Worker discovery against a real DNS server: dnsmasq answering from a hosts file, as the cluster
// DNS answers for the pods of a StatefulSet behind a headless Service (NXDOMAIN for a missing pod).
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dnsServerResolver, workerDiscovery } from '../../src/cluster/discovery.js';
import { loadSettings, SettingsError } from '../../src/settings.js';
import { until } from '../helpers/wait.js';

/** A loopback UDP port that was free a moment ago. */
async function freeUdpPort(): Promise<number> {
  const s = createSocket('udp4');
  s.bind(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address();
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

const name = (i: number, service = 'svc-worker', ns = 'telemetry') => `${service}-${i}.${service}.${ns}.svc`;

interface Dnsmasq {
  server: string;
  /** Rewrites the hosts file; resolves once dnsmasq has read it again (SIGHUP). */
  setHosts(lines: string[]): Promise<void>;
  stop(): Promise<void>;
}

/**
 * dnsmasq listens on UDP and TCP on its port, so a port that was free for UDP a moment ago can be
 * taken (by another test file's TCP listener) when it binds: it then exits with "Address already in
 * use", and another port is tried.
 */
async function startDnsmasq(lines: string[]): Promise<Dnsmasq> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startDnsmasqOnce(lines);
    } catch (e) {
      if (attempt >= 5 || !String((e as Error).message).includes('Address already in use')) throw e;
    }
  }
}

async function startDnsmasqOnce(lines: string[]): Promise<Dnsmasq> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-dnsmasq-'));
  chmodSync(dir, 0o755);
  const hosts = join(dir, 'hosts');
  const write = (l: string[]) => writeFileSync(hosts, l.join('\n') + '\n', { mode: 0o644 });
  write(lines);
  const port = await freeUdpPort();
  // -d: foreground, logs to stderr, no pid file, no user change. --local=/svc/: names under .svc
  // that are not in the file get NXDOMAIN, as from the cluster DNS, rather than REFUSED.
  const child: ChildProcess = spawn(
    'dnsmasq',
    [
      '--conf-file=/dev/null',
      '--no-daemon',
      '--keep-in-foreground',
      `--port=${port}`,
      '--listen-address=127.0.0.1',
      '--bind-interfaces',
      '--no-resolv',
      '--no-hosts',
      `--addn-hosts=${hosts}`,
      '--local=/svc/',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  let partial = '';
  let reads = 0; // "read <hosts> - N names" lines: one per (re)load of the file
  child.stderr!.setEncoding('utf8').on('data', (t: string) => {
    log = (log + t).slice(-4000);
    const lines = (partial + t).split('\n');
    partial = lines.pop()!;
    reads += lines.filter((l) => l.includes(`read ${hosts}`)).length;
  });
  const server = `127.0.0.1:${port}`;
  const probe = dnsServerResolver([server], { timeoutMs: 200 });
  try {
    await until(async () => {
      if (child.exitCode !== null) throw new Error(`dnsmasq exited (${child.exitCode}): ${log}`);
      return probe('ready.probe.svc').then(
        () => true,
        (e: NodeJS.ErrnoException) => e.code === 'ENOTFOUND', // an answer (NXDOMAIN): it is serving
      );
    }, 10_000);
  } catch (e) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    server,
    async setHosts(l) {
      const before = reads;
      write(l);
      process.kill(child.pid!, 'SIGHUP');
      await until(() => reads > before);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, 'exit');
        process.kill(child.pid!, 'SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const dnsSettings = (replicas: number) =>
  loadSettings({ SVC_WORKER_REPLICAS: String(replicas), SVC_WORKER_SERVICE: 'svc-worker', SVC_WORKER_NAMESPACE: 'telemetry', SVC_WORKER_PORT: '9766' });

describe('DNS discovery (dnsmasq)', () => {
  let dns: Dnsmasq;
  const base = [`10.1.0.10 ${name(0)}`, `10.1.0.11 ${name(1)}`];
  beforeAll(async () => {
    dns = await startDnsmasq(base);
  });
  afterAll(async () => {
    await dns?.stop();
  });

  const discoveryOf = (replicas: number) => workerDiscovery(dnsSettings(replicas), { resolver: dnsServerResolver([dns.server], { timeoutMs: 500 }) });

  it('names each replica <service>-<i>.<service>.<namespace>.svc; the id is the name, the url its address and SVC_WORKER_PORT', async () => {
    await dns.setHosts(base);
    const d = discoveryOf(2);
    expect(d.mode).toBe('dns');
    expect(await d.list()).toEqual([
      { id: 'svc-worker-0.svc-worker.telemetry.svc', url: 'http://10.1.0.10:9766' },
      { id: 'svc-worker-1.svc-worker.telemetry.svc', url: 'http://10.1.0.11:9766' },
    ]);
  });

  it('lists a replica whose name does not resolve with url null and the reason, and gives it a url once it resolves', async () => {
    await dns.setHosts(base);
    const before = await discoveryOf(3).list();
    expect(before.slice(0, 2).map((e) => e.url)).toEqual(['http://10.1.0.10:9766', 'http://10.1.0.11:9766']);
    expect(before[2]).toMatchObject({ id: name(2), url: null });
    expect(before[2]!.error).toMatch(/svc-worker-2\.svc-worker\.telemetry\.svc does not resolve: .*ENOTFOUND/);

    await dns.setHosts([...base, `10.1.0.12 ${name(2)}`]);
    const after = await discoveryOf(3).list();
    expect(after[2]).toEqual({ id: name(2), url: 'http://10.1.0.12:9766' });
  });

  it('resolves again on every list(): a restarted pod with a new address keeps its id and gets the new url', async () => {
    await dns.setHosts(base);
    const d = discoveryOf(2);
    expect((await d.list())[0]!.url).toBe('http://10.1.0.10:9766');
    await dns.setHosts([`10.1.0.99 ${name(0)}`, `10.1.0.11 ${name(1)}`]);
    // The same discovery object: nothing is cached between calls.
    expect(await d.list()).toEqual([
      { id: name(0), url: 'http://10.1.0.99:9766' },
      { id: name(1), url: 'http://10.1.0.11:9766' },
    ]);
  });

  it('a pod with only an IPv6 address gets a bracketed url', async () => {
    await dns.setHosts([...base, `fd00::12 ${name(2)}`]);
    const l = await discoveryOf(3).list();
    expect(l[2]).toEqual({ id: name(2), url: 'http://[fd00::12]:9766' });
  });
});

describe('discovery without DNS answers', () => {
  it('a DNS server that never answers leaves the replica unresolved after timeoutMs', async () => {
    // A real UDP socket that reads queries and never replies.
    const silent = createSocket('udp4');
    let queries = 0;
    silent.on('message', () => queries++);
    silent.bind(0, '127.0.0.1');
    await once(silent, 'listening');
    try {
      const d = workerDiscovery(dnsSettings(1), { resolver: dnsServerResolver([`127.0.0.1:${silent.address().port}`], { timeoutMs: 10_000 }), timeoutMs: 300 });
      const t0 = Date.now();
      const [e] = await d.list();
      expect(Date.now() - t0).toBeLessThan(3000);
      expect(e).toEqual({ id: name(0), url: null, error: `${name(0)} does not resolve: no answer within 300 ms` });
      expect(queries).toBeGreaterThan(0);
    } finally {
      silent.close();
    }
  });
});

describe('explicit SVC_WORKER_URLS', () => {
  it('overrides DNS discovery: the id is the URL as configured, the url has no trailing slash', async () => {
    const s = loadSettings({ SVC_WORKER_URLS: 'http://10.0.0.5:8766/, https://w2.example:9000/agent-base', SVC_WORKER_REPLICAS: '3' });
    const d = workerDiscovery(s);
    expect(d.mode).toBe('explicit');
    expect(await d.list()).toEqual([
      { id: 'http://10.0.0.5:8766/', url: 'http://10.0.0.5:8766' },
      { id: 'https://w2.example:9000/agent-base', url: 'https://w2.example:9000/agent-base' },
    ]);
  });

  it('rejects a value that is not an http(s) URL, naming the variable', () => {
    expect(() => workerDiscovery(loadSettings({ SVC_WORKER_URLS: 'http://ok:1,worker-3:8766' }))).toThrow(SettingsError);
    expect(() => workerDiscovery(loadSettings({ SVC_WORKER_URLS: 'ftp://w:21' }))).toThrow(/SVC_WORKER_URLS: "ftp:\/\/w:21"/);
  });

  it('no URLs and SVC_WORKER_REPLICAS=0: no workers', async () => {
    const d = workerDiscovery(loadSettings({}));
    expect(d.mode).toBe('none');
    expect(await d.list()).toEqual([]);
  });
});
