// The driver contract each database implements (postgres.ts with pg, mariadb.ts with mysql2,
// sqlite.ts with better-sqlite3) and the types and helpers the drivers share. Its own module, so that
// client.ts, which loads the drivers, and the drivers, which implement this, do not import each other.
import type { Rec } from '../../types.js';
import type { Dialect } from './url.js';

/** `name` or `schema.name` (PostgreSQL schema, MariaDB database, SQLite attached database). */
export interface TableName {
  schema?: string;
  name: string;
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
