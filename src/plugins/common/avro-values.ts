// How Avro values become record values and back: longs beyond 2^53 as decimal strings, bytes and
// fixed as base64 strings (what Kafka Connect's JsonConverter writes for bytes), unions unwrapped
// where their branches can be told apart (avsc's `wrapUnions: 'auto'`).
import avro from 'avsc';
import type { Rec } from '../types.js';

const MAX = BigInt(Number.MAX_SAFE_INTEGER);
const MIN = -MAX;

/** Zig-zag varint bytes of a long given as number, bigint or decimal string. */
function longBytes(v: unknown): Buffer {
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
  const safe = avro.Type.forSchema(schema as avro.Schema, { ...opts, registry: { long: LONG } });
  if (JSON.stringify(schema).includes('"long"')) FAST.set(safe, avro.Type.forSchema(schema as avro.Schema, opts));
  return safe;
}

const precisionLoss = (e: unknown) => e instanceof Error && e.message === 'potential precision loss';

/** Decodes with the fast type, and again with the safe one when a long is beyond 2^53. */
export function decodeValue(t: avro.Type, buf: Buffer, pos: number): { value: unknown; offset: number } {
  const fast = FAST.get(t);
  if (fast) {
    try {
      return fast.decode(buf, pos);
    } catch (e) {
      if (!precisionLoss(e)) throw e;
    }
  }
  return t.decode(buf, pos);
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
      if (problems.length < 3) problems.push(`${path.length ? path.join('.') : '(record)'}: ${JSON.stringify(val) ?? 'undefined'} is not ${JSON.stringify(t.schema())}`);
    },
  });
  return problems.join('; ') || 'does not match the schema';
}
