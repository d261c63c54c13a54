// A `svc test` file -> its pipeline and cases, ready to run, or every problem at once with the YAML
// path and line (the pipeline's own diagnostics name the pipeline file). Everything a case refers to
// is checked here, before anything runs: sinks, expressions, regexes, raw files, state bodies.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { formatDiagnostic, formatPath, type Diagnostic, type DiagnosticCode } from '../config/diagnostics.js';
import { loadPipelineText, positionOf, type Registry } from '../config/load.js';
import { depthDiagnostic, expansionDiagnostic } from '../config/yaml-bounds.js';
import type { PipelineConfig } from '../config/pipeline-schema.js';
import { checkAgainst } from '../config/schema-errors.js';
import { sinkLabel } from '../engine/plan.js';
import { statefulInstances, statefulTransforms } from '../engine/transform-state.js';
import { compile } from '../expr/index.js';
import { silentLogger } from '../observability/log.js';
import { registry as defaultRegistry } from '../plugins/registry.js';
import type { Rec, SourceMeta } from '../plugins/types.js';
import type { Static } from '@sinclair/typebox';
import { INPUT_KINDS, TestFile, type Expectation, type InputSpec } from './schema.js';

type Path = (string | number)[];

/** One poll's input, resolved: records skip serializer_in; bytes and messages go through it. */
export type PollInput = { kind: 'records'; records: Rec[] } | { kind: 'bytes'; data: Buffer } | { kind: 'messages'; messages: Buffer[] };

export interface TestPoll {
  input: PollInput;
  meta: SourceMeta;
  expect?: Expectation;
}

export interface TestCase {
  name: string;
  /** 1-based line of the case in the test file. */
  line?: number;
  state?: Record<string, unknown>;
  polls: TestPoll[];
  expect?: Expectation;
}

export interface TestSuite {
  file: string;
  pipelineFile: string;
  config: PipelineConfig;
  cases: TestCase[];
}

export interface TestFileProblem {
  /** The file the diagnostic is about: the test file, or its pipeline. */
  file: string;
  diagnostic: Diagnostic;
}

export type LoadedTestFile = { ok: true; suite: TestSuite; warnings: TestFileProblem[] } | { ok: false; problems: TestFileProblem[] };

export function formatProblem(p: TestFileProblem): string {
  return formatDiagnostic(p.diagnostic, p.file);
}

/** `foo.test.yaml` -> `foo.yaml` (the default pipeline of a test file). */
export function pipelineBeside(testFile: string): string {
  return testFile.replace(/\.test(\.ya?ml)$/i, '$1');
}

/** `foo.yaml` -> `foo.test.yaml`. */
export function testFileBeside(pipelineFile: string): string {
  return pipelineFile.replace(/(\.ya?ml)$/i, '.test$1');
}

// Names are matched in any letter case, like the template listing, which leaves these files out (src/pipelines/templates.ts).
export const isTestFile = (f: string) => /\.test\.ya?ml$/i.test(f);

const isRegex = (s: string) => /^\/.*\/[dgimsuy]*$/s.test(s) && s.length > 1;

/** A `/regex/flags` text as a RegExp, else undefined (a substring match). Throws on a bad regex. */
export function regexOf(s: string): RegExp | undefined {
  if (!isRegex(s)) return undefined;
  const end = s.lastIndexOf('/');
  return new RegExp(s.slice(1, end), s.slice(end + 1));
}

export function loadTestFile(file: string, opts: { registry?: Registry } = {}): LoadedTestFile {
  const reg = opts.registry ?? defaultRegistry;
  const problems: TestFileProblem[] = [];
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    return { ok: false, problems: [{ file, diagnostic: { code: 'CFG_YAML', path: '', message: `cannot read: ${(e as Error).message}`, severity: 'error' } }] };
  }
  const add = (code: DiagnosticCode, p: Path, message: string) => {
    const pos = positionOf(text, p);
    problems.push({ file, diagnostic: { code, path: formatPath(p), message, severity: 'error', line: pos?.line, column: pos?.column } });
  };

  const lc = new LineCounter();
  const deep = depthDiagnostic(text);
  if (deep) return { ok: false, problems: [{ file, diagnostic: deep }] };
  const doc = parseDocument(text, { lineCounter: lc, uniqueKeys: true });
  if (doc.errors[0]) {
    const e = doc.errors[0];
    const lp = e.linePos?.[0];
    const message = e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    return { ok: false, problems: [{ file, diagnostic: { code: 'CFG_YAML', path: '', message, severity: 'error', line: lp?.line, column: lp?.col } }] };
  }
  const bomb = expansionDiagnostic(doc, text, lc);
  if (bomb) return { ok: false, problems: [{ file, diagnostic: bomb }] };
  const raw: unknown = doc.toJS({ maxAliasCount: 100 });
  const checked = checkAgainst(TestFile, raw ?? {});
  for (const i of checked.issues) add(i.code, i.path, i.message);
  if (problems.length) return { ok: false, problems };
  const spec = checked.value as Static<typeof TestFile>;

  // The pipeline: its diagnostics name its own file and lines.
  const dir = path.dirname(file);
  const pipelineFile = spec.pipeline ? path.resolve(dir, spec.pipeline) : pipelineBeside(file);
  if (pipelineFile === file) {
    add('CFG_REQUIRED', ['pipeline'], "the test file's name does not end in .test.yaml: name the pipeline file with `pipeline:`");
    return { ok: false, problems };
  }
  let pipelineText: string;
  try {
    pipelineText = readFileSync(pipelineFile, 'utf8');
  } catch (e) {
    add('CFG_INVALID', spec.pipeline ? ['pipeline'] : [], `cannot read the pipeline ${pipelineFile}: ${(e as Error).message}`);
    return { ok: false, problems };
  }
  // Only the test file's env: a test gives the same result on every machine.
  const loaded = loadPipelineText(pipelineText, { file: pipelineFile, env: spec.env ?? {}, registry: reg, statefulTransforms: true });
  const pipelineProblems = loaded.diagnostics.map((diagnostic) => ({ file: pipelineFile, diagnostic }));
  if (!loaded.config) return { ok: false, problems: pipelineProblems };
  const config = loaded.config;

  const stateKeys = new Set(statefulTransforms(config, reg).map((t) => t.key));
  const cases: TestCase[] = [];
  const names = new Set<string>();
  spec.cases.forEach((c, ci) => {
    const at: Path = ['cases', ci];
    if (names.has(c.name)) add('CFG_INVALID', [...at, 'name'], `case name '${c.name}' is used twice`);
    names.add(c.name);
    if ((c.input === undefined) === (c.polls === undefined))
      add('CFG_REQUIRED', at, 'give either input (one poll) or polls (several, sharing transform state)');
    const inputs: InputSpec[] = c.polls ?? (c.input ? [c.input] : []);
    const polls: TestPoll[] = [];
    inputs.forEach((p, pi) => {
      const pat: Path = c.polls ? [...at, 'polls', pi] : [...at, 'input'];
      const input = resolveInput(p, pat, dir, add);
      if (p.expect) checkExpect(p.expect, [...pat, 'expect'], config, add);
      // A raw_file is read like a file source's unit: its name is the unit's (inject_meta, {source_stem}).
      const meta = { ...(p.raw_file ? { source_filename: path.basename(p.raw_file) } : {}), ...p.meta } as SourceMeta;
      if (input) polls.push({ input, meta, expect: p.expect });
    });
    if (c.expect) checkExpect(c.expect, [...at, 'expect'], config, add);
    if (!c.expect && !inputs.some((p) => p.expect)) add('CFG_REQUIRED', at, 'a case needs expect (for the whole case, or on a poll)');
    if (c.state) checkState(c.state, [...at, 'state'], config, stateKeys, reg, add);
    cases.push({ name: c.name, line: positionOf(text, at)?.line, state: c.state, polls, expect: c.expect });
  });
  if (problems.length) return { ok: false, problems: [...pipelineProblems, ...problems] };
  return { ok: true, suite: { file, pipelineFile, config, cases }, warnings: pipelineProblems };
}

type Add = (code: DiagnosticCode, p: Path, message: string) => void;

function resolveInput(p: InputSpec, at: Path, dir: string, add: Add): PollInput | undefined {
  const given = INPUT_KINDS.filter((k) => p[k] !== undefined);
  if (given.length !== 1) {
    add(given.length ? 'CFG_INVALID' : 'CFG_REQUIRED', at, `give exactly one of ${INPUT_KINDS.join(', ')}${given.length ? ` (got ${given.join(', ')})` : ''}`);
    return undefined;
  }
  if (p.records) return { kind: 'records', records: p.records as Rec[] };
  if (p.messages) return { kind: 'messages', messages: p.messages.map((m) => Buffer.from(m, 'utf8')) };
  if (p.raw !== undefined) return { kind: 'bytes', data: Buffer.from(p.raw, 'utf8') };
  if (p.raw_base64 !== undefined) {
    if (!/^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(p.raw_base64)) {
      add('CFG_RANGE', [...at, 'raw_base64'], 'is not base64');
      return undefined;
    }
    return { kind: 'bytes', data: Buffer.from(p.raw_base64, 'base64') };
  }
  const f = path.resolve(dir, p.raw_file!);
  try {
    return { kind: 'bytes', data: readFileSync(f) };
  } catch (e) {
    add('CFG_INVALID', [...at, 'raw_file'], `cannot read ${f}: ${(e as Error).message}`);
    return undefined;
  }
}

/** The index in pipeline.sinks a `sink:` names: an index, a label (`sinks[1] (kafka)`), or a type used by one sink only. */
export function sinkIndex(config: PipelineConfig, ref: number | string): number | string {
  if (typeof ref === 'number')
    return ref < config.sinks.length ? ref : `there is no sinks[${ref}]; the pipeline has ${config.sinks.length} sink${config.sinks.length === 1 ? '' : 's'}`;
  const label = /^sinks\[(\d+)\](?: \(([^)]*)\))?$/.exec(ref);
  if (label) {
    const i = Number(label[1]);
    if (i < config.sinks.length && (label[2] === undefined || config.sinks[i]!.type === label[2])) return i;
  }
  const byType = config.sinks.flatMap((s, i) => (s.type === ref ? [i] : []));
  if (byType.length === 1) return byType[0]!;
  const list = config.sinks.map(sinkLabel).join(', ');
  return byType.length > 1 ? `${byType.length} sinks have type '${ref}': use an index or a label (${list})` : `no sink '${ref}'; the pipeline has ${list}`;
}

function checkExpect(e: Expectation, at: Path, config: PipelineConfig, add: Add) {
  const seen = new Set<number>();
  e.sinks?.forEach((s, i) => {
    const sat: Path = [...at, 'sinks', i];
    const idx = sinkIndex(config, s.sink);
    if (typeof idx === 'string') add('CFG_INVALID', [...sat, 'sink'], idx);
    else if (seen.has(idx)) add('CFG_INVALID', [...sat, 'sink'], `sinks[${idx}] is expected twice; put its checks in one entry`);
    else seen.add(idx);
    const checks = (['records', 'contains', 'count', 'expr', 'bytes', 'bytes_base64'] as const).filter((k) => s[k] !== undefined);
    if (!checks.length) add('CFG_REQUIRED', sat, 'give at least one of records, contains, count, expr, bytes, bytes_base64');
    if (s.bytes !== undefined && s.bytes_base64 !== undefined) add('CFG_INVALID', [...sat, 'bytes_base64'], 'give bytes or bytes_base64, not both');
    if (s.expr !== undefined) {
      try {
        compile(s.expr);
      } catch (err) {
        add('CFG_EXPRESSION', [...sat, 'expr'], `invalid expression: ${(err as Error).message}`);
      }
    }
  });
  const dlqOn = !!config.dlq && (config.on_error === 'dlq' || config.on_error === 'retry');
  if (e.dlq?.length && !dlqOn) {
    add(
      'CFG_INVALID',
      [...at, 'dlq'],
      `the pipeline dead-letters nothing (on_error: ${config.on_error}${config.dlq ? '' : ', no dlq sink'}); check its errors with expect.errors`,
    );
  }
  e.dlq?.forEach((d, i) => regexCheck(d.error, [...at, 'dlq', i, 'error'], add));
  e.errors?.forEach((m, i) => regexCheck(m, [...at, 'errors', i], add));
}

function regexCheck(s: string | undefined, at: Path, add: Add) {
  if (s === undefined) return;
  try {
    regexOf(s);
  } catch (e) {
    add('CFG_RANGE', at, (e as Error).message);
  }
}

/** Each key must name a stateful transform, and its body must load into a fresh instance of it. */
function checkState(state: Record<string, unknown>, at: Path, config: PipelineConfig, keys: Set<string>, reg: Registry, add: Add) {
  const instances = new Map(statefulInstances(config, silentLogger, reg).map((t) => [t.key, t.transform]));
  for (const [k, body] of Object.entries(state)) {
    if (!keys.has(k)) {
      const known = keys.size ? `state keys of this pipeline: ${[...keys].join(', ')}` : 'the pipeline has no stateful transform';
      add('CFG_UNKNOWN_KEY', [...at, k], `no stateful transform '${k}'; ${known}`);
      continue;
    }
    try {
      instances.get(k)!.state!.load(body);
    } catch (e) {
      add('CFG_INVALID', [...at, k], (e as Error).message);
    }
  }
}
