// Registered pipelines and their lifecycle (spec doc 2 section 3): register, update, delete,
// start, stop (draining), run now, rollback; schedules fire runs, streams are supervised and
// restarted with backoff. Every run is recorded in the store before it starts and when it ends.
// PipelineManager is the one face of four parts: the registry and its versions (registry.ts),
// scheduling (scheduler.ts), run supervision (supervisor.ts), and remote and queued runs
// (remote-runs.ts).
import type { PipelineConfig } from '../config/pipeline-schema.js';
import type { RunRecord } from '../engine/run-record.js';
import type { RunJob } from './executor.js';
import { ManagerError } from './manager-error.js';
import { PipelineRegistry } from './registry.js';
import { RemoteRuns } from './remote-runs.js';
import { Scheduler } from './scheduler.js';
import { RunSupervisor } from './supervisor.js';
import type { Managed, ManagerDeps } from './types.js';
import type { LiveRun } from './live.js';
import type { TapHub } from '../engine/tap.js';

export { ManagerError } from './manager-error.js';
export { fireRunId } from './scheduler.js';
export { restartDelayMs } from './supervisor.js';
export { pipelineLive, statsWithLive, withLive, type LiveFigures } from './live.js';
export type { AlertHook, Managed, ManagerDeps, PipelineStatus, RunAdmission } from './types.js';

export class PipelineManager {
  private readonly registry: PipelineRegistry;
  private readonly scheduler: Scheduler;
  private readonly supervisor: RunSupervisor;
  private readonly remote: RemoteRuns;

  constructor(private readonly deps: ManagerDeps) {
    this.registry = new PipelineRegistry(deps, { arm: (p) => this.scheduler.schedule(p), halt: (p) => this.supervisor.halt(p) });
    this.supervisor = new RunSupervisor(deps, { isCurrent: (p) => this.registry.isCurrent(p), disarm: (p) => this.scheduler.disarm(p) });
    this.scheduler = new Scheduler(deps, {
      pipelines: () => this.registry.values(),
      isCurrent: (p) => this.registry.isCurrent(p),
      closing: () => this.supervisor.closing,
      launch: (p, opts) => this.supervisor.launch(p, opts),
      abandon: (pipeline, runId, error) => void this.remote.recordRemoteOutcome(this.remote.unrun(pipeline, runId, 'aborted', error)),
    });
    this.remote = new RemoteRuns(deps, this.registry, this.supervisor);
  }

  list(): Managed[] {
    return this.registry.list();
  }

  get(name: string): Managed {
    return this.registry.get(name);
  }

  has(name: string) {
    return this.registry.has(name);
  }

  /** Validates YAML; a ManagerError(400) lists every problem. */
  parse(yaml: string, file?: string): PipelineConfig {
    return this.registry.parse(yaml, file);
  }

  /** Loads what the store holds (API-registered pipelines and the last known file ones). */
  restore() {
    return this.registry.restore();
  }

  /**
   * Rescans a directory of pipeline YAML. A file wins over an API-registered pipeline of the same
   * name (the directory is the operator's source of truth); each change is a new version.
   */
  loadDirectory(dir: string): Promise<{ reloaded: number; total: number; errors: string[] }> {
    return this.registry.loadDirectory(dir);
  }

  /** Pipelines that came from `file` and whose file is gone are deregistered (SVC_WATCH_PIPELINES). */
  forgetFile(file: string) {
    return this.registry.forgetFile(file);
  }

  /** Registers YAML (validated here unless the caller already has its `config`). */
  register(yaml: string, opts: { origin: 'api' | 'file'; file?: string; replace?: boolean; config?: PipelineConfig } = { origin: 'api' }): Promise<Managed> {
    return this.registry.register(yaml, opts);
  }

  /** PUT: replaces the config of an existing pipeline (stopped, re-registered, restarted unless its desired state is stopped). */
  update(name: string, yaml: string): Promise<Managed> {
    return this.registry.update(name, yaml);
  }

  async remove(name: string): Promise<void> {
    await this.registry.remove(name);
    this.supervisor.taps.get(name)?.close(`pipeline '${name}' was deleted`);
    this.supervisor.taps.delete(name);
  }

  /** The pipeline's taps (src/engine/tap.ts): what GET /api/pipelines/{name}/tap attaches to. */
  tapHub(name: string): TapHub {
    return this.supervisor.tapHub(name);
  }

  rollback(name: string, version: number): Promise<Managed> {
    return this.registry.rollback(name, version);
  }

  /** Starts scheduling or the stream; remembered in the store (it still runs after a restart). */
  start(name: string): Promise<Managed> {
    return this.registry.desire(name, 'running');
  }

  /** Stops (draining the active run); remembered in the store: it stays stopped across restarts until start(). */
  stop(name: string): Promise<Managed> {
    return this.registry.desire(name, 'stopped');
  }

  /**
   * One immediate batch run; refused for streams and while a run is in progress. In manager mode
   * with no worker to take it, the run is queued (202 with its expiry) or, with
   * SVC_QUEUE_MANUAL_RUNS=0, refused (503).
   */
  async runNow(
    name: string,
    opts: { flush?: boolean } = {},
  ): Promise<{ name: string; status: 'triggered'; run_id: string } | { name: string; status: 'queued'; run_id: string; expires_at: string }> {
    const p = this.get(name);
    if (p.config.schedule.type === 'stream') throw new ManagerError(400, `pipeline '${name}' is a stream; use POST /api/pipelines/${name}/start`);
    if (p.active) throw new ManagerError(409, `pipeline '${name}' has a run in progress (${p.active.runId}); try again when it has finished`);
    if (p.queued) throw new ManagerError(409, `pipeline '${name}' has a run queued (${p.queued}) until a worker is healthy`);
    const queued = await this.remote.admit(name);
    if (queued) return { name, status: 'queued', ...queued };
    const run = this.supervisor.launch(p, opts);
    return { name, status: 'triggered', run_id: run.runId };
  }

  /**
   * A run of its own that replays dead letters (src/dlq/replay.ts), recorded like any run. Refused
   * while a run is in progress, for a stream that is not stopped, and in manager mode (the replay
   * source is in this process).
   */
  replay(name: string, runner: NonNullable<RunJob['runner']>): { run_id: string; done: Promise<RunRecord> } {
    const p = this.get(name);
    if (this.deps.executor) throw new ManagerError(409, `dead letters are replayed by a standalone daemon only; this one dispatches runs to workers`);
    if (p.active)
      throw new ManagerError(
        409,
        `pipeline '${name}' has a run in progress (${p.active.runId}); replay when it has finished${p.config.schedule.type === 'stream' ? ` (a stream: POST /api/pipelines/${name}/stop first)` : ''}`,
      );
    if (p.config.schedule.type === 'stream') {
      if (p.restartTimer)
        throw new ManagerError(409, `pipeline '${name}' is a stream waiting to restart; stop it (POST /api/pipelines/${name}/stop), replay, then start it`);
      p.halted = true; // not running: it stays stopped after the replay (only start() runs a stream again)
    }
    const run = this.supervisor.launch(p, { runner });
    return { run_id: run.runId, done: run.done };
  }

  /** A run of `name` waits in the queue (at enqueue, and for the queue a restarted manager finds). */
  markQueued(name: string, runId: string) {
    this.remote.markQueued(name, runId);
  }

  /**
   * Dispatches a queued run under its queued id. True when it is settled (placed on a worker, in
   * the run history already, or its pipeline is gone): the queue drops it; false keeps it queued.
   */
  launchQueued(name: string, runId: string): Promise<boolean> {
    return this.remote.launchQueued(name, runId);
  }

  /** A queued run whose wait expired: one failed run, and the pipeline goes to error. */
  expireQueued(name: string, runId: string, enqueuedAt: string, now: Date, ttlSeconds: number): Promise<void> {
    return this.remote.expireQueued(name, runId, enqueuedAt, now, ttlSeconds);
  }

  /**
   * The outcome of a run on a worker that no run of this process waits for (the manager restarted
   * since it was dispatched): stored unless stored already, and only then are the alert rules
   * evaluated. True when this call stored it.
   */
  recordRemoteOutcome(run: RunRecord): Promise<boolean> {
    return this.remote.recordRemoteOutcome(run);
  }

  /** Adopts what workers run of pipelines that are not running here (batch runs; streams are adopted as they start). */
  adoptRunning() {
    this.remote.adoptRunning();
  }

  /** Stops every pipeline, draining runs for up to `timeoutMs`. */
  async shutdown(timeoutMs: number) {
    this.supervisor.closing = true;
    await Promise.all(this.list().map((p) => this.supervisor.halt(p, timeoutMs)));
  }

  /** Next fire times for the daemon status. */
  nextRuns(): { pipeline: string; next_run: string }[] {
    return this.scheduler.nextRuns();
  }

  /** The live figures of a run in progress here (SVC_LIVE_COUNTERS), by run id. */
  liveRun(runId: string): LiveRun | undefined {
    return this.supervisor.live.get(runId);
  }

  /** The live figures of the pipeline's active run, if it has one here. */
  liveOf(p: Managed): LiveRun | undefined {
    return p.active ? this.supervisor.live.get(p.active.runId) : undefined;
  }

  /** Every run in progress here with live figures. */
  liveRuns(): LiveRun[] {
    return [...this.supervisor.live.values()];
  }

  /** The synthetic single-slot placement of a running standalone stream (spec doc 2). */
  placement(name: string) {
    return this.supervisor.placement(this.get(name));
  }
}
