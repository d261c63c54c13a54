// Opening the database: SVC_DB_URL / SVC_DB_PATH to an engine and a Kysely instance.
import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import {
  CompiledQuery,
  Kysely,
  MysqlDialect,
  PostgresDialect,
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type Driver,
  type SqliteDialectConfig,
} from 'kysely';
import { createPool } from 'mysql2';
import pg from 'pg';
import type { Logger } from '../observability/log.js';
import type { Schema } from './schema.js';
import type { DbEngine } from './types.js';

export interface DbTarget {
  engine: DbEngine;
  /** Server URL (postgresql, mysql), else null. */
  url: string | null;
  /** File of the embedded database (sqlite), else null. */
  path: string | null;
}

/** SQLite wait for a lock held by another connection or process. */
export const SQLITE_BUSY_TIMEOUT_MS = 5000;

/** The embedded database when neither SVC_DB_URL nor SVC_DB_PATH is set: `~/.svc/svc.db`. */
export function defaultDbPath(): string {
  return join(homedir(), '.svc', 'svc.db');
}

const SCHEMES: Record<string, DbEngine> = {
  'postgresql:': 'postgresql',
  'postgres:': 'postgresql',
  'mysql:': 'mysql',
  'mariadb:': 'mysql',
};

/** Which engine and where. Throws a clear Error on an unsupported or malformed SVC_DB_URL. */
export function resolveTarget(opts: { url?: string; path?: string }): DbTarget {
  const url = (opts.url ?? '').trim();
  if (url === '') {
    const p = opts.path && opts.path.trim() !== '' ? opts.path : defaultDbPath();
    return { engine: 'sqlite', url: null, path: p === ':memory:' ? p : resolve(p) };
  }
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*:)\/\//.exec(url);
  const engine = m ? SCHEMES[m[1]!.toLowerCase()] : undefined;
  if (!engine) {
    const shown = m ? `scheme "${m[1]}//"` : `value ${JSON.stringify(redactUrl(url))}`;
    throw new Error(
      `SVC_DB_URL: unsupported ${shown}; accepted schemes are postgresql://, postgres://, mysql:// and mariadb:// ` +
        '(leave SVC_DB_URL empty to use the embedded SQLite file at SVC_DB_PATH)',
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`SVC_DB_URL: cannot parse ${JSON.stringify(redactUrl(url))} as a URL`);
  }
  if (engine === 'mysql' && decodeURIComponent(parsed.pathname.replace(/^\//, '')) === '') {
    throw new Error(
      `SVC_DB_URL: ${redactUrl(url)} names no database; use mysql://user:password@host:3306/<database>`,
    );
  }
  return { engine, url, path: null };
}

/** The URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/, '$1:***@');
}

/**
 * SQLite transactions start with BEGIN IMMEDIATE: every store transaction writes, and a deferred
 * BEGIN that reads first fails at once with SQLITE_BUSY when another process (or connection)
 * wrote in between, where IMMEDIATE takes the write lock up front and waits the busy timeout.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly config: SqliteDialectConfig) {
    super(config);
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.config);
  }
}

/** A Kysely instance for the target. SQLite: parent directories created, WAL, busy timeout. */
export function createKysely(target: DbTarget, log: Logger): Kysely<Schema> {
  switch (target.engine) {
    case 'sqlite': {
      const path = target.path!;
      if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
      const database = new Database(path, { timeout: SQLITE_BUSY_TIMEOUT_MS });
      database.pragma('journal_mode = WAL');
      database.pragma('synchronous = NORMAL');
      database.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
      return new Kysely<Schema>({ dialect: new ImmediateSqliteDialect({ database }) });
    }
    case 'postgresql': {
      const pool = new pg.Pool({ connectionString: target.url!, max: 10, connectionTimeoutMillis: 10_000 });
      pool.on('error', (err) => log.warn({ err }, 'postgresql: idle connection error'));
      // A checked-out client (a transaction between two queries) whose server connection drops
      // emits 'error' where pg-pool listens only on idle clients: unhandled, that would end the
      // process. The statement in flight (or the next one) fails instead, and the pool discards
      // the client when it comes back.
      pool.on('connect', (client) => client.on('error', (err) => log.debug({ err: err.message }, 'postgresql: connection lost')));
      return new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
    }
    case 'mysql': {
      const uri = target.url!.replace(/^mariadb:/i, 'mysql:');
      const pool = createPool({ uri, connectionLimit: 10, connectTimeout: 10_000 });
      return new Kysely<Schema>({ dialect: new MysqlDialect({ pool }) });
    }
  }
}
