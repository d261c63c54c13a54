// mib-compile: compile the whole net-snmp corpus (78 modules) from scratch, side by side with
// libsmi's smidump (Debian smitools) on the same files in the same run.
//
// Ours, "from scratch" = read the source files, parse, compile (numeric OIDs, types, tables,
// notification members); the resolve index is timed apart (`index_ms`). Nothing is cached between
// runs: every cold run is a new process that reads and compiles the sources.
//  - cold: in a fresh Node process each time (JIT cold, as right after a daemon start); median of
//    RUNS processes. `cold_*`: from before reading the sources to the result (Node's start-up and
//    the loading of our modules excluded; `cold_import_*` is the latter). `cold_process_*`: the
//    whole process, Node's start-up included, measured like smidump's (GNU time; CPU in 10 ms steps).
//  - warm: in this process after warm-up runs (a reload in a running daemon); median.
// smidump: the whole process (its start-up is a few ms), `-k -f tree` and `-k -f xml` (its complete
// dump), median of RUNS runs. Each round runs ours and both smidumps back to back, so that machine
// load weighs on all alike. Wall and CPU time are both reported: on a loaded machine wall time
// swings several-fold, CPU time (user+sys, from getrusage / GNU time; for Node this includes its
// background threads: JIT compiler, parallel GC) much less.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { compileMibs } from '../src/mib/compiler.js';
import { MibIndex } from '../src/mib/mib-index.js';
import type { Measured, Scenario } from './scenarios.js';

// Run from the repository root (npm run bench): the corpus is the tests' copy (test/fixtures/mibs/README.md).
const CORPUS = process.env.SVC_BENCH_MIB_CORPUS ?? resolve(process.cwd(), 'test', 'fixtures', 'mibs', 'net-snmp');
const RUNS = 9;

interface Timing {
  wall: number;
  cpu: number;
}

const cpuNow = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

function compileCorpus(dir: string) {
  const files = readdirSync(dir).map((f) => join(dir, f));
  return compileMibs(files.map((file) => ({ file, text: readFileSync(file, 'utf8') })));
}

/** GNU time's `CPU %U %S` at the end of stderr, in ms (NaN without GNU time). */
function gnuTimeCpu(stderr: string): number {
  const m = /CPU ([0-9.]+) ([0-9.]+)\s*$/.exec(stderr);
  return m ? (Number(m[1]) + Number(m[2])) * 1000 : NaN;
}

interface ColdTiming extends Timing {
  importWall: number;
  importCpu: number;
  /** the whole process, as for smidump */
  processWall: number;
  processCpu: number;
}

/** One compile in a fresh Node process. */
function coldRun(): ColdTiming {
  const url = new URL('../src/mib/compiler.js', import.meta.url).href;
  const script = `
    import { readFileSync, readdirSync } from 'node:fs';
    import { join } from 'node:path';
    const i0 = process.cpuUsage(); const it0 = performance.now();
    const { compileMibs } = await import(${JSON.stringify(url)});
    const importWall = performance.now() - it0; const ic = process.cpuUsage(i0);
    const dir = ${JSON.stringify(CORPUS)};
    const c0 = process.cpuUsage(); const t0 = performance.now();
    const files = readdirSync(dir).map((f) => join(dir, f));
    const r = compileMibs(files.map((file) => ({ file, text: readFileSync(file, 'utf8') })));
    const wall = performance.now() - t0; const c = process.cpuUsage(c0);
    if (r.modules.length < 77) throw new Error('compile failed');
    process.stdout.write(JSON.stringify({ wall, cpu: (c.user + c.system) / 1000, importWall, importCpu: (ic.user + ic.system) / 1000 }));`;
  const timed = existsSync('/usr/bin/time');
  const node = [process.execPath, '--input-type=module', '-e', script];
  const t0 = performance.now();
  const r = timed ? spawnSync('/usr/bin/time', ['-f', 'CPU %U %S', ...node], { encoding: 'utf8' }) : spawnSync(node[0]!, node.slice(1), { encoding: 'utf8' });
  const processWall = performance.now() - t0;
  if (r.status !== 0) throw new Error(`cold run failed: ${r.stderr}`);
  return { ...(JSON.parse(r.stdout) as Omit<ColdTiming, 'processWall' | 'processCpu'>), processWall, processCpu: gnuTimeCpu(r.stderr) };
}

/** One smidump process over the corpus; CPU from GNU time when it is installed. */
function smidump(format: string): Timing & { flawed: number } {
  const files = readdirSync(CORPUS).map((f) => join(CORPUS, f));
  const timed = existsSync('/usr/bin/time');
  const cmd = timed ? '/usr/bin/time' : 'smidump';
  const args = [...(timed ? ['-f', 'CPU %U %S', 'smidump'] : []), '-k', '-f', format, ...files];
  const t0 = performance.now();
  const r = spawnSync(cmd, args, { env: { ...process.env, SMIPATH: CORPUS }, encoding: 'utf8', maxBuffer: 256 << 20 });
  const wall = performance.now() - t0;
  if (r.error) throw r.error;
  // libsmi marks modules it could only partly read ("contains errors, expect flawed output").
  return { wall, cpu: gnuTimeCpu(r.stderr), flawed: (r.stderr.match(/contains errors/g) ?? []).length };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const r1 = (x: number): number => Math.round(x * 10) / 10;

export const mibCompile: Scenario = {
  async run(): Promise<Measured> {
    // Interleave ours and smidump's runs so machine load weighs on both alike.
    const cold: ColdTiming[] = [];
    const tree: Timing[] = [];
    const xml: Timing[] = [];
    let flawed = 0;
    for (let i = 0; i < RUNS; i++) {
      cold.push(coldRun());
      tree.push(smidump('tree'));
      const x = smidump('xml');
      xml.push(x);
      flawed = x.flawed;
    }
    for (let i = 0; i < 10; i++) compileCorpus(CORPUS); // warm-up (steady state)
    const warm: Timing[] = [];
    let result = compileCorpus(CORPUS);
    for (let i = 0; i < RUNS; i++) {
      const c0 = cpuNow();
      const t0 = performance.now();
      result = compileCorpus(CORPUS);
      warm.push({ wall: performance.now() - t0, cpu: cpuNow() - c0 });
    }
    const t0 = performance.now();
    const index = new MibIndex(result.modules);
    const indexMs = performance.now() - t0;
    const total = result.modules.length + result.failed.length;
    const coldCpu = median(cold.map((t) => t.cpu));
    return {
      modules: total,
      modules_active: result.modules.length,
      active_pct: r1((100 * result.modules.length) / total),
      nodes: index.all().length,
      cold_wall_ms: r1(median(cold.map((t) => t.wall))),
      cold_cpu_ms: r1(coldCpu),
      cold_import_wall_ms: r1(median(cold.map((t) => t.importWall))),
      cold_import_cpu_ms: r1(median(cold.map((t) => t.importCpu))),
      cold_process_wall_ms: r1(median(cold.map((t) => t.processWall))),
      cold_process_cpu_ms: r1(median(cold.map((t) => t.processCpu))),
      warm_wall_ms: r1(median(warm.map((t) => t.wall))),
      warm_cpu_ms: r1(median(warm.map((t) => t.cpu))),
      index_ms: r1(indexMs),
      smidump_tree_wall_ms: r1(median(tree.map((t) => t.wall))),
      smidump_tree_cpu_ms: r1(median(tree.map((t) => t.cpu))),
      smidump_xml_wall_ms: r1(median(xml.map((t) => t.wall))),
      smidump_xml_cpu_ms: r1(median(xml.map((t) => t.cpu))),
      smidump_flawed_modules: flawed,
    };
  },
};
