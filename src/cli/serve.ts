// `svc serve`: the daemon and, beside it, the operator console; SVC_MODE=worker runs serve-worker.ts.
import { startConsole } from '../console/server.js';
import { startDaemon } from '../daemon/daemon.js';
import { settingsOrReport } from './settings-or-report.js';

export async function cmdServe(): Promise<number> {
  const settings = settingsOrReport();
  if (!settings) return 1;
  if (settings.MODE === 'worker') return (await import('./serve-worker.js')).serveWorker(settings);
  let daemon;
  let consoleServer;
  try {
    daemon = await startDaemon({ settings });
    // Standalone mode serves the operator console beside the API (SVC_CONSOLE_PORT). Its modules are
    // loaded up front: callers take a ready daemon to mean a console that answers too.
    consoleServer = await startConsole(settings, daemon.log, { mibs: daemon.mibs }).catch(async (e: unknown) => {
      await daemon!.stop();
      throw new Error(`operator console on port ${settings.CONSOLE_PORT}: ${(e as Error).message}`);
    });
  } catch (e) {
    // Start-up problems (port in use, unreadable certificate, database unreachable) in one line.
    process.stderr.write(`svc: cannot start: ${(e as Error).message}\n`);
    return 1;
  }
  // SIGTERM / SIGINT drain like POST /api/daemon/stop; a second signal exits at once.
  const onSignal = (sig: string) => {
    daemon.log.info({ signal: sig }, 'signal received');
    void daemon.stop();
    process.once(sig, () => process.exit(130));
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  await daemon.stopped;
  await consoleServer.stop();
  return 0;
}
