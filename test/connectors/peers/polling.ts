// The sink side's collector for peers that are read back by polling: read every few ms until
// closed, records() answering at once with what the last successful read gave.
import type { Collector, Rec } from '../conformance.js';
import { pace } from '../../helpers/wait.js';

/**
 * Calls `read` every `everyMs` (default 100) until closed. A failing read (the peer restarting, a
 * locked table) keeps what was read last. `onClose` runs once the loop has ended (to clean up).
 */
export function pollingCollector(read: () => Promise<Rec[]>, opts: { everyMs?: number; onClose?: () => Promise<unknown> } = {}): Collector {
  let got: Rec[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      got = await read().catch(() => got);
      await pace(opts.everyMs ?? 100);
    }
  })();
  return {
    records: () => got,
    async close() {
      stopped = true;
      await loop;
      await opts.onClose?.();
    },
  };
}
