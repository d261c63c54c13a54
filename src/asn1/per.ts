// PER (X.691), ALIGNED and UNALIGNED variants: constrained / semi-constrained / unconstrained whole
// numbers, length determinants (with 16K fragments), PER-visible size and value constraints,
// permitted alphabets, extension bits, extension additions (and [[ ]] groups) in open types.
import { decodeString, firstTags, MAX_DEPTH, primitive } from './ber.js';
import type { Asn1Type, Body, Component } from './model.js';
import { bitsValue, enumName, generalizedTime, intValue, realValue, utcTime } from './values.js';

export class PerError extends Error {
  override name = 'PerError';
}

class BitReader {
  /** Position in bits. */
  pos = 0;
  /** Bits charged for elements that took none (a zero-width element counts as one octet). */
  private charged = 0;
  /** Nesting of constructed values being read. */
  depth = 0;
  constructor(
    readonly buf: Buffer,
    readonly aligned: boolean,
    private readonly endBits = buf.length * 8,
  ) {}

  /**
   * A count read from the input: `n` elements of at least one bit each must fit in what is left,
   * so a bogus length cannot loop or allocate beyond the input.
   */
  count(n: number, what: string): void {
    if (n > this.endBits - this.pos - this.charged)
      throw new PerError(`${what} of ${n} elements at bit ${this.pos} cannot fit in the ${this.endBits - this.pos} bits left`);
  }
  /** Charges `bits` for zero-width elements; throws once they exceed what the input could hold. */
  charge(bits: number): void {
    this.charged += bits;
    if (this.pos + this.charged > this.endBits)
      throw new PerError(`more zero-width elements at bit ${this.pos} than the input has octets (each counts as one)`);
  }

  need(n: number): void {
    if (this.pos + n > this.endBits) throw new PerError(`truncated: ${n} bits needed at bit ${this.pos} of ${this.endBits}`);
  }
  bit(): number {
    this.need(1);
    const b = (this.buf[this.pos >> 3]! >> (7 - (this.pos & 7))) & 1;
    this.pos++;
    return b;
  }
  /** n bits as a non-negative number (n <= 48). */
  bits(n: number): number {
    if (n === 0) return 0;
    if (n > 48) return Number(this.bigBits(n));
    this.need(n);
    let v = 0;
    for (let i = 0; i < n; i++) {
      v = v * 2 + ((this.buf[this.pos >> 3]! >> (7 - (this.pos & 7))) & 1);
      this.pos++;
    }
    return v;
  }
  bigBits(n: number): bigint {
    this.need(n);
    let v = 0n;
    for (let i = 0; i < n; i++) {
      v = (v << 1n) | BigInt((this.buf[this.pos >> 3]! >> (7 - (this.pos & 7))) & 1);
      this.pos++;
    }
    return v;
  }
  /** Octet-alignment: only in the ALIGNED variant. */
  align(): void {
    if (this.aligned) this.pos = (this.pos + 7) & ~7;
  }
  octets(n: number): Buffer {
    this.need(n * 8);
    if ((this.pos & 7) === 0) {
      const out = this.buf.subarray(this.pos >> 3, (this.pos >> 3) + n);
      this.pos += n * 8;
      return out;
    }
    const out = Buffer.alloc(n);
    for (let i = 0; i < n; i++) out[i] = this.bits(8);
    return out;
  }
}

const bitsFor = (range: bigint): number => (range <= 1n ? 0 : (range - 1n).toString(2).length);

/** Constrained whole number in lb..ub (X.691 10.5). */
function constrainedWhole(r: BitReader, lb: bigint, ub: bigint): bigint {
  const range = ub - lb + 1n;
  if (range === 1n) return lb;
  if (!r.aligned) return lb + r.bigBits(bitsFor(range));
  if (range <= 255n) return lb + BigInt(r.bits(bitsFor(range)));
  if (range === 256n) {
    r.align();
    return lb + BigInt(r.bits(8));
  }
  if (range <= 65536n) {
    r.align();
    return lb + BigInt(r.bits(16));
  }
  // The indefinite-length case: the octet count as a constrained number, then the octets.
  const maxOctets = Math.ceil(bitsFor(range) / 8);
  const n = Number(constrainedWhole(r, 1n, BigInt(maxOctets)));
  r.align();
  return lb + r.bigBits(8 * n);
}

/** Unconstrained length determinant (X.691 11.9.3.5-8); `fragment` true when more follow. */
function lengthDet(r: BitReader): { n: number; more: boolean } {
  r.align();
  const b = r.bits(8);
  if ((b & 0x80) === 0) return { n: b, more: false };
  if ((b & 0xc0) === 0x80) return { n: ((b & 0x3f) << 8) | r.bits(8), more: false };
  const m = b & 0x3f;
  if (m < 1 || m > 4) throw new PerError(`invalid length fragment count ${m}`);
  return { n: m * 16384, more: true };
}

/** A length with an optional size constraint; with `each` called per fragment for fragmented ones. */
function readLength(r: BitReader, size: Asn1Type['size'], each: (n: number) => void): void {
  if (size?.ext && r.bit()) return readUnconstrainedLength(r, each);
  const lo = size?.lo ?? 0;
  const hi = size?.hi;
  if (hi !== undefined && hi < 65536) {
    each(lo === hi ? lo : Number(constrainedWhole(r, BigInt(lo), BigInt(hi))));
    return;
  }
  readUnconstrainedLength(r, each);
}

function readUnconstrainedLength(r: BitReader, each: (n: number) => void): void {
  for (;;) {
    const { n, more } = lengthDet(r);
    each(n);
    if (!more) return;
  }
}

function normallySmall(r: BitReader): number {
  if (!r.bit()) return r.bits(6);
  const { n } = lengthDet(r);
  return r.bits(8 * n);
}

function normallySmallLength(r: BitReader): number {
  if (!r.bit()) return r.bits(6) + 1;
  return lengthDet(r).n;
}

/** Open type: a length and that many octets, decoded on their own. */
function openType<T>(r: BitReader, f: (inner: BitReader) => T): T {
  const parts: Buffer[] = [];
  readUnconstrainedLength(r, (n) => parts.push(r.octets(n)));
  const data = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  const inner = new BitReader(data, r.aligned);
  inner.depth = r.depth;
  return f(inner);
}

function signedOctets(b: Buffer): bigint {
  if (b.length === 0) throw new PerError('INTEGER of length 0');
  let v = BigInt.asIntN(8, BigInt(b[0]!));
  for (let i = 1; i < b.length; i++) v = (v << 8n) | BigInt(b[i]!);
  return v;
}

function readInteger(r: BitReader, t: Asn1Type): bigint {
  const c = t.range;
  if (c?.ext && r.bit()) return unconstrainedInt(r);
  if (c?.lo !== undefined && c.hi !== undefined) return constrainedWhole(r, c.lo, c.hi);
  if (c?.lo !== undefined) {
    // Semi-constrained: the offset from lb as a non-negative binary integer in whole octets.
    const { n } = lengthDet(r);
    return c.lo + (n ? r.bigBits(8 * n) : 0n);
  }
  return unconstrainedInt(r);
}

function unconstrainedInt(r: BitReader): bigint {
  const { n } = lengthDet(r);
  return signedOctets(r.octets(n));
}

// ---- character strings -------------------------------------------------------------------------

const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);
/** Default alphabets of the known-multiplier string types (sorted code points). */
const ALPHABETS: Record<string, number[]> = {
  NumericString: [32, ...range(48, 57)],
  PrintableString: [32, 39, 40, 41, 43, 44, 45, 46, 47, ...range(48, 57), 58, 61, 63, ...range(65, 90), ...range(97, 122)],
  VisibleString: range(32, 126),
  ISO646String: range(32, 126),
  IA5String: range(0, 127),
  BMPString: range(0, 65535),
  UniversalString: [],
};

interface CharPlan {
  /** Bits per character. */
  b: number;
  /** Index -> code point, when characters are sent as indexes into the alphabet. */
  map?: number[];
}

function charPlan(t: Asn1Type, aligned: boolean): CharPlan | undefined {
  const type = t.body.stringType!;
  const base = ALPHABETS[type];
  if (!base) return undefined; // not a known-multiplier type: octets with a length
  if (type === 'UniversalString') return { b: 32 };
  const alpha = t.alphabet ?? base;
  const n = alpha.length;
  let b = n <= 1 ? 0 : bitsFor(BigInt(n));
  if (aligned) b = b <= 1 ? b : b <= 2 ? 2 : b <= 4 ? 4 : b <= 8 ? 8 : b <= 16 ? 16 : 32;
  // Characters keep their own codes when every one of them fits in b bits (X.691 30.5.4).
  const maxCode = alpha[alpha.length - 1] ?? 0;
  return maxCode < 2 ** b ? { b } : { b, map: alpha };
}

function readString(r: BitReader, t: Asn1Type): string {
  const plan = charPlan(t, r.aligned);
  if (!plan) {
    // UTF8String and other non-known-multiplier types: an octet count and the octets.
    const parts: Buffer[] = [];
    readUnconstrainedLength(r, (n) => parts.push(Buffer.from(r.octets(n))));
    return decodeString(
      t.body.stringType!,
      Buffer.concat(parts),
      0,
      parts.reduce((a, p) => a + p.length, 0),
    );
  }
  const size = t.size;
  let out = '';
  const chars = (n: number) => {
    if (plan.b === 0) r.charge(8 * n);
    else r.count(n, 'a string');
    for (let i = 0; i < n; i++) {
      const v = r.bits(plan.b);
      const code = plan.map ? plan.map[v] : v;
      if (code === undefined) throw new PerError(`character index ${v} outside the permitted alphabet`);
      out += String.fromCodePoint(code);
    }
  };
  if (size?.ext && r.bit()) {
    readUnconstrainedLength(r, (n) => (r.align(), chars(n)));
    return out;
  }
  const lo = size?.lo ?? 0;
  const hi = size?.hi;
  if (hi !== undefined && hi < 65536) {
    if (lo === hi) {
      if (hi * plan.b > 16) r.align();
      chars(hi);
    } else {
      const n = Number(constrainedWhole(r, BigInt(lo), BigInt(hi)));
      if (hi * plan.b > 16) r.align();
      chars(n);
    }
    return out;
  }
  readUnconstrainedLength(r, (n) => (r.align(), chars(n)));
  return out;
}

// ---- constructed types -------------------------------------------------------------------------

/** Smallest tag a type can start with, for the canonical order of SET components and CHOICE alternatives. */
function canonicalKey(t: Asn1Type): number {
  const f = firstTags(t);
  return f === null || f.size === 0 ? Number.MAX_SAFE_INTEGER : Math.min(...f);
}

interface Members {
  root: Component[];
  /** Extension additions: one entry per addition or [[ ]] group, in definition order. */
  groups: Component[][];
}

const membersCache = new WeakMap<Body, Members>();

function membersOf(b: Body): Members {
  let m = membersCache.get(b);
  if (m) return m;
  const comps = b.components!;
  let root = comps.filter((c) => c.extGroup === undefined);
  if (b.kind === 'set' || b.kind === 'choice') root = [...root].sort((x, y) => canonicalKey(x.type) - canonicalKey(y.type));
  const groups: Component[][] = [];
  const seen = new Map<number, Component[]>();
  for (const c of comps) {
    if (c.extGroup === undefined) continue;
    let g = seen.get(c.extGroup);
    if (!g) {
      g = [];
      seen.set(c.extGroup, g);
      groups.push(g);
    }
    g.push(c);
  }
  m = { root, groups };
  membersCache.set(b, m);
  return m;
}

function readMembers(r: BitReader, list: Component[], out: Record<string, unknown>): void {
  const present = list.map((c) => (c.optional || c.hasDefault ? r.bit() === 1 : true));
  list.forEach((c, i) => {
    if (present[i]) out[c.name] = readValue(r, c.type);
    else if (c.hasDefault) out[c.name] = c.default;
  });
}

function readSequence(r: BitReader, b: Body): Record<string, unknown> {
  const { root, groups } = membersOf(b);
  const extended = b.ext ? r.bit() === 1 : false;
  const out: Record<string, unknown> = {};
  readMembers(r, root, out);
  if (extended) {
    const n = normallySmallLength(r);
    r.count(n, 'an extension bitmap');
    const bits = Array.from({ length: n }, () => r.bit());
    for (let i = 0; i < n; i++) {
      if (!bits[i]) continue;
      const g = groups[i];
      openType(r, (inner) => {
        if (!g) return; // an addition this schema does not know: skipped
        if (g.length === 1 && !g[0]!.extBracket) out[g[0]!.name] = readValue(inner, g[0]!.type);
        else readMembers(inner, g, out);
      });
    }
  }
  for (const g of groups) for (const c of g) if (!(c.name in out) && c.hasDefault) out[c.name] = c.default;
  return out;
}

function readChoice(r: BitReader, b: Body): unknown {
  const { root, groups } = membersOf(b);
  if (b.ext && r.bit()) {
    const i = normallySmall(r);
    const alt = groups.flat()[i];
    return openType(r, (inner) => (alt ? { type: alt.name, value: readValue(inner, alt.type) } : { type: `extension${i}`, value: inner.buf.toString('hex') }));
  }
  const i = Number(constrainedWhole(r, 0n, BigInt(root.length - 1)));
  const alt = root[i];
  if (!alt) throw new PerError(`CHOICE index ${i} out of range`);
  return { type: alt.name, value: readValue(r, alt.type) };
}

function readList(r: BitReader, t: Asn1Type): unknown[] {
  const out: unknown[] = [];
  const el = t.body.element!;
  readLength(r, t.size, (n) => {
    r.count(n, 'a SEQUENCE OF / SET OF');
    for (let i = 0; i < n; i++) {
      const at = r.pos;
      out.push(readValue(r, el));
      if (r.pos === at) r.charge(8);
    }
  });
  return out;
}

function readOctets(r: BitReader, t: Asn1Type): Buffer {
  const size = t.size;
  if (size?.ext && r.bit()) return collect(r);
  const lo = size?.lo ?? 0;
  const hi = size?.hi;
  if (hi !== undefined && hi < 65536) {
    if (lo === hi) {
      if (hi > 2) r.align();
      return r.octets(hi);
    }
    const n = Number(constrainedWhole(r, BigInt(lo), BigInt(hi)));
    r.align();
    return r.octets(n);
  }
  return collect(r);
}

function collect(r: BitReader): Buffer {
  const parts: Buffer[] = [];
  readUnconstrainedLength(r, (n) => parts.push(Buffer.from(r.octets(n))));
  return Buffer.concat(parts);
}

function readBits(r: BitReader, t: Asn1Type): string {
  const size = t.size;
  const take = (n: number) => {
    let s = '';
    for (let i = 0; i < n; i++) s += r.bit();
    return s;
  };
  if (size?.ext && r.bit()) {
    let s = '';
    readUnconstrainedLength(r, (n) => (s += take(n)));
    return s;
  }
  const lo = size?.lo ?? 0;
  const hi = size?.hi;
  if (hi !== undefined && hi < 65536) {
    if (lo === hi) {
      if (hi > 16) r.align();
      return take(hi);
    }
    const n = Number(constrainedWhole(r, BigInt(lo), BigInt(hi)));
    r.align();
    return take(n);
  }
  let s = '';
  readUnconstrainedLength(r, (n) => (s += take(n)));
  return s;
}

function readEnum(r: BitReader, b: Body): string | number {
  const root = b.enumRoot!;
  if (b.ext && r.bit()) {
    const i = normallySmall(r);
    const item = b.enumExt?.[i];
    return item ? item.name : `extension${i}`;
  }
  const i = Number(constrainedWhole(r, 0n, BigInt(root.length - 1)));
  const item = root[i];
  if (!item) throw new PerError(`ENUMERATED index ${i} out of range`);
  return enumName(b, item.value);
}

/** A constructed value, one level deeper (recursive types must not recurse without end). */
function nested<T>(r: BitReader, f: () => T): T {
  if (++r.depth > MAX_DEPTH) throw new PerError(`values nested more than ${MAX_DEPTH} deep at bit ${r.pos}`);
  const v = f();
  r.depth--;
  return v;
}

function readValue(r: BitReader, t: Asn1Type): unknown {
  const b = t.body;
  switch (b.kind) {
    case 'sequence':
    case 'set':
      return nested(r, () => readSequence(r, b));
    case 'choice':
      return nested(r, () => readChoice(r, b));
    case 'sequenceOf':
    case 'setOf':
      return nested(r, () => readList(r, t));
    case 'integer':
      return intValue(readInteger(r, t));
    case 'boolean':
      return r.bit() === 1;
    case 'null':
      return null;
    case 'enumerated':
      return readEnum(r, b);
    case 'octets':
      return readOctets(r, t).toString('hex');
    case 'bits':
      return bitsValue(b, readBits(r, t));
    case 'string':
      return readString(r, t);
    case 'gtime':
    case 'utime': {
      // Time types are VisibleString in PER (no constraints).
      const s = readString(r, { tags: [], body: { kind: 'string', stringType: 'VisibleString' } });
      try {
        return b.kind === 'gtime' ? generalizedTime(s) : utcTime(s);
      } catch (err) {
        // A malformed time is the document's error, as in the other encodings (found by fuzzing).
        throw new PerError(`${(err as Error).message} before bit ${r.pos}`);
      }
    }
    case 'real': {
      const o = collect(r);
      return realValue(realFromBer(o));
    }
    case 'oid':
    case 'relOid': {
      const o = collect(r);
      return oidFromBer(o, b.kind === 'oid');
    }
    case 'any':
      return openType(r, (inner) => inner.buf.toString('hex'));
  }
}

// REAL and OBJECT IDENTIFIER contents in PER are their BER contents octets.
const realFromBer = (o: Buffer): number => {
  const v = primitive({ kind: 'real' }, o, 0, o.length, 0);
  return typeof v === 'number' ? v : Number(v);
};
const oidFromBer = (o: Buffer, absolute: boolean): string => primitive({ kind: absolute ? 'oid' : 'relOid' }, o, 0, o.length, 0) as string;

/** Decodes one complete PER encoding of `t` (ALIGNED when `aligned`, else UNALIGNED). */
export function decodePer(t: Asn1Type, data: Buffer, aligned: boolean): unknown {
  const r = new BitReader(data, aligned);
  const v = readValue(r, t);
  const used = Math.ceil(r.pos / 8);
  // A complete encoding is padded to whole octets; an empty one is a single zero octet.
  if (data.length > Math.max(used, 1)) throw new PerError(`${data.length - Math.max(used, 1)} bytes after the ${aligned ? 'PER' : 'UPER'} value`);
  return v;
}
