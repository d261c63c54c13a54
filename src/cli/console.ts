// `svc console`: the operator console alone (no pipelines).
import { startConsole } from '../console/server.js';
import { createLogger } from '../observability/log.js';
import { settingsOrReport } from './settings-or-report.js';

export async function cmdConsole(): Promise<number> {
  const settings = settingsOrReport();
  if (!settings) return 1;
  const log = createLogger({ level: settings.LOG_LEVEL, format: settings.LOG_FORMAT });
  let con;
  try {
    con = await startConsole(settings, log);
  } catch (e) {
    process.stderr.write(`svc: cannot start the console on port ${settings.CONSOLE_PORT}: ${(e as Error).message}\n`);
    return 1;
  }
  await new Promise<void>((resolve) => {
    for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => resolve());
  });
  await con.stop();
  return 0;
}
