// The pipeline manager's scheduling: interval timers and cron fire batch runs (never two at once),
// a stream's schedule is its supervised run. In manager mode a fire is claimed in the database
// first, under a run id two managers give the same tick (fireRunId).
import { createHash } from 'node:crypto';
import { Cron } from 'croner';
import { errorMessage } from '../core/errors.js';
import type { ActiveRun, Managed, ManagerDeps } from './types.js';

/** The run id of a scheduled fire: the same for every manager that fires this pipeline at this time. */
export function fireRunId(pipeline: string, at: Date): string {
  const h = createHash('sha256').update(`${pipeline}\n${at.toISOString()}`).digest('hex');
  // UUID-shaped (version nibble 8: custom), like the other run ids.
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** What the scheduler asks of the registry and the run supervisor. */
export interface SchedulerHooks {
  /** The registered pipelines (nextRuns). */
  pipelines(): Iterable<Managed>;
  /** False once `p` was replaced or deleted. */
  isCurrent(p: Managed): boolean;
  /** True once the manager shuts down: nothing is armed or fired any more. */
  closing(): boolean;
  launch(p: Managed, opts?: { runId?: string }): ActiveRun;
  /** Records a claimed tick that was not dispatched as a run that never ran. */
  abandon(pipeline: string, runId: string, error: string): void;
}

export class Scheduler {
  constructor(
    private readonly deps: ManagerDeps,
    private readonly hooks: SchedulerHooks,
  ) {}

  /** Next fire times for the daemon status. */
  nextRuns(): { pipeline: string; next_run: string }[] {
    const out: { pipeline: string; next_run: string }[] = [];
    for (const p of this.hooks.pipelines()) {
      const next = p.cron?.nextRun() ?? (p.timer && p.nextAt !== undefined ? new Date(p.nextAt) : undefined);
      if (next) out.push({ pipeline: p.name, next_run: next.toISOString() });
    }
    return out;
  }

  /** Arms the schedule: timers for interval/cron, a supervised run for streams. */
  schedule(p: Managed) {
    if (this.hooks.closing()) return;
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
        if (!p.active) this.hooks.launch(p);
        break;
      case 'manual':
        p.status = p.active ? 'running' : 'scheduled';
        break;
    }
  }

  disarm(p: Managed) {
    if (p.timer) clearInterval(p.timer);
    p.cron?.stop();
    if (p.restartTimer) clearTimeout(p.restartTimer);
    p.timer = undefined;
    p.nextAt = undefined;
    p.cron = undefined;
    p.restartTimer = undefined;
  }

  private fire(p: Managed, at: Date) {
    if (p.active || p.claiming || p.halted || this.hooks.closing()) {
      if (p.active) this.deps.log.info({ pipeline: p.name, run_id: p.active.runId }, 'schedule fired during a run; skipped (no overlapping runs)');
      return;
    }
    if (!this.deps.claimFires) {
      this.hooks.launch(p);
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
          if (!claimed)
            this.deps.log.info({ pipeline: p.name, run_id: runId, tick: tick.toISOString() }, 'this tick was run already (by another manager); skipped');
          else if (this.hooks.isCurrent(p) && !p.active && !p.halted && !this.hooks.closing()) this.hooks.launch(p, { runId });
          else this.hooks.abandon(p.name, runId, 'stopped before the scheduled run was dispatched');
        },
        (e: unknown) => this.deps.log.error({ pipeline: p.name, err: errorMessage(e) }, 'scheduled run not claimed (database unavailable); skipped'),
      )
      .finally(() => (p.claiming = false));
  }
}
