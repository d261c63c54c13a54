// The browser tests of the web UI (issue 16), in one file so that they run serially: one real
// `svc serve` and one Chromium at a time, the daemon's pages first, then the console's.
import { consoleSuite } from './e2e/console-suite.js';
import { daemonSuite } from './e2e/daemon-suite.js';

daemonSuite();
consoleSuite();
