// What the parts of the pipeline manager share: a registered pipeline (Managed) and what the
// manager is given (ManagerDeps).
import type { Cron } from 'croner';
import type { PipelineConfig } from '../config/pipeline-schema.js';
import type { CircuitBreaker } from '../engine/reliability.js';
import type { RunRecord } from '../engine/run-record.js';
import type { WebhookHub } from '../plugins/connector-runtime/webhook-hub.js';
import type { Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';
import type { Tracer } from '../observability/tracing.js';
import type { Settings } from '../settings.js';
import type { DesiredState, Store } from '../store/types.js';
import type { Executor } from './executor.js';
import type { LiveRun } from './live.js';

export type PipelineStatus = 'running' | 'stopped' | 'scheduled' | 'error' | 'queued';

export interface AlertHook {
  evaluate(pipeline: string, run: RunRecord): Promise<unknown>;
}

export interface ActiveRun {
  runId: string;
  stop: AbortController;
  done: Promise<RunRecord>;
  /** True once a node took the run (its start is recorded); false when it ended without one. */
  placed: Promise<boolean>;
}

/** Manager mode: whether a worker can take a run now, and the durable queue for when none can. */
export interface RunAdmission {
  hasCapacity(): boolean;
  /** SVC_QUEUE_MANUAL_RUNS: queue a manual run when no worker can take it (else refuse it). */
  queueing: boolean;
  enqueue(pipeline: string, runId: string, flush: boolean): Promise<{ expires_at: string }>;
}

export interface Managed {
  name: string;
  yaml: string;
  config: PipelineConfig;
  origin: 'api' | 'file';
  file: string | null;
  version: number;
  status: PipelineStatus;
  /** Why the status is `error`. */
  error?: string;
  /** Pipeline-level reliability state that outlives runs. */
  breakers: Map<string, CircuitBreaker>;
  timer?: NodeJS.Timeout;
  /** Next fire time of the interval timer (epoch ms), for the daemon status. */
  nextAt?: number;
  cron?: Cron;
  active?: ActiveRun;
  /** Stream supervision: consecutive failed runs and the pending restart. */
  restarts: number;
  restartTimer?: NodeJS.Timeout;
  /**
   * The state the operator wants, remembered in the store (start and stop; a new pipeline's YAML
   * `enabled`): `stopped` pipelines are not armed when installed (restart, PUT, rollback).
   */
  desired: DesiredState;
  /** Set by stop() (and halt() of any kind): nothing may start again until start(). */
  halted: boolean;
  /** Manager mode: the id of a manual run waiting in the queue for a worker. */
  queued?: string;
  /** Manager mode: a scheduled fire is being claimed in the database. */
  claiming?: boolean;
  /** Manager mode: the pipeline's own Kubernetes Service (its name, or why it could not be made). */
  service?: { name?: string; error?: string };
  /** The latest run (kept here so listing pipelines needs no query over the run history). */
  lastRun?: { at: string; status: string };
  /** Live counters of the latest run (SVC_LIVE_COUNTERS; the stream placement view, the API's live figures). */
  live?: LiveRun;
}

export interface ManagerDeps {
  store: Store;
  settings: Settings;
  log: Logger;
  metrics: Metrics;
  webhooks: WebhookHub;
  /** Durable state of running pipelines (webhook spools): SVC_STATE_DIR, else `state` beside the SQLite file. */
  stateDir?: string;
  alerts?: AlertHook;
  /** OpenTelemetry tracer: each run becomes a `pipeline.run` span (undefined: tracing off). */
  tracer?: Tracer;
  /** Where runs execute; default: in this process (standalone). */
  executor?: Executor;
  /** Manager mode: capacity and the queue of manual runs. */
  admission?: RunAdmission;
  /** Told of every installed config (register, update, rollback, restore) and removal (config undefined). */
  onConfig?(name: string, config: PipelineConfig | undefined): void;
  /**
   * Manager mode: a scheduled fire gets a run id made of the pipeline and the fire time, and runs
   * only if recording it as started inserted the row: two managers never both run one tick.
   */
  claimFires?: boolean;
  /**
   * Manager mode: runs a worker has in progress that no process of this manager placed (found at
   * start). take() hands one over when its config is the pipeline's: the run is adopted where it
   * runs instead of being started again.
   */
  adoption?: { take(pipeline: string, yaml: string): { runId: string; nodeId: string } | undefined };
}
