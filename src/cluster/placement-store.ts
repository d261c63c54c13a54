// Stream placements persisted in the `stream_placements` table (one row per pipeline, its slots as
// JSON), so that a manager that restarts, or a standby that takes over, finds where each stream
// runs and adopts it there instead of dispatching it twice.
import type { Kysely } from 'kysely';
import type { Schema } from '../store/schema.js';

export interface PersistedSlot {
  worker_index: number;
  worker_id: string;
  worker_url: string;
  run_id_prefix: string;
  current_run_id: string;
  status: 'running' | 'stale';
  restart_count: number;
}

export interface PersistedPlacement {
  pipeline: string;
  placement_group_id: string;
  status: 'running' | 'degraded';
  target_count: 'all' | '1';
  config_sha256: string;
  started_at: string;
  slots: PersistedSlot[];
}

export class SqlPlacementStore {
  constructor(private readonly db: Kysely<Schema>) {}

  async save(p: PersistedPlacement): Promise<void> {
    const row = {
      pipeline: p.pipeline,
      placement_group_id: p.placement_group_id,
      status: p.status,
      target_count: p.target_count,
      config_sha256: p.config_sha256,
      started_at: p.started_at,
      slots_json: JSON.stringify(p.slots),
      updated_at: new Date().toISOString(),
    };
    // Delete then insert in one transaction: the same on every database engine.
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('stream_placements').where('pipeline', '=', p.pipeline).execute();
      await tx.insertInto('stream_placements').values(row).execute();
    });
  }

  async list(): Promise<PersistedPlacement[]> {
    const rows = await this.db.selectFrom('stream_placements').selectAll().execute();
    return rows.map((r) => ({
      pipeline: r.pipeline,
      placement_group_id: r.placement_group_id,
      status: r.status === 'degraded' ? 'degraded' : 'running',
      target_count: r.target_count === 'all' ? 'all' : '1',
      config_sha256: r.config_sha256 ?? '',
      started_at: r.started_at,
      slots: JSON.parse(r.slots_json) as PersistedSlot[],
    }));
  }

  /** Removes the pipeline's placement, only if it is still group `groupId` (a newer one stays). */
  async remove(pipeline: string, groupId?: string): Promise<void> {
    let q = this.db.deleteFrom('stream_placements').where('pipeline', '=', pipeline);
    if (groupId !== undefined) q = q.where('placement_group_id', '=', groupId);
    await q.execute();
  }
}
