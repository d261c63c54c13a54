// Sequence numbers seen at a sink: how many times each arrived, so that a lost record (0) and a
// duplicate (2 or more) are both counted.

export const SEQ_MARK = /soak-seq-(\d+)/;

export class SeqTally {
  private counts = new Uint8Array(1024);
  private seen = 0;

  add(seq: number, times = 1) {
    if (!Number.isInteger(seq) || seq < 0) return;
    if (seq >= this.counts.length) {
      let n = this.counts.length;
      while (n <= seq) n *= 2;
      const grown = new Uint8Array(n);
      grown.set(this.counts);
      this.counts = grown;
    }
    this.counts[seq] = Math.min(255, this.counts[seq]! + times);
    this.seen += times;
  }

  /** Adds the sequence number of every `soak-seq-N` mark in `text` (one per record). */
  addText(text: string) {
    const m = SEQ_MARK.exec(text);
    if (m) this.add(Number(m[1]));
  }

  /** Against `sent` numbers 0..sent-1: those never seen, the extra copies, and a few missing ones. */
  against(sent: number): { sent: number; received: number; missing: number; duplicates: number; firstMissing: number[] } {
    let missing = 0;
    let duplicates = 0;
    const firstMissing: number[] = [];
    for (let i = 0; i < sent; i++) {
      const c = i < this.counts.length ? this.counts[i]! : 0;
      if (c === 0) {
        missing++;
        if (firstMissing.length < 10) firstMissing.push(i);
      } else duplicates += c - 1;
    }
    return { sent, received: this.seen, missing, duplicates, firstMissing };
  }

  reset() {
    this.counts.fill(0);
    this.seen = 0;
  }
}
