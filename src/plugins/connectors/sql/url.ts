// `connection_url` in the forms operators paste from SQLAlchemy-based tools: a dialect, an optional
// `+driver` (ignored: svc has one driver per database), and the server or file. Parsed once, before
// any I/O, so a malformed URL is a lint error at its YAML line, never a failed run.

export type Dialect = 'postgresql' | 'mysql' | 'sqlite';

export interface SqlTarget {
  dialect: Dialect;
  /** Servers: host (default localhost), port, user, password, database. */
  host: string;
  port: number;
  user?: string;
  password?: string;
  database?: string;
  /** SQLite: the database file, absolute or relative to the working directory. */
  path?: string;
  /** Query parameters (those listed in PARAMS for the dialect). */
  params: Record<string, string>;
  /** The URL without credentials, for messages. */
  shown: string;
}

const DIALECTS: Record<string, Dialect> = { postgresql: 'postgresql', postgres: 'postgresql', mysql: 'mysql', mariadb: 'mysql', sqlite: 'sqlite' };
const PORTS: Record<Dialect, number> = { postgresql: 5432, mysql: 3306, sqlite: 0 };

/** The query parameters each dialect takes; anything else is refused rather than silently ignored. */
export const PARAMS: Record<Dialect, Record<string, RegExp | undefined>> = {
  postgresql: {
    sslmode: /^(disable|allow|prefer|require|verify-ca|verify-full)$/,
    application_name: undefined,
    connect_timeout: /^\d+$/,
    host: undefined,
  },
  mysql: {
    charset: /^[A-Za-z0-9_]+$/,
    ssl_mode: /^(disabled|preferred|required|verify_ca|verify_identity)$/i,
    connect_timeout: /^\d+$/,
  },
  sqlite: {},
};

export const URL_FORMS =
  'postgresql://user:password@host:5432/db (also postgres:// and postgresql+psycopg2://), mysql://user:password@host:3306/db (also mariadb:// and mysql+pymysql://), sqlite:///relative/file.db or sqlite:////absolute/file.db';

/** Throws an Error saying what is wrong; the message never contains the password. */
export function parseSqlUrl(url: string): SqlTarget {
  const m = /^([a-zA-Z][a-zA-Z0-9]*)(\+[a-zA-Z0-9_.-]+)?:\/\/(.*)$/s.exec(url.trim());
  const dialect = m ? DIALECTS[m[1]!.toLowerCase()] : undefined;
  if (!m || !dialect) {
    const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(url)?.[1];
    throw new Error(`${scheme ? `unsupported scheme '${scheme}://'` : 'not a database URL'}; use ${URL_FORMS}`);
  }
  return dialect === 'sqlite' ? sqliteTarget(m[3]!) : serverTarget(dialect, m[1]!.toLowerCase(), m[3]!);
}

function sqliteTarget(rest: string): SqlTarget {
  if (rest.includes('?')) throw new Error('sqlite:// URLs take no query parameters');
  // SQLAlchemy: sqlite:/// + path, so a relative path follows three slashes and an absolute one four.
  if (!rest.startsWith('/') || rest.length < 2) throw new Error(`a SQLite URL names a file: sqlite:///relative/file.db or sqlite:////absolute/file.db`);
  const path = decodeURIComponent(rest.slice(1));
  if (path === ':memory:') throw new Error('an in-memory SQLite database (sqlite:///:memory:) is empty at every connection: name a file');
  return { dialect: 'sqlite', host: '', port: 0, path, params: {}, shown: `sqlite:///${rest.slice(1)}` };
}

function serverTarget(dialect: Dialect, scheme: string, rest: string): SqlTarget {
  let u: URL;
  try {
    // A special scheme makes URL parse the authority the same way for every dialect.
    u = new URL(`http://${rest}`);
  } catch {
    throw new Error(`cannot parse the URL: use ${URL_FORMS}`);
  }
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (database.includes('/')) throw new Error(`the path names one database ('/${database}' has several parts)`);
  const params: Record<string, string> = {};
  for (const [k, v] of u.searchParams) {
    const allowed = PARAMS[dialect];
    if (!(k in allowed)) throw new Error(`query parameter '${k}' is not supported for ${dialect}; supported: ${Object.keys(allowed).join(', ')}`);
    const shape = allowed[k];
    if (shape && !shape.test(v)) throw new Error(`query parameter ${k}=${v} is not valid (${shape.source.replace(/[\^$()]/g, '').replace(/\|/g, ', ')})`);
    params[k] = v;
  }
  if (dialect === 'mysql' && database === '') throw new Error(`a ${scheme}:// URL names its database: ${scheme}://user:password@host:3306/<database>`);
  const port = u.port ? Number(u.port) : PORTS[dialect];
  const user = u.username ? decodeURIComponent(u.username) : undefined;
  const password = u.password ? decodeURIComponent(u.password) : undefined;
  const where = `${host.includes(':') ? `[${host}]` : host || 'localhost'}:${port}`;
  return {
    dialect,
    host: host || 'localhost',
    port,
    user,
    password,
    database: database || undefined,
    params,
    shown: `${scheme}://${user ? `${encodeURIComponent(user)}@` : ''}${where}/${database}`,
  };
}
