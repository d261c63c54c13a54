// CDR (CORBA's Common Data Representation, CORBA 3 part 2 ch. 9): primitives aligned on their own
// size relative to the start of the stream (a GIOP message with its 12-byte header, or an
// encapsulation with its byte-order octet), in either byte order; and the typed values that the
// `corba` source's `args` and `returns` describe (scalars, string, sequence, struct, enum, and
// `json`: a string on the wire whose text is handed on as a JSON document).
import { exactNumber } from '../../../util/exact-number.js';

export class CdrError extends Error {
  override name = 'CdrError';
}

/** Writes CDR; offsets (and so alignment) count from the first byte written. */
export class CdrWriter {
  private buf: Buffer;
  pos = 0;

  constructor(
    readonly littleEndian = true,
    size = 256,
  ) {
    this.buf = Buffer.alloc(size);
  }

  private room(n: number) {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  align(n: number) {
    const pad = (n - (this.pos % n)) % n;
    this.room(pad);
    this.buf.fill(0, this.pos, this.pos + pad);
    this.pos += pad;
  }

  octet(v: number) {
    this.room(1);
    this.buf.writeUInt8(v, this.pos++);
  }
  boolean(v: boolean) {
    this.octet(v ? 1 : 0);
  }
  short(v: number) {
    this.align(2);
    this.room(2);
    if (this.littleEndian) this.buf.writeInt16LE(v, this.pos);
    else this.buf.writeInt16BE(v, this.pos);
    this.pos += 2;
  }
  ushort(v: number) {
    this.align(2);
    this.room(2);
    if (this.littleEndian) this.buf.writeUInt16LE(v, this.pos);
    else this.buf.writeUInt16BE(v, this.pos);
    this.pos += 2;
  }
  long(v: number) {
    this.align(4);
    this.room(4);
    if (this.littleEndian) this.buf.writeInt32LE(v, this.pos);
    else this.buf.writeInt32BE(v, this.pos);
    this.pos += 4;
  }
  ulong(v: number) {
    this.align(4);
    this.room(4);
    if (this.littleEndian) this.buf.writeUInt32LE(v, this.pos);
    else this.buf.writeUInt32BE(v, this.pos);
    this.pos += 4;
  }
  longlong(v: bigint) {
    this.align(8);
    this.room(8);
    if (this.littleEndian) this.buf.writeBigInt64LE(v, this.pos);
    else this.buf.writeBigInt64BE(v, this.pos);
    this.pos += 8;
  }
  ulonglong(v: bigint) {
    this.align(8);
    this.room(8);
    if (this.littleEndian) this.buf.writeBigUInt64LE(v, this.pos);
    else this.buf.writeBigUInt64BE(v, this.pos);
    this.pos += 8;
  }
  float(v: number) {
    this.align(4);
    this.room(4);
    if (this.littleEndian) this.buf.writeFloatLE(v, this.pos);
    else this.buf.writeFloatBE(v, this.pos);
    this.pos += 4;
  }
  double(v: number) {
    this.align(8);
    this.room(8);
    if (this.littleEndian) this.buf.writeDoubleLE(v, this.pos);
    else this.buf.writeDoubleBE(v, this.pos);
    this.pos += 8;
  }
  /** ulong length counting the terminating NUL, the bytes (UTF-8, the negotiated char code set), NUL. */
  string(v: string) {
    const bytes = Buffer.from(v, 'utf8');
    this.ulong(bytes.length + 1);
    this.raw(bytes);
    this.octet(0);
  }
  raw(bytes: Uint8Array) {
    this.room(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }
  /** sequence<octet>. */
  octets(bytes: Uint8Array) {
    this.ulong(bytes.length);
    this.raw(bytes);
  }
  /** An encapsulation as sequence<octet>: its own byte-order octet, then what `fill` writes, aligned from there. */
  encapsulation(fill: (w: CdrWriter) => void, littleEndian = this.littleEndian) {
    const inner = new CdrWriter(littleEndian);
    inner.octet(littleEndian ? 1 : 0);
    fill(inner);
    this.octets(inner.bytes());
  }
  /** Overwrites a ulong already written at `at` (a GIOP message size). */
  patchUlong(at: number, v: number) {
    if (this.littleEndian) this.buf.writeUInt32LE(v, at);
    else this.buf.writeUInt32BE(v, at);
  }
  bytes(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

/** Reads CDR from `buf[start..end)`; alignment counts from `start`. */
export class CdrReader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    public littleEndian: boolean,
    readonly start = 0,
    readonly end = buf.length,
  ) {
    this.pos = start;
  }

  /** An encapsulation's bytes: the first octet says its byte order. */
  static encapsulation(bytes: Buffer): CdrReader {
    if (bytes.length < 1) throw new CdrError('empty encapsulation');
    const r = new CdrReader(bytes, (bytes[0]! & 1) === 1);
    r.pos = 1;
    return r;
  }

  get remaining() {
    return this.end - this.pos;
  }

  private need(n: number, what: string) {
    if (this.pos + n > this.end)
      throw new CdrError(`truncated CDR data: ${what} needs ${n} bytes at offset ${this.pos - this.start}, ${this.end - this.pos} left`);
  }

  align(n: number) {
    const pad = (n - ((this.pos - this.start) % n)) % n;
    this.pos = Math.min(this.pos + pad, this.end);
  }

  octet(): number {
    this.need(1, 'octet');
    return this.buf[this.pos++]!;
  }
  boolean(): boolean {
    return this.octet() !== 0;
  }
  short(): number {
    this.align(2);
    this.need(2, 'short');
    const v = this.littleEndian ? this.buf.readInt16LE(this.pos) : this.buf.readInt16BE(this.pos);
    this.pos += 2;
    return v;
  }
  ushort(): number {
    this.align(2);
    this.need(2, 'unsigned short');
    const v = this.littleEndian ? this.buf.readUInt16LE(this.pos) : this.buf.readUInt16BE(this.pos);
    this.pos += 2;
    return v;
  }
  long(): number {
    this.align(4);
    this.need(4, 'long');
    const v = this.littleEndian ? this.buf.readInt32LE(this.pos) : this.buf.readInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  ulong(): number {
    this.align(4);
    this.need(4, 'unsigned long');
    const v = this.littleEndian ? this.buf.readUInt32LE(this.pos) : this.buf.readUInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  longlong(): bigint {
    this.align(8);
    this.need(8, 'long long');
    const v = this.littleEndian ? this.buf.readBigInt64LE(this.pos) : this.buf.readBigInt64BE(this.pos);
    this.pos += 8;
    return v;
  }
  ulonglong(): bigint {
    this.align(8);
    this.need(8, 'unsigned long long');
    const v = this.littleEndian ? this.buf.readBigUInt64LE(this.pos) : this.buf.readBigUInt64BE(this.pos);
    this.pos += 8;
    return v;
  }
  float(): number {
    this.align(4);
    this.need(4, 'float');
    const v = this.littleEndian ? this.buf.readFloatLE(this.pos) : this.buf.readFloatBE(this.pos);
    this.pos += 4;
    return v;
  }
  double(): number {
    this.align(8);
    this.need(8, 'double');
    const v = this.littleEndian ? this.buf.readDoubleLE(this.pos) : this.buf.readDoubleBE(this.pos);
    this.pos += 8;
    return v;
  }
  /** The string's bytes without the NUL. */
  stringBytes(): Buffer {
    const n = this.ulong();
    if (n === 0) return Buffer.alloc(0); // tolerated: some ORBs send an empty string as length 0
    this.need(n, 'string');
    const b = this.buf.subarray(this.pos, this.pos + n - 1);
    if (this.buf[this.pos + n - 1] !== 0) throw new CdrError(`string at offset ${this.pos - this.start} is not NUL-terminated`);
    this.pos += n;
    return b;
  }
  string(): string {
    return this.stringBytes().toString('utf8');
  }
  raw(n: number): Buffer {
    this.need(n, 'octets');
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  /** sequence<octet>. */
  octets(): Buffer {
    return this.raw(this.ulong());
  }
  /** A sequence length, checked against what is left (each element takes at least `minSize` bytes). */
  seqLength(minSize: number): number {
    const n = this.ulong();
    if (n * minSize > this.remaining) throw new CdrError(`sequence of ${n} elements does not fit in the ${this.remaining} bytes left`);
    return n;
  }
}

// ---- typed values --------------------------------------------------------------------------

export const PRIMITIVES = ['boolean', 'octet', 'char', 'short', 'ushort', 'long', 'ulong', 'longlong', 'ulonglong', 'float', 'double', 'string'] as const;
export type Primitive = (typeof PRIMITIVES)[number];

/** IDL spellings accepted beside the short names. */
const ALIASES: Record<string, Primitive> = {
  'unsigned short': 'ushort',
  'unsigned long': 'ulong',
  'long long': 'longlong',
  'unsigned long long': 'ulonglong',
  int16: 'short',
  uint16: 'ushort',
  int32: 'long',
  uint32: 'ulong',
  int64: 'longlong',
  uint64: 'ulonglong',
};

export type IdlType =
  | { kind: 'primitive'; name: Primitive }
  | { kind: 'json' }
  | { kind: 'void' }
  | { kind: 'sequence'; of: IdlType }
  | { kind: 'array'; of: IdlType; length: number }
  | { kind: 'struct'; fields: [string, IdlType][] }
  | { kind: 'enum'; labels: string[] };

/** A type description error; `path` is where in the description (relative to it). */
export class TypeDescError extends Error {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
  }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Parses a type description: a name (`long`, `unsigned long long`, `string`, `json`, `void`...),
 * `{sequence: T}`, `{array: T, length: N}`, `{struct: {field: T, ...}}` (fields in order) or
 * `{enum: [LABEL, ...]}`.
 */
export function parseType(desc: unknown, path = ''): IdlType {
  const at = (p: string) => (path ? `${path}.${p}` : p);
  if (typeof desc === 'string') {
    const name = desc.trim().replace(/\s+/g, ' ');
    if (name === 'json') return { kind: 'json' };
    if (name === 'void') return { kind: 'void' };
    const prim = (PRIMITIVES as readonly string[]).includes(name) ? (name as Primitive) : ALIASES[name];
    if (!prim)
      throw new TypeDescError(
        `unknown type '${desc}': use one of ${PRIMITIVES.join(', ')}, json, void, or {sequence: T}, {array: T, length: N}, {struct: {...}}, {enum: [...]}`,
        path,
      );
    return { kind: 'primitive', name: prim };
  }
  if (!isObj(desc))
    throw new TypeDescError('a type is a name (long, string...) or an object {sequence: T} / {struct: {...}} / {enum: [...]} / {array: T, length: N}', path);
  const keys = Object.keys(desc);
  if ('sequence' in desc) {
    if (keys.length !== 1) throw new TypeDescError('{sequence: T} takes no other key', path);
    const of = parseType(desc.sequence, at('sequence'));
    if (of.kind === 'void') throw new TypeDescError('a sequence of void', at('sequence'));
    return { kind: 'sequence', of };
  }
  if ('array' in desc) {
    const length = desc.length;
    if (keys.length !== 2 || typeof length !== 'number' || !Number.isInteger(length) || length < 1)
      throw new TypeDescError('{array: T, length: N} needs a positive integer length', path);
    const of = parseType(desc.array, at('array'));
    if (of.kind === 'void') throw new TypeDescError('an array of void', at('array'));
    return { kind: 'array', of, length };
  }
  if ('struct' in desc) {
    if (keys.length !== 1 || !isObj(desc.struct) || Object.keys(desc.struct).length === 0)
      throw new TypeDescError('{struct: {field: type, ...}} needs at least one field', path);
    const fields: [string, IdlType][] = Object.entries(desc.struct).map(([k, v]) => {
      const t = parseType(v, at(`struct.${k}`));
      if (t.kind === 'void') throw new TypeDescError('a void field', at(`struct.${k}`));
      return [k, t];
    });
    return { kind: 'struct', fields };
  }
  if ('enum' in desc) {
    const labels = desc.enum;
    if (keys.length !== 1 || !Array.isArray(labels) || labels.length === 0 || !labels.every((l) => typeof l === 'string'))
      throw new TypeDescError('{enum: [LABEL, ...]} needs the labels in IDL order', path);
    return { kind: 'enum', labels: labels as string[] };
  }
  throw new TypeDescError(`unknown type description with keys ${keys.join(', ') || '(none)'}: use sequence, array, struct or enum`, path);
}

const INT_RANGES: Record<string, [number, number]> = {
  octet: [0, 0xff],
  short: [-0x8000, 0x7fff],
  ushort: [0, 0xffff],
  long: [-0x80000000, 0x7fffffff],
  ulong: [0, 0xffffffff],
};
const BIG_RANGES: Record<string, [bigint, bigint]> = {
  longlong: [-(2n ** 63n), 2n ** 63n - 1n],
  ulonglong: [0n, 2n ** 64n - 1n],
};

function bigOf(v: unknown, path: string, name: string): bigint {
  let b: bigint;
  if (typeof v === 'bigint') b = v;
  else if (typeof v === 'number' && Number.isSafeInteger(v)) b = BigInt(v);
  else if (typeof v === 'string' && /^-?\d+$/.test(v.trim())) b = BigInt(v.trim());
  else throw new TypeDescError(`${name} needs an integer (a number, or a decimal string beyond 2^53)`, path);
  const [lo, hi] = BIG_RANGES[name]!;
  if (b < lo || b > hi) throw new TypeDescError(`${b} is out of range for ${name}`, path);
  return b;
}

/** Writes `v` as type `t`; throws TypeDescError (with the value's path) on a value that does not fit. */
export function encodeValue(w: CdrWriter, t: IdlType, v: unknown, path = 'value'): void {
  switch (t.kind) {
    case 'void':
      return;
    case 'json':
      w.string(typeof v === 'string' ? v : JSON.stringify(v));
      return;
    case 'enum': {
      const i = typeof v === 'number' ? v : t.labels.indexOf(String(v));
      if (!Number.isInteger(i) || i < 0 || i >= t.labels.length) throw new TypeDescError(`'${String(v)}' is not one of ${t.labels.join(', ')}`, path);
      w.ulong(i);
      return;
    }
    case 'sequence':
    case 'array': {
      if (!Array.isArray(v)) throw new TypeDescError(`a ${t.kind} needs a list`, path);
      if (t.kind === 'array' && v.length !== t.length) throw new TypeDescError(`the array needs exactly ${t.length} elements, got ${v.length}`, path);
      if (t.kind === 'sequence') w.ulong(v.length);
      v.forEach((e, i) => encodeValue(w, t.of, e, `${path}.${i}`));
      return;
    }
    case 'struct': {
      if (!isObj(v)) throw new TypeDescError('a struct needs an object with its fields', path);
      for (const k of Object.keys(v)) if (!t.fields.some(([f]) => f === k)) throw new TypeDescError(`unknown field '${k}'`, path);
      for (const [f, ft] of t.fields) {
        if (!(f in v)) throw new TypeDescError(`missing field '${f}'`, path);
        encodeValue(w, ft, v[f], `${path}.${f}`);
      }
      return;
    }
    case 'primitive':
      break;
  }
  const name = t.name;
  switch (name) {
    case 'boolean':
      if (typeof v !== 'boolean') throw new TypeDescError('boolean needs true or false', path);
      w.boolean(v);
      return;
    case 'char': {
      if (typeof v !== 'string' || v.length !== 1 || v.charCodeAt(0) > 0x7f) throw new TypeDescError('char needs one ASCII character', path);
      w.octet(v.charCodeAt(0));
      return;
    }
    case 'string':
      if (typeof v !== 'string') throw new TypeDescError('string needs a string', path);
      if (v.includes('\0')) throw new TypeDescError('a CDR string cannot hold a NUL character', path);
      w.string(v);
      return;
    case 'float':
    case 'double':
      if (typeof v !== 'number' || !Number.isFinite(v)) throw new TypeDescError(`${name} needs a finite number`, path);
      if (name === 'float') w.float(v);
      else w.double(v);
      return;
    case 'longlong':
      w.longlong(bigOf(v, path, name));
      return;
    case 'ulonglong':
      w.ulonglong(bigOf(v, path, name));
      return;
    default: {
      const [lo, hi] = INT_RANGES[name]!;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) throw new TypeDescError(`${name} needs an integer from ${lo} to ${hi}`, path);
      if (name === 'octet') w.octet(v);
      else if (name === 'short') w.short(v);
      else if (name === 'ushort') w.ushort(v);
      else if (name === 'long') w.long(v);
      else w.ulong(v);
    }
  }
}

/** The smallest number of bytes one value of `t` takes (a bound for sequence lengths). */
function minSize(t: IdlType): number {
  switch (t.kind) {
    case 'void':
      return 0;
    case 'json':
    case 'enum':
    case 'sequence':
      return 4;
    case 'array':
      return t.length * minSize(t.of);
    case 'struct':
      return t.fields.reduce((n, [, f]) => n + minSize(f), 0);
    case 'primitive':
      return { boolean: 1, octet: 1, char: 1, short: 2, ushort: 2, long: 4, ulong: 4, longlong: 8, ulonglong: 8, float: 4, double: 8, string: 4 }[t.name];
  }
}

/**
 * A decoded value as JSON carries it: 64-bit integers beyond ±(2^53-1) as decimal strings, enums by
 * label, `json` as the string's text (the caller decides whether to parse it).
 */
export function decodeValue(r: CdrReader, t: IdlType): unknown {
  switch (t.kind) {
    case 'void':
      return undefined;
    case 'json':
      return r.string();
    case 'enum': {
      const i = r.ulong();
      return t.labels[i] ?? i;
    }
    case 'sequence':
    case 'array': {
      const n = t.kind === 'sequence' ? r.seqLength(Math.max(1, minSize(t.of))) : t.length;
      const out = new Array<unknown>(n);
      for (let i = 0; i < n; i++) out[i] = decodeValue(r, t.of);
      return out;
    }
    case 'struct': {
      const o: Record<string, unknown> = {};
      for (const [f, ft] of t.fields) o[f] = decodeValue(r, ft);
      return o;
    }
    case 'primitive':
      switch (t.name) {
        case 'boolean':
          return r.boolean();
        case 'octet':
          return r.octet();
        case 'char':
          return String.fromCharCode(r.octet());
        case 'short':
          return r.short();
        case 'ushort':
          return r.ushort();
        case 'long':
          return r.long();
        case 'ulong':
          return r.ulong();
        case 'longlong':
          return exactNumber(r.longlong());
        case 'ulonglong':
          return exactNumber(r.ulonglong());
        case 'float':
          return r.float();
        case 'double':
          return r.double();
        case 'string':
          return r.string();
      }
  }
}

/** A short IDL-like spelling of a type, for messages. */
export function typeName(t: IdlType): string {
  switch (t.kind) {
    case 'primitive':
      return t.name;
    case 'json':
    case 'void':
      return t.kind;
    case 'sequence':
      return `sequence<${typeName(t.of)}>`;
    case 'array':
      return `${typeName(t.of)}[${t.length}]`;
    case 'struct':
      return `struct {${t.fields.map(([f, ft]) => `${typeName(ft)} ${f}`).join('; ')}}`;
    case 'enum':
      return `enum {${t.labels.join(', ')}}`;
  }
}
