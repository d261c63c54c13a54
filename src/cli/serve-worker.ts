// `svc serve` with SVC_MODE=worker: the agent and the ingress; either dying ends the process.
import { startWorker } from '../cluster/worker.js';
import { createLogger } from '../observability/log.js';
import type { Settings } from '../settings.js';
import { installStopSignals, StartStopped } from './stop-signals.js';
import { stopParts } from './stop-parts.js';

export async function serveWorker(settings: Settings): Promise<number> {
  // Before anything listens: a signal during the start stops what has started.
  const signals = installStopSignals();
  const log = createLogger({ level: settings.LOG_LEVEL, format: settings.LOG_FORMAT });
  let worker;
  try {
    worker = await startWorker({
      settings,
      log,
      onFatal: (why) => {
        // The orchestrator restarts the process; what was not sent waits in the outbox on the volume.
        log.error({ err: why }, 'worker part died; exiting so that the process is restarted');
        process.exit(1);
      },
    });
  } catch (e) {
    signals.dispose();
    process.stderr.write(`svc: cannot start the worker: ${(e as Error).message}\n`);
    return 1;
  }
  const started = worker;
  let why: string | undefined;
  try {
    await signals.checkpoint('worker-listening');
  } catch (e) {
    if (!(e instanceof StartStopped)) throw e;
    why = e.message;
  }
  signals.onStop(() => {
    log.info({ signal: signals.received() }, 'signal received');
    void stopParts(log, why, [['worker', () => started.stop()]]).then((code) => {
      if (code !== 0) process.exit(code);
    });
  });
  await started.stopped;
  signals.dispose();
  return 0;
}
