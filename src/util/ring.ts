// A fixed-capacity ring, oldest entries overwritten: O(1) push with no shifting, for the console's
// activity log and trap event list.
export class Ring<T> {
  private buf: (T | undefined)[];
  private head = 0;
  private count = 0;

  constructor(private cap: number) {
    this.buf = new Array<T | undefined>(cap);
  }

  get size(): number {
    return this.count;
  }

  push(e: T): void {
    this.buf[this.head] = e;
    this.head = (this.head + 1) % this.cap;
    if (this.count < this.cap) this.count++;
  }

  /** Newest first, at most n. */
  newest(n = this.count): T[] {
    const out: T[] = [];
    for (let k = 0, i = this.head; k < Math.min(n, this.count); k++) {
      i = (i - 1 + this.cap) % this.cap;
      out.push(this.buf[i]!);
    }
    return out;
  }

  /** Changes the capacity, keeping the newest entries. */
  resize(cap: number): void {
    if (cap === this.cap) return;
    const keep = this.newest(cap).reverse();
    this.cap = cap;
    this.clear();
    for (const e of keep) this.push(e);
  }

  /** Empties the ring; returns how many entries it held. */
  clear(): number {
    const n = this.count;
    this.buf = new Array<T | undefined>(this.cap);
    this.head = 0;
    this.count = 0;
    return n;
  }
}
