// trap-pipeline: SNMPv2c traps through the snmp_trap source into an NDJSON file (local sink), side by
// side with Debian's snmptrapd (-Lf file, one line per trap) receiving the same stream in the same run.
//
// The sender is trap-receive's (bench/snmp-scenarios.ts `blast`): a python3 child that paces one
// pre-encoded IF-MIB linkDown trap (5 varbinds) at a fixed rate, so it neither shares our event
// loop nor depends on our encoder. Received records are counted in the output files (NDJSON lines
// for us, lines of snmptrapd's -Lf file) once they stop growing, against what was sent.
//
// 1. No loss at 10,000 traps/s for TARGET_SECONDS (the goal).
// 2. The ceiling: the rate steps up until more than 0.1 % is lost; the ceiling is the highest step
//    with at most 0.1 % lost, for us and for snmptrapd. The sender shares the machine's cores with
//    the receivers, so its achieved rate is reported too.
//
// Both receivers get an 8 MB UDP receive buffer (our TrapReceiver's; snmptrapd's serverRecvBuf),
// which the kernel caps at net.core.rmem_max. Our pipeline resolves names through the MIB store
// (resolve_oids, the default), as a user runs it; snmptrapd prints numeric OIDs (-On) and no DNS (-n).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeUdpPort } from '../test/snmp/peers.js';
import { blast } from './snmp-scenarios.js';
import { fileSize, settledSize, startStreamIngest } from './pipeline.js';
import type { Measured, Scenario } from './scenarios.js';

const TARGET_RATE = 10_000;
const TARGET_SECONDS = Number(process.env.BENCH_TRAP_SECONDS ?? 5);
const STEP_SECONDS = 3;
const STEPS = [10_000, 15_000, 20_000, 30_000, 40_000, 60_000, 80_000, 100_000];
const MAX_LOSS = 0.001;

/** Lines of `file` once it stops growing (the receiver drained its buffers). */
async function settledLines(file: string): Promise<number> {
  if (!(await settledSize(file, 600))) return 0;
  const b = readFileSync(file);
  let n = 0;
  for (let i = b.indexOf(10); i >= 0; i = b.indexOf(10, i + 1)) n++;
  return n;
}

interface Receiver {
  port: number;
  file: string;
  stop(): Promise<void>;
}

async function startOurs(dir: string): Promise<Receiver> {
  // The compiled bench has no product MIB directory beside it: the repository's (npm run bench runs there).
  process.env.SVC_MIB_BUNDLED_SOURCE_DIR ??= join(process.cwd(), 'mibs');
  const port = await freeUdpPort();
  const out = join(dir, 'svc');
  const run = startStreamIngest(`version: "1"
pipeline:
  name: bench-trap-pipeline
  schedule: { type: stream }
  source: { type: snmp_trap, host: 127.0.0.1, port: ${port}, community: public, mib_modules: [IF-MIB] }
  serializer_in: { type: json }
  serializer_out: { type: ndjson }
  sinks: [{ type: local, path: ${JSON.stringify(out)}, filename_template: traps.ndjson }]
`);
  await run.ready;
  return {
    port,
    file: join(out, 'traps.ndjson'),
    async stop() {
      const rec = await run.stop();
      if (rec.status !== 'success') throw new Error(`trap pipeline run failed: ${JSON.stringify(rec)}`);
    },
  };
}

async function startTrapd(dir: string): Promise<Receiver> {
  const port = await freeUdpPort();
  const file = join(dir, 'snmptrapd.log');
  const conf = join(dir, 'snmptrapd.conf');
  writeFileSync(conf, 'disableAuthorization yes\n[snmp] serverRecvBuf 8388608\n');
  // One line per trap with every varbind, written to a file (-Lf) as an operator runs it; numeric
  // OIDs (-On), no reverse DNS (-n). Its stdout is not read (nothing else is logged there).
  const proc = spawn(
    '/usr/sbin/snmptrapd',
    ['-f', '-Lf', file, '-On', '-n', '-C', '-c', conf, '-p', join(dir, 'snmptrapd.pid'), '-F', '%B %V\t%v\n', `udp:127.0.0.1:${port}`],
    {
      stdio: 'ignore',
      env: { ...process.env, MIBS: '', MIBDIRS: '/nonexistent', SNMP_PERSISTENT_DIR: join(dir, 'persist'), HOME: dir },
    },
  );
  const deadline = Date.now() + 15_000;
  while (!(fileSize(file) && readFileSync(file, 'utf8').includes('NET-SNMP version'))) {
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error('snmptrapd did not start');
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    file,
    async stop() {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      if (proc.exitCode === null) proc.kill('SIGKILL');
    },
  };
}

/** Sends `rate` traps/s for `seconds` and counts what arrived in the receiver's file since the last count. */
async function step(rx: Receiver, before: { lines: number }, rate: number, seconds: number) {
  const { sent, seconds: took } = await blast(rx.port, rate, seconds);
  const lines = await settledLines(rx.file);
  const received = lines - before.lines;
  before.lines = lines;
  return { sent, received, sentRate: Math.round(sent / took), loss: sent ? 1 - received / sent : 0 };
}

async function measure(rx: Receiver): Promise<Measured> {
  const count = { lines: 0 };
  await blast(rx.port, 1000, 1); // warm-up (JIT, MIB index, file open)
  count.lines = await settledLines(rx.file);
  const target = await step(rx, count, TARGET_RATE, TARGET_SECONDS);
  let ceiling = 0;
  let ceilingSent = 0;
  const steps: string[] = [];
  for (const rate of STEPS) {
    const s = await step(rx, count, rate, STEP_SECONDS);
    steps.push(`${rate}:${(s.received / Math.max(1, s.sent)).toFixed(3)}`);
    if (s.loss > MAX_LOSS) break;
    ceiling = rate;
    ceilingSent = s.sentRate;
  }
  return {
    sent_at_10k: target.sent,
    received_at_10k: target.received,
    ratio_at_10k: Number((target.received / Math.max(1, target.sent)).toFixed(4)),
    ceiling_traps_per_sec: ceiling,
    sender_rate_at_ceiling: ceilingSent,
    steps: steps.join(' '),
  };
}

export const trapPipeline: Scenario = {
  async run(): Promise<Measured> {
    const dir = mkdtempSync(join(tmpdir(), 'svc-bench-trap-'));
    try {
      const ours = await startOurs(dir);
      let o: Measured;
      try {
        o = await measure(ours);
      } finally {
        await ours.stop();
      }
      const trapd = await startTrapd(dir);
      let t: Measured;
      try {
        t = await measure(trapd);
      } finally {
        await trapd.stop();
      }
      const pre = (p: string, m: Measured) => Object.fromEntries(Object.entries(m).map(([k, v]) => [`${p}_${k}`, v]));
      return {
        seconds_at_10k: TARGET_SECONDS,
        ...pre('ours', o),
        ...pre('snmptrapd', t),
        ratio_at_10k: Number(((o.ratio_at_10k as number) / Math.max(1e-9, t.ratio_at_10k as number)).toFixed(3)),
        ceiling_ratio: t.ceiling_traps_per_sec
          ? Number(((o.ceiling_traps_per_sec as number) / (t.ceiling_traps_per_sec as number)).toFixed(2))
          : 'n/a (snmptrapd lost more than 0.1 % at every step)',
        // The figures depend on free CPU: the machine's load when the run ended.
        load_avg_1m: Number(loadavg()[0]!.toFixed(1)),
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
