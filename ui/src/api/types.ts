// The shapes of the daemon API's answers (docs/spec/2-pipeline-engine-api.md) as this UI reads them.
// No DOM, and no imports but the daemon's own modules of types only (src/engine/stage-types.ts): the
// editor's pure helpers and their tests use these too.
import type { LiveStages } from '../../../src/engine/stage-types.js';

export type { LiveStages };

export type PipelineStatus = 'running' | 'stopped' | 'queued' | 'error' | 'scheduled' | string;
export type RunStatus = 'success' | 'failed' | 'aborted' | 'running';

/** What a running run adds to its record (`live`): when its counters were taken, and its rates. */
export interface LiveFigures {
  run_id: string;
  started_at: string;
  updated_at: string;
  records_in_per_sec: number;
  records_out_per_sec: number;
}

/** A pipeline's active run, live: its figures and its counters so far. */
export interface PipelineLive extends LiveFigures {
  records_in: number;
  records_out: number;
  records_skipped: number;
  dlq_count: number;
  bytes_in: number;
  bytes_out: number;
  errors: string[];
  records_filtered?: number;
  /** Figures per stage, as the engine counted them at its last delivered chunk (absent before the first one; docs/live.md). */
  stages?: LiveStages;
}

/** A component of a pipeline's config (`type` plus the plugin's own fields). */
export interface ComponentConfig {
  type: string;
  [field: string]: unknown;
}

/** The pipeline's config as written (`${VAR}`s not expanded), as much of it as the graph reads. */
export interface PipelineConfigView {
  source: ComponentConfig;
  transforms?: ComponentConfig[];
  sinks: (ComponentConfig & { condition?: string; transforms?: ComponentConfig[] })[];
  dlq?: ComponentConfig;
  on_error?: 'continue' | 'abort' | 'retry' | 'dlq';
}

/** A frame of the tap WebSocket (GET /api/pipelines/{name}/tap, docs/live.md "Tap"). */
export type TapFrame =
  | { type: 'tap'; pipeline: string; stage: string; rate: number; limit: number; filter: string | null }
  | { type: 'status'; running: boolean; worker?: string }
  | { type: 'records'; stage: string; records: unknown[] }
  | { type: 'dropped'; count: number }
  | { type: 'end'; reason: string };

export interface PipelineSummary {
  name: string;
  enabled: boolean;
  status: PipelineStatus;
  /** What start and stop remembered (it survives restarts); `enabled` is only a new pipeline's first state. */
  desired?: 'running' | 'stopped';
  schedule_type: string;
  last_run: string | null;
  last_run_status: string | null;
  /** The active run's live counters and rates (null when no run is active; absent from older daemons). */
  live?: PipelineLive | null;
}

export interface PipelineState extends PipelineSummary {
  description: string | null;
  error: string | null;
  schedule: { type: string; interval_seconds?: number; cron?: string };
  version: number;
  origin: 'api' | 'file';
  file: string | null;
  active_run_id: string | null;
  yaml: string;
  /** The parsed config (absent from older daemons). */
  config?: PipelineConfigView;
}

export interface StatsRow {
  pipeline: string;
  records_in: number;
  records_out: number;
  error_rate: number;
  avg_duration_seconds: number;
  run_count: number;
  /** Runs of the pipeline running now (their counts so far are in the totals). */
  running?: number;
  records_in_per_sec?: number;
  records_out_per_sec?: number;
}

export interface DaemonStatus {
  mode: string;
  node_id: string;
  version: string;
  next_runs: { pipeline: string; next_run: string }[];
}

export interface RunRecord {
  run_id: string;
  pipeline: string;
  node_id: string;
  status: RunStatus;
  started_at: string;
  finished_at: string | null;
  records_in: number;
  records_out: number;
  /** Records dropped on purpose (a transform gave none for them, or no sink took them); absent from a daemon before issue 29. */
  records_filtered?: number;
  records_skipped: number;
  bytes_in: number;
  bytes_out: number;
  dlq_count: number;
  error: string | null;
  errors: string[];
  /** The pipeline version the run ran (absent on runs recorded before versions were linked). */
  pipeline_version?: number | null;
  /** A running run's live figures: its counters above are live, taken at `updated_at`. */
  live?: LiveFigures;
  /** A sharded batch run (issue 33): one row per shard. */
  shards?: RunShard[];
}

export interface RunShard {
  shard_index: number;
  worker_id: string;
  epoch: number;
  /** running, success, failed, aborted; lost: its worker died and its targets went to other shards; missed: polled by nobody. */
  status: string;
  target_count: number;
  records_in: number;
  records_out: number;
  errors: number;
  duration_ms: number | null;
  missed: string[];
  error: string | null;
  started_at: string;
  finished_at: string | null;
}

/** A sharded pipeline's workers (GET /api/cluster/shards). */
export interface ShardedPipeline {
  pipeline: string;
  run_id: string | null;
  running: boolean;
  total: number;
  workers: { worker_id: string; shards: number; targets: number }[];
  error?: string;
}

/** Where targets are polled (GET /api/pipelines/{name}/shards). */
export interface ShardAssignment {
  pipeline: string;
  run_id?: string;
  running: boolean;
  total: number;
  workers: { worker_id: string; shards: number; targets: number }[];
  targets: { target: string; worker_id: string; shard: number; status: string }[];
}

export interface RunFilter {
  pipeline?: string;
  status?: string;
  from_dt?: string;
  limit?: number;
  offset?: number;
}

export interface DryRunDiagnostic {
  severity: 'error' | 'warning';
  code: string | null;
  path: string;
  message: string;
  line?: number;
  column?: number;
}

export interface DryRunResult {
  valid: boolean;
  issues: string[];
  diagnostics: DryRunDiagnostic[];
}

export interface ConnectorTest {
  ok: boolean;
  latency_ms: number | null;
  error: string | null;
  type?: string;
}

export interface PipelineVersion {
  id: number;
  name: string;
  version: number;
  created_at: string;
  is_active: 0 | 1;
}

/** JSON Schema, as much of it as the editor reads. */
export interface JsonSchema {
  type?: string | string[];
  description?: string;
  default?: unknown;
  const?: unknown;
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  minimum?: number;
  maximum?: number;
  pattern?: string;
  format?: string;
}

export interface PluginDoc {
  key: string;
  kind: 'source' | 'sink' | 'serializer' | 'transform';
  summary: string;
  status: string;
  schema: JsonSchema;
  examples: { title: string; yaml: string }[];
  mode?: string;
  direction?: string;
  accepts?: string;
  delivery?: { guarantee: string; why: string };
  stateful?: boolean;
}

export interface PluginSchemas {
  pipeline: JsonSchema;
  sink_common: JsonSchema;
  sources: Record<string, PluginDoc>;
  sinks: Record<string, PluginDoc>;
  serializers: Record<string, PluginDoc>;
  transforms: Record<string, PluginDoc>;
}

export interface ClusterNode {
  url: string;
  ok: boolean;
  active_runs: number;
  running_pipelines: string[];
  assigned_pipelines: string[];
}

export interface PlacementSlot {
  worker_index: number;
  worker_id: string;
  worker_url: string;
  current_run_id: string;
  status: string;
  restart_count: number;
}

export interface Placement {
  pipeline_name: string;
  status: string;
  started_at: string;
  slot_count: number;
  active_slots: number;
  records_in: number;
  records_out: number;
  error_count: number;
  dlq_count: number;
  records_in_per_sec: number;
  records_out_per_sec: number;
  slots: PlacementSlot[];
}

export interface AlertRule {
  name: string;
  condition: string;
  action: 'webhook' | 'email';
  webhook_url?: string | null;
  email_to?: string | null;
  subject?: string | null;
  cooldown_seconds: number;
  /** When the rule last fired with a confirmed delivery (absent or null: never). */
  last_fired?: string | null;
  /** From the delivery history (GET only): `never` delivered or tried, the last one `delivered`, or `failing`. */
  delivery_status?: 'never' | 'delivered' | 'failing';
  /** When the last delivery ended, confirmed or failed (null: never). */
  last_attempt?: string | null;
  /** The error of the last delivery when it failed, else null. */
  last_delivery_error?: string | null;
  /** Failed deliveries in a row since the last confirmed one. */
  consecutive_failures?: number;
  /** The rule's last deliveries, newest first. */
  last_deliveries?: AlertDelivery[];
}

/** One delivery of an alert rule (docs/alerts.md, "Delivery history"). */
export interface AlertDelivery {
  at: string;
  run_id: string | null;
  channel: 'webhook' | 'email';
  target: string;
  outcome: 'delivered' | 'failed';
  detail: string | null;
  error: string | null;
  /** 1 after a confirmed delivery, then 2, 3, ... while they keep failing. */
  attempt: number;
}
