// Start-up time of the command and the daemon (issue 18), whole processes of this build
// (.bench-build/src/cli/main.js, compiled as users run svc), next to a bare `node -e 0` started in
// the same rounds: the machine's speed varies threefold from day to day, the ratio much less.
//  - cli-start: `svc --version`, `svc --help` and `svc validate` of a small pipeline file, the
//    median of 10 each, the four commands taken in turn so that a busy moment hits all alike;
//  - serve-ready: `svc serve` (SQLite, no pipelines, its own directories and free ports) until GET
//    /api/ready answers 200, then stopped by its PID. The first start creates the database and
//    compiles the bundled MIBs (cold_start_ms); the figure is the median of 5 restarts after it, a
//    restart during an incident, each beside a bare node start. ready_cpu_ms: the CPU time the
//    daemon had used when it answered (Linux /proc), which a busy machine inflates less than the
//    wall time.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/helpers/net.js';
import { serveEnv } from '../test/helpers/serve-env.js';
import type { Scenario } from './scenarios.js';
import { median } from './compare.js';

// SVC_BENCH_MAIN: another build's dist/cli/main.js (e.g. of the previous commit) for before/after figures.
const MAIN = process.env.SVC_BENCH_MAIN || fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
// npm run bench runs from the repository root, as every scenario assumes.
const ROOT = process.cwd();
const CLI_ROUNDS = 10;
const SERVE_RESTARTS = 5;
const POLL_MS = 5;
/** The goals of issue 18, whole process, in milliseconds. */
const GOALS = { version: 150, help: 150, validate: 400, serve_ready: 1500 };

const ms = (n: number) => Math.round(n * 10) / 10;
const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;

/** Milliseconds from spawn to exit of `node ...args`; throws when it does not exit 0. */
function timeProcess(args: string[]): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const took = performance.now() - t0;
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return took;
}

const SMALL_PIPELINE = (dir: string) => `version: "1"
pipeline:
  name: startup-bench
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(join(dir, 'in'))}, file_pattern: "*.ndjson" }
  serializer_in: { type: ndjson }
  serializer_out: { type: ndjson }
  transforms:
    - { type: rename, fields: { ifInOctets: in_octets } }
    - { type: filter, expression: ifOperStatus == 1 }
  sinks:
    - { type: local, path: ${JSON.stringify(join(dir, 'out'))}, filename_template: out.ndjson }
`;

export const cliStart: Scenario = {
  run: async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-bench-cli-'));
    try {
      const file = join(dir, 'small.yaml');
      writeFileSync(file, SMALL_PIPELINE(dir));
      const commands: Record<string, string[]> = {
        node: ['-e', '0'],
        version: [MAIN, '--version'],
        help: [MAIN, '--help'],
        validate: [MAIN, 'validate', file],
      };
      const times: Record<string, number[]> = Object.fromEntries(Object.keys(commands).map((k) => [k, []]));
      for (const args of Object.values(commands)) timeProcess(args); // warms the file cache, not counted
      for (let i = 0; i < CLI_ROUNDS; i++) for (const [k, args] of Object.entries(commands)) times[k]!.push(timeProcess(args));
      const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)])) as Record<keyof typeof commands, number>;
      return {
        node_ms: ms(m.node!),
        version_ms: ms(m.version!),
        version_goal_ms: GOALS.version,
        version_per_node: ratio(m.version!, m.node!),
        help_ms: ms(m.help!),
        help_goal_ms: GOALS.help,
        help_per_node: ratio(m.help!, m.node!),
        validate_ms: ms(m.validate!),
        validate_goal_ms: GOALS.validate,
        validate_per_node: ratio(m.validate!, m.node!),
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

/** Started daemons, killed on exit should a failure skip their stop. */
const started = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** User + system CPU milliseconds process `pid` has used (Linux), else NaN. */
function cpuMs(pid: number): number {
  try {
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return NaN;
  }
}

/** Wall and CPU milliseconds from spawning `svc serve` in `dir` until /api/ready answers 200; then stops it by PID. */
async function serveReady(dir: string): Promise<{ wall: number; cpu: number }> {
  const [port, consolePort] = [await freePort(), await freePort()];
  const ui = join(ROOT, 'dist', 'ui');
  const t0 = performance.now();
  const child = spawn(process.execPath, [MAIN, 'serve'], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...serveEnv(
        dir,
        { port, consolePort },
        {
          SVC_LOG_LEVEL: 'ERROR',
          SVC_DATA_DIR: join(dir, 'data'),
          SVC_SCHEMA_DIR: join(dir, 'schemas'),
          // The web UI of `npm run build` when there is one; this build has none of its own.
          SVC_UI_DIR: existsSync(ui) ? ui : '',
        },
      ),
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  started.add(child);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr = (stderr + s).slice(-4000)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`svc serve exited ${child.exitCode} before it was ready: ${stderr}`);
      const ok = await fetch(`http://127.0.0.1:${port}/api/ready`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) return { wall: performance.now() - t0, cpu: cpuMs(child.pid!) };
      await sleep(POLL_MS);
    }
  } finally {
    process.kill(child.pid!, 'SIGTERM');
    if (await Promise.race([exited.then(() => false), sleep(10_000).then(() => true)])) child.kill('SIGKILL');
    await exited;
    started.delete(child);
  }
}

export const serveReadyScenario: Scenario = {
  run: async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-bench-serve-'));
    try {
      mkdirSync(join(dir, 'pipelines'));
      const cold = await serveReady(dir);
      const ready: { wall: number; cpu: number }[] = [];
      const node: number[] = [];
      for (let i = 0; i < SERVE_RESTARTS; i++) {
        ready.push(await serveReady(dir));
        node.push(timeProcess(['-e', '0']));
      }
      const [r, n] = [median(ready.map((x) => x.wall)), median(node)];
      return {
        node_ms: ms(n),
        cold_start_ms: ms(cold.wall),
        ready_ms: ms(r),
        ready_goal_ms: GOALS.serve_ready,
        ready_per_node: ratio(r, n),
        ready_cpu_ms: ms(median(ready.map((x) => x.cpu))),
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
