// Values between SQL and JSON records, the same rules for every database:
// - out of the database (source): 64-bit integers as numbers when exact, else decimal strings (the
//   project's rule, util/exact-number); binary as base64; dates as ISO 8601 strings; NaN and the
//   infinities as strings (JSON has no such numbers). DECIMAL / NUMERIC stay strings (exact).
// - into the database (sink): objects and arrays as JSON text; booleans as 1/0 where the database
//   has no boolean binding (SQLite); big integers as decimal text.
import { exactNumber } from '../../../util/exact-number.js';
import type { Rec } from '../../types.js';

/** A value the drivers return, made JSON-safe. */
export function jsonValue(v: unknown): unknown {
  switch (typeof v) {
    case 'bigint':
      return exactNumber(v);
    case 'number':
      return Number.isFinite(v) ? v : String(v);
    case 'object':
      if (v === null) return v;
      if (Buffer.isBuffer(v)) return v.toString('base64');
      if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
      if (Array.isArray(v)) return v.map(jsonValue);
      return v; // a parsed JSON column
    default:
      return v;
  }
}

/** Makes a driver's row JSON-safe in place (cheap for rows of strings and numbers). */
export function jsonRow(row: Rec): Rec {
  for (const k in row) {
    const v = row[k];
    if ((typeof v === 'object' && v !== null) || typeof v === 'bigint' || (typeof v === 'number' && !Number.isFinite(v))) row[k] = jsonValue(v);
  }
  return row;
}

/** JSON text of a value for a text or JSON column; BigInt (from some decoders) as its decimal digits. */
export function jsonText(v: unknown): string {
  try {
    return JSON.stringify(v);
  } catch {
    return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
  }
}

/** A value as a parameter for drivers that bind scalars only (mysql2 text, better-sqlite3). */
export function scalar(v: unknown, booleansAsNumbers: boolean): unknown {
  switch (typeof v) {
    case 'undefined':
      return null;
    case 'boolean':
      return booleansAsNumbers ? (v ? 1 : 0) : v;
    case 'object':
      if (v === null || Buffer.isBuffer(v)) return v;
      if (v instanceof Date) return v.toISOString();
      return jsonText(v);
    default:
      return v;
  }
}

const ISO_ZONED = /^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d(?::\d\d(?:\.\d+)?)?)(Z|[+-]\d\d(?::?\d\d)?)?$/i;

/**
 * An ISO 8601 date-time string as MariaDB's DATETIME / TIMESTAMP literal takes it: `T` becomes a
 * space and a zone (Z, +02:00) is converted to UTC, the session's time zone. Anything else is
 * returned unchanged (the database judges it).
 */
export function mysqlDateTime(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  const m = ISO_ZONED.exec(v);
  if (!m) return v;
  if (!m[3]) return `${m[1]} ${m[2]}`;
  const frac = /\.(\d+)$/.exec(m[2]!)?.[1] ?? '';
  const d = new Date(
    `${m[1]}T${m[2]!.replace(/\.\d+$/, '')}${m[3].toUpperCase() === 'Z' ? 'Z' : m[3].length === 3 ? `${m[3]}:00` : m[3].replace(/^([+-]\d\d)(\d\d)$/, '$1:$2')}`,
  );
  if (Number.isNaN(d.getTime())) return v;
  // Date keeps milliseconds only: the fraction is carried over as written (up to microseconds).
  return `${d.toISOString().slice(0, 19).replace('T', ' ')}${frac ? `.${frac.slice(0, 6)}` : ''}`;
}
