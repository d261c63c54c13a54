// Real Debian SNMP peers for tests and benchmarks: snmpd, snmptrapd and snmpsimd started on
// loopback ephemeral ports with their state in a temp dir, and the net-snmp command-line tools.
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '../helpers/wait.js';

export interface Peer {
  port: number;
  dir: string;
  proc: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

/** A free UDP port on 127.0.0.1 (bound then released). */
export async function freeUdpPort(): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  const { port } = s.address();
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** True when the UDP port can be bound on 127.0.0.1 (nothing holds it). */
export async function udpBindable(port: number): Promise<boolean> {
  const s = createSocket('udp4');
  const ok = await new Promise<boolean>((resolve) => {
    s.once('error', () => resolve(false));
    s.bind(port, '127.0.0.1', () => resolve(true));
  });
  await new Promise<void>((r) => s.close(() => r()));
  return ok;
}

/** A base port with `n` free consecutive UDP ports from it (a fleet on base_port). */
export async function freeUdpRange(n: number): Promise<number> {
  for (let tries = 0; tries < 20; tries++) {
    const base = 20000 + Math.floor(Math.random() * 30000);
    let ok = true;
    for (let i = 0; i < n && ok; i++) ok = await udpBindable(base + i);
    if (ok) return base;
  }
  throw new Error('no free port range');
}

/** Runs a net-snmp tool (in a persistent directory of its own); resolves with stdout (rejects with stderr on failure). */
import { snmpTool } from './netsnmp.js';
export const run = snmpTool;

async function startPeer(
  cmd: string,
  args: (port: number, dir: string) => string[],
  files: (dir: string) => Record<string, string>,
  ready: (out: string) => boolean,
): Promise<Peer> {
  const dir = mkdtempSync(join(tmpdir(), `svc-${cmd.split('/').pop()}-`));
  for (const [name, text] of Object.entries(files(dir))) writeFileSync(join(dir, name), text);
  // snmpsimd reads and caches as nobody.
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, 'cache'), { mode: 0o777 });
  chmodSync(join(dir, 'cache'), 0o777);
  const port = await freeUdpPort();
  const proc = spawn(cmd, args(port, dir), {
    env: { ...process.env, SNMP_PERSISTENT_DIR: join(dir, 'persist'), MIBS: '', MIBDIRS: '/nonexistent', HOME: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  await until(() => ready(out) || proc.exitCode !== null, 15_000, `${cmd} to start`, 50).catch(() => undefined);
  if (!ready(out)) {
    proc.kill('SIGKILL');
    throw new Error(`${cmd} did not start: ${out}`);
  }
  return {
    port,
    dir,
    proc,
    output: () => out,
    stop: async () => {
      if (proc.exitCode === null) {
        const done = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        await Promise.race([done, new Promise((r) => setTimeout(r, 3000))]);
        if (proc.exitCode === null) proc.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const V3_USER = { name: 'svcuser', authProtocol: 'SHA', authKey: 'authpass123', privProtocol: 'AES', privKey: 'privpass123' };

/** snmpd serving its own MIB-II tree to community "public" and to V3_USER (authPriv). */
export function startSnmpd(): Promise<Peer> {
  return startPeer(
    '/usr/sbin/snmpd',
    (port, dir) => ['-f', '-Lo', '-C', '-c', join(dir, 'snmpd.conf'), '-p', join(dir, 'pid'), `udp:127.0.0.1:${port}`],
    () => ({
      'snmpd.conf': `rocommunity public 127.0.0.1\ncreateUser ${V3_USER.name} SHA "${V3_USER.authKey}" AES "${V3_USER.privKey}"\nrouser ${V3_USER.name} priv\n`,
    }),
    (out) => out.includes('NET-SNMP version'),
  );
}

/** snmptrapd logging every notification to stdout (numeric OIDs); `conf` adds createUser lines. */
export function startSnmptrapd(conf = '', extraArgs: string[] = []): Promise<Peer> {
  return startPeer(
    '/usr/sbin/snmptrapd',
    (port, dir) => ['-f', '-Lo', '-On', ...extraArgs, '-C', '-c', join(dir, 'snmptrapd.conf'), '-p', join(dir, 'pid'), `udp:127.0.0.1:${port}`],
    () => ({ 'snmptrapd.conf': `disableAuthorization yes\n${conf}\n` }),
    (out) => out.includes('NET-SNMP version'),
  );
}

/** snmpsimd serving `data` (snmprec text) as community/context "public", with one v3 user. */
export function startSnmpsimd(data: string, v3: { user: string; authProto: string; authKey: string; privProto: string; privKey: string }): Promise<Peer> {
  return startPeer(
    '/usr/bin/snmpsimd',
    (port, dir) => [
      // snmpsimd refuses to run as root without dropping privileges.
      ...(process.getuid?.() === 0 ? ['--process-user=nobody', '--process-group=nogroup'] : []),
      `--data-dir=${join(dir)}`,
      `--cache-dir=${join(dir, 'cache')}`,
      `--agent-udpv4-endpoint=127.0.0.1:${port}`,
      '--logging-method=stderr',
      `--v3-user=${v3.user}`,
      `--v3-auth-key=${v3.authKey}`,
      `--v3-auth-proto=${v3.authProto}`,
      `--v3-priv-key=${v3.privKey}`,
      `--v3-priv-proto=${v3.privProto}`,
    ],
    () => ({ 'public.snmprec': data }),
    (out) => out.includes('Listening at'),
  );
}

/** Every auth protocol, and every privacy protocol as [net-snmp CLI name, our name]. */
export const V3_AUTHS = ['MD5', 'SHA', 'SHA-224', 'SHA-256', 'SHA-384', 'SHA-512'];
export const V3_PRIVS: [cli: string, ours: string][] = [
  ['DES', 'DES'],
  ['AES', 'AES128'],
  ['AES-192', 'AES192'],
  ['AES-256', 'AES256'],
];

/** 240 USM users with their own keys: every auth x priv pair, ten users each (user-<auth>-<priv>-<k>). */
export function v3UserMatrix() {
  return V3_AUTHS.flatMap((a, i) =>
    V3_PRIVS.flatMap(([, p], j) =>
      Array.from({ length: 10 }, (_, k) => ({
        name: `user-${i}-${j}-${k}`,
        authProtocol: a,
        authKey: `auth-${i}-${j}-${k}-secret`,
        privProtocol: p,
        privKey: `priv-${i}-${j}-${k}-secret`,
      })),
    ),
  );
}

/**
 * snmptrap v3 authPriv to `target` from one user of each auth x priv pair of v3UserMatrix, each from
 * its own engine ID; trap n (1-based) has OID `1.3.6.1.4.1.8072.9.<n>` and one varbind `varbindOid`
 * = "<auth>/<priv>". Returns how many were sent.
 */
export async function v3TrapsFromEveryPair(target: string, varbindOid: string): Promise<number> {
  let n = 0;
  for (const [i, a] of V3_AUTHS.entries())
    for (const [j, [cli]] of V3_PRIVS.entries()) {
      const k = (i + j) % 10;
      const engine = `0x8000000001020304${(++n).toString(16).padStart(4, '0')}`;
      await run('snmptrap', [
        '-v3',
        '-e',
        engine,
        '-l',
        'authPriv',
        '-u',
        `user-${i}-${j}-${k}`,
        '-a',
        a,
        '-A',
        `auth-${i}-${j}-${k}-secret`,
        '-x',
        cli,
        '-X',
        `priv-${i}-${j}-${k}-secret`,
        target,
        '',
        `1.3.6.1.4.1.8072.9.${n}`,
        varbindOid,
        's',
        `${a}/${cli}`,
      ]);
    }
  return n;
}
