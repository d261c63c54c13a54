import { describe, expect, it } from 'vitest';
import { SlidingWindowLimiter } from '../../src/auth/rate-limit.js';

const T0 = 1_700_000_000_000;

describe('SlidingWindowLimiter', () => {
  it('allows max requests per window, then refuses with the wait until the oldest leaves', () => {
    const l = new SlidingWindowLimiter(3, 60);
    expect(l.hit('a', T0)).toEqual({ allowed: true });
    expect(l.hit('a', T0 + 10_000)).toEqual({ allowed: true });
    expect(l.hit('a', T0 + 20_000)).toEqual({ allowed: true });
    // oldest request (T0) leaves the window at T0 + 60 s
    expect(l.hit('a', T0 + 30_000)).toEqual({ allowed: false, retryAfterSeconds: 30 });
    expect(l.hit('a', T0 + 59_001)).toEqual({ allowed: false, retryAfterSeconds: 1 });
    expect(l.hit('a', T0 + 59_999)).toEqual({ allowed: false, retryAfterSeconds: 1 });
    expect(l.hit('a', T0 + 60_000)).toEqual({ allowed: true });
  });

  it('slides: capacity comes back one request at a time, not all at a window boundary', () => {
    const l = new SlidingWindowLimiter(3, 60);
    l.hit('a', T0);
    l.hit('a', T0 + 10_000);
    l.hit('a', T0 + 20_000);
    expect(l.hit('a', T0 + 60_000).allowed).toBe(true); // T0 expired; T0+10s, +20s, +60s logged
    expect(l.hit('a', T0 + 60_500)).toEqual({ allowed: false, retryAfterSeconds: 10 }); // until T0+70s
    expect(l.hit('a', T0 + 70_000).allowed).toBe(true);
    expect(l.hit('a', T0 + 70_001)).toEqual({ allowed: false, retryAfterSeconds: 10 }); // until T0+80s
    // a fixed-window counter would have allowed a burst of 3 right after T0+60s; here no more than
    // 3 are ever allowed in any 60 s span
  });

  it('never allows more than max in any window span (random traffic)', () => {
    const l = new SlidingWindowLimiter(5, 2);
    const allowed: number[] = [];
    let t = T0;
    let seed = 42;
    for (let i = 0; i < 2000; i++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      t += seed % 700;
      if (l.hit('k', t).allowed) allowed.push(t);
    }
    for (let i = 5; i < allowed.length; i++) expect(allowed[i]! - allowed[i - 5]!).toBeGreaterThanOrEqual(2000);
    expect(allowed.length).toBeGreaterThan(100);
  });

  it('does not count refused requests', () => {
    const l = new SlidingWindowLimiter(1, 10);
    expect(l.hit('a', T0).allowed).toBe(true);
    for (let i = 1; i < 100; i++) expect(l.hit('a', T0 + i * 50).allowed).toBe(false);
    expect(l.hit('a', T0 + 10_000).allowed).toBe(true);
  });

  it('keeps clients apart', () => {
    const l = new SlidingWindowLimiter(1, 60);
    expect(l.hit('10.0.0.1', T0).allowed).toBe(true);
    expect(l.hit('10.0.0.1', T0).allowed).toBe(false);
    expect(l.hit('10.0.0.2', T0).allowed).toBe(true);
  });

  it('rounds Retry-After up to whole seconds, at least 1', () => {
    const l = new SlidingWindowLimiter(1, 1.5);
    l.hit('a', T0);
    expect(l.hit('a', T0)).toEqual({ allowed: false, retryAfterSeconds: 2 });
    expect(l.hit('a', T0 + 1_499)).toEqual({ allowed: false, retryAfterSeconds: 1 });
  });

  it('evicts keys idle for a whole window', () => {
    const l = new SlidingWindowLimiter(10, 60);
    for (let i = 0; i < 100; i++) l.hit(`ip${i}`, T0 + i);
    expect(l.size).toBe(100);
    l.hit('ip5', T0 + 30_000); // ip5 active again
    expect(l.size).toBe(100);
    l.hit('late', T0 + 60_050); // ip0..ip50 (but not ip5) are a whole window old
    expect(l.size).toBe(100 - 51 + 1 + 1);
    l.evictIdle(T0 + 200_000);
    expect(l.size).toBe(0);
  });

  it('bounds the number of keys, forgetting the least recently seen', () => {
    const l = new SlidingWindowLimiter(1, 60, { maxKeys: 3 });
    l.hit('a', T0);
    l.hit('b', T0 + 1);
    l.hit('c', T0 + 2);
    l.hit('a', T0 + 3); // refused, but a is now the most recently seen
    l.hit('d', T0 + 4); // b is forgotten
    expect(l.size).toBe(3);
    expect(l.hit('b', T0 + 5).allowed).toBe(true); // b starts afresh (c is forgotten now)
    expect(l.hit('a', T0 + 6).allowed).toBe(false);
    expect(l.hit('d', T0 + 7).allowed).toBe(false);
  });

  it('keeps at most max timestamps per key under sustained traffic', () => {
    const l = new SlidingWindowLimiter(4, 1);
    for (let i = 0; i < 10_000; i++) l.hit('a', T0 + i * 10);
    const log = (l as unknown as { clients: Map<string, { times: number[] }> }).clients.get('a')!;
    expect(log.times.length).toBeLessThanOrEqual(8);
  });

  it('uses the injected clock when no time is given', () => {
    let now = T0;
    const l = new SlidingWindowLimiter(1, 5, { now: () => now });
    expect(l.hit('a').allowed).toBe(true);
    expect(l.hit('a')).toEqual({ allowed: false, retryAfterSeconds: 5 });
    now += 5_000;
    expect(l.hit('a').allowed).toBe(true);
  });

  it('refuses nonsensical settings', () => {
    expect(() => new SlidingWindowLimiter(0, 60)).toThrow(RangeError);
    expect(() => new SlidingWindowLimiter(1.5, 60)).toThrow(RangeError);
    expect(() => new SlidingWindowLimiter(1, 0)).toThrow(RangeError);
    expect(() => new SlidingWindowLimiter(1, 60, { maxKeys: 0 })).toThrow(RangeError);
  });
});
