// Registered pipelines and their numbered versions.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { PipelinesTable, Schema } from './schema.js';
import type { DbEngine, DesiredState, PipelineStore, PipelineVersion, StoredPipeline } from './types.js';
import { fits, isRetryableConflict, KeyedMutex, MAX_NAME, nowIso, num } from './util.js';

function toPipeline(r: Selectable<PipelinesTable>): StoredPipeline {
  return {
    name: r.name,
    yaml: r.yaml,
    origin: r.origin === 'file' ? 'file' : 'api',
    file: r.file ?? null,
    version: num(r.version),
    updated_at: r.updated_at,
    desired: r.desired === 'running' || r.desired === 'stopped' ? r.desired : null,
  };
}

function checkDesired(d: unknown): asserts d is DesiredState | undefined {
  if (d !== undefined && d !== 'running' && d !== 'stopped') throw new Error(`desired state must be running or stopped, got ${JSON.stringify(d)}`);
}

/**
 * save() found the name in a state its mode refuses: `exists` (mode `create`, the name is taken)
 * or `missing` (mode `update`, the pipeline was deleted meanwhile).
 */
export class PipelineConflictError extends Error {
  constructor(
    readonly pipeline: string,
    readonly reason: 'exists' | 'missing',
  ) {
    super(reason === 'exists' ? `pipeline "${pipeline}" already exists` : `pipeline "${pipeline}" does not exist`);
    this.name = 'PipelineConflictError';
  }
}

export class SqlPipelineStore implements PipelineStore {
  /** Saves, activations and deletes of one name run one at a time in this process. */
  private readonly lock = new KeyedMutex();

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly engine: DbEngine,
  ) {}

  /**
   * One write of one name: a transaction whose first statement locks the name's `pipelines` row
   * (SELECT ... FOR UPDATE on PostgreSQL and MariaDB; SQLite's BEGIN IMMEDIATE already holds the
   * database's write lock), so writers of a name, in this or another process, take turns and each
   * reads what the one before committed. A name with no row yet cannot be locked: two creates
   * both insert, the second fails on the primary key (or a deadlock on MariaDB's gap locks), and
   * is run again, now finding the row. `fn` gets the locked row (undefined: none).
   */
  private write<T>(name: string, fn: (trx: Transaction<Schema>, current: Selectable<PipelinesTable> | undefined) => Promise<T>): Promise<T> {
    return this.lock.run(name, () =>
      this.retryOnConflict(() =>
        this.db.transaction().execute(async (trx) => {
          const q = trx.selectFrom('pipelines').selectAll().where('name', '=', name);
          const current = await (this.engine === 'sqlite' ? q : q.forUpdate()).executeTakeFirst();
          return fn(trx, current);
        }),
      ),
    );
  }

  async list(): Promise<StoredPipeline[]> {
    const rows = await this.db.selectFrom('pipelines').selectAll().orderBy('name').execute();
    return rows.map(toPipeline);
  }

  async get(name: string): Promise<StoredPipeline | undefined> {
    const r = await this.db.selectFrom('pipelines').selectAll().where('name', '=', name).executeTakeFirst();
    return r ? toPipeline(r) : undefined;
  }

  /**
   * `mode`: `create` refuses a name that exists, `update` one that does not (PipelineConflictError);
   * `upsert` (default) takes either. `desired` is the state of a pipeline this save creates; a
   * pipeline that exists keeps its own (a new version does not undo a start or stop).
   */
  async save(p: {
    name: string;
    yaml: string;
    origin: 'api' | 'file';
    file?: string | null;
    mode?: 'create' | 'update' | 'upsert';
    desired?: DesiredState;
  }): Promise<StoredPipeline> {
    fits(p.name, MAX_NAME, 'pipeline name');
    checkDesired(p.desired);
    if (p.origin !== 'api' && p.origin !== 'file') throw new Error(`pipeline origin must be api or file, got ${JSON.stringify(p.origin)}`);
    const file = p.file ?? null;
    return this.write(p.name, async (trx, current) => {
      if (current && p.mode === 'create') throw new PipelineConflictError(p.name, 'exists');
      if (!current && p.mode === 'update') throw new PipelineConflictError(p.name, 'missing');
      const now = nowIso();
      if (current && current.yaml === p.yaml) {
        // Same YAML as the active version: no new version; only where it came from may change.
        if (current.origin !== p.origin || (current.file ?? null) !== file) {
          await trx.updateTable('pipelines').set({ origin: p.origin, file, updated_at: now }).where('name', '=', p.name).execute();
          return toPipeline({ ...current, origin: p.origin, file, updated_at: now });
        }
        return toPipeline(current);
      }
      const max = await trx
        .selectFrom('pipeline_versions')
        .select((eb) => eb.fn.max('version').as('v'))
        .where('name', '=', p.name)
        .executeTakeFirst();
      const version = num(max?.v ?? 0) + 1;
      await trx.updateTable('pipeline_versions').set({ is_active: 0 }).where('name', '=', p.name).where('is_active', '=', 1).execute();
      await trx.insertInto('pipeline_versions').values({ name: p.name, version, yaml: p.yaml, created_at: now, is_active: 1 }).execute();
      const row = { name: p.name, yaml: p.yaml, origin: p.origin, file, version, updated_at: now };
      if (current) {
        await trx.updateTable('pipelines').set(row).where('name', '=', p.name).execute();
        return toPipeline({ ...row, desired: current.desired });
      }
      const created = { ...row, desired: p.desired ?? null };
      await trx.insertInto('pipelines').values(created).execute();
      return toPipeline(created);
    });
  }

  async setDesired(name: string, desired: DesiredState): Promise<boolean> {
    checkDesired(desired);
    return await this.write(name, async (trx, current) => {
      if (!current) return false;
      if (current.desired !== desired) await trx.updateTable('pipelines').set({ desired }).where('name', '=', name).execute();
      return true;
    });
  }

  /** Another process saved the same name at the same moment (duplicate version, deadlock): run it again. */
  private async retryOnConflict<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (attempt >= 20 || !isRetryableConflict(err)) throw err;
        // A little random wait, so two writers that collided do not collide again in lockstep.
        await new Promise((r) => setTimeout(r, Math.random() * 10 * attempt));
      }
    }
  }

  delete(name: string): Promise<boolean> {
    return this.write(name, async (trx, current) => {
      await trx.deleteFrom('pipeline_versions').where('name', '=', name).execute();
      if (current) await trx.deleteFrom('pipelines').where('name', '=', name).execute();
      return current !== undefined;
    });
  }

  async versions(name: string): Promise<PipelineVersion[]> {
    const rows = await this.db
      .selectFrom('pipeline_versions')
      .select(['id', 'name', 'version', 'created_at', 'is_active'])
      .where('name', '=', name)
      .orderBy('version', 'desc')
      .execute();
    return rows.map((r) => ({
      id: num(r.id),
      name: r.name,
      version: num(r.version),
      created_at: r.created_at,
      is_active: num(r.is_active) === 1 ? 1 : 0,
    }));
  }

  async versionYaml(name: string, version: number): Promise<string | undefined> {
    if (!Number.isSafeInteger(version)) return undefined;
    const r = await this.db.selectFrom('pipeline_versions').select('yaml').where('name', '=', name).where('version', '=', version).executeTakeFirst();
    return r?.yaml;
  }

  async activate(name: string, version: number): Promise<boolean> {
    if (!Number.isSafeInteger(version)) return false;
    return this.write(name, async (trx, current) => {
      if (!current) return false;
      const v = await trx.selectFrom('pipeline_versions').select(['yaml']).where('name', '=', name).where('version', '=', version).executeTakeFirst();
      if (!v) return false;
      await trx.updateTable('pipelines').set({ yaml: v.yaml, version, updated_at: nowIso() }).where('name', '=', name).execute();
      await trx.updateTable('pipeline_versions').set({ is_active: 0 }).where('name', '=', name).where('version', '<>', version).execute();
      await trx.updateTable('pipeline_versions').set({ is_active: 1 }).where('name', '=', name).where('version', '=', version).execute();
      return true;
    });
  }
}
