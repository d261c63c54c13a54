/**
 * A 64-bit integer as JSON can carry it exactly: a number within ±(2^53-1), else a decimal string
 * (the rule for Counter64 and other int64 values everywhere in the API).
 */
export function exactNumber(b: bigint): number | string {
  return b <= BigInt(Number.MAX_SAFE_INTEGER) && b >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(b) : b.toString();
}
