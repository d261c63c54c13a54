// The sql connector against the machine's PostgreSQL and MariaDB (a database of this file's own,
// dropped at the end) and SQLite files in temporary directories: the conformance suite once per
// database, then what it does not cover: the URL forms, the password kept out of messages, upsert
// (updates, columns left alone, the missing unique index), refused rows dead-lettered while the
// rest lands, unknown columns, a missing table, chunked reads, statements of chunk_size rows,
// PostgreSQL's COPY (every column type against the INSERT form, the refused row it names, the
// chunks kept on INSERT), and the values each database hands over (64-bit integers, decimals,
// dates, binary, JSON).
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadPipelineText } from '../../src/config/load.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { SqlError } from '../../src/plugins/connectors/sql/driver.js';
import { copyRow, copyText, encoderOf } from '../../src/plugins/connectors/sql/pg-copy.js';
import { openPostgres } from '../../src/plugins/connectors/sql/postgres.js';
import { parseSqlUrl } from '../../src/plugins/connectors/sql/url.js';
import { mysqlDateTime } from '../../src/plugins/connectors/sql/values.js';
import { tempDir } from '../helpers/fs.js';
import { conformance, type Cfg, type Rec } from './conformance.js';
import { loadPipeline, outputRecords } from './helpers.js';
import { lockSqlite, sqlFixture, startDb, type Engine, type TestDb } from './peers/sql.js';
import { until } from '../helpers/wait.js';

conformance(sqlFixture('postgres'));
conformance(sqlFixture('mariadb'));
conformance(sqlFixture('sqlite'));

const ENGINES: Engine[] = ['postgres', 'mariadb', 'sqlite'];
const dbs = {} as Record<Engine, TestDb>;
beforeAll(async () => {
  for (const e of ENGINES) dbs[e] = await startDb(e);
}, 60_000);
afterAll(async () => {
  for (const e of ENGINES) await dbs[e]?.stop();
});

let tables = 0;
const newTable = () => `t${process.pid}_${++tables}`;

/** NDJSON records through one sql sink; refused records land in a local DLQ (on_error dlq). */
async function sinkRun(sink: Cfg, records: Rec[], extra: Cfg = {}) {
  const dir = tempDir('svc-sql-in-');
  mkdirSync(join(dir, 'in'));
  writeFileSync(join(dir, 'in', 'r.ndjson'), records.map((r) => JSON.stringify(r) + '\n').join(''));
  const dlqDir = join(dir, 'dlq');
  const cfg = loadPipeline({
    name: 'sql-sink-test',
    schedule: { type: 'manual' },
    source: { type: 'local', path: join(dir, 'in') },
    serializer_in: { type: 'ndjson' },
    serializer_out: { type: 'json' },
    sinks: [{ type: 'sql', ...sink }],
    on_error: 'dlq',
    dlq: { type: 'local', path: dlqDir, filename_template: 'dlq.ndjson' },
    ...extra,
  });
  const rec = await runPipeline(cfg, { log: silentLogger, processed: new MemoryProcessedFiles() });
  return { rec, dlq: outputRecords(dlqDir) };
}

/** One manual run of an sql source into NDJSON; each record carries the unit's chunk number. */
async function sourceRun(source: Cfg, extra: Cfg = {}) {
  const out = tempDir('svc-sql-out-');
  const cfg = loadPipeline({
    name: 'sql-source-test',
    schedule: { type: 'manual' },
    source: { type: 'sql', ...source },
    transforms: [{ type: 'inject_meta', fields: { _chunk: 'sql_chunk' } }],
    serializer_out: { type: 'ndjson' },
    sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
    ...extra,
  });
  const rec = await runPipeline(cfg, { log: silentLogger, processed: new MemoryProcessedFiles() });
  return { rec, records: outputRecords(out) };
}

const sorted = (rows: Rec[], key = 'id') => [...rows].sort((a, b) => Number(a[key]) - Number(b[key]));

describe('connection_url', () => {
  it('accepts the SQLAlchemy forms', () => {
    expect(parseSqlUrl('postgresql://u:p%40ss@db.example:6543/nms?sslmode=require')).toMatchObject({
      dialect: 'postgresql',
      host: 'db.example',
      port: 6543,
      user: 'u',
      password: 'p@ss',
      database: 'nms',
      params: { sslmode: 'require' },
    });
    expect(parseSqlUrl('postgres://db/nms')).toMatchObject({ dialect: 'postgresql', host: 'db', port: 5432, database: 'nms' });
    expect(parseSqlUrl('postgresql+psycopg2://u@db/nms')).toMatchObject({ dialect: 'postgresql', user: 'u', database: 'nms' });
    expect(parseSqlUrl('mysql://root@127.0.0.1/inv')).toMatchObject({ dialect: 'mysql', port: 3306, database: 'inv' });
    expect(parseSqlUrl('mariadb://u:pw@[::1]:3307/inv?charset=utf8mb4')).toMatchObject({
      dialect: 'mysql',
      host: '::1',
      port: 3307,
      params: { charset: 'utf8mb4' },
    });
    expect(parseSqlUrl('mysql+pymysql://u:pw@h/inv')).toMatchObject({ dialect: 'mysql', host: 'h', database: 'inv' });
    expect(parseSqlUrl('sqlite:///data/x.db')).toMatchObject({ dialect: 'sqlite', path: 'data/x.db' });
    expect(parseSqlUrl('sqlite:////var/lib/x.db')).toMatchObject({ dialect: 'sqlite', path: '/var/lib/x.db' });
  });

  it('refuses what it cannot use, saying why and without the password', () => {
    const refused = (url: string) => {
      try {
        parseSqlUrl(url);
      } catch (e) {
        return (e as Error).message;
      }
      throw new Error(`accepted ${url}`);
    };
    expect(refused('oracle://u:s3cret@h/db')).toMatch(/unsupported scheme 'oracle:\/\/'.*postgresql:\/\//);
    expect(refused('mysql://u:s3cret@h:3306')).toMatch(/names its database/);
    expect(refused('postgresql://u:s3cret@h/db?sslmode=sometimes')).toMatch(/sslmode=sometimes is not valid/);
    expect(refused('postgresql://u:s3cret@h/db?foo=1')).toMatch(/'foo' is not supported for postgresql; supported: sslmode/);
    expect(refused('sqlite:///:memory:')).toMatch(/in-memory/);
    expect(refused('sqlite://x.db')).toMatch(/sqlite:\/\/\/relative/);
    for (const u of ['oracle://u:s3cret@h/db', 'mysql://u:s3cret@h:3306', 'postgresql://u:s3cret@h/db?foo=1']) expect(refused(u)).not.toContain('s3cret');
  });

  it('a bad URL, a bad table name and upsert without keys are config errors at their YAML paths', () => {
    const r = loadPipelineText(
      stringify({
        version: '1',
        pipeline: {
          name: 'lint',
          schedule: { type: 'manual' },
          source: { type: 'sql', connection_url: 'sqlserver://h/db', query: 'SELECT 1' },
          sinks: [
            { type: 'sql', connection_url: 'sqlite:///x.db', table: 'a.b.c', mode: 'upsert' },
            { type: 'sql', connection_url: 'sqlite:///x.db', table: 't', upsert_keys: ['id'] },
          ],
        },
      }),
      { env: {} },
    );
    const at = (p: string) => r.diagnostics.find((d) => d.path === p)?.message;
    expect(at('pipeline.source.connection_url')).toMatch(/unsupported scheme/);
    expect(at('pipeline.sinks[0].table')).toMatch(/not a table name/);
    expect(at('pipeline.sinks[0].upsert_keys')).toMatch(/needs upsert_keys/);
    expect(at('pipeline.sinks[1].upsert_keys')).toMatch(/mode upsert only/);
  });

  it('connects with postgres://, postgresql+psycopg2://, mariadb://, mysql+pymysql:// and a relative sqlite:/// path', async () => {
    const pgUrl = dbs.postgres.url;
    const myUrl = dbs.mariadb.url;
    const sqliteFile = parseSqlUrl(dbs.sqlite.url).path!;
    const urls = [
      pgUrl.replace('postgresql://', 'postgres://'),
      pgUrl.replace('postgresql://', 'postgresql+psycopg2://'),
      myUrl.replace('mysql://', 'mariadb://'),
      myUrl.replace('mysql://', 'mysql+pymysql://'),
      `sqlite:///${relative(process.cwd(), sqliteFile)}`,
    ];
    for (const url of urls) {
      const r = await testConnector('source', { type: 'sql', connection_url: url, query: 'SELECT 1 AS one', chunk_size: 0 });
      expect(r, url).toMatchObject({ ok: true });
    }
  });

  it('a password is never shown: wrong password, unreachable server, failed run', async () => {
    const url = dbs.mariadb.url.replace('root@', 'root:Sup3rSecret%21@');
    const check = await testConnector('sink', { type: 'sql', connection_url: url, table: 'x', mode: 'insert', upsert_keys: [], chunk_size: 500 });
    expect(check.ok).toBe(false);
    expect(check.error).toMatch(/^sql: cannot connect to mysql:\/\/root@127\.0\.0\.1:3306\/svc_test_\d+_\d+: Access denied/);
    expect(check.error).not.toMatch(/Sup3rSecret/);
    const down = await testConnector('source', {
      type: 'sql',
      connection_url: 'postgresql://svc:Sup3rSecret%21@127.0.0.1:1/db',
      query: 'SELECT 1',
      chunk_size: 0,
    });
    expect(down.error).toMatch(/^sql: cannot connect to postgresql:\/\/svc@127\.0\.0\.1:1\/db: .*ECONNREFUSED/);
    expect(down.error).not.toMatch(/Sup3rSecret/);
    const { rec } = await sinkRun({ connection_url: url, table: 'x' }, [{ a: 1 }], { on_error: 'continue', dlq: undefined });
    expect(JSON.stringify(rec)).toMatch(/Access denied/);
    expect(JSON.stringify(rec)).not.toMatch(/Sup3rSecret/);
  });

  it('sslmode=require against a server without TLS fails clearly', async () => {
    const r = await testConnector('source', { type: 'sql', connection_url: `${dbs.postgres.url}?sslmode=require`, query: 'SELECT 1', chunk_size: 0 });
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/does not support SSL/);
  });
});

/** DDL per engine for the same logical table. */
const ddl = (e: Engine, t: string, cols: Record<'postgres' | 'mariadb' | 'sqlite', string>) => `CREATE TABLE ${t} (${cols[e]})`;

describe.each(ENGINES)('%s sink', (engine) => {
  const db = () => dbs[engine];
  const url = () => db().url;

  it('upsert: inserts new keys, updates existing ones (later records win), leaves absent columns alone', async () => {
    const t = newTable();
    await db().exec(
      ddl(engine, t, {
        postgres: 'id integer PRIMARY KEY, name text, note text',
        mariadb: 'id int PRIMARY KEY, name varchar(50), note varchar(50)',
        sqlite: 'id INTEGER PRIMARY KEY, name TEXT, note TEXT',
      }),
    );
    await db().exec(`INSERT INTO ${t} (id, name, note) VALUES (1, 'one', 'keep'), (2, 'two', 'keep')`);
    const sink = { connection_url: url(), table: t, mode: 'upsert', upsert_keys: ['id'] };
    const { rec, dlq } = await sinkRun(sink, [
      { id: 1, name: 'uno' },
      { id: 3, name: 'three', note: 'new' },
      { id: 3, name: 'tres' },
      { id: 2, name: 'dos', note: null },
    ]);
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(dlq).toEqual([]);
    expect(sorted(await db().exec(`SELECT id, name, note FROM ${t}`))).toEqual([
      { id: 1, name: 'uno', note: 'keep' },
      { id: 2, name: 'dos', note: null },
      { id: 3, name: 'tres', note: 'new' },
    ]);
  });

  it('upsert without a unique index on the keys: test() and the first write say what to create', async () => {
    const t = newTable();
    await db().exec(
      ddl(engine, t, {
        postgres: 'id integer, site text, v integer',
        mariadb: 'id int, site varchar(20), v int, UNIQUE KEY (id)',
        sqlite: 'id INTEGER UNIQUE, site TEXT, v INTEGER',
      }),
    );
    const sink = { type: 'sql', connection_url: url(), table: t, mode: 'upsert', upsert_keys: ['id', 'site'], chunk_size: 500 };
    const check = await testConnector('sink', sink);
    expect(check.ok).toBe(false);
    expect(check.error).toMatch(new RegExp(`mode upsert needs a primary key or unique index on exactly \\(id, site\\) of table \\S*${t}`));
    expect(check.error).toMatch(/CREATE UNIQUE INDEX/);
    const { rec, dlq } = await sinkRun(sink, [{ id: 1, site: 'a', v: 1 }], { on_error: 'continue', dlq: undefined });
    expect(rec.records_out).toBe(0);
    expect(rec.errors.join('\n')).toMatch(/needs a primary key or unique index on exactly \(id, site\)/);
    expect(dlq).toEqual([]);
    await db().exec(engine === 'mariadb' ? `CREATE UNIQUE INDEX ${t}_k ON ${t} (site, id)` : `CREATE UNIQUE INDEX ${t}_k ON ${t} (site, id)`);
    expect(await testConnector('sink', sink)).toMatchObject({ ok: true });
  });

  it('a record the database refuses goes to the DLQ with its message; the rest of its chunk lands', async () => {
    const t = newTable();
    await db().exec(
      ddl(engine, t, {
        postgres: 'id integer PRIMARY KEY, n integer NOT NULL CHECK (n >= 0)',
        mariadb: 'id int PRIMARY KEY, n int NOT NULL CHECK (n >= 0)',
        sqlite: 'id INTEGER PRIMARY KEY, n INTEGER NOT NULL CHECK (n >= 0)',
      }),
    );
    const records: Rec[] = Array.from({ length: 40 }, (_, i) => ({ id: i, n: i }));
    records[7] = { id: 7, n: -1 }; // CHECK
    records[21] = { id: 21, n: null }; // NOT NULL
    records[33] = { id: 5, n: 1 }; // duplicate primary key
    if (engine !== 'sqlite') records[12] = { id: 12, n: 'twelve' }; // not an integer (SQLite stores it)
    const { rec, dlq } = await sinkRun({ connection_url: url(), table: t, chunk_size: 16 }, records);
    const refused = engine === 'sqlite' ? [7, 21, 33] : [7, 12, 21, 33];
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(rec.records_out).toBe(40 - refused.length);
    expect(dlq.map((d) => d.record)).toEqual(refused.map((i) => records[i]));
    for (const d of dlq) expect(d).toMatchObject({ _stage: 'sink', _error: expect.stringMatching(/^sinks\[0\] \(sql\): /) });
    const byId = new Map(dlq.map((d) => [(d.record as Rec).n, String(d._error)]));
    expect(byId.get(-1)).toMatch(/check|constraint/i);
    expect(byId.get(null)).toMatch(/null/i);
    expect(dlq.find((d) => (d.record as Rec).id === 5 && (d.record as Rec).n === 1)!._error).toMatch(/duplicate|unique/i);
    const landed = await db().exec(`SELECT id FROM ${t}`);
    expect(landed.map((r) => Number(r.id)).sort((a, b) => a - b)).toEqual(records.map((_, i) => i).filter((i) => !refused.includes(i)));
  });

  it('fields that are not columns are refused by name; a missing table fails the write without retrying', async () => {
    const t = newTable();
    await db().exec(ddl(engine, t, { postgres: 'id integer, host text', mariadb: 'id int, host varchar(20)', sqlite: 'id INTEGER, host TEXT' }));
    const { rec, dlq } = await sinkRun({ connection_url: url(), table: t }, [{ id: 1, HOST: 'a' }, { id: 2, host: 'b', colour: 'red' }, { id: 3 }]);
    expect(rec.records_out).toBe(2);
    expect(dlq).toHaveLength(1);
    expect(dlq[0]!._error).toMatch(new RegExp(`field 'colour' is not a column of table \\S*${t} \\(columns: id, host\\)`));
    expect(sorted(await db().exec(`SELECT id, host FROM ${t}`))).toEqual([
      { id: 1, host: 'a' },
      { id: 3, host: null },
    ]);
    const started = Date.now();
    const missing = await sinkRun({ connection_url: url(), table: `${t}_missing`, retry_count: 3, retry_delay_seconds: 1 }, [{ id: 1 }], {
      on_error: 'continue',
      dlq: undefined,
    });
    expect(missing.rec.errors.join('\n')).toMatch(new RegExp(`table ${t}_missing does not exist in`));
    expect(Date.now() - started).toBeLessThan(2500); // not retried
  });

  it('writes statements of at most chunk_size rows in one transaction per batch', async () => {
    const t = newTable();
    await db().exec(ddl(engine, t, { postgres: 'id integer PRIMARY KEY', mariadb: 'id int PRIMARY KEY', sqlite: 'id INTEGER PRIMARY KEY' }));
    const n = 1234;
    const { rec } = await sinkRun(
      { connection_url: url(), table: t, chunk_size: 100 },
      Array.from({ length: n }, (_, i) => ({ id: i })),
    );
    expect(rec.records_out).toBe(n);
    expect(Number((await db().exec(`SELECT count(*) AS c FROM ${t}`))[0]!.c)).toBe(n);
  });
});

describe('postgres sink specifics', () => {
  it('one COPY per chunk_size rows (a statement trigger counts them), keys matched by case, objects into json', async () => {
    const db = dbs.postgres;
    const t = newTable();
    await db.exec(`CREATE TABLE ${t} (id integer, "Host" text, doc jsonb, at timestamptz, flag boolean)`);
    await db.exec(`CREATE TABLE ${t}_n (n integer); INSERT INTO ${t}_n VALUES (0)`);
    await db.exec(`CREATE FUNCTION ${t}_count() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE ${t}_n SET n = n + 1; RETURN NULL; END $$`);
    await db.exec(`CREATE TRIGGER ${t}_c AFTER INSERT ON ${t} FOR EACH STATEMENT EXECUTE FUNCTION ${t}_count()`);
    const records = Array.from({ length: 250 }, (_, i) => ({
      id: i,
      host: `rtr-${i}`,
      doc: { a: i, b: [1, 2] },
      at: '2024-05-01T10:00:00.5+02:00',
      flag: i % 2 === 0,
    }));
    const { rec } = await sinkRun({ connection_url: db.url, table: t, chunk_size: 100 }, records, { record_chunk_size: 1000 });
    expect(rec.records_out).toBe(250);
    expect((await db.exec(`SELECT n FROM ${t}_n`))[0]).toEqual({ n: 3 });
    const row = (await db.exec(`SELECT id, "Host", doc, at::text AS at, flag FROM ${t} WHERE id = 3`, []))[0];
    expect(row).toEqual({ id: 3, Host: 'rtr-3', doc: { a: 3, b: [1, 2] }, at: '2024-05-01 08:00:00.5+00', flag: false });
  });

  it('a refused row in a deferred constraint is found too (constraints checked per statement on the careful pass)', async () => {
    const db = dbs.postgres;
    const t = newTable();
    await db.exec(`CREATE TABLE ${t}_p (id integer PRIMARY KEY); INSERT INTO ${t}_p VALUES (1), (2)`);
    await db.exec(`CREATE TABLE ${t} (id integer, p integer REFERENCES ${t}_p (id) DEFERRABLE INITIALLY DEFERRED)`);
    const { rec, dlq } = await sinkRun({ connection_url: db.url, table: t }, [
      { id: 1, p: 1 },
      { id: 2, p: 9 },
      { id: 3, p: 2 },
    ]);
    expect(rec.records_out).toBe(2);
    expect(dlq.map((d) => d.record)).toEqual([{ id: 2, p: 9 }]);
    expect(dlq[0]!._error).toMatch(/foreign key constraint.*Key \(p\)=\(9\) is not present/);
  });

  it('a connection terminated mid-run is retried on a new connection (and the batch is not there twice)', async () => {
    const db = dbs.postgres;
    const t = newTable();
    await db.exec(`CREATE TABLE ${t} (id integer PRIMARY KEY)`);
    // 20 writes at 5 a second (the first 5 at once): the disruption lands mid-run.
    const running = sinkRun(
      { connection_url: db.url, table: t, retry_count: 5, retry_delay_seconds: 0.1 },
      Array.from({ length: 200 }, (_, i) => ({ id: i })),
      { record_chunk_size: 10, rate_limit_rps: 5 },
    );
    await until(async () => Number((await db.exec(`SELECT count(*) AS c FROM ${t}`))[0]!.c) >= 60, 15_000, 'rows written before the disruption');
    await db.disrupt();
    const { rec } = await running;
    expect(rec.status).toBe('success');
    expect(Number((await db.exec(`SELECT count(*) AS c FROM ${t}`))[0]!.c)).toBe(200);
  });
  it('an ON CONFLICT without its unique index (dropped during a run) is explained, not retried', async () => {
    const db = dbs.postgres;
    const t = newTable();
    await db.exec(`CREATE TABLE ${t} (id integer, v integer)`);
    const d = await openPostgres(parseSqlUrl(db.url), 'svc test');
    try {
      const table = (await d.describe({ name: t }))!;
      const spec = { table, keys: ['id', 'v'], columns: table.columns, upsert: ['id'], upsertFields: ['id'] };
      const err = await d.insert(spec, [{ id: 1, v: 1 }]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SqlError);
      expect((err as SqlError).kind).toBe('fatal');
      expect((err as SqlError).message).toMatch(
        new RegExp(`table public.${t} has no unique index on exactly \\(id\\).*CREATE UNIQUE INDEX "${t}_id_key" ON "public"."${t}" \\("id"\\)`),
      );
    } finally {
      await d.close();
    }
  });
});

describe('postgres COPY (mode insert)', () => {
  /** A table, the same table behind a view (views are written with INSERT), and a log of the statements that wrote them. */
  async function twin(ddl: string) {
    const db = dbs.postgres;
    const t = newTable();
    await db.exec(`CREATE TABLE ${t} (${ddl}); CREATE TABLE ${t}_b (LIKE ${t} INCLUDING DEFAULTS); CREATE VIEW ${t}_v AS SELECT * FROM ${t}_b`);
    await db.exec(`CREATE TABLE ${t}_log (tab text, stmt text)`);
    await db.exec(
      `CREATE FUNCTION ${t}_log() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO ${t}_log VALUES (TG_TABLE_NAME, upper(split_part(ltrim(current_query()), ' ', 1))); RETURN NULL; END $$`,
    );
    for (const x of [t, `${t}_b`]) await db.exec(`CREATE TRIGGER ${x}_l AFTER INSERT ON ${x} FOR EACH STATEMENT EXECUTE FUNCTION ${t}_log()`);
    const log = async () =>
      (await db.exec(`SELECT tab, stmt, count(*)::int AS n FROM ${t}_log GROUP BY 1, 2 ORDER BY 1, 2`)) as { tab: string; stmt: string; n: number }[];
    return { db, t, log };
  }

  it('writes every column type as the INSERT form does (COPY into the table, INSERT through a view of a twin)', async () => {
    const mood = `${newTable()}_mood`;
    await dbs.postgres.exec(`CREATE TYPE ${mood} AS ENUM ('ok', 'bad')`);
    const { db, t, log } = await twin(
      `id integer, s text, n integer, big bigint, num numeric, f float8, flag boolean, d date, at timestamptz, local timestamp, doc jsonb, j json,
       bin bytea, ia integer[], ta text[], jba jsonb[], mood ${mood}, pos integer CHECK (pos > 0), v varchar(5), dflt integer DEFAULT 7`,
    );
    const tricky = 'tab\there\nnl\\bs "dq" \'sq\' \rcr \\N \\. é漢🙂';
    const records: Rec[] = [
      {
        id: 1,
        s: tricky,
        n: 42,
        big: '9007199254740993',
        num: 1.5e21,
        f: 0.1,
        flag: true,
        d: '2024-05-01',
        at: '2024-05-01T10:00:00.5+02:00',
        local: '2024-05-01T10:00:00.123456',
        doc: { a: [1, 'x\ty'], b: null, c: 'back\\slash' },
        j: 'just a string',
        bin: '\\x0102ff',
        ia: [
          [1, 2],
          [3, null],
        ],
        ta: ['a', 'b,c', '"q"', null, 'NULL', '', 'x\\y', 'tab\t', 'nl\n', '{}', ' sp '],
        jba: [{ a: 1 }, 's', 5, null],
        mood: 'ok',
        pos: 3,
        v: 'abcde',
        dflt: 1,
      },
      {
        id: 2,
        s: null,
        n: null,
        big: null,
        num: null,
        f: null,
        flag: null,
        d: null,
        at: null,
        local: null,
        doc: null,
        j: null,
        bin: null,
        ia: null,
        ta: null,
        jba: null,
        mood: null,
        pos: null,
        v: null,
        dflt: null,
      },
      { id: 3, s: '', n: '7', big: -42, num: '12.50', f: 1e-7, flag: 'yes', doc: 's', j: { k: [1, {}] }, bin: 'AQL/', ia: [[]], ta: [], jba: [[1, 2]], v: 5 },
      { id: 4, s: 42, flag: 0, doc: [1, 'two'], j: 3, ia: '{5,6}', ta: [{ k: 1 }, 5, true] },
      { id: 5 },
    ];
    const copied = await sinkRun({ connection_url: db.url, table: t }, records);
    const inserted = await sinkRun({ connection_url: db.url, table: `${t}_v` }, records);
    for (const r of [copied, inserted]) {
      expect(r.dlq).toEqual([]);
      expect(r.rec.records_out, JSON.stringify(r.rec)).toBe(records.length);
    }
    expect(await log()).toEqual([
      { tab: t, stmt: 'COPY', n: 4 }, // one per record shape
      { tab: `${t}_b`, stmt: 'INSERT', n: 4 },
    ]);
    const all = (x: string) => db.exec(`SELECT * FROM ${x} ORDER BY id`);
    const rows = await all(t);
    expect(rows).toEqual(await all(`${t}_b`));
    const text = (await db.exec(`SELECT at::text, local::text, num::text, f::text, doc::text FROM ${t} WHERE id = 1`))[0];
    expect(text).toEqual({
      at: '2024-05-01 08:00:00.5+00',
      local: '2024-05-01 10:00:00.123456',
      num: '1500000000000000000000',
      f: '0.1',
      doc: '{"a": [1, "x\\ty"], "b": null, "c": "back\\\\slash"}',
    });
    expect(rows[0]).toMatchObject({
      s: tricky,
      n: 42,
      big: '9007199254740993',
      flag: true,
      j: 'just a string',
      bin: Buffer.from([1, 2, 255]),
      ia: [
        [1, 2],
        [3, null],
      ],
      ta: records[0]!.ta,
      jba: [{ a: 1 }, 's', 5, null],
      mood: 'ok',
      pos: 3,
      v: 'abcde',
      dflt: 1,
    });
    expect(rows[1]).toEqual(Object.fromEntries(Object.keys(rows[1]!).map((k) => [k, k === 'id' ? 2 : null])));
    expect(rows[2]).toMatchObject({
      s: '',
      n: 7,
      big: '-42',
      flag: true,
      doc: 's',
      j: { k: [1, {}] },
      bin: Buffer.from('AQL/'),
      ia: [],
      ta: [],
      jba: [[1, 2]],
      v: '5',
      dflt: 7,
    });
    expect(rows[3]).toMatchObject({ s: '42', flag: false, doc: [1, 'two'], j: 3, ia: [5, 6], ta: ['{"k":1}', '5', 'true'] });
    expect(rows[4]).toMatchObject({ id: 5, s: null, dflt: 7 });
  });

  it('a chunk COPY refuses: each row the database names is tried alone and dead-lettered with its message, the rest lands in few statements', async () => {
    const { db, t, log } = await twin('id integer PRIMARY KEY, n integer CHECK (n >= 0), s text');
    const records: Rec[] = Array.from({ length: 500 }, (_, i) => ({ id: i, n: i, s: `r${i}` }));
    records[100] = { id: 100, n: 'x', s: 'r100' }; // not an integer
    records[250] = { id: 250, n: -1, s: 'r250' }; // CHECK
    records[400] = { id: 3, n: 400, s: 'r400' }; // duplicate key
    const { rec, dlq } = await sinkRun({ connection_url: db.url, table: t }, records); // one chunk of 500
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(rec.records_out).toBe(497);
    expect(dlq.map((d) => d.record)).toEqual([records[100], records[250], records[400]]);
    expect(dlq.map((d) => d._error)).toEqual([
      expect.stringMatching(/^sinks\[0\] \(sql\): invalid input syntax for type integer: "x"$/),
      expect.stringMatching(/violates check constraint/),
      expect.stringMatching(/duplicate key value violates unique constraint .*\(Key \(id\)=\(3\) already exists\.\)/),
    ]);
    expect(Number((await db.exec(`SELECT count(*) AS c FROM ${t}`))[0]!.c)).toBe(497);
    // The rows between the refused ones, one COPY each (halving would take about 18 statements per refused row).
    expect(await log()).toEqual([{ tab: t, stmt: 'COPY', n: 4 }]);
  });

  it('a large COPY refused at its first row names that row and leaves the connection usable', async () => {
    const db = dbs.postgres;
    const t = newTable();
    await db.exec(`CREATE TABLE ${t} (n integer, pad text)`);
    const d = await openPostgres(parseSqlUrl(db.url), 'svc test');
    try {
      const table = (await d.describe({ name: t }))!;
      const spec = { table, keys: ['n', 'pad'], columns: table.columns };
      const pad = 'p'.repeat(2000);
      const rows: Rec[] = Array.from({ length: 5_000 }, (_, i) => ({ n: i, pad }));
      rows[0] = { n: 'zero', pad };
      await d.begin(false);
      const err = await d.insert(spec, rows).catch((e: unknown) => e);
      await d.rollback();
      expect(err).toBeInstanceOf(SqlError);
      expect(err).toMatchObject({ kind: 'data', row: 0, message: 'invalid input syntax for type integer: "zero"' });
      await d.begin(false);
      await d.insert(spec, rows.slice(1));
      await d.commit();
      expect(Number((await db.exec(`SELECT count(*) AS c FROM ${t}`))[0]!.c)).toBe(4_999);
    } finally {
      await d.close();
    }
  });

  it('chunks COPY cannot write as INSERT would keep the INSERT form: a lone surrogate, a composite column, GENERATED ALWAYS', async () => {
    const { db, t, log } = await twin('id integer, s text');
    const surrogate = await sinkRun({ connection_url: db.url, table: t }, [
      { id: 1, s: 'ok' },
      { id: 2, s: 'lone \ud800' },
      { id: 3, s: 'fine' },
    ]);
    expect(surrogate.rec.records_out).toBe(2);
    expect(surrogate.dlq.map((d) => (d.record as Rec).id)).toEqual([2]);
    expect(surrogate.dlq[0]!._error).toMatch(/invalid input syntax for type json/);
    // Only INSERT names a lone surrogate's error; the rows around it, once split off, go by COPY.
    expect(await log()).toEqual([{ tab: t, stmt: 'COPY', n: 2 }]);

    const pair = `${newTable()}_pair`;
    await db.exec(`CREATE TYPE ${pair} AS (a integer, b text)`);
    const c = newTable();
    await db.exec(`CREATE TABLE ${c} (id integer, p ${pair})`);
    const composite = await sinkRun({ connection_url: db.url, table: c }, [
      { id: 1, p: { a: 1, b: 'x' } },
      { id: 2, p: '(2,y)' },
    ]);
    expect(composite.dlq).toEqual([]);
    expect(await db.exec(`SELECT id, p::text FROM ${c} ORDER BY id`)).toEqual([
      { id: 1, p: '(1,x)' },
      { id: 2, p: '(2,y)' },
    ]);

    const g = newTable();
    await db.exec(`CREATE TABLE ${g} (id integer GENERATED ALWAYS AS IDENTITY, s text)`);
    expect((await sinkRun({ connection_url: db.url, table: g }, [{ s: 'a' }])).rec.records_out).toBe(1); // COPY, the identity generated
    const given = await sinkRun({ connection_url: db.url, table: g }, [{ id: 5, s: 'b' }], { on_error: 'continue', dlq: undefined });
    expect(given.rec.records_out).toBe(0);
    expect(given.rec.errors.join('\n')).toMatch(/cannot insert a non-DEFAULT value into column "id"/); // COPY would have written 5
    expect(await db.exec(`SELECT id, s FROM ${g}`)).toEqual([{ id: 1, s: 'a' }]);
  });

  it('encodes COPY text: tabs, newlines, carriage returns and backslashes escaped, \\N for NULL, array literals quoted', () => {
    const row = copyText(
      [encoderOf('scalar'), encoderOf('json'), encoderOf({ array: 'scalar' }), encoderOf({ array: 'json' })],
      ['s', 'j', 'a', 'ja'],
      [
        { s: 'a\tb\nc\rd\\e "f"', j: 'x\ty', a: [1, 'q"r', null, 's\\t', ['n']], ja: [{ k: 'v' }, 'w'] },
        { s: null, j: null, a: null, ja: undefined },
        {
          s: 1.5,
          j: NaN,
          a: [
            [1, 2],
            [3, 4],
          ],
          ja: [],
        },
      ],
    );
    expect(row.split('\n')).toEqual([
      String.raw`a\tb\nc\rd\\e "f"` +
        '\t' +
        String.raw`"x\\ty"` +
        '\t' +
        String.raw`{"1","q\\"r",NULL,"s\\\\t","[\\"n\\"]"}` +
        '\t' +
        String.raw`{"{\\"k\\":\\"v\\"}","\\"w\\""}`,
      '\\N\t\\N\t\\N\t\\N',
      '1.5\t\\N\t{{"1","2"},{"3","4"}}\t{}',
      '',
    ]);
    expect(copyRow({ where: 'COPY t, line 3, column n: "x"' })).toBe(2);
    expect(copyRow({ where: 'PL/pgSQL function f() line 1 at RAISE\nCOPY "s"."t, odd", line 12: "1\tx"' })).toBe(11);
    expect(copyRow({ where: 'SQL statement "INSERT ..."' })).toBeUndefined();
  });
});

describe('mariadb sink specifics', () => {
  it('ISO 8601 date-times (with a zone: converted to UTC) into DATETIME and TIMESTAMP; objects as JSON text', async () => {
    const db = dbs.mariadb;
    const t = newTable();
    await db.exec(`CREATE TABLE ${t} (id int, dt datetime(3), ts timestamp(6) NULL, doc json, flag boolean)`);
    const { rec, dlq } = await sinkRun({ connection_url: db.url, table: t }, [
      { id: 1, dt: '2024-05-01T10:00:00.250+02:00', ts: '2024-05-01T10:00:00.123456Z', doc: { a: [1, 2] }, flag: true },
      { id: 2, dt: '2024-05-01 10:00:00', ts: null, doc: null, flag: false },
    ]);
    expect(dlq).toEqual([]);
    expect(rec.records_out).toBe(2);
    // The fixture reads in UTC, with dateStrings.
    const rows = await db.exec(`SELECT id, dt, ts, doc, flag FROM ${t} ORDER BY id`);
    expect(rows).toEqual([
      { id: 1, dt: '2024-05-01 08:00:00.250', ts: '2024-05-01 10:00:00.123456', doc: { a: [1, 2] }, flag: 1 },
      { id: 2, dt: '2024-05-01 10:00:00.000', ts: null, doc: null, flag: 0 },
    ]);
    expect(mysqlDateTime('2024-05-01T23:30:00-01:30')).toBe('2024-05-02 01:00:00');
    expect(mysqlDateTime('yesterday')).toBe('yesterday');
  });
});

describe('sqlite sink specifics', () => {
  it('a file locked by another process: the write fails as retryable and lands on a retry', async () => {
    const db = dbs.sqlite;
    const t = newTable();
    await db.exec(`CREATE TABLE ${t} (id INTEGER, flag INTEGER, doc TEXT)`);
    const file = parseSqlUrl(db.url).path!;
    const lock = (await lockSqlite(file, 1200)).released;
    const { rec } = await sinkRun({ connection_url: db.url, table: t, retry_count: 6, retry_delay_seconds: 0.2 }, [{ id: 1, flag: true, doc: { a: 1 } }]);
    await lock;
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(await db.exec(`SELECT id, flag, doc FROM ${t}`)).toEqual([{ id: 1, flag: 1, doc: '{"a":1}' }]);
  });

  it('a database file that does not exist is not created', async () => {
    const dir = tempDir('svc-sql-none-');
    const r = await testConnector('sink', {
      type: 'sql',
      connection_url: `sqlite:///${join(dir, 'nope.db')}`,
      table: 't',
      mode: 'insert',
      upsert_keys: [],
      chunk_size: 500,
    });
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/^sql: cannot connect to SQLite file .*nope\.db: /);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe.each(ENGINES)('%s source', (engine) => {
  const db = () => dbs[engine];

  it('streams chunk_size rows per unit; chunk_size 0 reads everything as one unit', async () => {
    const t = newTable();
    await db().exec(ddl(engine, t, { postgres: 'id integer', mariadb: 'id int', sqlite: 'id INTEGER' }));
    const ids = Array.from({ length: 2500 }, (_, i) => i);
    for (let i = 0; i < ids.length; i += 500) {
      const part = ids.slice(i, i + 500);
      await db().exec(`INSERT INTO ${t} (id) VALUES ${part.map((id) => `(${id})`).join(', ')}`);
    }
    const chunked = await sourceRun({ connection_url: db().url, query: `SELECT id FROM ${t} ORDER BY id`, chunk_size: 1000 });
    expect(chunked.rec.status, JSON.stringify(chunked.rec)).toBe('success');
    expect(chunked.records.map((r) => r.id)).toEqual(ids);
    expect(chunked.records.map((r) => r._chunk)).toEqual(ids.map((i) => Math.floor(i / 1000) + 1));
    const whole = await sourceRun({ connection_url: db().url, query: `SELECT id FROM ${t} ORDER BY id;`, chunk_size: 0 });
    expect(whole.records).toHaveLength(2500);
    expect(new Set(whole.records.map((r) => r._chunk))).toEqual(new Set([1]));
    const none = await sourceRun({ connection_url: db().url, query: `SELECT id FROM ${t} WHERE id < 0`, chunk_size: 10 });
    expect(none.rec).toMatchObject({ status: 'success', records_in: 0 });
  });

  it('streams: a run that stops after 5,000 rows of a 20,000,000-row query ends at once, without reading the rest', async () => {
    const huge = {
      postgres: 'SELECT generate_series(1, 20000000) AS n', // in the select list: produced row by row, not materialized
      mariadb: 'SELECT seq AS n FROM seq_1_to_20000000',
      sqlite: 'WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 20000000) SELECT n FROM s',
    }[engine];
    const started = Date.now();
    const { rec, records } = await sourceRun({ connection_url: db().url, query: huge, chunk_size: 1000 }, { batch_size: 5000 });
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(records.map((r) => r.n)).toEqual(Array.from({ length: 5000 }, (_, i) => i + 1));
    expect(Date.now() - started).toBeLessThan(5000); // the whole result would take far longer (and gigabytes)
  });

  it('a query that fails fails the run with the database message; test() checks the query without running it', async () => {
    const r = await sourceRun({ connection_url: db().url, query: 'SELECT nope FROM no_such_table', chunk_size: 10 });
    expect(r.rec.status).toBe('failed');
    expect(r.rec.error).toMatch(/^sql: query failed on .*no_such_table/);
    const check = await testConnector('source', { type: 'sql', connection_url: db().url, query: 'SELECT nope FROM no_such_table', chunk_size: 0 });
    expect(check.ok).toBe(false);
    expect(check.error).toMatch(/^sql: query: .*no_such_table/);
    const t = newTable();
    await db().exec(ddl(engine, t, { postgres: 'id integer', mariadb: 'id int', sqlite: 'id INTEGER' }));
    const ok = await testConnector('source', { type: 'sql', connection_url: db().url, query: `DELETE FROM ${t}`, chunk_size: 0 });
    expect(ok.ok).toBe(true);
  });
});

describe('source values: JSON-safe, exact', () => {
  it('postgres: int8 exact (number or string), numeric as string, dates as ISO 8601, bytea base64, json nested, NaN as a string', async () => {
    const { records } = await sourceRun({
      connection_url: dbs.postgres.url,
      query: `SELECT 42::int8 AS small, 9007199254740993::int8 AS big, 12.50::numeric(6,2) AS dec, DATE '2024-05-01' AS d,
                     TIMESTAMP '2024-05-01 10:00:00.123456' AS ts, TIMESTAMPTZ '2024-05-01 10:00:00+02' AS tstz, '\\x0102ff'::bytea AS bin,
                     '{"a": [1, {"b": null}]}'::jsonb AS doc, 'NaN'::float8 AS nan, 1.5::float4 AS f, true AS yes, ARRAY[1, 2]::int[] AS arr, NULL::text AS nothing,
                     ARRAY[1, 9007199254740993, NULL]::int8[] AS big_arr, ARRAY[TIMESTAMP '2024-05-01 10:00:00', NULL] AS ts_arr,
                     ARRAY[TIMESTAMPTZ '2024-05-01 10:00:00+02'] AS tstz_arr, ARRAY[DATE '2024-05-01'] AS d_arr`,
      chunk_size: 10,
    });
    expect(records[0]).toEqual({
      small: 42,
      big: '9007199254740993',
      dec: '12.50',
      d: '2024-05-01',
      ts: '2024-05-01T10:00:00.123456',
      tstz: '2024-05-01T08:00:00Z',
      bin: Buffer.from([1, 2, 255]).toString('base64'),
      doc: { a: [1, { b: null }] },
      nan: 'NaN',
      f: 1.5,
      yes: true,
      arr: [1, 2],
      nothing: null,
      big_arr: [1, '9007199254740993', null],
      ts_arr: ['2024-05-01T10:00:00', null],
      tstz_arr: ['2024-05-01T08:00:00Z'],
      d_arr: ['2024-05-01'],
      _chunk: 1,
    });
  });

  it('mariadb: BIGINT exact, DECIMAL as string, DATETIME and TIMESTAMP (UTC) as ISO 8601, BLOB base64', async () => {
    const db = dbs.mariadb;
    const t = newTable();
    await db.exec(
      `CREATE TABLE ${t} (small bigint, big bigint unsigned, amount decimal(6,2), doc json, d date, dt datetime(3), ts timestamp(0) NULL, bin blob, f double)`,
    );
    await db.exec(
      `INSERT INTO ${t} VALUES (42, 18446744073709551615, 12.50, '{"a": [1, 2]}', '2024-05-01', '2024-05-01 10:00:00.250', '2024-05-01 10:00:00', x'0102ff', 1.5)`,
    );
    const { records } = await sourceRun({ connection_url: db.url, query: `SELECT * FROM ${t}`, chunk_size: 0 });
    expect(records[0]).toEqual({
      small: 42,
      big: '18446744073709551615',
      amount: '12.50',
      doc: { a: [1, 2] },
      d: '2024-05-01',
      dt: '2024-05-01T10:00:00.250',
      ts: '2024-05-01T10:00:00Z',
      bin: Buffer.from([1, 2, 255]).toString('base64'),
      f: 1.5,
      _chunk: 1,
    });
  });

  it('sqlite: 64-bit integers exact, REAL, BLOB base64, TEXT as stored', async () => {
    const { rec, records } = await sourceRun({
      connection_url: dbs.sqlite.url,
      query: "SELECT 42 AS small, 9223372036854775807 AS big, 1.5 AS f, x'0102ff' AS bin, '2024-05-01T10:00:00Z' AS at, NULL AS empty",
      chunk_size: 5,
    });
    expect(records[0], JSON.stringify(rec)).toEqual({
      small: 42,
      big: '9223372036854775807',
      f: 1.5,
      bin: 'AQL/',
      at: '2024-05-01T10:00:00Z',
      empty: null,
      _chunk: 1,
    });
  });

  it('a round trip: what the source reads, the sink writes back unchanged (postgres to mariadb to sqlite)', async () => {
    const pgT = newTable();
    const myT = newTable();
    const liteT = newTable();
    await dbs.postgres.exec(`CREATE TABLE ${pgT} (id int8, name text, at timestamptz, amount numeric(10,2))`);
    await dbs.postgres.exec(`INSERT INTO ${pgT} VALUES (1, 'a', '2024-05-01 10:00:00+00', 1.25), (9007199254740993, 'b', '2024-05-02 11:30:00+00', 99.99)`);
    await dbs.mariadb.exec(`CREATE TABLE ${myT} (id bigint, name varchar(10), at datetime, amount decimal(10,2))`);
    await dbs.sqlite.exec(`CREATE TABLE ${liteT} (id INTEGER, name TEXT, at TEXT, amount TEXT)`);
    const run = async (source: Cfg, sink: Cfg) => {
      const cfg = loadPipeline({ name: 'sql-roundtrip', schedule: { type: 'manual' }, source: { type: 'sql', ...source }, sinks: [{ type: 'sql', ...sink }] });
      return runPipeline(cfg, { log: silentLogger, processed: new MemoryProcessedFiles() });
    };
    expect(
      (await run({ connection_url: dbs.postgres.url, query: `SELECT * FROM ${pgT}`, chunk_size: 1 }, { connection_url: dbs.mariadb.url, table: myT }))
        .records_out,
    ).toBe(2);
    expect((await run({ connection_url: dbs.mariadb.url, query: `SELECT * FROM ${myT}` }, { connection_url: dbs.sqlite.url, table: liteT })).records_out).toBe(
      2,
    );
    // Read as text: the fixture's reader would round 2^53 + 1.
    expect(await dbs.sqlite.exec(`SELECT CAST(id AS TEXT) AS id, typeof(id) AS type, name, at, amount FROM ${liteT} ORDER BY id`)).toEqual([
      { id: '1', type: 'integer', name: 'a', at: '2024-05-01T10:00:00', amount: '1.25' },
      { id: '9007199254740993', type: 'integer', name: 'b', at: '2024-05-02T11:30:00', amount: '99.99' },
    ]);
  });
});

describe('docs', () => {
  it('the connector page names every URL form and the decisions', () => {
    const page = readFileSync(new URL('../../docs/connectors/sql.md', import.meta.url), 'utf8');
    for (const form of ['postgresql://', 'postgres://', 'postgresql+psycopg2://', 'mysql://', 'mariadb://', 'mysql+pymysql://', 'sqlite:///', 'sqlite:////'])
      expect(page).toContain(form);
  });
});
