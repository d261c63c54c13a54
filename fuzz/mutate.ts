// Structure-aware mutation of valid samples (no coverage-guided engine installs here: see
// docs/reliability.md). Binary formats get byte-level edits that keep most of the structure (bit
// flips, interesting values, insert/delete, repeats, truncation, splices of two seeds) plus edits of
// what looks like a length field (a BER length byte, a varint, a 4-byte length); text formats get
// the same on whole tokens (words, numbers, punctuation runs), so that a changed input still reads as
// the format most of the time and the parser gets past its first checks.

/** A seeded PRNG (mulberry32): a run is repeatable from its seed. */
export class Rng {
  private a: number;
  constructor(seed: number) {
    this.a = seed >>> 0;
  }
  next(): number {
    this.a = (this.a + 0x6d2b79f5) >>> 0;
    let t = this.a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** 0..n-1 */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** Largest input produced: the hang rule is for inputs under 64 KB. */
export const MAX_INPUT = 64 * 1024 - 1;

const INTERESTING_8 = [0x00, 0x01, 0x7f, 0x80, 0x81, 0xff, 0xfe, 0x20, 0x0a, 0x30, 0x84];
const INTERESTING_32 = [0, 1, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xffffffff];

type ByteOp = (b: Buffer, r: Rng, other: Buffer) => Buffer;

const at = (b: Buffer, r: Rng) => r.int(Math.max(1, b.length));

const byteOps: ByteOp[] = [
  // bit flip
  (b, r) => {
    if (!b.length) return b;
    const o = Buffer.from(b);
    const i = at(b, r);
    o[i] = o[i]! ^ (1 << r.int(8));
    return o;
  },
  // interesting byte
  (b, r) => {
    if (!b.length) return b;
    const o = Buffer.from(b);
    o[at(b, r)] = r.pick(INTERESTING_8);
    return o;
  },
  // random byte
  (b, r) => {
    if (!b.length) return b;
    const o = Buffer.from(b);
    o[at(b, r)] = r.int(256);
    return o;
  },
  // small add/subtract (lengths and counters off by a few)
  (b, r) => {
    if (!b.length) return b;
    const o = Buffer.from(b);
    const i = at(b, r);
    o[i] = (o[i]! + r.int(9) - 4) & 0xff;
    return o;
  },
  // insert random bytes
  (b, r) => {
    const i = r.int(b.length + 1);
    const ins = Buffer.alloc(1 + r.int(8));
    for (let k = 0; k < ins.length; k++) ins[k] = r.int(256);
    return Buffer.concat([b.subarray(0, i), ins, b.subarray(i)]);
  },
  // delete a range
  (b, r) => {
    if (b.length < 2) return b;
    const i = r.int(b.length);
    const n = 1 + r.int(Math.min(16, b.length - i));
    return Buffer.concat([b.subarray(0, i), b.subarray(i + n)]);
  },
  // repeat a range (nested structures, long lists)
  (b, r) => {
    if (!b.length) return b;
    const i = r.int(b.length);
    const n = 1 + r.int(Math.min(64, b.length - i));
    const times = 1 + r.int(r.chance(0.1) ? 200 : 8);
    const piece = b.subarray(i, i + n);
    return Buffer.concat([b.subarray(0, i + n), ...Array.from({ length: times }, () => piece), b.subarray(i + n)]);
  },
  // truncate
  (b, r) => b.subarray(0, r.int(b.length + 1)),
  // splice: the head of this input with the tail of another seed
  (b, r, other) => Buffer.concat([b.subarray(0, r.int(b.length + 1)), other.subarray(r.int(other.length + 1))]),
  // copy a range of another seed over this one
  (b, r, other) => {
    if (!other.length || !b.length) return b;
    const o = Buffer.from(b);
    const s = r.int(other.length);
    other.copy(o, at(b, r), s, s + 1 + r.int(32));
    return o;
  },
  // 4-byte length field: an interesting 32-bit value, either byte order
  (b, r) => {
    if (b.length < 4) return b;
    const o = Buffer.from(b);
    const i = r.int(b.length - 3);
    const v = r.pick(INTERESTING_32);
    if (r.chance(0.5)) o.writeUInt32BE(v >>> 0, i);
    else o.writeUInt32LE(v >>> 0, i);
    return o;
  },
  // BER length: a byte with the long form (0x81..0x84) followed by a large or off-by-one value
  (b, r) => {
    if (b.length < 2) return b;
    const i = r.int(b.length - 1) + 1;
    const n = 1 + r.int(4);
    const len = Buffer.alloc(n);
    for (let k = 0; k < n; k++) len[k] = r.chance(0.5) ? 0xff : r.int(256);
    return Buffer.concat([b.subarray(0, i), Buffer.from([0x80 | n]), len, b.subarray(i + 1)]);
  },
  // varint (protobuf, Avro): a long or overlong run of continuation bytes
  (b, r) => {
    const i = r.int(b.length + 1);
    const n = 1 + r.int(11);
    const v = Buffer.alloc(n, 0xff);
    v[n - 1] = r.int(0x80);
    return Buffer.concat([b.subarray(0, i), v, b.subarray(i + (r.chance(0.5) ? 1 : 0))]);
  },
];

/** Splits text into tokens whose edits keep the text readable: words, numbers, spaces, punctuation runs. */
export function tokens(s: string): string[] {
  return s.match(/[A-Za-z_][\w-]*|\d+(?:\.\d+)?|\s+|[^\w\s]/g) ?? [];
}

const TEXT_TOKENS = [
  '',
  ' ',
  '\n',
  '\t',
  '"',
  "'",
  '\\',
  '<',
  '>',
  '</',
  '/>',
  '&',
  '&amp;',
  '&#x0;',
  ']]>',
  '<![CDATA[',
  '{',
  '}',
  '[',
  ']',
  '(',
  ')',
  ',',
  ':',
  ';',
  '=',
  '0',
  '-1',
  '1e999',
  '9007199254740993',
  '18446744073709551616',
  'NaN',
  'null',
  'true',
  '-',
  '--',
  '.',
  '..',
  '*',
  '**',
  '$',
  '${',
  '%',
  '#',
  '|',
  '?',
  '\u0000',
  '\ufeff',
  '\ud800',
  'é',
  '\u2028',
  'a'.repeat(300),
];

type TextOp = (t: string[], r: Rng, other: string[]) => string[];

const textOps: TextOp[] = [
  // replace a token with another token of this or another sample
  (t, r, o) => {
    if (!t.length) return t;
    const c = [...t];
    c[r.int(t.length)] = r.chance(0.5) && o.length ? r.pick(o) : r.pick(t);
    return c;
  },
  // replace a token with an interesting one
  (t, r) => {
    const c = [...t];
    c[r.int(Math.max(1, t.length))] = r.pick(TEXT_TOKENS);
    return c;
  },
  // insert a token
  (t, r, o) => {
    const c = [...t];
    c.splice(r.int(t.length + 1), 0, r.chance(0.5) ? r.pick(TEXT_TOKENS) : r.pick(o.length ? o : TEXT_TOKENS));
    return c;
  },
  // delete a run of tokens
  (t, r) => {
    if (!t.length) return t;
    const c = [...t];
    c.splice(r.int(t.length), 1 + r.int(4));
    return c;
  },
  // repeat a run of tokens (deep nesting, long lists)
  (t, r) => {
    if (!t.length) return t;
    const i = r.int(t.length);
    const run = t.slice(i, i + 1 + r.int(6));
    const times = 1 + r.int(r.chance(0.1) ? 500 : 10);
    return [...t.slice(0, i), ...Array.from({ length: times }, () => run).flat(), ...t.slice(i)];
  },
  // splice with another sample
  (t, r, o) => [...t.slice(0, r.int(t.length + 1)), ...o.slice(r.int(o.length + 1))],
  // truncate
  (t, r) => t.slice(0, r.int(t.length + 1)),
  // change a number
  (t, r) => {
    const nums = t.flatMap((x, i) => (/^\d/.test(x) ? [i] : []));
    if (!nums.length) return t;
    const c = [...t];
    c[r.pick(nums)] = r.pick(['0', '1', '-1', '255', '256', '65536', '4294967296', '99999999999999999999', '0.5', '1e308']);
    return c;
  },
];

export type Style = 'bytes' | 'text';

/** One to a few stacked mutations of `input`, with `other` (another corpus entry) for splices. */
export function mutate(input: Buffer, other: Buffer, style: Style, r: Rng): Buffer {
  let out = input;
  const rounds = 1 + (r.chance(0.5) ? 0 : r.int(4));
  if (style === 'text' && r.chance(0.8)) {
    let t = tokens(out.toString('utf8'));
    const o = tokens(other.toString('utf8'));
    for (let k = 0; k < rounds; k++) t = r.pick(textOps)(t, r, o);
    out = Buffer.from(t.join(''), 'utf8');
  } else {
    for (let k = 0; k < rounds; k++) out = r.pick(byteOps)(out, r, other);
  }
  return out.length > MAX_INPUT ? out.subarray(0, MAX_INPUT) : out;
}
