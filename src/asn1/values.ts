// The record mapping of ASN.1 values, shared by every encoding's decoder (docs/formats/asn1.md).
import { namedBitsOf } from './compile.js';
import type { Body } from './model.js';

const TWO53 = 2n ** 53n;

/** INTEGER: a JSON number when exact (|v| < 2^53), else its decimal string. */
export const intValue = (v: bigint): number | string => (v < TWO53 && v > -TWO53 ? Number(v) : v.toString());

/** ENUMERATED: the item's name; an unknown value (a later extension) stays a number. */
export function enumName(body: Body, v: number): string | number {
  let m = (body as Body & { _enumNames?: Map<number, string> })._enumNames;
  if (!m) {
    m = new Map([...(body.enumRoot ?? []), ...(body.enumExt ?? [])].map((i) => [i.value, i.name]));
    (body as Body & { _enumNames?: Map<number, string> })._enumNames = m;
  }
  return m.get(v) ?? v;
}

/** BIT STRING: '0'/'1' characters, or the names of the set bits when the type names its bits. */
export const bitsValue = (body: Body, bits: string): string | string[] => (body.named ? namedBitsOf(bits, body.named) : bits);

/** GeneralizedTime `YYYYMMDDHH[MM[SS[.f]]][Z|±HHMM]` as ISO 8601; a local time keeps no offset. */
export function generalizedTime(s: string): string {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})?(\d{2})?(?:[.,](\d+))?(Z|[+-]\d{2}(?:\d{2})?)?$/.exec(s);
  if (!m) throw new Error(`invalid GeneralizedTime '${s}'`);
  const [, y, mo, d, h, mi = '00', se = '00', frac, tz] = m;
  return `${y}-${mo}-${d}T${h}:${mi}:${se}${frac ? '.' + frac : ''}${zone(tz)}`;
}

/** UTCTime `YYMMDDhhmm[ss](Z|±hhmm)`: years 50-99 are 19xx, 00-49 are 20xx (as X.509). */
export function utcTime(s: string): string {
  const m = /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})?(Z|[+-]\d{4})?$/.exec(s);
  if (!m) throw new Error(`invalid UTCTime '${s}'`);
  const [, yy, mo, d, h, mi, se = '00', tz] = m;
  const y = Number(yy) >= 50 ? `19${yy}` : `20${yy}`;
  return `${y}-${mo}-${d}T${h}:${mi}:${se}${zone(tz)}`;
}

const zone = (tz: string | undefined): string => (!tz ? '' : tz === 'Z' ? 'Z' : `${tz.slice(0, 3)}:${tz.slice(3, 5) || '00'}`);

/** A REAL that JSON cannot hold (±infinity, NaN) as a string; -0 as 0. */
export const realValue = (v: number): number | string => (Number.isFinite(v) ? (v === 0 ? 0 : v) : String(v));
