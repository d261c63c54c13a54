// The daemon's database: openStore() picks the engine from SVC_DB_URL / SVC_DB_PATH, migrates the
// schema to the latest version and hands back the repositories (see types.ts, docs/storage.md).
import { sql, type Kysely } from 'kysely';
import { silentLogger, type Logger } from '../observability/log.js';
import { SqlAlertStore } from './alerts.js';
import { createKysely, redactUrl, resolveTarget } from './db.js';
import { migrate } from './migrations.js';
import { SqlPipelineStore } from './pipelines.js';
import { SqlProcessedStore } from './processed.js';
import { SqlRunStore } from './runs.js';
import { SqlRunShardStore } from './run-shards.js';
import { SqlTransformStateStore } from './transform-state.js';
import { SqlDlqReplayStore } from './dlq-replayed.js';
import type { Schema } from './schema.js';
import type { DbEngine, Store } from './types.js';
import { SqlUserStore } from './users.js';

export type * from './types.js';
export { ALERT_HISTORY_LIMIT, DuplicateAlertRuleError } from './alerts.js';
export { PipelineConflictError } from './pipelines.js';
export { defaultDbPath, redactUrl, resolveTarget } from './db.js';
export { LATEST_MIGRATION, MIGRATION_NAMES } from './migrations.js';
export { DbProcessedFiles } from './processed.js';
export { isDatabaseUnavailable } from './unavailable.js';

export interface OpenStoreOptions {
  /** SVC_DB_URL: empty for the embedded SQLite file, else postgresql://, postgres://, mysql:// or mariadb://. */
  url?: string;
  /** SVC_DB_PATH: the SQLite file (parent directories are created); ':memory:' for tests. */
  path?: string;
  log?: Logger;
}

/** The one Store implementation (Kysely over SQLite, PostgreSQL or MySQL/MariaDB). */
export class SqlStore implements Store {
  readonly pipelines: SqlPipelineStore;
  readonly runs: SqlRunStore;
  /** The shards of sharded batch runs (issue 33). */
  readonly runShards: SqlRunShardStore;
  readonly alerts: SqlAlertStore;
  readonly users: SqlUserStore;
  readonly processed: SqlProcessedStore;
  readonly transformState: SqlTransformStateStore;
  readonly dlqReplayed: SqlDlqReplayStore;
  private closed: Promise<void> | undefined;

  constructor(
    /** The Kysely handle, for features that own reserved tables (run_queue, transform_state, ...). */
    readonly db: Kysely<Schema>,
    readonly engine: DbEngine,
    readonly path: string | null,
  ) {
    this.pipelines = new SqlPipelineStore(db, engine);
    this.runs = new SqlRunStore(db, engine);
    this.runShards = new SqlRunShardStore(db);
    this.alerts = new SqlAlertStore(db, engine);
    this.users = new SqlUserStore(db, engine);
    this.processed = new SqlProcessedStore(db, engine);
    this.transformState = new SqlTransformStateStore(db);
    this.dlqReplayed = new SqlDlqReplayStore(db, engine);
  }

  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  /** Closes the pool (or the SQLite file). Safe to call twice. */
  close(): Promise<void> {
    this.closed ??= this.db.destroy();
    return this.closed;
  }
}

/**
 * Opens (and creates or upgrades) the database. `url` empty: SQLite file at `path` (WAL mode,
 * busy timeout). Throws on an unsupported URL scheme, an unreachable server or a failed migration.
 */
export async function openStore(opts: OpenStoreOptions): Promise<SqlStore> {
  const log = opts.log ?? silentLogger;
  const target = resolveTarget(opts);
  const where = target.url ? redactUrl(target.url) : target.path!;
  let db: Kysely<Schema>;
  try {
    db = createKysely(target, log);
  } catch (err) {
    throw new Error(`cannot open ${target.engine} database ${where}: ${(err as Error).message}`, { cause: err });
  }
  try {
    await sql`select 1`.execute(db);
  } catch (err) {
    await db.destroy().catch(() => undefined);
    throw new Error(`cannot connect to ${target.engine} database ${where}: ${describe(err)}`, { cause: err });
  }
  try {
    await migrate(db, target.engine, log);
  } catch (err) {
    await db.destroy().catch(() => undefined);
    throw new Error(`${target.engine} database ${where}: ${describe(err)}`, { cause: err });
  }
  log.info({ engine: target.engine, db: where }, 'database ready');
  return new SqlStore(db, target.engine, target.path);
}

function describe(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length) return err.errors.map(describe).join('; ');
  if (err instanceof Error) return err.message || (err as { code?: string }).code || err.name;
  return String(err);
}
