// Durable state of stateful transforms (counter_delta, window_aggregate): one row per pipeline and
// transform instance, each stamped with the config hash it was made under.
import type { Kysely } from 'kysely';
import type { Schema } from './schema.js';
import type { StoredTransformState, TransformStateStore } from './types.js';
import { fits, MAX_NAME, nowIso } from './util.js';

export class SqlTransformStateStore implements TransformStateStore {
  constructor(private readonly db: Kysely<Schema>) {}

  async get(pipeline: string): Promise<StoredTransformState | null> {
    const rows = await this.db.selectFrom('transform_state').selectAll().where('pipeline', '=', pipeline).orderBy('transform_key').execute();
    if (rows.length === 0) return null;
    const state: Record<string, unknown> = {};
    const hashes = new Set<string>();
    for (const r of rows) {
      hashes.add(r.config_sha256);
      try {
        state[r.transform_key] = JSON.parse(r.state_json) as unknown;
      } catch {
        // A row that does not parse reaches the transform as text, which it refuses: discarded with a warning.
        state[r.transform_key] = `corrupt state row: ${r.state_json.slice(0, 40)}`;
      }
    }
    // Rows are written together; two hashes mean an interrupted replace: treat as stale.
    return { pipeline, state, config_sha256: hashes.size === 1 ? [...hashes][0]! : '' };
  }

  /** Replaces the pipeline's whole state in one transaction. */
  async put(pipeline: string, state: Record<string, unknown>, configSha256: string): Promise<void> {
    const at = nowIso();
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('transform_state').where('pipeline', '=', pipeline).execute();
      const rows = Object.entries(state).map(([key, value]) => ({
        pipeline: fits(pipeline, MAX_NAME, 'pipeline'),
        transform_key: fits(key, MAX_NAME, 'transform key'),
        state_json: JSON.stringify(value),
        config_sha256: configSha256,
        updated_at: at,
      }));
      if (rows.length) await tx.insertInto('transform_state').values(rows).execute();
    });
  }

  async clear(pipeline: string): Promise<void> {
    await this.db.deleteFrom('transform_state').where('pipeline', '=', pipeline).execute();
  }
}
