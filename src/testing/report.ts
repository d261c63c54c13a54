// How `svc test` shows its results: for people, one line per case and a diff under each failure;
// for programs (--json), one document with the same content.
import type { Failure } from './check.js';
import { summarize, type FileResult } from './run.js';

function failureLines(f: Failure): string[] {
  const where = f.poll !== undefined ? `poll ${f.poll}, ${f.where}` : f.where;
  return [`      ${where}: ${f.message}`, ...f.diff.map((l) => `        ${l}`)];
}

/** The human report of one file. */
export function formatFile(r: FileResult): string {
  const lines = [r.pipeline ? `${r.file} (pipeline ${r.pipeline})` : r.file];
  if (r.invalid) lines.push('  invalid:', ...r.invalid.map((l) => `    ${l}`));
  for (const w of r.warnings) lines.push(`  ${w}`);
  for (const c of r.cases) {
    lines.push(`  ${c.ok ? '✓' : '✗'} ${c.name}`);
    for (const f of c.failures) lines.push(...failureLines(f));
  }
  return lines.join('\n') + '\n';
}

export function formatSummary(results: FileResult[]): string {
  const s = summarize(results);
  const parts = [`${s.passed} passed`, `${s.failed} failed`];
  if (s.invalid_files) parts.push(`${s.invalid_files} invalid file${s.invalid_files === 1 ? '' : 's'}`);
  return `${s.cases} case${s.cases === 1 ? '' : 's'} in ${s.files} file${s.files === 1 ? '' : 's'}: ${parts.join(', ')}\n`;
}

/** The --json document: the summary and every file's results. */
export function jsonReport(results: FileResult[]): string {
  return JSON.stringify({ ...summarize(results), results }, null, 2) + '\n';
}
