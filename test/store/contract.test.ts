// The store contract, run against all three engines: SQLite (a temp file), PostgreSQL and
// MariaDB/MySQL (a fresh database per engine, dropped afterwards). The servers must be running:
// when one is not, these tests fail; they never skip.
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/observability/log.js';
import { createKysely, resolveTarget } from '../../src/store/db.js';
import {
  ALERT_HISTORY_LIMIT,
  DbProcessedFiles,
  DuplicateAlertRuleError,
  LATEST_MIGRATION,
  MIGRATION_NAMES,
  openStore,
  type AlertDeliveryToStore,
  type AlertRule,
  type SqlStore,
} from '../../src/store/index.js';
import { migrate } from '../../src/store/migrations.js';
import type { RunToStore } from '../../src/store/types.js';
import { freshDatabase, type Fresh } from './helpers.js';

const TABLES = [
  'pipelines',
  'pipeline_versions',
  'runs',
  'alert_rules',
  'alert_cooldowns',
  'alert_deliveries',
  'users',
  'processed_files',
  'run_queue',
  'stream_placements',
  'transform_state',
  'transform_state_targets',
] as const;

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** A run record as the daemon stores it (pipeline_version null: not known). */
function rec(over: Partial<RunToStore> & { run_id: string }): RunToStore & { pipeline_version: number | null } {
  return {
    pipeline: 'p1',
    node_id: 'node-a',
    status: 'success',
    started_at: '2024-05-01T10:00:00.000Z',
    finished_at: '2024-05-01T10:00:01.000Z',
    records_in: 0,
    records_out: 0,
    records_filtered: 0,
    records_skipped: 0,
    bytes_in: 0,
    bytes_out: 0,
    dlq_count: 0,
    error: null,
    errors: [],
    pipeline_version: null,
    ...over,
  };
}

const rule = (name: string, over: Partial<AlertRule> = {}): AlertRule => ({
  name,
  condition: 'records_in == 0',
  action: 'webhook',
  webhook_url: 'http://hooks.example/x',
  email_to: null,
  subject: null,
  cooldown_seconds: 300,
  ...over,
});

/** Every value of a row is a string, a number (never a bigint or numeric string), null or an array. */
function expectPlainTypes(obj: object) {
  for (const [k, v] of Object.entries(obj)) {
    if (
      k.startsWith('records_') ||
      k.startsWith('bytes_') ||
      ['dlq_count', 'version', 'id', 'is_active', 'run_count', 'cooldown_seconds', 'error_rate', 'avg_duration_seconds', 'attempt'].includes(k)
    ) {
      expect(typeof v, k).toBe('number');
    }
  }
}

describe.each(['sqlite', 'postgresql', 'mysql'] as const)('store on %s', (engine) => {
  let fresh: Fresh;
  let store: SqlStore;

  beforeAll(async () => {
    fresh = await freshDatabase(engine, 'nested/dir/svc.db');
    store = await openStore({ ...fresh.opts, log: silentLogger });
  });

  afterAll(async () => {
    await store?.close();
    await fresh?.drop();
  });

  beforeEach(async () => {
    for (const t of TABLES) await store.db.deleteFrom(t).execute();
  });

  describe('migrations', () => {
    it('creates every table from scratch and records every migration', async () => {
      expect(store.engine).toBe(engine);
      expect(store.path === null).toBe(engine !== 'sqlite');
      const rows = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(store.db);
      expect(rows.rows.map((r) => r.name)).toEqual(MIGRATION_NAMES);
      expect(MIGRATION_NAMES.length).toBeGreaterThanOrEqual(2);
      for (const t of TABLES) {
        const r = await store.db
          .selectFrom(t)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow();
        expect(Number(r.n), t).toBe(0);
      }
      // Already at the latest version: nothing more to apply.
      expect(await migrate(store.db, engine, silentLogger)).toEqual([]);
    });

    it('upgrades a database made by the first migration only, keeping its data', async () => {
      const old = await freshDatabase(engine, 'nested/dir/svc.db');
      try {
        const db = createKysely(resolveTarget(old.opts), silentLogger);
        expect(await migrate(db, engine, silentLogger, '0001_initial')).toEqual(['0001_initial']);
        // Data as a release with only 0001 wrote it.
        await db
          .insertInto('pipelines')
          .values({ name: 'old', yaml: 'v: 2', origin: 'file', file: '/p/old.yaml', version: 2, updated_at: '2024-01-02T00:00:00.000Z' })
          .execute();
        await db
          .insertInto('pipeline_versions')
          .values([
            { name: 'old', version: 1, yaml: 'v: 1', created_at: '2024-01-01T00:00:00.000Z', is_active: 0 },
            { name: 'old', version: 2, yaml: 'v: 2', created_at: '2024-01-02T00:00:00.000Z', is_active: 1 },
          ])
          .execute();
        const node = 'n';
        await sql`insert into runs (run_id, pipeline, node_id, status, started_at, finished_at, records_in, records_out, records_skipped, bytes_in, bytes_out, dlq_count, error, errors) values
          ('r1', 'old', ${node}, 'success', '2024-01-03T00:00:00.000Z', '2024-01-03T00:00:01.500Z', 10, 5, 1, 10, 10, 0, null, ${JSON.stringify(['bad row é'])}),
          ('r2', 'old', ${node}, 'failed', '2024-01-03T00:01:00.000Z', '2024-01-03T00:01:02.250Z', 10, 5, 1, 10, 10, 0, 'boom', '[]'),
          ('r3', 'old', ${node}, 'running', '2024-01-03T00:02:00.000Z', null, 0, 0, 0, 0, 0, 0, null, '[]')`.execute(db);
        await db
          .insertInto('alert_rules')
          .values({
            pipeline: 'old',
            name: 'a',
            condition: 'failed',
            action: 'email',
            webhook_url: null,
            email_to: 'ops@example.com',
            subject: 'S',
            cooldown_seconds: 60,
          })
          .execute();
        await db.insertInto('alert_cooldowns').values({ pipeline: 'old', rule: 'a', fired_at: '2024-01-03T00:00:00.000Z' }).execute();
        await db.insertInto('users').values({ username: 'admin', password_hash: 'scrypt$s$d', updated_at: '2024-01-01T00:00:00.000Z' }).execute();
        await db.destroy();

        const s = await openStore({ ...old.opts, log: silentLogger });
        try {
          const names = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(s.db);
          expect(names.rows.map((r) => r.name)).toEqual(MIGRATION_NAMES);
          expect(await s.pipelines.get('old')).toEqual({
            name: 'old',
            yaml: 'v: 2',
            origin: 'file',
            file: '/p/old.yaml',
            version: 2,
            updated_at: '2024-01-02T00:00:00.000Z',
            // 0007: a pipeline saved before desired states were remembered has none yet.
            desired: null,
          });
          expect((await s.pipelines.versions('old')).map((v) => [v.version, v.is_active])).toEqual([
            [2, 1],
            [1, 0],
          ]);
          expect(await s.runs.get('r1')).toMatchObject({ status: 'success', records_in: 10, errors: ['bad row é'] });
          expect(await s.runs.get('r3')).toMatchObject({ status: 'running', finished_at: null });
          // 0004: runs recorded before it do not know their pipeline version.
          expect((await s.runs.get('r1'))?.pipeline_version).toBeNull();
          // 0002 backfilled durations: (1.5 s + 2.25 s) / 2.
          expect(await s.runs.stats('2024-01-01T00:00:00.000Z')).toEqual([
            { pipeline: 'old', records_in: 20, records_out: 10, error_rate: 0.1, avg_duration_seconds: 1.875, run_count: 2 },
          ]);
          expect(await s.alerts.list('old')).toEqual([
            { name: 'a', condition: 'failed', action: 'email', webhook_url: null, email_to: 'ops@example.com', subject: 'S', cooldown_seconds: 60 },
          ]);
          expect(await s.alerts.lastFired('old', 'a')).toBe('2024-01-03T00:00:00.000Z');
          expect(await s.users.passwordHash('admin')).toBe('scrypt$s$d');
          // The new features work on the upgraded database.
          await s.pipelines.save({ name: 'old', yaml: 'v: 3', origin: 'api' });
          expect((await s.pipelines.get('old'))?.version).toBe(3);
          expect(await s.pipelines.setDesired('old', 'stopped')).toBe(true);
          expect((await s.pipelines.get('old'))?.desired).toBe('stopped');
          for (const t of ['run_queue', 'stream_placements', 'transform_state'] as const) {
            expect(await s.db.selectFrom(t).selectAll().execute()).toEqual([]);
          }
        } finally {
          await s.close();
        }
      } finally {
        await old.drop();
      }
    });
  });

  describe('runs.records_filtered (migration 0007)', () => {
    it('an upgraded database gives its earlier runs 0 filtered; new runs keep what they filtered, also through finishOnce', async () => {
      const old = await freshDatabase(engine, 'nested/dir/svc.db');
      try {
        const db = createKysely(resolveTarget(old.opts), silentLogger);
        expect(await migrate(db, engine, silentLogger, '0006_dlq_replayed')).toContain('0006_dlq_replayed');
        await sql`insert into runs (run_id, pipeline, node_id, status, started_at, finished_at, records_in, records_out, records_skipped, bytes_in, bytes_out, dlq_count, error, errors, duration_ms) values
          ('before', 'p', 'n', 'success', '2024-01-03T00:00:00.000Z', '2024-01-03T00:00:01.000Z', 200, 171, 0, 10, 10, 0, null, '[]', 1000)`.execute(db);
        await db.destroy();

        const s = await openStore({ ...old.opts, log: silentLogger });
        try {
          expect(await migrate(s.db, engine, silentLogger)).toEqual([]);
          expect(await s.runs.get('before')).toMatchObject({ records_in: 200, records_out: 171, records_filtered: 0, records_skipped: 0 });
          await s.runs.finish(rec({ run_id: 'after', pipeline: 'p', records_in: 200, records_out: 171, records_filtered: 29 }));
          const after = await s.runs.get('after');
          expect(after).toMatchObject({ records_in: 200, records_out: 171, records_filtered: 29 });
          expectPlainTypes(after!);
          await s.runs.start({ run_id: 'once', pipeline: 'p', node_id: 'n', started_at: '2024-05-01T10:00:00.000Z' });
          expect((await s.runs.get('once'))?.records_filtered).toBe(0);
          expect(await s.runs.finishOnce(rec({ run_id: 'once', pipeline: 'p', records_in: 2 ** 40, records_filtered: 2 ** 40 - 1, records_out: 1 }))).toBe(
            true,
          );
          expect(await s.runs.get('once')).toMatchObject({ records_in: 2 ** 40, records_filtered: 2 ** 40 - 1 });
          expect((await s.runs.list({ pipeline: 'p', limit: 10, offset: 0 })).map((r) => [r.run_id, r.records_filtered]).sort()).toEqual([
            ['after', 29],
            ['before', 0],
            ['once', 2 ** 40 - 1],
          ]);
          // A worker of an earlier release sends no records_filtered: stored as 0.
          const { records_filtered: _, ...withoutFiltered } = rec({ run_id: 'legacy', pipeline: 'p', records_in: 5, records_out: 5 });
          await s.runs.finish(withoutFiltered as RunToStore);
          expect((await s.runs.get('legacy'))?.records_filtered).toBe(0);
          await expect(s.runs.finish(rec({ run_id: 'neg', records_filtered: -1 }))).rejects.toThrow(/records_filtered must be a non-negative number/);
        } finally {
          await s.close();
        }
      } finally {
        await old.drop();
      }
    });
  });

  describe('pipelines', () => {
    it('saves the first version, gets and lists it', async () => {
      expect(await store.pipelines.get('p')).toBeUndefined();
      expect(await store.pipelines.list()).toEqual([]);
      const saved = await store.pipelines.save({ name: 'p', yaml: 'a: 1\n', origin: 'api' });
      expect(saved).toMatchObject({ name: 'p', yaml: 'a: 1\n', origin: 'api', file: null, version: 1 });
      expect(saved.updated_at).toMatch(ISO);
      expect(await store.pipelines.get('p')).toEqual(saved);
      expect(await store.pipelines.list()).toEqual([saved]);
      expectPlainTypes(saved);
      const fromFile = await store.pipelines.save({ name: 'f', yaml: 'b: 1', origin: 'file', file: '/etc/svc/f.yaml' });
      expect(fromFile).toMatchObject({ origin: 'file', file: '/etc/svc/f.yaml', version: 1 });
      expect((await store.pipelines.list()).map((p) => p.name)).toEqual(['f', 'p']);
    });

    it('numbers versions 1, 2, 3; identical YAML makes no new version; exactly one is active', async () => {
      await store.pipelines.save({ name: 'p', yaml: 'v1', origin: 'api' });
      const same = await store.pipelines.save({ name: 'p', yaml: 'v1', origin: 'api' });
      expect(same.version).toBe(1);
      expect(await store.pipelines.versions('p')).toHaveLength(1);
      await store.pipelines.save({ name: 'p', yaml: 'v2', origin: 'api' });
      const third = await store.pipelines.save({ name: 'p', yaml: 'v3', origin: 'api' });
      expect(third.version).toBe(3);
      const versions = await store.pipelines.versions('p');
      expect(versions.map((v) => [v.version, v.is_active])).toEqual([
        [3, 1],
        [2, 0],
        [1, 0],
      ]);
      for (const v of versions) {
        expect(v.name).toBe('p');
        expect(v.created_at).toMatch(ISO);
        expectPlainTypes(v);
      }
      expect(new Set(versions.map((v) => v.id)).size).toBe(3);
      expect(await store.pipelines.versionYaml('p', 2)).toBe('v2');
      expect(await store.pipelines.versionYaml('p', 4)).toBeUndefined();
      expect(await store.pipelines.versionYaml('nope', 1)).toBeUndefined();
      expect(await store.pipelines.versions('nope')).toEqual([]);
    });

    it('remembers the desired state: set when the pipeline is created, kept by new versions and rollbacks, changed by setDesired', async () => {
      expect((await store.pipelines.save({ name: 'p', yaml: 'v1', origin: 'api', desired: 'stopped' })).desired).toBe('stopped');
      expect((await store.pipelines.save({ name: 'q', yaml: 'q1', origin: 'api' })).desired).toBeNull();
      // A new version, the same YAML from another origin, an upsert: the pipeline keeps its state.
      expect((await store.pipelines.save({ name: 'p', yaml: 'v2', origin: 'api', desired: 'running' })).desired).toBe('stopped');
      expect((await store.pipelines.save({ name: 'p', yaml: 'v2', origin: 'file', file: '/p.yaml', desired: 'running', mode: 'upsert' })).desired).toBe(
        'stopped',
      );
      expect(await store.pipelines.activate('p', 1)).toBe(true);
      expect(await store.pipelines.get('p')).toMatchObject({ version: 1, desired: 'stopped' });
      expect(await store.pipelines.setDesired('p', 'running')).toBe(true);
      expect(await store.pipelines.setDesired('p', 'running')).toBe(true);
      expect((await store.pipelines.get('p'))?.desired).toBe('running');
      expect((await store.pipelines.list()).map((x) => [x.name, x.desired])).toEqual([
        ['p', 'running'],
        ['q', null],
      ]);
      expect(await store.pipelines.setDesired('nope', 'stopped')).toBe(false);
      await expect(store.pipelines.setDesired('p', 'paused' as never)).rejects.toThrow(/running or stopped/);
      // Deleted and registered again: a new pipeline, with the state it is created in.
      await store.pipelines.delete('p');
      expect((await store.pipelines.save({ name: 'p', yaml: 'v1', origin: 'api', desired: 'running', mode: 'create' })).desired).toBe('running');
    });

    it('identical YAML with a new origin updates the origin only', async () => {
      await store.pipelines.save({ name: 'p', yaml: 'x', origin: 'file', file: '/a.yaml' });
      const r = await store.pipelines.save({ name: 'p', yaml: 'x', origin: 'api' });
      expect(r).toMatchObject({ origin: 'api', file: null, version: 1 });
      expect(await store.pipelines.get('p')).toEqual(r);
      expect(await store.pipelines.versions('p')).toHaveLength(1);
    });

    it('activates an older version (rollback) and keeps numbering after it', async () => {
      for (const y of ['v1', 'v2', 'v3']) await store.pipelines.save({ name: 'p', yaml: y, origin: 'api' });
      expect(await store.pipelines.activate('p', 1)).toBe(true);
      expect(await store.pipelines.get('p')).toMatchObject({ yaml: 'v1', version: 1 });
      expect((await store.pipelines.versions('p')).map((v) => [v.version, v.is_active])).toEqual([
        [3, 0],
        [2, 0],
        [1, 1],
      ]);
      // Saving the active YAML again is no change; new YAML becomes version 4.
      expect((await store.pipelines.save({ name: 'p', yaml: 'v1', origin: 'api' })).version).toBe(1);
      expect((await store.pipelines.save({ name: 'p', yaml: 'v4', origin: 'api' })).version).toBe(4);
      expect((await store.pipelines.versions('p')).filter((v) => v.is_active === 1).map((v) => v.version)).toEqual([4]);
      // Activating the active version is fine and changes nothing.
      expect(await store.pipelines.activate('p', 4)).toBe(true);
      expect(await store.pipelines.activate('p', 9)).toBe(false);
      expect(await store.pipelines.activate('p', 1.5)).toBe(false);
      expect(await store.pipelines.activate('nope', 1)).toBe(false);
      expect(await store.pipelines.get('p')).toMatchObject({ yaml: 'v4', version: 4 });
    });

    it('deletes a pipeline with its versions; a new one starts at version 1', async () => {
      await store.pipelines.save({ name: 'p', yaml: 'v1', origin: 'api' });
      await store.pipelines.save({ name: 'p', yaml: 'v2', origin: 'api' });
      await store.pipelines.save({ name: 'other', yaml: 'o', origin: 'api' });
      expect(await store.pipelines.delete('p')).toBe(true);
      expect(await store.pipelines.get('p')).toBeUndefined();
      expect(await store.pipelines.versions('p')).toEqual([]);
      expect(await store.pipelines.versionYaml('p', 1)).toBeUndefined();
      expect(await store.pipelines.delete('p')).toBe(false);
      expect((await store.pipelines.save({ name: 'p', yaml: 'v2', origin: 'api' })).version).toBe(1);
      expect(await store.pipelines.versions('other')).toHaveLength(1);
    });

    it('names are exact: case, trailing spaces and unicode are distinct and sort bytewise', async () => {
      for (const name of ['abc', 'ABC', 'abc ', 'ébc', 'abc-ü']) await store.pipelines.save({ name, yaml: `n: ${name}`, origin: 'api' });
      expect((await store.pipelines.list()).map((p) => p.name)).toEqual(['ABC', 'abc', 'abc ', 'abc-ü', 'ébc']);
      expect((await store.pipelines.get('abc '))?.yaml).toBe('n: abc ');
      expect(await store.pipelines.get('Abc')).toBeUndefined();
    });

    it('stores large YAML and rejects names too long for the column', async () => {
      const yaml = `# ${'ü😀'.repeat(60_000)}\n`;
      expect((await store.pipelines.save({ name: 'big', yaml, origin: 'api' })).yaml).toBe(yaml);
      expect((await store.pipelines.get('big'))?.yaml).toBe(yaml);
      await expect(store.pipelines.save({ name: 'x'.repeat(256), yaml: 'a', origin: 'api' })).rejects.toThrow(/longer than 255/);
      await expect(store.pipelines.save({ name: '', yaml: 'a', origin: 'api' })).rejects.toThrow(/non-empty/);
    });

    it('concurrent saves of one name get distinct consecutive versions', async () => {
      await Promise.all(Array.from({ length: 6 }, (_, i) => store.pipelines.save({ name: 'c', yaml: `v${i}`, origin: 'api' })));
      const versions = await store.pipelines.versions('c');
      expect(versions.map((v) => v.version)).toEqual([6, 5, 4, 3, 2, 1]);
      expect(versions.filter((v) => v.is_active).length).toBe(1);
      const active = await store.pipelines.get('c');
      expect(await store.pipelines.versionYaml('c', 6)).toBe(active?.yaml);
    });
  });

  // Two pools stand in for two processes. Not for SQLite: two connections in one thread would
  // block each other in the synchronous busy wait; sqlite.test.ts runs real processes instead.
  if (engine !== 'sqlite')
    it('two stores (as two processes) saving one name at once keep versions unique with one active', async () => {
      const other = await openStore({ ...fresh.opts, log: silentLogger });
      try {
        await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? other : store).pipelines.save({ name: 'race', yaml: `y${i}`, origin: 'api' })));
        const versions = await store.pipelines.versions('race');
        expect(versions.map((v) => v.version)).toEqual([8, 7, 6, 5, 4, 3, 2, 1]);
        expect(versions.filter((v) => v.is_active === 1).map((v) => v.version)).toEqual([8]);
        expect(await store.pipelines.get('race')).toMatchObject({ version: 8, yaml: await store.pipelines.versionYaml('race', 8) });
      } finally {
        await other.close();
      }
    });

  describe('runs', () => {
    it('start records a running run; finish completes it; get of a missing run is undefined', async () => {
      expect(await store.runs.get('missing')).toBeUndefined();
      await store.runs.start({ run_id: 'r1', pipeline: 'p1', node_id: 'node-a', started_at: '2024-05-01T10:00:00.000Z' });
      const running = await store.runs.get('r1');
      expect(running).toEqual({
        run_id: 'r1',
        pipeline: 'p1',
        node_id: 'node-a',
        status: 'running',
        started_at: '2024-05-01T10:00:00.000Z',
        finished_at: null,
        records_in: 0,
        records_out: 0,
        records_filtered: 0,
        records_skipped: 0,
        bytes_in: 0,
        bytes_out: 0,
        dlq_count: 0,
        error: null,
        errors: [],
        pipeline_version: null,
      });
      // start is idempotent, and says whether it inserted (a scheduled fire is claimed this way)
      expect(await store.runs.start({ run_id: 'r1', pipeline: 'p1', node_id: 'node-a', started_at: '2024-05-01T10:00:00.000Z' })).toBe(false);
      expect(await store.runs.start({ run_id: 'r1b', pipeline: 'p1', node_id: 'node-a', started_at: '2024-05-01T10:00:00.000Z' })).toBe(true);
      const done = rec({
        run_id: 'r1',
        records_in: 10,
        records_out: 6,
        records_filtered: 3,
        records_skipped: 1,
        bytes_in: 5_000_000_000,
        bytes_out: 2 ** 40,
        dlq_count: 1,
        errors: ['row 3: bad'],
      });
      await store.runs.finish(done);
      const got = await store.runs.get('r1');
      expect(got).toEqual(done);
      expectPlainTypes(got!);
      // a late duplicate start does not reset a finished run
      await store.runs.start({ run_id: 'r1', pipeline: 'p1', node_id: 'node-a', started_at: '2024-05-01T10:00:00.000Z' });
      expect(await store.runs.get('r1')).toEqual(done);
    });

    it('keeps the pipeline version a run ran: set at start, kept by a finish that leaves it out, replaced by one that gives it', async () => {
      await store.runs.start({ run_id: 'pv', pipeline: 'p1', node_id: 'node-a', started_at: '2024-05-01T10:00:00.000Z', pipeline_version: 3 });
      expect(await store.runs.get('pv')).toMatchObject({ status: 'running', pipeline_version: 3 });
      const { pipeline_version: _, ...withoutVersion } = rec({ run_id: 'pv', records_in: 2 });
      await store.runs.finish(withoutVersion);
      expect(await store.runs.get('pv')).toEqual({ ...withoutVersion, pipeline_version: 3 });
      await store.runs.finish(rec({ run_id: 'pv', pipeline_version: 4 }));
      expect((await store.runs.get('pv'))?.pipeline_version).toBe(4);
      expect((await store.runs.list({ pipeline: 'p1', limit: 10, offset: 0 })).find((r) => r.run_id === 'pv')?.pipeline_version).toBe(4);
      await expect(
        store.runs.start({ run_id: 'pv0', pipeline: 'p1', node_id: 'node-a', started_at: '2024-05-01T10:00:00.000Z', pipeline_version: 0 }),
      ).rejects.toThrow(/pipeline_version must be a positive integer/);
    });

    it('finishOnce stores an outcome once: a running run, or an absent one; never over a finished one', async () => {
      await store.runs.start({ run_id: 'once', pipeline: 'p1', node_id: 'node-a', started_at: '2024-05-01T10:00:00.000Z' });
      const first = rec({ run_id: 'once', records_in: 4 });
      expect(await store.runs.finishOnce(first)).toBe(true);
      expect(await store.runs.finishOnce({ ...first, records_in: 99, status: 'failed' })).toBe(false);
      expect(await store.runs.get('once')).toEqual(first);
      const absent = rec({ run_id: 'once-absent', status: 'failed', error: 'expired' });
      expect(await store.runs.finishOnce(absent)).toBe(true);
      expect(await store.runs.finishOnce(absent)).toBe(false);
      expect(await store.runs.get('once-absent')).toEqual(absent);
    });

    it('finish without start inserts; a second finish replaces the record', async () => {
      const a = rec({ run_id: 'r2', status: 'failed', error: 'source unreachable', errors: [] });
      await store.runs.finish(a);
      expect(await store.runs.get('r2')).toEqual(a);
      const b = { ...a, status: 'success' as const, error: null, records_in: 3 };
      await store.runs.finish(b);
      expect(await store.runs.get('r2')).toEqual(b);
    });

    it('round-trips errors as JSON with unicode, quotes, newlines and emoji', async () => {
      const errors = ['ligne 3 : champ « débit » invalide', 'quote " and \\ backslash', 'multi\nline\ttab', '😀 emoji 𝄞', '日本語のエラー', "it's"];
      await store.runs.finish(rec({ run_id: 'u', errors, error: 'fatal: ☠ "x"' }));
      const r = await store.runs.get('u');
      expect(r?.errors).toEqual(errors);
      expect(r?.error).toBe('fatal: ☠ "x"');
    });

    it('normalizes timestamps to ISO 8601 UTC and rejects invalid ones', async () => {
      await store.runs.finish(rec({ run_id: 't', started_at: '2024-05-01T12:00:00+02:00', finished_at: '2024-05-01T10:00:05Z' }));
      expect(await store.runs.get('t')).toMatchObject({ started_at: '2024-05-01T10:00:00.000Z', finished_at: '2024-05-01T10:00:05.000Z' });
      await expect(store.runs.start({ run_id: 'bad', pipeline: 'p', node_id: 'n', started_at: 'yesterday' })).rejects.toThrow(/started_at/);
      await expect(store.runs.list({ from_dt: 'soon', limit: 10, offset: 0 })).rejects.toThrow(/from_dt/);
    });

    it('lists newest first with filters and pagination', async () => {
      const statuses = ['success', 'failed', 'aborted'] as const;
      for (let i = 0; i < 30; i++) {
        const started = new Date(Date.UTC(2024, 4, 1, 0, i)).toISOString();
        const finished = new Date(Date.UTC(2024, 4, 1, 0, i, 30)).toISOString();
        await store.runs.finish(
          rec({
            run_id: `r${String(i).padStart(2, '0')}`,
            pipeline: i % 2 ? 'odd' : 'even',
            status: statuses[i % 3]!,
            started_at: started,
            finished_at: finished,
          }),
        );
      }
      await store.runs.start({ run_id: 'live', pipeline: 'odd', node_id: 'n', started_at: '2024-05-01T01:00:00.000Z' });

      const all = await store.runs.list({ limit: 100, offset: 0 });
      expect(all.map((r) => r.run_id)).toEqual(['live', ...Array.from({ length: 30 }, (_, i) => `r${String(29 - i).padStart(2, '0')}`)]);
      const pages: string[] = [];
      for (let off = 0; off < 40; off += 7) pages.push(...(await store.runs.list({ limit: 7, offset: off })).map((r) => r.run_id));
      expect(pages).toEqual(all.map((r) => r.run_id));
      expect(await store.runs.list({ limit: 10, offset: 31 })).toEqual([]);
      expect(await store.runs.list({ limit: 0, offset: 0 })).toEqual([]);

      const odd = await store.runs.list({ pipeline: 'odd', limit: 100, offset: 0 });
      expect(odd).toHaveLength(16);
      expect(odd.every((r) => r.pipeline === 'odd')).toBe(true);
      expect(await store.runs.list({ pipeline: 'none', limit: 100, offset: 0 })).toEqual([]);

      const failed = await store.runs.list({ status: 'failed', limit: 100, offset: 0 });
      expect(failed.map((r) => r.run_id)).toEqual(['r28', 'r25', 'r22', 'r19', 'r16', 'r13', 'r10', 'r07', 'r04', 'r01']);
      expect((await store.runs.list({ status: 'running', limit: 100, offset: 0 })).map((r) => r.run_id)).toEqual(['live']);

      // from_dt is inclusive and may carry an offset.
      const from = await store.runs.list({ from_dt: '2024-05-01T00:25:00.000Z', limit: 100, offset: 0 });
      expect(from.map((r) => r.run_id)).toEqual(['live', 'r29', 'r28', 'r27', 'r26', 'r25']);
      expect((await store.runs.list({ from_dt: '2024-05-01T02:25:00+02:00', limit: 100, offset: 0 })).map((r) => r.run_id)).toEqual(from.map((r) => r.run_id));

      const combo = await store.runs.list({ pipeline: 'even', status: 'success', from_dt: '2024-05-01T00:10:00Z', limit: 2, offset: 1 });
      expect(combo.map((r) => r.run_id)).toEqual(['r18', 'r12']);
    });

    it('orders runs started in the same millisecond by run_id, stable across pages', async () => {
      for (const id of ['b', 'a', 'c']) await store.runs.finish(rec({ run_id: id }));
      expect((await store.runs.list({ limit: 10, offset: 0 })).map((r) => r.run_id)).toEqual(['c', 'b', 'a']);
      expect((await store.runs.list({ limit: 1, offset: 1 })).map((r) => r.run_id)).toEqual(['b']);
    });

    it('abortInterrupted only touches running runs of its node', async () => {
      await store.runs.start({ run_id: 'a1', pipeline: 'p', node_id: 'node-a', started_at: '2024-05-01T10:00:00Z' });
      await store.runs.start({ run_id: 'a2', pipeline: 'q', node_id: 'node-a', started_at: '2024-05-01T10:01:00Z' });
      await store.runs.start({ run_id: 'b1', pipeline: 'p', node_id: 'node-b', started_at: '2024-05-01T10:00:00Z' });
      const finished = rec({ run_id: 'a3', node_id: 'node-a', status: 'success' });
      await store.runs.finish(finished);
      const before = new Date().toISOString();
      expect(await store.runs.abortInterrupted('node-a', 'interrupted: process restarted')).toBe(2);
      const after = new Date().toISOString();
      for (const id of ['a1', 'a2']) {
        const r = await store.runs.get(id);
        expect(r).toMatchObject({ status: 'aborted', error: 'interrupted: process restarted', errors: [] });
        expect(r!.finished_at! >= before && r!.finished_at! <= after).toBe(true);
      }
      expect(await store.runs.get('b1')).toMatchObject({ status: 'running', finished_at: null, error: null });
      expect(await store.runs.get('a3')).toEqual(finished);
      expect(await store.runs.abortInterrupted('node-a', 'again')).toBe(0);
      expect(await store.runs.abortInterrupted('node-z', 'none')).toBe(0);
      // Aborted runs count in stats with their duration up to the abort.
      const st = await store.runs.stats('2024-01-01T00:00:00Z');
      expect(st.find((s) => s.pipeline === 'q')?.run_count).toBe(1);
    });

    it('stats: exact sums, error rate and average duration over finished runs since a time', async () => {
      const since = '2024-05-01T10:00:00.000Z';
      await store.runs.finish(
        rec({
          run_id: 's1',
          pipeline: 'p1',
          records_in: 100,
          records_out: 90,
          records_skipped: 10,
          started_at: '2024-05-01T09:59:59.000Z',
          finished_at: '2024-05-01T10:00:00.000Z',
        }),
      );
      await store.runs.finish(
        rec({
          run_id: 's2',
          pipeline: 'p1',
          status: 'failed',
          records_in: 300,
          records_out: 300,
          records_skipped: 0,
          started_at: '2024-05-01T10:00:00.000Z',
          finished_at: '2024-05-01T10:00:04.500Z',
        }),
      );
      await store.runs.finish(
        rec({ run_id: 's3', pipeline: 'p1', records_in: 1000, started_at: '2024-05-01T09:00:00.000Z', finished_at: '2024-05-01T09:59:59.999Z' }),
      );
      await store.runs.start({ run_id: 's4', pipeline: 'p1', node_id: 'n', started_at: '2024-05-01T10:30:00.000Z' });
      await store.runs.finish(
        rec({ run_id: 's5', pipeline: 'p0', records_in: 0, records_out: 0, started_at: '2024-05-01T11:00:00.000Z', finished_at: '2024-05-01T11:00:00.250Z' }),
      );
      await store.runs.finish(
        rec({
          run_id: 's6',
          pipeline: 'big',
          records_in: 3_000_000_000,
          records_out: 3_000_000_000,
          records_skipped: 1_000_000_000,
          started_at: '2024-05-01T11:00:00.000Z',
          finished_at: '2024-05-01T12:00:00.000Z',
        }),
      );
      await store.runs.finish(
        rec({
          run_id: 's7',
          pipeline: 'big',
          records_in: 3_000_000_000,
          records_out: 1,
          records_skipped: 0,
          started_at: '2024-05-01T11:00:00.000Z',
          finished_at: '2024-05-01T11:00:00.001Z',
        }),
      );
      const stats = await store.runs.stats(since);
      expect(stats).toEqual([
        { pipeline: 'big', records_in: 6_000_000_000, records_out: 3_000_000_001, error_rate: 1 / 6, avg_duration_seconds: 1800.0005, run_count: 2 },
        { pipeline: 'p0', records_in: 0, records_out: 0, error_rate: 0, avg_duration_seconds: 0.25, run_count: 1 },
        { pipeline: 'p1', records_in: 400, records_out: 390, error_rate: 0.025, avg_duration_seconds: 2.75, run_count: 2 },
      ]);
      for (const s of stats) expectPlainTypes(s);
      expect(await store.runs.stats('2030-01-01T00:00:00Z')).toEqual([]);
    });

    it('latest: the newest run of each pipeline', async () => {
      expect((await store.runs.latest()).size).toBe(0);
      await store.runs.finish(rec({ run_id: 'x1', pipeline: 'x', started_at: '2024-05-01T10:00:00Z' }));
      await store.runs.finish(rec({ run_id: 'x2', pipeline: 'x', status: 'failed', started_at: '2024-05-01T11:00:00Z', finished_at: '2024-05-01T11:00:01Z' }));
      await store.runs.finish(rec({ run_id: 'y1', pipeline: 'y', started_at: '2024-05-01T09:00:00Z' }));
      await store.runs.start({ run_id: 'z1', pipeline: 'z', node_id: 'n', started_at: '2024-05-01T08:00:00Z' });
      await store.runs.finish(rec({ run_id: 'w1', pipeline: 'w' }));
      await store.runs.finish(rec({ run_id: 'w2', pipeline: 'w' }));
      const latest = await store.runs.latest();
      expect([...latest.keys()].sort()).toEqual(['w', 'x', 'y', 'z']);
      expect(latest.get('x')).toMatchObject({ run_id: 'x2', status: 'failed' });
      expect(latest.get('y')?.run_id).toBe('y1');
      expect(latest.get('z')).toMatchObject({ run_id: 'z1', status: 'running' });
      expect(latest.get('w')?.run_id).toBe('w2');
    });
  });

  describe('alerts', () => {
    it('adds, lists in order, refuses duplicates per pipeline', async () => {
      expect(await store.alerts.list('p')).toEqual([]);
      const mail = rule('mail', { action: 'email', webhook_url: null, email_to: 'noc@example.com', subject: 'Run failed ✉', condition: 'failed' });
      expect(await store.alerts.add('p', rule('zeta'))).toBe(true);
      expect(await store.alerts.add('p', mail)).toBe(true);
      expect(await store.alerts.add('p', rule('zeta', { condition: 'other' }))).toBe(false);
      expect(await store.alerts.add('q', rule('zeta'))).toBe(true);
      const list = await store.alerts.list('p');
      expect(list).toEqual([rule('zeta'), mail]);
      for (const r of list) expectPlainTypes(r);
      // optional fields left out come back as null
      await store.alerts.add('r', { name: 'min', condition: 'failed', action: 'webhook', webhook_url: 'http://h', cooldown_seconds: 0 });
      expect(await store.alerts.list('r')).toEqual([
        { name: 'min', condition: 'failed', action: 'webhook', webhook_url: 'http://h', email_to: null, subject: null, cooldown_seconds: 0 },
      ]);
    });

    it('updates and renames a rule; a missing one gives false; renaming onto a taken name throws', async () => {
      await store.alerts.add('p', rule('a'));
      await store.alerts.add('p', rule('b'));
      expect(await store.alerts.update('p', 'a', rule('a', { cooldown_seconds: 10, condition: 'error_rate > 0.5' }))).toBe(true);
      expect(await store.alerts.list('p')).toEqual([rule('a', { cooldown_seconds: 10, condition: 'error_rate > 0.5' }), rule('b')]);
      expect(await store.alerts.update('p', 'nope', rule('nope'))).toBe(false);
      expect(await store.alerts.update('q', 'a', rule('a'))).toBe(false);
      await store.alerts.setFired('p', 'a', '2024-05-01T10:00:00Z');
      expect(await store.alerts.update('p', 'a', rule('a2'))).toBe(true);
      expect((await store.alerts.list('p')).map((r) => r.name)).toEqual(['a2', 'b']);
      expect(await store.alerts.lastFired('p', 'a2')).toBe('2024-05-01T10:00:00.000Z');
      expect(await store.alerts.lastFired('p', 'a')).toBeUndefined();
      await expect(store.alerts.update('p', 'a2', rule('b'))).rejects.toBeInstanceOf(DuplicateAlertRuleError);
      expect((await store.alerts.list('p')).map((r) => r.name)).toEqual(['a2', 'b']);
    });

    it('removes one rule with its cooldown, or all of a pipeline', async () => {
      await store.alerts.add('p', rule('a'));
      await store.alerts.add('p', rule('b'));
      await store.alerts.add('q', rule('a'));
      await store.alerts.setFired('p', 'a', '2024-05-01T10:00:00Z');
      await store.alerts.setFired('q', 'a', '2024-05-01T10:00:00Z');
      expect(await store.alerts.remove('p', 'a')).toBe(true);
      expect(await store.alerts.remove('p', 'a')).toBe(false);
      expect(await store.alerts.lastFired('p', 'a')).toBeUndefined();
      await store.alerts.setFired('p', 'b', '2024-05-01T10:00:00Z');
      await store.alerts.removeAll('p');
      expect(await store.alerts.list('p')).toEqual([]);
      expect(await store.alerts.lastFired('p', 'b')).toBeUndefined();
      expect(await store.alerts.list('q')).toEqual([rule('a')]);
      expect(await store.alerts.lastFired('q', 'a')).toBe('2024-05-01T10:00:00.000Z');
      await store.alerts.removeAll('nothing');
    });

    it('delivery history: numbered attempts, newest first, bounded, moved by a rename, removed with the rule', async () => {
      const d = (i: number, outcome: 'delivered' | 'failed', over: Partial<AlertDeliveryToStore> = {}): AlertDeliveryToStore => ({
        at: new Date(Date.UTC(2024, 4, 1, 10, 0, i)).toISOString(),
        run_id: `run-${i}`,
        channel: 'webhook',
        target: 'https://hooks.example.com/svc',
        outcome,
        detail: outcome === 'delivered' ? 'HTTP 200 OK' : null,
        error: outcome === 'failed' ? `connection failed: é ${i}` : null,
        ...over,
      });
      await store.alerts.add('p', rule('a'));
      await store.alerts.add('p', rule('b'));
      expect(await store.alerts.deliveries('p')).toEqual(new Map());
      expect((await store.alerts.recordDelivery('p', 'a', d(1, 'failed'))).attempt).toBe(1);
      expect((await store.alerts.recordDelivery('p', 'a', d(2, 'failed'))).attempt).toBe(2);
      expect((await store.alerts.recordDelivery('p', 'a', d(3, 'delivered'))).attempt).toBe(3);
      expect((await store.alerts.recordDelivery('p', 'a', d(4, 'delivered', { at: '2024-05-01T12:00:04+02:00' }))).attempt).toBe(1);
      expect((await store.alerts.recordDelivery('p', 'b', d(5, 'failed', { channel: 'email', target: 'noc@example.com', run_id: null }))).attempt).toBe(1);
      const all = await store.alerts.deliveries('p');
      expect([...all.keys()]).toEqual(['a', 'b']);
      expect(all.get('a')).toEqual([
        { ...d(4, 'delivered'), at: '2024-05-01T10:00:04.000Z', attempt: 1 },
        { ...d(3, 'delivered'), attempt: 3 },
        { ...d(2, 'failed'), attempt: 2 },
        { ...d(1, 'failed'), attempt: 1 },
      ]);
      for (const x of all.get('a')!) expectPlainTypes(x);
      expect(await store.alerts.deliveries('p', 'b')).toEqual(
        new Map([['b', [{ ...d(5, 'failed'), channel: 'email', target: 'noc@example.com', run_id: null, attempt: 1 }]]]),
      );
      await expect(store.alerts.recordDelivery('p', 'a', d(6, 'failed', { at: 'soon' }))).rejects.toThrow(/delivery time/);

      // Bounded: the oldest rows go once a rule has more than ALERT_HISTORY_LIMIT.
      for (let i = 10; i < 10 + ALERT_HISTORY_LIMIT + 3; i++) await store.alerts.recordDelivery('p', 'b', d(i, 'failed'));
      const b = (await store.alerts.deliveries('p', 'b')).get('b')!;
      expect(b).toHaveLength(ALERT_HISTORY_LIMIT);
      expect(b[0]).toMatchObject({ run_id: `run-${12 + ALERT_HISTORY_LIMIT}`, attempt: ALERT_HISTORY_LIMIT + 4 });
      const rows = await store.db.selectFrom('alert_deliveries').select('rule').where('pipeline', '=', 'p').execute();
      expect(rows.filter((r) => r.rule === 'b')).toHaveLength(ALERT_HISTORY_LIMIT);
      expect(rows.filter((r) => r.rule === 'a')).toHaveLength(4);

      // A long error is cut, not refused.
      const long = await store.alerts.recordDelivery('q', 'x', d(1, 'failed', { error: 'x'.repeat(10_000) }));
      expect(long.error).toHaveLength(2000);
      expect((await store.alerts.deliveries('q')).get('x')![0]!.error).toBe(long.error);

      // Renamed: the history moves with the rule; removed: it goes.
      expect(await store.alerts.update('p', 'a', rule('a2'))).toBe(true);
      expect((await store.alerts.deliveries('p', 'a2')).get('a2')).toHaveLength(4);
      expect((await store.alerts.deliveries('p', 'a')).get('a')).toBeUndefined();
      expect(await store.alerts.remove('p', 'a2')).toBe(true);
      expect([...(await store.alerts.deliveries('p')).keys()]).toEqual(['b']);
      await store.alerts.removeAll('p');
      expect(await store.alerts.deliveries('p')).toEqual(new Map());
      expect((await store.alerts.deliveries('q')).get('x')).toHaveLength(1);
    });

    it('cooldowns: lastFired is undefined until set; setFired overwrites', async () => {
      expect(await store.alerts.lastFired('p', 'a')).toBeUndefined();
      await store.alerts.setFired('p', 'a', '2024-05-01T10:00:00.123Z');
      expect(await store.alerts.lastFired('p', 'a')).toBe('2024-05-01T10:00:00.123Z');
      await store.alerts.setFired('p', 'a', '2024-05-01T12:30:00+01:00');
      expect(await store.alerts.lastFired('p', 'a')).toBe('2024-05-01T11:30:00.000Z');
      expect(await store.alerts.lastFired('p', 'A')).toBeUndefined();
      await expect(store.alerts.setFired('p', 'a', 'not a date')).rejects.toThrow(/fired_at/);
    });
  });

  describe('users', () => {
    it('stores and replaces password hashes; usernames are exact', async () => {
      expect(await store.users.passwordHash('admin')).toBeUndefined();
      await store.users.setPasswordHash('admin', 'scrypt$c2FsdA$ZGlnZXN0');
      expect(await store.users.passwordHash('admin')).toBe('scrypt$c2FsdA$ZGlnZXN0');
      await store.users.setPasswordHash('admin', 'scrypt$bmV3$bmV3ZGlnZXN0');
      expect(await store.users.passwordHash('admin')).toBe('scrypt$bmV3$bmV3ZGlnZXN0');
      expect(await store.users.passwordHash('Admin')).toBeUndefined();
      await store.users.setPasswordHash('josé', 'scrypt$x$y');
      expect(await store.users.passwordHash('josé')).toBe('scrypt$x$y');
    });
  });

  describe('processed files', () => {
    it('remembers keys per pipeline; add twice is harmless; clear forgets one pipeline', async () => {
      const long = `/data/${'deep/'.repeat(500)}file-é😀.csv`;
      expect(await store.processed.has('p', '/a.csv')).toBe(false);
      await store.processed.add('p', '/a.csv');
      await store.processed.add('p', '/a.csv');
      await store.processed.add('p', long);
      await store.processed.add('q', '/a.csv');
      expect(await store.processed.has('p', '/a.csv')).toBe(true);
      expect(await store.processed.has('p', '/A.csv')).toBe(false);
      expect(await store.processed.has('p', '/a.csv ')).toBe(false);
      expect(await store.processed.has('p', long)).toBe(true);
      expect(await store.processed.has('r', '/a.csv')).toBe(false);
      await store.processed.clear('p');
      expect(await store.processed.has('p', '/a.csv')).toBe(false);
      expect(await store.processed.has('p', long)).toBe(false);
      expect(await store.processed.has('q', '/a.csv')).toBe(true);
    });

    it('DbProcessedFiles is the engine view of one pipeline', async () => {
      const files = new DbProcessedFiles(store.processed, 'p');
      expect(await files.has('k')).toBe(false);
      await files.add('k');
      expect(await files.has('k')).toBe(true);
      expect(await store.processed.has('p', 'k')).toBe(true);
      expect(await new DbProcessedFiles(store.processed, 'other').has('k')).toBe(false);
    });
  });

  describe('transform state', () => {
    it('put replaces the whole state of a pipeline with one hash; get reads it back; clear purges one pipeline', async () => {
      expect(await store.transformState.get('p')).toBeNull();
      const big = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`host-${i}\u0000${i}`, { t: i, v: { c: `1844674407370955${i}` } }]));
      await store.transformState.put(
        'p',
        { 'transforms[0].counter_delta': big, 'transforms[2].window_aggregate': { windows: [], newest: null } },
        'a'.repeat(64),
      );
      await store.transformState.put('q', { 'transforms[0].counter_delta': {} }, 'b'.repeat(64));
      const got = await store.transformState.get('p');
      expect(got).toEqual({
        pipeline: 'p',
        config_sha256: 'a'.repeat(64),
        state: { 'transforms[0].counter_delta': big, 'transforms[2].window_aggregate': { windows: [], newest: null } },
      });
      // A replace drops instances that are no longer given.
      await store.transformState.put('p', { 'transforms[1].counter_delta': { x: 1 } }, 'c'.repeat(64));
      expect(await store.transformState.get('p')).toEqual({ pipeline: 'p', config_sha256: 'c'.repeat(64), state: { 'transforms[1].counter_delta': { x: 1 } } });
      await store.transformState.clear('p');
      expect(await store.transformState.get('p')).toBeNull();
      expect((await store.transformState.get('q'))?.state).toEqual({ 'transforms[0].counter_delta': {} });
    });

    it('a row that is not JSON comes back as text (which the transforms refuse), not as an exception', async () => {
      await store.db
        .insertInto('transform_state')
        .values({
          pipeline: 'p',
          transform_key: 'transforms[0].counter_delta',
          state_json: '{broken',
          config_sha256: 'a'.repeat(64),
          updated_at: new Date().toISOString(),
        })
        .execute();
      expect((await store.transformState.get('p'))?.state['transforms[0].counter_delta']).toBe('corrupt state row: {broken');
    });

    it('by target (sharded runs): a shard replaces the rows of its own targets only, and reads them back by target', async () => {
      const key = 'transforms[0].counter_delta';
      const long = `http://exporter.example/${'x'.repeat(2000)}/metrics`; // longer than any key column
      const ts = store.transformState;
      await ts.putTargets!(
        'p',
        ['a', 'b', long],
        new Map([
          [
            key,
            new Map<string, unknown>([
              ['a', { s: 1 }],
              ['b', { s: 2 }],
              [long, { s: 3 }],
              ['stranger', { s: 9 }],
            ]),
          ],
        ]),
        'h'.repeat(64),
      );
      await ts.putTargets!('q', ['a'], new Map([[key, new Map([['a', { s: 'q' }]])]]), 'h'.repeat(64));
      const sorted = <R extends { target: string }>(rows: R[]) => [...rows].sort((x, y) => x.target.localeCompare(y.target));
      expect(sorted(await ts.ofTargets!('p', ['a', 'b', long, 'stranger']))).toEqual([
        { transform_key: key, target: 'a', state: { s: 1 }, config_sha256: 'h'.repeat(64) },
        { transform_key: key, target: 'b', state: { s: 2 }, config_sha256: 'h'.repeat(64) },
        { transform_key: key, target: long, state: { s: 3 }, config_sha256: 'h'.repeat(64) },
      ]);
      // The next shard of 'b' writes b alone; a target of its shard with no state left loses its row.
      await ts.putTargets!('p', ['b', long], new Map([[key, new Map([['b', { s: 20 }]])]]), 'h'.repeat(64));
      expect(sorted(await ts.ofTargets!('p', ['a', 'b', long])).map((r) => [r.target, r.state])).toEqual([
        ['a', { s: 1 }],
        ['b', { s: 20 }],
      ]);
      // More targets than one statement takes.
      const many = Array.from({ length: 1200 }, (_, i) => `t${i}`);
      await ts.putTargets!('p', many, new Map([[key, new Map(many.map((t) => [t, { t }]))]]), 'h'.repeat(64));
      expect(await ts.ofTargets!('p', many)).toHaveLength(1200);
      await ts.clear('p');
      expect(await ts.ofTargets!('p', ['a', ...many])).toEqual([]);
      expect(await ts.ofTargets!('q', ['a'])).toHaveLength(1);
    });
  });

  it('ping answers; the latest migration is known', async () => {
    await store.ping();
    expect(MIGRATION_NAMES.at(-1)).toBe(LATEST_MIGRATION);
  });
});
