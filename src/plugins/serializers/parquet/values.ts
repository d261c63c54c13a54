// How Parquet values become record values. JSON sinks cannot write bigint or bytes, so every value
// is made JSON-safe here: INT64 -> number when safe else decimal string, timestamps -> ISO 8601,
// decimals -> exact (number up to 15 digits, else string), unannotated binary -> base64.
import type { ParquetParsers, SchemaElement } from 'hyparquet';

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** An integer as a number when that is exact, else as its decimal string. */
export function intValue(v: bigint): number | string {
  return v <= MAX_SAFE && v >= -MAX_SAFE ? Number(v) : v.toString();
}

/** `units` since the epoch (perSecond units a second) as ISO 8601 UTC with `digits` fraction digits. */
export function isoTimestamp(units: bigint, perSecond: bigint, digits: number): string {
  let s = units / perSecond;
  let frac = units % perSecond;
  if (frac < 0n) {
    frac += perSecond;
    s -= 1n;
  }
  const secs = Number(s);
  const d = new Date(secs * 1000);
  // Outside JavaScript's date range (±275,760 years): the integer is all we can say.
  if (!Number.isSafeInteger(secs) || Number.isNaN(d.getTime())) return units.toString();
  return `${d.toISOString().replace(/\.\d{3}Z$/, '')}.${frac.toString().padStart(digits, '0')}Z`;
}

const toBig = (v: unknown): bigint => (typeof v === 'bigint' ? v : BigInt(v as number));
const textDecoder = new TextDecoder();

/** hyparquet's hooks for logical types, so nested values are converted where they are read. */
export const parsers: Partial<ParquetParsers> = {
  timestampFromMilliseconds: (v) => (v == null ? v : isoTimestamp(toBig(v), 1000n, 3)),
  timestampFromMicroseconds: (v) => (v == null ? v : isoTimestamp(toBig(v), 1_000_000n, 6)),
  timestampFromNanoseconds: (v) => (v == null ? v : isoTimestamp(toBig(v), 1_000_000_000n, 9)),
  dateFromDays: (days) => (days == null ? days : new Date(days * 86_400_000).toISOString().replace(/T.*$/, '')),
  // A JSON column that holds something else stays readable as text instead of failing the row group.
  jsonFromBytes: (bytes) => {
    if (!bytes) return bytes;
    const text = textDecoder.decode(bytes);
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  },
};

const isDecimal = (e: SchemaElement) => e.converted_type === 'DECIMAL' || e.logical_type?.type === 'DECIMAL';

/**
 * The element hyparquet should read with: decimals lose their annotation so that their raw
 * unscaled integers reach decimalOf (hyparquet's own conversion goes through a float multiply:
 * 3 * 0.1 = 0.30000000000000004); ENUM is text.
 */
export function readerElement(e: SchemaElement): SchemaElement {
  if (isDecimal(e)) {
    const { converted_type: _c, logical_type: _l, ...rest } = e;
    return rest;
  }
  if (e.converted_type === 'ENUM') return { ...e, converted_type: 'UTF8' };
  return e;
}

/** A big-endian two's-complement integer (decimal in BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY). */
function signedBigEndian(bytes: Uint8Array): bigint {
  if (bytes.length === 0) return 0n;
  let v = 0n;
  for (const b of bytes) v = (v << 8n) | BigInt(b);
  return bytes[0]! & 0x80 ? v - (1n << BigInt(bytes.length * 8)) : v;
}

/** An unscaled decimal as text with `scale` fraction digits. */
export function decimalText(unscaled: bigint, scale: number): string {
  const neg = unscaled < 0n;
  let digits = (neg ? -unscaled : unscaled).toString();
  if (scale > 0) {
    digits = digits.padStart(scale + 1, '0');
    digits = `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  } else if (scale < 0) digits += '0'.repeat(-scale);
  return neg ? `-${digits}` : digits;
}

type Leaf = (v: unknown) => unknown;

/** Applies `f` to the scalars of a value that list assembly may have nested in arrays. */
const deep = (f: Leaf): Leaf => {
  const walk = (v: unknown): unknown => (Array.isArray(v) ? v.map(walk) : v === undefined || v === null ? v : f(v));
  return walk;
};

/**
 * The conversion for one physical column's values (after hyparquet's own), or undefined when its
 * values are fine as they are. Decimals: a number when precision <= 15 (exact in a double), else a
 * string, so 12345678901234567.89 is not silently rounded.
 */
export function leafConverter(e: SchemaElement): Leaf | undefined {
  if (isDecimal(e)) {
    const lt = e.logical_type as { scale?: number; precision?: number } | undefined;
    const scale = e.scale ?? lt?.scale ?? 0;
    const precision = e.precision ?? lt?.precision ?? 38;
    return deep((v) => {
      const unscaled = v instanceof Uint8Array ? signedBigEndian(v) : toBig(v);
      const text = decimalText(unscaled, scale);
      return precision <= 15 ? Number(text) : text;
    });
  }
  if (e.type === 'INT64' || e.type === 'INT96') return deep((v) => (typeof v === 'bigint' ? intValue(v) : v));
  if (e.type === 'BYTE_ARRAY' || e.type === 'FIXED_LEN_BYTE_ARRAY') {
    return deep((v) => (v instanceof Uint8Array ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') : v));
  }
  return undefined;
}

/** Makes a value assembled from nested columns JSON-safe: undefined -> null, stray bigint -> number/string. */
export function jsonSafe(v: unknown): unknown {
  if (v === undefined || v === null) return null;
  if (typeof v === 'bigint') return intValue(v);
  if (Array.isArray(v)) return v.map(jsonSafe);
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    for (const k of Object.keys(o)) o[k] = jsonSafe(o[k]);
    return o;
  }
  return v;
}
