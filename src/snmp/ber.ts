// Compact BER codec for SNMP (X.690 subset: definite lengths, the universal and SNMP
// application types). Hand-written instead of net-snmp's asn1-ber: a forward writer into one
// reusable buffer and a cursor reader that builds no intermediate objects keep the walker and the
// agent above the throughput goals (see docs/snmp.md).

export class BerError extends Error {
  override name = 'BerError';
}

export const Tag = {
  Integer: 0x02,
  OctetString: 0x04,
  Null: 0x05,
  Oid: 0x06,
  Sequence: 0x30,
  IpAddress: 0x40,
  Counter32: 0x41,
  Gauge32: 0x42,
  TimeTicks: 0x43,
  Opaque: 0x44,
  Counter64: 0x46,
  NoSuchObject: 0x80,
  NoSuchInstance: 0x81,
  EndOfMibView: 0x82,
} as const;

const scratchArcs: number[] = [];
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Forward writer: a constructed value is opened, filled, then closed, which back-patches its length. */
export class BerWriter {
  buf: Buffer;
  pos = 0;
  private stack: number[] = [];

  constructor(size = 2048) {
    this.buf = Buffer.allocUnsafe(size);
  }

  reset(): this {
    this.pos = 0;
    this.stack.length = 0;
    return this;
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n + 256));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** Opens a constructed value; the length byte is patched (and widened) by end(). */
  begin(tag: number): void {
    this.ensure(2);
    this.buf[this.pos++] = tag;
    this.stack.push(this.pos);
    this.buf[this.pos++] = 0;
  }

  end(): void {
    const at = this.stack.pop()!;
    const len = this.pos - at - 1;
    if (len < 0x80) {
      this.buf[at] = len;
      return;
    }
    const extra = len < 0x100 ? 1 : len < 0x10000 ? 2 : 3;
    this.ensure(extra);
    this.buf.copyWithin(at + 1 + extra, at + 1, this.pos);
    this.pos += extra;
    this.buf[at] = 0x80 | extra;
    for (let i = extra; i >= 1; i--) this.buf[at + i] = (len >>> ((extra - i) * 8)) & 0xff;
  }

  private header(tag: number, len: number): void {
    this.ensure(len + 6);
    const b = this.buf;
    b[this.pos++] = tag;
    if (len < 0x80) b[this.pos++] = len;
    else if (len < 0x100) {
      b[this.pos++] = 0x81;
      b[this.pos++] = len;
    } else if (len < 0x10000) {
      b[this.pos++] = 0x82;
      b[this.pos++] = len >> 8;
      b[this.pos++] = len & 0xff;
    } else {
      b[this.pos++] = 0x83;
      b[this.pos++] = len >> 16;
      b[this.pos++] = (len >> 8) & 0xff;
      b[this.pos++] = len & 0xff;
    }
  }

  /** Signed integer (two's complement, minimal length); range is the caller's concern. */
  int(value: number, tag: number = Tag.Integer): void {
    let n = 1;
    while (n < 4 && (value < -(2 ** (8 * n - 1)) || value >= 2 ** (8 * n - 1))) n++;
    this.header(tag, n);
    // value is within Integer32, so >> sign-extends correctly.
    for (let i = n - 1; i >= 0; i--) this.buf[this.pos++] = (value >> (i * 8)) & 0xff;
  }

  /** Unsigned value encoded as a non-negative INTEGER of the given tag (Counter32, Gauge32, TimeTicks, Counter64). */
  uint(value: number | bigint, tag: number): void {
    // Counters up to 2^53 (every Counter32, and Counter64 for years at line rate) in number arithmetic: no BigInt work.
    if (typeof value === 'bigint' && value >= 0n && value <= MAX_SAFE) value = Number(value);
    if (typeof value === 'number' && value < 0x80000000) {
      const n = value < 0x80 ? 1 : value < 0x8000 ? 2 : value < 0x800000 ? 3 : 4;
      this.header(tag, n);
      for (let i = n - 1; i >= 0; i--) this.buf[this.pos++] = (value >>> (i * 8)) & 0xff;
      return;
    }
    if (typeof value === 'number' && value <= Number.MAX_SAFE_INTEGER) {
      // The bits above 32 (below 2^21, so 1-3 bytes with a clear sign bit; 0 gives the 0x00 a value
      // from 2^31 needs), then the low 32.
      const hi = Math.floor(value / 0x100000000);
      const lo = value >>> 0;
      const n = hi < 0x80 ? 1 : hi < 0x8000 ? 2 : 3;
      this.header(tag, n + 4);
      for (let i = n - 1; i >= 0; i--) this.buf[this.pos++] = (hi >>> (i * 8)) & 0xff;
      for (let i = 3; i >= 0; i--) this.buf[this.pos++] = (lo >>> (i * 8)) & 0xff;
      return;
    }
    let v = BigInt(value);
    const bytes: number[] = [];
    do {
      bytes.push(Number(v & 0xffn));
      v >>= 8n;
    } while (v > 0n);
    if (bytes[bytes.length - 1]! & 0x80) bytes.push(0);
    this.header(tag, bytes.length);
    for (let i = bytes.length - 1; i >= 0; i--) this.buf[this.pos++] = bytes[i]!;
  }

  octets(data: Buffer | Uint8Array, tag: number = Tag.OctetString): void {
    this.header(tag, data.length);
    this.buf.set(data, this.pos);
    this.pos += data.length;
  }

  /** An OCTET STRING of zero bytes whose position is returned (the USM authentication parameters). */
  placeholder(len: number): number {
    this.header(Tag.OctetString, len);
    const at = this.pos;
    this.buf.fill(0, at, at + len);
    this.pos += len;
    return at;
  }

  /** Appends bytes that are already BER (an unencrypted scoped PDU). */
  raw(data: Buffer | Uint8Array): void {
    this.ensure(data.length);
    this.buf.set(data, this.pos);
    this.pos += data.length;
  }

  /** Appends src[start, end) (pre-encoded varbinds): a loop for the short copies that are most of them. */
  copyFrom(src: Uint8Array, start: number, end: number): void {
    const n = end - start;
    this.ensure(n);
    const b = this.buf;
    if (n < 64) for (let i = start, p = this.pos; i < end; i++, p++) b[p] = src[i]!;
    else b.set(src.subarray(start, end), this.pos);
    this.pos += n;
  }

  string(text: string): void {
    this.octets(Buffer.from(text, 'utf8'));
  }

  nul(tag: number = Tag.Null): void {
    this.header(tag, 0);
  }

  oid(parts: readonly number[]): void {
    if (parts.length < 2) throw new BerError(`OID needs at least two arcs: ${parts.join('.')}`);
    this.ensure(parts.length * 5 + 6);
    const b = this.buf;
    b[this.pos++] = Tag.Oid;
    const lenAt = this.pos++;
    const start = this.pos;
    this.base128(parts[0]! * 40 + parts[1]!);
    for (let i = 2; i < parts.length; i++) this.base128(parts[i]!);
    const len = this.pos - start;
    if (len >= 0x80) {
      // Rare (over ~100 arcs): widen the length in place.
      this.stack.push(lenAt);
      this.end();
    } else b[lenAt] = len;
  }

  /** oid() of a dotted numeric OID, without splitting it into an array first (the encoder's hot path). */
  oidText(text: string): void {
    const arcs = scratchArcs;
    arcs.length = 0;
    let v = 0;
    let digits = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c >= 48 && c <= 57) {
        v = v * 10 + c - 48;
        digits++;
      } else if (c === 46 && digits > 0 && digits <= 15) {
        arcs.push(v);
        v = 0;
        digits = 0;
      } else return this.oid(text.split('.').map(Number)); // anything unusual: as oidParts reads it
    }
    if (digits === 0 || digits > 15) return this.oid(text.split('.').map(Number));
    arcs.push(v);
    this.oid(arcs);
  }

  private base128(v: number): void {
    const b = this.buf;
    if (v < 0x80) {
      b[this.pos++] = v;
      return;
    }
    let n = 0;
    for (let t = v; t > 0; t = Math.floor(t / 128)) n++;
    for (let i = n - 1; i >= 0; i--) {
      const digit = Math.floor(v / 128 ** i) % 128;
      b[this.pos++] = i === 0 ? digit : digit | 0x80;
    }
  }

  /** A copy of the bytes written (the writer's buffer is reused). */
  toBuffer(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.pos));
  }
}

/** Decoded OIDs remembered by their BER bytes (direct-mapped; a collision replaces the entry). */
const OID_CACHE_SIZE = 8192;
const OID_CACHE_MAX_BYTES = 48;
/** Entry k: its BER bytes at k * OID_CACHE_MAX_BYTES, its length at oidCacheLen[k] (0: empty). */
const oidCacheBytes = new Uint8Array(OID_CACHE_SIZE * OID_CACHE_MAX_BYTES);
const oidCacheLen = new Uint8Array(OID_CACHE_SIZE);
const oidCacheText: (string | undefined)[] = new Array(OID_CACHE_SIZE);
/** A flat (sequential one-byte) copy of an ASCII string: a rope, even once flattened, stays an indirection. */
const flat = (s: string): string => Buffer.from(s, 'latin1').toString('latin1');

/** Cursor reader over one message; every read checks bounds and throws BerError. */
export class BerReader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start = 0,
    readonly limit = buf.length,
  ) {
    this.pos = start;
  }

  get done(): boolean {
    return this.pos >= this.limit;
  }

  peekTag(): number {
    if (this.pos >= this.limit) throw new BerError('truncated message');
    return this.buf[this.pos]!;
  }

  /** The tag read by the last header() or len(). */
  tag = 0;

  /** Reads tag and length; returns the length and leaves pos at the content. */
  header(expect?: number): { tag: number; len: number } {
    const len = this.len(expect);
    return { tag: this.tag, len };
  }

  /** header() without the object: the length (the tag is in `tag`). */
  len(expect?: number): number {
    const b = this.buf;
    if (this.pos + 2 > this.limit) throw new BerError('truncated message');
    const tag = b[this.pos++]!;
    if (expect !== undefined && tag !== expect) throw new BerError(`expected tag 0x${expect.toString(16)}, got 0x${tag.toString(16)} at byte ${this.pos - 1}`);
    this.tag = tag;
    let len = b[this.pos++]!;
    if (len & 0x80) {
      const n = len & 0x7f;
      if (n === 0 || n > 4 || this.pos + n > this.limit) throw new BerError(`bad length at byte ${this.pos - 1}`);
      len = 0;
      for (let i = 0; i < n; i++) len = len * 256 + b[this.pos++]!;
    }
    if (this.pos + len > this.limit) throw new BerError(`length ${len} at byte ${this.pos} runs past the end`);
    return len;
  }

  /** Enters a SEQUENCE (or PDU) and returns its end offset. */
  sequence(expect: number = Tag.Sequence): number {
    const len = this.len(expect);
    return this.pos + len;
  }

  int(expect: number = Tag.Integer): number {
    const len = this.len(expect);
    if (len < 1 || len > 5) throw new BerError(`integer of ${len} bytes`);
    const b = this.buf;
    const negative = b[this.pos]! & 0x80;
    let v = 0;
    for (let i = 0; i < len; i++) v = v * 256 + b[this.pos++]!;
    return negative ? v - 256 ** len : v;
  }

  /** Unsigned content of any INTEGER-like tag as a number (32-bit types). */
  uint32(len: number): number {
    if (len < 1 || len > 5) throw new BerError(`unsigned integer of ${len} bytes`);
    let v = 0;
    for (let i = 0; i < len; i++) v = v * 256 + this.buf[this.pos++]!;
    return v;
  }

  uint64(len: number): bigint {
    if (len < 1 || len > 9) throw new BerError(`Counter64 of ${len} bytes`);
    let v = 0n;
    for (let i = 0; i < len; i++) v = (v << 8n) | BigInt(this.buf[this.pos++]!);
    return v;
  }

  octets(expect: number = Tag.OctetString): Buffer {
    const len = this.len(expect);
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }

  /** Offset of the content of the next OCTET STRING (for the USM authentication parameters). */
  octetsAt(): { at: number; len: number } {
    const len = this.len(Tag.OctetString);
    const at = this.pos;
    this.pos += len;
    return { at, len };
  }

  /**
   * Sub-identifiers are at most 2^32-1 (RFC 2578) and an OID at most 128 of them, as net-snmp
   * checks: a longer arc would decode to Infinity (and hang the writer's base-128 loop on echo).
   */
  oidContent(len: number): string {
    const b = this.buf;
    const end = this.pos + len;
    if (len === 0) throw new BerError('empty OID');
    // The same OIDs come back in every answer of every agent of a fleet: an OID whose bytes were
    // decoded before returns that (flat, shared) string, without building and checking it again.
    let h = len;
    if (len <= OID_CACHE_MAX_BYTES) {
      for (let i = this.pos; i < end; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
      h = (h ^ (h >>> 15)) & (OID_CACHE_SIZE - 1);
      if (oidCacheLen[h] === len) {
        let same = true;
        for (let i = h * OID_CACHE_MAX_BYTES, j = this.pos; j < end; i++, j++)
          if (oidCacheBytes[i] !== b[j]) {
            same = false;
            break;
          }
        if (same) {
          this.pos = end;
          return oidCacheText[h]!;
        }
      }
    } else h = -1;
    const at = this.pos;
    if (b[end - 1]! & 0x80) throw new BerError('OID ends inside a sub-identifier');
    let out = '';
    let v = 0;
    let arcs = 0;
    for (let i = this.pos; i < end; i++) {
      const c = b[i]!;
      v = v * 128 + (c & 0x7f);
      // The first sub-identifier carries two arcs (2.x: x + 80).
      if (v > (arcs === 0 ? 0xffffffff + 80 : 0xffffffff)) throw new BerError('OID sub-identifier above 4294967295');
      if (c & 0x80) continue;
      if (arcs === 0) {
        out = v < 80 ? `${Math.floor(v / 40)}.${v % 40}` : `2.${v - 80}`;
        arcs = 2;
      } else {
        out += '.' + v;
        if (++arcs > 128) throw new BerError('OID longer than 128 sub-identifiers');
      }
      v = 0;
    }
    this.pos = end;
    if (h >= 0) {
      oidCacheBytes.set(b.subarray(at, end), h * OID_CACHE_MAX_BYTES);
      oidCacheLen[h] = len;
      // A string built by concatenation is a rope: one flat copy, read fast by every user.
      oidCacheText[h] = out = flat(out);
    }
    return out;
  }

  oid(): string {
    const len = this.len(Tag.Oid);
    return this.oidContent(len);
  }

  skip(): void {
    const len = this.len();
    this.pos += len;
  }
}
