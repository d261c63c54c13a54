// Sharded batch runs (issue 33): a batch pipeline with `workers: {count}` whose source declares
// `shard` (snmp_poll, prometheus_scrape) is cut into one shard per worker. The manager plans the
// shards by rendezvous hashing of the targets' identities over the chosen workers (hrw.ts: the same
// target lands on the same worker every cycle), dispatches every shard as a run of its own on its
// worker (`<run>-s<index>`, POST /agent/run with the targets it owns), and collects their outcomes
// into the one run of the run history; `run_shards` keeps a row per shard.
//
// A shard whose worker goes down (2 failed health polls) or sends no progress for 1.5 x its lease
// (SVC_SHARD_LEASE_SECONDS; the worker stops a shard itself after 1 x the lease without reaching
// the manager) is lost: while the cycle has time left its targets go to the other workers (again by
// rendezvous hashing, so each goes to its runner-up), else they are recorded as missed, by name. A
// report of a shard given up is answered 409 and the worker stops it: a target is never polled by
// two live workers in one cycle. A restarted manager adopts a sharded run from its rows.
import { Cron } from 'croner';
import type { RunRecord } from '../engine/run-record.js';
import { MAX_MESSAGES } from '../engine/run-record.js';
import { errorMessage } from '../core/errors.js';
import type { RunJob } from '../pipelines/executor.js';
import type { Logger } from '../observability/log.js';
import type { PipelineConfig } from '../config/pipeline-schema.js';
import type { RunShard as ShardRow, ShardStatus } from '../store/run-shards.js';
import type { SqlRunShardStore } from '../store/run-shards.js';
import type { Registry } from '../config/load.js';
import { registry as defaultRegistry } from '../plugins/registry.js';
import { assign } from './hrw.js';
import { detailOf, internalCall, type CallOptions } from './internal-http.js';
import type { ClusterMetrics } from './metrics.js';
import type { SourcePlugin } from '../plugins/types.js';
import type { RunComplete, StatsReport } from './protocol.js';
import { runRecordOf } from './protocol.js';

export interface ShardWorker {
  id: string;
  url: string;
}

/** What the sharded runs need of the worker pool. */
export interface ShardWorkers {
  /** Healthy workers that take new runs. */
  available(): ShardWorker[];
  /** A known worker by id, healthy or not. */
  find(id: string): ShardWorker | undefined;
  healthy(id: string): boolean;
  noteDispatched(id: string): void;
}

interface Shard {
  index: number;
  worker: ShardWorker;
  targets: string[];
  runId: string;
  status: ShardStatus;
  startedAt: number;
  lastSeen: number;
  progress?: StatsReport;
  record?: RunRecord;
  missed: string[];
  error?: string;
  written: Promise<unknown>;
}

interface Sharded {
  job: RunJob;
  runId: string;
  epoch: number;
  startedAt: string;
  /** When the next cycle is due (ms since the epoch): a lost shard is re-dispatched only before it. */
  cycleEnd: number;
  shards: Map<number, Shard>;
  nextIndex: number;
  done: boolean;
  settle(): void;
  /** Resolves once the run's shards are known (an adopted run reads them from the store first). */
  ready: Promise<void>;
}

/** A pipeline's targets and where each is polled (GET /api/pipelines/{name}/shards). */
export interface ShardView {
  pipeline: string;
  /** The run the assignment is of; absent for a plan of the current workers (no sharded run here yet). */
  run_id?: string;
  running: boolean;
  workers: { worker_id: string; shards: number; targets: number }[];
  total: number;
  /** target -> worker, filtered by `q` and capped at `limit`. */
  targets: { target: string; worker_id: string; shard: number; status: ShardStatus | 'planned' }[];
}

/** Runs (parent ids) whose outcome this manager settled; bounded. */
const REMEMBERED = 10_000;

export class ShardedRuns {
  private readonly runs = new Map<string, Sharded>();
  /** The last sharded run of each pipeline (kept after it ends, for its assignment). */
  private readonly last = new Map<string, Sharded>();
  private readonly settled = new Set<string>();
  /** Runs with a shard still running in the store (found at start): run id -> pipeline. */
  private adoptable = new Map<string, string>();
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly deps: {
      workers: ShardWorkers;
      store: SqlRunShardStore;
      metrics: ClusterMetrics;
      log: Logger;
      call: () => CallOptions;
      /** The lease epoch dispatches carry (stored with each shard). */
      epoch: () => number;
      leaseMs: number;
      nodeId: string;
      registry?: Registry;
    },
  ) {}

  /**
   * The node id of a sharded run's record: not the manager's own, whose running runs a restarted
   * manager records as interrupted; the shards say where it ran.
   */
  private get nodeId() {
    return `${this.deps.nodeId}/shards`;
  }

  private get reg() {
    return this.deps.registry ?? defaultRegistry;
  }

  /** Whether the run is sharded: a batch pipeline with `workers` on a source that can split. */
  applies(job: Pick<RunJob, 'config'>): boolean {
    const c = job.config;
    return !!c.workers && c.schedule.type !== 'stream' && !!(this.reg.source.get(c.source.type) as SourcePlugin | undefined)?.shard;
  }

  /** The identities of the pipeline's targets, as its source lists them. */
  async targetsOf(config: PipelineConfig): Promise<string[]> {
    const plugin = this.reg.source.get(config.source.type) as SourcePlugin | undefined;
    if (!plugin?.shard) throw new Error(`source '${config.source.type}' cannot split its work`);
    return plugin.shard.targets(config.source as never);
  }

  /** The workers a run is cut over: the healthy ones (those in `workers.list`), the first `count` by id. */
  chooseWorkers(config: PipelineConfig): ShardWorker[] {
    const w = config.workers!;
    let out = this.deps.workers.available();
    if (w.list?.length) out = out.filter((x) => w.list!.includes(x.id));
    out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return w.count === 'all' ? out : out.slice(0, w.count);
  }

  start() {
    this.timer = setInterval(() => this.checkLeases(), Math.max(250, Math.min(5000, this.deps.leaseMs / 4)));
    this.timer.unref();
  }

  stop() {
    clearInterval(this.timer);
  }

  // ---- a run ------------------------------------------------------------------------------

  async execute(job: RunJob): Promise<RunRecord> {
    const started = new Date();
    const run: Sharded = {
      job,
      runId: job.runId,
      epoch: this.deps.epoch(),
      startedAt: started.toISOString(),
      cycleEnd: cycleEnd(job.config, started),
      shards: new Map(),
      nextIndex: 0,
      done: false,
      settle: () => {},
      ready: Promise.resolve(),
    };
    const finished = new Promise<void>((r) => (run.settle = r));
    this.runs.set(job.runId, run);
    this.last.set(job.name, run);
    try {
      if (job.adoptFrom) await (run.ready = this.adopt(run));
      else {
        let targets: string[];
        try {
          targets = await this.targetsOf(job.config);
        } catch (e) {
          return this.failedRecord(run, `the targets could not be listed on the manager: ${errorMessage(e)}`);
        }
        const workers = this.chooseWorkers(job.config);
        if (!workers.length) {
          this.deps.metrics.dispatch.inc({ result: 'no_workers' });
          return this.failedRecord(run, 'no healthy worker to run its shards (GET /api/cluster/nodes shows the workers and their health)');
        }
        const plannedAt = performance.now();
        const placed = await this.dispatch(run, targets, workers, new Set(), plannedAt);
        if (!placed.length && targets.length) return this.failedRecord(run, `no worker took a shard: ${placed.failures.join('; ')}`);
        await job.started(this.nodeId);
        this.noteTargets(run);
      }
      const onAbort = () => {
        for (const s of run.shards.values()) if (s.status === 'running') this.stopShard(run, s);
      };
      if (job.signal.aborted) onAbort();
      else job.signal.addEventListener('abort', onAbort, { once: true });
      this.maybeFinish(run);
      await finished;
      job.signal.removeEventListener('abort', onAbort);
      await Promise.all([...run.shards.values()].map((s) => s.written));
      return this.record(run);
    } finally {
      this.runs.delete(job.runId);
      this.remember(job.runId);
    }
  }

  /**
   * Cuts `targets` over `workers` (rendezvous hashing) and dispatches one shard per worker that got
   * any. A worker that refuses its shard is passed over: its targets go to the others, as for a
   * worker lost. Returns the shards placed.
   */
  private async dispatch(
    run: Sharded,
    targets: string[],
    workers: ShardWorker[],
    exclude: Set<string>,
    plannedAt: number,
  ): Promise<Shard[] & { failures: string[] }> {
    const placed = [] as unknown as Shard[] & { failures: string[] };
    placed.failures = [];
    let pending = targets;
    let pool = workers.filter((w) => !exclude.has(w.id));
    while (pending.length && pool.length) {
      const plan = assign(
        pending,
        pool.map((w) => w.id),
      );
      const refused: string[] = [];
      await Promise.all(
        pool.map(async (w) => {
          const mine = plan.get(w.id)!;
          if (!mine.length) return;
          const s = await this.dispatchShard(run, w, mine, plannedAt);
          if (typeof s === 'string') {
            placed.failures.push(`${w.id}: ${s}`);
            exclude.add(w.id);
            refused.push(...mine);
          } else placed.push(s);
        }),
      );
      pending = refused;
      pool = pool.filter((w) => !exclude.has(w.id));
    }
    if (pending.length) this.missShard(run, pending, `no worker took them (${placed.failures.join('; ')})`);
    return placed;
  }

  private async dispatchShard(run: Sharded, w: ShardWorker, targets: string[], plannedAt: number): Promise<Shard | string> {
    const index = run.nextIndex++;
    const shard: Shard = {
      index,
      worker: w,
      targets,
      runId: `${run.runId}-s${index}`,
      status: 'running',
      startedAt: Date.now(),
      lastSeen: Date.now(),
      missed: [],
      written: Promise.resolve(),
    };
    // The row first: a manager that dies right after the dispatch finds the shard to adopt.
    await this.deps.store.insert({
      run_id: run.runId,
      shard_index: index,
      pipeline: run.job.name,
      worker_id: w.id,
      epoch: run.epoch,
      targets,
      started_at: new Date(shard.startedAt).toISOString(),
    });
    run.shards.set(index, shard);
    this.deps.workers.noteDispatched(w.id);
    let why: string | undefined;
    try {
      const r = await internalCall(
        'POST',
        `${w.url}/agent/run`,
        {
          run_id: shard.runId,
          yaml: run.job.yaml,
          flush: run.job.flush ?? false,
          shard: { run_id: run.runId, index, targets, lease_seconds: Math.max(1, Math.round(this.deps.leaseMs / 1000)) },
        },
        this.deps.call(),
      );
      if (r.status < 200 || r.status >= 300) why = detailOf(r);
    } catch (e) {
      why = errorMessage(e);
    }
    if (why !== undefined) {
      this.deps.metrics.dispatch.inc({ result: 'dispatch_failed' });
      shard.status = 'lost';
      shard.written = this.deps.store.finish(run.runId, index, { status: 'lost', error: `not taken: ${why}`, finished_at: new Date().toISOString() });
      await shard.written;
      return why;
    }
    this.deps.metrics.dispatch.inc({ result: 'accepted' });
    this.deps.metrics.shardDispatched.inc();
    this.deps.metrics.shardDispatchSeconds.observe((performance.now() - plannedAt) / 1000);
    shard.lastSeen = Date.now();
    return shard;
  }

  /** Targets nobody polls in this cycle: one settled shard of their own, status missed. */
  private missShard(run: Sharded, targets: string[], why: string) {
    const index = run.nextIndex++;
    const now = new Date().toISOString();
    const shard: Shard = {
      index,
      worker: { id: '', url: '' },
      targets,
      runId: `${run.runId}-s${index}`,
      status: 'missed',
      startedAt: Date.now(),
      lastSeen: Date.now(),
      missed: targets,
      error: why,
      written: Promise.resolve(),
    };
    run.shards.set(index, shard);
    this.deps.metrics.shardOutcome.inc({ status: 'missed' });
    this.deps.metrics.shardMissedTargets.inc(targets.length);
    shard.written = this.deps.store
      .insert({ run_id: run.runId, shard_index: index, pipeline: run.job.name, worker_id: '', epoch: run.epoch, targets, started_at: now })
      .then(() => this.deps.store.finish(run.runId, index, { status: 'missed', missed: targets, error: why, finished_at: now }));
  }

  /** Adopts a run a previous manager process dispatched: its shards as the store has them. */
  private async adopt(run: Sharded) {
    this.adoptable.delete(run.runId);
    const rows = await this.deps.store.ofRun(run.runId);
    await run.job.started(this.nodeId);
    run.job.log.info({ shards: rows.length }, 'sharded run adopted where its shards run (dispatched before this manager started)');
    for (const row of rows) {
      const w = this.deps.workers.find(row.worker_id) ?? { id: row.worker_id, url: '' };
      const shard: Shard = {
        index: row.shard_index,
        worker: w,
        targets: row.targets,
        runId: `${run.runId}-s${row.shard_index}`,
        status: row.status,
        startedAt: Date.parse(row.started_at),
        lastSeen: Date.now(),
        missed: row.missed,
        error: row.error ?? undefined,
        written: Promise.resolve(),
      };
      if (row.status !== 'running')
        shard.record = {
          ...this.emptyRecord(run, shard.runId, row.status === 'success' || row.status === 'lost' ? 'success' : 'failed'),
          records_in: row.records_in,
          records_out: row.records_out,
        };
      run.shards.set(row.shard_index, shard);
      run.nextIndex = Math.max(run.nextIndex, row.shard_index + 1);
    }
    this.noteTargets(run);
    for (const s of run.shards.values())
      if (s.status === 'running' && !this.deps.workers.healthy(s.worker.id)) this.lose(run, s, `worker ${s.worker.id} is not healthy`);
  }

  // ---- what workers report ----------------------------------------------------------------

  /** A shard's run-complete (body.shard set). Stored once: in memory when the run is followed here, else in its row. */
  async complete(body: RunComplete): Promise<'resolved' | 'duplicate'> {
    const ref = body.shard!;
    const run = this.runs.get(ref.run_id);
    if (run) await run.ready.catch(() => undefined);
    const shard = run?.shards.get(ref.index);
    if (run && shard) {
      if (shard.runId !== body.run_id || shard.status !== 'running') return 'duplicate';
      const record = runRecordOf(body);
      shard.record = record;
      shard.status = record.status;
      this.deps.metrics.shardOutcome.inc({ status: record.status });
      shard.written = this.deps.store.finish(run.runId, shard.index, this.outcomeOf(shard, record));
      await shard.written;
      this.maybeFinish(run);
      return 'resolved';
    }
    // No run of this process follows it (a manager restarted before adopting it): its row, once.
    const record = runRecordOf(body);
    const stored = await this.deps.store.finish(ref.run_id, ref.index, this.outcomeOf(undefined, record));
    if (stored) this.deps.metrics.shardOutcome.inc({ status: record.status });
    return stored ? 'resolved' : 'duplicate';
  }

  /** A shard's progress: true while it is its shard's current run (or one this process does not follow yet). */
  stats(body: StatsReport): boolean {
    const ref = body.shard!;
    const run = this.runs.get(ref.run_id);
    if (!run) return !this.settled.has(ref.run_id);
    const shard = run.shards.get(ref.index);
    if (!shard || shard.runId !== body.run_id || shard.status !== 'running') return false;
    shard.lastSeen = Date.now();
    shard.progress = body;
    run.job.onProgress?.({ ...this.sum(run), units: 0, errors: [] });
    return true;
  }

  /** The shards on a worker that went down are lost. */
  workerDown(id: string) {
    for (const run of this.runs.values())
      for (const s of run.shards.values()) if (s.status === 'running' && s.worker.id === id) this.lose(run, s, `worker ${id} went down`);
  }

  /** Shards without progress for 1.5 x the lease are lost (the worker stopped them itself after 1 x). */
  private checkLeases() {
    const now = Date.now();
    for (const run of this.runs.values())
      for (const s of run.shards.values())
        if (s.status === 'running' && now - s.lastSeen > this.deps.leaseMs * 1.5)
          this.lose(run, s, `no progress from worker ${s.worker.id} within the shard lease (SVC_SHARD_LEASE_SECONDS)`);
  }

  /**
   * A shard given up: told to stop (its reports are refused from now on), and its targets sent to
   * the other workers while the cycle has time left, else recorded as missed.
   */
  private lose(run: Sharded, s: Shard, why: string) {
    this.stopShard(run, s);
    const now = new Date().toISOString();
    const again = !run.job.signal.aborted && Date.now() < run.cycleEnd;
    const workers = again ? this.chooseWorkers(run.job.config).filter((w) => w.id !== s.worker.id && this.deps.workers.healthy(w.id)) : [];
    if (workers.length) {
      s.status = 'lost';
      this.deps.metrics.shardOutcome.inc({ status: 'lost' });
      this.deps.metrics.redispatch.inc();
      run.job.log.warn({ shard: s.index, worker: s.worker.id, targets: s.targets.length }, `shard lost (${why}); its targets go to the other workers`);
      s.written = this.deps.store.finish(run.runId, s.index, { status: 'lost', error: why, finished_at: now });
      const redo = this.dispatch(run, s.targets, workers, new Set([s.worker.id]), performance.now()).then(() => this.noteTargets(run));
      s.written = Promise.all([s.written, redo]).then(() => this.maybeFinish(run));
      return;
    }
    s.status = 'missed';
    s.missed = s.targets;
    s.error = `${why}; ${again ? 'no other worker to take its targets' : 'no time left in the cycle'}: missed`;
    this.deps.metrics.shardOutcome.inc({ status: 'missed' });
    this.deps.metrics.shardMissedTargets.inc(s.targets.length);
    run.job.log.error({ shard: s.index, worker: s.worker.id, missed: s.targets.length }, `shard missed: ${s.error}`);
    s.written = this.deps.store.finish(run.runId, s.index, { status: 'missed', missed: s.targets, error: s.error, finished_at: now });
    void s.written.then(() => this.maybeFinish(run));
  }

  private stopShard(run: Sharded, s: Shard) {
    if (!s.worker.url) return;
    Promise.resolve()
      .then(() => internalCall('POST', `${s.worker.url}/agent/stop`, { run_id: s.runId }, this.deps.call()))
      .catch((e: unknown) => run.job.log.debug({ worker: s.worker.id, err: errorMessage(e) }, 'could not tell the worker to stop a shard'));
  }

  private maybeFinish(run: Sharded) {
    if (run.done) return;
    // A re-dispatch in flight has not added its shards yet: wait for it (its promise calls back).
    if ([...run.shards.values()].some((s) => s.status === 'running')) return;
    if (this.redispatching(run)) return;
    run.done = true;
    run.settle();
  }

  private redispatching(run: Sharded): boolean {
    // A lost shard's targets are covered once shards after it exist for them, or it was missed.
    const lost = [...run.shards.values()].filter((s) => s.status === 'lost' && s.targets.length);
    if (!lost.length) return false;
    const covered = new Set<string>();
    for (const s of run.shards.values()) if (s.status !== 'lost') for (const t of s.targets) covered.add(t);
    return lost.some((s) => s.targets.some((t) => !covered.has(t)));
  }

  // ---- records ----------------------------------------------------------------------------

  private outcomeOf(shard: Shard | undefined, r: RunRecord) {
    return {
      status: r.status,
      records_in: r.records_in,
      records_out: r.records_out,
      errors: r.errors.length,
      duration_ms: Math.max(0, Date.parse(r.finished_at) - Date.parse(r.started_at)) || (shard ? Date.now() - shard.startedAt : 0),
      error: r.error,
      finished_at: r.finished_at,
    };
  }

  private sum(run: Sharded) {
    const t = { records_in: 0, records_out: 0, records_filtered: 0, records_skipped: 0, bytes_in: 0, bytes_out: 0, dlq_count: 0 };
    for (const s of run.shards.values()) {
      const src = s.record ?? (s.status === 'running' ? s.progress : undefined);
      if (!src) continue;
      for (const k of Object.keys(t) as (keyof typeof t)[]) t[k] += Number(src[k] ?? 0);
    }
    return t;
  }

  /** The one run record of a sharded run: the sum of its shards; missed targets named in its error. */
  private record(run: Sharded): RunRecord {
    const shards = [...run.shards.values()].sort((a, b) => a.index - b.index);
    const errors: string[] = [];
    const failures: string[] = [];
    const missed: string[] = [];
    for (const s of shards) {
      for (const e of s.record?.errors ?? []) if (errors.length < MAX_MESSAGES) errors.push(e);
      if (s.record && s.record.status !== 'success') failures.push(`shard ${s.index} on ${s.worker.id}: ${s.record.error ?? s.record.status}`);
      missed.push(...s.missed);
    }
    const aborted = run.job.signal.aborted || shards.some((s) => s.record?.status === 'aborted');
    const parts: string[] = [];
    if (missed.length) parts.push(`${missed.length} target(s) missed in this cycle: ${missed.slice(0, 20).join(', ')}${missed.length > 20 ? ', …' : ''}`);
    parts.push(...failures);
    return {
      ...this.emptyRecord(run, run.runId, aborted ? 'aborted' : parts.length ? 'failed' : 'success'),
      ...this.sum(run),
      error: parts.length ? parts.join('; ') : null,
      errors,
    };
  }

  private emptyRecord(run: Sharded, runId: string, status: RunRecord['status']): RunRecord {
    return {
      run_id: runId,
      pipeline: run.job.name,
      node_id: this.nodeId,
      status,
      started_at: run.startedAt,
      finished_at: new Date().toISOString(),
      records_in: 0,
      records_out: 0,
      records_filtered: 0,
      records_skipped: 0,
      bytes_in: 0,
      bytes_out: 0,
      dlq_count: 0,
      error: null,
      errors: [],
    };
  }

  private failedRecord(run: Sharded, error: string): RunRecord {
    run.job.log.error(error);
    return { ...this.emptyRecord(run, run.runId, 'failed'), error };
  }

  private noteTargets(run: Sharded) {
    this.last.set(run.job.name, run);
    this.deps.metrics.shardTargets.reset();
    for (const r of this.last.values())
      for (const s of r.shards.values())
        if (s.worker.id && s.status !== 'lost') this.deps.metrics.shardTargets.inc({ pipeline: r.job.name, worker: s.worker.id }, s.targets.length);
  }

  private remember(runId: string) {
    this.settled.add(runId);
    if (this.settled.size > REMEMBERED) this.settled.delete(this.settled.values().next().value!);
  }

  // ---- adoption and views -----------------------------------------------------------------

  /** Reads the sharded runs a previous manager process left running (before the workers' runs are read). */
  async load() {
    this.adoptable = await this.deps.store.active();
  }

  /** A sharded run of the pipeline to adopt (the pipeline manager's adoption.take). */
  take(pipeline: string): { runId: string; nodeId: string } | undefined {
    for (const [runId, p] of this.adoptable) if (p === pipeline) return { runId, nodeId: this.deps.nodeId };
    return undefined;
  }

  /** Whether a run found on a worker is a shard (a restarted manager does not adopt it as a run of its own). */
  isShard(body: { shard?: unknown }) {
    return !!body.shard;
  }

  /** Sharded runs left in the store that no pipeline took (gone, or stopped): their running shards end as aborted. */
  async forgetUntaken() {
    for (const [runId] of this.adoptable) {
      for (const row of await this.deps.store.ofRun(runId)) {
        if (row.status !== 'running') continue;
        const w = this.deps.workers.find(row.worker_id);
        if (w) void internalCall('POST', `${w.url}/agent/stop`, { run_id: `${runId}-s${row.shard_index}` }, this.deps.call()).catch(() => undefined);
        await this.deps.store.finish(runId, row.shard_index, {
          status: 'aborted',
          error: 'its pipeline is gone or stopped',
          finished_at: new Date().toISOString(),
        });
      }
    }
    this.adoptable.clear();
  }

  /** Workers holding shards of the pipeline's run in progress (a relayed tap). */
  holders(pipeline: string): ShardWorker[] {
    const out: ShardWorker[] = [];
    for (const run of this.runs.values())
      if (run.job.name === pipeline)
        for (const s of run.shards.values()) if (s.status === 'running' && !out.some((w) => w.id === s.worker.id)) out.push(s.worker);
    return out;
  }

  /** Running shards by worker id (GET /api/cluster/nodes). */
  assigned(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const run of this.runs.values())
      for (const s of run.shards.values())
        if (s.status === 'running') out.set(s.worker.id, [...(out.get(s.worker.id) ?? []), `${run.job.name} (shard ${s.index})`]);
    return out;
  }

  /**
   * Where each target of the pipeline is polled: the assignment of its run in progress or its last
   * sharded run here; else the plan the current workers would get.
   */
  async view(config: PipelineConfig, q?: string, limit = 1000): Promise<ShardView> {
    const run = this.runs.get(this.last.get(config.name)?.runId ?? '') ?? this.last.get(config.name);
    const rows: ShardView['targets'] = [];
    const perWorker = new Map<string, { shards: number; targets: number }>();
    const add = (target: string, worker: string, shard: number, status: ShardView['targets'][number]['status']) => {
      if (q && !target.toLowerCase().includes(q.toLowerCase())) return;
      if (rows.length < limit) rows.push({ target, worker_id: worker, shard, status });
    };
    let total = 0;
    if (run) {
      for (const s of [...run.shards.values()].sort((a, b) => a.index - b.index)) {
        if (s.status === 'lost') continue;
        const w = perWorker.get(s.worker.id) ?? { shards: 0, targets: 0 };
        w.shards++;
        w.targets += s.targets.length;
        perWorker.set(s.worker.id, w);
        total += s.targets.length;
        for (const t of s.targets) add(t, s.worker.id, s.index, s.status);
      }
    } else {
      const targets = await this.targetsOf(config);
      const plan = assign(
        targets,
        this.chooseWorkers(config).map((w) => w.id),
      );
      let i = 0;
      for (const [w, ts] of plan) {
        perWorker.set(w, { shards: ts.length ? 1 : 0, targets: ts.length });
        total += ts.length;
        for (const t of ts) add(t, w, i, 'planned');
        i++;
      }
    }
    return {
      pipeline: config.name,
      ...(run ? { run_id: run.runId } : {}),
      running: !!run && this.runs.has(run.runId),
      workers: [...perWorker].map(([worker_id, v]) => ({ worker_id, ...v })),
      total,
      targets: rows,
    };
  }
}

/** When the cycle after a run starting at `at` is due: its interval, its next cron fire; a manual run has no next cycle. */
export function cycleEnd(config: PipelineConfig, at: Date): number {
  const s = config.schedule;
  if (s.type === 'interval' && s.interval_seconds) return at.getTime() + s.interval_seconds * 1000;
  if (s.type === 'cron' && s.cron) {
    const next = new Cron(s.cron, { paused: true }).nextRun(at);
    if (next) return next.getTime();
  }
  return Number.POSITIVE_INFINITY;
}

export type { ShardRow };
