// Manager mode (SVC_MODE=manager): the workers (discovery and health polls) and the executor that
// dispatches runs to them, wired together. The lifecycle stays the pipeline manager's.
import type { ClusterDeps } from '../api/deps.js';
import type { Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';
import type { Settings } from '../settings.js';
import { workerDiscovery } from './discovery.js';
import { clusterMetrics } from './metrics.js';
import { RemoteExecutor } from './remote-executor.js';
import { WorkerPool } from './worker-pool.js';

export interface ManagerCluster extends ClusterDeps {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function startManagerCluster(settings: Settings, metrics: Metrics, log: Logger): ManagerCluster {
  const m = clusterMetrics(metrics.registry);
  const apiKey = settings.API_KEY || undefined;
  // Leadership (and with it the epoch) comes with manager high availability; one manager is epoch 0.
  const epoch = () => 0;
  const discovery = workerDiscovery(settings);
  if (discovery.mode === 'none') log.warn('manager mode without workers: set SVC_WORKER_URLS, or SVC_WORKER_REPLICAS with SVC_WORKER_SERVICE and SVC_WORKER_NAMESPACE');
  let executor!: RemoteExecutor;
  const pool = new WorkerPool({
    discovery,
    intervalMs: settings.WORKER_HEALTH_INTERVAL * 1000,
    apiKey,
    epoch,
    log,
    onChange: (c) => {
      m.workerHealthy.set(c.healthy);
      m.workerTotal.set(c.total);
      if (c.change === 'down' || c.change === 'removed') executor.workerDown(c.worker.id, c.worker.lastError ?? c.change);
      const level = c.change === 'down' ? 'warn' : 'info';
      log[level]({ worker: c.worker.id, url: c.worker.url, change: c.change, healthy: c.healthy, total: c.total, err: c.worker.lastError ?? undefined }, `worker ${c.change}`);
    },
  });
  executor = new RemoteExecutor({
    workers: {
      pick: (exclude) => {
        const w = pool.pick(exclude);
        return w?.url ? { id: w.id, url: w.url } : undefined;
      },
      noteDispatched: (id) => pool.noteDispatched(id),
    },
    metrics: m,
    log,
    call: () => ({ apiKey, epoch: epoch() }),
    nodeId: settings.NODE_ID,
  });
  return {
    executor,
    nodes: () => {
      const assigned = executor.assigned();
      for (const w of pool.workers()) pool.setAssigned(w.id, assigned.get(w.id) ?? []);
      return pool.nodes().workers;
    },
    start: () => pool.start(),
    stop: () => pool.stop(),
  };
}
