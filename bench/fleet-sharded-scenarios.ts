// fleet-sharded (issue 33): one fleet poll of 10,000 simulated SNMP agents (src/snmp/fleet.ts, in a
// child process of its own) as a sharded batch run of a manager and its workers, each a real
// `svc serve` on loopback with a fresh PostgreSQL store, on one worker against two and against
// three (`workers: {count: N}`; the idle workers cost nothing). Alternated, ROUNDS cycles each:
//  - cpu per target: the CPU seconds (utime + stime, /proc/<pid>/stat) of every worker process over
//    a cycle, divided by the targets; the ratio N workers : 1 worker is the sharding's overhead (the
//    machine has 2 cores, so wall time cannot show scaling; CPU per target can);
//  - the manager's CPU per cycle (planning, dispatch, collection);
//  - dispatch overhead per shard: svc_mgr_shard_dispatch_seconds (from the plan's start until the
//    worker accepted its shard, which includes the worker's sync of MIBs: the manager here has the
//    78 net-snmp modules), p50 and p99 interpolated within the histogram's buckets.
// Every cycle must poll every agent once (records_in = 10,000, status success).
// SVC_BENCH_SHARDED_SPLIT=1 divides the 200 polls in flight among the shards (the cluster then polls
// as many at once as one worker does); by default each shard has 200.
// SVC_BENCH_SHARDED_CONTROL=socket|shared adds, in each round next to each svc cycle, a cycle of a
// plain poller without svc (bench/plain-snmp-poller.mjs: a connected socket per target, or one
// socket per process) split over as many processes as the svc cycle has workers: what CPU per target
// does on this machine when the same polls are divided among processes, whatever svc does.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createInterface, type Interface } from 'node:readline';
import { join } from 'node:path';
import type { Measured, Scenario } from './scenarios.js';
import { call, side, startCluster, type Proc } from './cluster-scenarios.js';
import { startFleet } from './snmp-fleet-scenarios.js';

const AGENTS = Number(process.env.SVC_BENCH_SHARDED_AGENTS ?? 10_000);
const ROUNDS = Number(process.env.SVC_BENCH_ROUNDS ?? 3);
const COUNTS = [1, 2, 3];
/** Polls in flight on the whole cluster; SVC_BENCH_SHARDED_SPLIT=1 divides them among the shards (else each shard has them all). */
const CONCURRENCY = 200;
const SPLIT = process.env.SVC_BENCH_SHARDED_SPLIT === '1';
const CONTROL = process.env.SVC_BENCH_SHARDED_CONTROL;
// Relative to the repository (npm run bench runs there; this file runs from .bench-build/).
const MIBS = join(process.cwd(), 'test', 'fixtures', 'mibs', 'net-snmp');

const cpuOf = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};

const yaml = (name: string, count: number, targets: string, out: string) => `version: "1"
pipeline:
  name: ${name}
  schedule: { type: manual }
  workers: { count: ${count} }
  source:
    type: snmp_poll
    targets_file: ${JSON.stringify(targets)}
    oids: [1.3.6.1.2.1.1.3.0, 1.3.6.1.2.1.1.5.0, 1.3.6.1.2.1.2.1.0]
    resolve_oids: false
    timeout: 5
    retries: 1
    max_concurrency: ${SPLIT ? Math.ceil(CONCURRENCY / count) : CONCURRENCY}
  sinks:
    - { type: local, path: ${JSON.stringify(out)}, filename_template: "{run_id}.json" }
`;

/** Cumulative bucket counts of svc_mgr_shard_dispatch_seconds, by upper bound. */
async function dispatchBuckets(api: string): Promise<Map<number, number>> {
  const text = await (await fetch(`${api}/metrics`)).text();
  const out = new Map<number, number>();
  for (const m of text.matchAll(/^svc_mgr_shard_dispatch_seconds_bucket\{le="([^"]+)"\} (\d+)/gm))
    out.set(m[1] === '+Inf' ? Number.POSITIVE_INFINITY : Number(m[1]), Number(m[2]));
  return out;
}

/** histogram_quantile over the difference of two snapshots (linear within a bucket), in ms. */
function quantileMs(before: Map<number, number>, after: Map<number, number>, q: number): number {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const counts = bounds.map((b) => (after.get(b) ?? 0) - (before.get(b) ?? 0));
  const total = counts[counts.length - 1]!;
  if (!total) return Number.NaN;
  const rank = q * total;
  for (let i = 0; i < bounds.length; i++) {
    if (counts[i]! >= rank) {
      const lo = i === 0 ? 0 : bounds[i - 1]!;
      const hi = Number.isFinite(bounds[i]!) ? bounds[i]! : lo;
      const below = i === 0 ? 0 : counts[i - 1]!;
      const within = counts[i]! - below;
      return 1000 * (lo + (hi - lo) * (within ? (rank - below) / within : 1));
    }
  }
  return Number.NaN;
}

/** `count` plain pollers (bench/plain-snmp-poller.mjs), agent i on poller i % count. */
function plainPollers(root: string, ports: number[], count: number, mode: string) {
  const procs: { child: ChildProcess; lines: Interface }[] = [];
  for (let k = 0; k < count; k++) {
    const file = join(root, `plain-${count}-${k}.txt`);
    writeFileSync(file, ports.filter((_, i) => i % count === k).join('\n') + '\n');
    const concurrency = SPLIT ? Math.ceil(CONCURRENCY / count) : CONCURRENCY;
    const child = spawn(process.execPath, ['bench/plain-snmp-poller.mjs', mode, String(concurrency), file], { stdio: ['pipe', 'pipe', 'inherit'] });
    procs.push({ child, lines: createInterface({ input: child.stdout! }) });
  }
  const next = (p: (typeof procs)[number]) => new Promise<string>((res) => p.lines.once('line', res));
  const ready = Promise.all(procs.map(next));
  return {
    ready,
    /** One cycle of every poller at once: the CPU seconds of them all; throws unless every agent answered. */
    async cycle(): Promise<number> {
      const lines = procs.map(next);
      for (const p of procs) p.child.stdin!.write('cycle\n');
      const got = (await Promise.all(lines)).map((l) => JSON.parse(l) as { answered: number; cpu_s: number });
      const answered = got.reduce((a, g) => a + g.answered, 0);
      if (answered !== ports.length) throw new Error(`plain poller x${count}: ${answered} of ${ports.length} agents answered`);
      return got.reduce((a, g) => a + g.cpu_s, 0);
    },
    stop: () => procs.forEach((p) => p.child.stdin!.end()),
  };
}

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const round = (n: number, digits = 3) => Number(n.toFixed(digits));

export const fleetSharded: Scenario = {
  async run(): Promise<Measured> {
    const loadStart = loadavg();
    const fleet = await startFleet(AGENTS);
    try {
      return await side('sharded', async (db, root, procs: Proc[]) => {
        const { api } = await startCluster(db, root, procs, 3, { manager: { SVC_MIB_BUNDLED_SOURCE_DIR: MIBS } });
        const workerPids = procs.slice(0, 3).map((p) => p.child.pid!);
        const managerPid = procs[3]!.child.pid!;
        const targets = join(root, 'fleet.txt');
        writeFileSync(targets, fleet.ports.map((p) => `127.0.0.1:${p}`).join('\n') + '\n');
        for (const n of COUNTS) {
          mkdirSync(join(root, 'out', `w${n}`), { recursive: true });
          const r = await call('POST', `${api}/api/pipelines`, yaml(`fleet-w${n}`, n, targets, join(root, 'out', `w${n}`)));
          if (r.status !== 201) throw new Error(`registering fleet-w${n}: ${r.status} ${r.text}`);
        }
        const cycle = async (n: number) => {
          const cpu0 = workerPids.map(cpuOf);
          const m0 = cpuOf(managerPid);
          const t0 = performance.now();
          const r = await call('POST', `${api}/api/pipelines/fleet-w${n}/run`);
          if (r.status !== 202) throw new Error(`run fleet-w${n}: ${r.status} ${r.text}`);
          for (;;) {
            await new Promise((res) => setTimeout(res, 50));
            const g = await call('GET', `${api}/api/runs/${r.body.run_id}`);
            if (g.status !== 200 || g.body.status === 'running') continue;
            if (g.body.status !== 'success' || g.body.records_in !== AGENTS || g.body.shards?.length !== n)
              throw new Error(`run of fleet-w${n}: ${g.body.status} ${g.body.records_in} records, ${g.body.shards?.length} shards: ${g.body.error}`);
            break;
          }
          const seconds = (performance.now() - t0) / 1000;
          const workerCpu = workerPids.map(cpuOf).reduce((a, c, i) => a + c - cpu0[i]!, 0);
          return { seconds, workerCpu, managerCpu: cpuOf(managerPid) - m0 };
        };
        const plain = CONTROL ? new Map(COUNTS.map((n) => [n, plainPollers(root, fleet.ports, n, CONTROL)])) : undefined;
        const plainCpu = new Map<number, number[]>(COUNTS.map((n) => [n, []]));
        const got = new Map<number, { seconds: number[]; workerCpu: number[]; managerCpu: number[] }>();
        const samples = new Map<number, { b: Map<number, number>; a: Map<number, number> }[]>();
        try {
          if (plain) await Promise.all([...plain.values()].map((p) => p.ready));
          // A warm-up cycle of each (the first sync of MIBs, JIT) is not counted.
          for (const n of COUNTS) {
            await cycle(n);
            await plain?.get(n)!.cycle();
          }
          for (let round = 0; round < ROUNDS; round++) {
            for (const n of COUNTS) {
              const b = await dispatchBuckets(api);
              const c = await cycle(n);
              const a = await dispatchBuckets(api);
              (samples.get(n) ?? samples.set(n, []).get(n)!).push({ b, a });
              const g = got.get(n) ?? { seconds: [], workerCpu: [], managerCpu: [] };
              g.seconds.push(c.seconds);
              g.workerCpu.push(c.workerCpu);
              g.managerCpu.push(c.managerCpu);
              got.set(n, g);
              if (plain) plainCpu.get(n)!.push(await plain.get(n)!.cycle());
            }
          }
        } finally {
          for (const p of plain?.values() ?? []) p.stop();
        }
        // Dispatch: every shard of every counted cycle, all worker counts together (the per-shard cost).
        const all = [...samples.values()].flat();
        const sum = (pick: 'a' | 'b') => {
          const out = new Map<number, number>();
          for (const s of all) for (const [k, v] of s[pick]) out.set(k, (out.get(k) ?? 0) + v);
          return out;
        };
        const p50 = quantileMs(sum('b'), sum('a'), 0.5);
        const p99 = quantileMs(sum('b'), sum('a'), 0.99);
        const perTarget = (n: number) => (1000 * median(got.get(n)!.workerCpu)) / AGENTS;
        const out: Measured = { agents: AGENTS, rounds: ROUNDS, concurrency_split: SPLIT ? 'divided among the shards' : 'per shard' };
        for (const n of COUNTS) {
          out[`w${n}_seconds`] = round(median(got.get(n)!.seconds), 2);
          out[`w${n}_worker_cpu_ms_per_target`] = round(perTarget(n));
          out[`w${n}_manager_cpu_s`] = round(median(got.get(n)!.managerCpu), 2);
        }
        out.cpu_ratio_2_vs_1 = round(perTarget(2) / perTarget(1));
        out.cpu_ratio_3_vs_1 = round(perTarget(3) / perTarget(1));
        out.goal_cpu_ratio = 1.1;
        if (plain) {
          const plainPerTarget = (n: number) => (1000 * median(plainCpu.get(n)!)) / AGENTS;
          out.control = `plain poller, ${CONTROL === 'shared' ? 'one socket per process' : 'a socket per target'}`;
          for (const n of COUNTS) out[`control_x${n}_cpu_ms_per_target`] = round(plainPerTarget(n), 4);
          out.control_ratio_2_vs_1 = round(plainPerTarget(2) / plainPerTarget(1));
          out.control_ratio_3_vs_1 = round(plainPerTarget(3) / plainPerTarget(1));
        }
        out.loadavg_start = loadStart;
        out.loadavg_end = loadavg();
        out.dispatch_p50_ms = round(p50, 1);
        out.dispatch_p99_ms = round(p99, 1);
        // The +Inf bucket counts every shard.
        out.dispatch_shards = (sum('a').get(Number.POSITIVE_INFINITY) ?? 0) - (sum('b').get(Number.POSITIVE_INFINITY) ?? 0);
        return out;
      });
    } finally {
      await fleet.stop();
    }
  },
};
