// snmp-poll-fleet (issue 14): 1,000 simulated agents (src/snmp/fleet.ts, 20-28 interfaces each)
// in a child process of their own, so their CPU and memory do not count against the poller. Each
// round times one polling cycle of the whole ifTable of every agent two ways:
//  - reference: snmpbulkwalk -v2c -Cr25 per agent, 32 at a time (xargs -P 32), as a shell script
//    poller would;
//  - ours: one snmp_poll run (targets, operation walk, yield_rows, max_concurrency) into an NDJSON
//    file; the records must be agents x interfaces, one per ifTable row.
// Figures: seconds per cycle of both (best of ROUNDS), the ratio, the poller's peak RSS (run.ts),
// and the fleet's own peak RSS. Decisions: docs/snmp.md (Fleet).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DATA_DIR } from './data.js';
import { timedRun } from './pipeline.js';
import type { Measured, Scenario } from './scenarios.js';

const AGENTS = Number(process.env.SVC_BENCH_FLEET_AGENTS ?? 1000);
const MIN_INTERFACES = 20;
const ROUNDS = 3;
const PARALLEL = 32;
const MAX_REP = 25;
/** Targets snmp_poll polls at once. */
const CONCURRENCY = Number(process.env.SVC_BENCH_FLEET_CONCURRENCY ?? 200);
const IF_TABLE = '1.3.6.1.2.1.2.2';
/** ifTable columns of the simulated device (ifIndex .. ifSpecific). */
const IF_COLUMNS = 22;

export interface FleetPeer {
  proc: ChildProcess;
  ports: number[];
  interfaces: number[];
  /** VmHWM of the fleet process (MB). */
  peakRssMb(): number;
  /** CPU seconds the fleet process has used (user + system). */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

/** The fleet in a child process (bench/snmp-fleet-peer.ts), killed by PID at the end. */
export async function startFleet(agents = AGENTS): Promise<FleetPeer> {
  const script = fileURLToPath(new URL('./snmp-fleet-peer.js', import.meta.url));
  const proc = spawn(process.execPath, [script, JSON.stringify({ agents, interfaces: MIN_INTERFACES, interfaceSpread: 8, seed: 14 })], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  const ready = await new Promise<{ ports: number[]; interfaces: number[] }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the fleet did not start within 60 s')), 60_000);
    proc.once('exit', (code) => reject(new Error(`the fleet exited (${code}) before it was ready`)));
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        resolve(JSON.parse(out.slice(0, nl)) as { ports: number[]; interfaces: number[] });
      }
    });
  });
  return {
    proc,
    ...ready,
    peakRssMb: () => {
      try {
        const kb = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${proc.pid}/status`, 'utf8'));
        return kb ? Math.round(Number(kb[1]) / 1024) : -1;
      } catch {
        return -1;
      }
    },
    cpuSeconds: () => {
      // /proc/<pid>/stat fields 14 and 15 (utime, stime) in clock ticks (100 a second on Linux).
      const f = readFileSync(`/proc/${proc.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return (Number(f[11]) + Number(f[12])) / 100;
    },
    stop: async () => {
      if (proc.exitCode !== null) return;
      const done = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await Promise.race([done, new Promise((r) => setTimeout(r, 3000))]);
      if (proc.exitCode === null) proc.kill('SIGKILL');
    },
  };
}

/** One reference cycle: snmpbulkwalk over every port, PARALLEL at a time; seconds, CPU seconds of the tools and value lines. */
function xargsCycle(portsFile: string, persistDir: string): Promise<{ seconds: number; cpuSeconds: number; lines: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    // Each tool gets the same private persistent directory (not /var/lib/snmp, shared by everything on the machine).
    // The shell's `times` (on stderr) gives the CPU time of its children: xargs and every snmpbulkwalk.
    const p = spawn(
      'sh',
      ['-c', `xargs -P ${PARALLEL} -I{} snmpbulkwalk -v2c -c public -On -Cr${MAX_REP} -t 2 -r 1 127.0.0.1:{} ${IF_TABLE} < "$1" && times >&2`, 'sh', portsFile],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, MIBS: '', MIBDIRS: '/nonexistent', SNMP_PERSISTENT_DIR: persistDir, SNMPCONFPATH: persistDir },
      },
    );
    let lines = 0;
    let err = '';
    p.stdout!.on('data', (d: Buffer) => {
      for (let i = d.indexOf(10); i >= 0; i = d.indexOf(10, i + 1)) lines++;
    });
    p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    p.once('error', reject);
    p.once('exit', (code) => {
      const seconds = (performance.now() - t0) / 1000;
      if (code !== 0) return reject(new Error(`xargs snmpbulkwalk exited ${code}: ${err.slice(0, 500)}`));
      const t = [
        ...err
          .trim()
          .split('\n')
          .at(-1)!
          .matchAll(/(\d+)m([\d.]+)s/g),
      ].map((m) => Number(m[1]) * 60 + Number(m[2]));
      resolve({ seconds, cpuSeconds: (t[0] ?? NaN) + (t[1] ?? NaN), lines });
    });
  });
}

/** One snmp_poll cycle into an NDJSON file: seconds, CPU seconds and records. */
async function pollCycle(ports: number[], out: string): Promise<{ seconds: number; cpuSeconds: number; records: number }> {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const targets = ports.map((p) => `      - { host: 127.0.0.1, port: ${p} }`).join('\n');
  const { record, seconds, cpuSeconds } = await timedRun(`
version: "1"
pipeline:
  name: bench-snmp-poll-fleet
  schedule: { type: manual }
  source:
    type: snmp_poll
    community: public
    version: "2c"
    operation: walk
    oids: ["${IF_TABLE}"]
    yield_rows: true
    resolve_oids: false
    max_repetitions: ${MAX_REP}
    max_concurrency: ${CONCURRENCY}
    timeout: 2
    retries: 1
    targets:
${targets}
  serializer_in: { type: json }
  serializer_out: { type: ndjson }
  sinks:
    - { type: local, path: ${JSON.stringify(out)}, filename_template: "fleet.ndjson" }
`);
  if (record.status !== 'success') throw new Error(`snmp_poll run failed: ${JSON.stringify(record)}`);
  return { seconds, cpuSeconds, records: record.records_out };
}

const round3 = (n: number) => Number(n.toFixed(3));

export const snmpPollFleet: Scenario = {
  async run(): Promise<Measured> {
    const fleet = await startFleet();
    const tmp = mkdtempSync(join(tmpdir(), 'svc-bench-fleet-'));
    try {
      const rows = fleet.interfaces.reduce((a, b) => a + b, 0);
      const portsFile = join(tmp, 'ports.txt');
      writeFileSync(portsFile, fleet.ports.join('\n') + '\n');
      const out = join(DATA_DIR, 'out', 'snmp-poll-fleet');
      const ref: number[] = [];
      const ours: number[] = [];
      const cpu: number[] = [];
      const fleetCpuRef: number[] = [];
      const xargsCpu: number[] = [];
      const fleetCpuOurs: number[] = [];
      // Warm-up of both (JIT, page cache of the tools), not timed.
      await xargsCycle(portsFile, tmp);
      await pollCycle(fleet.ports, out);
      for (let r = 0; r < ROUNDS; r++) {
        let c0 = fleet.cpuSeconds();
        const x = await xargsCycle(portsFile, tmp);
        fleetCpuRef.push(fleet.cpuSeconds() - c0);
        if (x.lines !== rows * IF_COLUMNS) throw new Error(`snmpbulkwalk printed ${x.lines} values, expected ${rows * IF_COLUMNS}`);
        ref.push(x.seconds);
        xargsCpu.push(x.cpuSeconds);
        c0 = fleet.cpuSeconds();
        const p = await pollCycle(fleet.ports, out);
        fleetCpuOurs.push(fleet.cpuSeconds() - c0);
        if (p.records !== rows) throw new Error(`snmp_poll wrote ${p.records} records, expected ${rows} (agents x interfaces)`);
        ours.push(p.seconds);
        cpu.push(p.cpuSeconds);
      }
      const best = (xs: number[]) => Math.min(...xs);
      return {
        agents: AGENTS,
        interfaces: rows,
        records: rows,
        oids: rows * IF_COLUMNS,
        max_repetitions: MAX_REP,
        xargs_parallel: PARALLEL,
        max_concurrency: CONCURRENCY,
        seconds_per_cycle: round3(best(ours)),
        cpu_seconds_per_cycle: round3(cpu[ours.indexOf(best(ours))]!),
        records_per_sec: Math.round(rows / best(ours)),
        xargs_snmpbulkwalk_seconds_per_cycle: round3(best(ref)),
        ratio: Number((best(ref) / best(ours)).toFixed(2)),
        xargs_cpu_seconds_per_cycle: round3(xargsCpu[ref.indexOf(best(ref))]!),
        // CPU seconds per cycle, the peer's included on both sides: what the wall-clock ratio tends to on an idle machine.
        cpu_ratio: Number(
          (
            (xargsCpu[ref.indexOf(best(ref))]! + fleetCpuRef[ref.indexOf(best(ref))]!) /
            (cpu[ours.indexOf(best(ours))]! + fleetCpuOurs[ours.indexOf(best(ours))]!)
          ).toFixed(2),
        ),
        // What the peer spent serving each cycle: when it is near the poller's seconds, the fleet is the bottleneck.
        fleet_cpu_seconds_per_cycle: round3(fleetCpuOurs[ours.indexOf(best(ours))]!),
        fleet_cpu_seconds_per_xargs_cycle: round3(fleetCpuRef[ref.indexOf(best(ref))]!),
        load_average: Number(loadavg()[0]!.toFixed(1)),
        fleet_peak_rss_mb: fleet.peakRssMb(),
      };
    } finally {
      await fleet.stop();
      rmSync(tmp, { recursive: true, force: true });
    }
  },
};
