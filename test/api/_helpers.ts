// Shared pieces of the REST API contract tests: pipeline YAML builders, input files, and checks
// that every error body is exactly `{detail: string}` (spec doc 2 section 7).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { TestDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/fs.js';
import { until } from '../helpers/wait.js';

export type Res = Awaited<ReturnType<TestDaemon['call']>>;

/** Asserts the status and that the body is exactly `{detail: <non-empty string>}`; returns the detail. */
export function expectError(res: Res, status: number): string {
  expect(res.status, `status of ${res.text}`).toBe(status);
  expect(res.headers.get('content-type') ?? '').toMatch(/application\/json/);
  expect(Object.keys(res.body as object)).toEqual(['detail']);
  expect(typeof res.body.detail).toBe('string');
  expect(res.body.detail.length).toBeGreaterThan(0);
  return res.body.detail as string;
}

export const q = (s: string) => JSON.stringify(s);

/** A work area with an input directory (NDJSON files) and an output directory. */
export function workArea(lines = 3, prefix = 'svc-api-') {
  const root = tempDir(prefix);
  const inDir = join(root, 'in');
  const outDir = join(root, 'out');
  mkdirSync(inDir, { recursive: true });
  writeInput(inDir, 'a.ndjson', lines);
  return { root, inDir, outDir, outFile: join(outDir, 'out.ndjson') };
}

export function writeInput(dir: string, name: string, lines: number) {
  let text = '';
  for (let i = 0; i < lines; i++) text += JSON.stringify({ i, host: `ne-${i}` }) + '\n';
  writeFileSync(join(dir, name), text);
}

export interface LocalOpts {
  schedule?: string;
  inDir: string;
  outDir: string;
  description?: string;
  enabled?: boolean;
  /** Extra pipeline-level YAML lines (2-space indented under `pipeline:`). */
  extra?: string[];
  filename?: string;
}

/** local (NDJSON files) -> local (out.ndjson, append). */
export function localYaml(name: string, o: LocalOpts): string {
  return [
    'version: "1"',
    'pipeline:',
    `  name: ${name}`,
    ...(o.description !== undefined ? [`  description: ${q(o.description)}`] : []),
    ...(o.enabled !== undefined ? [`  enabled: ${o.enabled}`] : []),
    `  schedule: ${o.schedule ?? '{ type: manual }'}`,
    `  source: { type: local, path: ${q(o.inDir)}, file_pattern: "*.ndjson" }`,
    '  serializer_in: { type: ndjson }',
    '  serializer_out: { type: ndjson }',
    ...(o.extra ?? []).map((l) => `  ${l}`),
    '  sinks:',
    `    - { type: local, path: ${q(o.outDir)}, filename_template: ${q(o.filename ?? 'out.ndjson')} }`,
    '',
  ].join('\n');
}

/** A run that lasts about (lines - 2) / 2 seconds: two writes per second, one record per write. */
export const SLOW = ['rate_limit_rps: 2', 'record_chunk_size: 1'];

export interface WebhookOpts {
  path: string;
  outDir: string;
  secret?: string;
  maxQueue?: number;
  extra?: string[];
}

/** webhook (JSON bodies) -> local (out.ndjson). */
export function webhookYaml(name: string, o: WebhookOpts): string {
  const src = [
    `type: webhook`,
    `path: ${q(o.path)}`,
    ...(o.secret ? [`secret: ${q(o.secret)}`] : []),
    ...(o.maxQueue ? [`max_queue_size: ${o.maxQueue}`] : []),
  ];
  return [
    'version: "1"',
    'pipeline:',
    `  name: ${name}`,
    '  schedule: { type: stream }',
    `  source: { ${src.join(', ')} }`,
    '  serializer_in: { type: json }',
    '  serializer_out: { type: ndjson }',
    ...(o.extra ?? []).map((l) => `  ${l}`),
    '  sinks:',
    `    - { type: local, path: ${q(o.outDir)}, filename_template: out.ndjson }`,
    '',
  ].join('\n');
}

/**
 * The extra lines of a stream with a stage of each kind (webhookYaml's `extra`): two transforms
 * (filter n != 3, add_field seen) and a dead-letter queue under `outDir`. The stage figures' and
 * the tap's tests, through the API and the CLI.
 */
export const stagedExtra = (outDir: string) => [
  'on_error: dlq',
  `dlq: { type: local, path: ${JSON.stringify(join(outDir, 'dlq'))}, filename_template: dlq.ndjson }`,
  'transforms:',
  "  - { type: filter, expression: 'n != 3' }",
  '  - { type: add_field, fields: { seen: "\'yes\'" } }',
];

/** Records of an NDJSON output file ([] while it does not exist). */
export function readNdjson(file: string): Record<string, unknown>[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Registers a pipeline and asserts 201. */
export async function register(d: TestDaemon, yaml: string): Promise<Record<string, any>> {
  const r = await d.call('POST', '/api/pipelines', { yaml });
  expect(r.status, r.text).toBe(201);
  return r.body;
}

/** Waits for a run to leave `running` and returns its record. */
export async function finishedRun(d: TestDaemon, runId: string, ms = 15_000): Promise<Record<string, any>> {
  return until(async () => {
    const r = await d.call('GET', `/api/runs/${runId}`);
    return r.status === 200 && r.body.status !== 'running' ? r.body : undefined;
  }, ms);
}

/** The run fields of spec doc 2 with records_filtered (issue 29), then `pipeline_version` (which version the run ran; issue 16). */
export const RUN_FIELDS = [
  'run_id',
  'pipeline',
  'node_id',
  'status',
  'started_at',
  'finished_at',
  'records_in',
  'records_out',
  'records_filtered',
  'records_skipped',
  'bytes_in',
  'bytes_out',
  'dlq_count',
  'error',
  'errors',
  'pipeline_version',
];

export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
