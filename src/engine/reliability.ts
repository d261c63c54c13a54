// Per-sink reliability owned by the runtime, never by plugins: retries with doubling delay (or the
// peer's Retry-After when it is longer: WriteError.retryAfterMs), a
// circuit breaker, and the pipeline's token-bucket rate limit (one token per sink write).
import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage, WriteError } from '../core/errors.js';
import type { Logger } from '../observability/log.js';
import type { Sink, SinkBatch } from '../plugins/types.js';

/** The longest `Retry-After` a peer can make a retry wait (a larger one waits this long). */
export const MAX_RETRY_AFTER_MS = 300_000;

/** How long an open circuit skips its sink (spec: 60 seconds). */
export const CIRCUIT_OPEN_MS = 60_000;

/** Counts consecutive failed write attempts; at the threshold the sink is skipped for 60 s. */
export class CircuitBreaker {
  private failures = 0;
  private openUntil = 0;
  constructor(
    readonly threshold: number | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  isOpen(): boolean {
    return this.threshold !== undefined && this.now() < this.openUntil;
  }
  /** Milliseconds until the circuit closes again (0 when closed). */
  remainingMs(): number {
    return this.isOpen() ? this.openUntil - this.now() : 0;
  }
  success() {
    this.failures = 0;
  }
  failure() {
    if (this.threshold === undefined) return;
    if (++this.failures >= this.threshold) {
      this.openUntil = this.now() + CIRCUIT_OPEN_MS;
      // After the open period the sink gets one attempt; one more failure re-opens it at once.
      this.failures = this.threshold - 1;
    }
  }
}

/** Token bucket: `rps` tokens per second, bursts up to max(1, rps); take() waits when empty. */
export class TokenBucket {
  private tokens: number;
  private last: number;
  private readonly capacity: number;
  constructor(
    private readonly rps: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.capacity = Math.max(1, rps);
    this.tokens = this.capacity;
    this.last = this.now();
  }
  async take(signal?: AbortSignal): Promise<void> {
    for (;;) {
      const t = this.now();
      this.tokens = Math.min(this.capacity, this.tokens + ((t - this.last) / 1000) * this.rps);
      this.last = t;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await sleep(Math.ceil(((1 - this.tokens) / this.rps) * 1000), undefined, { signal });
    }
  }
}

export interface RetryPolicy {
  retry_count: number;
  retry_delay_seconds: number;
}

export type WriteOutcome = { ok: true; attempts: number } | { ok: false; attempts: number; reason: string; circuitOpen: boolean };

/**
 * Runs `write` with the sink's retries. Each attempt takes a rate-limit token and is counted by the
 * breaker; an open breaker fails fast. `forever` (on_error: retry) keeps retrying past retry_count,
 * with the delay doubling up to 60 s, until success or `signal` aborts.
 */
export async function guardedWrite(
  write: () => Promise<void>,
  opts: { label: string; policy: RetryPolicy; breaker: CircuitBreaker; limiter?: TokenBucket; signal: AbortSignal; log: Logger; forever?: boolean },
): Promise<WriteOutcome> {
  const { policy, breaker, signal } = opts;
  let attempts = 0;
  let lastError = '';
  for (;;) {
    if (breaker.isOpen()) {
      if (!opts.forever)
        return {
          ok: false,
          attempts,
          reason: `${opts.label}: circuit open (skipped for ${Math.ceil(breaker.remainingMs() / 1000)} s more after ${breaker.threshold} consecutive failures)`,
          circuitOpen: true,
        };
      await sleep(breaker.remainingMs(), undefined, { signal }).catch(() => {});
    }
    if (signal.aborted) return { ok: false, attempts, reason: `${opts.label}: ${lastError || 'run stopped before the write'}`, circuitOpen: false };
    if (opts.limiter) {
      try {
        await opts.limiter.take(signal);
      } catch {
        return { ok: false, attempts, reason: `${opts.label}: run stopped while rate-limited`, circuitOpen: false };
      }
    }
    attempts++;
    try {
      await write();
      breaker.success();
      return { ok: true, attempts };
    } catch (e) {
      breaker.failure();
      lastError = errorMessage(e);
      const permanent = e instanceof WriteError && !e.retryable;
      const retriesLeft = opts.forever ? !permanent : attempts <= policy.retry_count && !permanent;
      opts.log.warn({ sink: opts.label, attempt: attempts, err: lastError }, retriesLeft ? 'sink write failed; retrying' : 'sink write failed');
      if (!retriesLeft) return { ok: false, attempts, reason: `${opts.label}: ${lastError}`, circuitOpen: false };
      const base = policy.retry_delay_seconds * 1000 * 2 ** (attempts - 1);
      // Unbounded retries never spin: at least 100 ms apart, at most 60 s.
      const backoff = opts.forever ? Math.min(Math.max(base, 100), 60_000) : base;
      // A peer that said how long to wait (Retry-After) is not asked sooner; a hostile value is capped.
      const asked = e instanceof WriteError && e.retryAfterMs !== undefined ? Math.min(e.retryAfterMs, MAX_RETRY_AFTER_MS) : 0;
      const delayMs = Math.max(backoff, asked);
      try {
        await sleep(delayMs, undefined, { signal });
      } catch {
        return { ok: false, attempts, reason: `${opts.label}: ${lastError} (run stopped during retry)`, circuitOpen: false };
      }
    }
  }
}

/**
 * A sink write with the sink's retries, where the peer may answer per record (`WriteResult`):
 * records refused for good are returned with their reasons; records refused for now are written
 * again, alone, under the same retry policy. `failed` are the indexes (into batch.records) that
 * never landed when the write as a whole failed; every other index not in `rejected` landed.
 */
export async function guardedRecordsWrite(
  sink: Sink,
  batch: SinkBatch,
  opts: Parameters<typeof guardedWrite>[1],
): Promise<{ outcome: WriteOutcome; rejected: Map<number, string>; failed: number[] | 'all'; bytes: number }> {
  const rejected = new Map<number, string>();
  let bytes = 0;
  let pending: number[] | undefined; // undefined: the whole batch is still to write
  const outcome = await guardedWrite(async () => {
    const idx = pending;
    const b = idx ? subBatch(batch, idx) : batch;
    const r = await sink.write(b);
    bytes += r?.bytes ?? 0;
    const orig = (i: number) => (idx ? idx[i]! : i);
    for (const x of r?.rejected ?? []) rejected.set(orig(x.index), x.reason);
    if (r?.retry?.length) {
      pending = r.retry.map((x) => orig(x.index));
      throw new WriteError(`${r.retry.length} of ${b.count} records refused for now: ${r.retry[0]!.reason}`, true, { retryAfterMs: r.retryAfterMs });
    }
    pending = [];
  }, opts);
  return { outcome, rejected, failed: outcome.ok ? [] : (pending ?? 'all'), bytes };
}

/** The records of `batch` at `idx`, as a batch of their own (records sinks only read `records`). */
function subBatch(batch: SinkBatch, idx: number[]): SinkBatch {
  const records = idx.map((i) => batch.records![i]!);
  return { ...batch, payload: Buffer.alloc(0), count: records.length, records, first: records[0] };
}
