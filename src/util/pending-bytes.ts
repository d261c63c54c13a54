// The bytes a stream splitter holds between reads, in one buffer that grows by doubling: each byte
// read is copied about twice at most, however many reads one value spans (joining the held bytes
// with every read copied them all again, quadratic in the size of a value that spans many reads).
// It also tells a caller that rescans an incomplete value from its start when a rescan is worth it:
// once the bytes from that start have doubled (or a length it knows it needs has arrived), so a
// value of n reads is scanned O(log n) times. A small value is looked at on the read that brings
// it, as before; only one larger than the reads that bring it waits (for at most its size again,
// or the end of the stream).

const EMPTY = Buffer.alloc(0);

/** Totals over every instance, for tests that check the work stays linear. */
export const pendingBytesTotals = { copiedBytes: 0, incompleteLooks: 0 };

export class PendingBytes {
  /** The held bytes are buf[start, end); past `end`, an owned buf has room to grow into. */
  private buf: Buffer = EMPTY;
  private start = 0;
  private end = 0;
  /** buf was allocated here: its room past `end` is free (a borrowed read is never written to). */
  private owned = false;
  /** Stream offsets: bytes consumed before `start`, bytes pushed in all. */
  private consumedTotal = 0;
  private pushedTotal = 0;
  /** No look is due before this many bytes were pushed in all. */
  private lookAt = 0;

  get length(): number {
    return this.end - this.start;
  }

  /**
   * The held bytes, one view. Views stay valid: bytes once held are never overwritten (the buffer
   * grows into a new one), so pieces handed on as views of it need no copy.
   */
  get bytes(): Buffer {
    return this.buf.subarray(this.start, this.end);
  }

  /** Whether the held bytes are worth looking at again (always, unless incomplete() said otherwise). */
  get ready(): boolean {
    return this.pushedTotal >= this.lookAt;
  }

  push(b: Buffer): void {
    if (b.length === 0) return;
    this.pushedTotal += b.length;
    if (this.length === 0) {
      // Nothing held: the read itself, no copy.
      this.buf = b;
      this.start = 0;
      this.end = b.length;
      this.owned = false;
      return;
    }
    if (this.owned && this.buf.length - this.end >= b.length) {
      b.copy(this.buf, this.end);
      this.end += b.length;
      pendingBytesTotals.copiedBytes += b.length;
      return;
    }
    const held = this.length;
    const next = Buffer.allocUnsafe(2 * (held + b.length));
    this.buf.copy(next, 0, this.start, this.end);
    b.copy(next, held);
    pendingBytesTotals.copiedBytes += held + b.length;
    this.buf = next;
    this.start = 0;
    this.end = held + b.length;
    this.owned = true;
  }

  /** Drops the first n held bytes (views of them stay valid). */
  consume(n: number): void {
    if (n <= 0) return;
    if (n > this.length) throw new RangeError(`consume(${n}) with ${this.length} bytes held`);
    this.start += n;
    this.consumedTotal += n;
    if (this.start === this.end) {
      this.buf = EMPTY;
      this.start = this.end = 0;
      this.owned = false;
    }
  }

  /**
   * The caller looked at the held bytes and found the value from offset `from` on incomplete: the
   * next look is due once as many bytes again have arrived, or once `needed` bytes (counted from
   * the start of the held bytes) are held, whichever comes first. A bound the caller checks on its
   * looks (a largest value, a junk limit) goes in `needed`, so that it is checked as soon as it is passed.
   */
  incomplete(from = 0, needed = Infinity): void {
    pendingBytesTotals.incompleteLooks++;
    const again = this.pushedTotal + Math.max(1, this.length - from);
    this.lookAt = Math.min(again, this.consumedTotal + Math.max(needed, this.length + 1));
  }
}
