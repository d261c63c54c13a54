// The evaluation budget (src/expr/budget.ts): how it is configured, that compile-time folding runs
// under it, and that chunk worker threads read the same SVC_EXPR_* settings as the main thread.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { compile, exprBudget, ExprBudgetError, ExprError, setExprBudget } from '../../src/expr/index.js';
import { ROOT } from '../helpers/cli.js';
import { tempDir } from '../helpers/fs.js';
import { errorOf } from './helpers.js';

const initial = exprBudget();
afterEach(() => {
  setExprBudget(initial);
});

describe('the evaluation budget', () => {
  it('defaults to 1,000,000 steps, 100,000 list elements and 1 MiB of text', () => {
    expect(initial).toEqual({ maxSteps: 1_000_000, maxListLength: 100_000, maxStringLength: 1 << 20 });
  });

  it('applies the limits set, to every evaluation after', () => {
    const f = compile('[0] * n');
    expect((f({ n: 500 }) as unknown[]).length).toBe(500);
    setExprBudget({ maxListLength: 400 });
    const e = errorOf(() => f({ n: 500 }));
    expect(e).toBeInstanceOf(ExprBudgetError);
    expect(e).toBeInstanceOf(ExprError);
    expect(e.message).toBe("expression budget exceeded: '*' would build a list of 500 elements (limit 400; SVC_EXPR_MAX_LIST_LENGTH) at column 5");
    setExprBudget({ maxSteps: 1000, maxListLength: 100_000 });
    expect(errorOf(() => f({ n: 5000 })).message).toBe(
      'expression budget exceeded: the evaluation takes too many steps (limit 1000; SVC_EXPR_MAX_STEPS) at column 5',
    );
  });

  it('gives each evaluation the whole budget again', () => {
    setExprBudget({ maxSteps: 1000 });
    const f = compile('len(x + x)');
    for (let i = 0; i < 100; i++) expect(f({ x: new Array(200).fill(i) })).toBe(400);
  });

  it('folds constants under the budget: a bomb of literals compiles at once and fails when evaluated', () => {
    const t0 = performance.now();
    const f = compile('len(str([[[1] * 60000] * 60000] * 60000))');
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(errorOf(() => f({})).message).toMatch(/^expression budget exceeded: '\*' would build a list of at least 3600060000 elements/);
  });

  it('walks shared lists once per use: [x, x, ...] of a big field counts every copy', () => {
    const x = new Array(30_000).fill(0);
    expect(errorOf(() => compile('[x, x, x, x]')({ x })).message).toMatch(/a list literal would build a list of 120004 elements/);
    expect((compile('[x, x, x]')({ x }) as unknown[]).length).toBe(3);
  });

  it('bounds the work of the text functions on big fields', () => {
    const big = 'a,'.repeat(600_000);
    expect(errorOf(() => compile("split(s, ',')")({ s: big })).message).toMatch(/split\(\) would build a list of at least 100002 elements \(limit 100000/);
    expect(errorOf(() => compile('upper(s)')({ s: big })).message).toMatch(/upper\(\) would build a string of 1200000 characters \(limit 1048576/);
    expect(errorOf(() => compile("join(x, '-')")({ x: new Array(90_000).fill('abcdefghijklmnop') })).message).toMatch(/join\(\) would build a string of/);
    expect(compile("len(split(s, ','))")({ s: 'a,'.repeat(50_000) })).toBe(50_001);
  });

  it('reads SVC_EXPR_* from the environment; a bad value is an error at compile time', async () => {
    const probe = (env: Record<string, string>) =>
      import('node:child_process').then(({ execFileSync }) =>
        execFileSync(
          process.execPath,
          [
            '--import',
            'tsx',
            '-e',
            "import('./src/expr/index.ts').then((m) => { try { m.compile('1'); console.log(JSON.stringify(m.exprBudget())); } catch (e) { console.log(e.name + ': ' + e.message); } })",
          ],
          {
            cwd: ROOT,
            env: { ...process.env, ...env },
            encoding: 'utf8',
          },
        ).trim(),
      );
    expect(JSON.parse(await probe({ SVC_EXPR_MAX_STEPS: '5000', SVC_EXPR_MAX_STRING_LENGTH: '2000' }))).toEqual({
      maxSteps: 5000,
      maxListLength: 100_000,
      maxStringLength: 2000,
    });
    expect(await probe({ SVC_EXPR_MAX_LIST_LENGTH: 'many' })).toBe('ExprError: SVC_EXPR_MAX_LIST_LENGTH="many": expected an integer');
  });

  it('chunk worker threads apply the setting of their environment', async () => {
    // In a process of its own (its worker threads start from its environment): the main thread's
    // budget is raised in code, the workers keep SVC_EXPR_MAX_LIST_LENGTH=100 from the environment.
    // Records processed in the workers are refused with limit 100; those processed on the main
    // thread pass. Each record takes a millisecond or two (str() of 50,000 elements), so the
    // workers have loaded and taken chunks before the run ends.
    const dir = tempDir('svc-expr-threads-');
    writeFileSync(join(dir, 'in.ndjson'), Array.from({ length: 2000 }, (_, i) => JSON.stringify({ i })).join('\n') + '\n');
    const out = tempDir('svc-expr-threads-out-');
    writeFileSync(
      join(dir, 'pipeline.yaml'),
      `version: "1"
pipeline:
  name: budget-threads
  schedule: { type: manual }
  thread_workers: 2
  source: { type: local, path: ${JSON.stringify(dir)}, file_pattern: "*.ndjson" }
  serializer_in: { type: ndjson }
  serializer_out: { type: ndjson }
  transforms:
    - { type: add_field, fields: { x: "len(str([i] * 50000)) > 0 and [i] * 110" } }
  on_error: dlq
  dlq: { type: local, path: ${JSON.stringify(out)}, filename_template: dead.ndjson }
  sinks:
    - { type: local, path: ${JSON.stringify(out)}, filename_template: out.ndjson }
`,
    );
    const script = `
      const { loadPipelineFile } = await import(${JSON.stringify(join(ROOT, 'src/config/load.ts'))});
      const { runPipeline } = await import(${JSON.stringify(join(ROOT, 'src/engine/runner.ts'))});
      const { setExprBudget } = await import(${JSON.stringify(join(ROOT, 'src/expr/index.ts'))});
      const { silentLogger } = await import(${JSON.stringify(join(ROOT, 'src/observability/log.ts'))});
      setExprBudget({ maxListLength: 100000 });
      const { config } = await loadPipelineFile(${JSON.stringify(join(dir, 'pipeline.yaml'))}, { env: {} });
      const rec = await runPipeline(config, { log: silentLogger, chunkBytes: 256 });
      console.log(JSON.stringify({ records_out: rec.records_out, dlq_count: rec.dlq_count }));`;
    const { execFileSync } = await import('node:child_process');
    // A file, not -e: the worker threads are started with this process's execArgv.
    writeFileSync(join(dir, 'run.mts'), script);
    const stdout = execFileSync(process.execPath, ['--import', 'tsx', join(dir, 'run.mts')], {
      cwd: ROOT,
      env: { ...process.env, SVC_EXPR_MAX_LIST_LENGTH: '100' },
      encoding: 'utf8',
    });
    const rec = JSON.parse(stdout.trim().split('\n').at(-1)!) as { records_out: number; dlq_count: number };
    expect(rec.records_out + rec.dlq_count).toBe(2000);
    expect(rec.dlq_count, 'records refused in the worker threads').toBeGreaterThan(0);
    for (const l of readFileSync(join(out, 'dead.ndjson'), 'utf8').trim().split('\n')) {
      expect((JSON.parse(l) as { _error: string })._error).toContain('(limit 100; SVC_EXPR_MAX_LIST_LENGTH)');
    }
  });
});
