// The browser tests of the web UI (issue 16), in one file so that they run serially: one real
// `svc serve` and one Chromium at a time, the daemon's pages first, then the console's.
import { vi } from 'vitest';
import { alertsSuite } from './e2e/alerts-suite.js';
import { consoleSuite } from './e2e/console-suite.js';
import { daemonSuite } from './e2e/daemon-suite.js';
import { dlqSuite } from './e2e/dlq-suite.js';
import { newcomerSuite } from './e2e/newcomer-suite.js';
import { liveSuite } from './e2e/live-suite.js';
import { graphSuite } from './e2e/graph-suite.js';
import { shardsSuite } from './e2e/shards-suite.js';

// A flow drives a real browser through several pages and server round trips (MIB compiles, walks):
// on a loaded CI machine one can take longer than the suite-wide 30 s.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 });

daemonSuite();
dlqSuite();
alertsSuite();
liveSuite();
graphSuite();
consoleSuite();
newcomerSuite();
shardsSuite();
