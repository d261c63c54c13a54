// Where a run executes. The pipeline manager owns one lifecycle (schedules, states, run records,
// metrics, alerts) and hands each run to an Executor: the LocalExecutor runs it in this process
// (standalone, and what a worker's agent runs); the manager mode's RemoteExecutor
// (src/cluster/remote-executor.ts) dispatches it to a worker and waits for its run-complete.
import type { PipelineConfig } from '../config/pipeline-schema.js';
import type { DecodeWatchOptions } from '../engine/decode-watch.js';
import type { CircuitBreaker } from '../engine/reliability.js';
import type { RunRecord } from '../engine/run-record.js';
import { runPipeline, type RunOptions, type RunProgress, type TransformStateIO } from '../engine/runner.js';
import type { WebhookHub } from '../plugins/connector-runtime/webhook-hub.js';
import type { Logger } from '../observability/log.js';
import type { ProcessedFiles } from '../plugins/types.js';

export interface RunJob {
  /** Manager mode: the run runs already on this worker (found after a manager restart); follow it there. */
  adoptFrom?: string;
  name: string;
  yaml: string;
  config: PipelineConfig;
  runId: string;
  /** Graceful stop: the run drains and ends. */
  signal: AbortSignal;
  flush?: boolean;
  log: Logger;
  /** Pipeline-level reliability state that outlives runs (local runs only). */
  breakers?: Map<string, CircuitBreaker>;
  /**
   * Called once the run is placed, with the node that runs it, before it produces anything; the
   * manager records the run as started here. A run that could not be placed never calls it.
   */
  started(nodeId: string): Promise<void>;
  onProgress?(p: RunProgress): void;
  onQueueDepth?: RunOptions['onQueueDepth'];
  onChunkDelivered?: RunOptions['onChunkDelivered'];
  onTransformEvent?: RunOptions['onTransformEvent'];
  telemetry?: RunOptions['telemetry'];
  /** The pipeline's taps (src/engine/tap.ts); local runs only (a manager relays its workers' taps). */
  tap?: RunOptions['tap'];
  /** A shard of a sharded batch run (a worker's part of it, issue 33); local runs only. */
  shard?: RunOptions['shard'];
  /** Runs the job instead of runPipeline (a DLQ replay, src/dlq/replay.ts); local runs only. */
  runner?: (config: PipelineConfig, opts: RunOptions) => Promise<RunRecord>;
}

export interface Executor {
  /** Runs the job to its end; resolves with its record (a run that could not be placed is a `failed` record). */
  execute(job: RunJob): Promise<RunRecord>;
}

export interface LocalExecutorDeps {
  nodeId: string;
  webhooks: WebhookHub;
  /** Durable state of running pipelines (webhook spools). */
  stateDir?: string;
  /** The poison-input watch (src/engine/decode-watch.ts). */
  decodeWatch?: DecodeWatchOptions;
  /** The MIBs of SNMP connectors (a worker: those synced from its manager first); default: the runner's. */
  mibs?: RunOptions['mibs'];
  processed(pipeline: string): ProcessedFiles;
  /** Transform state of the pipeline (of the shard's targets, for a shard), or undefined when it has no stateful transform. */
  state(config: PipelineConfig, log: Logger, runId: string, shard?: RunJob['shard']): TransformStateIO | undefined;
}

/** Runs in this process. */
export class LocalExecutor implements Executor {
  constructor(private readonly deps: LocalExecutorDeps) {}

  async execute(job: RunJob): Promise<RunRecord> {
    await job.started(this.deps.nodeId);
    return (job.runner ?? runPipeline)(job.config, {
      runId: job.runId,
      nodeId: this.deps.nodeId,
      log: job.log,
      signal: job.signal,
      processed: this.deps.processed(job.name),
      breakers: job.breakers,
      services: { webhooks: this.deps.webhooks, stateDir: this.deps.stateDir },
      decodeWatch: this.deps.decodeWatch,
      mibs: this.deps.mibs,
      flush: job.flush,
      state: this.deps.state(job.config, job.log, job.runId, job.shard),
      onTransformEvent: job.onTransformEvent,
      telemetry: job.telemetry,
      onProgress: job.onProgress,
      onQueueDepth: job.onQueueDepth,
      onChunkDelivered: job.onChunkDelivered,
      tap: job.tap,
      shard: job.shard,
    });
  }
}
