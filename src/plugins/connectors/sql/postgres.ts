// PostgreSQL through pg 8 (one Client per connection, no pool: the sink writes one transaction at a
// time) and pg-cursor for chunked reads.
//
// Writes: one statement per chunk.
// - mode insert: `COPY t (cols) FROM STDIN` (pg-copy.ts, pg-copy-streams). PostgreSQL loads the
//   rows of a COPY in pages (multi-insert) instead of one by one. A refused COPY names its row (the
//   line in the error's context): the sink tries that row alone.
// - mode upsert, and an insert chunk COPY cannot write as INSERT would (a composite column, a
//   GENERATED ALWAYS column, a string with a lone UTF-16 surrogate; a view, a table with rules or
//   row-level security): `INSERT INTO t (cols) SELECT cols FROM json_populate_recordset(NULL::t, $1)
//   [ON CONFLICT ...]`, the chunk as one JSON parameter, each value converted by the column type's
//   input function (COPY's encoding hands the input functions the same texts). An upsert through
//   COPY into a temporary table and INSERT ... SELECT ... ON CONFLICT from it was measured no
//   faster: the per-row conflict check and update dominate, and it costs two more round trips.
import pg from 'pg';
import Cursor from 'pg-cursor';
import { errorMessage } from '../../../core/errors.js';
import { exactNumber } from '../../../util/exact-number.js';
import type { Rec } from '../../types.js';
import { oneStatement, quoteIdent as q, SqlError, type ErrorKind, type InsertSpec, type SqlDriver, type TableInfo, type TableName } from './driver.js';
import { copyIn, copyKinds, copyRow, copyText, encoderOf, wellFormed, type CopyKind } from './pg-copy.js';
import type { SqlTarget } from './url.js';
import { jsonRow, jsonText } from './values.js';

const CONNECT_TIMEOUT_S = 10;

/** `2024-01-01 10:00:00.5+00` (session TimeZone UTC) as ISO 8601: `2024-01-01T10:00:00.5Z`. */
const isoZoned = (s: string) =>
  s
    .replace(' ', 'T')
    .replace(/([+-]\d\d)(?::?(\d\d))?(?::?(\d\d))?$/, (_m, h: string, mm?: string, ss?: string) =>
      h === '+00' && !mm && !ss ? 'Z' : `${h}:${mm ?? '00'}${ss ? `:${ss}` : ''}`,
    );

/** pg-types' array literal parser (its type declaration does not match its runtime shape). */
const arrayParser = (pg.types as unknown as { arrayParser: { create(s: string, item: (x: string) => unknown): { parse(): unknown[] } } }).arrayParser;
const arrayOf = (item: (s: string) => unknown) => (s: string) => arrayParser.create(s, item).parse();

const int8 = (s: string) => exactNumber(BigInt(s));
const timestamp = (s: string) => s.replace(' ', 'T');
const text = (s: string) => s;

/** Type parsers: the JSON-safe forms of values.ts, without the local time zone of this process. */
const PARSERS: Record<number, (s: string) => unknown> = {
  20: int8,
  1082: text, // date
  1114: timestamp, // timestamp (no zone: none is added)
  1184: isoZoned, // timestamptz
  1186: text, // interval, as PostgreSQL writes it
  1016: arrayOf(int8),
  1182: arrayOf(text),
  1115: arrayOf(timestamp),
  1185: arrayOf(isoZoned),
};
const TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    (format ?? 'text') === 'text' && PARSERS[oid] ? PARSERS[oid] : pg.types.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser'],
};

function sslOf(mode: string | undefined): pg.ClientConfig['ssl'] {
  switch (mode) {
    case 'require':
      return { rejectUnauthorized: false };
    case 'verify-ca':
    case 'verify-full':
      return { rejectUnauthorized: true };
    default:
      return false; // disable, allow, prefer: pg has no fallback, so these connect without TLS
  }
}

/** SQLSTATE classes: 22 data exception, 23 integrity constraint, 21000 (one row twice in an ON CONFLICT). */
function classify(e: unknown): ErrorKind {
  if (e instanceof SqlError) return e.kind;
  if (!(e instanceof pg.DatabaseError) || !e.code) return 'broken'; // the socket, the client, a timeout
  const code = e.code;
  const cls = code.slice(0, 2);
  if (cls === '22' || cls === '23' || code === '21000') return 'data';
  if (cls === '08' || code.startsWith('57P')) return 'broken';
  if (cls === '40' || cls === '53' || cls === '58' || cls === 'XX' || code === '55P03' || code === '57014') return 'retry';
  return 'fatal';
}

/** The database's message; for key violations with the key, which the message alone does not name. */
function reason(e: pg.DatabaseError): string {
  return (e.code === '23505' || e.code === '23503') && e.detail ? `${e.message} (${e.detail})` : e.message;
}

export async function openPostgres(t: SqlTarget, name: string, lost?: (e: Error) => void): Promise<SqlDriver> {
  const client = new pg.Client({
    host: t.params.host ?? t.host,
    port: t.port,
    user: t.user,
    password: t.password,
    database: t.database,
    application_name: t.params.application_name ?? name,
    connectionTimeoutMillis: Number(t.params.connect_timeout ?? CONNECT_TIMEOUT_S) * 1000,
    ssl: sslOf(t.params.sslmode),
    // Timestamps with a zone come back in UTC (see PARSERS).
    options: '-c TimeZone=UTC',
    keepAlive: true,
  });
  let open = false;
  let closing = false;
  // Always listened to: an unhandled 'error' (the server ended an idle connection) would end the process.
  client.on('error', (e) => {
    if (open && !closing) lost?.(e);
  });
  client.on('end', () => {
    if (open && !closing) lost?.(new Error('the server closed the connection'));
  });
  try {
    await client.connect();
  } catch (e) {
    await client.end().catch(() => {});
    if (t.password === undefined && /password must be a string/.test(errorMessage(e)))
      throw new Error('the server asks for a password and connection_url has none', { cause: e });
    throw e;
  }
  open = true;
  const query = (text: string, values?: unknown[]) => client.query({ text, values, types: TYPES });

  const driver: SqlDriver = {
    dialect: 'postgresql',
    needsSavepoint: true,
    async *rows(sql, chunk) {
      if (chunk <= 0) {
        // Extended protocol: one statement, as the cursor takes it.
        const r = await client.query({ text: sql, types: TYPES, queryMode: 'extended' } as pg.QueryConfig);
        if (r.rows.length) yield r.rows.map(jsonRow);
        return;
      }
      const cursor = client.query(new Cursor<Rec>(sql, undefined, { types: TYPES }));
      try {
        for (;;) {
          const rows = await cursor.read(chunk);
          if (rows.length) yield rows.map(jsonRow);
          if (rows.length < chunk) return;
        }
      } finally {
        await cursor.close().catch(() => {});
      }
    },
    async check(sql) {
      await client.query({ text: `PREPARE svc_check AS ${oneStatement(sql)}`, queryMode: 'extended' } as pg.QueryConfig);
      await client.query('DEALLOCATE svc_check');
    },
    async describe(table: TableName) {
      const lookup = async (s: string | undefined, n: string) =>
        (
          await query(
            'SELECT c.oid, n.nspname, c.relname, c.relkind, c.relhasrules, c.relrowsecurity FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)',
            [s === undefined ? q(n) : `${q(s)}.${q(n)}`],
          )
        ).rows[0] as { oid: number; nspname: string; relname: string; relkind: string; relhasrules: boolean; relrowsecurity: boolean } | undefined;
      // The name as written, else as PostgreSQL folds an unquoted name (lower case).
      const found = (await lookup(table.schema, table.name)) ?? (await lookup(table.schema?.toLowerCase(), table.name.toLowerCase()));
      if (!found) return undefined;
      const attrs = (
        await query(
          // attgenerated exists from PostgreSQL 12 on: read through to_jsonb so that older servers answer too.
          `SELECT attname AS name, format_type(atttypid, atttypmod) AS type, atttypid::int AS oid,
                  attidentity = 'a' OR coalesce(to_jsonb(a) ->> 'attgenerated', '') <> '' AS generated
             FROM pg_attribute a WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
          [found.oid],
        )
      ).rows as { name: string; type: string; oid: number; generated: boolean }[];
      const kinds = await copyKinds(
        client,
        attrs.map((a) => a.oid),
      );
      const columns = attrs.map(({ name, type, oid, generated }) => {
        const c = { name, type };
        // COPY would write a GENERATED ALWAYS identity, which INSERT refuses: such columns keep INSERT, and its error.
        copyKindOf.set(c, generated ? undefined : kinds.get(oid));
        return c;
      });
      const unique = await query(
        `SELECT ARRAY(SELECT a.attname FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(num, pos) JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.num
                      WHERE k.pos <= i.indnkeyatts ORDER BY k.pos)::text[] AS cols
           FROM pg_index i WHERE i.indrelid = $1 AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL`,
        [found.oid],
      );
      const info: TableInfo = {
        sql: `${q(found.nspname)}.${q(found.relname)}`,
        shown: `${found.nspname}.${found.relname}`,
        columns,
        uniqueKeys: unique.rows.map((r: { cols: string[] }) => r.cols),
      };
      // COPY writes plain and partitioned tables; it ignores rules and refuses views and row-level security, which INSERT honours.
      copyTables.set(info, (found.relkind === 'r' || found.relkind === 'p') && !found.relhasrules && !found.relrowsecurity);
      return info;
    },
    async begin(careful) {
      await client.query('BEGIN');
      // Deferred constraints would fail the COMMIT without saying which record: checked per statement instead.
      if (careful) await client.query('SET CONSTRAINTS ALL IMMEDIATE');
    },
    commit: async () => void (await client.query('COMMIT')),
    rollback: async () => void (await client.query('ROLLBACK')),
    async atomic(op) {
      await client.query('SAVEPOINT svc_statement');
      try {
        await op();
      } catch (e) {
        await client.query('ROLLBACK TO SAVEPOINT svc_statement');
        throw e;
      }
      await client.query('RELEASE SAVEPOINT svc_statement');
    },
    fit(spec, rows, from, limit) {
      const end = Math.min(rows.length, from + limit);
      if (!spec.upsert) return end - from;
      // ON CONFLICT DO UPDATE cannot touch one row twice in a statement (21000): a repeated key starts the next one.
      const seen = new Set<string>();
      for (let i = from; i < end; i++) {
        const key = spec.upsertFields!.map((f) => String(rows[i]![f])).join('\u0000');
        if (seen.has(key)) return Math.max(1, i - from);
        seen.add(key);
      }
      return end - from;
    },
    async insert(spec, rows) {
      let copying = false;
      try {
        const copy = copyPlan(spec);
        const data = copy ? copyText(copy.encoders, spec.keys, rows) : '';
        if (copy && wellFormed(data)) {
          copying = true;
          await copyIn(client, copy.sql, data);
          return copy.sql.length + data.length;
        }
        const [text, json] = [insertSql(spec), payload(spec, rows)];
        await client.query({ text, values: [json] });
        return text.length + json.length;
      } catch (e) {
        if (e instanceof pg.DatabaseError && e.code === '42P10') {
          throw new SqlError(
            `mode upsert: table ${spec.table.shown} has no unique index on exactly (${spec.upsert!.join(', ')}) (${e.message}); create one: CREATE UNIQUE INDEX ${q(`${spec.table.shown.split('.').pop()}_${spec.upsert!.join('_')}_key`)} ON ${spec.table.sql} (${spec.upsert!.map(q).join(', ')})`,
            'fatal',
            { cause: e },
          );
        }
        if (e instanceof pg.DatabaseError && classify(e) === 'data') throw new SqlError(reason(e), 'data', { cause: e, row: copying ? copyRow(e) : undefined });
        throw e;
      }
    },
    classify,
    async close() {
      closing = true;
      await client.end();
    },
  };
  return driver;
}

/** How COPY writes a column (pg-copy.ts), from the catalog at describe(); undefined: it cannot. */
const copyKindOf = new WeakMap<object, CopyKind | undefined>();
/** Tables COPY can write as INSERT would (describe()). */
const copyTables = new WeakMap<TableInfo, boolean>();

interface CopyPlan {
  sql: string;
  encoders: ((v: unknown) => string | null)[];
}
const copyPlans = new WeakMap<InsertSpec, CopyPlan | null>();

/** The COPY of an insert shape, or null: an upsert, a table COPY does not suit, a column without a COPY encoding. */
function copyPlan(spec: InsertSpec): CopyPlan | null {
  let plan = copyPlans.get(spec);
  if (plan !== undefined) return plan;
  const kinds = spec.columns.map((c) => copyKindOf.get(c));
  plan =
    !spec.upsert && copyTables.get(spec.table) === true && kinds.every((k) => k !== undefined)
      ? { sql: `COPY ${spec.table.sql} (${spec.columns.map((c) => q(c.name)).join(', ')}) FROM STDIN`, encoders: kinds.map((k) => encoderOf(k!)) }
      : null;
  copyPlans.set(spec, plan);
  return plan;
}

const statements = new WeakMap<InsertSpec, string>();

function insertSql(spec: InsertSpec): string {
  let sql = statements.get(spec);
  if (sql) return sql;
  const cols = spec.columns.map((c) => q(c.name)).join(', ');
  sql = `INSERT INTO ${spec.table.sql} (${cols}) SELECT ${cols} FROM json_populate_recordset(NULL::${spec.table.sql}, $1)`;
  if (spec.upsert) {
    const set = spec.columns.filter((c) => !spec.upsert!.includes(c.name));
    sql += ` ON CONFLICT (${spec.upsert.map(q).join(', ')}) ${set.length ? `DO UPDATE SET ${set.map((c) => `${q(c.name)} = EXCLUDED.${q(c.name)}`).join(', ')}` : 'DO NOTHING'}`;
  }
  statements.set(spec, sql);
  return sql;
}

/** The rows as one JSON array whose keys are the column names (renamed when a key matched by case only). */
function payload(spec: InsertSpec, rows: Rec[]): string {
  if (spec.keys.every((k, i) => k === spec.columns[i]!.name)) return jsonText(rows);
  return jsonText(
    rows.map((r) => {
      const o: Rec = {};
      spec.keys.forEach((k, i) => (o[spec.columns[i]!.name] = r[k]));
      return o;
    }),
  );
}
