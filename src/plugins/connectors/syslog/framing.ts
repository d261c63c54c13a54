// Syslog over TCP (RFC 6587): cuts one connection's byte stream into messages, whatever the
// sizes of the reads. The first frame of a connection decides its framing:
//
// - octet counting (`MSG-LEN SP SYSLOG-MSG`, RFC 6587 3.4.1, RFC 5425): the frame starts with a
//   non-zero digit;
// - non-transparent framing (RFC 6587 3.4.2): anything else (a message starts with `<`); each
//   message ends at LF (a CR before it is dropped; NUL also ends a message, as some senders use it).
//
// A frame may be split anywhere across reads (inside its length prefix, inside the message) and a
// read may hold several frames: the framer keeps what it has not cut yet. A message longer than
// `maxSize` bytes is cut to its first `maxSize` bytes (`truncated`), the rest skipped up to the
// next frame. An octet-counted connection whose next frame does not start with a digit falls back
// to LF framing for the rest of the connection (reported once through `onFallback`).

export interface FramerOptions {
  maxSize: number;
  /** One complete message (a view of the framer's buffer: copy or decode it before returning). */
  onMessage(msg: Buffer, truncated: boolean): void;
  /** An octet-counted connection sent something that is not a length prefix. */
  onFallback?(detail: string): void;
}

export type FramingKind = 'octet-counted' | 'lf';

const LF = 10;
const CR = 13;
const NUL = 0;
const SP = 32;
/** Most digits of a length prefix (a message up to 999,999,999 bytes). */
const MAX_PREFIX_DIGITS = 9;

export class Framer {
  /** Decided by the first frame of the connection. */
  kind: FramingKind | undefined;
  private buf: Buffer = Buffer.alloc(0);
  /** Bytes still to skip: the remainder of a truncated octet-counted frame. */
  private skip = 0;
  /** LF framing: the current message was truncated; skip to the next LF. */
  private skipToLf = false;
  /** Octet counting: the length of the frame being read (after its prefix), or -1 between frames. */
  private need = -1;

  constructor(private readonly opts: FramerOptions) {}

  push(chunk: Buffer): void {
    const b = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    let at = 0;
    const { maxSize, onMessage } = this.opts;
    for (;;) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, b.length - at);
        this.skip -= n;
        at += n;
        if (this.skip > 0) break;
      }
      if (this.skipToLf) {
        const lf = b.indexOf(LF, at);
        if (lf < 0) {
          at = b.length;
          break;
        }
        this.skipToLf = false;
        at = lf + 1;
      }
      if (this.need >= 0) {
        // Inside an octet-counted frame.
        const want = Math.min(this.need, maxSize);
        if (b.length - at < want) break;
        onMessage(b.subarray(at, at + want), this.need > maxSize);
        this.skip = this.need - want;
        at += want;
        this.need = -1;
        continue;
      }
      // Between frames: skip the separators some senders put between them.
      while (at < b.length && (b[at] === LF || b[at] === CR || b[at] === NUL)) at++;
      if (at >= b.length) break;
      const c = b[at]!;
      if (this.kind === undefined) this.kind = c >= 49 && c <= 57 ? 'octet-counted' : 'lf';
      if (this.kind === 'octet-counted') {
        let i = at;
        while (i < b.length && i - at <= MAX_PREFIX_DIGITS && b[i]! >= 48 && b[i]! <= 57) i++;
        if (i === b.length && i - at <= MAX_PREFIX_DIGITS) break; // the prefix continues in the next read
        if (i > at && b[at] !== 48 && b[i] === SP && i - at <= MAX_PREFIX_DIGITS) {
          this.need = Number(b.toString('latin1', at, i));
          at = i + 1;
          continue;
        }
        this.kind = 'lf';
        this.opts.onFallback?.(`expected a length prefix (digits and a space), got ${JSON.stringify(b.toString('latin1', at, Math.min(b.length, at + 16)))}`);
      }
      // LF framing.
      const end = lfEnd(b, at);
      if (end < 0) {
        if (b.length - at > maxSize) {
          onMessage(b.subarray(at, at + maxSize), true);
          at = b.length;
          this.skipToLf = true;
        }
        break;
      }
      let stop = end;
      if (stop > at && b[stop - 1] === CR) stop--;
      if (stop - at > maxSize) onMessage(b.subarray(at, at + maxSize), true);
      else if (stop > at) onMessage(b.subarray(at, stop), false);
      at = end + 1;
    }
    // Keep only the unread tail (a copy, so that a large read is not pinned by a small remainder).
    this.buf = at >= b.length ? Buffer.alloc(0) : Buffer.from(b.subarray(at));
  }

  /**
   * The connection ended: an LF-framed message without its final LF is complete (the sender closed
   * after it). Returns what was left of an incomplete octet-counted frame or prefix, in bytes (lost).
   */
  end(): number {
    const b = this.buf;
    this.buf = Buffer.alloc(0);
    if (!b.length || this.skip > 0 || this.skipToLf) return 0;
    if (this.need >= 0 || this.kind === 'octet-counted') {
      if (this.kind === 'octet-counted' && this.need < 0 && b.every((x) => x === LF || x === CR || x === NUL)) return 0;
      return b.length;
    }
    let stop = b.length;
    while (stop > 0 && (b[stop - 1] === CR || b[stop - 1] === NUL)) stop--;
    if (stop > 0) {
      const max = this.opts.maxSize;
      this.opts.onMessage(b.subarray(0, Math.min(stop, max)), stop > max);
    }
    return 0;
  }
}

/** Index of the LF (or NUL) that ends the message starting at `at`, or -1. */
function lfEnd(b: Buffer, at: number): number {
  const lf = b.indexOf(LF, at);
  const nul = b.indexOf(NUL, at);
  if (nul < 0) return lf;
  if (lf < 0) return nul;
  return Math.min(lf, nul);
}
