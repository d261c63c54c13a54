// One warning per kind of event per interval, for connectors whose events can come thousands a
// second (UDP drops, truncations, refused connections): the first is logged at once, the rest are
// counted into the next line, and stop() logs what is still counted.
import type { Logger } from '../../observability/log.js';

/** At most one warning of a kind per this interval; the others are summed into the next one. */
export const LOG_INTERVAL_MS = 10_000;

/** `msg` gets the count since the last line and the fields of the latest event (also logged, with `count`). */
export function rateLimitedWarn(log: Logger, msg: (n: number, fields: Record<string, unknown>) => string) {
  let last = 0;
  let pending = 0;
  let fields: Record<string, unknown> = {};
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    timer = undefined;
    if (!pending) return;
    log.warn({ ...fields, count: pending }, msg(pending, fields));
    pending = 0;
    last = Date.now();
  };
  return {
    add(n: number, f: Record<string, unknown>) {
      pending += n;
      fields = f;
      if (Date.now() - last >= LOG_INTERVAL_MS) flush();
      else timer ??= setTimeout(flush, LOG_INTERVAL_MS - (Date.now() - last)).unref();
    },
    stop() {
      if (timer) clearTimeout(timer);
      flush();
    },
  };
}
