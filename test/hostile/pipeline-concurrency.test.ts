// Issue 28, finding 5: concurrent edits of one pipeline name must never leave the API serving a
// pipeline the database does not hold (or the reverse), and concurrent creates of one name give
// one 201 and 409 for the rest. Reproduction: ~100 concurrent random POST/PUT/DELETE/rollback of
// one name against the real API, several rounds, on each database engine (the PostgreSQL and
// MariaDB servers must be running; nothing is skipped when they are not). Each engine gets a
// private database, dropped afterwards.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, PipelineConflictError, type SqlStore } from '../../src/store/index.js';
import type { DbEngine } from '../../src/store/types.js';
import { testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { freshDatabase, type Fresh } from '../store/helpers.js';
import { expectError, localYaml, workArea } from '../api/_helpers.js';

const NAME = 'contended';
const ROUNDS = 4;
const OPS = 100;
const EACH = 5;
const CREATE_TRIALS = 5;
const CREATORS = 20;

type Op = 'POST' | 'PUT' | 'DELETE' | 'ROLLBACK';
/** What each request may answer; anything else (a 500 above all) is a failure. */
const ALLOWED: Record<Op, number[]> = { POST: [201, 409], PUT: [200, 404], DELETE: [204, 404], ROLLBACK: [200, 404] };

interface View {
  status: number;
  version?: number;
  yaml?: string;
}

/** What the API serves for the name. */
async function apiView(d: TestDaemon): Promise<View> {
  const r = await d.call('GET', `/api/pipelines/${NAME}`);
  expect([200, 404], r.text).toContain(r.status);
  return r.status === 200 ? { status: 200, version: r.body.version, yaml: r.body.yaml } : { status: 404 };
}

/** What the tables hold for the name, after checking that the rows agree with each other. */
async function tableView(store: SqlStore, name = NAME): Promise<View> {
  const row = await store.db.selectFrom('pipelines').selectAll().where('name', '=', name).executeTakeFirst();
  const versions = await store.db.selectFrom('pipeline_versions').selectAll().where('name', '=', name).orderBy('version').execute();
  if (!row) {
    expect(versions, 'versions left behind by a deleted pipeline').toEqual([]);
    return { status: 404 };
  }
  // Numbered 1..n without gaps or duplicates, exactly one active, and that one is the pipeline's.
  expect(versions.map((v) => Number(v.version))).toEqual(versions.map((_, i) => i + 1));
  const active = versions.filter((v) => Number(v.is_active) === 1);
  expect(active.map((v) => Number(v.version))).toEqual([Number(row.version)]);
  expect(active[0]!.yaml).toBe(row.yaml);
  return { status: 200, version: Number(row.version), yaml: row.yaml };
}

describe.each<DbEngine>(['sqlite', 'postgresql', 'mysql'])('concurrent writes of one pipeline name (%s)', (engine) => {
  let fresh: Fresh;
  let store: SqlStore;
  let env: Record<string, string>;

  beforeAll(async () => {
    fresh = await freshDatabase(engine);
    store = await openStore(fresh.opts);
    env = fresh.opts.url ? { SVC_DB_URL: fresh.opts.url } : { SVC_DB_PATH: fresh.opts.path! };
  });
  afterAll(async () => {
    await store?.close();
    await fresh?.drop();
  });

  it(`${OPS} clients sending ${EACH} random POST/PUT/DELETE/rollback each, ${ROUNDS} rounds: the API, the tables and a restarted daemon agree`, async () => {
    const w = workArea(1, 'svc-hostile-');
    let d = await testDaemon(env);
    const seen: Record<Op, Record<number, number>> = { POST: {}, PUT: {}, DELETE: {}, ROLLBACK: {} };
    const one = async (op: Op, tag: string) => {
      const yaml = localYaml(NAME, { ...w, description: tag });
      const r =
        op === 'POST'
          ? await d.call('POST', '/api/pipelines', { yaml })
          : op === 'PUT'
            ? await d.call('PUT', `/api/pipelines/${NAME}`, { yaml })
            : op === 'DELETE'
              ? await d.call('DELETE', `/api/pipelines/${NAME}`)
              : await d.call('POST', `/api/pipelines/${NAME}/rollback?version=${1 + Math.floor(Math.random() * 3)}`);
      expect(ALLOWED[op], `${op} answered ${r.status}: ${r.text}`).toContain(r.status);
      if (r.status >= 400) expectError(r, r.status);
      seen[op][r.status] = (seen[op][r.status] ?? 0) + 1;
    };
    for (let round = 0; round < ROUNDS; round++) {
      // OPS clients at once, each sending EACH requests one after the other.
      await Promise.all(
        Array.from({ length: OPS }, async (_, client) => {
          for (let i = 0; i < EACH; i++) {
            const x = Math.random();
            await one(x < 0.35 ? 'POST' : x < 0.7 ? 'PUT' : x < 0.9 ? 'DELETE' : 'ROLLBACK', `round ${round} client ${client} op ${i}`);
          }
        }),
      );
      const api = await apiView(d);
      expect(api, `round ${round}: the API and the tables disagree`).toEqual(await tableView(store));
      // A new daemon on the same database serves the same.
      await d.stop();
      d = await testDaemon(env, { dir: d.dir });
      expect(await apiView(d), `round ${round}: after a restart`).toEqual(api);
    }
    // The contention was real: every kind of write both succeeded and lost at least once.
    expect(seen.POST[201] && seen.POST[409] && seen.PUT[200] && seen.DELETE[204], JSON.stringify(seen)).toBeTruthy();
  }, 240_000);

  it(`${CREATORS} concurrent creates of one name: one 201, the rest 409 {detail}, one version stored`, async () => {
    const w = workArea(1, 'svc-hostile-');
    const d = await testDaemon(env);
    for (let trial = 0; trial < CREATE_TRIALS; trial++) {
      const del = await d.call('DELETE', `/api/pipelines/${NAME}`);
      expect([204, 404]).toContain(del.status);
      const res = await Promise.all(
        Array.from({ length: CREATORS }, (_, i) => d.call('POST', '/api/pipelines', { yaml: localYaml(NAME, { ...w, description: `creator ${trial}.${i}` }) })),
      );
      const created = res.filter((r) => r.status === 201);
      expect(res.map((r) => r.status).sort(), `trial ${trial}`).toEqual([201, ...Array<number>(CREATORS - 1).fill(409)]);
      for (const r of res) if (r.status === 409) expect(expectError(r, 409)).toMatch(/already/);
      const api = await apiView(d);
      expect(api).toEqual({ status: 200, version: 1, yaml: created[0]!.body.yaml });
      expect(await tableView(store)).toEqual(api);
    }
  }, 120_000);

  // Server engines only: two SQLite connections in one thread would wait out each other's busy
  // timeout (better-sqlite3 blocks the thread); SQLite's BEGIN IMMEDIATE serializes processes anyway.
  it.runIf(engine !== 'sqlite')(
    'two stores on one database (two managers): the transaction, not the process, serializes writes of a name',
    async () => {
      const name = 'shared';
      const other = await openStore(fresh.opts);
      try {
        const writers = [store.pipelines, other.pipelines];
        for (let round = 0; round < ROUNDS; round++) {
          const results = await Promise.allSettled(
            Array.from({ length: OPS }, (_, i) => {
              const s = writers[i % 2]!;
              const x = Math.random();
              const p = { name, yaml: `round ${round} write ${i}`, origin: 'api' as const };
              if (x < 0.3) return s.save({ ...p, mode: 'create' });
              if (x < 0.6) return s.save({ ...p, mode: 'update' });
              if (x < 0.85) return s.delete(name);
              return s.activate(name, 1 + Math.floor(Math.random() * 3));
            }),
          );
          for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(PipelineConflictError);
          await tableView(store, name);
        }
        await store.pipelines.delete(name);
        const creates = await Promise.allSettled(
          Array.from({ length: CREATORS }, (_, i) => writers[i % 2]!.save({ name, yaml: `creator ${i}`, origin: 'api', mode: 'create' })),
        );
        expect(creates.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        expect(await tableView(store, name)).toMatchObject({ status: 200, version: 1 });
      } finally {
        await other.close();
      }
    },
    120_000,
  );

  it('a stored pipeline that no longer loads is not a duplicate: POST replaces it, DELETE removes it', async () => {
    const w = workArea(1, 'svc-hostile-');
    let d = await testDaemon(env);
    await d.call('DELETE', `/api/pipelines/${NAME}`);
    expect((await d.call('POST', '/api/pipelines', { yaml: localYaml(NAME, w) })).status).toBe(201);
    await d.stop();
    // What an older svc stored and this one refuses (here: a source type that does not exist).
    await store.db
      .updateTable('pipelines')
      .set({ yaml: localYaml(NAME, w).replace('type: local,', 'type: gone,') })
      .where('name', '=', NAME)
      .execute();
    d = await testDaemon(env, { dir: d.dir });
    expect((await d.call('GET', `/api/pipelines/${NAME}`)).status).toBe(404);
    const again = await d.call('POST', '/api/pipelines', { yaml: localYaml(NAME, { ...w, description: 'again' }) });
    expect(again.status, again.text).toBe(201);
    expect(await tableView(store)).toEqual(await apiView(d));
    // And one that stays unloadable can be deleted.
    await store.db.updateTable('pipelines').set({ yaml: 'not: a pipeline' }).where('name', '=', NAME).execute();
    await d.stop();
    d = await testDaemon(env, { dir: d.dir });
    expect((await d.call('DELETE', `/api/pipelines/${NAME}`)).status).toBe(204);
    expect(await tableView(store)).toEqual({ status: 404 });
  }, 60_000);
});
