// How Avro values become record values and back: longs beyond 2^53 as decimal strings, bytes and
// fixed as base64 strings (what Kafka Connect's JsonConverter writes for bytes), unions unwrapped
// where their branches can be told apart (avsc's `wrapUnions: 'auto'`).
import avro from 'avsc';
import { readSetting } from '../../../settings.js';
import type { Rec } from '../../types.js';

const MAX = BigInt(Number.MAX_SAFE_INTEGER);
const MIN = -MAX;

/** Zig-zag varint bytes of a long given as number, bigint or decimal string. */
export function longBytes(v: unknown): Buffer {
  let n = typeof v === 'bigint' ? v : BigInt(v as number | string);
  n = n >= 0n ? n << 1n : (-n << 1n) - 1n;
  const out: number[] = [];
  while (n >= 0x80n) {
    out.push(Number(n & 0x7fn) | 0x80);
    n >>= 7n;
  }
  out.push(Number(n));
  return Buffer.from(out);
}

const LONG_RE = /^-?\d{1,19}$/;
const inLongRange = (n: bigint) => n >= -(1n << 63n) && n < 1n << 63n;

/**
 * avsc's long refuses values beyond 2^53 ("potential precision loss"). This one reads the varint
 * itself (noUnpack): a number when it is safe, else a decimal string; it writes numbers, bigints
 * and decimal strings (CSV input).
 */
export const LONG = avro.types.LongType.__with(
  {
    fromBuffer(b: Buffer): number | string {
      // Up to 7 varint bytes hold 49 bits: always safe, and the common case.
      if (b.length <= 7) {
        let v = 0;
        let mul = 1;
        for (let i = 0; i < b.length; i++, mul *= 128) v += (b[i]! & 0x7f) * mul;
        return v % 2 === 0 ? v / 2 : -(v + 1) / 2;
      }
      let u = 0n;
      for (let i = b.length - 1; i >= 0; i--) u = (u << 7n) | BigInt(b[i]! & 0x7f);
      const n = u & 1n ? -((u + 1n) >> 1n) : u >> 1n;
      return n >= MIN && n <= MAX ? Number(n) : n.toString();
    },
    toBuffer: longBytes,
    fromJSON: (v: unknown) => v,
    toJSON: (v: unknown) => (typeof v === 'string' ? v : Number(v)),
    isValid(v: unknown): boolean {
      if (typeof v === 'number') return Number.isSafeInteger(v);
      if (typeof v === 'bigint') return inLongRange(v);
      return typeof v === 'string' && LONG_RE.test(v) && inLongRange(BigInt(v));
    },
    compare: (a: unknown, b: unknown) => {
      const x = BigInt(a as number);
      const y = BigInt(b as number);
      return x < y ? -1 : x > y ? 1 : 0;
    },
  },
  true,
);

/** The same schema with avsc's native long: about twice as fast, but it refuses longs beyond 2^53. */
const FAST = new WeakMap<avro.Type, avro.Type>();

/** An avsc type for a parsed schema, with the long above (and its fast twin, see decodeValue). */
export function avroType(schema: unknown): avro.Type {
  const opts = { wrapUnions: 'auto' as const, omitRecordMethods: true };
  const safe = avro.Type.forSchema(schema as avro.Schema, { ...opts, typeHook, registry: { long: LONG } });
  if (JSON.stringify(schema).includes('"long"')) FAST.set(safe, avro.Type.forSchema(schema as avro.Schema, { ...opts, typeHook }));
  return safe;
}

// ---- bounded decoding --------------------------------------------------------------------------
// avsc trusts the counts it reads: an array block count of 2^40 over zero-width items (nulls, empty
// records) grew one array until V8 died (issue 28), and a map count loops as long over one key.
// Our types read arrays and maps themselves, refusing a block count larger than the bytes left, and
// charge every value that may take no byte (records, nulls, fixed of size 0) to a budget set from
// the input's size, so nested empty values cannot multiply either.

/** Input that claims more values than its bytes can hold: a corrupt or hostile input, not a bug. */
export class AvroBoundError extends Error {
  override name = 'AvroBoundError';
}

/** What one input may still build; shared by all the datums of a container block. */
export interface DecodeBudget {
  left: number;
  bytes: number;
}

/**
 * Values (records, nulls) an input may build per byte. Data that is not hostile builds about one
 * (a record of nullable fields: one byte per null); deep nesting of records with one small field
 * comes closest, a few per byte.
 */
export const VALUES_PER_BYTE = 4;

export const budgetFor = (bytes: number): DecodeBudget => ({ left: VALUES_PER_BYTE * bytes + 64, bytes });

/** The budget of the decode under way (decoding is synchronous: one at a time per thread). */
let current: DecodeBudget | undefined;

function charge(): void {
  if (current && --current.left < 0) {
    throw new AvroBoundError(
      `the data builds more than ${VALUES_PER_BYTE} records or null values per byte (${current.bytes} bytes): a count or nesting that no data backs (corrupt or hostile input)`,
    );
  }
}

/** Records, arrays and maps open around the value being read (decoding is synchronous). */
let depth = 0;
let maxDepth: number | undefined;

/**
 * A recursive schema (a record holding a union with itself) nests as deep as the data says: avsc
 * reads recursively, and later steps walk records recursively, so the depth has the ceiling the
 * other decoders have. Paired with a `depth--` after the read; decodeValue restores it on a throw.
 */
function enter(): void {
  maxDepth ??= readSetting('DECODE_MAX_DEPTH');
  if (++depth > maxDepth)
    throw new AvroBoundError(
      `records, arrays and maps nested deeper than ${maxDepth} (SVC_DECODE_MAX_DEPTH): flatten the data at its source, or raise the setting`,
    );
}

interface Tap {
  buf: Buffer;
  pos: number;
  readLong(): number;
  skipLong(): void;
  readString(): string;
}
type Readable = { _read(tap: Tap): unknown; itemsType?: Readable; valuesType?: Readable };

/** The item count of the block at the tap: a negative count is followed by a byte size (skipped). */
function blockCount(tap: Tap, what: string): number {
  let n = tap.readLong();
  if (n < 0) {
    n = -n;
    tap.skipLong();
  }
  // Every item counts at least one byte, even one that takes none (a null): no allocation or loop
  // beyond what the input can back. A tap already past the end reads NaN or 0 and stops the block.
  const left = tap.buf.length - tap.pos;
  if (n > left) throw new AvroBoundError(`${what} block announces ${n} items, ${Math.max(0, left)} bytes are left (each item counts at least one byte)`);
  return n;
}

function readArray(this: Readable, tap: Tap): unknown[] {
  const items = this.itemsType!;
  let val: unknown[] | undefined;
  let i = 0;
  let n: number;
  enter();
  while ((n = blockCount(tap, 'array'))) {
    val ??= new Array<unknown>(n); // preallocated as avsc does (faster); n is bounded above
    while (n--) val[i++] = items._read(tap);
  }
  depth--;
  return val ?? [];
}

function readMap(this: Readable, tap: Tap): Record<string, unknown> {
  const values = this.valuesType!;
  const val: Record<string, unknown> = {};
  let n: number;
  enter();
  while ((n = blockCount(tap, 'map'))) {
    while (n--) {
      const key = tap.readString();
      val[key] = values._read(tap);
    }
  }
  depth--;
  return val;
}

// avsc freezes its types, so the bounded readers come as subclasses, built through its typeHook.
// (Classes of avsc's constructor functions: their constructors call _createReader, which the
// record subclass wraps.)
const types = avro.types as unknown as Record<string, new (schema: unknown, opts: unknown) => Readable>;

class BoundedArray extends (types.ArrayType!) {
  override _read(tap: Tap) {
    return readArray.call(this, tap);
  }
}

class BoundedMap extends (types.MapType!) {
  override _read(tap: Tap) {
    return readMap.call(this, tap);
  }
}

/** Records (empty ones take no byte) and fixed of size 0: each read is charged. */
class ChargedRecord extends (types.RecordType!) {
  _createReader() {
    const read = (types.RecordType!.prototype as unknown as { _createReader(): (tap: Tap) => unknown })._createReader.call(this);
    return (tap: Tap) => {
      charge();
      enter();
      const value = read(tap);
      depth--;
      return value;
    };
  }
}

class ChargedFixed extends (types.FixedType!) {
  override _read(tap: Tap) {
    charge();
    return super._read(tap);
  }
}

class ChargedNull extends (types.NullType!) {
  override _read() {
    charge();
    return null;
  }
}

function typeHook(schema: unknown, opts: unknown): avro.Type | undefined {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return undefined; // names and unions: avsc's
  const s = schema as { type?: unknown; size?: unknown };
  const C =
    s.type === 'array'
      ? BoundedArray
      : s.type === 'map'
        ? BoundedMap
        : s.type === 'record' || s.type === 'error'
          ? ChargedRecord
          : s.type === 'null'
            ? ChargedNull
            : s.type === 'fixed' && s.size === 0
              ? ChargedFixed
              : undefined;
  return C && (new C(schema, opts) as unknown as avro.Type);
}

const precisionLoss = (e: unknown) => e instanceof Error && e.message === 'potential precision loss';

/**
 * Decodes with the fast type, and again with the safe one when a long is beyond 2^53. What it
 * builds is charged to `budget` (default: one for the bytes from `pos`); throws AvroBoundError when
 * the input claims more than its bytes hold.
 */
export function decodeValue(t: avro.Type, buf: Buffer, pos: number, budget: DecodeBudget = budgetFor(buf.length - pos)): { value: unknown; offset: number } {
  const outer = current;
  const outerDepth = depth;
  current = budget;
  try {
    const fast = FAST.get(t);
    if (fast) {
      const left = budget.left;
      try {
        return fast.decode(buf, pos);
      } catch (e) {
        if (!precisionLoss(e)) throw e;
        budget.left = left; // decoded again below: charged once
        depth = outerDepth;
      }
    }
    return t.decode(buf, pos);
  } finally {
    current = outer;
    depth = outerDepth;
  }
}

/** Encodes with the fast type, and with the safe one (decimal strings, bigints) when that refuses. */
export function encodeValue(t: avro.Type, v: unknown): Buffer {
  const fast = FAST.get(t);
  if (fast) {
    try {
      return fast.toBuffer(v);
    } catch {
      /* a long given as string or beyond 2^53: the safe type decides */
    }
  }
  return t.toBuffer(v);
}

type T = avro.Type & {
  fields?: { name: string; type: T }[];
  itemsType?: T;
  valuesType?: T;
  types?: T[];
  size?: number;
};

/** Whether values of this type can hold bytes somewhere (then records need converting). */
function holdsBytes(t: T, seen = new Set<T>()): boolean {
  if (seen.has(t)) return false;
  seen.add(t);
  switch (t.typeName) {
    case 'bytes':
    case 'fixed':
      return true;
    case 'record':
    case 'error':
      return t.fields!.some((f) => holdsBytes(f.type, seen));
    case 'array':
      return holdsBytes(t.itemsType!, seen);
    case 'map':
      return holdsBytes(t.valuesType!, seen);
    case 'union:unwrapped':
    case 'union:wrapped':
      return t.types!.some((b) => holdsBytes(b, seen));
    default:
      return false;
  }
}

/** Every Buffer inside a decoded value as base64 (a fresh value tree; decoded values are ours). */
function buffersToBase64(v: unknown): unknown {
  if (Buffer.isBuffer(v)) return v.toString('base64');
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = buffersToBase64(v[i]);
    return v;
  }
  if (v !== null && typeof v === 'object') {
    const o = v as Rec;
    for (const k in o) o[k] = buffersToBase64(o[k]);
  }
  return v;
}

/**
 * Base64 strings where the schema has bytes or fixed, so records decoded by us (or written by hand
 * in JSON) encode again. Copies what it changes: the sink's records stay as they were.
 */
function base64ToBuffers(t: T, v: unknown): unknown {
  switch (t.typeName) {
    case 'bytes':
    case 'fixed':
      return typeof v === 'string' ? Buffer.from(v, 'base64') : v;
    case 'record':
    case 'error': {
      if (v === null || typeof v !== 'object') return v;
      const o = { ...(v as Rec) };
      for (const f of t.fields!) if (o[f.name] !== undefined && holdsBytes(f.type)) o[f.name] = base64ToBuffers(f.type, o[f.name]);
      return o;
    }
    case 'array':
      return Array.isArray(v) ? v.map((x) => base64ToBuffers(t.itemsType!, x)) : v;
    case 'map': {
      if (v === null || typeof v !== 'object') return v;
      const o: Rec = {};
      for (const [k, x] of Object.entries(v as Rec)) o[k] = base64ToBuffers(t.valuesType!, x);
      return o;
    }
    case 'union:unwrapped': {
      if (v === null) return v;
      const branches = t.types!;
      if (typeof v === 'string') {
        // A string goes to a bytes branch only when no string-like branch would take it as it is.
        if (branches.some((b) => b.typeName === 'string' || b.typeName === 'enum')) return v;
        const b = branches.find((x) => x.typeName === 'bytes' || x.typeName === 'fixed');
        return b ? base64ToBuffers(b, v) : v;
      }
      const b = branches.find((x) => holdsBytes(x) && x.typeName === (Array.isArray(v) ? 'array' : x.typeName));
      return b ? base64ToBuffers(b, v) : v;
    }
    case 'union:wrapped': {
      if (v === null || typeof v !== 'object') return v;
      const [k, x] = Object.entries(v as Rec)[0] ?? [];
      const b = t.types!.find((y) => y.branchName === k);
      return b && k !== undefined ? { [k]: base64ToBuffers(b, x) } : v;
    }
    default:
      return v;
  }
}

/** Converters between decoded Avro values and records for one type. */
export function valueMapping(type: avro.Type): { toRecord: (v: unknown) => Rec; fromRecord: (r: Rec) => unknown } {
  const t = type as T;
  const bytes = holdsBytes(t);
  const isRecord = t.typeName === 'record' || t.typeName === 'error';
  return {
    // A top-level value that is not a record (a schema of "string") becomes { _value }, as in ndjson.
    toRecord: (v) => {
      const x = bytes ? buffersToBase64(v) : v;
      return isRecord ? (x as Rec) : { _value: x };
    },
    fromRecord: (r) => {
      const v = isRecord ? r : r._value;
      return bytes ? base64ToBuffers(t, v) : v;
    },
  };
}

/** A readable reason why a record does not fit the schema: the field path and the value. */
export function whyInvalid(type: avro.Type, v: unknown): string {
  const problems: string[] = [];
  type.isValid(v, {
    errorHook: (path, val, t) => {
      if (problems.length < 3)
        problems.push(`${path.length ? path.join('.') : '(record)'}: ${JSON.stringify(val) ?? 'undefined'} is not ${JSON.stringify(t.schema())}`);
    },
  });
  return problems.join('; ') || 'does not match the schema';
}
