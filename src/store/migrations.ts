// Schema migrations: ordered, named, in code (no migration files to ship). They run at every
// start (openStore) through Kysely's Migrator, which records applied names in
// `kysely_migration` and takes a lock so two processes never migrate at once.
//
// Policy: never edit a migration that has shipped; add the next number. Column types are
// chosen so every engine returns the same values: timestamps are canonical ISO 8601 text,
// strings compare bytewise (PostgreSQL `collate "C"`, MySQL/MariaDB a binary no-pad
// collation, SQLite's default BINARY), so names and times sort the same everywhere.
import { Migrator, sql, type CreateTableBuilder, type Kysely, type Migration, type QueryExecutorProvider, type RawBuilder } from 'kysely';
import type { Logger } from '../observability/log.js';
import type { DbEngine } from './types.js';

/** Column types per engine. */
interface Types {
  /** Short indexed string (names, ids, statuses, timestamps). */
  str(n: number): RawBuilder<unknown>;
  /** Unbounded text (YAML, JSON, messages). */
  text: RawBuilder<unknown>;
  /** Canonical ISO 8601 UTC timestamp text. */
  ts: RawBuilder<unknown>;
}

function typesFor(engine: DbEngine): Types {
  const str = (n: number) => (engine === 'postgresql' ? sql.raw(`varchar(${n}) collate "C"`) : sql.raw(`varchar(${n})`));
  const text = engine === 'mysql' ? sql.raw('longtext') : engine === 'postgresql' ? sql.raw('text collate "C"') : sql.raw('text');
  return { str, text, ts: str(32) };
}

/** MySQL/MariaDB: a binary collation without trailing-space padding where the server has one. */
async function mysqlTableOptions(db: QueryExecutorProvider): Promise<RawBuilder<unknown>> {
  const preferred = ['utf8mb4_nopad_bin', 'utf8mb4_0900_bin', 'utf8mb4_bin'];
  const rows = await sql<{ name: string }>`select COLLATION_NAME as name from information_schema.COLLATIONS
    where COLLATION_NAME in (${sql.join(preferred)})`.execute(db);
  const have = new Set(rows.rows.map((r) => r.name));
  const collation = preferred.find((c) => have.has(c)) ?? 'utf8mb4_bin';
  return sql.raw(`engine=InnoDB default charset=utf8mb4 collate=${collation}`);
}

type TableFinisher = <T extends string, C extends string>(b: CreateTableBuilder<T, C>) => CreateTableBuilder<T, C>;

async function tableFinisher(db: QueryExecutorProvider, engine: DbEngine): Promise<TableFinisher> {
  if (engine !== 'mysql') return (b) => b;
  const opts = await mysqlTableOptions(db);
  return (b) => b.modifyEnd(opts);
}

/** An auto-increment integer primary key column named `id`. */
function withId<T extends string, C extends string>(engine: DbEngine, b: CreateTableBuilder<T, C>) {
  return engine === 'postgresql' ? b.addColumn('id', 'serial', (c) => c.primaryKey()) : b.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
}

function m0001Initial(engine: DbEngine): Migration {
  const t = typesFor(engine);
  return {
    async up(db) {
      const fin = await tableFinisher(db, engine);
      await fin(
        db.schema
          .createTable('pipelines')
          .addColumn('name', t.str(255), (c) => c.primaryKey())
          .addColumn('yaml', t.text, (c) => c.notNull())
          .addColumn('origin', t.str(16), (c) => c.notNull())
          .addColumn('file', t.text)
          .addColumn('version', 'integer', (c) => c.notNull())
          .addColumn('updated_at', t.ts, (c) => c.notNull()),
      ).execute();

      await fin(
        withId(engine, db.schema.createTable('pipeline_versions'))
          .addColumn('name', t.str(255), (c) => c.notNull())
          .addColumn('version', 'integer', (c) => c.notNull())
          .addColumn('yaml', t.text, (c) => c.notNull())
          .addColumn('created_at', t.ts, (c) => c.notNull())
          .addColumn('is_active', 'integer', (c) => c.notNull().defaultTo(0))
          .addUniqueConstraint('pipeline_versions_name_version', ['name', 'version']),
      ).execute();

      await fin(
        db.schema
          .createTable('runs')
          .addColumn('run_id', t.str(128), (c) => c.primaryKey())
          .addColumn('pipeline', t.str(255), (c) => c.notNull())
          .addColumn('node_id', t.str(255), (c) => c.notNull())
          .addColumn('status', t.str(16), (c) => c.notNull())
          .addColumn('started_at', t.ts, (c) => c.notNull())
          .addColumn('finished_at', t.ts)
          .addColumn('records_in', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('records_out', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('records_skipped', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('bytes_in', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('bytes_out', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('dlq_count', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('error', t.text)
          .addColumn('errors', t.text, (c) => c.notNull()),
      ).execute();
      // The list queries: newest first overall, per pipeline, per status (run_id breaks ties).
      await db.schema.createIndex('runs_started_at').on('runs').columns(['started_at', 'run_id']).execute();
      await db.schema.createIndex('runs_pipeline_started_at').on('runs').columns(['pipeline', 'started_at', 'run_id']).execute();
      await db.schema.createIndex('runs_status_started_at').on('runs').columns(['status', 'started_at', 'run_id']).execute();

      await fin(
        withId(engine, db.schema.createTable('alert_rules'))
          .addColumn('pipeline', t.str(255), (c) => c.notNull())
          .addColumn('name', t.str(255), (c) => c.notNull())
          .addColumn('condition', t.text, (c) => c.notNull())
          .addColumn('action', t.str(16), (c) => c.notNull())
          .addColumn('webhook_url', t.text)
          .addColumn('email_to', t.text)
          .addColumn('subject', t.text)
          .addColumn('cooldown_seconds', 'integer', (c) => c.notNull().defaultTo(0))
          .addUniqueConstraint('alert_rules_pipeline_name', ['pipeline', 'name']),
      ).execute();

      await fin(
        db.schema
          .createTable('alert_cooldowns')
          .addColumn('pipeline', t.str(255), (c) => c.notNull())
          .addColumn('rule', t.str(255), (c) => c.notNull())
          .addColumn('fired_at', t.ts, (c) => c.notNull())
          .addPrimaryKeyConstraint('alert_cooldowns_pk', ['pipeline', 'rule']),
      ).execute();

      await fin(
        db.schema
          .createTable('users')
          .addColumn('username', t.str(255), (c) => c.primaryKey())
          .addColumn('password_hash', t.text, (c) => c.notNull())
          .addColumn('updated_at', t.ts, (c) => c.notNull()),
      ).execute();

      await fin(
        db.schema
          .createTable('processed_files')
          .addColumn('pipeline', t.str(255), (c) => c.notNull())
          .addColumn('key_sha256', t.str(64), (c) => c.notNull())
          .addColumn('file_key', t.text, (c) => c.notNull())
          .addColumn('processed_at', t.ts, (c) => c.notNull())
          .addPrimaryKeyConstraint('processed_files_pk', ['pipeline', 'key_sha256']),
      ).execute();
    },
    async down(db) {
      for (const table of ['processed_files', 'users', 'alert_cooldowns', 'alert_rules', 'runs', 'pipeline_versions', 'pipelines']) {
        await db.schema.dropTable(table).ifExists().execute();
      }
    },
  };
}

/** Stats need run durations: a column filled at finish, backfilled here, and an index on finished_at. */
function m0002RunDuration(engine: DbEngine): Migration {
  return {
    async up(db) {
      await db.schema.alterTable('runs').addColumn('duration_ms', 'bigint').execute();
      const backfill =
        engine === 'sqlite'
          ? sql`update runs set duration_ms = max(0, cast(round((julianday(finished_at) - julianday(started_at)) * 86400000.0) as integer))
                where finished_at is not null`
          : engine === 'postgresql'
            ? sql`update runs set duration_ms = greatest(0, round(extract(epoch from (finished_at::timestamptz - started_at::timestamptz)) * 1000)::bigint)
                  where finished_at is not null`
            : sql`update runs set duration_ms = greatest(0, timestampdiff(microsecond,
                    str_to_date(started_at, ${'%Y-%m-%dT%H:%i:%s.%fZ'}), str_to_date(finished_at, ${'%Y-%m-%dT%H:%i:%s.%fZ'})) div 1000)
                  where finished_at is not null`;
      await backfill.execute(db);
      await db.schema.createIndex('runs_finished_at').on('runs').column('finished_at').execute();
    },
    async down(db) {
      await db.schema
        .dropIndex('runs_finished_at')
        .$call((b) => (engine === 'mysql' ? b.on('runs') : b))
        .execute();
      await db.schema.alterTable('runs').dropColumn('duration_ms').execute();
    },
  };
}

/** Tables reserved for later features; created empty so those features need no schema change. */
function m0003ReservedTables(engine: DbEngine): Migration {
  const t = typesFor(engine);
  return {
    async up(db) {
      const fin = await tableFinisher(db, engine);
      // Manual runs queued while no worker is healthy (manager mode, SVC_QUEUE_MANUAL_RUNS).
      await fin(
        db.schema
          .createTable('run_queue')
          .addColumn('run_id', t.str(128), (c) => c.primaryKey())
          .addColumn('pipeline', t.str(255), (c) => c.notNull())
          .addColumn('flush', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('enqueued_at', t.ts, (c) => c.notNull())
          .addColumn('expires_at', t.ts, (c) => c.notNull()),
      ).execute();
      await db.schema.createIndex('run_queue_enqueued_at').on('run_queue').columns(['enqueued_at', 'run_id']).execute();
      // Stream placements of the manager (one group per pipeline; slots as JSON).
      await fin(
        db.schema
          .createTable('stream_placements')
          .addColumn('pipeline', t.str(255), (c) => c.primaryKey())
          .addColumn('placement_group_id', t.str(128), (c) => c.notNull())
          .addColumn('status', t.str(16), (c) => c.notNull())
          .addColumn('target_count', t.str(16), (c) => c.notNull())
          .addColumn('config_sha256', t.str(64))
          .addColumn('started_at', t.ts, (c) => c.notNull())
          .addColumn('slots_json', t.text, (c) => c.notNull())
          .addColumn('updated_at', t.ts, (c) => c.notNull()),
      ).execute();
      // State of stateful transforms (counter_delta, window_aggregate), per transform instance.
      await fin(
        db.schema
          .createTable('transform_state')
          .addColumn('pipeline', t.str(255), (c) => c.notNull())
          .addColumn('transform_key', t.str(255), (c) => c.notNull())
          .addColumn('state_json', t.text, (c) => c.notNull())
          .addColumn('config_sha256', t.str(64), (c) => c.notNull())
          .addColumn('updated_at', t.ts, (c) => c.notNull())
          .addPrimaryKeyConstraint('transform_state_pk', ['pipeline', 'transform_key']),
      ).execute();
    },
    async down(db) {
      for (const table of ['transform_state', 'stream_placements', 'run_queue']) await db.schema.dropTable(table).ifExists().execute();
    },
  };
}

/** Which pipeline version a run ran (the run page links to it); null for runs recorded before. */
function m0004RunPipelineVersion(): Migration {
  return {
    async up(db) {
      await db.schema.alterTable('runs').addColumn('pipeline_version', 'integer').execute();
    },
    async down(db) {
      await db.schema.alterTable('runs').dropColumn('pipeline_version').execute();
    },
  };
}

/** The managers' leader lease (issue 15): one row per lease, its holder, epoch and expiry (database clock). */
function m0005ManagerLease(engine: DbEngine): Migration {
  const t = typesFor(engine);
  return {
    async up(db) {
      const fin = await tableFinisher(db, engine);
      await fin(
        db.schema
          .createTable('manager_lease')
          .addColumn('name', t.str(64), (c) => c.primaryKey())
          .addColumn('holder', t.str(255), (c) => c.notNull())
          .addColumn('epoch', 'integer', (c) => c.notNull())
          .addColumn('expires_at', t.ts, (c) => c.notNull())
          .addColumn('renewed_at', t.ts, (c) => c.notNull()),
      ).execute();
    },
    async down(db) {
      await db.schema.dropTable('manager_lease').ifExists().execute();
    },
  };
}

/** Dead letters replayed (docs/dead-letters.md): which envelope of a pipeline's DLQ was delivered by which replay run. */
function m0006DlqReplayed(engine: DbEngine): Migration {
  const t = typesFor(engine);
  return {
    async up(db) {
      const fin = await tableFinisher(db, engine);
      await fin(
        db.schema
          .createTable('dlq_replayed')
          .addColumn('pipeline', t.str(255), (c) => c.notNull())
          .addColumn('envelope_id', t.str(64), (c) => c.notNull())
          .addColumn('replayed_at', t.ts, (c) => c.notNull())
          .addColumn('run_id', t.str(128), (c) => c.notNull())
          .addPrimaryKeyConstraint('dlq_replayed_pk', ['pipeline', 'envelope_id']),
      ).execute();
    },
    async down(db) {
      await db.schema.dropTable('dlq_replayed').ifExists().execute();
    },
  };
}

/** Alert delivery history (docs/alerts.md): each rule's last deliveries, newest kept, the rest trimmed at every write. */
function m0007AlertDeliveries(engine: DbEngine): Migration {
  const t = typesFor(engine);
  return {
    async up(db) {
      const fin = await tableFinisher(db, engine);
      await fin(
        withId(engine, db.schema.createTable('alert_deliveries'))
          .addColumn('pipeline', t.str(255), (c) => c.notNull())
          .addColumn('rule', t.str(255), (c) => c.notNull())
          .addColumn('attempted_at', t.ts, (c) => c.notNull())
          .addColumn('run_id', t.str(128))
          .addColumn('channel', t.str(16), (c) => c.notNull())
          .addColumn('target', t.text, (c) => c.notNull())
          .addColumn('outcome', t.str(16), (c) => c.notNull())
          .addColumn('detail', t.text)
          .addColumn('error', t.text)
          .addColumn('attempt', 'integer', (c) => c.notNull()),
      ).execute();
      await db.schema.createIndex('alert_deliveries_rule').on('alert_deliveries').columns(['pipeline', 'rule', 'id']).execute();
    },
    async down(db) {
      await db.schema.dropTable('alert_deliveries').ifExists().execute();
    },
  };
}

/**
 * A pipeline's desired state (issue 29): `running` or `stopped`, what start and stop remember across
 * restarts. Null on the rows before it: the pipeline manager writes their YAML's `enabled` at its
 * first start with this column (src/pipelines/registry.ts restore()).
 */
function m0008PipelineDesiredState(engine: DbEngine): Migration {
  const t = typesFor(engine);
  return {
    async up(db) {
      await db.schema.alterTable('pipelines').addColumn('desired', t.str(16)).execute();
    },
    async down(db) {
      await db.schema.alterTable('pipelines').dropColumn('desired').execute();
    },
  };
}

/** Records a run dropped on purpose (records_filtered: filter, limit, deduplicate, no sink condition); 0 for runs recorded before. */
function m0009RunRecordsFiltered(): Migration {
  return {
    async up(db) {
      await db.schema
        .alterTable('runs')
        .addColumn('records_filtered', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
    },
    async down(db) {
      await db.schema.alterTable('runs').dropColumn('records_filtered').execute();
    },
  };
}

/**
 * The shards of sharded batch runs (issue 33): one row per shard of a run, its worker, its targets
 * and its outcome; a shard given up (its worker died) keeps its row, status `lost` or `missed`.
 */
function m0010RunShards(engine: DbEngine): Migration {
  const t = typesFor(engine);
  return {
    async up(db) {
      const fin = await tableFinisher(db, engine);
      await fin(
        db.schema
          .createTable('run_shards')
          .addColumn('run_id', t.str(128), (c) => c.notNull())
          .addColumn('shard_index', 'integer', (c) => c.notNull())
          .addColumn('pipeline', t.str(255), (c) => c.notNull())
          .addColumn('worker_id', t.str(255), (c) => c.notNull())
          .addColumn('epoch', 'integer', (c) => c.notNull())
          .addColumn('status', t.str(16), (c) => c.notNull())
          .addColumn('target_count', 'integer', (c) => c.notNull())
          .addColumn('targets_json', t.text, (c) => c.notNull())
          .addColumn('records_in', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('records_out', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('errors', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('duration_ms', 'bigint')
          .addColumn('missed_json', t.text)
          .addColumn('error', t.text)
          .addColumn('started_at', t.ts, (c) => c.notNull())
          .addColumn('finished_at', t.ts)
          .addPrimaryKeyConstraint('run_shards_pk', ['run_id', 'shard_index']),
      ).execute();
      await db.schema.createIndex('run_shards_status').on('run_shards').columns(['status', 'run_id']).execute();
    },
    async down(db) {
      await db.schema.dropTable('run_shards').ifExists().execute();
    },
  };
}

/**
 * Transform state of sharded batch runs (issue 33), by target: one row per pipeline, stateful
 * transform instance and target identity (snmp_poll's `_target`, prometheus_scrape's URL), so that a
 * target that moves to another worker finds its counter_delta history there. The key holds the
 * target's SHA-256 (MySQL caps a key at 3,072 bytes; an identity can be a long URL), the row the
 * identity itself.
 */
function m0011TransformStateTargets(engine: DbEngine): Migration {
  const t = typesFor(engine);
  return {
    async up(db) {
      const fin = await tableFinisher(db, engine);
      await fin(
        db.schema
          .createTable('transform_state_targets')
          .addColumn('pipeline', t.str(255), (c) => c.notNull())
          .addColumn('transform_key', t.str(255), (c) => c.notNull())
          .addColumn('target_sha256', t.str(64), (c) => c.notNull())
          .addColumn('target', t.text, (c) => c.notNull())
          .addColumn('state_json', t.text, (c) => c.notNull())
          .addColumn('config_sha256', t.str(64), (c) => c.notNull())
          .addColumn('updated_at', t.ts, (c) => c.notNull())
          .addPrimaryKeyConstraint('transform_state_targets_pk', ['pipeline', 'transform_key', 'target_sha256']),
      ).execute();
    },
    async down(db) {
      await db.schema.dropTable('transform_state_targets').ifExists().execute();
    },
  };
}

/** Every migration, in order. Names are permanent. */
export function migrationsFor(engine: DbEngine): Record<string, Migration> {
  return {
    '0001_initial': m0001Initial(engine),
    '0002_run_duration': m0002RunDuration(engine),
    '0003_reserved_tables': m0003ReservedTables(engine),
    '0004_run_pipeline_version': m0004RunPipelineVersion(),
    '0005_manager_lease': m0005ManagerLease(engine),
    '0006_dlq_replayed': m0006DlqReplayed(engine),
    '0007_alert_deliveries': m0007AlertDeliveries(engine),
    '0008_pipeline_desired_state': m0008PipelineDesiredState(engine),
    '0009_run_records_filtered': m0009RunRecordsFiltered(),
    '0010_run_shards': m0010RunShards(engine),
    '0011_transform_state_targets': m0011TransformStateTargets(engine),
  };
}

export const MIGRATION_NAMES = Object.keys(migrationsFor('sqlite'));
export const LATEST_MIGRATION = MIGRATION_NAMES[MIGRATION_NAMES.length - 1]!;

export function createMigrator<DB>(db: Kysely<DB>, engine: DbEngine, opts: { disableTransactions?: boolean } = {}): Migrator {
  return new Migrator({ db, provider: { getMigrations: async () => migrationsFor(engine) }, ...opts });
}

/**
 * Brings the schema to `target` (default: the latest migration). Returns the names applied now.
 * Throws when a migration fails or the database was migrated by a newer svc.
 *
 * PostgreSQL and MySQL serialize concurrent migrators with Kysely's lock. SQLite has none (its
 * lock is a no-op), so two processes opening a new file at once would both create tables: there
 * the whole run happens inside one `BEGIN IMMEDIATE` transaction, which takes the file's write
 * lock up front (waiting up to the busy timeout) so the second process sees the finished schema.
 */
export async function migrate<DB>(db: Kysely<DB>, engine: DbEngine, log: Logger, target: string = LATEST_MIGRATION): Promise<string[]> {
  let result: Awaited<ReturnType<Migrator['migrateTo']>>;
  if (engine === 'sqlite') {
    await sql`begin immediate`.execute(db);
    try {
      result = await createMigrator(db, engine, { disableTransactions: true }).migrateTo(target);
    } catch (err) {
      await sql`rollback`.execute(db);
      throw err;
    }
    await sql.raw(result.error === undefined ? 'commit' : 'rollback').execute(db);
  } else {
    result = await createMigrator(db, engine).migrateTo(target);
  }
  const { error, results = [] } = result;
  const applied = error === undefined ? results.filter((r) => r.status === 'Success' && r.direction === 'Up').map((r) => r.migrationName) : [];
  for (const name of applied) log.info({ migration: name, engine }, 'database migration applied');
  if (error !== undefined) {
    const failed = results.find((r) => r.status === 'Error')?.migrationName;
    const msg = error instanceof Error ? error.message : String(error);
    const newer = /previously executed migration .* is missing/.test(msg)
      ? ' (the database was migrated by a newer svc version; use that version or a fresh database)'
      : '';
    throw new Error(`database migration ${failed ? `${failed} ` : ''}failed: ${msg}${newer}`, { cause: error });
  }
  return applied;
}
