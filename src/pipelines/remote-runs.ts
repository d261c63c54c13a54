// The pipeline manager's remote and queued runs (manager mode): a manual run waits in the durable
// queue when no worker can take it, and is dispatched, or fails when its wait expires; the outcome
// of a run no process of this manager waits for (it restarted) is stored once; runs workers already
// have are adopted where they run.
import { randomUUID } from 'node:crypto';
import { emptyRunRecord, type RunRecord } from '../engine/run-record.js';
import { errorMessage } from '../core/errors.js';
import { ManagerError } from './manager-error.js';
import type { PipelineRegistry } from './registry.js';
import type { RunSupervisor } from './supervisor.js';
import type { ManagerDeps } from './types.js';

export class RemoteRuns {
  constructor(
    private readonly deps: ManagerDeps,
    private readonly registry: PipelineRegistry,
    private readonly supervisor: RunSupervisor,
  ) {}

  /**
   * A manual run of `name` when no worker can take it now: queued (its id and expiry) or, with
   * SVC_QUEUE_MANUAL_RUNS=0, refused (503). Undefined when it can run now (or not in manager mode).
   */
  async admit(name: string): Promise<{ run_id: string; expires_at: string } | undefined> {
    const admission = this.deps.admission;
    if (!admission || admission.hasCapacity()) return undefined;
    if (!admission.queueing)
      throw new ManagerError(
        503,
        `no healthy worker can take the run (SVC_QUEUE_MANUAL_RUNS=0 refuses instead of queueing); GET /api/cluster/nodes shows the workers`,
      );
    const runId = randomUUID();
    // The flag is not carried through the queue (doc 2): a queued flush run runs as a normal run.
    const { expires_at } = await admission.enqueue(name, runId, false);
    this.markQueued(name, runId);
    return { run_id: runId, expires_at };
  }

  /** A run of `name` waits in the queue (at enqueue, and for the queue a restarted manager finds). */
  markQueued(name: string, runId: string) {
    const p = this.registry.find(name);
    if (!p || p.active) return;
    p.queued = runId;
    p.status = 'queued';
  }

  /**
   * Dispatches a queued run under its queued id. True when it is settled (placed on a worker, in
   * the run history already, or its pipeline is gone): the queue drops it; false keeps it queued.
   */
  async launchQueued(name: string, runId: string): Promise<boolean> {
    const p = this.registry.find(name);
    if (!p) return true;
    if (await this.deps.store.runs.get(runId)) {
      if (p.queued === runId) p.queued = undefined;
      return true; // placed before a crash: never a second time
    }
    if (p.active || this.supervisor.closing) return false;
    if (p.queued === runId) p.queued = undefined;
    return this.supervisor.launch(p, { runId }).placed;
  }

  /** The record of a run that never ran (a queued run that expired, a claimed tick that was not dispatched). */
  unrun(name: string, runId: string, status: 'failed' | 'aborted', error: string, startedAt = new Date(), finishedAt = new Date()): RunRecord {
    return emptyRunRecord({
      run_id: runId,
      pipeline: name,
      node_id: this.deps.settings.NODE_ID,
      status,
      started_at: startedAt.toISOString(),
      finished_at: finishedAt.toISOString(),
      error,
    });
  }

  /** A queued run whose wait expired: one failed run, and the pipeline goes to error. */
  async expireQueued(name: string, runId: string, enqueuedAt: string, now: Date, ttlSeconds: number): Promise<void> {
    const error = `queued run expired: no healthy worker took it within ${ttlSeconds} s (SVC_QUEUE_TTL_SECONDS)`;
    await this.recordRemoteOutcome(this.unrun(name, runId, 'failed', error, new Date(enqueuedAt), now));
    const p = this.registry.find(name);
    if (p && p.queued === runId) {
      p.queued = undefined;
      if (!p.active) {
        p.status = 'error';
        p.error = error;
      }
    }
  }

  /**
   * The outcome of a run on a worker that no run of this process waits for (the manager restarted
   * since it was dispatched): stored unless stored already, and only then are the alert rules
   * evaluated. True when this call stored it.
   */
  async recordRemoteOutcome(run: RunRecord): Promise<boolean> {
    const stored = await this.deps.store.runs.finishOnce(run);
    if (!stored) return false;
    const p = this.registry.find(run.pipeline);
    if (p) p.lastRun = { at: run.finished_at, status: run.status };
    if (p && p.config.schedule.type !== 'stream' && this.deps.alerts) {
      await this.deps.alerts
        .evaluate(run.pipeline, run)
        .catch((e: unknown) => this.deps.log.warn({ pipeline: run.pipeline, err: errorMessage(e) }, 'alert evaluation failed'));
    }
    return true;
  }

  /** Adopts what workers run of pipelines that are not running here (batch runs; streams are adopted as they start). */
  adoptRunning() {
    for (const p of this.registry.values()) {
      if (!p.active && !p.halted && this.deps.adoption) {
        const found = this.deps.adoption.take(p.name, p.yaml);
        if (found) this.supervisor.launch(p, { adopt: found });
      }
    }
  }
}
