// What the connector tests share: pipelines from plain objects, NDJSON output read back, waiting
// for a condition, numbered message bodies, manual read and write runs, a sink driven directly.
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { loadPipelineText } from '../../src/config/load.js';
import type { PipelineConfig } from '../../src/config/pipeline-schema.js';
import { encoderFor } from '../../src/engine/plan.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { registry } from '../../src/plugins/registry.js';
import type { ProcessedFiles, SinkPlugin } from '../../src/plugins/types.js';
import { tempDir } from '../helpers/fs.js';

export type Cfg = Record<string, unknown>;
export type Rec = Record<string, unknown>;

/** A validated pipeline from the `pipeline` object of a definition; throws with every diagnostic. */
export function loadPipeline(pipeline: Cfg): PipelineConfig {
  const r = loadPipelineText(stringify({ version: '1', pipeline }), { env: {} });
  if (!r.config) throw new Error(r.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
  return r.config;
}

/**
 * Records of every NDJSON file in `dir` (none while it does not exist). A running sink may be in the
 * middle of a line: only lines that end in a newline count, so a poll never parses half a record.
 */
export function outputRecords(dir: string): Rec[] {
  const out: Rec[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const n of names.sort()) {
    const lines = readFileSync(join(dir, n), 'utf8').split('\n');
    lines.pop(); // what follows the last newline: '' or a line still being written
    for (const line of lines) if (line.trim()) out.push(JSON.parse(line) as Rec);
  }
  return out;
}

/** The tests' one polling helper (test/helpers/wait.ts), here for the connector tests that import it with the rest. */
export { until } from '../helpers/wait.js';

/** JSON bodies `{seq, ...extra}` numbered from `from`. */
export const seqBodies = (from: number, n: number, extra: Rec = {}) =>
  Array.from({ length: n }, (_, i) => Buffer.from(JSON.stringify({ seq: from + i, ...extra })));

/** Records `{seq, site, pad}` numbered from `from` (the object-store tests' input). */
export const siteRecs = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ seq: from + i, site: `s${(from + i) % 3}`, pad: 'x'.repeat(32) }));
/** `records` as NDJSON text. */
export const ndjsonText = (records: Rec[]) => records.map((r) => JSON.stringify(r) + '\n').join('');

/** One manual run of `source` into a local file `filename` (default out.ndjson) in a fresh directory. */
export async function manualReadRun(
  name: string,
  source: Cfg,
  opts: { processed?: ProcessedFiles; serializer_in?: Cfg; serializer_out?: Cfg; filename?: string; outPrefix?: string } = {},
) {
  const out = tempDir(opts.outPrefix ?? 'svc-out-');
  const rec = await runPipeline(
    loadPipeline({
      name,
      schedule: { type: 'manual' },
      source,
      serializer_in: opts.serializer_in ?? { type: 'json' },
      serializer_out: opts.serializer_out ?? { type: 'ndjson' },
      sinks: [{ type: 'local', path: out, filename_template: opts.filename ?? 'out.ndjson' }],
    }),
    { log: silentLogger, processed: opts.processed ?? new MemoryProcessedFiles() },
  );
  return { rec, out, records: () => outputRecords(out) };
}

/**
 * One manual run of NDJSON files under `dir`/in (one per entry; 'again': the files of an earlier run,
 * untouched: skip_processed knows them by path, size and mtime) into the given sinks (JSON out).
 */
export async function manualWriteRun(name: string, files: Rec[][] | 'again', sinks: Cfg[], extra: Cfg, processed: ProcessedFiles, dir: string) {
  mkdirSync(join(dir, 'in'), { recursive: true });
  if (files !== 'again') files.forEach((records, i) => writeFileSync(join(dir, 'in', `f${i}.ndjson`), ndjsonText(records)));
  const rec = await runPipeline(
    loadPipeline({
      name,
      schedule: { type: 'manual' },
      source: { type: 'local', path: join(dir, 'in'), skip_processed: true },
      serializer_in: { type: 'ndjson' },
      serializer_out: { type: 'json' },
      sinks,
      ...extra,
    }),
    { log: silentLogger, processed },
  );
  return { rec, dir };
}

/** A sink of connector `type` driven directly, as the runtime drives it: open, records in, flush, close. */
export function directSink(type: string, pipeline: string, cfg: Cfg, serializer: string) {
  const plugin = registry.sink.get(type) as SinkPlugin;
  const checked = loadPipeline({ name: 'x', schedule: { type: 'manual' }, source: { type: 'local', path: '/tmp' }, sinks: [cfg] }).sinks[0]!;
  const encoder = encoderFor(registry, { type: serializer });
  const sink = plugin.create(checked as never, {
    pipeline,
    log: silentLogger,
    signal: new AbortController().signal,
    processed: new MemoryProcessedFiles(),
    skipProcessed: false,
    encoder,
  });
  return {
    open: () => sink.open!({ runId: 'r1', pipeline, startedAt: new Date() }),
    write: (records: Rec[]) => sink.write({ payload: encoder.body(records), head: encoder.head(records), count: records.length, meta: {}, first: records[0] }),
    writeBytes: (payload: Buffer) => sink.write({ payload, head: '', count: 1, meta: {} }),
    flush: () => sink.flush!(),
    close: () => sink.close!(),
  };
}
