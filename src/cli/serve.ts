// `svc serve`: the daemon and, beside it, the operator console; SVC_MODE=worker runs serve-worker.ts.
import { startConsole, type Console } from '../console/server.js';
import { startDaemon, type Daemon } from '../daemon/daemon.js';
import { createLogger } from '../observability/log.js';
import { settingsOrReport } from './settings-or-report.js';
import { installStopSignals, StartStopped } from './stop-signals.js';
import { stopParts } from './stop-parts.js';

export async function cmdServe(): Promise<number> {
  const settings = settingsOrReport();
  if (!settings) return 1;
  if (settings.MODE === 'worker') return (await import('./serve-worker.js')).serveWorker(settings);
  // Before anything listens: a signal at any moment of the start begins an orderly stop.
  const signals = installStopSignals();
  const log = createLogger({ level: settings.LOG_LEVEL, format: settings.LOG_FORMAT });
  let daemon: Daemon | undefined;
  let consoleServer: Console;
  try {
    daemon = await startDaemon({ settings, log, checkpoint: signals.checkpoint, deferReady: true });
    await signals.checkpoint('before-console');
    // Standalone mode serves the operator console beside the API (SVC_CONSOLE_PORT). Its modules are
    // loaded up front: callers take a ready daemon to mean a console that answers too.
    consoleServer = await startConsole(settings, daemon.log, { mibs: daemon.mibs }).catch((e: unknown) => {
      throw new Error(`operator console on port ${settings.CONSOLE_PORT}: ${(e as Error).message}`);
    });
  } catch (e) {
    if (e instanceof StartStopped) {
      // startDaemon stopped what it had started when its own checkpoint threw; the daemon's stop is
      // idempotent, so a stop between the daemon and the console lands here too.
      const code = await stopParts(log, e.message, [['daemon', () => daemon?.stop()]]);
      signals.dispose();
      return code;
    }
    if (daemon) await daemon.stop().catch(() => {});
    signals.dispose();
    // Start-up problems (port in use, unreadable certificate, database unreachable) in one line.
    process.stderr.write(`svc: cannot start: ${(e as Error).message}\n`);
    return 1;
  }
  const started = daemon;
  started.startComplete();
  // SIGTERM / SIGINT drain like POST /api/daemon/stop (which resolves `stopped` by itself).
  const daemonCode = await new Promise<number>((resolve) => {
    void started.stopped.then(() => resolve(0));
    signals.onStop(() => {
      log.info({ signal: signals.received() }, 'signal received');
      void stopParts(log, undefined, [['daemon', () => started.stop()]]).then((code) => code && resolve(code));
    });
  });
  const consoleCode = await stopParts(log, undefined, [['console', () => consoleServer.stop()]]);
  signals.dispose();
  return Math.max(daemonCode, consoleCode);
}
