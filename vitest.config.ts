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
  },
});
