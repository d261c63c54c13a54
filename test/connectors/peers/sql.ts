// Peer fixtures for the sql connector, one per database:
// - postgres: the PostgreSQL running on the machine (127.0.0.1:5432, trust), a database
//   `svc_test_<pid>_<n>` of this test file's own, dropped at the end. disrupt() terminates every
//   other backend of that database (pg_terminate_backend).
// - mariadb: the MariaDB running on the machine (127.0.0.1:3306, root without password), a database
//   `svc_test_<pid>_<n>` of its own, dropped at the end. disrupt() kills every other connection
//   to it (KILL CONNECTION).
// - sqlite: a database file in a temporary directory. disrupt() holds an exclusive lock on it from
//   another process for 1.5 s, so writes fail with SQLITE_BUSY until it is released.
// A channel is a table (seq integer, pad text). Naming it in a sink config creates it (a SQL sink
// needs its table to exist, and the suite asks for a config before anything else).
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createConnection, type Connection as MyConn } from 'mysql2/promise';
import pg from 'pg';
import type { Collector, Peer, PeerFixture, Rec } from '../conformance.js';
import { pollingCollector } from './polling.js';
import { until } from '../../helpers/wait.js';

export type Engine = 'postgres' | 'mariadb' | 'sqlite';

let dbSeq = 0;
const dbName = () => `svc_test_${process.pid}_${++dbSeq}`;

/** A database of one test file, with the fixture's own (admin) access to it. */
export interface TestDb {
  engine: Engine;
  /** connection_url of the database for the connectors. */
  url: string;
  /** The same database with the password or user replaced. */
  wrongCredentialsUrl?: string;
  /** The same kind of URL where nothing answers. */
  wrongPortUrl: string;
  /** Runs statements (`?` placeholders for mariadb and sqlite, `$1` for postgres); rows for queries. */
  exec(sql: string, params?: unknown[]): Promise<Rec[]>;
  /** Synchronous DDL (used by config(): tables must exist before a sink is checked). */
  execSync(sql: string): void;
  /** Breaks the connectors' connections (or locks the file); resolves when the database is usable again. */
  disrupt(): Promise<void>;
  stop(): Promise<void>;
}

export async function postgresDb(): Promise<TestDb> {
  const name = dbName();
  const base = { host: '127.0.0.1', port: 5432, user: 'postgres' };
  const admin = new pg.Client({ ...base, database: 'test' });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const c = new pg.Client({ ...base, database: name, application_name: 'svc test fixture' });
  await c.connect();
  c.on('error', () => {});
  return {
    engine: 'postgres',
    url: `postgresql://postgres@127.0.0.1:5432/${name}`,
    // Local connections are trusted (any password passes): a user that does not exist is refused.
    wrongCredentialsUrl: `postgresql://svc_wrong_user:wrong-secret@127.0.0.1:5432/${name}`,
    wrongPortUrl: `postgresql://postgres@127.0.0.1:1/${name}`,
    exec: async (sql, params) => (await c.query(sql, params)).rows as Rec[],
    execSync: (sql) =>
      void execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-d', name, '-qX', '-v', 'ON_ERROR_STOP=1', '-c', sql], { stdio: 'pipe' }),
    async disrupt() {
      const terminate = async () =>
        (await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name])).rowCount;
      await until(terminate, 5000, 'a connection of the connector under test to terminate', 50);
    },
    async stop() {
      await c.end().catch(() => {});
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await admin.end().catch(() => {});
    },
  };
}

export async function mariadbDb(): Promise<TestDb> {
  const name = dbName();
  const base = { host: '127.0.0.1', port: 3306, user: 'root' };
  const admin = await createConnection({ ...base, database: 'test' });
  await admin.query(`CREATE DATABASE ${name}`);
  const c: MyConn = await createConnection({ ...base, database: name, supportBigNumbers: true, bigNumberStrings: false, dateStrings: true });
  c.on('error', () => {});
  await c.query("SET time_zone = '+00:00'");
  return {
    engine: 'mariadb',
    url: `mysql://root@127.0.0.1:3306/${name}`,
    wrongCredentialsUrl: `mysql://root:wrong-secret@127.0.0.1:3306/${name}`,
    wrongPortUrl: `mysql://root@127.0.0.1:1/${name}`,
    async exec(sql, params) {
      const [rows] = await c.query(sql, params);
      return Array.isArray(rows) ? (rows as Rec[]) : [];
    },
    execSync: (sql) => void execFileSync('mariadb', ['-h', '127.0.0.1', '-u', 'root', name, '-e', sql], { stdio: 'pipe' }),
    async disrupt() {
      const kill = async () => {
        const [rows] = await c.query('SELECT ID AS id FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()', [name]);
        const ids = (rows as { id: number }[]).map((r) => r.id);
        for (const id of ids) await c.query(`KILL CONNECTION ${Number(id)}`).catch(() => {});
        return ids.length > 0;
      };
      await until(kill, 5000, 'a connection of the connector under test to kill', 50);
    },
    async stop() {
      await c.end().catch(() => {});
      await admin.query(`DROP DATABASE IF EXISTS ${name}`).catch(() => {});
      await admin.end().catch(() => {});
    },
  };
}

/** Holds an exclusive lock on `file` from another process for `ms`; resolves once the lock is held, with `released`. */
export async function lockSqlite(file: string, ms: number): Promise<{ released: Promise<void> }> {
  const script = `const D = require('better-sqlite3'); const db = new D(process.argv[1]); db.exec('BEGIN EXCLUSIVE'); process.stdout.write('locked\\n'); setTimeout(() => { db.exec('COMMIT'); db.close(); }, Number(process.argv[2]));`;
  const child = spawn(process.execPath, ['-e', script, file, String(ms)], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the locking process exited (${code}) before taking the lock`)));
  });
  return { released: exited.then(() => undefined) };
}

export async function sqliteDb(): Promise<TestDb> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-sql-'));
  const file = join(dir, 'test.db');
  const db = new Database(file, { timeout: 0 });
  const run = (sql: string, params: unknown[] = []) => {
    const s = db.prepare(sql);
    if (s.reader) return s.all(...params) as Rec[];
    s.run(...params);
    return [];
  };
  return {
    engine: 'sqlite',
    url: `sqlite:///${file}`,
    wrongPortUrl: `sqlite:///${join(dir, 'missing', 'nothing.db')}`,
    exec: async (sql, params) => run(sql, params),
    execSync: (sql) => void db.exec(sql),
    disrupt: async () => (await lockSqlite(file, 1500)).released,
    async stop() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const startDb = (engine: Engine): Promise<TestDb> => (engine === 'postgres' ? postgresDb() : engine === 'mariadb' ? mariadbDb() : sqliteDb());

/** Reads the table every 50 ms until closed (records() answers at once; a locked or busy read keeps the last rows). */
function poll(db: TestDb, table: string): Collector {
  return pollingCollector(() => db.exec(`SELECT seq, pad FROM ${table}`), { everyMs: 50 });
}

export function sqlFixture(engine: Engine): PeerFixture {
  return {
    type: 'sql',
    badConfig: { role: 'sink', set: { mode: 'merge' }, path: 'mode' },
    async start(): Promise<Peer> {
      const db = await startDb(engine);
      const ensure = (table: string) => db.execSync(`CREATE TABLE IF NOT EXISTS ${table} (seq integer, pad text)`);
      return {
        source: {
          config: (table) => ({ type: 'sql', connection_url: db.url, query: `SELECT seq, pad FROM ${table} ORDER BY seq`, chunk_size: 100 }),
          prepare: async (table) => ensure(table),
          async publish(table, bodies) {
            const rows = bodies.map((b) => JSON.parse(b.toString()) as { seq: number; pad: string });
            for (let i = 0; i < rows.length; i += 500) {
              const part = rows.slice(i, i + 500);
              const ph = engine === 'postgres' ? part.map((_, j) => `($${2 * j + 1}, $${2 * j + 2})`) : part.map(() => '(?, ?)');
              await db.exec(
                `INSERT INTO ${table} (seq, pad) VALUES ${ph.join(', ')}`,
                part.flatMap((r) => [r.seq, r.pad]),
              );
            }
          },
        },
        sink: {
          config: (table) => {
            ensure(table);
            return { type: 'sql', connection_url: db.url, table };
          },
          async collect(table) {
            ensure(table);
            return poll(db, table);
          },
        },
        wrongPort: (cfg) => ({ ...cfg, connection_url: db.wrongPortUrl }),
        ...(db.wrongCredentialsUrl
          ? { wrongCredentials: (cfg: Rec) => ({ ...cfg, connection_url: db.wrongCredentialsUrl }) }
          : { noCredentials: 'SQLite has no credentials: access to the database is the permission on its file' }),
        disrupt: () => db.disrupt(),
        stop: () => db.stop(),
      };
    },
  };
}
