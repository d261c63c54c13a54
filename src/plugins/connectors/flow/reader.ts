// Bounds-checked reading of a datagram: every count and length read from the wire is checked
// against the bytes that follow before anything is allocated or looped over, so a hostile datagram
// ends in a FlowDecodeError with a reason, never in a RangeError or a long loop.

/** A datagram that cannot be decoded; the message is the reason (dead-lettered with the bytes). */
export class FlowDecodeError extends Error {
  override name = 'FlowDecodeError';
}

export class Reader {
  constructor(
    readonly buf: Buffer,
    public pos = 0,
    readonly end = buf.length,
  ) {}

  get left(): number {
    return this.end - this.pos;
  }

  need(n: number, what: string): void {
    if (n < 0 || this.pos + n > this.end) throw new FlowDecodeError(`truncated: ${what} needs ${n} bytes at offset ${this.pos}, ${this.left} left`);
  }

  u8(what: string): number {
    this.need(1, what);
    return this.buf[this.pos++]!;
  }

  u16(what: string): number {
    this.need(2, what);
    const v = this.buf.readUInt16BE(this.pos);
    this.pos += 2;
    return v;
  }

  u32(what: string): number {
    this.need(4, what);
    const v = this.buf.readUInt32BE(this.pos);
    this.pos += 4;
    return v;
  }

  u64(what: string): number {
    this.need(8, what);
    const v = Number(this.buf.readBigUInt64BE(this.pos));
    this.pos += 8;
    return v;
  }

  skip(n: number, what: string): void {
    this.need(n, what);
    this.pos += n;
  }

  /** A sub-reader over the next `n` bytes, which this one skips. */
  sub(n: number, what: string): Reader {
    this.need(n, what);
    const r = new Reader(this.buf, this.pos, this.pos + n);
    this.pos += n;
    return r;
  }
}
