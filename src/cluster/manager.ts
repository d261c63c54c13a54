// Manager mode (SVC_MODE=manager): the workers (discovery and health polls), the executor that
// dispatches runs to them, and the durable queue of manual runs, wired together. The lifecycle
// stays the pipeline manager's.
import type { ManagerDeps, PipelineManager, RunAdmission } from '../pipelines/pipeline-manager.js';
import { createHash } from 'node:crypto';
import { internalCall } from './internal-http.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';
import type { Settings } from '../settings.js';
import type { SqlStore } from '../store/index.js';
import { workerDiscovery } from './discovery.js';
import { clusterMetrics } from './metrics.js';
import { RemoteExecutor } from './remote-executor.js';
import { SqlRunQueue } from './run-queue.js';
import { WorkerPool, type ClusterNode } from './worker-pool.js';
import { PipelineServices } from './kubernetes.js';
import type { Leadership } from './leadership.js';
import type { PipelineConfig } from '../config/pipeline-schema.js';
import type { RunRecord } from '../engine/run-record.js';
import { SqlPlacementStore } from './placement-store.js';
import { StreamPlacements, type PlacementView } from './placements.js';
import { TapRelay } from './tap-relay.js';
import { ShardedRuns, type ShardView } from './shards.js';
import type { TapFeed } from '../engine/tap-routes.js';

/** What the API is given of the cluster in manager mode (ApiDeps.cluster). */
export interface ClusterDeps {
  executor: RemoteExecutor;
  /** Whether this manager leads now, whether it is ready to serve (pipelines loaded), who holds the lease. */
  leader(): { leader: boolean; ready: boolean; holder?: string; epoch?: number };
  /** The workers as GET /api/cluster/nodes lists them. */
  nodes(): ClusterNode[];
  /** A stream's placement (GET /api/pipelines/{name}/placement); undefined when it has none. */
  placement(pipeline: string): PlacementView | undefined;
  /** Every active placement (GET /api/cluster/streams). */
  streams(): PlacementView[];
  /** Where each target of a sharded batch pipeline is polled (GET /api/pipelines/{name}/shards). */
  shards(config: PipelineConfig, q?: string, limit?: number): Promise<ShardView>;
  /** A tap on the pipeline: the workers' taps relayed (GET /api/pipelines/{name}/tap; src/cluster/tap-relay.ts). */
  tapFeed(pipeline: string): TapFeed;
}

export interface ManagerCluster extends ClusterDeps {
  admission: RunAdmission;
  /** Runs the workers had at start, handed to their pipelines (the pipeline manager's `adoption`). */
  adoption: NonNullable<ManagerDeps['adoption']>;
  /** Keeps each pipeline's own Kubernetes Service (pipeline field `kubernetes`) as its config says. */
  onConfig(name: string, config: PipelineConfig | undefined): void;
  /** The pipeline manager whose queued runs this cluster dispatches (set once it exists). */
  attach(manager: PipelineManager): void;
  /** The first health poll (before pipelines are restored: streams due at start find workers). */
  start(): Promise<void>;
  /** After the pipelines are restored: queued runs found again, then the queue's ticks. */
  startQueue(): Promise<void>;
  stop(): Promise<void>;
}

export function startManagerCluster(opts: { settings: Settings; metrics: Metrics; log: Logger; store: SqlStore; leadership: Leadership }): ManagerCluster {
  const { settings, log } = opts;
  const m = clusterMetrics(opts.metrics.registry);
  const apiKey = settings.API_KEY || undefined;
  const { leadership } = opts;
  // Dispatches carry the lease's epoch (and are not sent once this manager may have lost it); health
  // polls are not fenced, so a standby's or a stepping-down manager's poll says its last epoch.
  const epoch = () => leadership.epoch();
  const pollEpoch = () => leadership.info()?.epoch ?? 0;
  const discovery = workerDiscovery(settings);
  if (discovery.mode === 'none')
    log.warn('manager mode without workers: set SVC_WORKER_URLS, or SVC_WORKER_REPLICAS with SVC_WORKER_SERVICE and SVC_WORKER_NAMESPACE');
  const queue = new SqlRunQueue(opts.store.db, opts.store.engine);
  let manager: PipelineManager | undefined;
  let drainTimer: NodeJS.Timeout | undefined;
  let draining: Promise<void> | undefined;
  let stopped = false;
  let active = false;

  const pool = new WorkerPool({
    discovery,
    intervalMs: settings.WORKER_HEALTH_INTERVAL * 1000,
    apiKey,
    epoch: pollEpoch,
    log,
    onChange: (c) => {
      m.workerHealthy.set(c.healthy);
      m.workerTotal.set(c.total);
      if (c.change === 'down' || c.change === 'removed') executor.workerDown(c.worker.id, c.worker.lastError ?? c.change);
      const level = c.change === 'down' ? 'warn' : 'info';
      log[level](
        { worker: c.worker.id, url: c.worker.url, change: c.change, healthy: c.healthy, total: c.total, err: c.worker.lastError ?? undefined },
        `worker ${c.change}`,
      );
      if (c.change === 'up') void drain(); // capacity is back: queued runs go now, not at the next tick
    },
  });
  const hasCapacity = () => pool.healthy().some((w) => !w.draining);
  const indexed = (w: { id: string; url: string | null }) => ({ id: w.id, url: w.url!, index: pool.workers().findIndex((x) => x.id === w.id) });
  const placements = new StreamPlacements({
    workers: {
      available: () =>
        pool
          .healthy()
          .filter((w) => w.url && !w.draining)
          .map(indexed),
      pick: (exclude) => {
        const w = pool.pick(exclude);
        return w?.url ? indexed(w) : undefined;
      },
      healthy: (id) => pool.get(id)?.ok ?? false,
      noteDispatched: (id) => pool.noteDispatched(id),
    },
    store: new SqlPlacementStore(opts.store.db),
    metrics: m,
    log,
    call: () => ({ apiKey, epoch: epoch() }),
    statsIntervalMs: settings.STATS_INTERVAL * 1000,
    singlePlacement: settings.STREAM_SINGLE_PLACEMENT,
    nodeId: settings.NODE_ID,
  });
  const shards = new ShardedRuns({
    workers: {
      available: () =>
        pool
          .healthy()
          .filter((w) => w.url && !w.draining)
          .map((w) => ({ id: w.id, url: w.url! })),
      find: (id) => {
        const w = pool.get(id);
        return w?.url ? { id: w.id, url: w.url } : undefined;
      },
      healthy: (id) => pool.get(id)?.ok ?? false,
      noteDispatched: (id) => pool.noteDispatched(id),
    },
    store: opts.store.runShards,
    metrics: m,
    log,
    call: () => ({ apiKey, epoch: epoch() }),
    epoch: () => leadership.info()?.epoch ?? 0,
    leaseMs: settings.SHARD_LEASE_SECONDS * 1000,
    nodeId: settings.NODE_ID,
  });
  const executor = new RemoteExecutor({
    placements,
    shards,
    workers: {
      pick: (exclude) => {
        const w = pool.pick(exclude);
        return w?.url ? { id: w.id, url: w.url } : undefined;
      },
      noteDispatched: (id) => pool.noteDispatched(id),
      find: (id) => {
        const w = pool.get(id);
        return w?.url ? { id: w.id, url: w.url } : undefined;
      },
    },
    finished: async (runId) => {
      const r = await opts.store.runs.get(runId);
      if (!r || r.status === 'running') return undefined;
      const { pipeline_version: _v, ...record } = r;
      return record as RunRecord;
    },
    metrics: m,
    log,
    call: () => ({ apiKey, epoch: epoch() }),
    nodeId: settings.NODE_ID,
  });

  const taps = new TapRelay({
    holders: (pipeline) => executor.holders(pipeline),
    exists: (pipeline) => manager?.has(pipeline) ?? false,
    call: () => ({ apiKey, epoch: epoch() }),
    log,
  });

  // Per-pipeline Services, applied one change at a time in the order the configs changed.
  const services = new PipelineServices({ namespace: settings.POD_NAMESPACE || undefined, ingressPort: settings.WORKER_INGRESS_PORT, log });
  const withService = new Set<string>();
  let serviceChain: Promise<void> = Promise.resolve();
  const noteService = (name: string, state: { name?: string; error?: string } | undefined) => {
    const p = manager?.has(name) ? manager.get(name) : undefined;
    if (p) p.service = state;
  };
  const onConfig = (name: string, config: PipelineConfig | undefined) => {
    if (!config?.kubernetes?.enabled && !withService.has(name)) return;
    serviceChain = serviceChain.then(async () => {
      if (!config) {
        const r = await services.remove(name);
        if (!r.ok) log.warn({ pipeline: name, err: r.error }, 'kubernetes service of a removed pipeline not deleted');
        withService.delete(name);
        return;
      }
      const r = await services.apply(config);
      if (r.ok && r.service) {
        withService.add(name);
        noteService(name, { name: r.service.metadata?.name });
      } else if (r.ok) {
        withService.delete(name);
        noteService(name, undefined);
      } else {
        noteService(name, { error: r.error });
        log.warn({ pipeline: name, err: r.error }, 'kubernetes service not applied');
      }
    });
  };

  // Runs the workers have that no process of this manager placed (it restarted, or took over as the
  // leader): found once at start, and adopted where they run when their pipeline starts, if the
  // YAML they run is the pipeline's (config_sha256). Any other is stopped: never two of one.
  const adoptable = new Map<string, { runId: string; workerId: string; url: string; sha: string }>();
  const stopRun = (a: { runId: string; workerId: string; url: string }, pipeline: string, why: string) => {
    log.warn({ pipeline, run_id: a.runId, worker: a.workerId }, `run found on a worker is stopped: ${why}`);
    Promise.resolve()
      .then(() => internalCall('POST', `${a.url}/agent/stop`, { run_id: a.runId }, { apiKey, epoch: epoch() }))
      .catch((e: unknown) => log.warn({ run_id: a.runId, err: errorMessage(e) }, 'could not stop a run found on a worker'));
  };
  const collectAdoptable = async () => {
    await placements.load();
    await shards.load();
    for (const w of pool.healthy()) {
      try {
        const r = await internalCall('GET', `${w.url}/agent/status`, undefined, { apiKey, epoch: epoch() });
        if (r.status !== 200 || !Array.isArray(r.body?.runs)) continue;
        for (const run of r.body.runs as { run_id: string; pipeline: string; config_sha256: string; shard?: unknown }[]) {
          // Shards belong to their sharded run, adopted from its rows (src/cluster/shards.ts).
          if (shards.isShard(run)) continue;
          // Slot runs of a saved stream placement are the placement's to adopt (or stop).
          const slot = placements.found(run.pipeline, run.run_id);
          if (slot === 'slot') continue;
          if (slot === 'superseded') {
            stopRun({ runId: run.run_id, workerId: w.id, url: w.url! }, run.pipeline, 'a slot run its placement replaced');
            continue;
          }
          const found = { runId: run.run_id, workerId: w.id, url: w.url!, sha: run.config_sha256 };
          const other = adoptable.get(run.pipeline);
          if (other) stopRun(other, run.pipeline, 'another run of its pipeline runs too');
          adoptable.set(run.pipeline, found);
        }
      } catch (e) {
        log.warn({ worker: w.id, err: errorMessage(e) }, 'runs of a worker not read at start');
      }
    }
    if (adoptable.size) log.info({ runs: adoptable.size }, 'runs found on workers: adopted as their pipelines start');
  };
  const adoption: ManagerCluster['adoption'] = {
    take(pipeline, yaml) {
      const placed = placements.take(pipeline, yaml);
      if (placed) return placed;
      const sharded = shards.take(pipeline);
      if (sharded) return sharded;
      const a = adoptable.get(pipeline);
      if (!a) return undefined;
      adoptable.delete(pipeline);
      if (a.sha === createHash('sha256').update(yaml).digest('hex')) return { runId: a.runId, nodeId: a.workerId };
      stopRun(a, pipeline, 'its pipeline changed since (config_sha256 differs); started again');
      return undefined;
    },
  };

  /** One pass: expire what waited too long, then dispatch the oldest runs while a worker can take them. */
  const drainOnce = async () => {
    const mgr = manager;
    if (!mgr) return;
    const ttl = settings.QUEUE_TTL_SECONDS;
    await queue.expire(async (q, now) => {
      if (mgr.has(q.pipeline)) await mgr.expireQueued(q.pipeline, q.run_id, q.enqueued_at, now, ttl);
      m.queueExpired.inc();
      log.warn({ pipeline: q.pipeline, run_id: q.run_id, enqueued_at: q.enqueued_at }, 'queued run expired: recorded as failed');
    });
    for (;;) {
      if (stopped) return;
      if (!hasCapacity()) {
        if ((await queue.list()).length) m.queueDrainResult.inc({ result: 'no_capacity' });
        break;
      }
      const r = await queue.claim(async (q) => {
        const placed = await mgr.launchQueued(q.pipeline, q.run_id);
        if (placed) {
          m.queueDispatched.inc();
          m.queueWait.observe(Math.max(0, (Date.now() - Date.parse(q.enqueued_at)) / 1000));
          log.info({ pipeline: q.pipeline, run_id: q.run_id }, 'queued run dispatched');
        }
        return placed;
      });
      if (!r) {
        m.queueDrainResult.inc({ result: 'empty' });
        break;
      }
      m.queueDrainResult.inc({ result: r.taken ? 'dispatched' : 'busy' });
      if (!r.taken) break; // its pipeline is busy or no worker took it: the next tick tries again
    }
    m.queueDepth.set((await queue.list()).length);
  };
  const drain = () =>
    (draining ??= drainOnce()
      .catch((e: unknown) => {
        m.queueDrainResult.inc({ result: 'error' });
        log.error({ err: errorMessage(e) }, 'queue pass failed; retried at the next tick');
      })
      .finally(() => (draining = undefined)));

  const admission: RunAdmission = {
    hasCapacity,
    queueing: settings.QUEUE_MANUAL_RUNS,
    async enqueue(pipeline, runId, flush) {
      const q = await queue.enqueue({ run_id: runId, pipeline, flush, ttlSeconds: settings.QUEUE_TTL_SECONDS });
      m.queueEnqueued.inc();
      m.queueDepth.inc();
      log.info({ pipeline, run_id: runId, expires_at: q.expires_at }, 'no healthy worker: manual run queued');
      return q;
    },
  };

  return {
    executor,
    admission,
    // Ready once the pipelines are loaded and the queue runs (a new leader is not ready before).
    leader: () => ({
      leader: leadership.isLeader(),
      ready: active && leadership.isLeader(),
      holder: leadership.info()?.holder,
      epoch: leadership.info()?.epoch,
    }),
    nodes: () => {
      const assigned = executor.assigned();
      for (const w of pool.workers()) pool.setAssigned(w.id, assigned.get(w.id) ?? []);
      return pool.nodes().workers;
    },
    placement: (pipeline) => placements.view(pipeline),
    streams: () => placements.views(),
    tapFeed: (pipeline) => taps.feed(pipeline),
    shards: (config, q, limit) => shards.view(config, q, limit),
    attach: (mgr) => (manager = mgr),
    onConfig,
    adoption,
    async start() {
      await pool.start();
      await collectAdoptable();
    },
    async startQueue() {
      // Batch runs in progress on workers are followed; runs of pipelines that are gone or stopped (desired state) are stopped.
      manager?.adoptRunning();
      for (const [pipeline, a] of adoptable) stopRun(a, pipeline, manager?.has(pipeline) ? 'its pipeline is stopped' : 'its pipeline is not registered');
      adoptable.clear();
      placements.forgetUntaken();
      void shards.forgetUntaken().catch((e: unknown) => log.warn({ err: errorMessage(e) }, 'sharded runs left by a previous manager not closed'));
      shards.start();
      // Services of pipelines deleted while no manager ran (orphans) go, when svc can reach a cluster.
      if (process.env.KUBERNETES_SERVICE_HOST || process.env.KUBECONFIG) {
        serviceChain = serviceChain.then(async () => {
          const r = await services.reconcile(manager?.list().map((p) => p.config) ?? []);
          if (r.error) log.warn({ err: r.error }, 'kubernetes services not reconciled');
          for (const [name, res] of Object.entries(r.results)) {
            if (res.ok && res.service) withService.add(name);
            noteService(name, res.ok ? (res.service ? { name: res.service.metadata?.name } : undefined) : { error: res.error });
          }
          if (r.removed.length) log.info({ services: r.removed }, 'kubernetes services of removed pipelines deleted');
        });
      }
      const waiting = await queue.list();
      for (const q of waiting) manager?.markQueued(q.pipeline, q.run_id);
      m.queueDepth.set(waiting.length);
      if (waiting.length) log.info({ runs: waiting.length }, 'queued runs found: dispatched when a worker is healthy');
      // The reconciler's tick (doc 2): min(SVC_STATS_INTERVAL, 10) seconds.
      drainTimer = setInterval(() => {
        void drain();
        void placements.tick();
      }, Math.min(settings.STATS_INTERVAL, 10) * 1000);
      drainTimer.unref();
      void drain();
      active = true;
    },
    async stop() {
      stopped = true;
      await serviceChain;
      clearInterval(drainTimer);
      shards.stop();
      await draining;
      await pool.stop();
    },
  };
}
