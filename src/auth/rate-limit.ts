// Per-client sliding-window rate limit (spec doc 2 section 8: SVC_RATE_LIMIT requests per
// SVC_RATE_LIMIT_WINDOW seconds, sliding). Written here rather than taken from @fastify/rate-limit,
// which counts fixed windows.
//
// Algorithm: sliding log (exact). Each client key keeps the times of its allowed requests within
// the last window; a request is allowed when fewer than `max` are logged in (now - window, now].
// Refused requests are not logged, so a client that keeps retrying still gets `max` per window.
// Retry-After is the exact wait until the oldest logged request leaves the window (rounded up to
// whole seconds, at least 1).
//
// Memory is bounded: a key holds at most `max` timestamps; keys idle for a whole window are evicted
// (keys are kept in least-recently-seen order, so each hit evicts from the front in amortised O(1));
// and at most `maxKeys` keys are kept: beyond that the least recently seen key is forgotten (that
// client starts afresh: the limiter fails open rather than growing without bound).

export type HitResult = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export interface LimiterOptions {
  /** Most client keys remembered at once (default 10000). */
  maxKeys?: number;
  /** Clock used when hit() is given no time (default Date.now). */
  now?: () => number;
}

interface ClientLog {
  /** Allowed request times, ascending; entries before `head` are expired. */
  times: number[];
  head: number;
  /** Last hit (allowed or not). */
  last: number;
}

export class SlidingWindowLimiter {
  readonly max: number;
  readonly windowMs: number;
  readonly maxKeys: number;
  private readonly now: () => number;
  private readonly clients = new Map<string, ClientLog>();

  constructor(max: number, windowSeconds: number, opts: LimiterOptions = {}) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`rate limit max must be a positive integer, got ${max}`);
    if (!(windowSeconds > 0) || !Number.isFinite(windowSeconds)) throw new RangeError(`rate limit window must be positive seconds, got ${windowSeconds}`);
    const maxKeys = opts.maxKeys ?? 10_000;
    if (!Number.isInteger(maxKeys) || maxKeys < 1) throw new RangeError(`rate limit maxKeys must be a positive integer, got ${maxKeys}`);
    this.max = max;
    this.windowMs = windowSeconds * 1000;
    this.maxKeys = maxKeys;
    this.now = opts.now ?? Date.now;
  }

  /** Counts one request of `key` at `nowMs`, unless the key already has `max` in the window. */
  hit(key: string, nowMs: number = this.now()): HitResult {
    this.evictIdle(nowMs);
    let log = this.clients.get(key);
    if (log)
      this.clients.delete(key); // re-inserted below: the map stays in least-recently-seen order
    else log = { times: [], head: 0, last: nowMs };
    this.clients.set(key, log);
    log.last = nowMs;

    const cutoff = nowMs - this.windowMs;
    while (log.head < log.times.length && log.times[log.head]! <= cutoff) log.head++;
    if (log.head > 0 && log.head * 2 >= log.times.length) {
      log.times = log.times.slice(log.head);
      log.head = 0;
    }

    if (log.times.length - log.head >= this.max) {
      const waitMs = log.times[log.head]! + this.windowMs - nowMs;
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
    }
    log.times.push(nowMs);
    while (this.clients.size > this.maxKeys) {
      const oldest = this.clients.keys().next().value as string;
      this.clients.delete(oldest);
    }
    return { allowed: true };
  }

  /** Takes back one request of `key` counted at `atMs` (an attempt that turned out not to count). */
  refund(key: string, atMs: number): void {
    const log = this.clients.get(key);
    if (!log) return;
    const i = log.times.lastIndexOf(atMs);
    if (i >= log.head) log.times.splice(i, 1);
  }

  /** Number of client keys currently remembered. */
  get size(): number {
    return this.clients.size;
  }

  /** Forgets keys whose last hit is a whole window old (all their requests have expired). */
  evictIdle(nowMs: number = this.now()): void {
    const cutoff = nowMs - this.windowMs;
    for (const [key, log] of this.clients) {
      if (log.last > cutoff) break; // everything after this was seen more recently
      this.clients.delete(key);
    }
  }
}

export type LoginAttempt = { outcome: 'ok' } | { outcome: 'wrong' } | { outcome: 'limited'; retryAfterSeconds: number; detail: string };

/**
 * Failed logins per client (the console's and the daemon's login). A client with `max` failures in
 * the window is refused before its password is checked, whatever the password: past the limit a
 * right guess is refused as a wrong one is, so guessing stops there. Each attempt holds a slot while
 * its check runs, so concurrent guesses cannot all get past the limit before the first failure is
 * counted; a success gives its slot back (successes never lock anyone out).
 */
export class LoginFailureLimiter {
  private readonly failures: SlidingWindowLimiter;

  constructor(
    max: number,
    windowSeconds: number,
    private readonly now: () => number = Date.now,
  ) {
    this.failures = new SlidingWindowLimiter(max, windowSeconds, { now });
  }

  async attempt(client: string, check: () => Promise<boolean>): Promise<LoginAttempt> {
    const at = this.now();
    const hit = this.failures.hit(client, at);
    if (!hit.allowed) {
      return {
        outcome: 'limited',
        retryAfterSeconds: hit.retryAfterSeconds,
        detail: `too many failed logins from ${client}; retry in ${hit.retryAfterSeconds} s`,
      };
    }
    let ok: boolean;
    try {
      ok = await check();
    } catch (e) {
      this.failures.refund(client, at); // the check failed (a database down), not the password
      throw e;
    }
    if (ok) this.failures.refund(client, at);
    return ok ? { outcome: 'ok' } : { outcome: 'wrong' };
  }
}
