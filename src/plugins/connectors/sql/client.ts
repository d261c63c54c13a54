// What the sql source and sink share: the connection_url field, the table name, and the driver
// contract each database implements (postgres.ts with pg, mariadb.ts with mysql2, sqlite.ts with
// better-sqlite3), loaded on first use so that a pipeline pays only for its own database.
import { Type } from '@sinclair/typebox';
import { errorMessage } from '../../../core/errors.js';
import type { LintIssue, Rec } from '../../types.js';
import { parseSqlUrl, URL_FORMS, type Dialect, type SqlTarget } from './url.js';

export const connectionUrlField = Type.String({
  minLength: 1,
  description: `Database URL: ${URL_FORMS}. The +driver part is accepted and ignored; the password is masked in every message.`,
});

export function lintUrl(url: string): LintIssue[] {
  if (url.includes('${')) return []; // resolved at run time
  try {
    parseSqlUrl(url);
    return [];
  } catch (e) {
    return [{ path: 'connection_url', message: (e as Error).message }];
  }
}

/** `name` or `schema.name` (PostgreSQL schema, MariaDB database, SQLite attached database). */
export interface TableName {
  schema?: string;
  name: string;
}

export function parseTableName(s: string): TableName {
  const parts = s.split('.');
  if (parts.length > 2 || parts.some((p) => p.trim() === '')) throw new Error(`'${s}' is not a table name: use name or schema.name`);
  return parts.length === 2 ? { schema: parts[0]!.trim(), name: parts[1]!.trim() } : { name: parts[0]!.trim() };
}

export interface Column {
  name: string;
  /** The database's type name, lower case (`integer`, `datetime`, `timestamp with time zone`). */
  type: string;
}

/** A table as the catalog describes it. */
export interface TableInfo {
  /** The table as statements name it: quoted, schema-qualified when the config was. */
  sql: string;
  /** For messages. */
  shown: string;
  columns: Column[];
  /** Column sets of the primary key and of every unique index without a predicate or expression. */
  uniqueKeys: string[][];
}

/** One INSERT shape: records with the same fields, written to `columns` (in record key order). */
export interface InsertSpec {
  table: TableInfo;
  /** The records' keys, in the order of `columns`. */
  keys: string[];
  columns: Column[];
  /** mode upsert: the conflict columns, and the record keys that hold them. */
  upsert?: string[];
  upsertFields?: string[];
}

/**
 * How a failed statement is handled: `data` the database refused these rows (a constraint, a value
 * of the wrong type: bisected, the refused ones dead-lettered); `broken` the connection is gone (or
 * unusable: dropped, retried on a new one); `retry` worth retrying as is (deadlock, lock timeout);
 * `fatal` retrying cannot help (missing table or column, syntax, permission).
 */
export type ErrorKind = 'data' | 'broken' | 'retry' | 'fatal';

/** An error a driver explains itself (a clearer message for a database error), with its kind. */
export class SqlError extends Error {
  override name = 'SqlError';
  /** The row of the statement the database named as the refused one (PostgreSQL COPY), 0-based. */
  readonly row?: number;
  constructor(
    message: string,
    readonly kind: ErrorKind,
    options?: { cause?: unknown; row?: number },
  ) {
    super(message, options);
    if (options?.row !== undefined) this.row = options.row;
  }
}

/** Double-quoted identifier (PostgreSQL, SQLite). */
export const quoteIdent = (id: string) => `"${id.replace(/"/g, '""')}"`;

/** A statement without the trailing semicolons a pasted query often has. */
export const oneStatement = (q: string) => q.trim().replace(/[;\s]+$/, '');

export interface SqlDriver {
  readonly dialect: Dialect;
  /** A failed statement aborts the whole transaction (PostgreSQL): savepoints isolate statements. */
  readonly needsSavepoint: boolean;
  /** The rows of `query` in arrays of at most `chunk` (0: one array), JSON-safe, streamed from the server. */
  rows(query: string, chunk: number): AsyncIterable<Rec[]>;
  /** Compiles `query` without running it (the source's reachability check). */
  check(query: string): Promise<void>;
  describe(table: TableName): Promise<TableInfo | undefined>;
  /** Starts a transaction; `careful`: constraints are checked per statement (PostgreSQL's deferred ones too). */
  begin(careful: boolean): Promise<void>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  /** Runs `op` so that its failure undoes only what it did (a savepoint where the database needs one). */
  atomic(op: () => Promise<void>): Promise<void>;
  /** How many of `rows` from `from` fit in one statement (parameter and packet limits), at most `limit`, at least 1. */
  fit(spec: InsertSpec, rows: Rec[], from: number, limit: number): number;
  /** One statement inserting (or upserting) all `rows`; resolves with the bytes of statement and data sent (`bytes_out`). */
  insert(spec: InsertSpec, rows: Rec[]): Promise<number>;
  classify(e: unknown): ErrorKind;
  close(): Promise<void>;
}

/**
 * Opens a connection (pg, mysql2) or the file (better-sqlite3); `lost` is called once if it breaks
 * later. A failure says where it tried (never with the password) and the driver's reason.
 */
export async function openDriver(target: SqlTarget, name: string, lost?: (e: Error) => void): Promise<SqlDriver> {
  try {
    switch (target.dialect) {
      case 'postgresql':
        return await (await import('./postgres.js')).openPostgres(target, name, lost);
      case 'mysql':
        return await (await import('./mariadb.js')).openMariadb(target, name, lost);
      case 'sqlite':
        return await (await import('./sqlite.js')).openSqlite(target);
    }
  } catch (e) {
    throw new Error(`${whereOf(target)}: ${errorMessage(e)}`, { cause: e });
  }
}

/** Where a connection goes, for messages (no password). */
export const whereOf = (t: SqlTarget) => (t.dialect === 'sqlite' ? `SQLite file ${t.path}` : t.shown);

/** `svc <pipeline> <component>`: how the connection shows in pg_stat_activity and the process list. */
export const connectionName = (pipeline: string, component?: string) => `svc ${pipeline} ${component ?? ''}`.trim().slice(0, 63);

/** Opens, runs `op`, closes: the reachability checks. */
export async function withDriver<T>(url: string, op: (d: SqlDriver, t: SqlTarget) => Promise<T>): Promise<T> {
  const target = parseSqlUrl(url);
  let d: SqlDriver;
  try {
    d = await openDriver(target, 'svc connector test');
  } catch (e) {
    throw new Error(`cannot connect to ${errorMessage(e)}`, { cause: e });
  }
  try {
    return await op(d, target);
  } finally {
    await d.close().catch(() => {});
  }
}

export { parseSqlUrl, type Dialect, type SqlTarget };
