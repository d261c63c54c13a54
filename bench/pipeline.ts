// One way for every scenario to run a local -> local pipeline and time it: a fresh output
// directory, the YAML built from the parts that differ, a check that the run read what it should
// without loss, and wall-clock plus CPU time (all threads; steadier on a shared machine).
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadPipelineText } from '../src/config/load.js';
import { runPipeline, type RunOptions } from '../src/engine/runner.js';
import { MemoryProcessedFiles } from '../src/plugins/connector-runtime/processed-files.js';
import { silentLogger } from '../src/observability/log.js';
import type { RunRecord } from '../src/engine/run-record.js';
import { DATA_DIR } from './data.js';
import { decodeWatchOptions } from '../src/engine/decode-watch.js';
import { loadSettings } from '../src/settings.js';

/** The poison-input watch as `svc serve` and `svc run` have it (its defaults), so its cost is measured too. */
const DECODE_WATCH = decodeWatchOptions(join(DATA_DIR, 'state'), loadSettings({}));

export interface BenchPipeline {
  name: string;
  threads: number;
  /** Directory and file pattern of the input. */
  dir: string;
  pattern: string;
  serializerIn: string;
  serializerOut?: string;
  /** YAML list items (`    - { type: ... }`). */
  transforms?: string;
  filename?: string;
  /** Records the run must read (default: any number above 0). */
  expected?: number;
  /** Output directory (default: .bench-data/out/<name>-<threads>). */
  out?: string;
}

export interface BenchResult {
  record: RunRecord;
  out: string;
  seconds: number;
  cpuSeconds: number;
}

/** Loads the pipeline `yaml` (fails with its diagnostics), runs it once, and times the run: wall-clock and CPU seconds. */
export async function timedRun(yaml: string, opts?: RunOptions): Promise<{ record: RunRecord; seconds: number; cpuSeconds: number }> {
  const { config, diagnostics } = loadPipelineText(yaml, opts?.registry ? { registry: opts.registry } : {});
  if (!config) throw new Error(diagnostics.map((d) => d.message).join('\n'));
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const record = await runPipeline(config, { decodeWatch: DECODE_WATCH, ...opts });
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { record, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
}

/** One manual pipeline from its parts (YAML flow mappings), timed; fails unless it read and wrote exactly `records`. BENCH_THREADS sets its thread_workers (default 1). */
export async function manualLeg(
  name: string,
  source: string,
  sink: string,
  serializerIn: string,
  serializerOut: string,
  records: number,
): Promise<{ seconds: number; cpuSeconds: number }> {
  const { record, seconds, cpuSeconds } = await timedRun(`
version: "1"
pipeline:
  name: ${name}
  schedule: { type: manual }
  thread_workers: ${process.env.BENCH_THREADS ?? 1}
  source: ${source}
  serializer_in: ${serializerIn}
  serializer_out: ${serializerOut}
  sinks: [${sink}]
`);
  if (record.status !== 'success' || record.records_in !== records || record.records_out !== records)
    throw new Error(`bench run ${name} failed: ${JSON.stringify(record)}`);
  return { seconds, cpuSeconds };
}

export async function runBench(p: BenchPipeline): Promise<BenchResult> {
  const out = p.out ?? join(DATA_DIR, 'out', `${p.name}-${p.threads}`);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const { record, seconds, cpuSeconds } = await timedRun(`
version: "1"
pipeline:
  name: bench-${p.name}
  schedule: { type: manual }
  thread_workers: ${p.threads}
  source: { type: local, path: ${JSON.stringify(p.dir)}, file_pattern: ${JSON.stringify(p.pattern)} }
  serializer_in: ${p.serializerIn}
${p.transforms ? `  transforms:\n${p.transforms}\n` : ''}  serializer_out: ${p.serializerOut ?? '{ type: ndjson }'}
  sinks:
    - { type: local, path: ${JSON.stringify(out)}, filename_template: ${JSON.stringify(p.filename ?? '{pipeline}.ndjson')} }
`);
  const ok = record.status === 'success' && !record.records_skipped && (p.expected === undefined ? record.records_in > 0 : record.records_in === p.expected);
  if (!ok) throw new Error(`bench run ${p.name} failed: ${JSON.stringify(record)}`);
  return { record, out, seconds, cpuSeconds };
}

/** records, seconds and records_per_sec of a result, as every scenario prints them. */
export const rate = (r: BenchResult) => ({
  records: r.record.records_in,
  seconds: Number(r.seconds.toFixed(3)),
  records_per_sec: Math.round(r.record.records_in / r.seconds),
});

/**
 * Starts a stream pipeline (a connector source into local files): `ready` once the source is
 * connected (rejects if the run ends first), `stop()` ends it and resolves with its run record.
 */
export function startStreamIngest(yaml: string, opts: Pick<RunOptions, 'registry' | 'tap' | 'onProgress'> = {}) {
  const { config, diagnostics } = loadPipelineText(yaml, opts.registry ? { registry: opts.registry } : {});
  if (!config) throw new Error(diagnostics.map((d) => d.message).join('\n'));
  const stop = new AbortController();
  let connected!: () => void;
  const up = new Promise<void>((r) => (connected = r));
  const done = runPipeline(config, {
    signal: stop.signal,
    log: silentLogger,
    processed: new MemoryProcessedFiles(),
    registry: opts.registry,
    decodeWatch: DECODE_WATCH,
    tap: opts.tap,
    onProgress: opts.onProgress,
    telemetry: { connection: (c, _t, s) => void (c === 'source' && s === 'connected' && connected()) },
  });
  const ready = Promise.race([up, done.then((r) => Promise.reject(new Error(`${config.name} ended before its source connected: ${JSON.stringify(r)}`)))]);
  ready.catch(() => {}); // awaited by the callers that need it; not an unhandled rejection otherwise
  return { ready, done, stop: () => (stop.abort(), done) };
}

/** Size of a file, 0 while it does not exist. */
export function fileSize(f: string): number {
  try {
    return statSync(f).size;
  } catch {
    return 0;
  }
}

/** A growing figure (a file's size, a receiver's count) once it stops moving for `pollMs`: the receiver drained its buffers. */
export async function settled(read: () => number | Promise<number>, pollMs = 500): Promise<number> {
  let last = -1;
  for (;;) {
    await new Promise((r) => setTimeout(r, pollMs));
    const now = await read();
    if (now === last) return now;
    last = now;
  }
}

/** Size of `file` once it stops growing for `pollMs`. */
export const settledSize = (file: string, pollMs = 500) => settled(() => fileSize(file), pollMs);
