// Run history: a row per run, written `running` at start and completed at finish.
import type { Kysely, Selectable } from 'kysely';
import type { RunsTable, Schema } from './schema.js';
import type { DbEngine, RunQuery, RunStore, RunToStore, StatsRow, StoredRun } from './types.js';
import { fits, iso, MAX_NAME, MAX_RUN_ID, nowIso, num } from './util.js';

const RUN_STATUSES = new Set(['success', 'failed', 'aborted', 'running']);

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
    await (this.engine === 'mysql'
      ? q.onDuplicateKeyUpdate(data)
      : q.onConflict((oc) => oc.column('run_id').doUpdateSet(data))
    ).execute();
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
      const running = await trx
        .selectFrom('runs')
        .select(['run_id', 'started_at'])
        .where('status', '=', 'running')
        .where('node_id', '=', nodeId)
        .execute();
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
}
