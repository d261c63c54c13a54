// Dead letters written the real way for the reader tests: a pipeline run through the engine whose
// add_field fails on some records, with the DLQ sink under test; then the read back.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { PipelineConfig } from '../../src/config/pipeline-schema.js';
import { loadPipelineText } from '../../src/config/load.js';
import { readDlq } from '../../src/dlq/reader.js';
import { runPipeline } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { tempDir } from '../helpers/fs.js';

/** `bad` records of `total` have a string `octets`, which `octets + 1` refuses (stage transform). */
export function failingInput(total: number, bad: number): string {
  const dir = tempDir('svc-dlq-in-');
  mkdirSync(join(dir, 'in'));
  let text = '';
  for (let i = 0; i < total; i++) text += JSON.stringify({ i, octets: i < bad ? `x${i}` : i }) + '\n';
  writeFileSync(join(dir, 'in', 'a.ndjson'), text);
  return dir;
}

/** A pipeline (YAML with its defaults applied) dead-lettering into `dlqYaml` (a flow mapping). */
export function pipelineWithDlq(dir: string, dlqYaml: string, name = 'dlqr'): PipelineConfig {
  const yaml = [
    'version: "1"',
    'pipeline:',
    `  name: ${name}`,
    '  schedule: { type: manual }',
    `  source: { type: local, path: ${JSON.stringify(join(dir, 'in'))} }`,
    '  serializer_in: { type: ndjson }',
    '  on_error: dlq',
    '  transforms: [{ type: add_field, fields: { next: "octets + 1" } }]',
    `  sinks: [{ type: local, path: ${JSON.stringify(join(dir, 'out'))} }]`,
    `  dlq: ${dlqYaml}`,
  ].join('\n');
  const r = loadPipelineText(yaml, { env: {} });
  expect(r.diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.path}: ${d.message}`)).toEqual([]);
  return r.config!;
}

/** Runs the pipeline once (its bad records go to the DLQ) and reads the DLQ back. */
export async function deadLetterAndRead(config: PipelineConfig, bad: number) {
  const run = await runPipeline(config);
  expect(run, JSON.stringify(run.errors)).toMatchObject({ status: 'success', dlq_count: bad });
  const read = await readDlq(config, { log: silentLogger, signal: AbortSignal.timeout(30_000) });
  return { run, read };
}

/** What every reader must give back: each bad record once, as the envelope the engine wrote. */
export function expectEnvelopes(read: Awaited<ReturnType<typeof readDlq>>, runId: string, bad: number, pipeline = 'dlqr') {
  expect(read.unreadable).toEqual([]);
  expect(read.truncated).toBe(false);
  expect(read.entries.map((e) => e.envelope.record?.i).sort((a, b) => Number(a) - Number(b))).toEqual([...Array(bad).keys()]);
  for (const e of read.entries) {
    expect(e.envelope).toMatchObject({ _stage: 'transform', _pipeline: pipeline, _run_id: runId, raw: null });
    expect(e.envelope._error).toMatch(/^transforms\[0\] \(add_field\): unsupported operand/);
    expect(Date.parse(e.envelope._timestamp)).not.toBeNaN();
    expect(e.location.length).toBeGreaterThan(0);
  }
  expect(new Set(read.entries.map((e) => e.id)).size).toBe(bad);
}
