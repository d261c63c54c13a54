// What the daemon needs from its database, engine-neutral. One implementation (Kysely) serves
// SQLite, PostgreSQL and MariaDB/MySQL; the daemon and API only see these interfaces.

/** The outcome of a run (spec doc 2): the run record the engine fills (src/engine/run-record.ts counts it) and the store keeps. */
export type RunStatus = 'success' | 'failed' | 'aborted';

export interface RunRecord {
  run_id: string;
  pipeline: string;
  node_id: string;
  status: RunStatus;
  started_at: string;
  finished_at: string;
  records_in: number;
  /** Records written to at least one sink. */
  records_out: number;
  /**
   * Records dropped on purpose (an addition to doc 2's record, docs/configuration.md): a transform
   * gave none for them (filter, limit, deduplicate, ...), or no sink's condition took them.
   */
  records_filtered: number;
  records_skipped: number;
  bytes_in: number;
  bytes_out: number;
  dlq_count: number;
  /** The fatal error of a crashed or aborted run; null otherwise. */
  error: string | null;
  /** Per-record error and skip reasons (identical ones folded as "... (xN)"). */
  errors: string[];
  /** Not stored: a stream source exhausted its reconnect attempts, so the daemon does not restart it. */
  gave_up?: boolean;
}

export type DbEngine = 'sqlite' | 'postgresql' | 'mysql';

export interface StoredPipeline {
  name: string;
  yaml: string;
  /** Where it came from: registered through the API, or loaded from SVC_PIPELINE_DIR. */
  origin: 'api' | 'file';
  /** The file it was loaded from (origin file). */
  file: string | null;
  /** Active version number. */
  version: number;
  updated_at: string;
  /**
   * The state the pipeline is to be in, remembered across restarts: its YAML's `enabled` when it
   * was created, then the operator's last start or stop. Null for a pipeline saved before migration
   * 0007 and not started or stopped since (its YAML's `enabled` stands for it).
   */
  desired: DesiredState | null;
}

/** What start and stop remember: whether a pipeline is to run (be scheduled, or stream) or stay stopped. */
export type DesiredState = 'running' | 'stopped';

export interface PipelineVersion {
  id: number;
  name: string;
  version: number;
  created_at: string;
  /** 1 when this is the active version, else 0 (spec doc 2). */
  is_active: 0 | 1;
}

export interface PipelineStore {
  list(): Promise<StoredPipeline[]>;
  get(name: string): Promise<StoredPipeline | undefined>;
  /**
   * Saves a new version (or the first) and makes it active. Returns the stored row.
   * When the YAML equals the active version's, no new version is made. `mode` `create` throws
   * PipelineConflictError when the name exists, `update` when it does not; `upsert` (default) neither.
   */
  save(p: {
    name: string;
    yaml: string;
    origin: 'api' | 'file';
    file?: string | null;
    mode?: 'create' | 'update' | 'upsert';
    /** The desired state of a pipeline this save creates (its YAML's `enabled`); a pipeline that exists keeps its own. */
    desired?: DesiredState;
  }): Promise<StoredPipeline>;
  /** Remembers a start or stop (the desired state); false when the pipeline does not exist. */
  setDesired(name: string, desired: DesiredState): Promise<boolean>;
  /** Deletes the pipeline and its versions. False when it did not exist. */
  delete(name: string): Promise<boolean>;
  /** Newest first. */
  versions(name: string): Promise<PipelineVersion[]>;
  /** YAML of one version, undefined when missing. */
  versionYaml(name: string, version: number): Promise<string | undefined>;
  /** Makes an existing version active again (rollback); false when it does not exist. */
  activate(name: string, version: number): Promise<boolean>;
}

/** A run as stored: the run record plus `running` while it is in progress. */
export type StoredRun = Omit<RunRecord, 'status' | 'finished_at'> & {
  status: RunStatus | 'running';
  finished_at: string | null;
  /** The version of the pipeline the run ran (GET /api/pipelines/{name}/versions); null when not recorded (runs before migration 0004). */
  pipeline_version: number | null;
};

/** A run record to store, with the pipeline version it ran when known. */
export type RunToStore = RunRecord & { pipeline_version?: number | null };

export interface RunQuery {
  pipeline?: string;
  status?: RunStatus | 'running';
  /** ISO 8601; runs started at or after it. */
  from_dt?: string;
  limit: number;
  offset: number;
}

export interface StatsRow {
  pipeline: string;
  records_in: number;
  records_out: number;
  error_rate: number;
  avg_duration_seconds: number;
  run_count: number;
}

/** What a running run's progress writes to its row (store.runs.progress). */
export type RunProgressCounts = Pick<
  RunToStore,
  'records_in' | 'records_out' | 'records_filtered' | 'records_skipped' | 'bytes_in' | 'bytes_out' | 'dlq_count'
> & {
  errors?: string[];
};

export interface RunStore {
  /**
   * Records a run as started (status running), so a crash mid-run is never silently lost. True when
   * this call inserted it; a run that exists already is left as it is (false).
   */
  start(run: { run_id: string; pipeline: string; node_id: string; started_at: string; pipeline_version?: number | null }): Promise<boolean>;
  /** Stores the final record (insert or update); a `pipeline_version` left out keeps the one stored at start. */
  finish(run: RunToStore): Promise<void>;
  /**
   * Stores the final record only if the run is not finished yet (a worker's run-complete, which may
   * be delivered more than once); true when this call finished it.
   */
  finishOnce(run: RunToStore): Promise<boolean>;
  /**
   * The live counters of a run still `running` (issue 29: written every few seconds, so a crash
   * keeps recent figures); a finished run is left as it is. True when the row was updated.
   */
  progress(runId: string, counts: RunProgressCounts): Promise<boolean>;
  get(runId: string): Promise<StoredRun | undefined>;
  /** Newest first (started_at descending). */
  list(q: RunQuery): Promise<StoredRun[]>;
  /** Runs left `running` by an earlier process on this node become `aborted`; returns how many. */
  abortInterrupted(nodeId: string, error: string): Promise<number>;
  /** One row per pipeline over runs finished since `since` (ISO 8601). */
  stats(since: string): Promise<StatsRow[]>;
  /** Latest run of each pipeline (for the pipeline list). */
  latest(): Promise<Map<string, StoredRun>>;
  /** Retention: deletes finished runs beyond the limits, in small batches (docs/storage.md); `running` runs stay. */ purge(limits: {
    finishedBefore: string | null;
    keepPerPipeline: number;
    batchSize?: number;
    signal?: AbortSignal;
  }): Promise<{ byAge: number; byCount: number }>;
}

export interface AlertRule {
  name: string;
  condition: string;
  action: 'webhook' | 'email';
  webhook_url?: string | null;
  email_to?: string | null;
  subject?: string | null;
  cooldown_seconds: number;
}

/** One delivery of an alert rule (docs/alerts.md, "Delivery history"). */
export interface AlertDelivery {
  /** When the delivery ended: confirmed, refused or given up (ISO 8601). */
  at: string;
  /** The run whose evaluation fired the rule; null when not known. */
  run_id: string | null;
  channel: 'webhook' | 'email';
  /** Where it went: the webhook URL without credentials and secret query values, or the recipients. */
  target: string;
  outcome: 'delivered' | 'failed';
  /** delivered: the peer's confirmation (`HTTP 200 OK`, the SMTP reply). */
  detail: string | null;
  /** failed: why, with secrets masked. */
  error: string | null;
  /** 1 for the first delivery after a confirmed one (or ever), then 2, 3, ... while they keep failing. */
  attempt: number;
}

/** What the evaluator records; the store numbers the attempt. */
export type AlertDeliveryToStore = Omit<AlertDelivery, 'attempt'>;

export interface AlertStore {
  list(pipeline: string): Promise<AlertRule[]>;
  /** false when a rule of that name exists already. */
  add(pipeline: string, rule: AlertRule): Promise<boolean>;
  /** false when no rule of that name exists. */
  update(pipeline: string, name: string, rule: AlertRule): Promise<boolean>;
  remove(pipeline: string, name: string): Promise<boolean>;
  /** Removes every rule and cooldown of a pipeline (pipeline deleted). */
  removeAll(pipeline: string): Promise<void>;
  /** When the rule last fired with a confirmed delivery (ISO 8601), or undefined. */
  lastFired(pipeline: string, rule: string): Promise<string | undefined>;
  setFired(pipeline: string, rule: string, at: string): Promise<void>;
  /** Records a delivery, numbers its attempt and trims the rule's history to its newest deliveries. */
  recordDelivery(pipeline: string, rule: string, delivery: AlertDeliveryToStore): Promise<AlertDelivery>;
  /** The history of every rule of a pipeline (or of one rule), newest first, by rule name. */
  deliveries(pipeline: string, rule?: string): Promise<Map<string, AlertDelivery[]>>;
}

export interface UserStore {
  /** `scrypt$<salt>$<digest>` or undefined when the user has no stored password. */
  passwordHash(username: string): Promise<string | undefined>;
  setPasswordHash(username: string, hash: string): Promise<void>;
}

export interface ProcessedStore {
  has(pipeline: string, key: string): Promise<boolean>;
  add(pipeline: string, key: string): Promise<void>;
  /** Forgets a pipeline's processed files (pipeline deleted). */
  clear(pipeline: string): Promise<void>;
}

/** The state of a pipeline's stateful transforms, by transform instance (spec doc 2, "Transform state"). */
export interface StoredTransformState {
  pipeline: string;
  state: Record<string, unknown>;
  config_sha256: string;
}

/** One transform instance's state of one target (sharded batch runs, issue 33). */
export interface StoredTargetState {
  transform_key: string;
  target: string;
  state: unknown;
  config_sha256: string;
}

export interface TransformStateStore {
  get(pipeline: string): Promise<StoredTransformState | null>;
  put(pipeline: string, state: Record<string, unknown>, configSha256: string): Promise<void>;
  /** Sharded runs: the state of these targets, or of all of the pipeline's without `targets` (absent in stores without sharded runs). */
  ofTargets?(pipeline: string, targets?: readonly string[]): Promise<StoredTargetState[]>;
  /** Sharded runs: replaces the state of these targets with `parts` (transform key -> target -> state). */
  putTargets?(pipeline: string, targets: readonly string[], parts: ReadonlyMap<string, ReadonlyMap<string, unknown>>, configSha256: string): Promise<void>;
  /** Purges a pipeline's state (pipeline deleted). */
  clear(pipeline: string): Promise<void>;
}

/** Dead letters a replay delivered (docs/dead-letters.md). */
export interface DlqReplayed {
  envelope_id: string;
  replayed_at: string;
  run_id: string;
}

export interface DlqReplayStore {
  /** The replay marks of these envelopes of a pipeline, by envelope id. */
  marks(pipeline: string, ids: string[]): Promise<Map<string, DlqReplayed>>;
  /** Marks one envelope replayed by `runId`; a second mark replaces the first (a forced replay). */
  mark(pipeline: string, id: string, runId: string): Promise<void>;
  /** Forgets a pipeline's marks (pipeline deleted). */
  clear(pipeline: string): Promise<void>;
}

/** running: dispatched, waiting for its outcome; lost: its worker died and its targets went to other shards; missed: its worker died with no time left. */
export type ShardStatus = 'running' | 'success' | 'failed' | 'aborted' | 'lost' | 'missed';

export interface RunShard {
  run_id: string;
  shard_index: number;
  pipeline: string;
  worker_id: string;
  /** The lease epoch of the manager that dispatched it. */
  epoch: number;
  status: ShardStatus;
  targets: string[];
  records_in: number;
  records_out: number;
  /** Messages in the shard's run record (failed targets, each one line). */
  errors: number;
  duration_ms: number | null;
  /** Targets of this shard polled by nobody in its cycle (a `missed` shard). */
  missed: string[];
  error: string | null;
  started_at: string;
  finished_at: string | null;
}

/** What ends a shard. */
export interface ShardOutcome {
  status: Exclude<ShardStatus, 'running'>;
  records_in?: number;
  records_out?: number;
  errors?: number;
  duration_ms?: number;
  missed?: string[];
  error?: string | null;
  finished_at: string;
}

/** The shards of sharded batch runs (issue 33); read by the API. */
export interface RunShardStore {
  ofRun(runId: string): Promise<RunShard[]>;
}

export interface Store {
  engine: DbEngine;
  /** File path of the embedded database (sqlite), else null. */
  path: string | null;
  pipelines: PipelineStore;
  runs: RunStore;
  alerts: AlertStore;
  users: UserStore;
  processed: ProcessedStore;
  transformState: TransformStateStore;
  dlqReplayed: DlqReplayStore;
  /** Absent in stores without sharded runs (test doubles). */
  runShards?: RunShardStore;
  /** A cheap query: resolves when the database answers (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
