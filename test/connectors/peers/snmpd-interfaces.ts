// Debian's snmpd serving a flow exporter's interfaces (IF-MIB ifXTable rows ifName, ifAlias,
// ifHighSpeed), for the flow source's enrich_interfaces: its tests and the flow-enrich benchmark.
// Free of vitest, so that the benchmarks can use it. Stopped by its PID.
import { spawn, spawnSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '../../helpers/wait.js';

/** A UDP port of loopback that was free a moment ago. */
async function freeUdpPort(): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  const { port } = s.address();
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** One interface an exporter's SNMP agent serves (IF-MIB ifXTable). */
export interface AgentInterface {
  index: number;
  name: string;
  alias: string;
  /** ifHighSpeed, Mbit/s. */
  speed: number;
}

export interface InterfaceAgent {
  port: number;
  /** Changes an interface's ifAlias on the agent (net-snmp's snmpset, as an operator would). */
  setAlias(index: number, alias: string): void;
  stop(): Promise<void>;
}

/**
 * Debian's snmpd on a free loopback port, serving the exporter's interfaces: its own IF-MIB of this
 * machine plus `ifs` as ifXTable rows (snmpd.conf `override`, ifAlias writable with community
 * `private`), read-only community `public`.
 */
export async function startInterfaceAgent(ifs: AgentInterface[]): Promise<InterfaceAgent> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-flow-snmpd-'));
  const port = await freeUdpPort();
  const X = '.1.3.6.1.2.1.31.1.1.1';
  const conf = [
    'rocommunity public 127.0.0.1',
    'rwcommunity private 127.0.0.1',
    ...ifs.flatMap((i) => [
      `override ${X}.1.${i.index} octet_str "${i.name}"`,
      `override -rw ${X}.18.${i.index} octet_str "${i.alias}"`,
      `override ${X}.15.${i.index} unsigned ${i.speed}`,
    ]),
    '',
  ].join('\n');
  writeFileSync(join(dir, 'snmpd.conf'), conf);
  const child = spawn('/usr/sbin/snmpd', ['-f', '-Lo', '-C', '-c', join(dir, 'snmpd.conf'), '-p', join(dir, 'pid'), `udp:127.0.0.1:${port}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SNMP_PERSISTENT_DIR: join(dir, 'persist'), MIBS: '', MIBDIRS: '/nonexistent', HOME: dir },
  });
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const answers = () =>
    spawnSync('snmpget', ['-v2c', '-c', 'public', '-r', '0', '-t', '1', '-On', `127.0.0.1:${port}`, `${X}.1.${ifs[0]!.index}`], {
      encoding: 'utf8',
    }).stdout.includes(ifs[0]!.name);
  await until(() => child.exitCode !== null || answers(), 20_000, 'snmpd to answer');
  if (child.exitCode !== null) throw new Error(`snmpd exited: ${log}`);
  return {
    port,
    setAlias(index, alias) {
      const r = spawnSync('snmpset', ['-v2c', '-c', 'private', '-On', `127.0.0.1:${port}`, `${X}.18.${index}`, 's', alias], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`snmpset failed: ${r.stderr}`);
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
