// `svc test PATH...`: pipeline unit tests (src/testing/).
import { findTestFiles, runTestFile, summarize, type FileResult } from '../testing/run.js';
import { formatFile, formatSummary, jsonReport } from '../testing/report.js';
import { usage } from './usage.js';

/** Every case of every test file; 0 when all pass, 1 when one fails or a file is invalid. */
export async function cmdTest(paths: string[], json: boolean): Promise<number> {
  if (!paths.length) usage('missing test FILE or DIR');
  const results: FileResult[] = [];
  for (const p of paths) {
    const found = findTestFiles(p);
    const runs: FileResult[] = 'error' in found ? [{ file: p, invalid: [found.error], warnings: [], cases: [] }] : [];
    for (const f of 'files' in found ? found.files : []) runs.push(await runTestFile(f));
    for (const r of runs) if (!json) process.stderr.write(formatFile(r));
    results.push(...runs);
  }
  if (json) process.stdout.write(jsonReport(results));
  else process.stderr.write(formatSummary(results));
  return summarize(results).ok ? 0 : 1;
}
