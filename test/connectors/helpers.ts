// What the connector tests share: pipelines from plain objects, NDJSON output read back, waiting
// for a condition, numbered message bodies.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { loadPipelineText } from '../../src/config/load.js';
import type { PipelineConfig } from '../../src/config/pipeline-schema.js';

export type Cfg = Record<string, unknown>;
export type Rec = Record<string, unknown>;

/** A validated pipeline from the `pipeline` object of a definition; throws with every diagnostic. */
export function loadPipeline(pipeline: Cfg): PipelineConfig {
  const r = loadPipelineText(stringify({ version: '1', pipeline }), { env: {} });
  if (!r.config) throw new Error(r.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
  return r.config;
}

/** Records of every NDJSON file in `dir` (none while it does not exist). */
export function outputRecords(dir: string): Rec[] {
  const out: Rec[] = [];
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const n of names.sort()) for (const line of readFileSync(join(dir, n), 'utf8').split('\n')) if (line.trim()) out.push(JSON.parse(line) as Rec);
  return out;
}

/** Polls `f` until it gives a truthy value; fails after `ms` naming `what`. */
export async function until<T>(f: () => T | undefined | false | Promise<T | undefined | false>, ms: number, what: string): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** JSON bodies `{seq, ...extra}` numbered from `from`. */
export const seqBodies = (from: number, n: number, extra: Rec = {}) => Array.from({ length: n }, (_, i) => Buffer.from(JSON.stringify({ seq: from + i, ...extra })));
