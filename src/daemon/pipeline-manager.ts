// Registered pipelines and their lifecycle (spec doc 2 section 3): register, update, delete,
// start, stop (draining), run now, rollback; schedules fire runs, streams are supervised and
// restarted with backoff. Every run is recorded in the store before it starts and when it ends.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Cron } from 'croner';
import { loadPipelineText } from '../config/load.js';
import { HttpError } from '../core/http-errors.js';
import { formatDiagnostic } from '../config/diagnostics.js';
import type { PipelineConfig } from '../config/pipeline-schema.js';
import type { RunProgress } from '../engine/runner.js';
import { LocalExecutor, type Executor, type RunJob } from './executor.js';
import { forgetPipelineFiles } from './forget-pipeline.js';
import { stateConfigHash, statefulTransforms, storeStateIO } from '../engine/transform-state.js';
import { decodeWatchOptions } from '../engine/decode-watch.js';
import type { CircuitBreaker } from '../engine/reliability.js';
import type { RunRecord } from '../engine/run-record.js';
import type { WebhookHub } from '../engine/webhook-hub.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';
import { startRunSpan, type Tracer } from '../observability/tracing.js';
import type { Settings } from '../settings.js';
import { DbProcessedFiles, isDatabaseUnavailable, PipelineConflictError } from '../store/index.js';
import { KeyedMutex } from '../store/util.js';
import type { RunToStore, Store, StoredPipeline } from '../store/types.js';
import { createHash, randomUUID } from 'node:crypto';

export type PipelineStatus = 'running' | 'stopped' | 'scheduled' | 'error' | 'queued';

/** Thrown for requests the manager refuses: its `status` picks the HTTP error catalog's code (core/http-errors.ts). */
export class ManagerError extends HttpError {
  constructor(readonly status: 400 | 404 | 409 | 422 | 503, message: string) {
    super(({ 400: 'HTTP_PIPELINE_INVALID', 404: 'HTTP_PIPELINE_NOT_FOUND', 409: 'HTTP_PIPELINE_CONFLICT', 422: 'HTTP_INVALID', 503: 'HTTP_NO_WORKER' } as const)[status], message);
  }
}

export interface AlertHook {
  evaluate(pipeline: string, run: RunRecord): Promise<unknown>;
}

interface ActiveRun {
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
  /** Set by stop(): nothing may start again until start(). */
  halted: boolean;
  /** Manager mode: the id of a manual run waiting in the queue for a worker. */
  queued?: string;
  /** Manager mode: a scheduled fire is being claimed in the database. */
  claiming?: boolean;
  /** Manager mode: the pipeline's own Kubernetes Service (its name, or why it could not be made). */
  service?: { name?: string; error?: string };
  /** The latest run (kept here so listing pipelines needs no query over the run history). */
  lastRun?: { at: string; status: string };
  /** Live counters of the active run (stream placement view). */
  live?: { startedAt: number; at: number; progress: RunProgress };
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

/** The run id of a scheduled fire: the same for every manager that fires this pipeline at this time. */
export function fireRunId(pipeline: string, at: Date): string {
  const h = createHash('sha256').update(`${pipeline}\n${at.toISOString()}`).digest('hex');
  // UUID-shaped (version nibble 8: custom), like the other run ids.
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** Stream restart backoff: 1 s doubling to 60 s. */
export const restartDelayMs = (attempt: number) => Math.min(60_000, 1000 * 2 ** Math.max(0, attempt - 1));

export class PipelineManager {
  private readonly pipelines = new Map<string, Managed>();
  /**
   * Writes of one name (register, update, remove, rollback) take turns: each commits its database
   * transaction, then changes the registry, before the next starts, so the registry follows the
   * commits in their order. Across processes (two managers on one database) the transaction's row
   * lock is the authority (SqlPipelineStore).
   */
  private readonly writes = new KeyedMutex();
  /** Stored pipelines restore() skipped as invalid: a POST of the name replaces the row (it is not a duplicate). */
  private readonly unloadable = new Set<string>();
  private closing = false;
  private readonly executor: Executor;

  constructor(private readonly deps: ManagerDeps) {
    const { store, settings, webhooks, stateDir } = deps;
    this.executor =
      deps.executor ??
      new LocalExecutor({
        nodeId: settings.NODE_ID,
        webhooks,
        stateDir,
        decodeWatch: stateDir ? decodeWatchOptions(stateDir, settings) : undefined,
        processed: (name) => new DbProcessedFiles(store.processed, name),
        state: (config, log) => (statefulTransforms(config).length ? storeStateIO(store.transformState, config.name, stateConfigHash(config), log) : undefined),
      });
  }

  list(): Managed[] {
    return [...this.pipelines.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  get(name: string): Managed {
    const p = this.pipelines.get(name);
    if (!p) throw new ManagerError(404, `pipeline '${name}' not found`);
    return p;
  }

  has(name: string) {
    return this.pipelines.has(name);
  }

  /** Validates YAML; a ManagerError(400) lists every problem. */
  parse(yaml: string, file?: string): PipelineConfig {
    const r = loadPipelineText(yaml, { file, statefulTransforms: this.deps.settings.STATEFUL_TRANSFORMS, envAllow: this.deps.settings.CONFIG_ENV_ALLOW });
    if (!r.config) {
      const errs = r.diagnostics.filter((d) => d.severity === 'error').map((d) => formatDiagnostic(d, file));
      throw new ManagerError(400, `invalid pipeline: ${errs.join('; ')}`);
    }
    return r.config;
  }

  /** Loads what the store holds (API-registered pipelines and the last known file ones). */
  async restore() {
    const latest = await this.deps.store.runs.latest();
    for (const sp of await this.deps.store.pipelines.list()) {
      try {
        const m = this.install(sp, this.parse(sp.yaml, sp.file ?? undefined));
        const last = latest.get(sp.name);
        if (last && !m.lastRun) m.lastRun = { at: last.finished_at ?? last.started_at, status: last.status };
      } catch (e) {
        this.unloadable.add(sp.name);
        this.deps.log.error({ pipeline: sp.name, err: errorMessage(e) }, 'stored pipeline no longer valid; skipped');
      }
    }
  }

  /**
   * Rescans a directory of pipeline YAML. A file wins over an API-registered pipeline of the same
   * name (the directory is the operator's source of truth); each change is a new version.
   */
  async loadDirectory(dir: string): Promise<{ reloaded: number; total: number; errors: string[] }> {
    let names: string[];
    try {
      names = (await readdir(dir)).filter((f) => /\.ya?ml$/i.test(f)).sort();
    } catch (e) {
      // No directory is a normal start (nothing to load), not an error.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { reloaded: 0, total: this.pipelines.size, errors: [] };
      return { reloaded: 0, total: this.pipelines.size, errors: [`cannot read SVC_PIPELINE_DIR ${dir}: ${errorMessage(e)}`] };
    }
    let reloaded = 0;
    const errors: string[] = [];
    for (const f of names) {
      const file = join(dir, f);
      try {
        const yaml = await readFile(file, 'utf8');
        const config = this.parse(yaml, file);
        const existing = this.pipelines.get(config.name);
        if (existing && existing.yaml === yaml && existing.origin === 'file') continue;
        await this.register(yaml, { origin: 'file', file, replace: true, config });
        reloaded++;
      } catch (e) {
        errors.push(`${f}: ${errorMessage(e)}`);
        this.deps.log.error({ file, err: errorMessage(e) }, 'pipeline file not loaded');
      }
    }
    return { reloaded, total: this.pipelines.size, errors };
  }

  /** Pipelines that came from `file` and whose file is gone are deregistered (SVC_WATCH_PIPELINES). */
  async forgetFile(file: string) {
    for (const p of this.list()) if (p.origin === 'file' && p.file === file) await this.remove(p.name);
  }

  /** Registers YAML (validated here unless the caller already has its `config`). */
  async register(yaml: string, opts: { origin: 'api' | 'file'; file?: string; replace?: boolean; config?: PipelineConfig } = { origin: 'api' }): Promise<Managed> {
    const config = opts.config ?? this.parse(yaml, opts.file);
    return this.writes.run(config.name, () => this.registerNow(yaml, config, opts, opts.replace || this.unloadable.has(config.name) ? 'upsert' : 'create'));
  }

  /** register() and update() inside the name's turn; `mode` is what the database row must allow. */
  private async registerNow(yaml: string, config: PipelineConfig, opts: { origin: 'api' | 'file'; file?: string; replace?: boolean }, mode: 'create' | 'update' | 'upsert'): Promise<Managed> {
    const name = config.name;
    const taken = () => new ManagerError(409, `pipeline '${name}' is already registered; use PUT /api/pipelines/${name} to replace it`);
    const existing = this.pipelines.get(name);
    if (existing && !opts.replace) throw taken();
    let sp: StoredPipeline;
    try {
      // Saved first: when the database is unavailable the running pipeline is left untouched.
      sp = await this.deps.store.pipelines.save({ name, yaml, origin: opts.origin, file: opts.file ?? null, mode });
    } catch (e) {
      if (!(e instanceof PipelineConflictError)) throw e;
      if (e.reason === 'exists') throw taken();
      // Deleted in the database by another manager: this registry follows it.
      if (existing) await this.unregister(existing);
      throw new ManagerError(404, `pipeline '${name}' not found (it was deleted meanwhile); register it again with POST /api/pipelines`);
    }
    if (existing) await this.halt(existing);
    return this.install(sp, config, existing);
  }

  /** PUT: replaces the config of an existing pipeline (stopped, re-registered, restarted if enabled). */
  async update(name: string, yaml: string): Promise<Managed> {
    this.get(name); // an unknown name is a 404 before its YAML is judged
    const config = this.parse(yaml);
    if (config.name !== name) throw new ManagerError(400, `the YAML names pipeline '${config.name}', not '${name}'; a pipeline cannot be renamed in place`);
    return this.writes.run(name, () => {
      // Read again in the name's turn: a write before this one may have replaced or deleted it.
      const current = this.get(name);
      return this.registerNow(yaml, config, { origin: current.origin === 'file' ? 'file' : 'api', file: current.file ?? undefined, replace: true }, 'update');
    });
  }

  remove(name: string): Promise<void> {
    return this.writes.run(name, () => this.removeNow(name));
  }

  private async removeNow(name: string) {
    // A stored pipeline restore() could not load has rows and nothing to stop.
    const p = this.unloadable.has(name) ? undefined : this.get(name);
    // The rows first: when the database is unavailable the pipeline stays as it was.
    await this.deps.store.pipelines.delete(name);
    this.unloadable.delete(name);
    if (p) await this.unregister(p);
    await this.deps.store.alerts.removeAll(name);
    await this.deps.store.processed.clear(name);
    await this.deps.store.transformState.clear(name);
    await this.deps.store.dlqReplayed.clear(name);
    await forgetPipelineFiles(this.deps.stateDir, name); // webhook spools and file-based memory (issue 17)
    this.deps.metrics.forget(name);
  }

  /** Takes a pipeline whose rows are gone out of the registry, then stops it. */
  private async unregister(p: Managed) {
    this.pipelines.delete(p.name);
    this.deps.onConfig?.(p.name, undefined);
    await this.halt(p);
  }

  rollback(name: string, version: number): Promise<Managed> {
    return this.writes.run(name, async () => {
      const p = this.get(name);
      const missing = () => new ManagerError(404, `pipeline '${name}' has no version ${version}; see GET /api/pipelines/${name}/versions`);
      const yaml = await this.deps.store.pipelines.versionYaml(name, version);
      if (yaml === undefined) throw missing();
      const config = this.parse(yaml);
      // Activated first: when the database is unavailable the running pipeline is left untouched.
      if (!(await this.deps.store.pipelines.activate(name, version))) throw missing();
      const sp = await this.deps.store.pipelines.get(name);
      if (!sp) throw missing();
      await this.halt(p);
      return this.install(sp, config, p);
    });
  }

  async start(name: string): Promise<Managed> {
    const p = this.get(name);
    p.halted = false;
    this.schedule(p);
    return p;
  }

  async stop(name: string): Promise<Managed> {
    const p = this.get(name);
    await this.halt(p);
    return p;
  }

  /**
   * One immediate batch run; refused for streams and while a run is in progress. In manager mode
   * with no worker to take it, the run is queued (202 with its expiry) or, with
   * SVC_QUEUE_MANUAL_RUNS=0, refused (503).
   */
  async runNow(name: string, opts: { flush?: boolean } = {}): Promise<{ name: string; status: 'triggered'; run_id: string } | { name: string; status: 'queued'; run_id: string; expires_at: string }> {
    const p = this.get(name);
    if (p.config.schedule.type === 'stream') throw new ManagerError(400, `pipeline '${name}' is a stream; use POST /api/pipelines/${name}/start`);
    if (p.active) throw new ManagerError(409, `pipeline '${name}' has a run in progress (${p.active.runId}); try again when it has finished`);
    if (p.queued) throw new ManagerError(409, `pipeline '${name}' has a run queued (${p.queued}) until a worker is healthy`);
    const admission = this.deps.admission;
    if (admission && !admission.hasCapacity()) {
      if (!admission.queueing) throw new ManagerError(503, `no healthy worker can take the run (SVC_QUEUE_MANUAL_RUNS=0 refuses instead of queueing); GET /api/cluster/nodes shows the workers`);
      const runId = randomUUID();
      // The flag is not carried through the queue (doc 2): a queued flush run runs as a normal run.
      const { expires_at } = await admission.enqueue(name, runId, false);
      this.markQueued(name, runId);
      return { name, status: 'queued', run_id: runId, expires_at };
    }
    const run = this.launch(p, opts);
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
    if (p.active) throw new ManagerError(409, `pipeline '${name}' has a run in progress (${p.active.runId}); replay when it has finished${p.config.schedule.type === 'stream' ? ` (a stream: POST /api/pipelines/${name}/stop first)` : ''}`);
    if (p.config.schedule.type === 'stream') {
      if (p.restartTimer) throw new ManagerError(409, `pipeline '${name}' is a stream waiting to restart; stop it (POST /api/pipelines/${name}/stop), replay, then start it`);
      p.halted = true; // not running: it stays stopped after the replay (only start() runs a stream again)
    }
    const run = this.launch(p, { runner });
    return { run_id: run.runId, done: run.done };
  }

  /** A run of `name` waits in the queue (at enqueue, and for the queue a restarted manager finds). */
  markQueued(name: string, runId: string) {
    const p = this.pipelines.get(name);
    if (!p || p.active) return;
    p.queued = runId;
    p.status = 'queued';
  }

  /**
   * Dispatches a queued run under its queued id. True when it is settled (placed on a worker, in
   * the run history already, or its pipeline is gone): the queue drops it; false keeps it queued.
   */
  async launchQueued(name: string, runId: string): Promise<boolean> {
    const p = this.pipelines.get(name);
    if (!p) return true;
    if (await this.deps.store.runs.get(runId)) {
      if (p.queued === runId) p.queued = undefined;
      return true; // placed before a crash: never a second time
    }
    if (p.active || this.closing) return false;
    if (p.queued === runId) p.queued = undefined;
    return this.launch(p, { runId }).placed;
  }

  /** The record of a run that never ran (a queued run that expired, a claimed tick that was not dispatched). */
  private unrun(name: string, runId: string, status: 'failed' | 'aborted', error: string, startedAt = new Date(), finishedAt = new Date()): RunRecord {
    return {
      run_id: runId, pipeline: name, node_id: this.deps.settings.NODE_ID, status, started_at: startedAt.toISOString(), finished_at: finishedAt.toISOString(),
      records_in: 0, records_out: 0, records_skipped: 0, bytes_in: 0, bytes_out: 0, dlq_count: 0, error, errors: [],
    };
  }

  /** A queued run whose wait expired: one failed run, and the pipeline goes to error. */
  async expireQueued(name: string, runId: string, enqueuedAt: string, now: Date, ttlSeconds: number): Promise<void> {
    const error = `queued run expired: no healthy worker took it within ${ttlSeconds} s (SVC_QUEUE_TTL_SECONDS)`;
    await this.recordRemoteOutcome(this.unrun(name, runId, 'failed', error, new Date(enqueuedAt), now));
    const p = this.pipelines.get(name);
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
    const p = this.pipelines.get(run.pipeline);
    if (p) p.lastRun = { at: run.finished_at, status: run.status };
    if (p && p.config.schedule.type !== 'stream' && this.deps.alerts) {
      await this.deps.alerts.evaluate(run.pipeline, run).catch((e: unknown) => this.deps.log.warn({ pipeline: run.pipeline, err: errorMessage(e) }, 'alert evaluation failed'));
    }
    return true;
  }

  /** Stops every pipeline, draining runs for up to `timeoutMs`. */
  async shutdown(timeoutMs: number) {
    this.closing = true;
    await Promise.all(this.list().map((p) => this.halt(p, timeoutMs)));
  }

  /** Next fire times for the daemon status. */
  nextRuns(): { pipeline: string; next_run: string }[] {
    const out: { pipeline: string; next_run: string }[] = [];
    for (const p of this.pipelines.values()) {
      const next = p.cron?.nextRun() ?? (p.timer && p.nextAt !== undefined ? new Date(p.nextAt) : undefined);
      if (next) out.push({ pipeline: p.name, next_run: next.toISOString() });
    }
    return out;
  }

  /** The synthetic single-slot placement of a running standalone stream (spec doc 2). */
  placement(name: string) {
    const p = this.get(name);
    if (p.config.schedule.type !== 'stream' || !p.active) return undefined;
    const live = p.live;
    const now = Date.now();
    const startedAt = live?.startedAt ?? now;
    const secs = Math.max(0.001, (now - startedAt) / 1000);
    const pr = live?.progress;
    const counters = {
      records_in: pr?.records_in ?? 0,
      records_out: pr?.records_out ?? 0,
      records_skipped: pr?.records_skipped ?? 0,
      dlq_count: pr?.dlq_count ?? 0,
      error_count: pr?.records_skipped ?? 0,
      bytes_in: pr?.bytes_in ?? 0,
      bytes_out: pr?.bytes_out ?? 0,
    };
    // Stale when nothing was reported for 3 x SVC_STATS_INTERVAL; a stale slot reports zero rates.
    const stale = live !== undefined && now - live.at > 3 * this.deps.settings.STATS_INTERVAL * 1000;
    const rate = (n: number) => (stale ? 0 : n / secs);
    const rates = {
      records_in_per_sec: rate(counters.records_in),
      records_out_per_sec: rate(counters.records_out),
      bytes_in_per_sec: rate(counters.bytes_in),
      bytes_out_per_sec: rate(counters.bytes_out),
    };
    return {
      pipeline_name: name,
      placement_group_id: `standalone:${name}`,
      status: 'running',
      target_count: '1',
      started_at: new Date(startedAt).toISOString(),
      slot_count: 1,
      active_slots: stale ? 0 : 1,
      ...counters,
      ...rates,
      slots: [
        {
          worker_index: 0,
          worker_id: this.deps.settings.NODE_ID,
          worker_url: `http://${this.deps.settings.HOST}:${this.deps.settings.PORT}`,
          run_id_prefix: name,
          current_run_id: p.active.runId,
          status: stale ? 'stale' : 'running',
          restart_count: p.restarts,
          stats: {
            schedule_type: 'stream',
            timestamp: new Date(live?.at ?? now).toISOString(),
            uptime_seconds: secs,
            ...counters,
            errors_last_window: [],
            stale,
            ...rates,
          },
        },
      ],
    };
  }

  private install(sp: StoredPipeline, config: PipelineConfig, previous?: Managed): Managed {
    const m: Managed = {
      name: sp.name,
      yaml: sp.yaml,
      config,
      origin: sp.origin,
      file: sp.file,
      version: sp.version,
      status: 'stopped',
      breakers: previous?.breakers ?? new Map(),
      restarts: 0,
      halted: false,
      lastRun: previous?.lastRun,
    };
    this.pipelines.set(m.name, m);
    this.unloadable.delete(m.name);
    if (previous?.service) m.service = previous.service;
    this.deps.onConfig?.(m.name, config);
    if (config.enabled && config.schedule.type !== 'manual') this.schedule(m);
    return m;
  }

  /** Arms the schedule: timers for interval/cron, a supervised run for streams. */
  private schedule(p: Managed) {
    if (this.closing) return;
    this.disarm(p);
    const { schedule } = p.config;
    switch (schedule.type) {
      case 'interval': {
        const ms = schedule.interval_seconds! * 1000;
        p.nextAt = Date.now() + ms;
        p.timer = setInterval(() => {
          const due = p.nextAt!;
          p.nextAt = Date.now() + ms;
          this.fire(p, new Date(due));
        }, ms);
        p.status = p.active ? 'running' : 'scheduled';
        break;
      }
      case 'cron':
        // protect: a fire while a run is in progress is skipped (no overlapping runs).
        p.cron = new Cron(schedule.cron!, { protect: true }, (job: Cron) => this.fire(p, job.currentRun() ?? new Date()));
        p.status = p.active ? 'running' : 'scheduled';
        break;
      case 'stream':
        if (!p.active) this.launch(p);
        break;
      case 'manual':
        p.status = p.active ? 'running' : 'scheduled';
        break;
    }
  }

  private disarm(p: Managed) {
    if (p.timer) clearInterval(p.timer);
    p.cron?.stop();
    if (p.restartTimer) clearTimeout(p.restartTimer);
    p.timer = undefined;
    p.nextAt = undefined;
    p.cron = undefined;
    p.restartTimer = undefined;
  }

  private fire(p: Managed, at: Date) {
    if (p.active || p.claiming || p.halted || this.closing) {
      if (p.active) this.deps.log.info({ pipeline: p.name, run_id: p.active.runId }, 'schedule fired during a run; skipped (no overlapping runs)');
      return;
    }
    if (!this.deps.claimFires) {
      this.launch(p);
      return;
    }
    // Second precision: managers whose timers differ by milliseconds name the same tick alike.
    const tick = new Date(Math.round(at.getTime() / 1000) * 1000);
    const runId = fireRunId(p.name, tick);
    p.claiming = true;
    this.deps.store.runs
      .start({ run_id: runId, pipeline: p.name, node_id: this.deps.settings.NODE_ID, started_at: new Date().toISOString(), pipeline_version: p.version })
      .then(
        (claimed) => {
          if (!claimed) this.deps.log.info({ pipeline: p.name, run_id: runId, tick: tick.toISOString() }, 'this tick was run already (by another manager); skipped');
          else if (this.pipelines.get(p.name) === p && !p.active && !p.halted && !this.closing) this.launch(p, { runId });
          else void this.recordRemoteOutcome(this.unrun(p.name, runId, 'aborted', 'stopped before the scheduled run was dispatched'));
        },
        (e: unknown) => this.deps.log.error({ pipeline: p.name, err: errorMessage(e) }, 'scheduled run not claimed (database unavailable); skipped'),
      )
      .finally(() => (p.claiming = false));
  }

  /** Stops the schedule and drains an active run (graceful stop, then stop waiting at the timeout). */
  private async halt(p: Managed, timeoutMs = this.deps.settings.SHUTDOWN_TIMEOUT_SECONDS * 1000) {
    p.halted = true;
    this.disarm(p);
    const active = p.active;
    if (active) {
      active.stop.abort();
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        active.done.then(() => false),
        new Promise<boolean>((r) => (timer = setTimeout(() => r(true), timeoutMs))),
      ]);
      clearTimeout(timer);
      if (timedOut) this.deps.log.warn({ pipeline: p.name, run_id: active.runId }, `run did not drain within ${timeoutMs / 1000} s; no longer waiting for it`);
    }
    p.status = 'stopped';
  }

  /** Adopts what workers run of pipelines that are not running here (batch runs; streams are adopted as they start). */
  adoptRunning() {
    for (const p of this.pipelines.values()) {
      if (!p.active && !p.halted && this.deps.adoption) {
        const found = this.deps.adoption.take(p.name, p.yaml);
        if (found) this.launch(p, { adopt: found });
      }
    }
  }

  private launch(p: Managed, opts: { flush?: boolean; runId?: string; adopt?: { runId: string; nodeId: string }; runner?: RunJob['runner'] } = {}): ActiveRun {
    const { store, log, metrics, alerts } = this.deps;
    // A run a worker already has (the manager restarted meanwhile) is followed, not started again.
    const adopt = opts.adopt ?? (opts.runId === undefined ? this.deps.adoption?.take(p.name, p.yaml) : undefined);
    const runId = adopt?.runId ?? opts.runId ?? randomUUID();
    let setPlaced!: (v: boolean) => void;
    const placed = new Promise<boolean>((r) => (setPlaced = r));
    const stop = new AbortController();
    const name = p.name;
    // The version this run runs: a save or rollback during the run makes a new one for the next run.
    const pipelineVersion = p.version;
    const span = startRunSpan(this.deps.tracer, name, runId);
    const plog = log.child({ pipeline: name, run_id: runId, ...span?.logBindings });
    p.status = 'running';
    p.live = undefined;
    // The pipeline's counters follow each run's progress reports; they never go back (a run lost
    // with its worker reports less at its end than its progress did).
    const labels = { pipeline: name };
    let last = { records_in: 0, records_out: 0, records_skipped: 0, dlq_count: 0 };
    const countUpTo = (now: typeof last, failedRun = 0) => {
      const more = (c: typeof metrics.recordsIn, n: number) => n > 0 && c.inc(labels, n);
      more(metrics.recordsIn, now.records_in - last.records_in);
      more(metrics.recordsOut, now.records_out - last.records_out);
      more(metrics.recordsSkipped, now.records_skipped - last.records_skipped);
      more(metrics.errors, Math.max(0, now.records_skipped - last.records_skipped) + failedRun);
      more(metrics.dlq, now.dlq_count - last.dlq_count);
      last = {
        records_in: Math.max(last.records_in, now.records_in),
        records_out: Math.max(last.records_out, now.records_out),
        records_skipped: Math.max(last.records_skipped, now.records_skipped),
        dlq_count: Math.max(last.dlq_count, now.dlq_count),
      };
    };
    const done = (async (): Promise<RunRecord> => {
      const record = await this.executor.execute({
        adoptFrom: adopt?.nodeId,
        name,
        yaml: p.yaml,
        config: p.config,
        runId,
        signal: stop.signal,
        flush: opts.flush,
        runner: opts.runner,
        log: plog,
        breakers: p.breakers,
        started: async (nodeId) => {
          const startedAt = new Date().toISOString();
          await store.runs.start({ run_id: runId, pipeline: name, node_id: nodeId, started_at: startedAt, pipeline_version: pipelineVersion });
          p.lastRun = { at: startedAt, status: 'running' };
          plog.info({ node_id: nodeId }, 'run started');
          setPlaced(true);
        },
        onTransformEvent: (e, n) => metrics.transformEvents[e].inc({ pipeline: name }, n),
        telemetry: metrics.telemetry(name),
        onProgress: (pr) => {
          p.live = { startedAt: p.live?.startedAt ?? Date.now(), at: Date.now(), progress: pr };
          countUpTo(pr);
        },
        onQueueDepth: (d) => metrics.streamQueueDepth.set({ pipeline: name }, d),
        onChunkDelivered: (s) => metrics.chunkDuration.observe({ pipeline: name }, s),
      });
      // What the last progress report did not include (end-of-run notes, failures).
      countUpTo(record, record.status === 'failed' ? 1 : 0);
      await store.runs.finish({ ...record, pipeline_version: pipelineVersion }).catch((e: unknown) => {
        if (!isDatabaseUnavailable(e)) throw e;
        // The run is over; only writing its outcome waits for the database to come back.
        plog.warn({ err: errorMessage(e) }, 'database unavailable: the run outcome is written when it is back');
        this.finishLater({ ...record, pipeline_version: pipelineVersion }, plog);
      });
      p.lastRun = { at: record.finished_at, status: record.status };
      plog.info({ status: record.status, records_in: record.records_in, records_out: record.records_out }, 'run finished');
      return record;
    })();
    const active: ActiveRun = { runId, stop, done, placed };
    done.then(() => setPlaced(false), () => setPlaced(false));
    p.active = active;
    done
      .then(
        async (record) => {
          span?.end(record);
          if (p.active === active) p.active = undefined;
          this.afterRun(p, record);
          if (p.config.schedule.type !== 'stream' && alerts) {
            await alerts.evaluate(name, record).catch((e: unknown) => plog.warn({ err: errorMessage(e) }, 'alert evaluation failed'));
          }
        },
        (e: unknown) => {
          // The store itself failed (database gone): the run cannot be recorded; say so loudly.
          span?.fail(e);
          if (p.active === active) p.active = undefined;
          plog.error({ err: errorMessage(e) }, 'run could not be recorded');
          this.afterRun(p, undefined, `the run could not be recorded in the database: ${errorMessage(e)}`);
        },
      )
      .catch(() => {});
    return active;
  }

  /** Retries writing a finished run's outcome every 2 s while the database is unavailable (until shutdown). */
  private finishLater(record: RunToStore, plog: Logger) {
    const retry = setTimeout(() => {
      if (this.closing) return; // left `running` in the store: the next start records it as aborted
      this.deps.store.runs.finish(record).then(
        () => plog.info({ status: record.status }, 'run outcome written after the database came back'),
        (e: unknown) => (isDatabaseUnavailable(e) ? this.finishLater(record, plog) : plog.error({ err: errorMessage(e) }, 'run outcome could not be written')),
      );
    }, 2000);
    retry.unref();
  }

  /** State machine after a run: success -> scheduled (or stopped), failure -> error; streams restart. */
  private afterRun(p: Managed, record: RunRecord | undefined, storeError?: string) {
    if (this.pipelines.get(p.name) !== p) return; // replaced or deleted meanwhile
    const failed = !record || record.status === 'failed';
    const stream = p.config.schedule.type === 'stream';
    if (p.halted || this.closing) {
      p.status = 'stopped';
      return;
    }
    if (failed) {
      p.status = 'error';
      p.error = storeError ?? record?.error ?? 'run failed';
    } else {
      p.error = undefined;
      p.restarts = 0;
      p.status = stream ? 'stopped' : p.timer || p.cron ? 'scheduled' : 'stopped';
    }
    if (stream && record?.gave_up) {
      // The source exhausted its reconnect attempts (max_reconnect_attempts): no restart until started again.
      this.deps.log.error({ pipeline: p.name, err: p.error }, 'stream gave up reconnecting; not restarted (start it again when the peer is back)');
      return;
    }
    if (stream) {
      // Supervised: a stream that ended (crashed or its source closed) is restarted with backoff.
      p.restarts++;
      const delay = restartDelayMs(p.restarts);
      this.deps.log.warn({ pipeline: p.name, attempt: p.restarts, delay_ms: delay }, 'stream ended; restarting');
      p.restartTimer = setTimeout(() => {
        p.restartTimer = undefined;
        if (!p.halted && !this.closing && !p.active) this.launch(p);
      }, delay);
    }
  }
}
