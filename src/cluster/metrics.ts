// The manager's svc_mgr_* metrics (spec doc 2), on the daemon's registry.
import { Counter, Gauge, type Registry } from 'prom-client';

export type DispatchResult = 'accepted' | 'no_capacity' | 'no_workers' | 'dispatch_failed';

export function clusterMetrics(registry: Registry) {
  const registers = [registry];
  return {
    dispatch: new Counter({ name: 'svc_mgr_dispatch_total', help: 'Runs the manager dispatched to workers, by result.', labelNames: ['result'], registers }),
    runCompleteReceived: new Counter({ name: 'svc_mgr_run_complete_received_total', help: 'run-complete callbacks received from workers (replays included).', registers }),
    pipelineStatsReceived: new Counter({ name: 'svc_mgr_pipeline_stats_received_total', help: 'pipeline-stats reports received from workers.', registers }),
    workerHealthy: new Gauge({ name: 'svc_mgr_worker_healthy', help: 'Workers whose last health polls passed.', registers }),
    workerTotal: new Gauge({ name: 'svc_mgr_worker_total', help: 'Workers known to the manager (SVC_WORKER_URLS or DNS discovery).', registers }),
  };
}

export type ClusterMetrics = ReturnType<typeof clusterMetrics>;
