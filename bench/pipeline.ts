// One way for every scenario to run a local -> local pipeline and time it: a fresh output
// directory, the YAML built from the parts that differ, a check that the run read what it should
// without loss, and wall-clock plus CPU time (all threads; steadier on a shared machine).
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadPipelineText } from '../src/config/load.js';
import { runPipeline } from '../src/engine/runner.js';
import type { RunRecord } from '../src/engine/run-record.js';
import { DATA_DIR } from './data.js';

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

export async function runBench(p: BenchPipeline): Promise<BenchResult> {
  const out = p.out ?? join(DATA_DIR, 'out', `${p.name}-${p.threads}`);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const { config, diagnostics } = loadPipelineText(`
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
  if (!config) throw new Error(diagnostics.map((d) => d.message).join('\n'));
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const record = await runPipeline(config);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const ok = record.status === 'success' && !record.records_skipped && (p.expected === undefined ? record.records_in > 0 : record.records_in === p.expected);
  if (!ok) throw new Error(`bench run ${p.name} failed: ${JSON.stringify(record)}`);
  return { record, out, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
}

/** records, seconds and records_per_sec of a result, as every scenario prints them. */
export const rate = (r: BenchResult) => ({
  records: r.record.records_in,
  seconds: Number(r.seconds.toFixed(3)),
  records_per_sec: Math.round(r.record.records_in / r.seconds),
});
