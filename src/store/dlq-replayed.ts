// Which dead letters a replay delivered (docs/dead-letters.md): one row per pipeline and envelope
// id, written when the replay's unit for that envelope is delivered, so a second replay skips it.
import type { Kysely } from 'kysely';
import type { Schema } from './schema.js';
import type { DbEngine, DlqReplayed, DlqReplayStore } from './types.js';
import { fits, MAX_NAME, MAX_RUN_ID, nowIso } from './util.js';

/** Ids per `in (...)` list: well under every engine's parameter limit. */
const IDS_PER_QUERY = 500;

export class SqlDlqReplayStore implements DlqReplayStore {
  constructor(
    private readonly db: Kysely<Schema>,
    private readonly engine: DbEngine,
  ) {}

  async marks(pipeline: string, ids: string[]): Promise<Map<string, DlqReplayed>> {
    const out = new Map<string, DlqReplayed>();
    for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
      const rows = await this.db
        .selectFrom('dlq_replayed')
        .select(['envelope_id', 'replayed_at', 'run_id'])
        .where('pipeline', '=', pipeline)
        .where('envelope_id', 'in', ids.slice(i, i + IDS_PER_QUERY))
        .execute();
      for (const r of rows) out.set(r.envelope_id, r);
    }
    return out;
  }

  async mark(pipeline: string, id: string, runId: string): Promise<void> {
    const row = {
      pipeline: fits(pipeline, MAX_NAME, 'pipeline'),
      envelope_id: fits(id, 64, 'envelope id'),
      replayed_at: nowIso(),
      run_id: fits(runId, MAX_RUN_ID, 'run id'),
    };
    const q = this.db.insertInto('dlq_replayed').values(row);
    await (this.engine === 'mysql'
      ? q.onDuplicateKeyUpdate({ replayed_at: row.replayed_at, run_id: row.run_id })
      : q.onConflict((oc) => oc.columns(['pipeline', 'envelope_id']).doUpdateSet({ replayed_at: row.replayed_at, run_id: row.run_id }))
    ).execute();
  }

  async clear(pipeline: string): Promise<void> {
    await this.db.deleteFrom('dlq_replayed').where('pipeline', '=', pipeline).execute();
  }
}
