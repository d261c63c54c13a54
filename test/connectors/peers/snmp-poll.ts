// Peer fixture for the snmp_poll source: real agents on loopback ports.
// - snmpsimd (Debian's SNMP simulator) serving one `.snmprec` data file per community: publish()
//   writes the bodies as rows of a table (SVC-CONF-MIB::confTable, a MIB of ours given through
//   mib_dirs) whose `seq` column holds each body's seq, and restarts snmpsimd (it indexes its data
//   files at start) on the same port.
// - snmpd with several SNMPv3 users (SHA/AES, SHA256/AES192, MD5/DES) and its own MIB-II tree.
// - `silentAgents`: UDP sockets that take requests and never answer (a dead or hung device), and
//   count the datagrams and when each first arrived.
// Every process is stopped by its PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeUdpPort } from '../../snmp/peers.js';
import type { Cfg, Peer, PeerFixture } from '../conformance.js';
import { until } from '../../helpers/wait.js';

/** Our MIB for the conformance table: enterprises.99999.1, rows indexed by confIndex. */
export const CONF_MIB = `SVC-CONF-MIB DEFINITIONS ::= BEGIN
IMPORTS MODULE-IDENTITY, OBJECT-TYPE, Integer32, enterprises FROM SNMPv2-SMI
        DisplayString FROM SNMPv2-TC;
svcConfMib MODULE-IDENTITY
    LAST-UPDATED "202611260000Z"
    ORGANIZATION "svc tests"
    CONTACT-INFO "none"
    DESCRIPTION "Rows that carry the conformance suite's bodies."
    ::= { enterprises 99999 }
confTable OBJECT-TYPE
    SYNTAX SEQUENCE OF ConfEntry
    MAX-ACCESS not-accessible
    STATUS current
    DESCRIPTION "One row per published body."
    ::= { svcConfMib 1 }
confEntry OBJECT-TYPE
    SYNTAX ConfEntry
    MAX-ACCESS not-accessible
    STATUS current
    DESCRIPTION "A body."
    INDEX { confIndex }
    ::= { confTable 1 }
ConfEntry ::= SEQUENCE { confIndex Integer32, seq Integer32, body DisplayString }
confIndex OBJECT-TYPE
    SYNTAX Integer32 (1..2147483647)
    MAX-ACCESS not-accessible
    STATUS current
    DESCRIPTION "Row number (seq + 1)."
    ::= { confEntry 1 }
seq OBJECT-TYPE
    SYNTAX Integer32
    MAX-ACCESS read-only
    STATUS current
    DESCRIPTION "The body's seq."
    ::= { confEntry 2 }
body OBJECT-TYPE
    SYNTAX DisplayString
    MAX-ACCESS read-only
    STATUS current
    DESCRIPTION "The body as published (JSON)."
    ::= { confEntry 3 }
END
`;

export const CONF_TABLE = '1.3.6.1.4.1.99999.1';
export const SYS_UPTIME = '1.3.6.1.2.1.1.3.0';

/** Compares dotted OIDs arc by arc (snmprec lines must be in OID order). */
export const oidOrder = (a: string, b: string) => {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
};

/** snmprec text of `lines` ([oid, tag, value]) in OID order. */
export const snmprec = (lines: [string, number | string, string | number][]) =>
  lines
    .slice()
    .sort((a, b) => oidOrder(a[0], b[0]))
    .map(([o, t, v]) => `${o}|${t}|${v}`)
    .join('\n') + '\n';

/** The conformance table of `bodies` (JSON `{seq, ...}`), plus sysUpTime.0. */
export function tableRec(bodies: Buffer[]): string {
  const lines: [string, number, string | number][] = [[SYS_UPTIME, 67, 4242]];
  bodies.forEach((b) => {
    const seq = (JSON.parse(b.toString()) as { seq: number }).seq;
    lines.push([`${CONF_TABLE}.1.2.${seq + 1}`, 2, seq]);
    lines.push([`${CONF_TABLE}.1.3.${seq + 1}`, 4, b.toString()]);
  });
  return snmprec(lines);
}

export interface Snmpsim {
  port: number;
  dir: string;
  /** Writes `<community>.snmprec` (and more files) and restarts snmpsimd to serve them. */
  write(files: Record<string, string>): Promise<void>;
  /** The directory of MIB sources (SVC-CONF-MIB) for mib_dirs. */
  mibDir: string;
  stop(): Promise<void>;
}

async function waitFor(proc: ChildProcess, out: () => string, ready: (o: string) => boolean, what: string) {
  await until(() => ready(out()) || proc.exitCode !== null, 20_000, `${what} to start`, 50).catch(() => undefined);
  if (!ready(out())) {
    proc.kill('SIGKILL');
    throw new Error(`${what} did not start: ${out()}`);
  }
}

async function killProc(proc: ChildProcess | undefined) {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  const done = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGKILL');
  await done;
}

/** snmpsimd on a free loopback port serving the data files written with write(). */
export async function startSnmpsim(files: Record<string, string> = {}): Promise<Snmpsim> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-snmpsim-poll-'));
  chmodSync(dir, 0o755);
  const data = join(dir, 'data');
  const cache = join(dir, 'cache');
  const mibDir = join(dir, 'mibs');
  for (const d of [data, cache, mibDir]) {
    mkdirSync(d, { mode: 0o777 });
    chmodSync(d, 0o777);
  }
  writeFileSync(join(mibDir, 'SVC-CONF-MIB.txt'), CONF_MIB);
  const port = await freeUdpPort();
  let proc: ChildProcess | undefined;
  const start = async () => {
    // A fresh cache each time: snmpsimd would otherwise serve the index of the old data files.
    rmSync(cache, { recursive: true, force: true });
    mkdirSync(cache, { mode: 0o777 });
    chmodSync(cache, 0o777);
    const p = spawn(
      '/usr/bin/snmpsimd',
      [
        ...(process.getuid?.() === 0 ? ['--process-user=nobody', '--process-group=nogroup'] : []),
        `--data-dir=${data}`,
        `--cache-dir=${cache}`,
        `--agent-udpv4-endpoint=127.0.0.1:${port}`,
        '--logging-method=stderr',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HOME: dir } },
    );
    proc = p;
    let out = '';
    p.stdout!.on('data', (d) => (out += d));
    p.stderr!.on('data', (d) => (out += d));
    await waitFor(
      p,
      () => out,
      (o) => o.includes('Listening at'),
      'snmpsimd',
    );
  };
  const put = (f: Record<string, string>) => {
    for (const [name, text] of Object.entries(f)) {
      writeFileSync(join(data, `${name}.snmprec`), text);
      chmodSync(join(data, `${name}.snmprec`), 0o644);
    }
  };
  put(files);
  await start();
  return {
    port,
    dir,
    mibDir,
    async write(f) {
      put(f);
      await killProc(proc);
      await start();
    },
    async stop() {
      await killProc(proc);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface SnmpdUser {
  name: string;
  auth: string;
  authKey: string;
  priv: string;
  privKey: string;
  /** Our protocol names for the config. */
  auth_protocol: string;
  priv_protocol: string;
}

/** SNMPv3 users of the test snmpd: net-snmp CLI protocol names and ours. */
export const SNMPD_USERS: SnmpdUser[] = [
  { name: 'shaaes', auth: 'SHA', authKey: 'auth-sha-secret-1', priv: 'AES', privKey: 'priv-aes-secret-1', auth_protocol: 'SHA', priv_protocol: 'AES' },
  {
    name: 'sha256aes192',
    auth: 'SHA-256',
    authKey: 'auth-sha256-secret',
    priv: 'AES-192',
    privKey: 'priv-aes192-secret',
    auth_protocol: 'SHA256',
    priv_protocol: 'AES192',
  },
  { name: 'md5des', auth: 'MD5', authKey: 'auth-md5-secret-1', priv: 'DES', privKey: 'priv-des-secret-1', auth_protocol: 'MD5', priv_protocol: 'DES' },
];

export interface Snmpd {
  port: number;
  stop(): Promise<void>;
}

/** snmpd on a free loopback port: community `public` and the SNMPD_USERS (authPriv). */
export async function startSnmpdV3(): Promise<Snmpd> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-snmpd-poll-'));
  const port = await freeUdpPort();
  const conf =
    [
      'rocommunity public 127.0.0.1',
      ...SNMPD_USERS.flatMap((u) => [`createUser ${u.name} ${u.auth} "${u.authKey}" ${u.priv} "${u.privKey}"`, `rouser ${u.name} priv`]),
    ].join('\n') + '\n';
  writeFileSync(join(dir, 'snmpd.conf'), conf);
  const p = spawn('/usr/sbin/snmpd', ['-f', '-Lo', '-C', '-c', join(dir, 'snmpd.conf'), '-p', join(dir, 'pid'), `udp:127.0.0.1:${port}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SNMP_PERSISTENT_DIR: join(dir, 'persist'), MIBS: '', MIBDIRS: '/nonexistent', HOME: dir },
  });
  let out = '';
  p.stdout!.on('data', (d) => (out += d));
  p.stderr!.on('data', (d) => (out += d));
  await waitFor(
    p,
    () => out,
    (o) => o.includes('NET-SNMP version'),
    'snmpd',
  );
  return {
    port,
    async stop() {
      await killProc(p);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface SilentAgents {
  ports: number[];
  /** Datagrams received per port. */
  counts: number[];
  /** performance.now() of the first datagram per port (undefined: none yet). */
  firstAt: (number | undefined)[];
  close(): Promise<void>;
}

/** `n` UDP sockets that take SNMP requests and never answer. */
export async function silentAgents(n: number): Promise<SilentAgents> {
  const socks: Socket[] = [];
  const counts: number[] = [];
  const firstAt: (number | undefined)[] = [];
  for (let i = 0; i < n; i++) {
    const s = createSocket('udp4');
    counts.push(0);
    firstAt.push(undefined);
    s.on('message', () => {
      counts[i]!++;
      firstAt[i] ??= performance.now();
    });
    await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
    socks.push(s);
  }
  return {
    ports: socks.map((s) => s.address().port),
    counts,
    firstAt,
    close: async () => {
      for (const s of socks) await new Promise<void>((r) => s.close(() => r()));
    },
  };
}

/** The conformance fixture: bodies as rows of confTable in a data file served for community = channel. */
export const snmpPollFixture: PeerFixture = {
  type: 'snmp_poll',
  badConfig: { role: 'source', set: { operation: 'poll' }, path: 'operation' },
  async start(): Promise<Peer> {
    const sim = await startSnmpsim();
    const deadPort = await freeUdpPort();
    const config = (channel: string): Cfg => ({
      type: 'snmp_poll',
      host: '127.0.0.1',
      port: sim.port,
      community: channel,
      operation: 'walk',
      oids: ['SVC-CONF-MIB::confTable'],
      yield_rows: true,
      mib_dirs: [sim.mibDir],
      max_repetitions: 50,
      timeout: 2,
      retries: 1,
    });
    return {
      source: {
        config,
        // test() asks for sysUpTime.0 under the channel's community: that needs its data file.
        prepare: (channel) => sim.write({ [channel]: snmprec([[SYS_UPTIME, 67, 1]]) }),
        publish: (channel, bodies) => sim.write({ [channel]: tableRec(bodies) }),
      },
      wrongPort: (cfg) => ({ ...cfg, port: deadPort }),
      wrongCredentials: (cfg) => ({ ...cfg, community: 'wrong-community' }),
      stop: () => sim.stop(),
    };
  },
};
