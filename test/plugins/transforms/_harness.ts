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
import type { Rec, RecordContext, TransformPlugin } from '../../../src/plugins/types.js';
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
