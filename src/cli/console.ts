// `svc console`: the operator console alone (no pipelines).
import { startConsole } from '../console/server.js';
import { createLogger } from '../observability/log.js';
import { settingsOrReport } from './settings-or-report.js';
import { installStopSignals, StartStopped } from './stop-signals.js';
import { stopParts } from './stop-parts.js';

export async function cmdConsole(): Promise<number> {
  const settings = settingsOrReport();
  if (!settings) return 1;
  // Before anything listens: a signal during the start stops what has started.
  const signals = installStopSignals();
  const log = createLogger({ level: settings.LOG_LEVEL, format: settings.LOG_FORMAT });
  let con;
  try {
    con = await startConsole(settings, log);
  } catch (e) {
    signals.dispose();
    process.stderr.write(`svc: cannot start the console on port ${settings.CONSOLE_PORT}: ${(e as Error).message}\n`);
    return 1;
  }
  const started = con;
  let why: string | undefined;
  try {
    await signals.checkpoint('console-listening');
    await new Promise<void>((resolve) => signals.onStop(resolve));
  } catch (e) {
    if (!(e instanceof StartStopped)) throw e;
    why = e.message;
  }
  log.info({ signal: signals.received() }, 'signal received');
  const code = await stopParts(log, why, [['console', () => started.stop()]]);
  signals.dispose();
  return code;
}
