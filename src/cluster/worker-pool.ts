// The manager's view of its workers: polls each agent's GET /agent/health (every 10 s by spec) and
// marks a worker down after 2 consecutive failed polls, up again after one good poll. A failed poll
// is a non-2xx answer, a timeout, a body that is not the agent's health shape, `ok: false`, or a
// name that does not resolve. A worker starts unknown (not healthy): its first good poll brings it
// up; it is announced down once, when it reaches the failure count, whether it was up or unknown.
//
// Transitions (added, removed, up, down) go to onChange with the counts after them: the caller
// logs them and sets the gauges. The pool itself logs only what onChange cannot see.
//
// pick() gives batch runs to the least-loaded healthy worker: its active_runs at the last poll plus
// the runs dispatched to it since that poll was sent (so a burst does not all land on one worker
// between two polls), round-robin among ties in discovery order.
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { errorMessage } from '../core/errors.js';
import { silentLogger, type Logger } from '../observability/log.js';
import type { WorkerDiscovery, WorkerEndpoint } from './discovery.js';

/** The body of the agent's GET /agent/health. */
export const AgentHealth = Type.Object({
  ok: Type.Boolean(),
  active_runs: Type.Integer({ minimum: 0 }),
  running_pipelines: Type.Array(Type.String()),
  ingress_up: Type.Boolean(),
  /** Shutting down: alive and finishing its runs, but it takes no new one. */
  draining: Type.Optional(Type.Boolean()),
});
export type AgentHealth = Static<typeof AgentHealth>;

export interface WorkerState {
  /** Stable id from discovery (configured URL or pod DNS name). */
  id: string;
  /** Agent base URL; the last one that resolved while the name does not (null if it never did). */
  url: string | null;
  ok: boolean;
  consecutiveFailures: number;
  /** From the last good poll. */
  active_runs: number;
  running_pipelines: string[];
  ingress_up: boolean | null;
  /** The agent is shutting down: pick() passes it over. */
  draining: boolean;
  /** Runs dispatched to it since its last good poll was sent (noteDispatched). */
  dispatched: number;
  /** Pipelines the caller placed on it (setAssigned). */
  assigned: string[];
  lastError: string | null;
}

/** Element of `workers` in GET /api/cluster/nodes. */
export interface ClusterNode {
  url: string;
  ok: boolean;
  active_runs: number;
  running_pipelines: string[];
  assigned_pipelines: string[];
}

export interface WorkerChange {
  change: 'added' | 'removed' | 'up' | 'down';
  worker: WorkerState;
  /** Counts after the change (svc_mgr_worker_healthy, svc_mgr_worker_total). */
  healthy: number;
  total: number;
}

export interface WorkerPoolOptions {
  discovery: Pick<WorkerDiscovery, 'list'>;
  intervalMs?: number;
  failuresToDown?: number;
  /** Per health request, body included. */
  timeoutMs?: number;
  /** SVC_API_KEY: sent as X-API-Key when set. */
  apiKey?: string;
  /** The manager's leadership epoch, sent as X-Svc-Epoch. */
  epoch: () => number;
  /** For discovery failures; transitions are the caller's to log (onChange). */
  log?: Logger;
  onChange?: (change: WorkerChange) => void;
}

interface Worker extends Omit<WorkerState, 'ok' | 'assigned'> {
  status: 'unknown' | 'up' | 'down';
}

const causeOf = (e: unknown): string => {
  if (e instanceof Error && e.name === 'TimeoutError') return 'health check timed out';
  // fetch reports "fetch failed" and puts the reason (ECONNREFUSED...) in cause.
  const cause = e instanceof Error ? (e as { cause?: unknown }).cause : undefined;
  return cause ? errorMessage(cause) : errorMessage(e);
};

export class WorkerPool {
  private readonly workersById = new Map<string, Worker>();
  private readonly assignedById = new Map<string, string[]>();
  private readonly intervalMs: number;
  private readonly failuresToDown: number;
  private readonly timeoutMs: number;
  private readonly log: Logger;
  private round: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private first: Promise<void> | undefined;
  /** Aborts the health requests in flight when the pool stops. */
  private stopping = new AbortController();
  private lastPicked: string | undefined;

  constructor(private readonly opts: WorkerPoolOptions) {
    this.intervalMs = opts.intervalMs ?? 10_000;
    this.failuresToDown = opts.failuresToDown ?? 2;
    this.timeoutMs = opts.timeoutMs ?? 5_000;
    this.log = opts.log ?? silentLogger;
  }

  /** Starts polling; resolves once the first (immediate) poll is done. */
  start(): Promise<void> {
    if (this.running) return this.first!;
    this.running = true;
    this.stopping = new AbortController();
    this.first = this.tick();
    return this.first;
  }

  /** Stops polling; requests in flight are aborted and their results dropped. */
  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.stopping.abort();
    await this.round;
  }

  /** One poll of every worker now, after any poll in progress (rounds never overlap). */
  pollNow(): Promise<void> {
    this.round = this.round.then(() => this.pollRound());
    return this.round;
  }

  workers(): WorkerState[] {
    return [...this.workersById.values()].map((w) => this.view(w));
  }

  get(id: string): WorkerState | undefined {
    const w = this.workersById.get(id);
    return w && this.view(w);
  }

  healthy(): WorkerState[] {
    return this.workers().filter((w) => w.ok);
  }

  /**
   * The least-loaded healthy worker not in `exclude` (e.g. the workers a dispatch already tried),
   * round-robin among ties; undefined when there is none.
   */
  pick(exclude?: ReadonlySet<string>): WorkerState | undefined {
    const healthy = [...this.workersById.values()].filter((w) => w.status === 'up' && w.url && !w.draining && !exclude?.has(w.id));
    if (!healthy.length) return undefined;
    const load = (w: Worker) => w.active_runs + w.dispatched;
    const least = Math.min(...healthy.map(load));
    const ties = healthy.filter((w) => load(w) === least);
    // The next tie after the one picked last, in discovery order.
    const order = [...this.workersById.keys()];
    const last = this.lastPicked === undefined ? -1 : order.indexOf(this.lastPicked);
    const chosen = ties.find((w) => order.indexOf(w.id) > last) ?? ties[0]!;
    this.lastPicked = chosen.id;
    return this.view(chosen);
  }

  /** A run was dispatched to `id`: counted in its load until a poll sent afterwards reports it. */
  noteDispatched(id: string): void {
    const w = this.workersById.get(id);
    if (w) w.dispatched++;
  }

  /** The pipelines the caller placed on worker `id` (kept even before discovery lists it). */
  setAssigned(id: string, pipelines: Iterable<string>): void {
    this.assignedById.set(id, [...pipelines]);
  }

  /** The body of GET /api/cluster/nodes. */
  nodes(): { mode: 'manager'; workers: ClusterNode[] } {
    return {
      mode: 'manager',
      workers: this.workers().map((w) => ({
        url: w.url ?? w.id,
        ok: w.ok,
        active_runs: w.active_runs,
        running_pipelines: w.running_pipelines,
        assigned_pipelines: w.assigned,
      })),
    };
  }

  private view(w: Worker): WorkerState {
    const { status, ...rest } = w;
    return { ...rest, ok: status === 'up', running_pipelines: [...w.running_pipelines], assigned: [...(this.assignedById.get(w.id) ?? [])] };
  }

  private async tick(): Promise<void> {
    const started = Date.now();
    await this.pollNow();
    if (!this.running) return;
    // Cadence from the start of a round: a slow round does not stretch the interval.
    this.timer = setTimeout(() => void this.tick(), Math.max(0, this.intervalMs - (Date.now() - started)));
    this.timer.unref();
  }

  private async pollRound(): Promise<void> {
    let endpoints: WorkerEndpoint[];
    try {
      endpoints = await this.opts.discovery.list();
    } catch (e) {
      // Nothing is known about any worker this round: a failed poll for each.
      this.log.warn({ err: errorMessage(e) }, 'worker discovery failed');
      endpoints = [...this.workersById.values()].map((w) => ({ id: w.id, url: null, error: `discovery failed: ${errorMessage(e)}` }));
    }
    this.reconcile(endpoints);
    const signal = this.stopping.signal;
    await Promise.all(endpoints.map((e) => this.pollOne(this.workersById.get(e.id)!, e, signal)));
  }

  /** Adds the workers discovery lists for the first time, drops those it no longer lists. */
  private reconcile(endpoints: WorkerEndpoint[]) {
    const listed = new Set(endpoints.map((e) => e.id));
    for (const [id, w] of this.workersById) {
      if (listed.has(id)) continue;
      this.workersById.delete(id);
      this.emit('removed', w);
    }
    for (const e of endpoints) {
      if (this.workersById.has(e.id)) continue;
      const w: Worker = {
        id: e.id,
        url: e.url,
        status: 'unknown',
        consecutiveFailures: 0,
        active_runs: 0,
        running_pipelines: [],
        ingress_up: null,
        draining: false,
        dispatched: 0,
        lastError: null,
      };
      this.workersById.set(e.id, w);
      this.emit('added', w);
    }
  }

  private async pollOne(w: Worker, e: WorkerEndpoint, stopSignal: AbortSignal): Promise<void> {
    // A name that does not resolve is not polled at its old address: that IP may be another pod's now.
    if (!e.url) return this.failed(w, e.error ?? 'no address', stopSignal);
    w.url = e.url;
    const dispatchedBefore = w.dispatched;
    let health: AgentHealth;
    try {
      const headers: Record<string, string> = { 'X-Svc-Epoch': String(this.opts.epoch()) };
      if (this.opts.apiKey) headers['X-API-Key'] = this.opts.apiKey;
      const res = await fetch(`${e.url}/agent/health`, { headers, signal: AbortSignal.any([AbortSignal.timeout(this.timeoutMs), stopSignal]) });
      if (!res.ok) {
        await res.body?.cancel();
        return this.failed(w, `health check answered HTTP ${res.status}`, stopSignal);
      }
      const body: unknown = await res.json();
      if (!Value.Check(AgentHealth, body)) return this.failed(w, 'health check answered a body that is not the agent health shape', stopSignal);
      health = body;
    } catch (err) {
      return this.failed(w, causeOf(err), stopSignal);
    }
    if (stopSignal.aborted) return;
    w.active_runs = health.active_runs;
    w.running_pipelines = health.running_pipelines;
    w.ingress_up = health.ingress_up;
    w.draining = health.draining === true;
    // The runs dispatched while this poll was in flight may be missing from its active_runs.
    w.dispatched = Math.max(0, w.dispatched - dispatchedBefore);
    if (!health.ok) return this.failed(w, health.ingress_up ? 'agent reports not ok' : 'agent reports not ok (ingress down)', stopSignal);
    w.consecutiveFailures = 0;
    w.lastError = null;
    if (w.status !== 'up') {
      w.status = 'up';
      this.emit('up', w);
    }
  }

  private failed(w: Worker, reason: string, stopSignal: AbortSignal) {
    if (stopSignal.aborted) return; // aborted by stop(): says nothing about the worker
    w.consecutiveFailures++;
    w.lastError = reason;
    if (w.consecutiveFailures >= this.failuresToDown && w.status !== 'down') {
      w.status = 'down';
      this.emit('down', w);
    }
  }

  private emit(change: WorkerChange['change'], w: Worker) {
    if (!this.opts.onChange) return;
    let healthy = 0;
    for (const x of this.workersById.values()) if (x.status === 'up') healthy++;
    try {
      this.opts.onChange({ change, worker: this.view(w), healthy, total: this.workersById.size });
    } catch (err) {
      this.log.error({ err: errorMessage(err) }, 'worker pool onChange failed');
    }
  }
}
