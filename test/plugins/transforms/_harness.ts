// Shared harness for the transform tests: the plugin alone (config defaults, create, apply with a
// RecordContext that collects notes) and the plugin inside the real engine (NDJSON file -> local
// source -> transforms -> local sink, with an optional local DLQ), using the real registry.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TObject } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { beforeEach } from 'vitest';
import { loadPipelineText, type Registry } from '../../../src/config/load.js';
import { formatDiagnostic } from '../../../src/config/diagnostics.js';
import { runPipeline } from '../../../src/engine/runner.js';
import { silentLogger } from '../../../src/observability/log.js';
import { registry as realRegistry } from '../../../src/plugins/registry.js';
import type { DrainPoint, Rec, RecordContext, Transform, TransformPlugin } from '../../../src/plugins/types.js';
import { tempDir } from '../../helpers/fs.js';

type Meta = RecordContext['meta'];

/**
 * The plugin alone. `notes` collects every note of `apply`/`one`/`ctx()` and is emptied before each
 * test; `run` returns the notes of that one call instead.
 */
export function transformOf<S extends TObject>(plugin: TransformPlugin<S>) {
  const notes: string[] = [];
  beforeEach(() => {
    notes.length = 0;
  });
  /** The config with its defaults filled in (the input is not changed). */
  const cfg = (c: object) => Value.Default(plugin.config, structuredClone(c)) as never;
  const make = (c: object) => plugin.create(cfg(c), { pipeline: 't', log: silentLogger });
  /** A record context whose notes go to `notes`. */
  const ctx = (meta: Meta = {}): RecordContext => ({ meta, note: (m) => notes.push(m) });
  const apply = (c: object, r: Rec, meta: Meta = {}) => make(c).apply(r, ctx(meta));
  /** `apply` for transforms that return one record. */
  const one = (c: object, r: Rec, meta: Meta = {}) => apply(c, r, meta) as Rec;
  function run(c: object, r: Rec, meta: Meta = {}) {
    const own: string[] = [];
    return { out: make(c).apply(r, { meta, note: (m) => own.push(m) }), notes: own };
  }
  return { cfg, make, ctx, apply, one, run, notes, rc: ctx() };
}

export const readNdjson = (file: string): Rec[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Rec)
    : [];

/** Transform list items: a YAML flow mapping, an object, or ready-made `    - ...` lines. */
export type Transforms = string | object | (string | object)[];

function transformLines(t: Transforms): string {
  const items = Array.isArray(t) ? t : [t];
  return items.map((i) => (typeof i === 'string' ? (i.trimStart().startsWith('-') ? i : `    - ${i}`) : `    - ${JSON.stringify(i)}`)).join('\n');
}

/** A manual local -> transforms -> local pipeline; `extra` is YAML added at pipeline level. */
export function pipelineYaml(transforms: Transforms, dirs = { input: '/in', out: '/out' }, extra = ''): string {
  return `
version: "1"
pipeline:
  name: e2e
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(dirs.input)}, file_pattern: "*.ndjson" }
  serializer_in: { type: ndjson }
  transforms:
${transformLines(transforms)}
  serializer_out: { type: ndjson }
${extra}
  sinks:
    - { type: local, path: ${JSON.stringify(dirs.out)}, filename_template: out.ndjson }
`;
}

/** Loads (does not run) a pipeline with these transforms: its config, if valid, and its diagnostics as text. */
export function loadTransforms(transforms: Transforms, registry: Registry = realRegistry) {
  const r = loadPipelineText(pipelineYaml(transforms), { env: {}, registry });
  return { config: r.config, diagnostics: r.diagnostics.map((d) => formatDiagnostic(d)) };
}

/** The diagnostics (as text) of loading a pipeline with these transforms. */
export const diagnostics = (transforms: Transforms, registry: Registry = realRegistry): string[] => loadTransforms(transforms, registry).diagnostics;

export interface RunOptions {
  /** YAML added at pipeline level. */
  extra?: string;
  /** pipeline.on_error. */
  onError?: string;
  /** Adds a local DLQ (dlq.ndjson in a temp dir), read back as `dlq`. */
  dlq?: boolean;
  env?: Record<string, string>;
  registry?: Registry;
}

/**
 * Writes `records` as in.ndjson (objects as JSON, strings as raw lines), runs them through the transforms
 * in the real engine, reads the output and the DLQ. `__DLQ__` in `extra` stands for the DLQ directory.
 */
export async function runTransform(records: (object | string)[], transforms: Transforms, opts: RunOptions = {}) {
  const registry = opts.registry ?? realRegistry;
  const root = tempDir();
  const dirs = { input: join(root, 'in'), out: join(root, 'out'), dlq: join(root, 'dlq') };
  mkdirSync(dirs.input);
  writeFileSync(join(dirs.input, 'in.ndjson'), records.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n') + '\n');
  const extra = [
    opts.onError === undefined ? '' : `  on_error: ${opts.onError}`,
    opts.dlq ? `  dlq: { type: local, path: ${JSON.stringify(dirs.dlq)}, filename_template: dlq.ndjson }` : '',
    (opts.extra ?? '').replaceAll('__DLQ__', JSON.stringify(dirs.dlq)),
  ]
    .filter(Boolean)
    .join('\n');
  const loaded = loadPipelineText(pipelineYaml(transforms, dirs, extra), { env: opts.env ?? {}, registry });
  if (!loaded.config) throw new Error(loaded.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
  const record = await runPipeline(loaded.config, { log: silentLogger, registry });
  const dlqFiles = existsSync(dirs.dlq) ? readdirSync(dirs.dlq).filter((f) => !f.startsWith('.')) : [];
  return { record, dirs, out: readNdjson(join(dirs.out, 'out.ndjson')), dlq: dlqFiles.flatMap((f) => readNdjson(join(dirs.dlq, f))) };
}

// ---- holding transforms (aggregate, sort, limit, deduplicate) ------------------------------------

/**
 * Applies `records` to one transform instance (as the engine does, records returned by apply are
 * kept), then drains it at `at` (none when `at` is null). Returns what came out, in order, and the notes.
 */
export function applyThenDrain(t: Transform, records: Rec[], at: DrainPoint | null = 'unit', meta: Meta = {}) {
  const notes: string[] = [];
  const ctx: RecordContext = { meta, note: (m) => notes.push(m) };
  const out: Rec[] = [];
  for (const r of records) {
    const o = t.apply(r, ctx);
    if (Array.isArray(o)) out.push(...o);
    else if (o) out.push(o);
  }
  if (at) out.push(...(t.drain?.(at) ?? []));
  return { out, notes };
}

export interface FilesRunOptions extends RunOptions {
  /** runPipeline's chunkBytes (small values: many chunks per file). */
  chunkBytes?: number;
  /** Flow-mapping entries added to the local source, e.g. `move_after_read: __DONE__`. */
  source?: string;
  /** The whole `sinks:` list (lines starting with `    - `); default: one local sink writing out.ndjson. */
  sinks?: string;
  /** A flush run (drain at 'flush'). */
  flush?: boolean;
  /** The directory to work in (default: a new temporary one), for tests that look at it during the run. */
  root?: string;
}

/**
 * Like runTransform, with several input files (name -> records; written in name order, which is
 * the order the local source reads them). Placeholders in `extra`, `source` and `sinks`:
 * __IN__, __OUT__, __DLQ__, __DONE__ (a `done` directory beside them).
 */
export async function runFiles(files: Record<string, (object | string)[]>, transforms: Transforms, opts: FilesRunOptions = {}) {
  const registry = opts.registry ?? realRegistry;
  const root = opts.root ?? tempDir();
  const dirs = { input: join(root, 'in'), out: join(root, 'out'), dlq: join(root, 'dlq'), done: join(root, 'done') };
  mkdirSync(dirs.input);
  for (const [name, records] of Object.entries(files)) {
    writeFileSync(join(dirs.input, name), records.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n') + '\n');
  }
  const fill = (s: string) =>
    s
      .replaceAll('__IN__', JSON.stringify(dirs.input))
      .replaceAll('__OUT__', JSON.stringify(dirs.out))
      .replaceAll('__DLQ__', JSON.stringify(dirs.dlq))
      .replaceAll('__DONE__', JSON.stringify(dirs.done));
  const extra = [
    opts.onError === undefined ? '' : `  on_error: ${opts.onError}`,
    opts.dlq ? `  dlq: { type: local, path: ${JSON.stringify(dirs.dlq)}, filename_template: dlq.ndjson }` : '',
    fill(opts.extra ?? ''),
  ]
    .filter(Boolean)
    .join('\n');
  const yaml = `
version: "1"
pipeline:
  name: e2e
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(dirs.input)}, file_pattern: "*.ndjson"${opts.source ? ', ' + fill(opts.source) : ''} }
  serializer_in: { type: ndjson }
  transforms:
${transformLines(transforms)}
  serializer_out: { type: ndjson }
${extra}
  sinks:
${opts.sinks ? fill(opts.sinks) : `    - { type: local, path: ${JSON.stringify(dirs.out)}, filename_template: out.ndjson }`}
`;
  const loaded = loadPipelineText(yaml, { env: opts.env ?? {}, registry });
  if (!loaded.config) throw new Error(loaded.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
  const record = await runPipeline(loaded.config, { log: silentLogger, registry, chunkBytes: opts.chunkBytes, flush: opts.flush });
  const dlqFiles = existsSync(dirs.dlq) ? readdirSync(dirs.dlq).filter((f) => !f.startsWith('.')) : [];
  const left = () => (existsSync(dirs.input) ? readdirSync(dirs.input).sort() : []);
  const done = () => (existsSync(dirs.done) ? readdirSync(dirs.done).sort() : []);
  return { record, dirs, out: readNdjson(join(dirs.out, 'out.ndjson')), dlq: dlqFiles.flatMap((f) => readNdjson(join(dirs.dlq, f))), left, done };
}
