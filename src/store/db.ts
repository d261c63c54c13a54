// Opening the database: SVC_DB_URL / SVC_DB_PATH to an engine and a Kysely instance.
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
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
import type * as Mysql2 from 'mysql2';
import type Pg from 'pg';
import type { Logger } from '../observability/log.js';
import type { Schema } from './schema.js';
import type { DbTarget } from './target.js';

// The PostgreSQL and MySQL drivers (CommonJS) are required when their engine is opened, not with
// every SQLite daemon (issue 18: start-up time).
const require = createRequire(import.meta.url);

export { defaultDbPath, redactUrl, resolveTarget, type DbTarget } from './target.js';

/** SQLite wait for a lock held by another connection or process. */
export const SQLITE_BUSY_TIMEOUT_MS = 5000;

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
      const pg = require('pg') as typeof Pg;
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
      const { createPool } = require('mysql2') as typeof Mysql2;
      const pool = createPool({ uri, connectionLimit: 10, connectTimeout: 10_000 });
      return new Kysely<Schema>({ dialect: new MysqlDialect({ pool }) });
    }
  }
}
