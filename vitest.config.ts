import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Most test time is waiting on peers (servers starting, sockets, timers), not CPU: two files at a
    // time halve the suite on the 2-core CI machine (vitest's default there is one).
    maxWorkers: 2,
    // .ci/run sets SVC_TEST_RETRY=1: a failed test runs once more, and the reporter lists every test
    // that needed it. Locally a failure is a failure.
    retry: Number(process.env.SVC_TEST_RETRY ?? 0),
    reporters: ['default', './test/helpers/retry-reporter.ts'],
  },
});
