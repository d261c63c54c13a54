// What the store tests share: the server URLs and an empty database of each engine.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { OpenStoreOptions } from '../../src/store/index.js';
import type { DbEngine } from '../../src/store/types.js';

export const PG_URL = process.env.SVC_TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
export const MYSQL_URL = process.env.SVC_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/';

export interface Fresh {
  opts: OpenStoreOptions;
  drop(): Promise<void>;
}

export function withDb(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

/** An empty database of the engine (a temp SQLite file at `sqliteFile` in a new folder, or a new server database). */
export async function freshDatabase(engine: DbEngine, sqliteFile = 'svc.db'): Promise<Fresh> {
  const name = `svc_test_${randomBytes(6).toString('hex')}`;
  if (engine === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'svc-store-'));
    return { opts: { path: join(dir, sqliteFile) }, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  if (engine === 'postgresql') {
    const admin = withDb(PG_URL, 'postgres');
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    await c.query(`create database ${name}`);
    await c.end();
    return {
      opts: { url: withDb(PG_URL, name) },
      drop: async () => {
        const d = new pg.Client({ connectionString: admin });
        await d.connect();
        await d.query(`drop database if exists ${name} with (force)`);
        await d.end();
      },
    };
  }
  const c = await mysql.createConnection(MYSQL_URL);
  await c.query(`create database ${name}`);
  await c.end();
  return {
    opts: { url: withDb(MYSQL_URL, name) },
    drop: async () => {
      const d = await mysql.createConnection(MYSQL_URL);
      await d.query(`drop database if exists ${name}`);
      await d.end();
    },
  };
}
