// BER / DER / CER decoding of the type model (X.690). DER and CER are BER subsets, so one decoder
// reads all three. Definite and indefinite lengths, constructed strings, unknown extension
// components skipped. Throws Asn1DecodeError with the byte offset of the element at fault.
import { tagKey, tagText, type Asn1Type, type Body, type Component } from './model.js';
import { bitsValue, enumName, generalizedTime, intValue, realValue, utcTime } from './values.js';

export class Asn1DecodeError extends Error {
  override name = 'Asn1DecodeError';
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

/** Longest element accepted (a corrupt length field must not make the reader wait for gigabytes). */
export const MAX_ELEMENT = 64 << 20;

/**
 * Deepest nesting of elements (and of PER values) accepted: charging records nest about ten deep;
 * a recursive type or nested constructed strings must not recurse until the stack overflows.
 */
export const MAX_DEPTH = 64;

// One element header, read into these variables (no allocation per element).
let hTag = 0;
let hCons = false;
let hLen = 0; // -1: indefinite
let hBody = 0; // offset of the contents

/** Reads a tag and length at `pos`. Returns false when `end` comes first (need more bytes). */
function header(buf: Buffer, pos: number, end: number): boolean {
  if (pos >= end) return false;
  const b0 = buf[pos]!;
  let p = pos + 1;
  let num = b0 & 0x1f;
  if (num === 0x1f) {
    num = 0;
    let b: number;
    let n = 0;
    do {
      if (p >= end) return false;
      b = buf[p++]!;
      if (++n > 4) throw new Asn1DecodeError('tag number too large', pos);
      num = num * 128 + (b & 0x7f);
    } while (b & 0x80);
  }
  hTag = tagKey(b0 >> 6, num);
  hCons = (b0 & 0x20) !== 0;
  if (p >= end) return false;
  const l0 = buf[p++]!;
  if (l0 < 0x80) hLen = l0;
  else if (l0 === 0x80) {
    if (!hCons) throw new Asn1DecodeError('indefinite length on a primitive element', pos);
    hLen = -1;
  } else {
    const n = l0 & 0x7f;
    if (n > 4 || l0 === 0xff) throw new Asn1DecodeError(`invalid length (${n} length octets)`, pos);
    if (p + n > end) return false;
    let len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + buf[p++]!;
    if (len > MAX_ELEMENT) throw new Asn1DecodeError(`invalid length ${len} (over ${MAX_ELEMENT} bytes)`, pos);
    hLen = len;
  }
  hBody = p;
  return true;
}

/**
 * End offset of the complete element at `pos` (walking nested elements, so indefinite lengths and
 * inconsistent nested lengths are found): -1 when more bytes are needed, throws when invalid.
 */
export function elementEnd(buf: Buffer, pos: number, end: number, depth = 0): number {
  if (depth > MAX_DEPTH) throw new Asn1DecodeError(`elements nested more than ${MAX_DEPTH} deep`, pos);
  if (!header(buf, pos, end)) return -1;
  const cons = hCons;
  const len = hLen;
  let p = hBody;
  if (len >= 0) {
    const stop = p + len;
    if (stop > end) return -1;
    if (!cons) return stop;
    while (p < stop) {
      const e = elementEnd(buf, p, stop, depth + 1);
      if (e < 0) throw new Asn1DecodeError('nested element runs past the end of its parent', p);
      p = e;
    }
    return stop;
  }
  for (;;) {
    if (p + 2 > end) return -1;
    if (buf[p] === 0 && buf[p + 1] === 0) return p + 2;
    const e = elementEnd(buf, p, end, depth + 1);
    if (e < 0) return -1;
    p = e;
  }
}

/** The first tags a value of this type may start with; null when any tag may (open type). */
export function firstTags(t: Asn1Type): Set<number> | null {
  if (t.tags.length) return new Set([t.tags[0]!]);
  const b = t.body as Body & { _first?: Set<number> | null };
  if (b._first !== undefined) return b._first;
  if (b.kind !== 'choice') return (b._first = null);
  b._first = new Set(); // recursion guard
  const all = new Set<number>();
  for (const c of b.components!) {
    const f = firstTags(c.type);
    if (f === null) return (b._first = null);
    for (const x of f) all.add(x);
  }
  return (b._first = all);
}

/** Where the last decoded element ended. */
let lastEnd = 0;
/** Constructed elements open in the decode running now (reset by each decodeBer: a throw leaves it up). */
let level = 0;

/** Throws when one more constructed level would pass MAX_DEPTH (the caller lowers `level` after it). */
const deeper = (pos: number): void => {
  if (++level > MAX_DEPTH) throw new Asn1DecodeError(`elements nested more than ${MAX_DEPTH} deep`, pos);
};

/** Decodes one complete value of type `t` at `pos` (it must end by `end`); returns it and its end. */
export function decodeBer(t: Asn1Type, buf: Buffer, pos: number, end: number): { value: unknown; end: number } {
  level = 0;
  const value = decoderOf(t)(buf, pos, end);
  return { value, end: lastEnd };
}

/** The tag at `pos`, or -1 when the bytes end first. */
export function peekTag(buf: Buffer, pos: number, end: number): number {
  return header(buf, pos, end) ? hTag : -1;
}

// ---- compiled decoders: one closure per type use, built once, so decoding does no lookups ----

/** Decodes the element at pos (ending by end); sets lastEnd. */
type Dec = (buf: Buffer, pos: number, end: number) => unknown;
/** Decodes the contents of the element whose header was just read (stop -1: indefinite). */
type ContentsDec = (buf: Buffer, pos: number, body: number, stop: number, cons: boolean, end: number) => unknown;

const compiled = new WeakMap<Asn1Type, Dec>();
const compiledBodies = new WeakMap<Body, ContentsDec>();

export function decoderOf(t: Asn1Type): Dec {
  const d = compiled.get(t);
  if (d) return d;
  // A forwarding stub first: a recursive type reaches itself while being compiled.
  compiled.set(t, (buf, pos, end) => real(buf, pos, end));
  const real = buildDecoder(t);
  compiled.set(t, real);
  return real;
}

function contentsOf(b: Body): ContentsDec {
  const d = compiledBodies.get(b);
  if (d) return d;
  compiledBodies.set(b, (buf, pos, body, stop, cons, end) => real(buf, pos, body, stop, cons, end));
  const real = buildContents(b);
  compiledBodies.set(b, real);
  return real;
}

function buildDecoder(t: Asn1Type): Dec {
  const b = t.body;
  const tags = t.tags;
  // Innermost level: an untagged CHOICE or open type, or the contents under the last tag.
  let inner: Dec;
  const nTags = b.kind === 'choice' || b.kind === 'any' ? tags.length : tags.length - 1;
  if (b.kind === 'choice') inner = choiceDecoder(b);
  else if (b.kind === 'any') inner = rawElement;
  else {
    const tag = tags[tags.length - 1]!;
    const contents = contentsOf(b);
    inner = (buf, pos, end) => {
      if (!header(buf, pos, end)) throw new Asn1DecodeError('truncated element header', pos);
      if (hTag !== tag) throw new Asn1DecodeError(`expected tag ${tagText(tag)}, found ${tagText(hTag)}`, pos);
      const stop = hLen >= 0 ? hBody + hLen : -1;
      if (stop > end) throw new Asn1DecodeError(`length ${hLen} runs past the end of the enclosing element (truncated)`, pos);
      return contents(buf, pos, hBody, stop, hCons, end);
    };
  }
  // Explicit tags outside it, innermost first.
  for (let i = nTags - 1; i >= 0; i--) inner = explicitLevel(tags[i]!, inner);
  return inner;
}

function explicitLevel(tag: number, inner: Dec): Dec {
  return (buf, pos, end) => {
    if (!header(buf, pos, end)) throw new Asn1DecodeError('truncated element header', pos);
    if (hTag !== tag) throw new Asn1DecodeError(`expected tag ${tagText(tag)}, found ${tagText(hTag)}`, pos);
    if (!hCons) throw new Asn1DecodeError('explicit tag on a primitive element', pos);
    const stop = hLen >= 0 ? hBody + hLen : -1;
    if (stop > end) throw new Asn1DecodeError(`length ${hLen} runs past the end of the enclosing element (truncated)`, pos);
    deeper(pos);
    const v = inner(buf, hBody, stop < 0 ? end : stop);
    level--;
    let p = lastEnd;
    if (stop < 0) {
      if (buf[p] !== 0 || buf[p + 1] !== 0) throw new Asn1DecodeError('expected end-of-contents', p);
      p += 2;
    } else if (p !== stop) throw new Asn1DecodeError('trailing bytes inside an explicitly tagged element', p);
    lastEnd = p;
    return v;
  };
}

/** An open type (ANY): the whole element as hex. */
const rawElement: Dec = (buf, pos, end) => {
  const e = elementEnd(buf, pos, end);
  if (e < 0) throw new Asn1DecodeError('truncated element', pos);
  lastEnd = e;
  return buf.toString('hex', pos, e);
};

/** tag -> index of the component it selects, or null when first tags overlap (ordered matching needed). */
function tagIndex(comps: Component[]): { map: Map<number, number>; wildcard: number } | null {
  const map = new Map<number, number>();
  let wildcard = -1;
  for (let i = 0; i < comps.length; i++) {
    const f = firstTags(comps[i]!.type);
    if (f === null) {
      if (wildcard !== -1) return null;
      wildcard = i;
      continue;
    }
    for (const t of f) {
      if (map.has(t)) return null;
      map.set(t, i);
    }
  }
  return { map, wildcard };
}

function choiceDecoder(b: Body): Dec {
  let idx: ReturnType<typeof tagIndex> | undefined;
  let decs: Dec[] | undefined;
  let names: string[] | undefined;
  return (buf, pos, end) => {
    if (!idx) {
      idx = tagIndex(b.components!) ?? { map: new Map(), wildcard: -1 };
      decs = b.components!.map((c) => decoderOf(c.type));
      names = b.components!.map((c) => c.name);
    }
    if (!header(buf, pos, end)) throw new Asn1DecodeError('truncated element header', pos);
    const tag = hTag;
    let i = idx.map.get(tag) ?? idx.wildcard;
    if (i === -1) {
      // Overlapping first tags (nested untagged CHOICEs): the first alternative that fits.
      i = b.components!.findIndex((c) => {
        const f = firstTags(c.type);
        return f === null || f.has(tag);
      });
    }
    if (i === -1) {
      if (b.ext) {
        // An unknown alternative of an extensible CHOICE: kept as raw hex under its tag.
        const value = rawElement(buf, pos, end);
        return { type: tagText(tag), value };
      }
      throw new Asn1DecodeError(`tag ${tagText(tag)} is none of the alternatives of CHOICE${b.name ? ' ' + b.name : ''}`, pos);
    }
    return { type: names![i], value: decs![i]!(buf, pos, end) };
  };
}

function buildContents(b: Body): ContentsDec {
  switch (b.kind) {
    case 'sequence':
    case 'set':
      return sequenceDecoder(b);
    case 'sequenceOf':
    case 'setOf':
      return listDecoder(b);
    case 'integer':
      return primitiveOnly((buf, s, e, pos) => {
        const n = e - s;
        if (n === 0) throw new Asn1DecodeError('INTEGER of length 0', pos);
        if (n <= 6) {
          let v = buf[s]! & 0x80 ? -1 : 0;
          for (let i = s; i < e; i++) v = v * 256 + buf[i]!;
          return v;
        }
        return intValue(readInt(buf, s, e, pos));
      });
    case 'octets':
      return stringLike(b, (buf, s, e) => hex(buf, s, e));
    case 'boolean':
      return primitiveOnly((buf, s, e, pos) => {
        if (e - s !== 1) throw new Asn1DecodeError('BOOLEAN of length other than 1', pos);
        return buf[s] !== 0;
      });
    case 'enumerated':
      return primitiveOnly((buf, s, e, pos) => enumName(b, Number(readInt(buf, s, e, pos))));
    default:
      return stringLike(b, (buf, s, e, pos) => primitive(b, buf, s, e, pos));
  }
}

const BIN = Array.from({ length: 256 }, (_, i) => i.toString(2).padStart(8, '0'));

/** Lower-case hex, as one flat string (a table-built one leaves a chain of partial strings to collect). */
const hex = (buf: Buffer, s: number, e: number): string => buf.toString('hex', s, e);

type PrimDec = (buf: Buffer, s: number, e: number, pos: number) => unknown;

function primitiveOnly(f: PrimDec): ContentsDec {
  return (buf, pos, body, stop, cons) => {
    if (cons || stop < 0) throw new Asn1DecodeError('constructed encoding of a primitive type', pos);
    lastEnd = stop;
    return f(buf, body, stop, pos);
  };
}

/** String types may come in constructed segments (BER/CER): their contents are concatenated. */
function stringLike(b: Body, f: PrimDec): ContentsDec {
  const segmentable = b.kind === 'octets' || b.kind === 'bits' || b.kind === 'string' || b.kind === 'gtime' || b.kind === 'utime';
  return (buf, pos, body, stop, cons, end) => {
    if (!cons) {
      if (stop < 0) throw new Asn1DecodeError('indefinite length on a primitive element', pos);
      lastEnd = stop;
      return f(buf, body, stop, pos);
    }
    if (!segmentable) throw new Asn1DecodeError(`constructed encoding of a ${b.kind}`, pos);
    const parts: Buffer[] = [];
    const after = segments(buf, body, stop, end, parts, b.kind === 'bits', 1);
    const data = Buffer.concat(parts);
    const v = f(data, 0, data.length, pos);
    lastEnd = after;
    return v;
  };
}

function segments(buf: Buffer, p: number, stop: number, end: number, parts: Buffer[], bits: boolean, depth: number): number {
  if (depth > MAX_DEPTH) throw new Asn1DecodeError(`string segments nested more than ${MAX_DEPTH} deep`, p);
  for (;;) {
    if (stop >= 0 ? p >= stop : buf[p] === 0 && buf[p + 1] === 0) return stop >= 0 ? stop : p + 2;
    const limit = stop >= 0 ? stop : end;
    if (!header(buf, p, limit)) throw new Asn1DecodeError('truncated string segment', p);
    const s = hBody;
    const segStop = hLen >= 0 ? s + hLen : -1;
    // A segment must end inside its parent: one that runs past it would be read again by every
    // enclosing level (a fuzzed 127-byte CDR took seconds).
    if (segStop > limit) throw new Asn1DecodeError('string segment longer than the string that holds it', p);
    if (hCons) {
      p = segments(buf, s, segStop, end, parts, bits, depth + 1);
      if (p > limit) throw new Asn1DecodeError('string segment longer than the string that holds it', s);
    } else {
      // BIT STRING segments carry their own unused-bits octet; only the last may be non-zero.
      parts.push(bits && parts.length ? buf.subarray(s + 1, segStop) : buf.subarray(s, segStop));
      p = segStop;
    }
  }
}

export function primitive(b: Body, buf: Buffer, s: number, e: number, pos: number): unknown {
  switch (b.kind) {
    case 'integer':
      return intValue(readInt(buf, s, e, pos));
    case 'enumerated':
      return enumName(b, Number(readInt(buf, s, e, pos)));
    case 'boolean':
      if (e - s !== 1) throw new Asn1DecodeError('BOOLEAN of length other than 1', pos);
      return buf[s] !== 0;
    case 'null':
      if (e !== s) throw new Asn1DecodeError('NULL with contents', pos);
      return null;
    case 'octets':
      return buf.toString('hex', s, e);
    case 'bits': {
      if (e === s) return bitsValue(b, '');
      const unused = buf[s]!;
      if (unused > 7) throw new Asn1DecodeError('BIT STRING with more than 7 unused bits', pos);
      const nbits = (e - s - 1) * 8 - unused;
      if (b.named) {
        // Named bits straight from the octets (the common CDR case: a few condition flags).
        const names: string[] = [];
        for (let i = 0; i < nbits; i++) if ((buf[s + 1 + (i >> 3)]! >> (7 - (i & 7))) & 1) names.push(b.named.get(i) ?? `bit${i}`);
        return names;
      }
      let bits = '';
      for (let i = s + 1; i < e; i++) bits += BIN[buf[i]!];
      return bits.slice(0, nbits);
    }
    case 'oid':
    case 'relOid':
      return oid(buf, s, e, b.kind === 'oid', pos);
    case 'real':
      return realValue(readReal(buf, s, e, pos));
    case 'gtime':
      return wrap(() => generalizedTime(buf.toString('latin1', s, e)), pos);
    case 'utime':
      return wrap(() => utcTime(buf.toString('latin1', s, e)), pos);
    case 'string':
      return decodeString(b.stringType!, buf, s, e);
    default:
      throw new Asn1DecodeError(`cannot decode a ${b.kind} as primitive`, pos);
  }
}

const wrap = <T>(f: () => T, pos: number): T => {
  try {
    return f();
  } catch (err) {
    throw new Asn1DecodeError((err as Error).message, pos);
  }
};

export function decodeString(type: string, buf: Buffer, s: number, e: number): string {
  switch (type) {
    case 'UTF8String':
      return buf.toString('utf8', s, e);
    case 'BMPString': {
      let out = '';
      for (let i = s; i + 1 < e; i += 2) out += String.fromCharCode((buf[i]! << 8) | buf[i + 1]!);
      return out;
    }
    case 'UniversalString': {
      let out = '';
      for (let i = s; i + 3 < e; i += 4) out += String.fromCodePoint(buf.readUInt32BE(i));
      return out;
    }
    default:
      return buf.toString('latin1', s, e);
  }
}

export function readInt(buf: Buffer, s: number, e: number, pos: number): bigint {
  const n = e - s;
  if (n === 0) throw new Asn1DecodeError('INTEGER of length 0', pos);
  if (n <= 6) {
    let v = buf[s]! & 0x80 ? -1 : 0;
    for (let i = s; i < e; i++) v = v * 256 + buf[i]!;
    // Seeding with -1 for a negative first octet yields the two's complement value directly.
    return BigInt(v);
  }
  let v = BigInt.asIntN(8, BigInt(buf[s]!));
  for (let i = s + 1; i < e; i++) v = (v << 8n) | BigInt(buf[i]!);
  return v;
}

function oid(buf: Buffer, s: number, e: number, absolute: boolean, pos: number): string {
  const arcs: (number | bigint)[] = [];
  let v = 0n;
  let small = 0;
  let big = false;
  for (let i = s; i < e; i++) {
    const b = buf[i]!;
    if (big) v = (v << 7n) | BigInt(b & 0x7f);
    else {
      small = small * 128 + (b & 0x7f);
      if (small > 2 ** 46) {
        big = true;
        v = BigInt(small);
      }
    }
    if (!(b & 0x80)) {
      arcs.push(big ? v : small);
      small = 0;
      v = 0n;
      big = false;
    } else if (i === e - 1) throw new Asn1DecodeError('truncated OBJECT IDENTIFIER arc', pos);
  }
  if (absolute && arcs.length) {
    const f = arcs[0]!;
    const first = typeof f === 'bigint' ? 2 : f < 40 ? 0 : f < 80 ? 1 : 2;
    const second = typeof f === 'bigint' ? f - 80n : f - first * 40;
    arcs.splice(0, 1, first, second);
  }
  return arcs.join('.');
}

function readReal(buf: Buffer, s: number, e: number, pos: number): number {
  if (e === s) return 0;
  const f = buf[s]!;
  if (f & 0x80) {
    // Binary: sign, base (2, 8, 16), scale factor, exponent, mantissa.
    const sign = f & 0x40 ? -1 : 1;
    const base = [2, 8, 16][(f >> 4) & 3];
    if (base === undefined) throw new Asn1DecodeError('REAL with reserved base', pos);
    const scale = (f >> 2) & 3;
    let p = s + 1;
    let elen = (f & 3) + 1;
    if (elen === 4) elen = buf[p++]!;
    let exp = buf[p]! & 0x80 ? -1 : 0;
    for (let i = 0; i < elen; i++) exp = exp * 256 + buf[p++]!;
    let m = 0;
    for (; p < e; p++) m = m * 256 + buf[p]!;
    return sign * m * 2 ** scale * base ** exp;
  }
  if (f & 0x40) {
    if (f === 0x40) return Infinity;
    if (f === 0x41) return -Infinity;
    if (f === 0x42) return NaN;
    if (f === 0x43) return -0;
    throw new Asn1DecodeError('REAL with unknown special value', pos);
  }
  // Decimal (ISO 6093 NR1/NR2/NR3).
  return Number(
    buf
      .toString('latin1', s + 1, e)
      .trim()
      .replace(',', '.'),
  );
}

function listDecoder(b: Body): ContentsDec {
  let el: Dec | undefined;
  return (buf, pos, p, stop, cons, end) => {
    if (!cons) throw new Asn1DecodeError(`${b.kind === 'sequenceOf' ? 'SEQUENCE' : 'SET'} OF encoded as primitive`, pos);
    el ??= decoderOf(b.element!);
    deeper(pos);
    const out: unknown[] = [];
    const limit = stop >= 0 ? stop : end;
    for (;;) {
      if (stop >= 0 ? p >= stop : buf[p] === 0 && buf[p + 1] === 0) break;
      if (p >= limit) throw new Asn1DecodeError('missing end-of-contents', p);
      out.push(el(buf, p, limit));
      p = lastEnd;
    }
    level--;
    lastEnd = stop >= 0 ? stop : p + 2;
    return out;
  };
}

interface SeqPlan {
  names: string[];
  decs: Dec[];
  /** Component must be present (root, not OPTIONAL, no DEFAULT). */
  mandatory: boolean[];
  mandatoryCount: number;
  defaults: Component[];
  index: ReturnType<typeof tagIndex>;
  /** Component index by context tag number 0..63 (-1: none). */
  byCtx: Int16Array;
}

const CTX0 = tagKey(2, 0);

function sequenceDecoder(b: Body): ContentsDec {
  const isSet = b.kind === 'set';
  const what = b.name ?? (isSet ? 'SET' : 'SEQUENCE');
  let plan: SeqPlan | undefined;
  const planOf = (): SeqPlan => {
    const comps = b.components!;
    const mandatory = comps.map((c) => !c.optional && c.extGroup === undefined);
    const p: SeqPlan = {
      names: comps.map((c) => c.name),
      decs: comps.map((c) => decoderOf(c.type)),
      mandatory,
      mandatoryCount: mandatory.filter(Boolean).length,
      defaults: comps.filter((c) => c.hasDefault),
      index: tagIndex(comps),
      byCtx: new Int16Array(64).fill(-1),
    };
    for (const [t, i] of p.index?.map ?? []) if (t - CTX0 >= 0 && t - CTX0 < 64) p.byCtx[t - CTX0] = i;
    return p;
  };
  return (buf, pos, p, stop, cons, end) => {
    if (!cons) throw new Asn1DecodeError(`${isSet ? 'SET' : 'SEQUENCE'} encoded as primitive`, pos);
    plan ??= planOf();
    deeper(pos);
    const { names, decs, mandatory, index } = plan;
    const comps = b.components!;
    const n = comps.length;
    const out: Record<string, unknown> = {};
    const limit = stop >= 0 ? stop : end;
    let next = 0; // SEQUENCE: components before this one are behind us
    let found = 0;
    for (;;) {
      if (stop >= 0 ? p >= stop : buf[p] === 0 && buf[p + 1] === 0) break;
      if (!header(buf, p, limit)) throw new Asn1DecodeError('truncated element header', p);
      const tag = hTag;
      let j: number;
      if (index) {
        // Context tags [0]..[63] (nearly every CDR component) by array, the rest by map.
        const ctxNum = tag - CTX0;
        j = ctxNum >= 0 && ctxNum < 64 ? plan.byCtx[ctxNum]! : (index.map.get(tag) ?? index.wildcard);
        if (j === -1 && ctxNum >= 0 && ctxNum < 64) j = index.wildcard;
        if (!isSet && j !== -1) {
          if (j < next) throw new Asn1DecodeError(`component '${names[j]}' of ${what} out of order or repeated`, p);
          for (let k = next; k < j; k++)
            if (mandatory[k]) throw new Asn1DecodeError(`missing component '${names[k]}' of ${what} (found tag ${tagText(tag)})`, p);
        }
      } else {
        // Overlapping tags: match in order.
        for (j = next; j < n; j++) {
          const f = firstTags(comps[j]!.type);
          if (f === null || f.has(tag)) break;
          if (mandatory[j]) throw new Asn1DecodeError(`missing component '${names[j]}' of ${what} (found tag ${tagText(tag)})`, p);
        }
        if (j === n) j = -1;
      }
      if (j === -1) {
        if (!b.ext) throw new Asn1DecodeError(`unexpected tag ${tagText(tag)} in ${what}`, p);
        // An unknown extension addition: skipped.
        const e = elementEnd(buf, p, limit);
        if (e < 0) throw new Asn1DecodeError('truncated element', p);
        p = e;
        continue;
      }
      out[names[j]!] = decs[j]!(buf, p, limit);
      p = lastEnd;
      if (mandatory[j]) found++;
      next = j + 1;
    }
    if (found !== plan.mandatoryCount) {
      for (let k = 0; k < n; k++) if (mandatory[k] && out[names[k]!] === undefined) throw new Asn1DecodeError(`missing component '${names[k]}' of ${what}`, p);
    }
    for (const c of plan.defaults) if (out[c.name] === undefined) out[c.name] = c.default;
    level--;
    lastEnd = stop >= 0 ? stop : p + 2;
    return out;
  };
}
