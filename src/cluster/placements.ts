// Stream placements (spec doc 2, "Stream placement"): in manager mode a stream pipeline runs as a
// placement group of slots, one run per slot on a worker. Streams whose source takes pushes on the
// worker ingress (as it declares, SourcePlugin.resources: webhook, prometheus_rw) get a slot on every
// healthy worker, since senders reach any of them through the Service; other streams get one slot
// (SVC_STREAM_SINGLE_PLACEMENT=1; 0 keeps them as plain followed runs). The group is the stream's one run in the run history: its id is the group id,
// its counters the sums over every slot's runs.
//
// The reconciler (tick(): every min(SVC_STATS_INTERVAL, 10) s) keeps each group whole:
// - a slot with no stats for 3 x SVC_STATS_INTERVAL is stale: its run is stopped and started again
//   on the same worker (a new current_run_id, restart_count + 1); so is a slot whose run ended;
// - a slot whose worker is down (2 failed health polls) is stale, and the group degraded. The pass
//   that finds it so and two more of hysteresis later (a worker cut off for a moment keeps its
//   slot), a one-slot group is re-dispatched to another worker, and an `all` group drops the slot.
//   With doc 2's defaults (polls and passes every 10 s) a dead worker's stream runs again elsewhere
//   40-60 s after the worker died;
// - an `all` group gets a slot on every healthy worker that has none (a worker added or back).
// Stats of a run that is no longer its slot's current run are refused (409: the worker stops it).
// Placements are persisted (src/cluster/placement-store.ts); a restarted manager adopts the slots
// it finds running with the same config_sha256 in place, and restarts the others. A slot's run is
// saved before its worker is asked to start it: a manager killed between the two finds the run id
// at its restart (a run it never started is simply not found), and never takes a slot run for a
// plain run of the stream.
import { createHash } from 'node:crypto';
import type { RunJob } from '../pipelines/executor.js';
import { runCounts, type RunRecord } from '../engine/run-record.js';
import { sumStages, type StageFigures } from '../engine/stage-figures.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../observability/log.js';
import { detailOf, internalCall, type CallOptions } from './internal-http.js';
import type { ClusterMetrics } from './metrics.js';
import type { PersistedPlacement, PersistedSlot, SqlPlacementStore } from './placement-store.js';
import type { RunComplete, StatsReport } from './protocol.js';
import { takesIngressPushes, type SourceLookup } from './source-resources.js';

/** The node id an adopted placement is handed to the pipeline manager with. */
export const ADOPT_PLACEMENT = 'placement';

/** Passes that find a slot's worker down before the slot moves (see above). */
const LOST_PASSES_TO_MOVE = 4;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export interface PlacementWorker {
  id: string;
  url: string;
  /** Position in discovery order (`worker_index`). */
  index: number;
}

export interface PlacementWorkers {
  /** Healthy workers that take new runs, in discovery order. */
  available(): PlacementWorker[];
  /** The least-loaded available worker not in `exclude`. */
  pick(exclude?: ReadonlySet<string>): PlacementWorker | undefined;
  /** Whether worker `id` passes its health polls. */
  healthy(id: string): boolean;
  noteDispatched(id: string): void;
}

const COUNTERS = ['records_in', 'records_out', 'records_filtered', 'records_skipped', 'dlq_count', 'error_count', 'bytes_in', 'bytes_out'] as const;
type Counters = Record<(typeof COUNTERS)[number], number>;
const zero = (): Counters => ({
  records_in: 0,
  records_out: 0,
  records_filtered: 0,
  records_skipped: 0,
  dlq_count: 0,
  error_count: 0,
  bytes_in: 0,
  bytes_out: 0,
});
const add = (a: Counters, b: Partial<Record<keyof Counters, unknown>>) => {
  for (const k of COUNTERS) a[k] += Number(b[k] ?? 0);
  return a;
};

/** Figures of runs that ended, added up: no breaker of theirs is open any more. */
const endedStages = (list: (StageFigures | undefined)[]): StageFigures | undefined => {
  const sum = sumStages(list.filter((s) => s !== undefined));
  for (const k of sum?.sinks ?? []) k.circuit = 'closed';
  return sum;
};

/** A slot's fields of doc 2 (what is persisted, and what the view shows beside its stats). */
const persistedSlot = (s: PersistedSlot): PersistedSlot => ({
  worker_index: s.worker_index,
  worker_id: s.worker_id,
  worker_url: s.worker_url,
  run_id_prefix: s.run_id_prefix,
  current_run_id: s.current_run_id,
  status: s.status,
  restart_count: s.restart_count,
});

interface Slot extends PersistedSlot {
  /** The current run's last stats report. */
  report?: StatsReport & { errors_last_window?: string[] };
  /** When stats last came (or the run was started); ms. */
  lastReportAt: number;
  runStartedAt: number;
  /** Counters of this slot's runs that ended. */
  closed: Counters;
  /** Stage figures of this slot's runs that ended (from their final reports). */
  closedStages?: StageFigures;
  /** The current run ended (its run-complete came): started again at the next tick. */
  ended: boolean;
  /** Reconciler passes in a row that found the slot's worker down. */
  lostPasses: number;
}

interface Group extends Omit<PersistedPlacement, 'slots'> {
  job: RunJob;
  slots: Slot[];
  stopping: boolean;
  /** Counters of slots dropped from the group. */
  dropped: Counters;
  droppedStages?: StageFigures;
  /** The highest run number each worker index had in this group: a run id is never used twice. */
  used: Map<number, number>;
  errors: string[];
  resolve(r: RunRecord): void;
  /** Slots whose run is being started: saved with the group before the worker is asked. */
  dispatching: Set<Slot>;
  /** The last save of the row (saves run one after another, so the last state is written last). */
  saving: Promise<void>;
  /** Ended: its row is removed and never saved again. */
  ended: boolean;
}

export type PlacementView = NonNullable<ReturnType<StreamPlacements['view']>>;

export class StreamPlacements {
  private readonly groups = new Map<string, Group>();
  /** Slot runs by run id: the current ones and (until their run-complete) the superseded ones. */
  private readonly byRun = new Map<string, { group: Group; slot: Slot }>();
  /** Placements of a previous manager process, until their pipeline starts; with the slot runs found running. */
  private readonly saved = new Map<string, { placement: PersistedPlacement; running: Set<string> }>();
  private ticking: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      workers: PlacementWorkers;
      store: SqlPlacementStore;
      metrics: ClusterMetrics;
      log: Logger;
      call: () => CallOptions;
      statsIntervalMs: number;
      /** SVC_STREAM_SINGLE_PLACEMENT: one-slot streams are placements too. */
      singlePlacement: boolean;
      /** The node id of records of streams that never reached a worker. */
      nodeId: string;
      /** Where sources' plugins are looked up for what they declare (default: the plugin registry). */
      sources?: SourceLookup;
    },
  ) {}

  /** Whether this job runs as a placement (a stream adopted the plain way stays a plain run). */
  applies(job: RunJob): boolean {
    const { config } = job;
    if (job.adoptFrom !== undefined) return job.adoptFrom === ADOPT_PLACEMENT && this.saved.has(job.name);
    return config.schedule.type === 'stream' && (this.deps.singlePlacement || takesIngressPushes(config.source, this.deps.sources));
  }

  // ---- manager start: adoption -------------------------------------------------------------

  /** Reads the persisted placements (before the workers' runs are read). */
  async load(): Promise<void> {
    for (const p of await this.deps.store.list()) this.saved.set(p.pipeline, { placement: p, running: new Set() });
  }

  /**
   * A run found on a worker at start: 'slot' when it is the current run of a saved slot (kept for
   * adoption), 'superseded' when it belongs to a saved group but is not its slot's current run (the
   * caller stops it), undefined when it is no slot run.
   */
  found(pipeline: string, runId: string): 'slot' | 'superseded' | undefined {
    const s = this.saved.get(pipeline);
    if (!s || !runId.startsWith(`${s.placement.placement_group_id}-`)) return undefined;
    if (s.placement.slots.some((slot) => slot.current_run_id === runId)) {
      s.running.add(runId);
      return 'slot';
    }
    return 'superseded';
  }

  /**
   * The pipeline starts: its saved placement is adopted when its YAML is the one the slots run and
   * one of them runs still. Otherwise its slot runs are stopped and its row removed.
   */
  take(pipeline: string, yaml: string): { runId: string; nodeId: string } | undefined {
    const s = this.saved.get(pipeline);
    if (!s) return undefined;
    if (s.placement.config_sha256 === sha256(yaml) && s.running.size) return { runId: s.placement.placement_group_id, nodeId: ADOPT_PLACEMENT };
    this.saved.delete(pipeline);
    const why = s.running.size ? 'its pipeline changed since (config_sha256 differs); started again' : 'none of its slots runs any more; placed again';
    this.deps.log.warn({ pipeline, placement_group_id: s.placement.placement_group_id }, `saved placement not adopted: ${why}`);
    this.discard(s);
    return undefined;
  }

  private discard(s: { placement: PersistedPlacement; running: Set<string> }) {
    const { pipeline, placement_group_id } = s.placement;
    for (const slot of s.placement.slots) if (s.running.has(slot.current_run_id)) void this.stopRun(slot, pipeline);
    this.deps.store
      .remove(pipeline, placement_group_id)
      .catch((e: unknown) => this.deps.log.warn({ pipeline, err: errorMessage(e) }, 'saved placement not removed'));
  }

  /** After the pipelines started: saved placements no pipeline took are stopped and removed. */
  forgetUntaken(): void {
    for (const [pipeline, s] of this.saved) {
      this.deps.log.warn({ pipeline }, 'placement of a pipeline that is not registered or not started: its slot runs are stopped');
      this.discard(s);
    }
    this.saved.clear();
  }

  // ---- executing ---------------------------------------------------------------------------

  async execute(job: RunJob): Promise<RunRecord> {
    const saved = job.adoptFrom === ADOPT_PLACEMENT ? this.saved.get(job.name) : undefined;
    this.saved.delete(job.name);
    const startedAt = new Date().toISOString();
    let done!: (r: RunRecord) => void;
    const finished = new Promise<RunRecord>((r) => (done = r));
    const group: Group = {
      pipeline: job.name,
      placement_group_id: job.runId,
      status: 'running',
      target_count: takesIngressPushes(job.config.source, this.deps.sources) ? 'all' : '1',
      config_sha256: sha256(job.yaml),
      started_at: saved?.placement.started_at ?? startedAt,
      job,
      slots: [],
      stopping: false,
      dropped: zero(),
      used: new Map(),
      errors: [],
      resolve: done,
      dispatching: new Set(),
      saving: Promise.resolve(),
      ended: false,
    };
    if (saved) {
      const now = Date.now();
      for (const s of saved.placement.slots) {
        const running = saved.running.has(s.current_run_id);
        // A slot not found running is stale from the start: the first tick starts it again.
        group.slots.push({
          ...s,
          status: running ? 'running' : 'stale',
          lastReportAt: running ? now : 0,
          runStartedAt: now,
          closed: zero(),
          ended: !running,
          lostPasses: 0,
        });
      }
      for (const slot of group.slots) {
        this.byRun.set(slot.current_run_id, { group, slot });
        group.used.set(slot.worker_index, slot.restart_count);
      }
      job.log.info({ slots: group.slots.length, running: saved.running.size }, 'stream placement adopted where it runs (placed before this manager started)');
    } else {
      const failures: string[] = [];
      if (group.target_count === 'all') {
        // A slot on every worker, dispatched to all at once.
        const placed = await Promise.all(this.deps.workers.available().map((w) => this.dispatchNew(group, w, 0, failures)));
        group.slots.push(...placed.filter((slot) => slot !== undefined));
      } else {
        // One slot: offered to up to three workers in turn.
        const tried = new Set<string>();
        for (let i = 0; i < 3 && !group.slots.length; i++) {
          const w = this.deps.workers.pick(tried);
          if (!w) break;
          tried.add(w.id);
          const slot = await this.dispatchNew(group, w, 0, failures);
          if (slot) group.slots.push(slot);
        }
      }
      if (!group.slots.length) {
        // Each refused dispatch was counted as it happened.
        if (!failures.length) this.deps.metrics.dispatch.inc({ result: 'no_workers' });
        const why = failures.length
          ? `no worker took the stream: ${failures.join('; ')}`
          : 'no healthy worker to run the stream (GET /api/cluster/nodes shows the workers and their health)';
        this.unpersist(group);
        return this.record(group, 'failed', why, startedAt);
      }
    }
    this.groups.set(job.name, group);
    this.updateStatus(group);
    await job.started(group.slots[0]!.worker_id);
    await this.persist(group);
    const onAbort = () => void this.stopGroup(group);
    if (job.signal.aborted) onAbort();
    else job.signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await finished;
    } finally {
      job.signal.removeEventListener('abort', onAbort);
    }
  }

  /** A new slot on worker `w`: its first run dispatched; undefined when the worker did not take it. */
  private async dispatchNew(group: Group, w: PlacementWorker, restarts: number, failures: string[]): Promise<Slot | undefined> {
    const prefix = `${group.placement_group_id}-w${w.index}`;
    // A worker that had a slot of this group before (dropped, moved away) gets the next number.
    restarts = Math.max(restarts, (group.used.get(w.index) ?? -1) + 1);
    const slot: Slot = {
      worker_index: w.index,
      worker_id: w.id,
      worker_url: w.url,
      run_id_prefix: prefix,
      current_run_id: `${prefix}-${restarts}`,
      status: 'running',
      restart_count: restarts,
      lastReportAt: Date.now(),
      runStartedAt: Date.now(),
      closed: zero(),
      ended: false,
      lostPasses: 0,
    };
    const error = await this.startRun(group, slot);
    if (error === undefined) return slot;
    failures.push(`${w.id}: ${error}`);
    this.byRun.delete(slot.current_run_id);
    return undefined;
  }

  /** POSTs the slot's current run to its worker; an error message when the worker did not take it. */
  private async startRun(group: Group, slot: Slot): Promise<string | undefined> {
    group.used.set(slot.worker_index, Math.max(slot.restart_count, group.used.get(slot.worker_index) ?? -1));
    this.deps.workers.noteDispatched(slot.worker_id);
    this.byRun.set(slot.current_run_id, { group, slot });
    group.dispatching.add(slot);
    try {
      await this.persist(group);
      const r = await internalCall(
        'POST',
        `${slot.worker_url}/agent/run`,
        { run_id: slot.current_run_id, yaml: group.job.yaml, flush: false },
        this.deps.call(),
      );
      if (r.status >= 200 && r.status < 300 && r.body?.status !== 'finished') {
        this.deps.metrics.dispatch.inc({ result: 'accepted' });
        slot.lastReportAt = slot.runStartedAt = Date.now();
        slot.status = 'running';
        slot.ended = false;
        slot.report = undefined;
        return undefined;
      }
      this.deps.metrics.dispatch.inc({ result: 'dispatch_failed' });
      return detailOf(r);
    } catch (e) {
      this.deps.metrics.dispatch.inc({ result: 'dispatch_failed' });
      return errorMessage(e);
    } finally {
      group.dispatching.delete(slot);
    }
  }

  private stopRun(slot: Pick<PersistedSlot, 'worker_url' | 'worker_id' | 'current_run_id'>, pipeline: string): Promise<boolean> {
    return internalCall('POST', `${slot.worker_url}/agent/stop`, { run_id: slot.current_run_id }, this.deps.call()).then(
      (r) => r.status >= 200 && r.status < 300,
      (e: unknown) => {
        this.deps.log.warn(
          { pipeline, worker: slot.worker_id, run_id: slot.current_run_id, err: errorMessage(e) },
          'could not tell the worker to stop a slot run',
        );
        return false;
      },
    );
  }

  private async stopGroup(group: Group) {
    if (group.stopping) return;
    group.stopping = true;
    await Promise.all(
      group.slots.map(async (slot) => {
        if (slot.ended) return;
        // A worker that cannot be told has nothing to wait for (down, or the run is gone).
        if (!this.deps.workers.healthy(slot.worker_id) || !(await this.stopRun(slot, group.pipeline))) slot.ended = true;
      }),
    );
    this.finishIfStopped(group);
  }

  private finishIfStopped(group: Group) {
    if (group.stopping && group.slots.every((s) => s.ended || !this.deps.workers.healthy(s.worker_id))) this.finish(group, 'success');
  }

  private finish(group: Group, status: RunRecord['status'], error: string | null = null, gaveUp = false) {
    if (this.groups.get(group.pipeline) !== group) return;
    this.groups.delete(group.pipeline);
    for (const [runId, e] of this.byRun) if (e.group === group) this.byRun.delete(runId);
    for (const s of ['running', 'degraded']) this.deps.metrics.placementStatus.remove({ pipeline: group.pipeline, status: s });
    this.unpersist(group);
    const record = this.record(group, status, error, group.started_at);
    if (gaveUp) record.gave_up = true;
    group.resolve(record);
  }

  private record(group: Group, status: RunRecord['status'], error: string | null, startedAt: string): RunRecord {
    const c = this.totals(group);
    return {
      run_id: group.placement_group_id,
      pipeline: group.pipeline,
      node_id: group.slots[0]?.worker_id ?? this.deps.nodeId,
      status,
      started_at: startedAt,
      finished_at: new Date().toISOString(),
      ...runCounts(c),
      error,
      errors: group.errors.slice(-20),
    };
  }

  private totals(group: Group): Counters {
    const t = add(zero(), group.dropped);
    for (const s of group.slots) {
      add(t, s.closed);
      if (s.report && !s.ended) add(t, s.report);
    }
    return t;
  }

  /** The stage figures of the group's runs added up; undefined while no worker reported any (workers of an earlier release). */
  private stageTotals(group: Group): StageFigures | undefined {
    const list = [group.droppedStages];
    for (const s of group.slots) list.push(s.closedStages, s.report && !s.ended ? s.report.stages : undefined);
    return sumStages(list.filter((x) => x !== undefined));
  }

  // ---- what workers report ------------------------------------------------------------------

  /** A stats report: true (taken), false (a superseded slot run: 409), undefined (no slot run). */
  stats(body: StatsReport): boolean | undefined {
    const e = this.byRun.get(body.run_id);
    if (!e) return this.saved.get(body.pipeline)?.running.has(body.run_id) ? true : undefined; // adopted when its pipeline starts
    const { group, slot } = e;
    if (slot.current_run_id !== body.run_id || slot.ended) return false;
    slot.report = body;
    slot.lastReportAt = Date.now();
    slot.lostPasses = 0;
    if (slot.status === 'stale') {
      slot.status = 'running';
      this.deps.metrics.reconcileAction.inc({ action: 'slot_recovered' });
      this.updateStatus(group);
      void this.persist(group);
    }
    const t = this.totals(group);
    const stages = this.stageTotals(group);
    group.job.onProgress?.({ ...t, units: 0, ...(stages ? { stages } : {}) });
    return true;
  }

  /** A run-complete: 'resolved' (a slot run ended), 'duplicate', or undefined (no slot run). */
  complete(body: RunComplete): 'resolved' | 'duplicate' | undefined {
    const e = this.byRun.get(body.run_id);
    if (!e) return /^[0-9a-f-]{36}-w\d+-\d+$/.test(body.run_id) ? 'duplicate' : undefined; // a slot run of an ended group
    const { group, slot } = e;
    this.byRun.delete(body.run_id);
    if (slot.current_run_id !== body.run_id) return 'resolved'; // a superseded run's end: its counts were never the slot's
    add(slot.closed, { ...body, error_count: body.records_skipped });
    // Its final report (sent before the run-complete) holds its last figures.
    slot.closedStages = endedStages([slot.closedStages, slot.report?.stages]);
    slot.report = undefined;
    slot.ended = true;
    if (body.error) group.errors.push(`${slot.worker_id}: ${body.error}`);
    if (group.stopping) this.finishIfStopped(group);
    else if (body.gave_up) this.finish(group, 'failed', body.error ?? 'the source gave up reconnecting', true);
    else
      group.job.log.warn(
        { worker: slot.worker_id, run_id: body.run_id, status: body.status, err: body.error ?? undefined },
        'stream slot run ended; started again on its worker at the next reconciler tick',
      );
    return 'resolved';
  }

  /** The worker failed its health polls: its slots are stale until it is back or they move. */
  workerDown(id: string) {
    for (const group of this.groups.values()) {
      let changed = false;
      for (const slot of group.slots) {
        if (slot.worker_id !== id || slot.status === 'stale') continue;
        slot.status = 'stale';
        changed = true;
      }
      if (!changed) continue;
      this.updateStatus(group);
      void this.persist(group);
      if (group.stopping) this.finishIfStopped(group);
    }
  }

  /** The workers holding the pipeline's slots (a relayed tap, src/cluster/tap-relay.ts). */
  holders(pipeline: string): { id: string; url: string }[] {
    return (this.groups.get(pipeline)?.slots ?? []).map((s) => ({ id: s.worker_id, url: s.worker_url }));
  }

  /** Pipelines placed on each worker (GET /api/cluster/nodes' assigned_pipelines). */
  assigned(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const g of this.groups.values()) for (const s of g.slots) out.set(s.worker_id, [...(out.get(s.worker_id) ?? []), g.pipeline]);
    return out;
  }

  // ---- the reconciler ------------------------------------------------------------------------

  /** One reconciler pass over every group (never two at once). */
  tick(): Promise<void> {
    return (this.ticking ??= (async () => {
      for (const group of [...this.groups.values()]) {
        if (group.stopping) {
          this.finishIfStopped(group);
          continue;
        }
        try {
          if (await this.reconcile(group)) await this.persist(group);
        } catch (e) {
          group.job.log.error({ err: errorMessage(e) }, 'reconciler pass failed for the placement; tried again at the next tick');
        }
      }
    })().finally(() => (this.ticking = undefined)));
  }

  /** True when the group changed. */
  private async reconcile(group: Group): Promise<boolean> {
    const interval = this.deps.statsIntervalMs;
    const now = Date.now();
    let changed = false;
    const action = (a: string) => {
      this.deps.metrics.reconcileAction.inc({ action: a });
      changed = true;
    };
    for (const slot of [...group.slots]) {
      if (!this.deps.workers.healthy(slot.worker_id)) {
        slot.lostPasses++;
        if (slot.status !== 'stale') {
          slot.status = 'stale';
          changed = true;
        }
        // The pass that found it down, then two more of hysteresis: moved (or dropped) at the fourth.
        if (slot.lostPasses < LOST_PASSES_TO_MOVE) continue;
        if (group.target_count === 'all') {
          group.slots.splice(group.slots.indexOf(slot), 1);
          this.forgetSlot(group, slot);
          group.job.log.warn({ worker: slot.worker_id }, 'worker of a stream slot is gone; slot dropped (the stream runs on the other workers)');
          action('drop_slot');
          continue;
        }
        const w = this.deps.workers.pick(new Set([slot.worker_id]));
        if (!w) continue; // nowhere to go yet: degraded until a worker is healthy
        const failures: string[] = [];
        const moved = await this.dispatchNew(group, w, slot.restart_count + 1, failures);
        if (!moved) {
          group.job.log.warn({ worker: w.id, err: failures.join('; ') }, 'stream not re-dispatched; tried again at the next tick');
          continue;
        }
        group.slots.splice(group.slots.indexOf(slot), 1, moved);
        this.forgetSlot(group, slot);
        this.deps.metrics.redispatch.inc();
        group.job.log.warn({ from: slot.worker_id, to: w.id, run_id: moved.current_run_id }, 'stream re-dispatched: its worker is gone');
        action('redispatch');
        continue;
      }
      slot.lostPasses = 0;
      const stale = !slot.ended && now - slot.lastReportAt > 3 * interval;
      if (stale) {
        this.deps.metrics.statsMissed.inc();
        slot.status = 'stale';
        changed = true;
        // Whatever still runs of it is stopped first: a worker runs one run of a pipeline.
        await this.stopRun(slot, group.pipeline);
      }
      if (!stale && !slot.ended) continue;
      const previous = slot.current_run_id;
      slot.restart_count = Math.max(slot.restart_count, group.used.get(slot.worker_index) ?? -1) + 1;
      slot.current_run_id = `${slot.run_id_prefix}-${slot.restart_count}`;
      const error = await this.startRun(group, slot);
      if (error === undefined) {
        group.job.log.warn(
          { worker: slot.worker_id, previous, run_id: slot.current_run_id, reason: stale ? 'no stats' : 'run ended' },
          'stream slot started again on its worker',
        );
        action(stale ? 'restart_stale' : 'restart_ended');
      } else {
        this.byRun.delete(slot.current_run_id);
        slot.ended = true;
        slot.status = 'stale';
        group.job.log.warn({ worker: slot.worker_id, err: error }, 'stream slot not started again; tried again at the next tick');
        changed = true;
      }
    }
    if (group.target_count === 'all') {
      for (const w of this.deps.workers.available()) {
        if (group.slots.some((s) => s.worker_id === w.id)) continue;
        const slot = await this.dispatchNew(group, w, 0, []);
        if (!slot) continue;
        group.slots.push(slot);
        group.job.log.info({ worker: w.id, run_id: slot.current_run_id }, 'stream slot added on a worker that had none');
        action('add_slot');
      }
    }
    if (this.updateStatus(group)) changed = true;
    return changed;
  }

  private forgetSlot(group: Group, slot: Slot) {
    add(group.dropped, slot.closed);
    if (slot.report && !slot.ended) add(group.dropped, slot.report);
    group.droppedStages = endedStages([group.droppedStages, slot.closedStages, slot.report && !slot.ended ? slot.report.stages : undefined]);
    this.byRun.delete(slot.current_run_id);
    // The old worker may come back with the run: its stats are refused (409) and it stops.
  }

  /** Sets the group's status from its slots; true when it changed. */
  private updateStatus(group: Group): boolean {
    const status = group.slots.length && group.slots.every((s) => s.status === 'running') ? 'running' : 'degraded';
    for (const s of ['running', 'degraded'] as const) this.deps.metrics.placementStatus.set({ pipeline: group.pipeline, status: s }, s === status ? 1 : 0);
    if (status === group.status) return false;
    group.job.log[status === 'running' ? 'info' : 'warn'](
      { slots: group.slots.length, stale: group.slots.filter((s) => s.status === 'stale').length },
      `stream placement ${status}`,
    );
    group.status = status;
    return true;
  }

  /** Saves the group's row, with the slots being dispatched, after any save of it in progress; a group that ended is not saved again. */
  private persist(group: Group): Promise<void> {
    return (group.saving = group.saving.then(async () => {
      if (group.ended) return;
      // Taken now, not when asked: the state written last is the latest.
      const slots = [...group.slots, ...[...group.dispatching].filter((s) => !group.slots.includes(s))].map(persistedSlot);
      const { pipeline, placement_group_id, status, target_count, config_sha256, started_at } = group;
      await this.deps.store
        .save({ pipeline, placement_group_id, status, target_count, config_sha256, started_at, slots })
        .catch((e: unknown) => group.job.log.warn({ err: errorMessage(e) }, 'placement not saved; saved again at its next change'));
    }));
  }

  /** The group ended: its row is removed once the saves in progress are done. */
  private unpersist(group: Group) {
    group.ended = true;
    group.saving = group.saving.then(() =>
      this.deps.store
        .remove(group.pipeline, group.placement_group_id)
        .catch((e: unknown) => group.job.log.warn({ err: errorMessage(e) }, 'ended placement not removed from the database')),
    );
  }

  // ---- views -------------------------------------------------------------------------------

  /** GET /api/pipelines/{name}/placement (and an element of GET /api/cluster/streams). */
  view(pipeline: string) {
    const group = this.groups.get(pipeline);
    if (!group) return undefined;
    const now = Date.now();
    const slots = group.slots.map((s) => {
      const c = add(add(zero(), s.closed), s.report && !s.ended ? s.report : {});
      const stale = s.status === 'stale';
      const uptime = Math.max(0.001, (now - s.runStartedAt) / 1000);
      const cur = s.report && !s.ended ? s.report : undefined;
      const rate = (n: unknown) => (stale ? 0 : Number(n ?? 0) / uptime);
      return {
        ...persistedSlot(s),
        stats: {
          schedule_type: 'stream',
          timestamp: new Date(s.lastReportAt || now).toISOString(),
          uptime_seconds: uptime,
          ...c,
          errors_last_window: cur?.errors_last_window ?? [],
          stale,
          records_in_per_sec: rate(cur?.records_in),
          records_out_per_sec: rate(cur?.records_out),
          bytes_in_per_sec: rate(cur?.bytes_in),
          bytes_out_per_sec: rate(cur?.bytes_out),
        },
      };
    });
    const sum = (k: 'records_in_per_sec' | 'records_out_per_sec' | 'bytes_in_per_sec' | 'bytes_out_per_sec') => slots.reduce((n, s) => n + s.stats[k], 0);
    return {
      pipeline_name: group.pipeline,
      placement_group_id: group.placement_group_id,
      status: group.status,
      target_count: group.target_count,
      started_at: group.started_at,
      slot_count: slots.length,
      active_slots: slots.filter((s) => s.status === 'running').length,
      ...this.totals(group),
      records_in_per_sec: sum('records_in_per_sec'),
      records_out_per_sec: sum('records_out_per_sec'),
      bytes_in_per_sec: sum('bytes_in_per_sec'),
      bytes_out_per_sec: sum('bytes_out_per_sec'),
      slots,
    };
  }

  views() {
    return [...this.groups.keys()].map((p) => this.view(p)!);
  }
}
