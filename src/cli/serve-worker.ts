// `svc serve` with SVC_MODE=worker: the agent and the ingress; either dying ends the process.
import { startWorker } from '../cluster/worker.js';
import { createLogger } from '../observability/log.js';
import type { Settings } from '../settings.js';

export async function serveWorker(settings: Settings): Promise<number> {
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
    process.stderr.write(`svc: cannot start the worker: ${(e as Error).message}\n`);
    return 1;
  }
  const onSignal = (sig: string) => {
    log.info({ signal: sig }, 'signal received');
    void worker.stop();
    process.once(sig, () => process.exit(130));
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  await worker.stopped;
  return 0;
}
