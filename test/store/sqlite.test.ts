// What only the embedded engine has (a file, WAL, reopen), URL handling, and the list-speed
// sanity check over 100,000 runs.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/observability/log.js';
import { defaultDbPath, MIGRATION_NAMES, openStore, redactUrl, resolveTarget, type RunQuery, type SqlStore } from '../../src/store/index.js';
import { tempDir } from '../helpers/fs.js';

describe('sqlite file store', () => {
  it('creates parent directories, uses WAL and a busy timeout', async () => {
    const path = join(tempDir(), 'a', 'b', 'svc.db');
    const store = await openStore({ path, log: silentLogger });
    try {
      expect(existsSync(path)).toBe(true);
      expect(store.engine).toBe('sqlite');
      expect(store.path).toBe(path);
      const mode = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(store.db);
      expect(mode.rows[0]?.journal_mode).toBe('wal');
      const busy = await sql<{ timeout: number }>`pragma busy_timeout`.execute(store.db);
      expect(busy.rows[0]?.timeout).toBe(5000);
      await store.ping();
    } finally {
      await store.close();
    }
    await store.close(); // twice is fine
  });

  it('keeps everything across close and reopen', async () => {
    const path = join(tempDir(), 'svc.db');
    const a = await openStore({ path });
    await a.pipelines.save({ name: 'p', yaml: 'v1', origin: 'api' });
    await a.pipelines.save({ name: 'p', yaml: 'v2', origin: 'api' });
    await a.runs.start({ run_id: 'r1', pipeline: 'p', node_id: 'n', started_at: '2024-05-01T10:00:00Z' });
    await a.alerts.add('p', { name: 'x', condition: 'failed', action: 'webhook', webhook_url: 'http://h', cooldown_seconds: 5 });
    await a.alerts.setFired('p', 'x', '2024-05-01T10:00:00Z');
    await a.users.setPasswordHash('admin', 'scrypt$a$b');
    await a.processed.add('p', '/in/f.csv');
    await a.close();

    const b = await openStore({ path });
    try {
      expect(await b.pipelines.get('p')).toMatchObject({ yaml: 'v2', version: 2 });
      expect((await b.pipelines.versions('p')).map((v) => v.version)).toEqual([2, 1]);
      expect(await b.runs.get('r1')).toMatchObject({ status: 'running' });
      expect(await b.runs.abortInterrupted('n', 'restarted')).toBe(1);
      expect(await b.alerts.list('p')).toHaveLength(1);
      expect(await b.alerts.lastFired('p', 'x')).toBe('2024-05-01T10:00:00.000Z');
      expect(await b.users.passwordHash('admin')).toBe('scrypt$a$b');
      expect(await b.processed.has('p', '/in/f.csv')).toBe(true);
    } finally {
      await b.close();
    }
  });

  it('processes opening a new file at the same time all get the migrated schema and write side by side', { timeout: 120_000 }, async () => {
    const path = join(tempDir(), 'svc.db');
    const index = fileURLToPath(new URL('../../src/store/index.ts', import.meta.url));
    const code = `const { openStore } = await import(${JSON.stringify(index)});
      const s = await openStore({ path: ${JSON.stringify(path)} });
      await s.pipelines.save({ name: 'p' + process.pid, yaml: 'x', origin: 'api' });
      await s.pipelines.save({ name: 'race', yaml: 'a' + process.pid, origin: 'api' });
      await s.pipelines.save({ name: 'race', yaml: 'b' + process.pid, origin: 'api' });
      await s.close();`;
    const run = () => promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code]);
    await Promise.all([run(), run(), run(), run()]);
    const store = await openStore({ path });
    try {
      expect(await store.pipelines.list()).toHaveLength(5);
      const versions = await store.pipelines.versions('race');
      expect(versions.map((v) => v.version)).toEqual([8, 7, 6, 5, 4, 3, 2, 1]);
      expect(versions.filter((v) => v.is_active === 1).map((v) => v.version)).toEqual([8]);
      const names = await sql<{ name: string }>`select name from kysely_migration`.execute(store.db);
      expect(names.rows).toHaveLength(MIGRATION_NAMES.length);
    } finally {
      await store.close();
    }
  });

  it("accepts ':memory:'", async () => {
    const store = await openStore({ path: ':memory:' });
    expect(store.path).toBe(':memory:');
    await store.pipelines.save({ name: 'm', yaml: 'x', origin: 'api' });
    expect((await store.pipelines.list()).map((p) => p.name)).toEqual(['m']);
    await store.close();
  });

  it('refuses a database migrated by a newer svc', async () => {
    const path = join(tempDir(), 'svc.db');
    const a = await openStore({ path });
    await sql`insert into kysely_migration (name, timestamp) values ('9999_from_the_future', '2030-01-01T00:00:00.000Z')`.execute(a.db);
    await a.close();
    await expect(openStore({ path })).rejects.toThrow(/newer svc/);
  });
});

/** The error a promise rejects with; fails the test when it resolves. */
async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(Error);
    return err as Error;
  }
  throw new Error('expected a rejection');
}

describe('database URL', () => {
  it('rejects an unsupported scheme naming SVC_DB_URL and the accepted schemes', async () => {
    for (const url of ['sqlite:///tmp/x.db', 'redis://localhost:6379', 'http://db']) {
      const err = await failure(openStore({ url }));
      expect(err.message).toMatch(/SVC_DB_URL/);
      expect(err.message).toMatch(/postgresql:\/\/, postgres:\/\/, mysql:\/\/ and mariadb:\/\//);
    }
    await expect(openStore({ url: 'just-a-name' })).rejects.toThrow(/SVC_DB_URL: unsupported value "just-a-name"/);
  });

  it('needs a database name for MySQL/MariaDB', async () => {
    await expect(openStore({ url: 'mysql://root@127.0.0.1:3306/' })).rejects.toThrow(/names no database/);
  });

  it('maps schemes to engines; empty URL means the SQLite file (default in ~/.svc)', () => {
    expect(resolveTarget({ url: 'postgres://u@h/db' }).engine).toBe('postgresql');
    expect(resolveTarget({ url: 'POSTGRESQL://u@h/db' }).engine).toBe('postgresql');
    expect(resolveTarget({ url: 'mariadb://u@h/db' }).engine).toBe('mysql');
    expect(resolveTarget({ url: '  ', path: 'rel/svc.db' })).toEqual({ engine: 'sqlite', url: null, path: join(process.cwd(), 'rel', 'svc.db') });
    expect(resolveTarget({})).toEqual({ engine: 'sqlite', url: null, path: defaultDbPath() });
    expect(defaultDbPath()).toBe(join(homedir(), '.svc', 'svc.db'));
  });

  it('fails loudly (without the password) when the server is unreachable', async () => {
    const err = await failure(openStore({ url: 'postgresql://svc:s3cret@127.0.0.1:1/svc' }));
    expect(err.message).toMatch(/cannot connect to postgresql database postgresql:\/\/svc:\*\*\*@127\.0\.0\.1:1\/svc/);
    expect(err.message).not.toContain('s3cret');
    expect(redactUrl('mysql://root:pw@h:3306/db')).toBe('mysql://root:***@h:3306/db');
    expect(redactUrl('mysql://root@h:3306/db')).toBe('mysql://root@h:3306/db');
  });
});

describe('run list speed (SQLite, 100,000 runs)', () => {
  async function fill(store: SqlStore, n: number) {
    const statuses = ['success', 'success', 'success', 'failed', 'aborted'];
    const t0 = Date.UTC(2024, 0, 1);
    await store.db.transaction().execute(async (trx) => {
      for (let base = 0; base < n; base += 1000) {
        const rows = [];
        for (let i = base; i < Math.min(n, base + 1000); i++) {
          const started = t0 + i * 60_000;
          rows.push({
            run_id: `run-${String(i).padStart(6, '0')}`,
            pipeline: `pipeline-${i % 50}`,
            node_id: 'node-a',
            status: statuses[i % statuses.length]!,
            started_at: new Date(started).toISOString(),
            finished_at: new Date(started + 1500).toISOString(),
            records_in: 100,
            records_out: 99,
            records_skipped: 1,
            bytes_in: 1000,
            bytes_out: 990,
            dlq_count: 0,
            error: null,
            errors: '["row 7: bad value"]',
            duration_ms: 1500,
          });
        }
        await trx.insertInto('runs').values(rows).execute();
      }
    });
  }

  async function median(store: SqlStore, q: RunQuery): Promise<number> {
    for (let i = 0; i < 3; i++) await store.runs.list(q); // warm-up
    const times: number[] = [];
    for (let i = 0; i < 7; i++) {
      const t = performance.now();
      const rows = await store.runs.list(q);
      times.push(performance.now() - t);
      expect(rows.length).toBeGreaterThan(0);
    }
    return times.sort((a, b) => a - b)[3]!;
  }

  it('lists 100 of 100,000 runs in well under 20 ms, through the indexes', async () => {
    const store = await openStore({ path: join(tempDir(), 'svc.db') });
    try {
      await fill(store, 100_000);
      const queries: RunQuery[] = [
        { limit: 100, offset: 0 },
        { limit: 100, offset: 1000 },
        { pipeline: 'pipeline-7', limit: 100, offset: 0 },
        { status: 'failed', limit: 100, offset: 0 },
        { from_dt: '2024-02-01T00:00:00Z', limit: 100, offset: 0 },
        { pipeline: 'pipeline-9', status: 'aborted', from_dt: '2024-01-15T00:00:00Z', limit: 100, offset: 0 },
      ];
      const timings: Record<string, number> = {};
      for (const q of queries) {
        const ms = await median(store, q);
        timings[JSON.stringify(q)] = Math.round(ms * 100) / 100;
        expect(ms, JSON.stringify(q)).toBeLessThan(20);
      }
      console.log('run list medians (ms):', timings);
      // No full sort: each list query is answered in index order.
      for (const where of [sql``, sql`where pipeline = 'pipeline-7'`, sql`where status = 'failed'`, sql`where started_at >= '2024-02-01'`]) {
        const plan = await sql<{ detail: string }>`explain query plan select * from runs ${where} order by started_at desc, run_id desc limit 100`.execute(
          store.db,
        );
        const text = plan.rows.map((r) => r.detail).join(' | ');
        expect(text).toMatch(/USING INDEX runs_/);
        expect(text).not.toMatch(/TEMP B-TREE/);
      }
      const stats = await store.runs.stats('2024-01-01T00:00:00Z');
      expect(stats).toHaveLength(50);
      expect(stats[0]).toEqual({
        pipeline: 'pipeline-0',
        records_in: 200_000,
        records_out: 198_000,
        error_rate: 0.01,
        avg_duration_seconds: 1.5,
        run_count: 2000,
      });
      expect((await store.runs.latest()).size).toBe(50);
    } finally {
      await store.close();
    }
  });
});
