// A database that disappears under a running daemon (PostgreSQL, spec doc 2 sections 4 and 7):
// readiness and every database-backed endpoint answer 503 "database unavailable" (not 500), the
// probes and in-memory views keep answering, a run triggered meanwhile ends the pipeline in
// `error` instead of crashing anything, and once the database is back everything stored is there
// and new runs are recorded. The PostgreSQL server must be running (these tests never skip).
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { isDatabaseUnavailable, openStore } from '../../src/store/index.js';
import { testDaemon } from '../helpers/daemon.js';
import { pace, until } from '../helpers/wait.js';
import { expectError, finishedRun, localYaml, register, SLOW, workArea, writeInput } from './_helpers.js';

const PG_ADMIN = process.env.SVC_TEST_PG_ADMIN_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const dbs: string[] = [];

async function admin(sqlText: string) {
  const c = new pg.Client({ connectionString: PG_ADMIN });
  await c.connect();
  try {
    return await c.query(sqlText);
  } finally {
    await c.end();
  }
}

async function freshDb(): Promise<{ name: string; url: string }> {
  const name = `svc_test_${randomBytes(6).toString('hex')}`;
  await admin(`create database ${name}`);
  dbs.push(name);
  const u = new URL(PG_ADMIN);
  u.pathname = `/${name}`;
  return { name, url: u.toString() };
}

const outage = async (db: string) => {
  await admin(`alter database ${db} allow_connections false`);
  await admin(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${db}'`);
};
const recover = (db: string) => admin(`alter database ${db} allow_connections true`);

afterAll(async () => {
  for (const db of dbs) await admin(`drop database if exists ${db} with (force)`);
});

/** A pino logger that keeps its lines (level >= warn) for assertions. */
function capturingLogger() {
  const lines: Record<string, any>[] = [];
  const log = pino({ level: 'warn' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { log, lines };
}

describe('the database becomes unavailable (PostgreSQL)', () => {
  it('answers 503 meanwhile, keeps serving, and loses nothing once it is back', async () => {
    const { name: db, url } = await freshDb();
    const { log, lines } = capturingLogger();
    const d = await testDaemon({ SVC_DB_URL: url }, { log });
    const w = workArea(3);
    await register(d, localYaml('p1', w));
    expect((await d.call('PUT', '/api/pipelines/p1', { yaml: localYaml('p1', { ...w, description: 'v2' }) })).status).toBe(200);
    await register(d, localYaml('p2', { ...w, outDir: `${w.root}/out2` }));
    const first = await d.call('POST', '/api/pipelines/p1/run');
    expect((await finishedRun(d, first.body.run_id)).status).toBe('success');
    const before = await d.call('GET', '/api/runs');
    expect(before.body).toHaveLength(1);

    await outage(db);

    const ready = await d.call('GET', '/api/ready');
    expect(ready.status).toBe(503);
    expect(Object.keys(ready.body).sort()).toEqual(['cluster', 'db', 'db_engine', 'db_path', 'pipelines_loaded', 'scheduler', 'status', 'uptime']);
    expect(ready.body).toMatchObject({ status: 'not ready', db_engine: 'postgresql', scheduler: 'running', pipelines_loaded: 2 });
    expect(ready.body.db).toMatch(/^unavailable: .*not currently accepting connections/);

    for (const path of ['/api/runs', '/api/pipelines/p1/versions', `/api/runs/${first.body.run_id}`]) {
      const r = await d.call('GET', path);
      const detail = expectError(r, 503);
      expect(detail, path).toMatch(/^database unavailable: .+; check that the postgresql server in SVC_DB_URL is running and accepts connections, then retry/);
      expect(r.headers.get('retry-after')).toBe('5');
    }
    expect((await d.call('GET', '/api/health')).status).toBe(200);
    // In-memory views keep answering.
    const list = await d.call('GET', '/api/pipelines');
    expect(list.status).toBe(200);
    expect(list.body.map((p: any) => p.name)).toEqual(['p1', 'p2']);

    // A run triggered now cannot be recorded: the pipeline ends in `error` (not stuck `running`).
    const during = await d.call('POST', '/api/pipelines/p2/run');
    expect(during.status, during.text).toBe(202);
    const p2 = await until(async () => {
      const r = await d.call('GET', '/api/pipelines/p2');
      return r.body.status === 'error' ? r.body : undefined;
    });
    expect(p2.error).toMatch(/could not be recorded.*not currently accepting connections/);
    expect(p2.active_run_id ?? null).toBeNull();
    expect((await d.call('GET', '/api/health')).status).toBe(200);

    await recover(db);

    await until(async () => (await d.call('GET', '/api/ready')).status === 200);
    expect((await d.call('GET', '/api/ready')).body).toMatchObject({ status: 'ready', db: 'ok' });
    const after = await d.call('GET', '/api/runs');
    expect(after.status).toBe(200);
    expect(after.body).toEqual(before.body);
    const versions = await d.call('GET', '/api/pipelines/p1/versions');
    expect(versions.body.map((v: any) => [v.version, v.is_active])).toEqual([
      [2, 1],
      [1, 0],
    ]);
    expect((await d.call('GET', '/api/pipelines/p1')).body).toMatchObject({ version: 2, description: 'v2' });

    // The next run works and is recorded; the pipeline leaves `error`.
    writeInput(w.inDir, 'b.ndjson', 2);
    const next = await d.call('POST', '/api/pipelines/p2/run');
    expect(next.status, next.text).toBe(202);
    expect(await finishedRun(d, next.body.run_id)).toMatchObject({ status: 'success', pipeline: 'p2', records_in: 5 });
    expect((await d.call('GET', '/api/pipelines/p2')).body).toMatchObject({ status: 'stopped', error: null });
    expect((await d.call('GET', '/api/runs')).body).toHaveLength(2);

    // Outage requests were warnings, never "request failed" 500s.
    expect(lines.filter((l) => l.msg === 'request failed')).toEqual([]);
    expect(lines.some((l) => l.msg === 'database unavailable')).toBe(true);
    await d.stop();
  });

  it('records the result of a run that was in progress when the database went away', async () => {
    const { name: db, url } = await freshDb();
    const { log, lines } = capturingLogger();
    const d = await testDaemon({ SVC_DB_URL: url }, { log });
    const w = workArea(6); // about 2 s
    await register(d, localYaml('slow', { ...w, extra: SLOW }));
    const t = await d.call('POST', '/api/pipelines/slow/run');
    expect(t.status).toBe(202);
    await until(async () => (await d.call('GET', '/api/runs')).body?.length === 1);
    await outage(db);
    // The run ends during the outage; its result cannot be written yet.
    const p = await until(async () => {
      const r = await d.call('GET', '/api/pipelines/slow');
      return r.body.status !== 'running' ? r.body : undefined;
    }, 10_000);
    expect(p).toMatchObject({ status: 'stopped', error: null, last_run_status: 'success' });
    expect(lines.some((l) => l.msg === 'database unavailable: the run outcome is written when it is back')).toBe(true);
    expectError(await d.call('GET', `/api/runs/${t.body.run_id}`), 503);
    await recover(db);
    // Written by the retry (every 2 s) once the database is back, not left `running`.
    const run = await finishedRun(d, t.body.run_id, 10_000);
    expect(run).toMatchObject({ status: 'success', records_in: 6, records_out: 6 });
    await d.stop();
  });
});

describe('a PostgreSQL connection dropped inside a transaction', () => {
  it('fails the transaction with an unavailable error instead of ending the process', async () => {
    const { url } = await freshDb();
    const store = await openStore({ url });
    try {
      const failed = await store.db
        .transaction()
        .execute(async (trx) => {
          const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
          // Dropped while this client is checked out with no statement running.
          await admin(`select pg_terminate_backend(${rows[0]!.pid})`);
          await pace(200); // the drop reaches this client's socket
          await sql`select 1`.execute(trx);
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(isDatabaseUnavailable(failed)).toBe(true);
      // The pool replaced the connection.
      await store.ping();
    } finally {
      await store.close();
    }
  });
});

describe('isDatabaseUnavailable', () => {
  const err = (props: Record<string, unknown>, message = 'x') => Object.assign(new Error(message), props);

  it('recognises connection-level errors of every engine', () => {
    for (const e of [
      err({ code: '57P01', severity: 'FATAL' }),
      err({ code: '57P03' }),
      err({ code: '08006' }),
      err({ code: '55000', severity: 'FATAL' }, 'database "x" is not currently accepting connections'),
      err({ code: 'ECONNREFUSED' }),
      err({ code: 'ECONNRESET' }),
      err({ code: 'EPIPE' }),
      err({ code: 'ETIMEDOUT' }),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      err({ code: 'PROTOCOL_CONNECTION_LOST', fatal: true }),
      err({ code: 'ER_CON_COUNT_ERROR' }),
      err({ code: 'SQLITE_BUSY' }),
      err({ code: 'SQLITE_CANTOPEN' }),
      err({ code: 'SQLITE_IOERR_WRITE' }),
      new AggregateError([err({ code: 'ECONNREFUSED' })], ''),
      new Error('wrapped', { cause: err({ code: '57P01' }) }),
    ]) {
      expect(isDatabaseUnavailable(e), `${(e as any).code} ${e.message}`).toBe(true);
    }
  });

  it('leaves query errors alone', () => {
    for (const e of [
      err({ code: '23505', severity: 'ERROR' }),
      err({ code: '55000', severity: 'ERROR' }),
      err({ code: '42P01', severity: 'ERROR' }),
      err({ code: 'ER_DUP_ENTRY', errno: 1062 }),
      err({ code: 'SQLITE_CONSTRAINT_UNIQUE' }),
      new Error('pipeline name must be a non-empty string'),
      undefined,
      'Connection terminated',
    ]) {
      expect(isDatabaseUnavailable(e)).toBe(false);
    }
  });
});
