// A batch source that polls many targets (snmp_poll's agents, prometheus_scrape's endpoints): at
// most `limit` polls at once, each with its own deadline, so one slow or dead target never holds
// up the others or the run. Finished targets wait for the run in a queue; new polls start while
// fewer than `limit` run and fewer than `limit` results wait, so memory stays bounded by 2 x limit
// results. A stop of the run aborts the polls in flight (one listener on the run's signal).
import type { RunShard, SourceUnit } from '../types.js';

/**
 * The targets of this run: all of them, or those its shard owns (a sharded batch run, issue 33).
 * `missing` gets the owned identities the source does not list (its targets_file differs on this
 * worker): they are reported, never polled by guess.
 */
export function owned<T>(targets: readonly T[], id: (t: T) => string, shard: RunShard | undefined, missing?: (ids: string[]) => void): T[] {
  if (!shard) return [...targets];
  const out = targets.filter((t) => shard.targets.has(id(t)));
  if (missing && out.length < shard.targets.size) {
    const have = new Set(out.map(id));
    missing([...shard.targets].filter((t) => !have.has(t)));
  }
  return out;
}

/** A target that gave no complete answer within its deadline (its poll was aborted). */
export class TargetDeadlineError extends Error {
  override name = 'TargetDeadlineError';
}

export interface FleetOptions<T, R> {
  targets: readonly T[];
  /** Polls at once, and results waiting, at most. */
  limit: number;
  deadlineMs: number;
  /** The run's signal: nothing starts once it is aborted, and what runs is aborted. */
  signal: AbortSignal;
  /** The message of a target's deadline (a TargetDeadlineError). */
  deadlineMessage(target: T): string;
  /** One poll; `signal` aborts at the deadline and at the run's stop. */
  poll(target: T, signal: AbortSignal): Promise<R>;
  /** A poll's result, while the run goes on: the unit to hand on, if any. */
  accept(target: T, result: R, seconds: number): SourceUnit | undefined;
  /** A poll that failed (or passed its deadline), while the run goes on. */
  fail(target: T, error: unknown, seconds: number): void;
}

/** The units of every target that answered, as they come. */
export async function* fleetUnits<T, R>(o: FleetOptions<T, R>): AsyncGenerator<SourceUnit> {
  const { targets, limit, signal } = o;
  const ready: SourceUnit[] = [];
  let wake: (() => void) | undefined;
  let next = 0;
  let running = 0;
  const active = new Set<AbortController>();
  const poke = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const runOne = async (t: T) => {
    const ac = new AbortController();
    active.add(ac);
    let timer: NodeJS.Timeout | undefined;
    const began = performance.now();
    try {
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          reject(new TargetDeadlineError(o.deadlineMessage(t)));
          ac.abort();
        }, o.deadlineMs);
      });
      const result = await Promise.race([o.poll(t, ac.signal), deadline]);
      if (signal.aborted) return;
      const unit = o.accept(t, result, (performance.now() - began) / 1000);
      if (unit) ready.push(unit);
    } catch (e) {
      if (signal.aborted) return;
      o.fail(t, e, (performance.now() - began) / 1000);
    } finally {
      clearTimeout(timer);
      active.delete(ac);
    }
  };
  const start = () => {
    while (!signal.aborted && running < limit && ready.length < limit && next < targets.length) {
      const t = targets[next++]!;
      running++;
      void runOne(t).finally(() => {
        running--;
        poke();
      });
    }
  };
  const onAbort = () => {
    for (const ac of active) ac.abort();
    poke();
  };
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    start();
    for (;;) {
      if (signal.aborted) return;
      const unit = ready.shift();
      if (unit) {
        start();
        yield unit;
        continue;
      }
      if (running === 0 && next >= targets.length) return;
      await new Promise<void>((r) => {
        wake = r;
        start();
      });
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
