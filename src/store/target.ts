// Which database a URL or path names, without loading any driver: the daemon's store and the
// enrich transform's lookup queries both resolve targets here.
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { DbEngine } from './types.js';

export interface DbTarget {
  engine: DbEngine;
  /** Server URL (postgresql, mysql), else null. */
  url: string | null;
  /** File of the embedded database (sqlite), else null. */
  path: string | null;
}

/** The embedded database when neither SVC_DB_URL nor SVC_DB_PATH is set: `~/.svc/svc.db`. */
export function defaultDbPath(): string {
  return join(homedir(), '.svc', 'svc.db');
}

const SCHEMES: Record<string, DbEngine> = {
  'postgresql:': 'postgresql',
  'postgres:': 'postgresql',
  'mysql:': 'mysql',
  'mariadb:': 'mysql',
};

/** Which engine and where. Throws a clear Error on an unsupported or malformed SVC_DB_URL. */
export function resolveTarget(opts: { url?: string; path?: string }): DbTarget {
  const url = (opts.url ?? '').trim();
  if (url === '') {
    const p = opts.path && opts.path.trim() !== '' ? opts.path : defaultDbPath();
    return { engine: 'sqlite', url: null, path: p === ':memory:' ? p : resolve(p) };
  }
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*:)\/\//.exec(url);
  const engine = m ? SCHEMES[m[1]!.toLowerCase()] : undefined;
  if (!engine) {
    const shown = m ? `scheme "${m[1]}//"` : `value ${JSON.stringify(redactUrl(url))}`;
    throw new Error(
      `SVC_DB_URL: unsupported ${shown}; accepted schemes are postgresql://, postgres://, mysql:// and mariadb:// ` +
        '(leave SVC_DB_URL empty to use the embedded SQLite file at SVC_DB_PATH)',
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`SVC_DB_URL: cannot parse ${JSON.stringify(redactUrl(url))} as a URL`);
  }
  if (engine === 'mysql' && decodeURIComponent(parsed.pathname.replace(/^\//, '')) === '') {
    throw new Error(`SVC_DB_URL: ${redactUrl(url)} names no database; use mysql://user:password@host:3306/<database>`);
  }
  return { engine, url, path: null };
}

/** The URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/, '$1:***@');
}
