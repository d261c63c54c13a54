// Table shapes as Kysely sees them (the latest migration). Timestamps are canonical ISO 8601 UTC
// text (`2024-05-01T12:00:00.000Z`) on every engine, so they compare and sort as strings.
// BIGINT columns and aggregates come back from pg (and DECIMAL sums from mysql2) as strings:
// repositories convert every number with `num()` before it leaves the store.
import type { ColumnType, Generated } from 'kysely';

/** A BIGINT column: written as a number, read as number or string depending on the driver. */
export type BigIntCol = ColumnType<number | string, number, number>;
/** An INTEGER column read back as number or string (defensive: some drivers). */
export type IntCol = ColumnType<number | string, number, number>;

export interface PipelinesTable {
  name: string;
  yaml: string;
  origin: string;
  file: string | null;
  version: IntCol;
  updated_at: string;
  /** The operator's last start or stop: `running` or `stopped` (0007); null on rows saved before it. */
  desired: string | null;
}

export interface PipelineVersionsTable {
  id: Generated<number>;
  name: string;
  version: IntCol;
  yaml: string;
  created_at: string;
  is_active: IntCol;
}

export interface RunsTable {
  run_id: string;
  pipeline: string;
  node_id: string;
  status: string;
  started_at: string;
  finished_at: string | null;
  records_in: BigIntCol;
  records_out: BigIntCol;
  records_skipped: BigIntCol;
  /** Records dropped on purpose (migration 0007); 0 for runs recorded before. */
  records_filtered: ColumnType<number | string, number | undefined, number>;
  bytes_in: BigIntCol;
  bytes_out: BigIntCol;
  dlq_count: BigIntCol;
  error: string | null;
  /** JSON array of strings. */
  errors: string;
  /** finished_at - started_at in milliseconds; null while running (migration 0002). */
  duration_ms: ColumnType<number | string | null, number | null, number | null>;
  /** The pipeline version the run ran; null for runs recorded before migration 0004. */
  pipeline_version: ColumnType<number | string | null, number | null | undefined, number | null>;
}

export interface AlertRulesTable {
  id: Generated<number>;
  pipeline: string;
  name: string;
  condition: string;
  action: string;
  webhook_url: string | null;
  email_to: string | null;
  subject: string | null;
  cooldown_seconds: IntCol;
}

export interface AlertCooldownsTable {
  pipeline: string;
  rule: string;
  fired_at: string;
}

/** Alert delivery history (migration 0007): the last deliveries of each rule. */
export interface AlertDeliveriesTable {
  id: Generated<number>;
  pipeline: string;
  rule: string;
  attempted_at: string;
  run_id: string | null;
  channel: string;
  target: string;
  outcome: string;
  detail: string | null;
  error: string | null;
  attempt: IntCol;
}

export interface UsersTable {
  username: string;
  password_hash: string;
  updated_at: string;
}

export interface ProcessedFilesTable {
  pipeline: string;
  /** The file key as given (path or object key). */
  file_key: string;
  /** sha256 hex of file_key: the unique key (file keys can be longer than an index allows). */
  key_sha256: string;
  processed_at: string;
}

/** Reserved (migration 0003): durable queue of manual runs waiting for a worker. */
export interface RunQueueTable {
  run_id: string;
  pipeline: string;
  flush: IntCol;
  enqueued_at: string;
  expires_at: string;
}

/** Reserved (migration 0003): persisted stream placements of the manager. */
export interface StreamPlacementsTable {
  pipeline: string;
  placement_group_id: string;
  status: string;
  target_count: string;
  config_sha256: string | null;
  started_at: string;
  slots_json: string;
  updated_at: string;
}

/** Reserved (migration 0003): state of stateful transforms. */
export interface TransformStateTable {
  pipeline: string;
  transform_key: string;
  state_json: string;
  config_sha256: string;
  updated_at: string;
}

/** Transform state of sharded batch runs by target (migration 0011, issue 33). */
export interface TransformStateTargetsTable {
  pipeline: string;
  transform_key: string;
  target_sha256: string;
  target: string;
  state_json: string;
  config_sha256: string;
  updated_at: string;
}

/** The shards of sharded batch runs (migration 0010, issue 33). */
export interface RunShardsTable {
  run_id: string;
  shard_index: number;
  pipeline: string;
  worker_id: string;
  epoch: number;
  status: string;
  target_count: number;
  targets_json: string;
  records_in: IntCol;
  records_out: IntCol;
  errors: number;
  duration_ms: IntCol | null;
  missed_json: string | null;
  error: string | null;
  started_at: string;
  finished_at: string | null;
}

export interface Schema {
  run_shards: RunShardsTable;
  pipelines: PipelinesTable;
  pipeline_versions: PipelineVersionsTable;
  runs: RunsTable;
  alert_rules: AlertRulesTable;
  alert_cooldowns: AlertCooldownsTable;
  alert_deliveries: AlertDeliveriesTable;
  users: UsersTable;
  processed_files: ProcessedFilesTable;
  run_queue: RunQueueTable;
  stream_placements: StreamPlacementsTable;
  transform_state: TransformStateTable;
  transform_state_targets: TransformStateTargetsTable;
  manager_lease: ManagerLeaseTable;
  dlq_replayed: DlqReplayedTable;
}

/** Dead letters delivered by a replay (migration 0006). */
export interface DlqReplayedTable {
  pipeline: string;
  envelope_id: string;
  replayed_at: string;
  run_id: string;
}

/** The managers' leader lease (migration 0005). */
export interface ManagerLeaseTable {
  name: string;
  holder: string;
  epoch: IntCol;
  expires_at: string;
  renewed_at: string;
}
