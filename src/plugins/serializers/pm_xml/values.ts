// Value conversions of the PM XML reader: counter values and ISO 8601 durations.

/**
 * A counter value: empty and `NIL` are null; with `numeric`, a decimal number (optional sign,
 * fraction, exponent) becomes a number; anything else (PDF lists "1,2,3", text) stays a string.
 * Number() alone would also take hex ("0x1F"), "Infinity" and surrounding blanks, hence the checks.
 */
export function counterValue(raw: string, numeric: boolean): string | number | null {
  const s = raw.length && (isBlank(raw.charCodeAt(0)) || isBlank(raw.charCodeAt(raw.length - 1))) ? raw.trim() : raw;
  if (s === '' || s === 'NIL') return null;
  if (!numeric) return s;
  const c = s.charCodeAt(0);
  // digits, '+', '-', '.'
  if (!((c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2d || c === 0x2e)) return s;
  if (c === 0x30 && s.length > 1) {
    const x = s.charCodeAt(1) | 0x20;
    if (x === 0x78 || x === 0x62 || x === 0x6f) return s; // 0x.., 0b.., 0o..
  }
  const n = +s;
  return Number.isFinite(n) ? n : s;
}

const isBlank = (c: number) => c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d;

const DURATION = /^P(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;

/**
 * Seconds in an xs:duration of fixed length (PT900S, PT15M, PT1H, P1D, P1DT12H); null for one
 * with years or months (no fixed length) or that does not parse.
 */
export function durationSeconds(d: string | undefined): number | null {
  if (d === undefined) return null;
  const m = DURATION.exec(d.trim());
  if (!m || d.trim() === 'P' || d.trim().endsWith('T')) return null;
  const [, w, day, h, min, s] = m.map((x) => (x === undefined ? 0 : Number(x))) as number[];
  return w! * 604800 + day! * 86400 + h! * 3600 + min! * 60 + s!;
}
