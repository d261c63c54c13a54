// Run history retention (SqlRunStore.purge) on all three engines: SQLite (a temp file), PostgreSQL
// and MariaDB/MySQL (a fresh database per engine, dropped afterwards). The servers must be running:
// when one is not, these tests fail; they never skip. The database setup is contract.test.ts's.
import { DeleteQueryNode, type KyselyPlugin } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/observability/log.js';
import { openStore, type SqlStore } from '../../src/store/index.js';
import { SqlRunStore } from '../../src/store/runs.js';
import { freshDatabase } from './helpers.js';

interface Row {
  run_id: string;
  pipeline?: string;
  status?: 'success' | 'failed' | 'aborted' | 'running';
  started_at: string;
  finished_at?: string | null;
}

const at = (day: number, ms = 0) => new Date(Date.UTC(2024, 0, day) + ms).toISOString();

/** Inserts runs as the daemon stores them, 500 rows per statement (thousands in a moment). */
async function insertRuns(store: SqlStore, rows: Row[]) {
  const values = rows.map((r) => {
    const running = r.status === 'running';
    const finished_at = running ? null : (r.finished_at ?? new Date(Date.parse(r.started_at) + 1000).toISOString());
    return {
      run_id: r.run_id,
      pipeline: r.pipeline ?? 'p1',
      node_id: 'node-a',
      status: r.status ?? 'success',
      started_at: r.started_at,
      finished_at,
      records_in: 1,
      records_out: 1,
      records_skipped: 0,
      bytes_in: 10,
      bytes_out: 10,
      dlq_count: 0,
      error: null,
      errors: '[]',
      duration_ms: finished_at === null ? null : Date.parse(finished_at) - Date.parse(r.started_at),
      pipeline_version: null,
    };
  });
  for (let i = 0; i < values.length; i += 500)
    await store.db
      .insertInto('runs')
      .values(values.slice(i, i + 500))
      .execute();
}

async function ids(store: SqlStore, pipeline?: string): Promise<string[]> {
  const runs = await store.runs.list({ pipeline, limit: 100_000, offset: 0 });
  return runs.map((r) => r.run_id).sort();
}

/** A run store on the same database that counts DELETE statements and may act before each. */
function countingRuns(store: SqlStore, beforeDelete: (n: number) => void = () => {}) {
  const counter = { deletes: 0 };
  const plugin: KyselyPlugin = {
    transformQuery(args) {
      if (DeleteQueryNode.is(args.node)) beforeDelete(++counter.deletes);
      return args.node;
    },
    transformResult: async (args) => args.result,
  };
  return { runs: new SqlRunStore(store.db.withPlugin(plugin), store.engine), counter };
}

describe.each(['sqlite', 'postgresql', 'mysql'] as const)('run retention on %s', (engine) => {
  let fresh: Awaited<ReturnType<typeof freshDatabase>>;
  let store: SqlStore;

  beforeAll(async () => {
    fresh = await freshDatabase(engine);
    store = await openStore({ ...fresh.opts, log: silentLogger });
  });

  afterAll(async () => {
    await store?.close();
    await fresh?.drop();
  });

  beforeEach(async () => {
    await store.db.deleteFrom('runs').execute();
  });

  it('age limit: deletes runs finished before the cutoff, whatever their outcome; keeps later ones and running ones', async () => {
    await insertRuns(store, [
      { run_id: 'old-success', started_at: at(1) },
      { run_id: 'old-failed', status: 'failed', started_at: at(2) },
      { run_id: 'old-aborted', status: 'aborted', started_at: at(3) },
      // Started long ago but finished after the cutoff: its age counts from the finish.
      { run_id: 'long-run', started_at: at(1), finished_at: at(20) },
      { run_id: 'old-running', status: 'running', started_at: at(1) },
      { run_id: 'recent', pipeline: 'p2', started_at: at(15) },
      { run_id: 'at-cutoff', started_at: at(10), finished_at: at(10) },
    ]);
    const r = await store.runs.purge({ finishedBefore: at(10), keepPerPipeline: 0 });
    expect(r).toEqual({ byAge: 3, byCount: 0 });
    expect(await ids(store)).toEqual(['at-cutoff', 'long-run', 'old-running', 'recent']);
    expect((await store.runs.get('old-running'))?.status).toBe('running');
    // Nothing left to do: a second pass removes nothing.
    expect(await store.runs.purge({ finishedBefore: at(10), keepPerPipeline: 0 })).toEqual({ byAge: 0, byCount: 0 });
  });

  it('count limit: keeps the newest N of each pipeline (list order, run_id breaking ties); a noisy pipeline never evicts another', async () => {
    const rows: Row[] = [];
    for (let i = 0; i < 8; i++) rows.push({ run_id: `noisy-${i}`, pipeline: 'noisy', started_at: at(10 + i) });
    // Same millisecond as noisy-7: run_id decides which of the two is newer.
    rows.push({ run_id: 'noisy-7b', pipeline: 'noisy', started_at: at(17) });
    for (let i = 0; i < 2; i++) rows.push({ run_id: `quiet-${i}`, pipeline: 'quiet', started_at: at(1 + i) });
    await insertRuns(store, rows);
    const r = await store.runs.purge({ finishedBefore: null, keepPerPipeline: 3 });
    expect(r).toEqual({ byAge: 0, byCount: 6 });
    expect(await ids(store, 'noisy')).toEqual(['noisy-6', 'noisy-7', 'noisy-7b']);
    // Older than every noisy run, yet kept: the limit is per pipeline.
    expect(await ids(store, 'quiet')).toEqual(['quiet-0', 'quiet-1']);
    const listed = await store.runs.list({ pipeline: 'noisy', limit: 3, offset: 0 });
    expect(listed.map((x) => x.run_id)).toEqual(['noisy-7b', 'noisy-7', 'noisy-6']);
  });

  it('count limit: running runs count among the newest and are never deleted, even beyond the limit', async () => {
    await insertRuns(store, [
      { run_id: 'stuck', status: 'running', started_at: at(1) },
      { run_id: 'a', started_at: at(2) },
      { run_id: 'b', started_at: at(3) },
      { run_id: 'c', started_at: at(4) },
      { run_id: 'now', status: 'running', started_at: at(5) },
    ]);
    const r = await store.runs.purge({ finishedBefore: null, keepPerPipeline: 2 });
    // Newest two: now (running) and c. b and a go; stuck is beyond the limit but running.
    expect(r).toEqual({ byAge: 0, byCount: 2 });
    expect(await ids(store)).toEqual(['c', 'now', 'stuck']);
  });

  it('both limits in one pass; 0 and null disable them', async () => {
    await insertRuns(store, [
      { run_id: 'expired', started_at: at(1) },
      { run_id: 'x1', started_at: at(20) },
      { run_id: 'x2', started_at: at(21) },
      { run_id: 'x3', started_at: at(22) },
    ]);
    expect(await store.runs.purge({ finishedBefore: null, keepPerPipeline: 0 })).toEqual({ byAge: 0, byCount: 0 });
    expect(await ids(store)).toHaveLength(4);
    expect(await store.runs.purge({ finishedBefore: at(10), keepPerPipeline: 2 })).toEqual({ byAge: 1, byCount: 1 });
    expect(await ids(store)).toEqual(['x2', 'x3']);
    await expect(store.runs.purge({ finishedBefore: 'yesterday', keepPerPipeline: 0 })).rejects.toThrow(/finishedBefore/);
  });

  it('deletes in batches of at most batchSize rows per statement, and reads are answered between batches', async () => {
    const rows: Row[] = [];
    for (let i = 0; i < 2500; i++) rows.push({ run_id: `old-${String(i).padStart(5, '0')}`, started_at: at(1, i) });
    rows.push({ run_id: 'keep', started_at: at(20) });
    await insertRuns(store, rows);
    const { runs, counter } = countingRuns(store);
    let purgeDone = false;
    const purging = runs.purge({ finishedBefore: at(10), keepPerPipeline: 0, batchSize: 100 }).then((r) => ((purgeDone = true), r));
    // A read issued once the purge has started is answered before it ends.
    const read = await store.runs.get('keep');
    expect(read?.run_id).toBe('keep');
    expect(purgeDone).toBe(false);
    expect(await purging).toEqual({ byAge: 2500, byCount: 0 });
    expect(counter.deletes).toBe(25);
    expect(await ids(store)).toEqual(['keep']);
  });

  it('the default batch is 1,000 rows; an aborted signal stops between batches, and the next pass finishes the work', async () => {
    const rows: Row[] = [];
    for (let i = 0; i < 2500; i++) rows.push({ run_id: `old-${String(i).padStart(5, '0')}`, pipeline: `p${i % 3}`, started_at: at(1, i) });
    await insertRuns(store, rows);
    const ac = new AbortController();
    const { runs, counter } = countingRuns(store, (n) => n === 2 && ac.abort());
    expect(await runs.purge({ finishedBefore: at(10), keepPerPipeline: 10, signal: ac.signal })).toEqual({ byAge: 2000, byCount: 0 });
    expect(counter.deletes).toBe(2);
    expect(await ids(store)).toHaveLength(500);
    // The oldest went first: what is left is the newest 500.
    expect((await ids(store))[0]).toBe('old-02000');
    // The next pass: 500 by age, nothing left for the count limit.
    expect(await store.runs.purge({ finishedBefore: at(10), keepPerPipeline: 10 })).toEqual({ byAge: 500, byCount: 0 });
  });
});
