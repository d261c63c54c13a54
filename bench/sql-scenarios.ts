// sql-sink: 1,000,000 interface records (the NDJSON file of the other scenarios) into a table
// through the sql sink, as a real pipeline run (local NDJSON -> sql, chunk_size 500, the default),
// into the machine's PostgreSQL and MariaDB, each in a database of its own (dropped after). Beside
// each, the database's own bulk loader on the same rows as CSV (generated once): `psql -c "\copy
// ... from"` and `mariadb --local-infile=1 -e "LOAD DATA LOCAL INFILE ..."`. PostgreSQL once more
// with chunk_size 5000 (COPY statements of a whole batch). And local -> local, what the pipeline
// costs without a database. CPU seconds of our process are printed beside each
// leg: steadier than wall time on a shared machine.
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { DATA_DIR, interfaceRecord, linesFile, ndjsonFile } from './data.js';
import { manualLeg } from './pipeline.js';
import type { Measured, Scenario } from './scenarios.js';

const RECORDS = 1_000_000;
const run = promisify(execFile);
const DB = `svc_bench_${process.pid}`;
const COLUMNS = ['host', 'ifIndex', 'ifDescr', 'ifInOctets', 'ifOutOctets', 'ifOperStatus', 'ts'];

const psql = (db: string, sql: string) =>
  run('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-d', db, '-qX', '-v', 'ON_ERROR_STOP=1', '-c', sql], { maxBuffer: 1 << 20 });
const mariadb = (db: string, sql: string, extra: string[] = []) =>
  run('mariadb', ['-h', '127.0.0.1', '-u', 'root', ...extra, db, '-e', sql], { maxBuffer: 1 << 20 });

/** The NDJSON records as CSV without a header (the loaders' input), made once beside the NDJSON file. */
async function csvFile(): Promise<string> {
  await ndjsonFile(RECORDS); // the pipeline legs' input, made in the same prepare step
  return linesFile(`sql-${RECORDS}`, 'interfaces.csv', RECORDS, (i) => {
    const r = JSON.parse(interfaceRecord(i)) as Record<string, unknown>;
    return COLUMNS.map((c) => String(r[c])).join(',');
  });
}

/** One run of the NDJSON records into `sink` (a YAML flow mapping). */
async function leg(name: string, sink: string): Promise<{ seconds: number; cpuSeconds: number }> {
  const input = await ndjsonFile(RECORDS);
  return manualLeg(
    name,
    `{ type: local, path: ${JSON.stringify(dirname(input))}, file_pattern: '*.ndjson' }`,
    sink,
    '{ type: ndjson }',
    '{ type: ndjson }',
    RECORDS,
  );
}

/** Seconds of one shell command (a bulk loader). */
async function timed(f: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await f();
  return (performance.now() - t0) / 1000;
}

const rps = (seconds: number) => Math.round(RECORDS / seconds);

export const sqlSink: Scenario = {
  prepare: async () => void (await csvFile()),
  async run(): Promise<Measured> {
    const csv = await csvFile();
    const out: Measured = { records: RECORDS, chunk_size: 500 };
    const table = `CREATE TABLE interfaces (host varchar(20), "ifIndex" varchar(8), "ifDescr" varchar(20), "ifInOctets" bigint, "ifOutOctets" bigint, "ifOperStatus" int, ts bigint)`;
    const pgCount = async () =>
      Number((await run('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-d', DB, '-tAXc', 'SELECT count(*) FROM interfaces'])).stdout.trim());
    const myCount = async () => Number((await mariadb(DB, 'SELECT count(*) FROM interfaces', ['-N'])).stdout.trim());

    await psql('test', `DROP DATABASE IF EXISTS ${DB}`);
    await psql('test', `CREATE DATABASE ${DB}`);
    try {
      await psql(DB, table);
      const ours = await leg('sql-sink-postgres', `{ type: sql, connection_url: 'postgresql://postgres@127.0.0.1:5432/${DB}', table: interfaces }`);
      if ((await pgCount()) !== RECORDS) throw new Error('postgres: rows missing');
      await psql(DB, 'TRUNCATE interfaces');
      await psql(DB, 'CHECKPOINT');
      const copy = await timed(() => psql(DB, `\\copy interfaces FROM '${csv}' WITH (FORMAT csv)`));
      if ((await pgCount()) !== RECORDS) throw new Error('postgres: \\copy did not load every row');
      // COPY statements of 5,000 rows: about one per batch, a tenth of the round trips.
      await psql(DB, 'TRUNCATE interfaces');
      await psql(DB, 'CHECKPOINT');
      const big = await leg(
        'sql-sink-postgres-5000',
        `{ type: sql, connection_url: 'postgresql://postgres@127.0.0.1:5432/${DB}', table: interfaces, chunk_size: 5000 }`,
      );
      if ((await pgCount()) !== RECORDS) throw new Error('postgres (chunk_size 5000): rows missing');
      out.postgres_records_per_sec = rps(ours.seconds);
      out.postgres_cpu_s = Number(ours.cpuSeconds.toFixed(2));
      out.postgres_copy_records_per_sec = rps(copy);
      out.postgres_ratio = Number((copy / ours.seconds).toFixed(2));
      out.postgres_chunk_5000_records_per_sec = rps(big.seconds);
      out.postgres_chunk_5000_cpu_s = Number(big.cpuSeconds.toFixed(2));
      out.postgres_chunk_5000_ratio = Number((copy / big.seconds).toFixed(2));
    } finally {
      await psql('test', `DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`).catch(() => {});
    }

    await mariadb('test', `DROP DATABASE IF EXISTS ${DB}; CREATE DATABASE ${DB}`);
    try {
      await mariadb(DB, table.replace(/"/g, '`'));
      const ours = await leg('sql-sink-mariadb', `{ type: sql, connection_url: 'mysql://root@127.0.0.1:3306/${DB}', table: interfaces }`);
      if ((await myCount()) !== RECORDS) throw new Error('mariadb: rows missing');
      await mariadb(DB, 'TRUNCATE interfaces');
      const load = await timed(() => mariadb(DB, `LOAD DATA LOCAL INFILE '${csv}' INTO TABLE interfaces FIELDS TERMINATED BY ','`, ['--local-infile=1']));
      if ((await myCount()) !== RECORDS) throw new Error('mariadb: LOAD DATA did not load every row');
      out.mariadb_records_per_sec = rps(ours.seconds);
      out.mariadb_cpu_s = Number(ours.cpuSeconds.toFixed(2));
      out.mariadb_load_data_records_per_sec = rps(load);
      out.mariadb_ratio = Number((load / ours.seconds).toFixed(2));
    } finally {
      await mariadb('test', `DROP DATABASE IF EXISTS ${DB}`).catch(() => {});
    }

    // The same records local NDJSON -> local NDJSON: what the pipeline costs without a database.
    const localOut = join(DATA_DIR, 'out', 'sql-sink-local');
    rmSync(localOut, { recursive: true, force: true });
    mkdirSync(localOut, { recursive: true });
    const local = await leg('sql-sink-local', `{ type: local, path: ${JSON.stringify(localOut)}, filename_template: 'out.ndjson' }`);
    out.local_records_per_sec = rps(local.seconds);
    out.local_cpu_s = Number(local.cpuSeconds.toFixed(2));
    rmSync(localOut, { recursive: true, force: true });
    return out;
  },
};
