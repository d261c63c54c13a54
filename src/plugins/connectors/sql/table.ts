// From records to INSERT shapes. A record's keys name the columns it writes: a column absent from
// the record is left out of its statement (its DEFAULT applies, and an upsert leaves it as it is);
// a null writes NULL. Keys match column names exactly, else without regard to case when that is
// unambiguous. Consecutive records with the same keys share one shape, so the input order is
// kept (an upsert of the same key twice ends with the later record).
import type { Rec } from '../../types.js';
import type { Column, InsertSpec, TableInfo } from './driver.js';

export interface Run {
  spec: InsertSpec;
  /** Indexes into the batch's records. */
  idx: number[];
}

export interface Plan {
  runs: Run[];
  rejected: { index: number; reason: string }[];
  /** Some record named a column the cached description does not have (the table may have changed). */
  unknownColumns: boolean;
}

const listed = (names: string[], max = 20) => names.slice(0, max).join(', ') + (names.length > max ? `, ... (${names.length})` : '');

/** Column lookup of one table: exact names first, then case-insensitive when only one column matches. */
export function columnResolver(table: TableInfo) {
  const exact = new Map(table.columns.map((c) => [c.name, c] as const));
  const folded = new Map<string, Column | null>();
  for (const c of table.columns) {
    const k = c.name.toLowerCase();
    folded.set(k, folded.has(k) ? null : c);
  }
  return (key: string): Column | undefined => exact.get(key) ?? folded.get(key.toLowerCase()) ?? undefined;
}

/** The upsert columns as the table names them; throws when one is not a column. */
export function upsertColumns(table: TableInfo, keys: string[]): string[] {
  const find = columnResolver(table);
  return keys.map((k) => {
    const c = find(k);
    if (!c) throw new Error(`upsert_keys: '${k}' is not a column of table ${table.shown} (columns: ${listed(table.columns.map((x) => x.name))})`);
    return c.name;
  });
}

const sameSet = (a: string[], b: string[]) => a.length === b.length && a.every((x) => b.includes(x));

/** Throws unless a unique index (or the primary key) covers exactly `keys`: ON CONFLICT / ON DUPLICATE KEY need one. */
export function checkUpsertIndex(table: TableInfo, keys: string[], quote: (id: string) => string): void {
  if (table.uniqueKeys.some((u) => sameSet(u, keys))) return;
  const have = table.uniqueKeys.length
    ? `its unique keys are ${table.uniqueKeys.map((u) => `(${u.join(', ')})`).join(', ')}`
    : 'it has no primary key or unique index';
  throw new Error(
    `mode upsert needs a primary key or unique index on exactly (${keys.join(', ')}) of table ${table.shown}, and ${have}; ` +
      `create one (CREATE UNIQUE INDEX ${quote(`${table.shown.split('.').pop()}_${keys.join('_')}_key`)} ON ${table.sql} (${keys.map(quote).join(', ')})) or change upsert_keys`,
  );
}

/** Groups the batch into runs of one shape each; records that cannot be written are rejected with the reason. */
export function planBatch(records: Rec[], table: TableInfo, upsert: string[] | undefined): Plan {
  const find = columnResolver(table);
  const shapes = new Map<string, InsertSpec | string>();
  const shapeOf = (keys: string[]): InsertSpec | string => {
    if (keys.length === 0) return 'the record has no fields';
    const columns: Column[] = [];
    const unknown: string[] = [];
    const seen = new Map<string, string>();
    for (const k of keys) {
      const c = find(k);
      if (!c) {
        unknown.push(k);
        continue;
      }
      const other = seen.get(c.name);
      if (other !== undefined) return `fields '${other}' and '${k}' both name column ${c.name}`;
      seen.set(c.name, k);
      columns.push(c);
    }
    if (unknown.length) {
      return `${unknown.length === 1 ? 'field' : 'fields'} ${unknown.map((k) => `'${k}'`).join(', ')} ${unknown.length === 1 ? 'is not a column' : 'are not columns'} of table ${table.shown} (columns: ${listed(table.columns.map((c) => c.name))})`;
    }
    if (upsert) {
      const missing = upsert.filter((u) => !seen.has(u));
      if (missing.length) return `the record has no value for upsert key ${missing.map((k) => `'${k}'`).join(', ')}`;
    }
    return { table, keys, columns, upsert, upsertFields: upsert?.map((u) => seen.get(u)!) };
  };

  const plan: Plan = { runs: [], rejected: [], unknownColumns: false };
  let current: Run | undefined;
  let currentSig: string | undefined;
  let lastKeys: string[] = [];
  let lastSig = '';
  records.forEach((r, index) => {
    const keys = Object.keys(r);
    // Consecutive records mostly have the same keys: compared before a signature is built.
    const sig = keys.length === lastKeys.length && keys.every((k, i) => k === lastKeys[i]) ? lastSig : keys.join('\u0000');
    lastKeys = keys;
    lastSig = sig;
    let shape = shapes.get(sig);
    if (shape === undefined) shapes.set(sig, (shape = shapeOf(keys)));
    if (typeof shape === 'string') {
      plan.rejected.push({ index, reason: shape });
      if (shape.includes('not a column') || shape.includes('are not columns')) plan.unknownColumns = true;
      return;
    }
    if (shape.upsert) {
      // NULL never conflicts: such a record would be inserted again instead of updating.
      const nul = shape.upsertFields!.find((f) => r[f] == null);
      if (nul !== undefined) {
        plan.rejected.push({ index, reason: `upsert key '${nul}' is null` });
        return;
      }
    }
    if (current && currentSig === sig) current.idx.push(index);
    else {
      current = { spec: shape, idx: [index] };
      plan.runs.push(current);
      currentSig = sig;
    }
  });
  return plan;
}
