// scripts/rerun-unstarted.sh (.ci/run, both whole-suite legs): after a failed run, only files vitest
// could not start a fork for (vitest-dev/vitest#8968) run again; a failed test fails the run.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/fs.js';

/** The script on a log of `lines` after a run that exited `status`, with `echo RERUN` as the command: its exit code and output. */
function decide(status: number, lines: string[]) {
  const log = join(tempDir('svc-rerun-'), 'test.log');
  writeFileSync(log, lines.join('\n') + '\n');
  const r = spawnSync('bash', ['scripts/rerun-unstarted.sh', String(status), log, 'echo', 'RERUN'], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout };
}

describe('scripts/rerun-unstarted.sh', () => {
  const unstarted = [
    'Error: [vitest-pool]: Failed to start forks worker for test files /x/test/a.test.ts.',
    '⎯⎯ Unhandled Error ⎯⎯',
    ' Test Files  10 passed (11)',
    '      Errors  1 error',
  ];
  it('runs again only the files that never started, and exits with that run', () => {
    const r = decide(1, unstarted);
    expect(r.code).toBe(0);
    expect(r.out).toContain('RERUN /x/test/a.test.ts\n');
  });
  it('fails the run when a test failed, even with a file that never started', () => {
    const r = decide(1, [...unstarted.slice(0, 2), ' Test Files  1 failed | 9 passed (11)', '      Errors  1 error']);
    expect(r).toEqual({ code: 1, out: '' });
  });
  it('keeps any other failure, and does nothing after a passing run', () => {
    expect(decide(2, ['Error: type check failed'])).toEqual({ code: 2, out: '' });
    expect(decide(0, unstarted)).toEqual({ code: 0, out: '' });
  });
});
