// The durable queue of manual runs (manager mode, SVC_QUEUE_MANUAL_RUNS): a run asked for while no
// worker is healthy waits in the `run_queue` table until one is, or until its TTL
// (SVC_QUEUE_TTL_SECONDS) passes. Times come from the database's clock, so the expiry holds across
// manager restarts and between managers whose clocks differ.
//
// Claiming: on PostgreSQL and MySQL/MariaDB the oldest row is taken with FOR UPDATE SKIP LOCKED in a
// transaction held while the run is dispatched, and deleted in it once a worker took the run: two
// managers never take one row, and a manager that dies mid-dispatch leaves the row in place. SQLite
// (one manager only) takes the row without a lock. A row whose run is already in the run history
// (dispatched just before a crash) is dropped, not dispatched again.
import type { Kysely, Transaction } from 'kysely';
import { dbNow } from '../store/clock.js';
import type { Schema } from '../store/schema.js';
import type { DbEngine } from '../store/types.js';

export interface QueuedRun {
  run_id: string;
  pipeline: string;
  flush: boolean;
  enqueued_at: string;
  expires_at: string;
}

type Row = Schema['run_queue'];

const toQueued = (r: { run_id: string; pipeline: string; flush: unknown; enqueued_at: string; expires_at: string }): QueuedRun => ({
  run_id: r.run_id,
  pipeline: r.pipeline,
  flush: Number(r.flush) === 1,
  enqueued_at: r.enqueued_at,
  expires_at: r.expires_at,
});

export class SqlRunQueue {
  constructor(
    private readonly db: Kysely<Schema>,
    private readonly engine: DbEngine,
  ) {}

  /** The database's clock. */
  now(): Promise<Date> {
    return dbNow(this.db, this.engine);
  }

  async enqueue(run: { run_id: string; pipeline: string; flush: boolean; ttlSeconds: number }): Promise<QueuedRun> {
    const now = await this.now();
    const row = {
      run_id: run.run_id,
      pipeline: run.pipeline,
      flush: run.flush ? 1 : 0,
      enqueued_at: now.toISOString(),
      expires_at: new Date(now.getTime() + run.ttlSeconds * 1000).toISOString(),
    };
    await this.db.insertInto('run_queue').values(row).execute();
    return toQueued(row);
  }

  async list(): Promise<QueuedRun[]> {
    return (await this.db.selectFrom('run_queue').selectAll().orderBy('enqueued_at').orderBy('run_id').execute()).map(toQueued);
  }

  /**
   * Removes the rows whose TTL passed (by the database's clock) and hands each to `expire` first
   * (which records its failed run); a row `expire` throws for stays for the next pass.
   */
  async expire(expire: (q: QueuedRun, now: Date) => Promise<void>): Promise<number> {
    const now = await this.now();
    let n = 0;
    for (;;) {
      const done = await this.withOldest(now, 'expired', async (q, trx) => {
        await expire(q, now);
        await trx.deleteFrom('run_queue').where('run_id', '=', q.run_id).execute();
        return true;
      });
      if (done === undefined) return n;
      n++;
    }
  }

  /**
   * Takes the oldest unexpired row and hands it to `dispatch`; the row is deleted when dispatch
   * returns true (the run was placed or is known already) and kept when it returns false.
   * Undefined when the queue has nothing to take.
   */
  async claim(dispatch: (q: QueuedRun) => Promise<boolean>): Promise<{ run: QueuedRun; taken: boolean } | undefined> {
    const now = await this.now();
    let run: QueuedRun | undefined;
    const taken = await this.withOldest(now, 'pending', async (q, trx) => {
      run = q;
      const ok = await dispatch(q);
      if (ok) await trx.deleteFrom('run_queue').where('run_id', '=', q.run_id).execute();
      return ok;
    });
    return taken === undefined ? undefined : { run: run!, taken };
  }

  /** Pipelines with a queued run, and how many. */
  async depth(): Promise<Map<string, number>> {
    const rows = await this.db.selectFrom('run_queue').select(['pipeline']).execute();
    const out = new Map<string, number>();
    for (const r of rows) out.set(r.pipeline, (out.get(r.pipeline) ?? 0) + 1);
    return out;
  }

  /** Forgets the queued runs of a deleted pipeline. */
  async removePipeline(pipeline: string): Promise<void> {
    await this.db.deleteFrom('run_queue').where('pipeline', '=', pipeline).execute();
  }

  /** The oldest row that is `expired` or still `pending` at `now`, locked where the engine can. */
  private async withOldest<T>(
    now: Date,
    which: 'expired' | 'pending',
    fn: (q: QueuedRun, trx: Kysely<Schema> | Transaction<Schema>) => Promise<T>,
  ): Promise<T | undefined> {
    const at = now.toISOString();
    const select = (db: Kysely<Schema> | Transaction<Schema>) => {
      const q = db
        .selectFrom('run_queue')
        .selectAll()
        .where('expires_at', which === 'expired' ? '<=' : '>', at)
        .orderBy('enqueued_at')
        .orderBy('run_id')
        .limit(1);
      return this.engine === 'sqlite' ? q : q.forUpdate().skipLocked();
    };
    if (this.engine === 'sqlite') {
      // One manager on SQLite, and its single connection must stay free for what `fn` writes.
      const row = (await select(this.db).executeTakeFirst()) as Row | undefined;
      return row ? fn(toQueued(row as never), this.db) : undefined;
    }
    return this.db.transaction().execute(async (trx) => {
      const row = (await select(trx).executeTakeFirst()) as Row | undefined;
      return row ? fn(toQueued(row as never), trx) : undefined;
    });
  }
}
