// 64-bit integers as protobufjs writes them: two unsigned 32-bit words (its LongBits shape, which
// Writer.fixed64/sfixed64/int64 take as they are), made from decimal text, safe integers and
// milliseconds with plain number arithmetic (every intermediate below 2^53). The sink's hot path
// (one time per data point) so needs neither BigInt nor the `long` package's decimal parsing.

export interface Bits64 {
  low: number;
  high: number;
}

const TWO32 = 4294967296;

/** A non-negative safe integer as words. */
function fromSafe(n: number): Bits64 {
  return { low: n % TWO32, high: Math.floor(n / TWO32) };
}

/** b * m (mod 2^64), for m <= 2^21: low * m stays below 2^53. */
function mulSmall(b: Bits64, m: number): Bits64 {
  const t = b.low * m;
  return { low: t % TWO32, high: (b.high * m + Math.floor(t / TWO32)) % TWO32 };
}

/** b + a (mod 2^64), for 0 <= a < 2^32. */
function addSmall(b: Bits64, a: number): Bits64 {
  const t = b.low + a;
  return { low: t % TWO32, high: (b.high + Math.floor(t / TWO32)) % TWO32 };
}

/** -b in two's complement. */
function negate(b: Bits64): Bits64 {
  const low = (~b.low + 1) >>> 0;
  return { low, high: (~b.high + (low === 0 ? 1 : 0)) >>> 0 };
}

const UINT64_MAX_TEXT = '18446744073709551615';

/** Decimal text of an unsigned 64-bit integer (at most 2^64 - 1); undefined for anything else. */
export function uint64FromDecimal(text: string): Bits64 | undefined {
  if (!/^\d{1,20}$/.test(text) || (text.length === 20 && text > UINT64_MAX_TEXT)) return undefined;
  // text = head * 10^9 + tail, head below 2^35.
  const cut = Math.max(0, text.length - 9);
  let b = fromSafe(cut ? Number(text.slice(0, cut)) : 0);
  b = mulSmall(mulSmall(mulSmall(b, 1000), 1000), 1000);
  return addSmall(b, Number(text.slice(cut)));
}

/** A safe integer (negative ones in two's complement). */
export function int64FromSafe(n: number): Bits64 {
  return n < 0 ? negate(fromSafe(-n)) : fromSafe(n);
}

/** Nanoseconds since the epoch of a time in milliseconds (kept to the microsecond, as Date.parse and the time parsers give it). */
export function nanosFromMs(ms: number): Bits64 {
  const micros = Math.round(ms * 1000);
  const b = mulSmall(fromSafe(Math.abs(micros)), 1000);
  return micros < 0 ? negate(b) : b;
}

/** A bigint in int64's range, in two's complement (the rare path: integers past 2^53). */
export function int64FromBigInt(v: bigint): Bits64 {
  return { low: Number(v & 0xffffffffn), high: Number((v >> 32n) & 0xffffffffn) };
}

/** The value as a number (exact up to 2^53), signed or not. */
export function bitsToNumber(b: Bits64, signed: boolean): number {
  const high = signed && b.high >= 0x80000000 ? b.high - TWO32 : b.high;
  return high * TWO32 + b.low;
}

/** The value as decimal text (unsigned), for messages and tests. */
export function bitsToDecimal(b: Bits64): string {
  return ((BigInt(b.high) << 32n) | BigInt(b.low)).toString();
}

export const isZero = (b: Bits64) => b.low === 0 && b.high === 0;
