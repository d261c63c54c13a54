// What the sql source and sink share: the connection_url field, the table name, and the drivers
// (postgres.ts with pg, mariadb.ts with mysql2, sqlite.ts with better-sqlite3, implementing the
// contract of driver.ts), loaded on first use so that a pipeline pays only for its own database.
import { Type } from '@sinclair/typebox';
import { errorMessage } from '../../../core/errors.js';
import type { LintIssue } from '../../types.js';
import type { SqlDriver, TableName } from './driver.js';
import { parseSqlUrl, URL_FORMS, type Dialect, type SqlTarget } from './url.js';

export const connectionUrlField = Type.String({
  minLength: 1,
  description: `Database URL: ${URL_FORMS}. The +driver part is accepted and ignored; the password is masked in every message.`,
});

export function lintUrl(url: string): LintIssue[] {
  if (url.includes('${')) return []; // resolved at run time
  try {
    parseSqlUrl(url);
    return [];
  } catch (e) {
    return [{ path: 'connection_url', message: (e as Error).message }];
  }
}

export function parseTableName(s: string): TableName {
  const parts = s.split('.');
  if (parts.length > 2 || parts.some((p) => p.trim() === '')) throw new Error(`'${s}' is not a table name: use name or schema.name`);
  return parts.length === 2 ? { schema: parts[0]!.trim(), name: parts[1]!.trim() } : { name: parts[0]!.trim() };
}

/**
 * Opens a connection (pg, mysql2) or the file (better-sqlite3); `lost` is called once if it breaks
 * later. A failure says where it tried (never with the password) and the driver's reason.
 */
export async function openDriver(target: SqlTarget, name: string, lost?: (e: Error) => void): Promise<SqlDriver> {
  try {
    switch (target.dialect) {
      case 'postgresql':
        return await (await import('./postgres.js')).openPostgres(target, name, lost);
      case 'mysql':
        return await (await import('./mariadb.js')).openMariadb(target, name, lost);
      case 'sqlite':
        return await (await import('./sqlite.js')).openSqlite(target);
    }
  } catch (e) {
    throw new Error(`${whereOf(target)}: ${errorMessage(e)}`, { cause: e });
  }
}

/** Where a connection goes, for messages (no password). */
export const whereOf = (t: SqlTarget) => (t.dialect === 'sqlite' ? `SQLite file ${t.path}` : t.shown);

/** `svc <pipeline> <component>`: how the connection shows in pg_stat_activity and the process list. */
export const connectionName = (pipeline: string, component?: string) => `svc ${pipeline} ${component ?? ''}`.trim().slice(0, 63);

/** Opens, runs `op`, closes: the reachability checks. */
export async function withDriver<T>(url: string, op: (d: SqlDriver, t: SqlTarget) => Promise<T>): Promise<T> {
  const target = parseSqlUrl(url);
  let d: SqlDriver;
  try {
    d = await openDriver(target, 'svc connector test');
  } catch (e) {
    throw new Error(`cannot connect to ${errorMessage(e)}`, { cause: e });
  }
  try {
    return await op(d, target);
  } finally {
    await d.close().catch(() => {});
  }
}

export { parseSqlUrl, type Dialect, type SqlTarget };
