// Run history retention (docs/storage.md, "Run history retention"): a background timer that purges
// runs older than SVC_RUN_HISTORY_MAX_AGE_DAYS and beyond SVC_RUN_HISTORY_MAX_RUNS_PER_PIPELINE.
// The store deletes in small batches with a turn of the event loop between them, so the API keeps
// answering during a pass; a failed pass is logged and the next one tries again.
import type { Logger } from '../observability/log.js';
import type { Settings } from '../settings.js';
import type { RunStore } from '../store/types.js';

/** The first pass waits this long (or one interval when that is shorter): it never slows the start. */
const FIRST_PASS_DELAY_MS = 60_000;
const DAY_MS = 86_400_000;

type RetentionSettings = Pick<Settings, 'RUN_HISTORY_MAX_AGE_DAYS' | 'RUN_HISTORY_MAX_RUNS_PER_PIPELINE' | 'RUN_HISTORY_PURGE_INTERVAL_SECONDS'>;

export interface RunRetention {
  /** One pass now (what the timer runs); never rejects. Undefined when skipped (stopped, not active, disabled). */
  purgeNow(): Promise<{ byAge: number; byCount: number } | undefined>;
  /** Stops the timer; a pass in progress ends at its next batch, and this resolves then. */
  stop(): Promise<void>;
}

export function startRunRetention(opts: {
  runs: RunStore;
  settings: RetentionSettings;
  log: Logger;
  /** False skips a pass: a standby manager leaves the purge to the leader, which shares its database. */
  active?: () => boolean;
}): RunRetention {
  const { runs, settings } = opts;
  const log = opts.log.child({ component: 'run-retention' });
  const maxAgeDays = settings.RUN_HISTORY_MAX_AGE_DAYS;
  const keepPerPipeline = settings.RUN_HISTORY_MAX_RUNS_PER_PIPELINE;
  const intervalMs = settings.RUN_HISTORY_PURGE_INTERVAL_SECONDS * 1000;
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<{ byAge: number; byCount: number } | undefined> | undefined;

  const disabled = maxAgeDays === 0 && keepPerPipeline === 0;
  log.info(
    { max_age_days: maxAgeDays, max_runs_per_pipeline: keepPerPipeline, interval_s: intervalMs / 1000 },
    disabled ? 'run history retention disabled: history grows without bound' : 'run history retention',
  );

  const pass = async () => {
    if (abort.signal.aborted || disabled || !(opts.active?.() ?? true)) return undefined;
    const t0 = performance.now();
    try {
      const finishedBefore = maxAgeDays > 0 ? new Date(Date.now() - maxAgeDays * DAY_MS).toISOString() : null;
      const r = await runs.purge({ finishedBefore, keepPerPipeline, signal: abort.signal });
      const fields = { removed: r.byAge + r.byCount, by_age: r.byAge, by_count: r.byCount, ms: Math.round(performance.now() - t0) };
      if (fields.removed > 0) log.info(fields, 'run history purged');
      else log.debug(fields, 'run history purge: nothing to remove');
      return r;
    } catch (e) {
      log.warn({ err: (e as Error).message }, 'run history purge failed; the next pass tries again');
      return undefined;
    }
  };

  const purgeNow = () => (current ??= pass().finally(() => (current = undefined)));

  // A chain of timeouts rather than an interval: passes never overlap, however long one takes.
  const schedule = (ms: number) => {
    if (abort.signal.aborted || disabled) return;
    timer = setTimeout(() => void purgeNow().finally(() => schedule(intervalMs)), ms);
    timer.unref(); // the purge never keeps the process alive
  };
  schedule(Math.min(FIRST_PASS_DELAY_MS, intervalMs));

  return {
    purgeNow,
    async stop() {
      abort.abort();
      clearTimeout(timer);
      await current;
    },
  };
}
