import { describe, expect, it } from 'vitest';
import { PendingBytes } from '../../src/util/pending-bytes.js';
import { workOf } from '../helpers/pending-work.js';

const bytesOf = (n: number, seed: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff));

describe('PendingBytes', () => {
  it('holds what was pushed, less what was consumed, in order; views handed out stay as they were', () => {
    const p = new PendingBytes();
    const all: Buffer[] = [];
    const views: [Buffer, Buffer][] = [];
    let consumed = 0;
    for (let i = 0; i < 200; i++) {
      const b = bytesOf(1 + ((i * 37) % 97), i);
      all.push(b);
      p.push(b);
      const expected = Buffer.concat(all).subarray(consumed);
      expect(p.bytes.equals(expected)).toBe(true);
      expect(p.length).toBe(expected.length);
      if (i % 3 === 0) {
        const n = Math.floor(p.length / 2);
        views.push([p.bytes.subarray(0, n), Buffer.from(expected.subarray(0, n))]);
        p.consume(n);
        consumed += n;
      }
    }
    // The buffer grew many times since: no view was overwritten.
    for (const [view, copy] of views) expect(view.equals(copy)).toBe(true);
    expect(() => p.consume(p.length + 1)).toThrow(RangeError);
  });

  it('holds a read that comes while nothing is held without copying it', async () => {
    const p = new PendingBytes();
    const b = bytesOf(1000, 1);
    const work = await workOf(async () => p.push(b));
    expect(work.copiedBytes).toBe(0);
    expect(p.bytes.buffer).toBe(b.buffer);
  });

  it('copies a value that arrives in 4096 reads about twice, not once per read', async () => {
    const p = new PendingBytes();
    const work = await workOf(async () => {
      for (let i = 0; i < 4096; i++) p.push(bytesOf(16, i));
    });
    expect(p.length).toBe(4096 * 16);
    // Joining the held bytes with each read copied 4096 * 4097 / 2 * 16 bytes (~134 MB).
    expect(work.copiedBytes).toBeLessThanOrEqual(3 * 4096 * 16);
  });

  it('a caller that rescans an incomplete value from its start looks O(log n) times over n reads', async () => {
    const p = new PendingBytes();
    let looks = 0;
    const work = await workOf(async () => {
      for (let i = 0; i < 64; i++) {
        p.push(bytesOf(1000, i));
        if (!p.ready) continue;
        looks++;
        p.incomplete(0); // still incomplete
      }
    });
    expect(looks).toBe(7); // at 1, 2, 4, 8, 16, 32 and 64 reads
    expect(work.incompleteLooks).toBe(7);
  });

  it('a look is due at once for a small value, and as soon as a needed length or a bound is reached', () => {
    const p = new PendingBytes();
    p.push(bytesOf(100, 0));
    p.consume(90);
    p.incomplete(0); // 10 bytes of a value: the next read of 10 or more completes a look's worth
    p.push(bytesOf(9, 1));
    expect(p.ready).toBe(false);
    p.push(bytesOf(1, 2));
    expect(p.ready).toBe(true);
    // Bytes before `from` (complete values not yet cut) do not count towards the doubling.
    p.incomplete(15);
    p.push(bytesOf(5, 3));
    expect(p.ready).toBe(true);
    // A needed length (from the start of the held bytes) comes before the doubling.
    p.incomplete(0, p.length + 3);
    p.push(bytesOf(2, 4));
    expect(p.ready).toBe(false);
    p.push(bytesOf(1, 5));
    expect(p.ready).toBe(true);
    // Consumed bytes are not held: a needed length counts from what is held now.
    p.consume(p.length - 4);
    p.incomplete(0, 6);
    p.push(bytesOf(1, 6));
    expect(p.ready).toBe(false);
    p.push(bytesOf(1, 7));
    expect(p.ready).toBe(true);
  });
});
