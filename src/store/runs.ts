// Run history: a row per run, written `running` at start and completed at finish.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Expression, ExpressionBuilder, Kysely, Selectable, SqlBool } from 'kysely';
import type { RunsTable, Schema } from './schema.js';
import type { DbEngine, RunProgressCounts, RunQuery, RunStore, RunToStore, StatsRow, StoredRun } from './types.js';
import { fits, iso, MAX_NAME, MAX_RUN_ID, nowIso, num } from './util.js';

const RUN_STATUSES = new Set(['success', 'failed', 'aborted', 'running']);

/** Rows per purge statement: a few milliseconds of work, so the API is never held up for long. */
export const PURGE_BATCH_SIZE = 1000;

type RunFilter = (eb: ExpressionBuilder<Schema, 'runs'>) => Expression<SqlBool>;

function parseErrors(text: string): string[] {
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? v.map(String) : [];
  } catch {
    return text ? [text] : [];
  }
}

function toRun(r: Selectable<RunsTable>): StoredRun {
  return {
    run_id: r.run_id,
    pipeline: r.pipeline,
    node_id: r.node_id,
    status: r.status as StoredRun['status'],
    started_at: r.started_at,
    finished_at: r.finished_at ?? null,
    records_in: num(r.records_in),
    records_out: num(r.records_out),
    records_filtered: num(r.records_filtered),
    records_skipped: num(r.records_skipped),
    bytes_in: num(r.bytes_in),
    bytes_out: num(r.bytes_out),
    dlq_count: num(r.dlq_count),
    error: r.error ?? null,
    errors: parseErrors(r.errors),
    pipeline_version: r.pipeline_version === null || r.pipeline_version === undefined ? null : num(r.pipeline_version),
  };
}

function version(v: number | null | undefined): number | null {
  if (v === null || v === undefined) return null;
  if (!Number.isInteger(v) || v < 1) throw new Error(`run record: pipeline_version must be a positive integer, got ${v}`);
  return v;
}

function durationMs(startedAt: string, finishedAt: string): number {
  return Math.max(0, Date.parse(finishedAt) - Date.parse(startedAt));
}

function count(v: number, what: string): number {
  if (!Number.isFinite(v) || v < 0) throw new Error(`run record: ${what} must be a non-negative number, got ${v}`);
  return Math.trunc(v);
}

export class SqlRunStore implements RunStore {
  constructor(
    private readonly db: Kysely<Schema>,
    private readonly engine: DbEngine,
  ) {}

  async start(run: { run_id: string; pipeline: string; node_id: string; started_at: string; pipeline_version?: number | null }): Promise<boolean> {
    const values = {
      run_id: fits(run.run_id, MAX_RUN_ID, 'run_id'),
      pipeline: fits(run.pipeline, MAX_NAME, 'pipeline'),
      node_id: fits(run.node_id, MAX_NAME, 'node_id'),
      status: 'running',
      started_at: iso(run.started_at, 'started_at'),
      finished_at: null,
      records_in: 0,
      records_out: 0,
      records_filtered: 0,
      records_skipped: 0,
      bytes_in: 0,
      bytes_out: 0,
      dlq_count: 0,
      error: null,
      errors: '[]',
      duration_ms: null,
      pipeline_version: version(run.pipeline_version),
    };
    // Idempotent: a run that exists already (started twice, or finished) is left as it is.
    const q = this.db.insertInto('runs').values(values);
    // MySQL: INSERT IGNORE affects 0 rows for a duplicate (ON DUPLICATE KEY UPDATE reports a found
    // row as affected under the driver's FOUND_ROWS flag); the values are checked above.
    const r = await (this.engine === 'mysql' ? q.ignore() : q.onConflict((oc) => oc.column('run_id').doNothing())).executeTakeFirst();
    return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  async finish(run: RunToStore): Promise<void> {
    const data = this.finalRow(run);
    const q = this.db.insertInto('runs').values({ run_id: run.run_id, ...data });
    await (this.engine === 'mysql' ? q.onDuplicateKeyUpdate(data) : q.onConflict((oc) => oc.column('run_id').doUpdateSet(data))).execute();
  }

  async finishOnce(run: RunToStore): Promise<boolean> {
    const data = this.finalRow(run);
    const updated = await this.db.updateTable('runs').set(data).where('run_id', '=', run.run_id).where('status', '=', 'running').executeTakeFirst();
    if (Number(updated.numUpdatedRows) > 0) return true;
    // No running row: either it is finished already (a replay) or it was never started here.
    const q = this.db.insertInto('runs').values({ run_id: run.run_id, ...data });
    const inserted = await (this.engine === 'mysql' ? q.ignore() : q.onConflict((oc) => oc.column('run_id').doNothing())).executeTakeFirst();
    return Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  async progress(runId: string, c: RunProgressCounts): Promise<boolean> {
    const r = await this.db
      .updateTable('runs')
      .set({
        records_in: count(c.records_in, 'records_in'),
        records_out: count(c.records_out, 'records_out'),
        records_filtered: count(c.records_filtered ?? 0, 'records_filtered'),
        records_skipped: count(c.records_skipped, 'records_skipped'),
        bytes_in: count(c.bytes_in, 'bytes_in'),
        bytes_out: count(c.bytes_out, 'bytes_out'),
        dlq_count: count(c.dlq_count, 'dlq_count'),
        ...(c.errors ? { errors: JSON.stringify(c.errors) } : {}),
      })
      .where('run_id', '=', runId)
      // A run's final record is never overwritten by a late progress write.
      .where('status', '=', 'running')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  private finalRow(run: RunToStore) {
    if (!RUN_STATUSES.has(run.status)) throw new Error(`run record: unknown status ${JSON.stringify(run.status)}`);
    const started_at = iso(run.started_at, 'started_at');
    const finished_at = iso(run.finished_at, 'finished_at');
    fits(run.run_id, MAX_RUN_ID, 'run_id');
    const data = {
      pipeline: fits(run.pipeline, MAX_NAME, 'pipeline'),
      node_id: fits(run.node_id, MAX_NAME, 'node_id'),
      status: run.status,
      started_at,
      finished_at,
      records_in: count(run.records_in, 'records_in'),
      records_out: count(run.records_out, 'records_out'),
      // A worker of an earlier release does not send it.
      records_filtered: count(run.records_filtered ?? 0, 'records_filtered'),
      records_skipped: count(run.records_skipped, 'records_skipped'),
      bytes_in: count(run.bytes_in, 'bytes_in'),
      bytes_out: count(run.bytes_out, 'bytes_out'),
      dlq_count: count(run.dlq_count, 'dlq_count'),
      error: run.error ?? null,
      errors: JSON.stringify(run.errors ?? []),
      duration_ms: durationMs(started_at, finished_at),
      ...(run.pipeline_version !== undefined ? { pipeline_version: version(run.pipeline_version) } : {}),
    };
    return data;
  }

  async get(runId: string): Promise<StoredRun | undefined> {
    const r = await this.db.selectFrom('runs').selectAll().where('run_id', '=', runId).executeTakeFirst();
    return r ? toRun(r) : undefined;
  }

  async list(q: RunQuery): Promise<StoredRun[]> {
    const limit = Math.max(0, Math.trunc(q.limit));
    const offset = Math.max(0, Math.trunc(q.offset));
    if (limit === 0) return [];
    let query = this.db.selectFrom('runs').selectAll();
    if (q.pipeline !== undefined) query = query.where('pipeline', '=', q.pipeline);
    if (q.status !== undefined) query = query.where('status', '=', q.status);
    if (q.from_dt !== undefined) query = query.where('started_at', '>=', iso(q.from_dt, 'from_dt'));
    const rows = await query.orderBy('started_at', 'desc').orderBy('run_id', 'desc').limit(limit).offset(offset).execute();
    return rows.map(toRun);
  }

  abortInterrupted(nodeId: string, error: string): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      const running = await trx.selectFrom('runs').select(['run_id', 'started_at']).where('status', '=', 'running').where('node_id', '=', nodeId).execute();
      const finished_at = nowIso();
      let n = 0;
      for (const r of running) {
        const res = await trx
          .updateTable('runs')
          .set({ status: 'aborted', error, finished_at, duration_ms: durationMs(r.started_at, finished_at) })
          .where('run_id', '=', r.run_id)
          .where('status', '=', 'running')
          .executeTakeFirst();
        n += num(res.numUpdatedRows);
      }
      return n;
    });
  }

  async stats(since: string): Promise<StatsRow[]> {
    const rows = await this.db
      .selectFrom('runs')
      .select((eb) => [
        'pipeline',
        eb.fn.countAll().as('run_count'),
        eb.fn.sum('records_in').as('records_in'),
        eb.fn.sum('records_out').as('records_out'),
        eb.fn.sum('records_skipped').as('records_skipped'),
        eb.fn.sum('duration_ms').as('duration_ms'),
      ])
      .where('finished_at', '>=', iso(since, 'since'))
      .where('status', '<>', 'running')
      .groupBy('pipeline')
      .orderBy('pipeline')
      .execute();
    return rows.map((r) => {
      const run_count = num(r.run_count);
      const records_in = num(r.records_in);
      const skipped = num(r.records_skipped);
      return {
        pipeline: r.pipeline,
        records_in,
        records_out: num(r.records_out),
        error_rate: records_in > 0 ? skipped / records_in : 0,
        avg_duration_seconds: run_count > 0 ? num(r.duration_ms) / run_count / 1000 : 0,
        run_count,
      };
    });
  }

  async latest(): Promise<Map<string, StoredRun>> {
    const newest = this.db
      .selectFrom('runs')
      .select((eb) => ['pipeline', eb.fn.max('started_at').as('max_started')])
      .groupBy('pipeline')
      .as('l');
    const rows = await this.db
      .selectFrom('runs as r')
      .innerJoin(newest, (j) => j.onRef('r.pipeline', '=', 'l.pipeline').onRef('r.started_at', '=', 'l.max_started'))
      .selectAll('r')
      .orderBy('r.pipeline')
      .orderBy('r.run_id', 'desc')
      .execute();
    const out = new Map<string, StoredRun>();
    // Two runs started in the same millisecond: the greater run_id wins, as in list().
    for (const r of rows) if (!out.has(r.pipeline)) out.set(r.pipeline, toRun(r));
    return out;
  }

  /**
   * Retention (docs/storage.md, "Run history retention"): deletes the runs that finished before
   * `finishedBefore` (null: no age limit) and, per pipeline, those beyond its newest
   * `keepPerPipeline` (0: no count limit; running runs count but stay). A `running` run is never
   * deleted. Each statement deletes at most `batchSize` rows and the event loop gets a turn
   * between statements: better-sqlite3 runs a statement synchronously, so one big DELETE would
   * stall the API, and a server would hold its locks for as long. `signal` stops between batches.
   */
  async purge(limits: {
    finishedBefore: string | null;
    keepPerPipeline: number;
    batchSize?: number;
    signal?: AbortSignal;
  }): Promise<{ byAge: number; byCount: number }> {
    const batch = Math.max(1, Math.trunc(limits.batchSize ?? PURGE_BATCH_SIZE));
    const { signal } = limits;
    let byAge = 0;
    if (limits.finishedBefore !== null) {
      const before = iso(limits.finishedBefore, 'finishedBefore');
      // finished_at is null while running; the runs_finished_at index finds the oldest first.
      byAge = await this.deleteInBatches((eb) => eb('finished_at', '<', before), ['finished_at'], batch, signal);
    }
    let byCount = 0;
    const keep = Math.max(0, Math.trunc(limits.keepPerPipeline));
    if (keep === 0) return { byAge, byCount };
    for (let pipeline = await this.pipelineAfter(null); pipeline !== undefined && !signal?.aborted; pipeline = await this.pipelineAfter(pipeline)) {
      // The newest run beyond the limit, in list() order (started_at, then run_id, descending).
      const first = await this.db
        .selectFrom('runs')
        .select(['started_at', 'run_id'])
        .where('pipeline', '=', pipeline)
        .orderBy('started_at', 'desc')
        .orderBy('run_id', 'desc')
        .limit(1)
        .offset(keep)
        .executeTakeFirst();
      if (first) {
        const p = pipeline;
        const beyond: RunFilter = (eb) =>
          eb.and([
            eb('pipeline', '=', p),
            eb.or([eb('started_at', '<', first.started_at), eb.and([eb('started_at', '=', first.started_at), eb('run_id', '<=', first.run_id)])]),
          ]);
        byCount += await this.deleteInBatches(beyond, ['pipeline', 'started_at', 'run_id'], batch, signal);
      }
      await nextTurn();
    }
    return { byAge, byCount };
  }

  /** The next pipeline name in the runs table after `name` (an index seek each: no full scan for DISTINCT). */
  private async pipelineAfter(name: string | null): Promise<string | undefined> {
    let q = this.db.selectFrom('runs').select('pipeline');
    if (name !== null) q = q.where('pipeline', '>', name);
    const r = await q.orderBy('pipeline').limit(1).executeTakeFirst();
    return r?.pipeline;
  }

  /**
   * Deletes the finished runs matching `filter`, oldest first in `order` (an index's columns),
   * `batch` at a time: the ids of a batch are selected, then deleted (MySQL has no LIMIT in an IN
   * subquery on the table it deletes from, PostgreSQL no DELETE ... LIMIT).
   */
  private async deleteInBatches(
    filter: RunFilter,
    order: ('pipeline' | 'started_at' | 'finished_at' | 'run_id')[],
    batch: number,
    signal?: AbortSignal,
  ): Promise<number> {
    let deleted = 0;
    while (!signal?.aborted) {
      let q = this.db.selectFrom('runs').select('run_id').where(filter).where('status', '<>', 'running');
      for (const column of order) q = q.orderBy(column);
      const ids = (await q.limit(batch).execute()).map((r) => r.run_id);
      if (ids.length === 0) break;
      // The filter again: a row that changed since it was selected is not deleted by mistake.
      const r = await this.db.deleteFrom('runs').where('run_id', 'in', ids).where(filter).where('status', '<>', 'running').executeTakeFirst();
      const n = num(r.numDeletedRows);
      deleted += n;
      if (ids.length < batch || n === 0) break;
      await nextTurn();
    }
    return deleted;
  }
}
