// Issue 28, findings 3 and 7, from their reproductions: one expression froze the process
// (len(str([[[n] * 60000] * 60000] * 60000))) or held `svc run` at 4 GB ([s] * 60000 with a 60 KB
// field); a 900 KB pipeline whose `&big` anchor is used 90 times was accepted and its GET answered
// 84 MB. Each must now fail fast, with a message that names the limit, inside a time and memory bound.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPipelineText } from '../../src/config/load.js';
import { runPipeline } from '../../src/engine/runner.js';
import { compile, ExprBudgetError } from '../../src/expr/index.js';
import { silentLogger } from '../../src/observability/log.js';
import { expectError } from '../api/_helpers.js';
import { svc } from '../helpers/cli.js';
import { testDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/fs.js';

const SECONDS = 5_000;
const RSS_GROWTH = 300 << 20;

/** Runs `f`, asserting the bounds on its time and on this process's RSS growth. */
async function bounded<T>(f: () => T | Promise<T>): Promise<T> {
  global.gc?.();
  const rss0 = process.memoryUsage.rss();
  const t0 = performance.now();
  const out = await f();
  expect(performance.now() - t0, 'milliseconds').toBeLessThan(SECONDS);
  expect(process.memoryUsage.rss() - rss0, 'RSS growth in bytes').toBeLessThan(RSS_GROWTH);
  return out;
}

const thrown = (f: () => unknown): Error => {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
};

const SIXTY_KB = 'x'.repeat(60_000);

describe('the expression budget', () => {
  it('refuses the nested repetition of the report instead of freezing', async () => {
    const e = await bounded(() => thrown(() => compile('len(str([[[n] * 60000] * 60000] * 60000))')({ n: 1 })));
    expect(e).toBeInstanceOf(ExprBudgetError);
    expect(e.message).toMatch(
      /^expression budget exceeded: '\*' would build a list of (at least )?\d{10,} elements \(limit 100000; SVC_EXPR_MAX_LIST_LENGTH\) at column \d+$/,
    );
  });

  it('refuses a list that repeats a 60 KB field 60,000 times (3.6 GB once written out)', async () => {
    const e = await bounded(() => thrown(() => compile('[s] * 60000')({ s: SIXTY_KB })));
    expect(e).toBeInstanceOf(ExprBudgetError);
    expect(e.message).toBe(
      "expression budget exceeded: '*' would build a list holding 3600000000 characters of text (limit 1048576; SVC_EXPR_MAX_STRING_LENGTH) at column 5",
    );
  });

  it('refuses string bombs: join of a repeated field, and $` in replace()', async () => {
    const join = await bounded(() => thrown(() => compile("join([s] * 50, '')")({ s: SIXTY_KB })));
    expect(join).toBeInstanceOf(ExprBudgetError);
    expect(join.message).toContain('(limit 1048576; SVC_EXPR_MAX_STRING_LENGTH)');
    // '$`' is text in the new string (each 'a' becomes '$`'), not "everything before the match",
    // which made 60,000 characters into 1.8 billion.
    const replaced = await bounded(() => compile("replace(s, 'a', '$`')")({ s: 'a'.repeat(60_000) }));
    expect(replaced).toBe('$`'.repeat(60_000));
    const bomb = await bounded(() => thrown(() => compile("replace(s, 'a', s)")({ s: 'a'.repeat(60_000) })));
    expect(bomb.message).toBe(
      'expression budget exceeded: replace() would build a string of 3600000000 characters (limit 1048576; SVC_EXPR_MAX_STRING_LENGTH) at column 1',
    );
  });

  it('a pipeline run dead-letters the record with the budget reason and finishes', async () => {
    const dir = tempDir('svc-hostile-expr-');
    writeFileSync(join(dir, 'in.ndjson'), JSON.stringify({ n: 1, s: SIXTY_KB }) + '\n');
    for (const expr of ['len(str([[[n] * 60000] * 60000] * 60000))', '[s] * 60000']) {
      const out = tempDir('svc-hostile-out-');
      const yaml = `version: "1"
pipeline:
  name: expr-bomb
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(dir)} }
  serializer_in: { type: ndjson }
  serializer_out: { type: ndjson }
  transforms:
    - { type: add_field, fields: { x: ${JSON.stringify(expr)} } }
  on_error: dlq
  dlq: { type: local, path: ${JSON.stringify(out)}, filename_template: dead.ndjson }
  sinks:
    - { type: local, path: ${JSON.stringify(out)}, filename_template: out.ndjson }
`;
      const r = loadPipelineText(yaml, { env: {} });
      expect(r.diagnostics).toEqual([]);
      const rec = await bounded(() => runPipeline(r.config!, { log: silentLogger }));
      expect(rec).toMatchObject({ status: 'success', records_in: 1, records_out: 0, dlq_count: 1 });
      const [dead, ...more] = readFileSync(join(out, 'dead.ndjson'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(more).toEqual([]);
      expect(dead).toMatchObject({ _stage: 'transform', record: { n: 1, s: SIXTY_KB } });
      expect(dead!._error).toMatch(/expression budget exceeded: '\*' would build a list .*SVC_EXPR_MAX_(LIST|STRING)_LENGTH/);
    }
  });
});

/** The report's alias bomb: a valid pipeline of about 900 KB whose `&big` mapping is used 90 times. */
function aliasBomb(name: string): string {
  const big = Array.from({ length: 900 }, (_, i) => `        f${i}: ${'x'.repeat(990)}`).join('\n');
  return [
    'version: "1"',
    'pipeline:',
    `  name: ${name}`,
    '  schedule: { type: manual }',
    '  source: { type: local, path: /nonexistent }',
    '  serializer_in: { type: ndjson }',
    '  serializer_out: { type: ndjson }',
    '  transforms:',
    '    - type: add_field',
    '      fields: &big',
    big,
    ...Array.from({ length: 89 }, () => '    - { type: add_field, fields: *big }'),
    '  sinks:',
    '    - { type: local, path: /nonexistent }',
    '',
  ].join('\n');
}

/**
 * The first `*big` that takes the document past 10 x its size once expanded (the anchor's node and
 * ten uses are 11 x): transforms[10], on line 10 + 900 + 10.
 */
const OFFENDING_LINE = 920;

describe('YAML alias expansion', () => {
  const yaml = aliasBomb('alias-bomb');

  it('the bomb is the size of the report', () => {
    expect(yaml.length).toBeGreaterThan(890_000);
    expect(yaml.length).toBeLessThan(1_000_000);
    expect(yaml.split('\n')[OFFENDING_LINE - 1]).toBe('    - { type: add_field, fields: *big }');
  });

  it('the API refuses it with 400 naming the alias, its path and line; nothing is registered', async () => {
    const d = await testDaemon();
    const res = await bounded(() => d.call('POST', '/api/pipelines', { yaml }));
    // Cut short: on failure the whole (expanded) pipeline would be the message.
    expect(res.status, res.text.slice(0, 300)).toBe(400);
    const detail = expectError(res, 400);
    expect(detail).toContain(`pipeline.transforms[10].fields: alias *big makes the document about`);
    expect(detail).toContain(`(line ${OFFENDING_LINE}) [CFG_YAML_LIMIT]`);
    expect(detail.length).toBeLessThan(2000);
    expect((await d.call('GET', '/api/pipelines')).body).toEqual([]);
    expect((await d.call('GET', '/api/pipelines/alias-bomb')).status).toBe(404);
  });

  it('svc validate reports it as file:line:col path: message [CFG_YAML_LIMIT]', async () => {
    const file = join(tempDir('svc-hostile-yaml-'), 'bomb.yaml');
    writeFileSync(file, yaml);
    const r = await svc(['validate', file]);
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toContain(`${file}:${OFFENDING_LINE}:34 pipeline.transforms[10].fields: alias *big makes the document about`);
    expect(r.stdout + r.stderr).toContain('[CFG_YAML_LIMIT]');
  });

  it('a cyclic alias and 100,000 nested brackets are refused, not a stack overflow or an abort', async () => {
    const cyclic = aliasBomb('cyclic').replace('      fields: &big', '      fields: &big\n        loop: *big');
    const r = await bounded(() => loadPipelineText(cyclic, { env: {} }));
    expect(r.diagnostics).toEqual([
      expect.objectContaining({
        code: 'CFG_YAML_LIMIT',
        path: 'pipeline.transforms[0].fields.loop',
        line: 11,
        message: expect.stringMatching(/^alias \*big is inside the node it names/),
      }),
    ]);
    const deep = await bounded(() => loadPipelineText(`version: "1"\npipeline: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`, { env: {} }));
    expect(deep.diagnostics).toEqual([
      expect.objectContaining({ code: 'CFG_YAML_LIMIT', line: 2, message: expect.stringMatching(/^the YAML is nested more than 100 levels deep/) }),
    ]);
  });

  it('anchors and aliases of ordinary size still work', () => {
    const shared = `version: "1"
pipeline:
  name: shared
  schedule: { type: manual }
  source: { type: local, path: /nonexistent }
  serializer_in: { type: ndjson }
  serializer_out: { type: ndjson }
  sinks:
    - &sink { type: local, path: /nonexistent, retry_count: 5 }
    - *sink
    - *sink
`;
    const r = loadPipelineText(shared, { env: {} });
    expect(r.diagnostics).toEqual([]);
    expect(r.config!.sinks.map((s) => (s as { retry_count: number }).retry_count)).toEqual([5, 5, 5]);
  });
});
