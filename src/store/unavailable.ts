// Is an error "the database cannot be reached" (a server down, restarting, refusing connections, a
// dropped connection, a locked or unreadable SQLite file) rather than a problem of the query? The
// API answers those with 503 instead of 500; the drivers' codes stay in the store.

/** Node.js socket errors: the server is not there or the connection broke. */
const NET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);

/** PostgreSQL SQLSTATEs of a lost or refused connection (class 08 is matched by prefix). */
const PG_CODES = new Set([
  '57P01', // admin_shutdown (pg_terminate_backend, server shutdown)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, in recovery)
  '57P04', // database_dropped
  '53300', // too_many_connections
]);

/** mysql2 codes of a lost or refused connection. */
const MYSQL_CODES = new Set([
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  'ER_CON_COUNT_ERROR',
  'ER_TOO_MANY_USER_CONNECTIONS',
  'ER_SERVER_SHUTDOWN',
]);

/** pg and pg-pool messages that carry no code. */
const PG_MESSAGES = /^Connection terminated|timeout exceeded when trying to connect|is not queryable|^Connection ended unexpectedly/i;

/** SQLite (better-sqlite3) base codes; extended codes (SQLITE_IOERR_WRITE, ...) match by prefix. */
const SQLITE_PREFIXES = ['SQLITE_BUSY', 'SQLITE_CANTOPEN', 'SQLITE_IOERR'];

function isUnavailableOne(err: object): boolean {
  const e = err as { code?: unknown; severity?: unknown; fatal?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  if (NET_CODES.has(code) || MYSQL_CODES.has(code) || PG_CODES.has(code)) return true;
  if (/^08[0-9A-Z]{3}$/.test(code)) return true; // PostgreSQL connection_exception class
  // A PostgreSQL FATAL (or PANIC) ends the session: the database refused or dropped the connection
  // (e.g. 55000 "database is not currently accepting connections", 3D000 at connect).
  if ((e.severity === 'FATAL' || e.severity === 'PANIC') && /^[0-9A-Z]{5}$/.test(code)) return true;
  // mysql2 marks errors that broke the connection as fatal.
  if (e.fatal === true && code !== '') return true;
  if (SQLITE_PREFIXES.some((p) => code === p || code.startsWith(`${p}_`))) return true;
  return typeof e.message === 'string' && PG_MESSAGES.test(e.message);
}

/**
 * True when `err` (or an error it wraps: `cause`, AggregateError) says the database is unavailable
 * at the connection level, so the request may succeed once it is back. False for query errors
 * (constraint violations, syntax, missing rows).
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const seen = new Set<unknown>();
  const walk = (e: unknown, depth: number): boolean => {
    if (!e || typeof e !== 'object' || seen.has(e) || depth > 5) return false;
    seen.add(e);
    if (isUnavailableOne(e)) return true;
    if (e instanceof AggregateError && e.errors.some((x) => walk(x, depth + 1))) return true;
    return walk((e as { cause?: unknown }).cause, depth + 1);
  };
  return walk(err, 0);
}
