// The shards of sharded batch runs (issue 33): one row per shard of a run (`run_shards`). The
// manager writes a shard when it dispatches it, and its outcome once: a run-complete replayed, or
// sent to a manager that restarted since, finds the row settled and changes nothing.
import type { Kysely } from 'kysely';
import type { Schema } from './schema.js';
import { num } from './util.js';

import type { RunShard, RunShardStore, ShardOutcome, ShardStatus } from './types.js';

export type { RunShard, ShardOutcome, ShardStatus };

export class SqlRunShardStore implements RunShardStore {
  constructor(private readonly db: Kysely<Schema>) {}

  async insert(s: Omit<RunShard, 'records_in' | 'records_out' | 'errors' | 'duration_ms' | 'missed' | 'error' | 'finished_at' | 'status'>): Promise<void> {
    await this.db
      .insertInto('run_shards')
      .values({
        run_id: s.run_id,
        shard_index: s.shard_index,
        pipeline: s.pipeline,
        worker_id: s.worker_id,
        epoch: s.epoch,
        status: 'running',
        target_count: s.targets.length,
        targets_json: JSON.stringify(s.targets),
        records_in: 0,
        records_out: 0,
        errors: 0,
        started_at: s.started_at,
      })
      .execute();
  }

  /** Ends a running shard; false when it was settled already (its outcome is stored once). */
  async finish(runId: string, index: number, o: ShardOutcome): Promise<boolean> {
    const r = await this.db
      .updateTable('run_shards')
      .set({
        status: o.status,
        records_in: o.records_in ?? 0,
        records_out: o.records_out ?? 0,
        errors: o.errors ?? 0,
        duration_ms: o.duration_ms ?? null,
        missed_json: o.missed?.length ? JSON.stringify(o.missed) : null,
        error: o.error ?? null,
        finished_at: o.finished_at,
      })
      .where('run_id', '=', runId)
      .where('shard_index', '=', index)
      .where('status', '=', 'running')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async ofRun(runId: string): Promise<RunShard[]> {
    const rows = await this.db.selectFrom('run_shards').selectAll().where('run_id', '=', runId).orderBy('shard_index').execute();
    return rows.map(shardOf);
  }

  /**
   * Sharded runs still running in the run history (a restarted manager adopts them): run id ->
   * pipeline. Their shards may all have ended meanwhile (outcomes sent while no manager ran).
   */
  async active(): Promise<Map<string, string>> {
    const rows = await this.db
      .selectFrom('run_shards')
      .select(['run_shards.run_id', 'run_shards.pipeline'])
      .distinct()
      .where('run_shards.run_id', 'in', (q) => q.selectFrom('runs').select('runs.run_id').where('runs.status', '=', 'running'))
      .execute();
    return new Map(rows.map((r) => [r.run_id, r.pipeline]));
  }
}

function shardOf(r: Record<string, unknown>): RunShard {
  return {
    run_id: String(r.run_id),
    shard_index: num(r.shard_index as number),
    pipeline: String(r.pipeline),
    worker_id: String(r.worker_id),
    epoch: num(r.epoch as number),
    status: r.status as ShardStatus,
    targets: JSON.parse(String(r.targets_json)) as string[],
    records_in: num(r.records_in as number),
    records_out: num(r.records_out as number),
    errors: num(r.errors as number),
    duration_ms: r.duration_ms === null || r.duration_ms === undefined ? null : num(r.duration_ms as number),
    missed: r.missed_json ? (JSON.parse(String(r.missed_json)) as string[]) : [],
    error: (r.error as string | null) ?? null,
    started_at: String(r.started_at),
    finished_at: (r.finished_at as string | null) ?? null,
  };
}
