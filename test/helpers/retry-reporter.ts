// Lists the tests that passed only when run again (SVC_TEST_RETRY, set by .ci/run): CI is not
// held up by one flaky test on a loaded machine, and the flake is printed to be fixed, not hidden.
import type { Reporter, TestCase } from 'vitest/node';
export default class RetryReporter implements Reporter {
  private retried: string[] = [];
  onTestCaseResult(t: TestCase) {
    const d = t.diagnostic();
    if (!d || d.retryCount === 0) return;
    // The failed attempts' errors, where vitest keeps them: what to fix.
    // With the test's own line that failed (a browser test's timeout names no locator otherwise).
    const errors = (t.result() as { errors?: readonly { message?: string; stack?: string }[] }).errors ?? [];
    const where = (stack = '') =>
      stack
        .split('\n')
        .find((l) => /\/test\/.*\.ts:\d+/.test(l) && !l.includes('/test/helpers/'))
        ?.trim();
    const why = errors
      .map((e) => {
        const at = where(e.stack);
        return `\n      ${(e.message ?? '').split('\n')[0]!.slice(0, 300)}${at ? ` (${at.slice(0, 200)})` : ''}`;
      })
      .join('');
    this.retried.push(`${t.module.moduleId} > ${t.fullName} (${d.retryCount} retr${d.retryCount > 1 ? 'ies' : 'y'}, ${t.result().state})${why}`);
  }
  onTestRunEnd() {
    if (this.retried.length)
      process.stdout.write(`\ntests that passed only when run again (flaky: fix them):\n${this.retried.map((r) => `  ${r}`).join('\n')}\n`);
  }
}
