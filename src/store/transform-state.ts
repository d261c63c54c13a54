// Durable state of stateful transforms (counter_delta, window_aggregate): one row per pipeline and
// transform instance, each stamped with the config hash it was made under. Sharded batch runs
// (issue 33) keep theirs by target instead (`transform_state_targets`): a shard reads the rows of
// the targets it owns and replaces them at its end, so a target's state follows it across workers.
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Schema } from './schema.js';
import type { StoredTargetState, StoredTransformState, TransformStateStore } from './types.js';
import { fits, MAX_NAME, nowIso } from './util.js';

/** Targets per statement (well under PostgreSQL's 65,535 bind parameters and MySQL's packet). */
const TARGETS_PER_QUERY = 500;

const targetKey = (target: string) => createHash('sha256').update(target).digest('hex');

function chunks<T>(items: readonly T[], n: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += n) out.push(items.slice(i, i + n));
  return out;
}

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
    await this.db.deleteFrom('transform_state_targets').where('pipeline', '=', pipeline).execute();
  }

  /**
   * The stored state of these targets (sharded runs), or of every target of the pipeline without
   * `targets`: one entry per transform instance and target that has a row.
   */
  async ofTargets(pipeline: string, targets?: readonly string[]): Promise<StoredTargetState[]> {
    const out: StoredTargetState[] = [];
    for (const part of targets ? chunks(targets, TARGETS_PER_QUERY) : [undefined]) {
      let query = this.db
        .selectFrom('transform_state_targets')
        .select(['transform_key', 'target', 'state_json', 'config_sha256'])
        .where('pipeline', '=', pipeline);
      if (part) query = query.where('target_sha256', 'in', part.map(targetKey));
      const rows = await query.execute();
      for (const r of rows) {
        let state: unknown;
        try {
          state = JSON.parse(r.state_json) as unknown;
        } catch {
          state = `corrupt state row: ${r.state_json.slice(0, 40)}`;
        }
        out.push({ transform_key: r.transform_key, target: r.target, state, config_sha256: r.config_sha256 });
      }
    }
    return out;
  }

  /**
   * Replaces the state of these targets in one transaction: their rows go (every transform
   * instance), then `parts` (transform key -> target -> state) is written. A target of `targets`
   * absent from `parts` is left without state; one not in `targets` is not written.
   */
  async putTargets(
    pipeline: string,
    targets: readonly string[],
    parts: ReadonlyMap<string, ReadonlyMap<string, unknown>>,
    configSha256: string,
  ): Promise<void> {
    const at = nowIso();
    const owned = new Set(targets);
    const rows = [...parts].flatMap(([key, byTarget]) =>
      [...byTarget].flatMap(([target, state]) =>
        owned.has(target)
          ? [
              {
                pipeline: fits(pipeline, MAX_NAME, 'pipeline'),
                transform_key: fits(key, MAX_NAME, 'transform key'),
                target_sha256: targetKey(target),
                target,
                state_json: JSON.stringify(state),
                config_sha256: configSha256,
                updated_at: at,
              },
            ]
          : [],
      ),
    );
    await this.db.transaction().execute(async (tx) => {
      for (const part of chunks(targets, TARGETS_PER_QUERY))
        await tx.deleteFrom('transform_state_targets').where('pipeline', '=', pipeline).where('target_sha256', 'in', part.map(targetKey)).execute();
      for (const part of chunks(rows, TARGETS_PER_QUERY)) await tx.insertInto('transform_state_targets').values(part).execute();
    });
  }
}
