// A gNMI TypedValue as a JSON value, exact where JSON can be: 64-bit integers within ±(2^53-1)
// are numbers and decimal strings beyond (src/util/exact-number.ts, the rule for every int64 in
// svc), bytes are base64, a float is written with the fewest digits that give back the same
// 32-bit float, a Decimal64 is its digits × 10^-precision, a leaf-list an array, json_val and
// json_ietf_val their parsed JSON (integers beyond 2^53 there become decimal strings too).
import { exactNumber } from '../../../util/exact-number.js';

/** A TypedValue as @grpc/proto-loader decodes it (keepCase, longs as strings, oneofs). */
export interface TypedValueMsg {
  value?: string;
  string_val?: string;
  int_val?: string;
  uint_val?: string;
  bool_val?: boolean;
  bytes_val?: Buffer;
  float_val?: number;
  double_val?: number;
  decimal_val?: { digits?: string; precision?: number };
  leaflist_val?: { element?: TypedValueMsg[] };
  any_val?: { type_url?: string; value?: Buffer };
  json_val?: Buffer;
  json_ietf_val?: Buffer;
  ascii_val?: string;
  proto_bytes?: Buffer;
}

/** The kind of a value as records name it (`type`): the oneof member without `_val`. */
export type ValueType =
  | 'string'
  | 'int'
  | 'uint'
  | 'bool'
  | 'bytes'
  | 'float'
  | 'double'
  | 'decimal'
  | 'leaflist'
  | 'any'
  | 'json'
  | 'json_ietf'
  | 'ascii'
  | 'proto_bytes';

export interface Decoded {
  type: ValueType | null;
  value: unknown;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** NaN and the infinities have no JSON number: their names, as strings. */
const finite = (n: number): number | string => (Number.isFinite(n) ? n : String(n));

/** The shortest decimal that reads back as the same 32-bit float (1.1f is 1.1, not 1.100000023841858). */
export function float32(n: number): number | string {
  if (!Number.isFinite(n)) return String(n);
  for (let p = 1; p < 9; p++) {
    const d = Number(n.toPrecision(p));
    if (Math.fround(d) === n) return d;
  }
  return Number(n.toPrecision(9));
}

/** digits × 10^-precision: a number when the digits fit in a double exactly, else its decimal text. */
export function decimal64(digits: string, precision: number): number | string {
  const neg = digits.startsWith('-');
  let d = (neg ? digits.slice(1) : digits).replace(/^0+(?=\d)/, '');
  if (precision > 0) {
    d = d.padStart(precision + 1, '0');
    d = `${d.slice(0, -precision)}.${d.slice(-precision)}`.replace(/\.?0+$/, '');
  }
  const text = (neg && d !== '0' ? '-' : '') + d;
  const b = BigInt(digits);
  return b <= MAX_SAFE && b >= -MAX_SAFE ? Number(text) : text;
}

/**
 * JSON text with every integer beyond ±(2^53-1) quoted (a decimal string), so that parsing keeps
 * its digits; strings and other numbers untouched.
 */
export function quoteBigIntegers(text: string): string {
  if (!/\d{16}/.test(text)) return text; // the usual case: no integer of 16 digits or more
  return text.replace(/"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g, (tok) => {
    if (tok.startsWith('"') || /[.eE]/.test(tok)) return tok;
    const b = BigInt(tok);
    return b > MAX_SAFE || b < -MAX_SAFE ? `"${tok}"` : tok;
  });
}

/** Parsed JSON of json_val / json_ietf_val; text that is not JSON stays a string. */
function parseJson(bytes: Buffer): unknown {
  const text = bytes.toString('utf8');
  try {
    return JSON.parse(quoteBigIntegers(text));
  } catch {
    return text;
  }
}

const int64 = (s: string | undefined) => exactNumber(BigInt(s ?? '0'));

/** The value of a TypedValue and its kind; an empty TypedValue (no member set) is `null`. */
export function decodeTypedValue(tv: TypedValueMsg | null | undefined): Decoded {
  switch (tv?.value) {
    case 'string_val':
      return { type: 'string', value: tv.string_val ?? '' };
    case 'int_val':
      return { type: 'int', value: int64(tv.int_val) };
    case 'uint_val':
      return { type: 'uint', value: int64(tv.uint_val) };
    case 'bool_val':
      return { type: 'bool', value: tv.bool_val ?? false };
    case 'bytes_val':
      return { type: 'bytes', value: (tv.bytes_val ?? Buffer.alloc(0)).toString('base64') };
    case 'float_val':
      return { type: 'float', value: float32(tv.float_val ?? 0) };
    case 'double_val':
      return { type: 'double', value: finite(tv.double_val ?? 0) };
    case 'decimal_val':
      return { type: 'decimal', value: decimal64(tv.decimal_val?.digits ?? '0', tv.decimal_val?.precision ?? 0) };
    case 'leaflist_val':
      return { type: 'leaflist', value: (tv.leaflist_val?.element ?? []).map((e) => decodeTypedValue(e).value) };
    case 'any_val':
      return { type: 'any', value: { type_url: tv.any_val?.type_url ?? '', value: (tv.any_val?.value ?? Buffer.alloc(0)).toString('base64') } };
    case 'json_val':
      return { type: 'json', value: parseJson(tv.json_val ?? Buffer.alloc(0)) };
    case 'json_ietf_val':
      return { type: 'json_ietf', value: parseJson(tv.json_ietf_val ?? Buffer.alloc(0)) };
    case 'ascii_val':
      return { type: 'ascii', value: tv.ascii_val ?? '' };
    case 'proto_bytes':
      return { type: 'proto_bytes', value: (tv.proto_bytes ?? Buffer.alloc(0)).toString('base64') };
    default:
      return { type: null, value: null };
  }
}
