/**
 * The tests' waits. A test never sleeps a fixed time: it waits for the condition it needs with
 * `until`, and where there is no condition it says why time must pass: `quiet` (nothing more may
 * arrive), `elapse` (the product's own clock must move on), `pace` (the test's own input is slow on
 * purpose).
 */

const ms = (n: number) => new Promise<void>((r) => setTimeout(r, n));

/**
 * Polls `f` (sync or async) every `everyMs` until it gives a truthy value, and returns that value.
 * Fails after `timeoutMs`, naming `what` it waited for (or, without `what`, quoting the condition).
 * Use it wherever the test waits for something to happen: a record to arrive, a status to change,
 * a port to answer. A condition that costs a request or a process can poll less often (`everyMs`).
 */
export async function until<T>(
  f: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  timeoutMs = 10_000,
  what?: string,
  everyMs = 20,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what ?? f.toString().replace(/\s+/g, ' ')}`);
    await ms(everyMs);
  }
}

/**
 * Lets `windowMs` pass in which nothing more should arrive; the test then asserts that nothing
 * more did (no duplicate, no redelivery, no second run). Use it only before such an assertion:
 * to wait for something that does arrive, use `until`.
 */
export function quiet(windowMs: number): Promise<void> {
  return ms(windowMs);
}

/**
 * Lets `periodMs` of the product's own clock pass (a retention age, a TTL, a restart back-off, a
 * rate window) when what the test checks next is a consequence of that time having passed and there
 * is no event to wait for. Not for waiting on something that arrives: use `until`.
 */
export function elapse(periodMs: number): Promise<void> {
  return ms(periodMs);
}

/**
 * Spaces out the test's own input on purpose: a peer that answers slowly, a gap between sends,
 * a reader that lets the receiver catch up. The delay is part of what the test feeds the product.
 */
export function pace(gapMs: number): Promise<void> {
  return ms(gapMs);
}
