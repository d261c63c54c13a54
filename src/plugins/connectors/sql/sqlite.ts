// SQLite through better-sqlite3 12 (synchronous: each statement runs on the calling thread).
//
// The file must exist (a mistyped path is an error, not a new empty database). A lock held by
// another connection is waited for at most BUSY_TIMEOUT_MS, during which this thread does nothing
// else: then the write fails and the sink's retry policy waits instead, without blocking.
// Writes: one multi-row `INSERT ... VALUES (?, ...), (...)` per chunk, within SQLite's 32,766
// parameters per statement; prepared statements are cached per shape and row count.
import { resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Rec } from '../../types.js';
import { oneStatement, quoteIdent as q, SqlError, type ErrorKind, type InsertSpec, type SqlDriver, type TableInfo, type TableName } from './driver.js';
import type { SqlTarget } from './url.js';
import { jsonRow, scalar } from './values.js';

export const BUSY_TIMEOUT_MS = 250;
const MAX_PARAMS = 32_766;
/** Prepared statements kept per connection (shapes x row counts). */
const CACHE = 64;

/**
 * Transactions on one file, per process, one at a time. A transaction spans several awaits, and
 * better-sqlite3 waits for a lock by blocking the thread: a second connection of this process
 * (a parallel sink) that tried to BEGIN while the first is between two statements would block the
 * very thread the first needs to finish, and fail after the busy timeout. They queue here instead.
 */
const fileQueues = new Map<string, Promise<void>>();

async function lockFile(file: string): Promise<() => void> {
  const before = fileQueues.get(file) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((r) => (release = r));
  const tail = before.then(() => mine);
  fileQueues.set(file, tail);
  await before;
  return () => {
    release();
    if (fileQueues.get(file) === tail) fileQueues.delete(file);
  };
}

function classify(e: unknown): ErrorKind {
  if (e instanceof SqlError) return e.kind;
  if (e instanceof TypeError || e instanceof RangeError) return 'data'; // a value better-sqlite3 cannot bind
  const code = (e as { code?: unknown }).code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return 'broken';
  if (/^SQLITE_(CONSTRAINT|MISMATCH|TOOBIG|RANGE)/.test(code)) return 'data';
  // Locked, I/O, full disk: the handle is closed (a transaction left open by a failed COMMIT goes with it) and opened again.
  if (/^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|PROTOCOL|NOMEM|INTERRUPT)/.test(code)) return 'broken';
  return 'fatal'; // SQLITE_ERROR (no such table, syntax), READONLY, AUTH, CORRUPT, NOTADB
}

export async function openSqlite(t: SqlTarget): Promise<SqlDriver> {
  const db = new Database(t.path!, { fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
  try {
    db.pragma('schema_version'); // reads the header: a file that is not a database fails here, not at the first write
  } catch (e) {
    db.close();
    throw e;
  }
  const file = resolve(t.path!);
  let unlock: (() => void) | undefined;
  const release = () => {
    unlock?.();
    unlock = undefined;
  };
  const cache = new Map<string, Database.Statement>();
  const prepared = (sql: string) => {
    let s = cache.get(sql);
    if (!s) {
      if (cache.size >= CACHE) cache.clear();
      cache.set(sql, (s = db.prepare(sql)));
    }
    return s;
  };

  const driver: SqlDriver = {
    dialect: 'sqlite',
    needsSavepoint: false, // a failed statement is undone alone (ON CONFLICT ABORT); the transaction goes on
    async *rows(sql, chunk) {
      const stmt = db.prepare(oneStatement(sql));
      if (!stmt.reader) {
        stmt.run();
        return;
      }
      stmt.safeIntegers(true); // 64-bit integers exactly (values.ts decides number or string)
      if (chunk <= 0) {
        const rows = stmt.all() as Rec[];
        if (rows.length) yield rows.map(jsonRow);
        return;
      }
      let buf: Rec[] = [];
      for (const row of stmt.iterate() as IterableIterator<Rec>) {
        buf.push(jsonRow(row));
        if (buf.length >= chunk) {
          yield buf;
          buf = [];
        }
      }
      if (buf.length) yield buf;
    },
    async check(sql) {
      db.prepare(oneStatement(sql));
    },
    async describe(table: TableName) {
      const schema = table.schema ?? 'main';
      const cols = db.prepare('SELECT name, lower(type) AS type, pk FROM pragma_table_info(?, ?) ORDER BY cid').all(table.name, schema) as {
        name: string;
        type: string;
        pk: number;
      }[];
      if (cols.length === 0) return undefined;
      const uniqueKeys: string[][] = [];
      const pk = cols
        .filter((c) => c.pk > 0)
        .sort((a, b) => a.pk - b.pk)
        .map((c) => c.name);
      if (pk.length) uniqueKeys.push(pk); // INTEGER PRIMARY KEY has no index of its own
      const indexes = db.prepare('SELECT name FROM pragma_index_list(?, ?) WHERE "unique" = 1 AND partial = 0').all(table.name, schema) as { name: string }[];
      for (const ix of indexes) {
        const parts = db.prepare('SELECT name FROM pragma_index_info(?, ?) ORDER BY seqno').all(ix.name, schema) as { name: string | null }[];
        if (parts.every((p) => p.name !== null)) uniqueKeys.push(parts.map((p) => p.name!)); // no expression indexes
      }
      const info: TableInfo = {
        sql: table.schema ? `${q(table.schema)}.${q(table.name)}` : q(table.name),
        shown: table.schema ? `${table.schema}.${table.name}` : table.name,
        columns: cols.map(({ name, type }) => ({ name, type })),
        uniqueKeys,
      };
      return info;
    },
    async begin() {
      unlock = await lockFile(file);
      try {
        // IMMEDIATE takes the write lock up front: a busy database fails here, before any statement ran.
        db.exec('BEGIN IMMEDIATE');
      } catch (e) {
        release();
        throw e;
      }
    },
    async commit() {
      db.exec('COMMIT'); // on failure the transaction stays open until rollback()
      release();
    },
    async rollback() {
      try {
        if (db.inTransaction) db.exec('ROLLBACK');
      } finally {
        release();
      }
    },
    atomic: (op) => op(),
    fit(spec, rows, from, limit) {
      return Math.max(1, Math.min(rows.length - from, limit, Math.floor(MAX_PARAMS / spec.columns.length)));
    },
    async insert(spec, rows) {
      const sql = insertSql(spec, rows.length);
      const stmt = prepared(sql);
      const params: unknown[] = [];
      for (const r of rows) for (const k of spec.keys) params.push(scalar(r[k], true));
      try {
        stmt.run(params);
        // No wire here: the statement and its values as SQLite takes them (numbers as 8 bytes).
        return params.reduce<number>((n, v) => n + (typeof v === 'string' || Buffer.isBuffer(v) ? v.length : 8), sql.length);
      } catch (e) {
        if (classify(e) === 'data') throw new SqlError((e as Error).message, 'data', { cause: e });
        throw e;
      }
    },
    classify,
    async close() {
      release();
      cache.clear();
      db.close();
    },
  };
  return driver;
}

const heads = new WeakMap<InsertSpec, { head: string; row: string; tail: string }>();

function insertSql(spec: InsertSpec, n: number): string {
  let h = heads.get(spec);
  if (!h) {
    const set = spec.upsert ? spec.columns.filter((c) => !spec.upsert!.includes(c.name)) : [];
    h = {
      head: `INSERT INTO ${spec.table.sql} (${spec.columns.map((c) => q(c.name)).join(', ')}) VALUES `,
      row: `(${spec.columns.map(() => '?').join(', ')})`,
      tail: spec.upsert
        ? ` ON CONFLICT (${spec.upsert.map(q).join(', ')}) ${set.length ? `DO UPDATE SET ${set.map((c) => `${q(c.name)} = excluded.${q(c.name)}`).join(', ')}` : 'DO NOTHING'}`
        : '',
    };
    heads.set(spec, h);
  }
  return h.head + new Array<string>(n).fill(h.row).join(', ') + h.tail;
}
