// The work the stream splitters' PendingBytes did (src/util/pending-bytes.ts): tests check it stays
// linear in the bytes read (a count, not a timing).
import { pendingBytesTotals } from '../../src/util/pending-bytes.js';

export async function workOf(run: () => Promise<unknown>): Promise<{ copiedBytes: number; incompleteLooks: number }> {
  const before = { ...pendingBytesTotals };
  await run();
  return {
    copiedBytes: pendingBytesTotals.copiedBytes - before.copiedBytes,
    incompleteLooks: pendingBytesTotals.incompleteLooks - before.incompleteLooks,
  };
}

/** `buf` as `n` reads of (nearly) equal size. */
export async function* readsOf(buf: Buffer, n: number): AsyncGenerator<Buffer> {
  const size = Math.ceil(buf.length / n);
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}

/**
 * A value that arrives in 64 reads is scanned again about log2(64) times, and its bytes copied
 * about twice: joining and rescanning at every read (quadratic) made that 64 looks and ~32 copies.
 */
export const LINEAR_64_READS = { maxLooks: 8, maxCopiesPerByte: 3 };
