// MariaDB and MySQL through mysql2 3 (one connection, the callback API: its query streams are what
// the source reads chunks from).
//
// Writes: one multi-row `INSERT ... VALUES (...), (...)` per chunk, the values escaped by mysql2's
// escaper into the statement text (the text protocol: a prepared statement per chunk shape would
// cost a round trip to prepare and is limited to 65,535 parameters). A statement is kept below a
// quarter of the server's max_allowed_packet. The session's time zone is UTC: TIMESTAMP columns
// read and write UTC, and ISO 8601 strings with a zone are converted for DATETIME and TIMESTAMP
// columns (MariaDB refuses the `T` and the zone).
import { createConnection, escape, format, type Connection, type QueryError, type SqlValue, type TypeCast } from 'mysql2';
import type { Rec } from '../../types.js';
import { oneStatement, SqlError, type ErrorKind, type InsertSpec, type SqlDriver, type TableInfo, type TableName } from './driver.js';
import type { SqlTarget } from './url.js';
import { jsonRow, mysqlDateTime, scalar } from './values.js';

const CONNECT_TIMEOUT_S = 10;
/** How long the server waits for this client to read the next rows of a chunked result. */
const STREAM_WRITE_TIMEOUT_S = 86_400;
/** Statements stay below this share of max_allowed_packet (escaping can double a string). */
const PACKET_SHARE = 4;

const qi = (id: string) => `\`${id.replace(/`/g, '``')}\``;

/** DATETIME as ISO 8601 without a zone; TIMESTAMP (UTC in this session) with Z; DATE as is. */
const typeCast: TypeCast = (field, next) => {
  switch (field.type) {
    case 'DATETIME':
    case 'DATETIME2': {
      const s = field.string();
      return s === null ? null : s.replace(' ', 'T');
    }
    case 'TIMESTAMP':
    case 'TIMESTAMP2': {
      const s = field.string();
      return s === null ? null : `${s.replace(' ', 'T')}Z`;
    }
    case 'DATE':
    case 'NEWDATE':
      return field.string();
    default:
      return next();
  }
};

/** Server errors about the rows themselves (besides SQLSTATE classes 22 and 23). */
const DATA_ERRNOS = new Set([1048, 1062, 1264, 1265, 1292, 1364, 1366, 1367, 1406, 1411, 1451, 1452, 1586, 1690, 3819, 4025, 4078]);
/** Retrying can help: lock wait timeout, deadlock, query interrupted, too many connections, read-only for now. */
const RETRY_ERRNOS = new Set([1205, 1213, 1317, 1040, 1290, 1836]);
/** Retrying cannot help: no such table or column, syntax, access denied, unknown database. */
const FATAL_ERRNOS = new Set([1044, 1045, 1049, 1054, 1064, 1109, 1142, 1143, 1146, 1149, 1176]);

function classify(e: unknown): ErrorKind {
  if (e instanceof SqlError) return e.kind;
  const err = e as Partial<QueryError>;
  if (err.fatal || typeof err.errno !== 'number') return 'broken';
  const state = err.sqlState ?? '';
  if (DATA_ERRNOS.has(err.errno) || state.startsWith('22') || state.startsWith('23')) return 'data';
  if (RETRY_ERRNOS.has(err.errno)) return 'retry';
  if (FATAL_ERRNOS.has(err.errno) || state.startsWith('42')) return 'fatal';
  return 'retry';
}

function sslOf(mode: string | undefined) {
  switch (mode?.toLowerCase()) {
    case 'required':
      return { rejectUnauthorized: false };
    case 'verify_ca':
    case 'verify_identity':
      return { rejectUnauthorized: true };
    default:
      return undefined; // disabled, preferred: mysql2 has no fallback, so these connect without TLS
  }
}

export async function openMariadb(t: SqlTarget, name: string, lost?: (e: Error) => void): Promise<SqlDriver> {
  const conn: Connection = createConnection({
    host: t.host,
    port: t.port,
    user: t.user,
    password: t.password,
    database: t.database,
    charset: t.params.charset,
    ssl: sslOf(t.params.ssl_mode),
    connectTimeout: Number(t.params.connect_timeout ?? CONNECT_TIMEOUT_S) * 1000,
    connectAttributes: { program_name: name },
    // BIGINT as a number when exact, else a string; DECIMAL as a string.
    supportBigNumbers: true,
    bigNumberStrings: false,
    typeCast,
    multipleStatements: false,
    // A statement without values is sent as is: mysql2 would otherwise scan every INSERT (megabytes) for placeholders.
    queryFormat: ((sql: string, values: unknown) =>
      values === undefined || (Array.isArray(values) && values.length === 0) ? sql : format(sql, values as SqlValue[])) as never,
  });
  let open = false;
  let closing = false;
  /** A result stream left before its end: the connection is mid-result and can only be destroyed. */
  let abandoned = false;
  conn.on('error', (e: Error) => {
    if (open && !closing) lost?.(e);
  });
  conn.on('end', () => {
    if (open && !closing) lost?.(new Error('the server closed the connection'));
  });
  const run = <T = unknown>(sql: string) => new Promise<T>((resolve, reject) => conn.query(sql, (err, rows) => (err ? reject(err) : resolve(rows as T))));
  try {
    await new Promise<void>((resolve, reject) => conn.connect((err) => (err ? reject(err) : resolve())));
    await run("SET time_zone = '+00:00'");
  } catch (e) {
    conn.destroy();
    throw e;
  }
  const [{ packet }] = await run<{ packet: number }[]>('SELECT @@max_allowed_packet AS packet');
  const budget = Math.floor(Math.min(Number(packet) || 4 << 20, 1 << 30) / PACKET_SHARE);
  open = true;

  const driver: SqlDriver = {
    dialect: 'mysql',
    needsSavepoint: false, // InnoDB undoes a failed statement alone; the transaction goes on
    async *rows(sql, chunk) {
      if (chunk <= 0) {
        const rows = await run<Rec[] | object>(sql);
        if (Array.isArray(rows) && rows.length) yield rows.map(jsonRow);
        return;
      }
      // The stream pauses the socket when its buffer is full: at most about one chunk waits in memory.
      // The server gives up on a client that does not read for net_write_timeout (60 s by default):
      // a slow pipeline must not cut the result short.
      await run(`SET SESSION net_write_timeout = ${STREAM_WRITE_TIMEOUT_S}`);
      const stream = conn.query(sql).stream({ highWaterMark: chunk });
      let buf: Rec[] = [];
      let ended = false;
      try {
        for await (const row of stream) {
          buf.push(jsonRow(row as Rec));
          if (buf.length >= chunk) {
            yield buf;
            buf = [];
          }
        }
        ended = true;
        if (buf.length) yield buf;
      } finally {
        if (!ended) abandoned = true;
      }
    },
    check: (sql) =>
      new Promise<void>((resolve, reject) =>
        conn.prepare(oneStatement(sql), (err, stmt) => {
          if (err) return reject(err);
          stmt.close();
          resolve();
        }),
      ),
    async describe(table: TableName) {
      const where = 'TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?';
      const args = [table.schema ?? null, table.name];
      const columns = await new Promise<{ name: string; type: string }[]>((resolve, reject) =>
        conn.query(
          `SELECT COLUMN_NAME AS name, LOWER(DATA_TYPE) AS type FROM information_schema.COLUMNS WHERE ${where} ORDER BY ORDINAL_POSITION`,
          args,
          (err, rows) => (err ? reject(err) : resolve(rows as never)),
        ),
      );
      if (columns.length === 0) return undefined;
      const keys = await new Promise<{ idx: string; col: string }[]>((resolve, reject) =>
        conn.query(
          `SELECT INDEX_NAME AS idx, COLUMN_NAME AS col FROM information_schema.STATISTICS WHERE ${where} AND NON_UNIQUE = 0 ORDER BY INDEX_NAME, SEQ_IN_INDEX`,
          args,
          (err, rows) => (err ? reject(err) : resolve(rows as never)),
        ),
      );
      const unique = new Map<string, string[]>();
      for (const k of keys) unique.set(k.idx, [...(unique.get(k.idx) ?? []), k.col]);
      const info: TableInfo = {
        sql: table.schema ? `${qi(table.schema)}.${qi(table.name)}` : qi(table.name),
        shown: table.schema ? `${table.schema}.${table.name}` : table.name,
        columns,
        uniqueKeys: [...unique.values()],
      };
      return info;
    },
    begin: async () => void (await run('START TRANSACTION')),
    commit: async () => void (await run('COMMIT')),
    rollback: async () => void (await run('ROLLBACK')),
    atomic: (op) => op(),
    fit(spec, rows, from, limit) {
      const end = Math.min(rows.length, from + limit);
      let bytes = 0;
      for (let i = from; i < end; i++) {
        const r = rows[i]!;
        for (const k of spec.keys) {
          const v = r[k];
          bytes += typeof v === 'string' ? v.length + 4 : typeof v === 'object' && v !== null ? JSON.stringify(v).length + 4 : 24;
        }
        if (bytes > budget) return Math.max(1, i - from);
      }
      return end - from;
    },
    async insert(spec, rows) {
      const { head, tail, convert } = statementOf(spec);
      const sql = head + rows.map((r) => `(${spec.keys.map((k, i) => escape(convert[i]!(r[k]) as SqlValue)).join(',')})`).join(',') + tail;
      try {
        await run(sql);
        return sql.length;
      } catch (e) {
        if (classify(e) === 'data') throw new SqlError((e as Error).message, 'data', { cause: e });
        throw e;
      }
    },
    classify,
    async close() {
      closing = true;
      if (!abandoned) await new Promise<void>((resolve) => conn.end(() => resolve()));
      conn.destroy();
    },
  };
  return driver;
}

interface Statement {
  head: string;
  tail: string;
  convert: ((v: unknown) => unknown)[];
}

const statements = new WeakMap<InsertSpec, Statement>();

function statementOf(spec: InsertSpec): Statement {
  let s = statements.get(spec);
  if (s) return s;
  const cols = spec.columns.map((c) => qi(c.name)).join(', ');
  // ON DUPLICATE KEY UPDATE fires on any unique key of the table; upsert_keys were checked to be one of them.
  const set = spec.upsert ? spec.columns.filter((c) => !spec.upsert!.includes(c.name)) : [];
  const update = (set.length ? set : spec.columns.filter((c) => spec.upsert?.includes(c.name))).map((c) => `${qi(c.name)} = VALUES(${qi(c.name)})`);
  s = {
    head: `INSERT INTO ${spec.table.sql} (${cols}) VALUES `,
    tail: spec.upsert ? ` ON DUPLICATE KEY UPDATE ${update.join(', ')}` : '',
    convert: spec.columns.map((c) =>
      /^(datetime|timestamp)/.test(c.type) ? (v: unknown) => scalar(mysqlDateTime(v), false) : (v: unknown) => scalar(v, false),
    ),
  };
  statements.set(spec, s);
  return s;
}
