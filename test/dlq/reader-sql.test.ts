// The sql DLQ reader against real databases (PostgreSQL and MariaDB on the machine, a SQLite
// file): envelopes written by the engine's DLQ into a table are read back whole, `record` from a
// JSON column or from JSON text; and a replay through a real daemon of records PostgreSQL refused
// (a CHECK constraint), once the constraint is gone.
import { afterAll, describe, expect, it } from 'vitest';
import { readDlq } from '../../src/dlq/reader.js';
import { silentLogger } from '../../src/observability/log.js';
import { mariadbDb, postgresDb, sqliteDb, type TestDb } from '../connectors/peers/sql.js';
import { testDaemon } from '../helpers/daemon.js';
import { deadLetterAndRead, expectEnvelopes, failingInput, pipelineWithDlq } from './_write.js';
import { finishedRun, register } from '../api/_helpers.js';

const dbs: TestDb[] = [];
afterAll(async () => {
  for (const db of dbs) await db.stop().catch(() => {});
});

const TABLES: Record<TestDb['engine'], string> = {
  postgres: 'CREATE TABLE dead (id serial PRIMARY KEY, _error text, _stage text, _pipeline text, _run_id text, _timestamp timestamptz, record jsonb, raw text)',
  mariadb:
    'CREATE TABLE dead (id int AUTO_INCREMENT PRIMARY KEY, _error text, _stage varchar(16), _pipeline text, _run_id text, _timestamp varchar(32), record longtext, raw longtext)',
  sqlite: 'CREATE TABLE dead (_error text, _stage text, _pipeline text, _run_id text, _timestamp text, record text, raw text)',
};

describe.each([
  ['postgres', postgresDb],
  ['mariadb', mariadbDb],
  ['sqlite', sqliteDb],
] as const)('sql DLQ reader on %s', (_engine, open) => {
  it('reads back every envelope the DLQ wrote, in _timestamp order, with stable ids', async () => {
    const db = await open();
    dbs.push(db);
    await db.exec(TABLES[db.engine]);
    const config = pipelineWithDlq(failingInput(20, 7), `{ type: sql, connection_url: ${JSON.stringify(db.url)}, table: dead }`);
    const { run, read } = await deadLetterAndRead(config, 7);
    expectEnvelopes(read, run.run_id, 7);
    expect(read.entries[0]!.location).toBe('dead#1');
    const again = await readDlq(config, { log: silentLogger, signal: AbortSignal.timeout(30_000) });
    expect(again.entries.map((e) => e.id)).toEqual(read.entries.map((e) => e.id));
    // Bounded: a read keeps at most `max` envelopes and says so.
    const capped = await readDlq(config, { log: silentLogger, signal: AbortSignal.timeout(30_000), max: 3 });
    expect(capped).toMatchObject({ truncated: true });
    expect(capped.entries.map((e) => e.id)).toEqual(read.entries.slice(0, 3).map((e) => e.id));
  });
});

describe('sql DLQ replay through the daemon', () => {
  it('replays records PostgreSQL refused once it accepts them; the refused ones stay unmarked before', async () => {
    const db = await postgresDb();
    dbs.push(db);
    await db.exec('CREATE TABLE target (i integer, octets integer CHECK (octets < 100))');
    await db.exec(TABLES.postgres);
    const d = await testDaemon();
    const dir = failingInput(0, 0);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(`${dir}/in/a.ndjson`, [1, 150, 2, 300].map((o, i) => JSON.stringify({ i, octets: o })).join('\n') + '\n');
    const yaml = [
      'version: "1"',
      'pipeline:',
      '  name: pgr',
      '  schedule: { type: manual }',
      `  source: { type: local, path: ${JSON.stringify(`${dir}/in`)} }`,
      '  serializer_in: { type: ndjson }',
      '  on_error: dlq',
      `  sinks: [{ type: sql, connection_url: ${JSON.stringify(db.url)}, table: target }]`,
      `  dlq: { type: sql, connection_url: ${JSON.stringify(db.url)}, table: dead }`,
    ].join('\n');
    await register(d, yaml);
    const t = await d.call('POST', '/api/pipelines/pgr/run');
    expect(await finishedRun(d, t.body.run_id)).toMatchObject({ records_in: 4, records_out: 2, dlq_count: 2 });
    const listed = await d.call('GET', '/api/pipelines/pgr/dlq?stage=sink');
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.map((e: any) => e.envelope.record)).toEqual([
      { i: 1, octets: 150 },
      { i: 3, octets: 300 },
    ]);
    expect(listed.body[0].envelope._error).toMatch(/^sinks\[0\] \(sql\): .*check constraint/);

    const refused = await d.call('POST', '/api/pipelines/pgr/dlq/replay', { body: {} });
    expect(refused.body).toMatchObject({ status: 'success', records_in: 2, records_out: 0, records_skipped: 2, replayed: [] });
    expect(refused.body.failed).toHaveLength(2);
    // Only one of them is fixed by an edit: the other fails again and stays unmarked.
    const edited = await d.call('POST', '/api/pipelines/pgr/dlq/replay', { body: { set: { octets: 'octets - 100' } } });
    expect(edited.body).toMatchObject({ records_in: 2, records_out: 1, replayed: [listed.body[0].id] });
    expect(edited.body.failed.map((f: any) => f.id)).toEqual([listed.body[1].id]);
    await db.exec('ALTER TABLE target DROP CONSTRAINT target_octets_check');
    const rest = await d.call('POST', '/api/pipelines/pgr/dlq/replay', { body: {} });
    expect(rest.body).toMatchObject({ replayed: [listed.body[1].id], already_replayed: [listed.body[0].id] });
    expect(await finishedRun(d, rest.body.run_id)).toMatchObject({ records_in: 1, records_out: 1, status: 'success' });
    expect(await db.exec('SELECT i, octets FROM target ORDER BY i')).toEqual([
      { i: 0, octets: 1 },
      { i: 1, octets: 50 },
      { i: 2, octets: 2 },
      { i: 3, octets: 300 },
    ]);
  });
});
