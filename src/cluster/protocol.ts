// The cluster's wire types: the bodies a worker sends the manager (POST /api/internal/run-complete,
// POST /api/internal/pipeline-stats), shared by the executor, the stream placements and the API's
// internal routes.
import type { RunRecord } from '../engine/run-record.js';
import type { RunProgress } from '../engine/runner.js';

/** Which shard of which sharded batch run a worker's run is (issue 33). */
export interface ShardRef {
  /** The sharded run's id (the one run in the run history). */
  run_id: string;
  index: number;
}

/** What POST /agent/run carries for a shard: the targets it owns and its lease. */
export interface ShardAssignment extends ShardRef {
  targets: string[];
  lease_seconds: number;
}

/** The body of a run-complete: the worker's run record. */
export interface RunComplete extends RunRecord {
  worker_id?: string;
  /** Set when the run is a shard: its outcome is the shard's, not a run of its own. */
  shard?: ShardRef;
}

/**
 * The body of a pipeline-stats report: the run's progress counters, and its per-stage figures
 * (`stages`). A worker of an earlier release sends neither records_filtered nor stages.
 */
export interface StatsReport extends Omit<RunProgress, 'units' | 'unit' | 'unit_size' | 'records_filtered'> {
  records_filtered?: number;
  run_id: string;
  pipeline: string;
  is_final?: boolean;
  shard?: ShardRef;
}

/** The run record in a run-complete body (without what only the worker adds). */
export function runRecordOf(body: RunComplete & { config_sha256?: string }): RunRecord {
  const { worker_id: _w, config_sha256: _c, shard: _s, ...record } = body;
  // A worker of an earlier release sends no records_filtered.
  return { ...record, records_filtered: record.records_filtered ?? 0 };
}
