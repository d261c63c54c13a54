// COPY ... FROM STDIN for the PostgreSQL sink (pg-copy-streams): the rows of a chunk as COPY's
// text format, each value encoded as json_populate_recordset (the INSERT form it replaces, still
// used where COPY does not fit) would have handed it to the column type's input function, so that
// both write the same thing:
// - null (and undefined, NaN, ±Infinity, which JSON makes null): NULL (`\N`);
// - a string: as is; a number, boolean or bigint: its JSON text;
// - json / jsonb columns: the value's JSON text (a string too: `"s"`);
// - array columns: a JSON array as an array literal, its dimensions taken from the first element
//   as PostgreSQL does (`[[1,2],[3,4]]` is two-dimensional; a later nested array is JSON text);
// - other objects: their JSON text (which the column's type then judges).
// Composite columns (a JSON object becomes a row value) have no COPY encoding here: chunks that
// write one keep the INSERT form.
import { from as copyFrom, type CopyFromStream } from 'pg-copy-streams';
import type pg from 'pg';
import type { Rec } from '../../types.js';
import { jsonText } from './values.js';

/** How a column's values are encoded: undefined when COPY cannot write the column. */
export type CopyKind = 'scalar' | 'json' | { array: 'scalar' | 'json' };

interface PgType {
  oid: number;
  typtype: string;
  typcategory: string;
  typbasetype: number;
  typelem: number;
}

const JSON_OIDS = new Set([114, 3802]);

/** The CopyKind of each type in `oids` (domains resolved to their base type), from pg_type. */
export async function copyKinds(client: pg.Client, oids: number[]): Promise<Map<number, CopyKind | undefined>> {
  const types = new Map<number, PgType>();
  // Domains and arrays refer to further types: a few rounds load them all.
  for (let want = [...new Set(oids)]; want.length; ) {
    const r = await client.query<PgType>(
      'SELECT oid::int AS oid, typtype, typcategory, typbasetype::int AS typbasetype, typelem::int AS typelem FROM pg_type WHERE oid = ANY($1::oid[])',
      [want],
    );
    for (const t of r.rows) types.set(t.oid, t);
    want = [...new Set(r.rows.flatMap((t) => [t.typbasetype, t.typelem]).filter((o) => o !== 0 && !types.has(o)))];
  }
  const kind = (oid: number, depth = 0): CopyKind | undefined => {
    const t = types.get(oid);
    if (!t || depth > 8) return undefined;
    if (t.typtype === 'd') return kind(t.typbasetype, depth + 1);
    if (JSON_OIDS.has(oid)) return 'json';
    if (t.typtype === 'c' || t.typtype === 'p') return undefined;
    if (t.typcategory === 'A' && t.typelem !== 0) {
      const e = kind(t.typelem, depth + 1);
      return typeof e === 'string' ? { array: e } : undefined;
    }
    return 'scalar';
  };
  return new Map(oids.map((o) => [o, kind(o)]));
}

/** A value as the text the column's input function reads (json_populate_recordset's rule); null for NULL. */
function scalarText(v: unknown): string | null {
  switch (typeof v) {
    case 'string':
      return v;
    case 'number':
      return Number.isFinite(v) ? String(v) : null;
    case 'boolean':
    case 'bigint':
      return String(v);
    case 'object': {
      if (v === null) return null;
      const toJSON = (v as { toJSON?: () => unknown }).toJSON;
      // A Date is written as JSON writes it (an ISO string), as the INSERT form did.
      if (typeof toJSON === 'function' && !Buffer.isBuffer(v)) return scalarText(toJSON.call(v));
      return jsonText(v);
    }
    default:
      return null; // undefined, functions, symbols: JSON leaves them out, the column gets NULL
  }
}

function jsonValueText(v: unknown): string | null {
  if (v === null || v === undefined || (typeof v === 'number' && !Number.isFinite(v))) return null;
  const s = jsonText(v);
  return s === undefined ? null : s;
}

/** An array element, double-quoted for the array literal (`"` and `\` escaped). */
const element = (s: string) => `"${s.replace(/["\\]/g, '\\$&')}"`;

function arrayLiteral(v: unknown[], item: (x: unknown) => string | null): string {
  let dims = 1;
  for (let x = v[0]; Array.isArray(x); x = x[0]) dims++;
  // Nested empty arrays ([[]]) are the empty array, which PostgreSQL writes only as {}.
  const empty = (a: unknown[]): boolean => a.every((x) => Array.isArray(x) && empty(x));
  if (dims > 1 && empty(v)) return '{}';
  const level = (a: unknown[], d: number): string => {
    const parts = a.map((x) => {
      // Below the last dimension every element must be an array; a scalar there makes the literal malformed, as PostgreSQL says.
      if (d < dims && Array.isArray(x)) return level(x, d + 1);
      const s = item(x);
      return s === null ? 'NULL' : element(s);
    });
    return `{${parts.join(',')}}`;
  };
  return level(v, 1);
}

/** The encoder of one column kind: a value to its text, or null for NULL. */
export function encoderOf(kind: CopyKind): (v: unknown) => string | null {
  if (kind === 'scalar') return scalarText;
  if (kind === 'json') return jsonValueText;
  const item = kind.array === 'json' ? jsonValueText : scalarText;
  return (v) => (Array.isArray(v) ? arrayLiteral(v, item) : scalarText(v));
}

const ESCAPE = /[\\\t\n\r]/;
const ESCAPES = /[\\\t\n\r]/g;
const ESCAPED: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** The rows as COPY text: one line per row, values by tab, `\N` for NULL, backslash escapes. */
export function copyText(encoders: ((v: unknown) => string | null)[], keys: string[], rows: Rec[]): string {
  let out = '';
  const n = keys.length;
  for (const r of rows) {
    for (let i = 0; i < n; i++) {
      const v = r[keys[i]!];
      // A number reads the same in every kind of column and needs no escaping (the common case, kept short).
      if (typeof v === 'number' && Number.isFinite(v)) out += v;
      else {
        const s = typeof v === 'string' && encoders[i] === scalarText ? v : encoders[i]!(v);
        out += s === null ? '\\N' : ESCAPE.test(s) ? s.replace(ESCAPES, (c) => ESCAPED[c]!) : s;
      }
      out += i === n - 1 ? '\n' : '\t';
    }
  }
  return out;
}

/** A lone UTF-16 surrogate would reach the server as U+FFFD: such a chunk keeps the INSERT form, which refuses it. */
export const wellFormed = (s: string) => (s as unknown as { isWellFormed(): boolean }).isWellFormed();

/** Runs `COPY ... FROM STDIN` with `data`; resolves once the server has answered. */
export function copyIn(client: pg.Client, sql: string, data: string): Promise<number> {
  const stream = guard(client.query(copyFrom(sql)));
  return new Promise((resolve, reject) => {
    stream.on('error', reject);
    stream.on('finish', () => resolve(stream.rowCount));
    stream.end(data);
  });
}

/**
 * pg-copy-streams 7.0.0 writes to a null connection when it flushes after the server has refused
 * the COPY ("Cannot read properties of null (reading 'stream')", an uncaught exception that ends
 * the process: brianc/node-pg-copy-streams#171). With the whole chunk written at once that needs
 * the refusal to arrive before the socket has drained; PostgreSQL 15 answers after the data (not
 * reproduced with 100 MB refused at its first row), but the protocol does not promise that order.
 * Past the refusal there is nothing left to send.
 */
function guard(s: CopyFromStream): CopyFromStream {
  const flush = s.flush.bind(s);
  const final = s._final.bind(s);
  s.flush = (cb) => (s.connection ? flush(cb) : cb?.());
  s._final = (cb) => (s.connection ? final(cb) : cb());
  return s;
}

/** The row (0-based) a refused COPY names in its context (`COPY t, line 3, column n: ...`), if any. */
export function copyRow(e: unknown): number | undefined {
  const where = (e as { where?: unknown }).where;
  if (typeof where !== 'string') return undefined;
  const m = /^COPY .*?, line (\d+)(?:,|:|$)/m.exec(where);
  return m ? Number(m[1]) - 1 : undefined;
}
