// The manager's executor: a run goes to the least-loaded healthy worker (POST /agent/run, keyed by
// run_id) and ends when the worker's run-complete arrives (POST /api/internal/run-complete).
// Progress comes from its pipeline-stats reports. A run whose worker goes down is recorded failed;
// a run-complete for a run already recorded (a replay, or one that arrives after that) is stored
// nowhere and evaluates no alert: the outcome of a run is stored once.
import type { RunRecord } from '../engine/run-record.js';
import { errorMessage } from '../core/errors.js';
import type { Executor, RunJob } from '../pipelines/executor.js';
import type { Logger } from '../observability/log.js';
import { detailOf, internalCall, type CallOptions } from './internal-http.js';
import type { ClusterMetrics } from './metrics.js';
import type { StreamPlacements } from './placements.js';
import type { ShardedRuns } from './shards.js';
import { runRecordOf, type RunComplete, type StatsReport } from './protocol.js';

export interface WorkerChoice {
  id: string;
  url: string;
}

/** What the executor needs of the worker pool. */
export interface Workers {
  /** The least-loaded healthy worker not in `exclude`, round-robin among ties. */
  pick(exclude?: ReadonlySet<string>): WorkerChoice | undefined;
  noteDispatched(id: string): void;
  /** A known worker by id (healthy or not), for a run adopted where it runs. */
  find(id: string): WorkerChoice | undefined;
}

interface Pending {
  job: RunJob;
  worker: WorkerChoice;
  startedAt: string;
  resolve(r: RunRecord): void;
}

/** Run ids whose outcome this manager took already; bounded, oldest forgotten first. */
const REMEMBERED = 10_000;
/** How many workers one run is offered to before it fails (a worker may be draining). */
const MAX_TRIES = 3;

export class RemoteExecutor implements Executor {
  private readonly pending = new Map<string, Pending>();
  private readonly done = new Set<string>();

  constructor(
    private readonly deps: {
      workers: Workers;
      metrics: ClusterMetrics;
      log: Logger;
      call: () => CallOptions;
      /** The node id of records of runs that never reached a worker. */
      nodeId: string;
      /** The stored record of a run when it is finished (an adopted run may end before it is followed). */
      finished(runId: string): Promise<RunRecord | undefined>;
      /** Streams run as placement groups of slots (src/cluster/placements.ts). */
      placements?: StreamPlacements;
      /** Batch runs cut into shards over the workers (src/cluster/shards.ts). */
      shards?: ShardedRuns;
    },
  ) {}

  async execute(job: RunJob): Promise<RunRecord> {
    if (this.deps.placements?.applies(job)) return this.deps.placements.execute(job);
    if (this.deps.shards?.applies(job)) return this.deps.shards.execute(job);
    const startedAt = new Date().toISOString();
    const adopted = job.adoptFrom ? this.deps.workers.find(job.adoptFrom) : undefined;
    if (adopted) {
      job.log.info({ worker: adopted.id }, 'run adopted where it runs (placed before this manager started)');
      const completion = new Promise<RunRecord>((resolve) => this.pending.set(job.runId, { job, worker: adopted, startedAt, resolve }));
      await job.started(adopted.id);
      // Its run-complete may have come (and been stored) between the worker's status and now.
      const early = await this.deps.finished(job.runId);
      const waiting = this.pending.get(job.runId);
      if (early && waiting) {
        this.pending.delete(job.runId);
        this.remember(job.runId);
        waiting.resolve(early);
      }
      return this.follow(job, adopted, completion);
    }
    const tried = new Set<string>();
    const failures: string[] = [];
    for (let i = 0; i < MAX_TRIES; i++) {
      const worker = this.deps.workers.pick(tried);
      if (!worker) break;
      tried.add(worker.id);
      // Counted before the call: a run picked while this one is in flight sees the load.
      this.deps.workers.noteDispatched(worker.id);
      const completion = new Promise<RunRecord>((resolve) => this.pending.set(job.runId, { job, worker, startedAt, resolve }));
      let accepted: { worker_id?: string } | undefined;
      try {
        const r = await internalCall('POST', `${worker.url}/agent/run`, { run_id: job.runId, yaml: job.yaml, flush: job.flush ?? false }, this.deps.call());
        if (r.status >= 200 && r.status < 300) accepted = r.body ?? {};
        else failures.push(`${worker.id}: ${detailOf(r)}`);
      } catch (e) {
        failures.push(`${worker.id}: ${errorMessage(e)}`);
      }
      if (!accepted) {
        this.pending.delete(job.runId);
        this.deps.metrics.dispatch.inc({ result: 'dispatch_failed' });
        continue;
      }
      this.deps.metrics.dispatch.inc({ result: 'accepted' });
      await job.started(accepted.worker_id ?? worker.id);
      return this.follow(job, worker, completion);
    }
    if (tried.size === 0) this.deps.metrics.dispatch.inc({ result: 'no_workers' });
    const why =
      tried.size === 0
        ? 'no healthy worker to run it (GET /api/cluster/nodes shows the workers and their health)'
        : `no worker took it: ${failures.join('; ')}`;
    this.remember(job.runId);
    return this.failed(job, startedAt, this.deps.nodeId, why);
  }

  /** Waits for the run's outcome; a stop asked for meanwhile is passed on to its worker. */
  private async follow(job: RunJob, worker: WorkerChoice, completion: Promise<RunRecord>): Promise<RunRecord> {
    const onAbort = () => {
      Promise.resolve()
        .then(() => internalCall('POST', `${worker.url}/agent/stop`, { run_id: job.runId }, this.deps.call()))
        .catch((e: unknown) => job.log.warn({ worker: worker.id, err: errorMessage(e) }, 'could not tell the worker to stop the run'));
    };
    if (job.signal.aborted) onAbort();
    else job.signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await completion;
    } finally {
      job.signal.removeEventListener('abort', onAbort);
    }
  }

  /** POST /api/internal/run-complete: 'resolved' (a waiting run ended), 'duplicate', or 'unknown' (the caller stores it once). */
  complete(body: RunComplete): 'resolved' | 'duplicate' | 'unknown' {
    this.deps.metrics.runCompleteReceived.inc();
    const slotRun = this.deps.placements?.complete(body);
    if (slotRun) return slotRun;
    if (this.done.has(body.run_id)) return 'duplicate';
    const p = this.pending.get(body.run_id);
    this.remember(body.run_id);
    if (!p) return 'unknown';
    this.pending.delete(body.run_id);
    p.resolve({ ...runRecordOf(body), node_id: body.node_id || p.worker.id });
    return 'resolved';
  }

  /** POST /api/internal/run-complete of a shard (body.shard): its outcome, stored once. */
  async completeShard(body: RunComplete): Promise<'resolved' | 'duplicate'> {
    this.deps.metrics.runCompleteReceived.inc();
    if (!this.deps.shards) return 'duplicate';
    return this.deps.shards.complete(body);
  }

  /** POST /api/internal/pipeline-stats: false when no run of this manager waits for it (superseded). */
  stats(body: StatsReport): boolean {
    this.deps.metrics.pipelineStatsReceived.inc();
    if (body.shard) return this.deps.shards?.stats(body) ?? true;
    const slotRun = this.deps.placements?.stats(body);
    if (slotRun !== undefined) return slotRun;
    const p = this.pending.get(body.run_id);
    if (!p) return this.done.has(body.run_id); // the final report of a run already recorded is fine
    p.job.onProgress?.({ ...body, records_filtered: body.records_filtered ?? 0, units: 0 });
    return true;
  }

  /** Runs waiting on this worker end as failed: it stopped answering its health checks. */
  workerDown(id: string, reason: string) {
    this.deps.placements?.workerDown(id);
    this.deps.shards?.workerDown(id);
    for (const [runId, p] of this.pending) {
      if (p.worker.id !== id) continue;
      this.pending.delete(runId);
      this.remember(runId);
      p.job.log.error({ worker: id, reason }, 'worker went down during the run; recorded as failed');
      p.resolve(
        this.failed(p.job, p.startedAt, id, `worker ${id} went down during the run (${reason}); its outcome is unknown and a late run-complete is ignored`),
      );
    }
  }

  /** The workers holding runs of the pipeline: its placement's slots, or the worker of a plain run (a relayed tap). */
  holders(pipeline: string): WorkerChoice[] {
    const out = [...(this.deps.placements?.holders(pipeline) ?? []), ...(this.deps.shards?.holders(pipeline) ?? [])];
    for (const p of this.pending.values()) if (p.job.name === pipeline && !out.some((w) => w.id === p.worker.id)) out.push(p.worker);
    return out;
  }

  /** Runs waiting for their outcome, by worker id (GET /api/cluster/nodes). */
  assigned(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const p of this.pending.values()) out.set(p.worker.id, [...(out.get(p.worker.id) ?? []), p.job.name]);
    for (const [id, names] of this.deps.placements?.assigned() ?? []) out.set(id, [...(out.get(id) ?? []), ...names]);
    for (const [id, names] of this.deps.shards?.assigned() ?? []) out.set(id, [...(out.get(id) ?? []), ...names]);
    return out;
  }

  private remember(runId: string) {
    this.done.add(runId);
    if (this.done.size > REMEMBERED) this.done.delete(this.done.values().next().value!);
  }

  private failed(job: RunJob, startedAt: string, nodeId: string, error: string): RunRecord {
    return {
      run_id: job.runId,
      pipeline: job.name,
      node_id: nodeId,
      status: 'failed',
      started_at: startedAt,
      finished_at: new Date().toISOString(),
      records_in: 0,
      records_out: 0,
      records_filtered: 0,
      records_skipped: 0,
      bytes_in: 0,
      bytes_out: 0,
      dlq_count: 0,
      error,
      errors: [],
    };
  }
}
