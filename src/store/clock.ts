// The database's clock, for times several processes must agree on (queued-run expiry, the
// manager lease): their own clocks may differ, the database's is one.
import { sql, type QueryExecutorProvider } from 'kysely';
import type { DbEngine } from './types.js';

export async function dbNow(db: QueryExecutorProvider, engine: DbEngine): Promise<Date> {
  const expr =
    engine === 'postgresql'
      ? sql<number>`extract(epoch from clock_timestamp()) * 1000`
      : engine === 'mysql'
        ? sql<number>`unix_timestamp(now(3)) * 1000`
        : sql<number>`(julianday('now') - 2440587.5) * 86400000`;
  const r = await sql<{ ms: number | string }>`select ${expr} as ms`.execute(db);
  return new Date(Math.round(Number(r.rows[0]!.ms)));
}
