// Reading a time from a record value: epoch numbers in s/ms/us/ns, ISO 8601, 3GPP compact
// (20260101120000+0100) and custom strftime-like formats, as milliseconds since the epoch.
// Shared by timestamp_normalize, window_aggregate and deduplicate.
import { ConfigError } from '../../core/errors.js';

/** Values longer than this are failures without being parsed (no timestamp is that long). */
export const MAX_LEN = 64;
/** What the parsers return for text that is not a time (they work in numbers). */
export const NOT_A_TIME = -Infinity;
export const MAX_DATE_MS = 8.64e15;
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const UNIT_DIGITS: Record<string, number> = { s: -3, ms: 0, us: 3, ns: 6 };

// Extended ISO 8601 (2026-01-01T12:00:00.123+01:00, a space instead of T, date only) and the basic /
// 3GPP form (20260101120000+0100, 20260101T120000.5Z): year, month, day, hour, minute, second, fraction, offset.
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?[ ]?(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;
const COMPACT = /^(\d{4})(\d{2})(\d{2})[Tt]?(\d{2})(\d{2})(\d{2})(?:[.,](\d{1,9}))?(Z|z|[+-]\d{2}:?\d{2})?$/;
const INT = /^[+-]?\d+$/;
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/** Offset text (Z, +01, +0100, +01:00) in minutes, or NaN. */
function offsetMinutes(z: string): number {
  if (z === 'Z' || z === 'z') return 0;
  const sign = z[0] === '-' ? -1 : 1;
  const h = Number(z.slice(1, 3));
  const m = z.length > 3 ? Number(z.slice(z.length - 2)) : 0;
  return h > 23 || m > 59 ? NaN : sign * (h * 60 + m);
}

const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Epoch milliseconds of checked calendar parts, or NOT_A_TIME. `frac` is the fraction digits (only the first 3 count). */
function fromParts(y: number, mo: number, d: number, h: number, mi: number, s: number, frac: string | undefined, offMin: number): number {
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59 || Number.isNaN(offMin)) return NOT_A_TIME;
  if (d > (mo === 2 && isLeap(y) ? 29 : DAYS[mo - 1]!)) return NOT_A_TIME;
  const ms = frac === undefined ? 0 : Number((frac + '00').slice(0, 3));
  const t = Date.UTC(y, mo - 1, d, h, mi, s, ms) - offMin * 60000;
  // Date.UTC maps years 0-99 to 1900-1999.
  return y < 100 ? NOT_A_TIME : t;
}

function fromMatch(m: RegExpExecArray, defaultOffset: number): number {
  const off = m[8] === undefined ? defaultOffset : offsetMinutes(m[8]);
  return fromParts(+m[1]!, +m[2]!, +m[3]!, m[4] === undefined ? 0 : +m[4], m[5] === undefined ? 0 : +m[5], m[6] === undefined ? 0 : +m[6], m[7], off);
}

/** Epoch milliseconds of an epoch number in `unit` (auto: by magnitude), rounded down to the millisecond. */
function fromEpoch(n: number, unit: string): number {
  if (!Number.isFinite(n)) return NOT_A_TIME;
  if (unit === 'auto') {
    const a = Math.abs(n);
    unit = a < 1e11 ? 's' : a < 1e14 ? 'ms' : a < 1e17 ? 'us' : 'ns';
  }
  if (unit === 's') {
    // Through whole microseconds first, so 1767268800.123 (really ...122.99997) stays .123.
    const us = n * 1e6;
    return Number.isSafeInteger(Math.round(us)) ? Math.floor(Math.round(us) / 1000) : Math.floor(n * 1000);
  }
  return Math.floor(unit === 'ms' ? n : unit === 'us' ? n / 1e3 : n / 1e6);
}

/** Integer digit strings: exact, even beyond 2^53 (nanoseconds), by cutting digits rather than dividing a float. */
function fromIntString(s: string, unit: string): number {
  const neg = s[0] === '-';
  const digits = s[0] === '-' || s[0] === '+' ? s.slice(1) : s;
  if (unit === 'auto') {
    const len = digits.replace(/^0+/, '').length;
    unit = len <= 11 ? 's' : len <= 14 ? 'ms' : len <= 17 ? 'us' : 'ns';
    // Digit counts match the magnitudes of fromEpoch except at exact powers of ten; use the number then.
    if (len <= 15) return fromEpoch(Number(s), 'auto');
  }
  const cut = UNIT_DIGITS[unit]!;
  if (cut <= 0) return fromEpoch(Number(s), unit);
  if (digits.length <= cut) return neg && /[1-9]/.test(digits) ? -1 : 0;
  const whole = Number(digits.slice(0, digits.length - cut));
  if (!neg) return whole;
  // Rounded down: -1.5 ms is -2 ms.
  return /[1-9]/.test(digits.slice(digits.length - cut)) ? -whole - 1 : -whole;
}

interface Format {
  re: RegExp;
  /** Capture index of each part, 0 when the format lacks it. */
  idx: { Y: number; m: number; b: number; d: number; H: number; M: number; S: number; f: number; z: number };
}

const PIECES: Record<string, string> = {
  Y: '(\\d{4})',
  m: '(\\d{1,2})',
  b: '([A-Za-z]{3})',
  d: '(\\d{1,2})',
  H: '(\\d{1,2})',
  M: '(\\d{2})',
  S: '(\\d{2})',
  f: '(\\d{1,9})',
  z: '(Z|z|[+-]\\d{2}(?::?\\d{2})?)',
};

/**
 * Compiles a custom format into an anchored regular expression built only from fixed pieces and
 * escaped literals: no nested repetition, and inputs are at most MAX_LEN characters, so matching is bounded.
 */
export function compileFormat(fmt: string): Format {
  const idx = { Y: 0, m: 0, b: 0, d: 0, H: 0, M: 0, S: 0, f: 0, z: 0 };
  let src = '^';
  let group = 0;
  for (let i = 0; i < fmt.length; i++) {
    const ch = fmt[i]!;
    if (ch !== '%') {
      src += ch.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
      continue;
    }
    const d = fmt[++i];
    if (d === '%') {
      src += '%';
      continue;
    }
    if (d === undefined || !(d in PIECES)) throw new ConfigError(`format '${fmt}': unknown directive '%${d ?? ''}' (supported: %Y %m %b %d %H %M %S %f %z %%)`);
    const key = d as keyof typeof idx;
    if (idx[key] !== 0) throw new ConfigError(`format '${fmt}': %${d} appears twice`);
    idx[key] = ++group;
    src += PIECES[d];
  }
  if (idx.Y === 0 || (idx.m === 0 && idx.b === 0) || idx.d === 0) throw new ConfigError(`format '${fmt}' needs %Y, %m or %b, and %d`);
  if (idx.m !== 0 && idx.b !== 0) throw new ConfigError(`format '${fmt}' has both %m and %b`);
  return { re: new RegExp(src + '$'), idx };
}

function fromFormat(f: Format, s: string, defaultOffset: number): number {
  const m = f.re.exec(s);
  if (m === null) return NOT_A_TIME;
  const { idx } = f;
  const month = idx.b !== 0 ? MONTHS.indexOf(m[idx.b]!.toLowerCase()) + 1 : +m[idx.m]!;
  const num = (i: number) => (i === 0 ? 0 : +m[i]!);
  const off = idx.z !== 0 ? offsetMinutes(m[idx.z]!) : defaultOffset;
  return fromParts(+m[idx.Y]!, month, +m[idx.d]!, num(idx.H), num(idx.M), num(idx.S), idx.f !== 0 ? m[idx.f] : undefined, off);
}

export interface TimeOptions {
  unit?: 'auto' | 's' | 'ms' | 'us' | 'ns';
  formats?: string[];
  default_offset?: string;
}

/** A parser from record values to epoch milliseconds (NOT_A_TIME when the value is not a time). */
export function timeParser(o: TimeOptions): (v: unknown) => number {
  const unit = o.unit ?? 'auto';
  const formats = (o.formats ?? []).map(compileFormat);
  const defaultOffset = offsetMinutes(o.default_offset ?? 'Z');
  return (v: unknown): number => {
    if (typeof v === 'number') return fromEpoch(v, unit);
    if (typeof v !== 'string') return NOT_A_TIME;
    const s = v.length > MAX_LEN ? '' : v.trim();
    if (s === '') return NOT_A_TIME;
    for (let i = 0; i < formats.length; i++) {
      const t = fromFormat(formats[i]!, s, defaultOffset);
      if (t !== NOT_A_TIME) return t;
    }
    let m = ISO.exec(s);
    if (m !== null) return fromMatch(m, defaultOffset);
    // 14 digits and more that look like YYYYMMDDhhmmss are calendar times, not epochs.
    m = COMPACT.exec(s);
    if (m !== null) {
      const t = fromMatch(m, defaultOffset);
      if (t !== NOT_A_TIME || !INT.test(s)) return t;
    }
    if (INT.test(s)) return fromIntString(s, unit);
    if (DECIMAL.test(s)) return fromEpoch(Number(s), unit);
    return NOT_A_TIME;
  };
}
