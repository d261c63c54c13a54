// A pipeline whose records fail at each stage, with a `local` DLQ, on a real daemon (the replay
// and CLI tests share it).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/fs.js';
import { finishedRun, q, register } from '../api/_helpers.js';

const INPUT = [
  JSON.stringify({ host: 'a', octets: '10' }), // transform: a string + 1
  JSON.stringify({ host: 'b', octets: 5 }),
  '[1, 2]', // parse: not an object under strict: true
  JSON.stringify({ host: 'c', octets: 7, route: 'blocked' }), // sink: sinks[1]'s directory is a file
].join('\n');

export function pipelineYaml(root: string, strict = true) {
  return [
    'version: "1"',
    'pipeline:',
    '  name: dl',
    '  schedule: { type: manual }',
    `  source: { type: local, path: ${q(join(root, 'in'))}, file_pattern: "*.ndjson" }`,
    `  serializer_in: { type: ndjson, strict: ${strict} }`,
    '  serializer_out: { type: ndjson }',
    '  on_error: dlq',
    '  transforms:',
    '    - { type: add_field, fields: { next: "coalesce(octets, 0) + 1" } }',
    '  sinks:',
    `    - { type: local, path: ${q(join(root, 'out'))}, filename_template: out.ndjson }`,
    `    - { type: local, path: ${q(join(root, 'blocked', 'dir'))}, filename_template: c.ndjson, condition: "route == 'blocked'" }`,
    `  dlq: { type: local, path: ${q(join(root, 'dlq'))}, filename_template: "dlq_{timestamp}.ndjson" }`,
  ].join('\n');
}

export const lines = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

export async function setUp(): Promise<{ d: TestDaemon; root: string; first: Record<string, any> }> {
  const d = await testDaemon();
  const root = tempDir('svc-dlq-');
  mkdirSync(join(root, 'in'));
  mkdirSync(join(root, 'blocked'));
  writeFileSync(join(root, 'blocked', 'dir'), 'a file where the sink wants a directory');
  writeFileSync(join(root, 'in', 'a.ndjson'), INPUT + '\n');
  await register(d, pipelineYaml(root));
  const t = await d.call('POST', '/api/pipelines/dl/run');
  expect(t.status, t.text).toBe(202);
  const first = await finishedRun(d, t.body.run_id);
  return { d, root, first };
}
