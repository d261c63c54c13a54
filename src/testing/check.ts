// A case's expectations against what its polls produced: each broken expectation is a Failure with
// a diff people can read (by sink, record index and field) and that --json hands on unchanged.
import type { PipelineConfig } from '../config/pipeline-schema.js';
import type { Envelope } from '../engine/dlq.js';
import type { RunRecord } from '../engine/run-record.js';
import { compile, truthy } from '../expr/index.js';
import type { Rec } from '../plugins/types.js';
import { diffLines, isPlainObject, plain, same, show } from './values.js';
import { regexOf, sinkIndex } from './load.js';
import type { SinkCapture } from './harness.js';
import type { DlqExpectation, Expectation, SinkExpectation } from './schema.js';

export interface Failure {
  /** `poll 2` when the expectation was given on a poll; absent for the case's own expect. */
  poll?: number;
  /** `sinks[0] (local)`, `dlq`, `errors`, `status`, or `run` when the harness itself failed. */
  where: string;
  message: string;
  /** Lines starting with '-' (expected), '+' (actual) or ' ' (context). */
  diff: string[];
}

export interface Outputs {
  sinks: SinkCapture[];
  dlq: Envelope[];
  runs: RunRecord[];
}

const n = (k: number, what: string) => `${k} ${what}${k === 1 ? '' : 's'}`;

/** At most this many records or lines are listed in one failure (the rest are counted). */
const MAX_LISTED = 20;

/** Checks `e` against `out`; the run status only when `e.status` is set (the caller decides the default). */
export function checkExpect(config: PipelineConfig, e: Expectation, out: Outputs, poll?: number): Failure[] {
  const failures: Failure[] = [];
  const fail = (where: string, message: string, diff: string[] = []) => failures.push({ ...(poll !== undefined ? { poll } : {}), where, message, diff });
  for (const s of e.sinks ?? []) {
    const i = sinkIndex(config, s.sink) as number;
    checkSink(s, out.sinks[i]!, (m, d) => fail(out.sinks[i]!.label, m, d));
  }
  if (e.dlq) checkDlq(e.dlq, out.dlq, (m, d) => fail('dlq', m, d));
  const errors = out.runs.flatMap((r) => r.errors);
  if (e.errors) checkErrors(e.errors, errors, (m, d) => fail('errors', m, d));
  const want = e.status;
  const bad = want && out.runs.find((r) => r.status !== want);
  if (bad)
    fail(
      'status',
      `expected the run to end '${want}', it ended '${bad.status}'${bad.error ? `: ${bad.error}` : ''}`,
      errors.slice(0, MAX_LISTED).map((m) => `  ${m}`),
    );
  return failures;
}

type Fail = (message: string, diff?: string[]) => void;

function checkSink(s: SinkExpectation, got: SinkCapture, fail: Fail) {
  const actual = got.records.map((r) => plain(r) as Rec);
  if (s.count !== undefined && actual.length !== s.count) fail(`expected ${n(s.count, 'record')}, got ${actual.length}`, listed(actual, '+'));
  if (s.records) {
    const want = s.records.map((r) => plain(r) as Rec);
    const diff = recordsDiff(want, actual);
    if (diff.length) {
      const sameSet = want.length === actual.length && want.every((r) => actual.some((a) => same(r, a)));
      fail(`records differ (expected ${want.length}, got ${actual.length})${sameSet ? '; the same records in another order' : ''}`, diff);
    }
  }
  if (s.contains) {
    const used = new Set<number>();
    s.contains.forEach((want, k) => {
      const hit = actual.findIndex((a, j) => !used.has(j) && matches(want, a));
      if (hit !== -1) return used.add(hit);
      const closest = nearest(want, actual, used);
      const diff =
        closest === -1 ? ['  (no record was written)'] : [`  closest: record ${closest}`, ...fieldDiff(want, actual[closest], '', true).map((l) => '  ' + l)];
      fail(`contains[${k}]: no ${used.size ? 'other ' : ''}written record has ${show(want)}`, diff);
    });
  }
  if (s.expr !== undefined) {
    const expr = compile(s.expr);
    const bad: string[] = [];
    got.records.forEach((r, i) => {
      let ok: boolean;
      let why = '';
      try {
        ok = truthy(expr(r));
      } catch (e) {
        ok = false;
        why = ` (${(e as Error).message})`;
      }
      if (!ok) bad.push(`+ [${i}] ${show(actual[i])}${why}`);
    });
    if (bad.length) fail(`expr is false for ${bad.length} of ${got.records.length} records: ${s.expr}`, cap(bad));
    else if (got.records.length === 0 && s.count === undefined)
      fail(`expr: no record was written, so nothing satisfies ${s.expr} (add count: 0 if that is expected)`);
  }
  if (s.bytes !== undefined) {
    const text = got.bytes.toString('utf8');
    if (text !== s.bytes) fail(`bytes differ (expected ${Buffer.byteLength(s.bytes)}, got ${got.bytes.length})`, cap(diffLines(s.bytes, text)));
  }
  if (s.bytes_base64 !== undefined) {
    const want = Buffer.from(s.bytes_base64, 'base64');
    if (!want.equals(got.bytes)) fail(`bytes differ (expected ${want.length}, got ${got.bytes.length})`, bytesDiff(want, got.bytes));
  }
}

/** A record matches `want` when every field of `want` is in it with the same value (nested mappings likewise). */
function matches(want: unknown, got: unknown): boolean {
  if (isPlainObject(want) && isPlainObject(got)) return Object.entries(want).every(([k, v]) => k in got && matches(v, got[k]));
  return same(want, got);
}

/** The unused record that agrees with `want` on the most fields; -1 when there is none. */
function nearest(want: Rec, actual: Rec[], used: Set<number>): number {
  let best = -1;
  let score = -1;
  actual.forEach((a, j) => {
    if (used.has(j)) return;
    const n = Object.entries(want).filter(([k, v]) => k in a && matches(v, a[k])).length;
    if (n > score) [best, score] = [j, n];
  });
  return best;
}

/** Expected vs actual records, by index and field. */
export function recordsDiff(want: Rec[], got: Rec[]): string[] {
  const out: string[] = [];
  const n = Math.max(want.length, got.length);
  let listed = 0;
  for (let i = 0; i < n && listed < MAX_LISTED; i++) {
    if (i >= got.length) out.push(`- [${i}] missing: ${show(want[i])}`);
    else if (i >= want.length) out.push(`+ [${i}] unexpected: ${show(got[i])}`);
    else if (!same(want[i], got[i])) out.push(`  [${i}]`, ...fieldDiff(want[i], got[i], '', false).map((l) => '  ' + l));
    else continue;
    listed++;
  }
  if (listed === MAX_LISTED && n > MAX_LISTED) out.push(`  ... (${n} records in all)`);
  return out;
}

/** Field by field (dotted paths into nested mappings); `subset` ignores fields only `got` has. */
function fieldDiff(want: unknown, got: unknown, prefix: string, subset: boolean): string[] {
  if (!(isPlainObject(want) && isPlainObject(got)))
    return same(want, got) ? [] : [`- ${prefix || '(record)'}: ${show(want)}`, `+ ${prefix || '(record)'}: ${show(got)}`];
  const out: string[] = [];
  for (const [k, v] of Object.entries(want)) {
    const name = prefix ? `${prefix}.${k}` : k;
    if (!(k in got)) out.push(`- ${name}: ${show(v)}`, `+ ${name}: (missing)`);
    else if (!(subset ? matches(v, got[k]) : same(v, got[k]))) out.push(...fieldDiff(v, got[k], name, subset));
  }
  if (!subset) for (const [k, v] of Object.entries(got)) if (!(k in want)) out.push(`+ ${prefix ? `${prefix}.${k}` : k}: ${show(v)} (not expected)`);
  return out;
}

function textMatches(pattern: string, text: string): boolean {
  const re = regexOf(pattern);
  return re ? re.test(text) : text.includes(pattern);
}

const envelopeLine = (e: Envelope) => {
  const raw = e.raw ? ` raw=${show(Buffer.from(e.raw, 'base64').toString('utf8'))}` : '';
  return `${e._stage}: ${e._error}${e.record ? ` record=${show(plain(e.record))}` : ''}${raw}`;
};
const expectedLine = (w: DlqExpectation) => `${w.stage ?? '*'}: ${w.error ?? '*'}${w.record ? ` record=${show(w.record)}` : ''}`;

function checkDlq(want: DlqExpectation[], got: Envelope[], fail: Fail) {
  if (want.length !== got.length) {
    const diff = [...want.map((w, i) => `- [${i}] ${expectedLine(w)}`), ...cap(got.map((e, i) => `+ [${i}] ${envelopeLine(e)}`))];
    fail(`expected ${n(want.length, 'dead letter')}, got ${got.length}`, diff);
    return;
  }
  want.forEach((w, i) => {
    const e = got[i]!;
    const diff: string[] = [];
    if (w.stage !== undefined && w.stage !== e._stage) diff.push(`- stage: ${w.stage}`, `+ stage: ${e._stage}`);
    if (w.error !== undefined && !textMatches(w.error, e._error)) diff.push(`- error: ${w.error}`, `+ error: ${e._error}`);
    if (w.record !== undefined) diff.push(...fieldDiff(w.record, plain(e.record ?? {}), 'record', false));
    const raw = e.raw === null ? null : Buffer.from(e.raw, 'base64').toString('utf8');
    if (w.raw !== undefined && w.raw !== raw) diff.push(`- raw: ${show(w.raw)}`, `+ raw: ${raw === null ? '(none)' : show(raw)}`);
    if (diff.length) fail(`dead letter ${i} differs`, diff);
  });
}

function checkErrors(want: string[], got: string[], fail: Fail) {
  if (want.length === 0) {
    if (got.length) fail(`expected no errors, got ${got.length}`, cap(got.map((m) => `+ ${m}`)));
    return;
  }
  const listing = got.length ? cap(got.map((m) => `+ ${m}`)) : ['  (the run recorded no errors)'];
  for (const w of want) if (!got.some((m) => textMatches(w, m))) fail(`no error message matches ${show(w)}`, listing);
}

function listed(records: Rec[], sign: '+' | '-'): string[] {
  return cap(records.map((r, i) => `${sign} [${i}] ${show(r)}`));
}

function cap(lines: string[]): string[] {
  return lines.length > MAX_LISTED ? [...lines.slice(0, MAX_LISTED), `  ... (${lines.length - MAX_LISTED} more)`] : lines;
}

/** The first differing offset, with 16 bytes of each side in hex. */
function bytesDiff(want: Buffer, got: Buffer): string[] {
  let at = 0;
  while (at < want.length && at < got.length && want[at] === got[at]) at++;
  const from = Math.max(0, at - 8);
  return [`  first difference at byte ${at}`, `- ${want.subarray(from, from + 16).toString('hex')}`, `+ ${got.subarray(from, from + 16).toString('hex')}`];
}
