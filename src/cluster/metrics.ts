// The manager's svc_mgr_* metrics (spec doc 2), on the daemon's registry.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type DispatchResult = 'accepted' | 'no_capacity' | 'no_workers' | 'dispatch_failed';

export function clusterMetrics(registry: Registry) {
  const registers = [registry];
  return {
    dispatch: new Counter({ name: 'svc_mgr_dispatch_total', help: 'Runs the manager dispatched to workers, by result.', labelNames: ['result'], registers }),
    runCompleteReceived: new Counter({
      name: 'svc_mgr_run_complete_received_total',
      help: 'run-complete callbacks received from workers (replays included).',
      registers,
    }),
    pipelineStatsReceived: new Counter({ name: 'svc_mgr_pipeline_stats_received_total', help: 'pipeline-stats reports received from workers.', registers }),
    workerHealthy: new Gauge({ name: 'svc_mgr_worker_healthy', help: 'Workers whose last health polls passed.', registers }),
    workerTotal: new Gauge({ name: 'svc_mgr_worker_total', help: 'Workers known to the manager (SVC_WORKER_URLS or DNS discovery).', registers }),
    queueEnqueued: new Counter({ name: 'svc_mgr_queue_enqueued_total', help: 'Manual runs queued because no worker was healthy.', registers }),
    queueDispatched: new Counter({ name: 'svc_mgr_queue_dispatched_total', help: 'Queued runs dispatched to a worker.', registers }),
    queueExpired: new Counter({
      name: 'svc_mgr_queue_expired_total',
      help: 'Queued runs whose wait (SVC_QUEUE_TTL_SECONDS) expired; each is one failed run.',
      registers,
    }),
    queueDrainResult: new Counter({
      name: 'svc_mgr_queue_drain_result_total',
      help: 'Passes over the queue, by result (dispatched, empty, no_capacity, busy, error).',
      labelNames: ['result'],
      registers,
    }),
    queueDepth: new Gauge({ name: 'svc_mgr_queue_depth', help: 'Runs waiting in the queue.', registers }),
    placementStatus: new Gauge({
      name: 'svc_mgr_placement_status',
      help: 'Stream placements by pipeline: 1 for the status the group is in (running, degraded), 0 for the other.',
      labelNames: ['pipeline', 'status'],
      registers,
    }),
    redispatch: new Counter({ name: 'svc_mgr_redispatch_total', help: 'Streams moved to another worker because theirs was gone.', registers }),
    reconcileAction: new Counter({
      name: 'svc_mgr_reconcile_action_total',
      help: 'What the placement reconciler did, by action (restart_stale, restart_ended, redispatch, drop_slot, add_slot, slot_recovered).',
      labelNames: ['action'],
      registers,
    }),
    statsMissed: new Counter({ name: 'svc_mgr_stats_missed_total', help: 'Stream slots found without stats for 3 x SVC_STATS_INTERVAL (stale).', registers }),
    shardDispatched: new Counter({
      name: 'svc_mgr_shard_dispatched_total',
      help: 'Shards of sharded batch runs a worker accepted (re-dispatched ones included).',
      registers,
    }),
    shardOutcome: new Counter({
      name: 'svc_mgr_shard_outcome_total',
      help: 'Shards of sharded batch runs ended, by status (success, failed, aborted, lost: its targets went to other workers, missed: polled by nobody).',
      labelNames: ['status'],
      registers,
    }),
    shardMissedTargets: new Counter({
      name: 'svc_mgr_shard_missed_targets_total',
      help: 'Targets of sharded batch runs polled by no worker in their cycle (their worker died with no time left).',
      registers,
    }),
    shardTargets: new Gauge({
      name: 'svc_mgr_shard_targets',
      help: "Targets of each sharded pipeline's last plan, by worker.",
      labelNames: ['pipeline', 'worker'],
      registers,
    }),
    shardDispatchSeconds: new Histogram({
      name: 'svc_mgr_shard_dispatch_seconds',
      help: "The manager's dispatch overhead per shard: from the plan's start until the worker accepted the shard.",
      buckets: [0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    queueWait: new Histogram({
      name: 'svc_mgr_queue_wait_seconds',
      help: 'Time queued runs waited for a worker.',
      buckets: [1, 5, 10, 30, 60, 120, 300, 600, 900, 1800],
      registers,
    }),
  };
}

export type ClusterMetrics = ReturnType<typeof clusterMetrics>;
