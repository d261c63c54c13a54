// The pipeline manager's run supervision: a run is launched on the executor, recorded in the store
// before it starts and when it ends, counted in the metrics, traced, and evaluated by the alert
// rules; afterwards the pipeline's state follows its outcome and a stream that ended is restarted
// with backoff. halt() drains a run; shutdown stops every one.
import { randomUUID } from 'node:crypto';
import type { RunRecord } from '../engine/run-record.js';
import { decodeWatchOptions } from '../engine/decode-watch.js';
import { stateConfigHash, statefulTransforms, storeStateIO } from '../engine/transform-state.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../observability/log.js';
import { startRunSpan } from '../observability/tracing.js';
import { DbProcessedFiles, isDatabaseUnavailable } from '../store/index.js';
import type { RunToStore } from '../store/types.js';
import { LocalExecutor, type Executor, type RunJob } from './executor.js';
import type { ActiveRun, Managed, ManagerDeps } from './types.js';
import { LIVE_PERSIST_MS, LIVE_TICK_MS, LiveRun } from './live.js';
import { TapHub } from '../engine/tap.js';

/** Stream restart backoff: 1 s doubling to 60 s. */
export const restartDelayMs = (attempt: number) => Math.min(60_000, 1000 * 2 ** Math.max(0, attempt - 1));

/** What the run supervisor asks of the registry and the scheduler. */
export interface SupervisorHooks {
  /** False once `p` was replaced or deleted. */
  isCurrent(p: Managed): boolean;
  /** Stops the pipeline's timers and a pending restart. */
  disarm(p: Managed): void;
}

export interface LaunchOptions {
  flush?: boolean;
  runId?: string;
  adopt?: { runId: string; nodeId: string };
  runner?: RunJob['runner'];
}

export class RunSupervisor {
  /** Set when the manager shuts down: no run starts or restarts any more. */
  closing = false;
  private readonly executor: Executor;
  /** The live figures of every run in progress here, by run id (SVC_LIVE_COUNTERS). */
  readonly live = new Map<string, LiveRun>();
  /** Each pipeline's taps, by name: they outlive runs and config versions (deleted with the pipeline). */
  readonly taps = new Map<string, TapHub>();

  constructor(
    private readonly deps: ManagerDeps,
    private readonly hooks: SupervisorHooks,
  ) {
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

  /** Stops the schedule and drains an active run (graceful stop, then stop waiting at the timeout). */
  async halt(p: Managed, timeoutMs = this.deps.settings.SHUTDOWN_TIMEOUT_SECONDS * 1000) {
    p.halted = true;
    this.hooks.disarm(p);
    const active = p.active;
    if (active) {
      active.stop.abort();
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([active.done.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), timeoutMs)))]);
      clearTimeout(timer);
      if (timedOut) this.deps.log.warn({ pipeline: p.name, run_id: active.runId }, `run did not drain within ${timeoutMs / 1000} s; no longer waiting for it`);
    }
    p.status = 'stopped';
  }

  /** The pipeline's taps (made on first use). */
  tapHub(name: string): TapHub {
    let hub = this.taps.get(name);
    if (!hub) this.taps.set(name, (hub = new TapHub()));
    return hub;
  }

  /** The synthetic single-slot placement of a running standalone stream (spec doc 2). */
  placement(p: Managed) {
    const name = p.name;
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
    const stale = live?.progress !== undefined && now - live.at > 3 * this.deps.settings.STATS_INTERVAL * 1000;
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

  launch(p: Managed, opts: LaunchOptions = {}): ActiveRun {
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
    // Live counters (issue 29; src/pipelines/live.ts): the run's reports land in `live`, a timer
    // samples them for the rates and the metrics and writes them to the run's row now and then.
    const live = this.deps.settings.LIVE_COUNTERS ? new LiveRun(runId, name) : undefined;
    p.live = live;
    if (live) this.live.set(runId, live);
    // The pipeline's counters follow each run's progress reports; they never go back (a run lost
    // with its worker reports less at its end than its progress did).
    const labels = { pipeline: name };
    let last = { records_in: 0, records_out: 0, records_filtered: 0, records_skipped: 0, dlq_count: 0 };
    const countUpTo = (now: typeof last, failedRun = 0) => {
      const more = (c: typeof metrics.recordsIn, n: number) => n > 0 && c.inc(labels, n);
      more(metrics.recordsIn, now.records_in - last.records_in);
      more(metrics.recordsOut, now.records_out - last.records_out);
      more(metrics.recordsFiltered, now.records_filtered - last.records_filtered);
      more(metrics.recordsSkipped, now.records_skipped - last.records_skipped);
      more(metrics.errors, Math.max(0, now.records_skipped - last.records_skipped) + failedRun);
      more(metrics.dlq, now.dlq_count - last.dlq_count);
      last = {
        records_in: Math.max(last.records_in, now.records_in),
        records_out: Math.max(last.records_out, now.records_out),
        records_filtered: Math.max(last.records_filtered, now.records_filtered),
        records_skipped: Math.max(last.records_skipped, now.records_skipped),
        dlq_count: Math.max(last.dlq_count, now.dlq_count),
      };
    };
    let recorded = false; // the run's row exists (started)
    let persisting = false;
    let lastPersist = 0;
    let persistedAt = -1; // live.at of what was written last
    const tick =
      live &&
      setInterval(() => {
        const now = Date.now();
        live.sample(now);
        if (live.progress) countUpTo(live.progress);
        if (!recorded || !live.progress || persisting || live.at === persistedAt || now - lastPersist < LIVE_PERSIST_MS) return;
        persisting = true;
        lastPersist = now;
        const at = live.at;
        store.runs.progress(runId, live.stored()).then(
          () => ((persistedAt = at), (persisting = false)),
          (e: unknown) => {
            persisting = false;
            plog.debug({ err: errorMessage(e) }, 'live counters not written (the next write brings them)');
          },
        );
      }, LIVE_TICK_MS);
    tick?.unref();
    const done = (async (): Promise<RunRecord> => {
      const record = await this.executor
        .execute({
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
            recorded = true;
            plog.info({ node_id: nodeId }, 'run started');
            setPlaced(true);
          },
          onTransformEvent: (e, n) => metrics.transformEvents[e].inc({ pipeline: name }, n),
          telemetry: metrics.telemetry(name),
          onProgress: live && ((pr) => live.update(pr)),
          onQueueDepth: (d) => metrics.streamQueueDepth.set({ pipeline: name }, d),
          onChunkDelivered: (s) => metrics.chunkDuration.observe({ pipeline: name }, s),
          tap: this.tapHub(name),
        })
        .finally(() => clearInterval(tick));
      // What the last progress report did not include (end-of-run notes, failures).
      countUpTo(record, record.status === 'failed' ? 1 : 0);
      await store.runs.finish({ ...record, pipeline_version: pipelineVersion }).catch((e: unknown) => {
        if (!isDatabaseUnavailable(e)) throw e;
        // The run is over; only writing its outcome waits for the database to come back.
        plog.warn({ err: errorMessage(e) }, 'database unavailable: the run outcome is written when it is back');
        this.finishLater({ ...record, pipeline_version: pipelineVersion }, plog);
      });
      p.lastRun = { at: record.finished_at, status: record.status };
      // The record is final (or waits for the database): the live figures are no longer laid over it.
      this.live.delete(runId);
      plog.info({ status: record.status, records_in: record.records_in, records_out: record.records_out }, 'run finished');
      return record;
    })();
    const active: ActiveRun = { runId, stop, done, placed };
    done.then(
      () => setPlaced(false),
      () => setPlaced(false),
    );
    p.active = active;
    done.finally(() => this.live.delete(runId)).catch(() => {});
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
    if (!this.hooks.isCurrent(p)) return; // replaced or deleted meanwhile
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
