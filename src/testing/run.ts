// `svc test`: finds test files, runs every case, and collects results that the report formats for
// people (stderr) or programs (--json). Also the entry point for tests that run test files in-process.
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Registry } from '../config/load.js';
import { errorMessage } from '../core/errors.js';
import { checkExpect, type Failure } from './check.js';
import { combine, runCase, type PollResult } from './harness.js';
import { formatProblem, isTestFile, loadTestFile, testFileBeside, type TestCase, type TestSuite } from './load.js';

export interface CaseResult {
  name: string;
  line?: number;
  ok: boolean;
  failures: Failure[];
}

export interface FileResult {
  file: string;
  pipeline?: string;
  /** The test file or its pipeline is invalid: no case ran. */
  invalid?: string[];
  /** Warnings about the pipeline (cases still ran). */
  warnings: string[];
  cases: CaseResult[];
}

export interface Summary {
  files: number;
  cases: number;
  passed: number;
  failed: number;
  invalid_files: number;
  ok: boolean;
}

/** What a command-line path stands for: test files to run, or why it stands for none. */
export function findTestFiles(arg: string): { files: string[] } | { error: string } {
  let st;
  try {
    st = statSync(arg);
  } catch {
    return { error: `${arg}: no such file or directory` };
  }
  if (st.isDirectory()) {
    const files = walk(arg).filter(isTestFile).sort();
    return files.length ? { files } : { error: `${arg}: no *.test.yaml files under it` };
  }
  if (isTestFile(arg)) return { files: [arg] };
  const beside = testFileBeside(arg);
  if (beside !== arg && exists(beside)) return { files: [beside] };
  return { error: `${arg}: no test file beside it (expected ${beside})` };
}

function exists(f: string) {
  try {
    return statSync(f).isFile();
  } catch {
    return false;
  }
}

/** Files under `dir`, depth first; hidden folders and node_modules are passed over. */
function walk(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name.startsWith('.') || e.name === 'node_modules') continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...walk(p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

export async function runSuiteCase(suite: TestSuite, c: TestCase, opts: { registry?: Registry } = {}): Promise<CaseResult> {
  let polls: PollResult[];
  try {
    polls = await runCase(suite.config, c, opts);
  } catch (e) {
    // The harness itself failed (runPipeline turns pipeline failures into a failed run record).
    return { name: c.name, line: c.line, ok: false, failures: [{ where: 'run', message: errorMessage(e), diff: [] }] };
  }
  const failures: Failure[] = [];
  const last = polls.length - 1;
  polls.forEach((p, i) => {
    // Every poll's run must end 'success' unless its expect says otherwise (the last one: or the case's).
    const e = c.polls[i]!.expect ?? {};
    const status = e.status ?? (i === last ? c.expect?.status : undefined) ?? 'success';
    failures.push(...checkExpect(suite.config, { ...e, status }, { sinks: p.sinks, dlq: p.dlq, runs: [p.run] }, c.polls.length > 1 ? i + 1 : undefined));
  });
  // The case's expect: everything its polls produced, taken together (statuses were checked above).
  if (c.expect) failures.push(...checkExpect(suite.config, { ...c.expect, status: undefined }, combine(polls)));
  return { name: c.name, line: c.line, ok: failures.length === 0, failures };
}

/** Loads one test file and runs its cases, one after another. */
export async function runTestFile(file: string, opts: { registry?: Registry } = {}): Promise<FileResult> {
  const loaded = loadTestFile(file, opts);
  if (!loaded.ok) return { file, invalid: loaded.problems.map(formatProblem), warnings: [], cases: [] };
  const { suite } = loaded;
  const cases: CaseResult[] = [];
  for (const c of suite.cases) cases.push(await runSuiteCase(suite, c, opts));
  return { file, pipeline: suite.pipelineFile, warnings: loaded.warnings.map(formatProblem), cases };
}

export function summarize(results: FileResult[]): Summary {
  const cases = results.flatMap((r) => r.cases);
  const passed = cases.filter((c) => c.ok).length;
  const invalid = results.filter((r) => r.invalid).length;
  return {
    files: results.length,
    cases: cases.length,
    passed,
    failed: cases.length - passed,
    invalid_files: invalid,
    ok: invalid === 0 && passed === cases.length,
  };
}
