// SIGTERM and SIGINT for the long-running commands (serve, serve in worker mode, console). The
// handlers are installed before anything starts, so a signal at any moment of the start (an
// orchestrator's rolling update, a failed probe) begins an orderly stop instead of the signal's
// default action (exit 143, nothing drained). The first signal asks for the stop; the command
// stops what has started and exits 0. A second signal exits at once with 130.
//
// SVC_TEST_HOLD_START=<point> makes the start wait at that named point until a signal arrives, so
// the tests can send one at an exact moment of the start instead of hoping to hit it.

export interface StopSignals {
  /** Aborted by the first SIGTERM or SIGINT. */
  readonly signal: AbortSignal;
  /** The name of the signal that asked for the stop. */
  readonly received: () => string | undefined;
  /**
   * A named point of the start. Waits there for a signal when SVC_TEST_HOLD_START names it; then
   * throws StartStopped when a stop was asked for, so the start goes no further.
   */
  checkpoint(point: string): Promise<void>;
  /** Runs `fn` once a stop is asked for: at once when it was asked already (during the start). */
  onStop(fn: () => void): void;
  /** Removes the handlers (the command is over). */
  dispose(): void;
}

/** The start was interrupted by a stop signal; everything it had started has been stopped. */
export class StartStopped extends Error {
  override name = 'StartStopped';
  constructor(readonly point: string) {
    super(`stopped by a signal during the start (at ${point})`);
  }
}

export const START_HOLD_VARIABLE = 'SVC_TEST_HOLD_START';

export function installStopSignals(): StopSignals {
  const controller = new AbortController();
  let received: string | undefined;
  const handlers = new Map<NodeJS.Signals, () => void>();
  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    const handler = () => {
      if (received) process.exit(130);
      received = sig;
      controller.abort(new Error(`${sig} received`));
    };
    handlers.set(sig, handler);
    process.on(sig, handler);
  }
  const hold = process.env[START_HOLD_VARIABLE];
  return {
    signal: controller.signal,
    received: () => received,
    async checkpoint(point) {
      if (hold === point && !controller.signal.aborted) {
        // A plain line on stderr: the logger may not exist yet at the earliest points.
        process.stderr.write(`svc: start held at ${point} (${START_HOLD_VARIABLE}) until a signal arrives\n`);
        // Signal handlers do not keep the event loop alive; a timer does, for as long as the hold lasts.
        const alive = setInterval(() => {}, 60_000);
        await new Promise<void>((resolve) => controller.signal.addEventListener('abort', () => resolve(), { once: true }));
        clearInterval(alive);
      }
      if (controller.signal.aborted) throw new StartStopped(point);
    },
    onStop(fn) {
      if (controller.signal.aborted) fn();
      else controller.signal.addEventListener('abort', fn, { once: true });
    },
    dispose() {
      for (const [sig, handler] of handlers) process.off(sig, handler);
    },
  };
}
