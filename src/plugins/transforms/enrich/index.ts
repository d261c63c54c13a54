import { readFileSync, statSync } from 'node:fs';
import { extname } from 'node:path';
import { Type } from '@sinclair/typebox';
import { parse as parseCsv } from 'csv-parse/sync';
import type { Kysely } from 'kysely';
import { resolveTarget, type DbTarget } from '../../../store/target.js';
import type { Logger } from '../../../observability/log.js';
import { errorMessage } from '../../../core/errors.js';
import { defineTransform, type LintIssue, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';

const Sql = Type.Object(
  {
    url: Type.Optional(Type.String({ minLength: 1, description: 'postgresql://, postgres://, mysql:// or mariadb:// URL (a SQLite file goes in path).' })),
    path: Type.Optional(Type.String({ minLength: 1, description: 'SQLite database file (instead of url).' })),
    query: Type.String({ minLength: 1, description: 'A SELECT returning the lookup table; one row per key.' }),
    refresh_seconds: Type.Number({
      minimum: 1,
      default: 300,
      description: 'The cached table is re-read this often, in the background (the old one serves until then).',
    }),
  },
  { additionalProperties: false, description: 'Lookup table from a SQL query, cached in memory.' },
);

const config = Type.Object(
  {
    file: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'Lookup file: CSV with a header (.csv), a JSON array of objects (.json) or NDJSON (.ndjson, .jsonl). Re-read when it changes.',
      }),
    ),
    sql: Type.Optional(Sql),
    key: Type.String({ minLength: 1, description: 'Column of the lookup table that is matched.' }),
    field: Type.Optional(
      Type.String({ minLength: 1, description: 'Record field matched against key (default: the same name as key). Values compare as text.' }),
    ),
    fields: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'Lookup columns to copy (default: all but key).' })),
    prefix: Type.String({ default: '', description: 'Prefix for the copied field names.' }),
    target: Type.Optional(Type.String({ minLength: 1, description: 'Put the copied fields into this object field instead of the record top level.' })),
    overwrite: Type.Boolean({ default: true, description: 'Copied fields replace existing ones of the same name; false keeps the record value.' }),
    on_miss: Type.Union([Type.Literal('keep'), Type.Literal('drop'), Type.Literal('error')], {
      default: 'keep',
      description: 'A record whose key is missing or not in the table: keep it unchanged, drop it, or make it a recorded error (rule 6).',
    }),
    check_seconds: Type.Number({ minimum: 0, default: 5, description: 'How often (at most) the lookup file is checked for changes (mtime and size).' }),
  },
  { additionalProperties: false },
);

type Table = Map<string, Rec>;

function tableOf(rows: Rec[], key: string, what: string): Table {
  const t: Table = new Map();
  for (const row of rows) {
    const k = row[key];
    if (k === undefined || k === null) continue;
    t.set(String(k), row);
  }
  if (rows.length > 0 && t.size === 0) throw new Error(`${what} has no column '${key}'`);
  return t;
}

const FILE_TYPES = ['.csv', '.json', '.ndjson', '.jsonl'];

function readTable(file: string, key: string): Table {
  const text = readFileSync(file, 'utf8');
  const ext = extname(file).toLowerCase();
  let rows: Rec[];
  if (ext === '.csv') rows = parseCsv(text, { columns: true, bom: true, skip_empty_lines: true }) as Rec[];
  else if (ext === '.ndjson' || ext === '.jsonl')
    rows = text
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Rec);
  else {
    const v = JSON.parse(text) as unknown;
    if (!Array.isArray(v)) throw new Error('expected a JSON array of objects');
    rows = v as Rec[];
  }
  return tableOf(rows, key, 'the file');
}

/**
 * The lookup database. A SQLite file is only read: opened read-only and required to exist (the
 * store's opener would create a missing file and switch an existing one to WAL mode). Drivers are
 * loaded here, not with the module, so pipelines without SQL lookups (and worker threads) do not
 * carry them.
 */
async function openDb(target: DbTarget, log: Logger): Promise<Kysely<unknown>> {
  if (target.engine !== 'sqlite') return (await import('../../../store/db.js')).createKysely(target, log) as unknown as Kysely<unknown>;
  const [{ default: Database }, { Kysely: K, SqliteDialect }] = await Promise.all([import('better-sqlite3'), import('kysely')]);
  const database = new Database(target.path!, { readonly: true, fileMustExist: true });
  return new K<unknown>({ dialect: new SqliteDialect({ database }) });
}

function lint(c: { file?: string; sql?: { url?: string; path?: string } }): LintIssue[] {
  if ((c.file === undefined) === (c.sql === undefined)) return [{ path: 'file', message: 'set exactly one of file or sql' }];
  if (c.file !== undefined && !FILE_TYPES.includes(extname(c.file).toLowerCase())) {
    return [{ path: 'file', message: `cannot tell the format of '${c.file}' from its extension: use .csv, .json, .ndjson or .jsonl` }];
  }
  if (c.sql && (c.sql.url === undefined) === (c.sql.path === undefined)) return [{ path: 'sql', message: 'set exactly one of url or path' }];
  if (c.sql?.url) {
    try {
      resolveTarget({ url: c.sql.url });
    } catch (e) {
      // The store's message speaks of SVC_DB_URL and SVC_DB_PATH: here they are sql.url and sql.path.
      const m = errorMessage(e)
        .replace(/^SVC_DB_URL: /, '')
        .replace(/ \(leave SVC_DB_URL empty[^)]*\)$/, ' (or set sql.path for a SQLite file)');
      return [{ path: 'sql.url', message: m }];
    }
  }
  return [];
}

export default defineTransform({
  key: 'enrich',
  summary: 'Add fields from a lookup table: a CSV/JSON file (re-read when it changes) or a SQL query (cached, refreshed in the background).',
  config,
  lint,
  examples: [
    {
      title: 'Site and vendor per router from a CSV inventory',
      yaml: 'type: enrich\nfile: /etc/svc/inventory.csv\nkey: hostname\nfield: host\nfields: [site, vendor]',
    },
    {
      title: 'Cell names from the planning database',
      yaml: 'type: enrich\nsql:\n  url: postgresql://svc@db/planning\n  query: SELECT cell_id, cell_name, region FROM cells\n  refresh_seconds: 600\nkey: cell_id\ntarget: cell\non_miss: error',
    },
  ],
  create(c, ctx) {
    const issues = lint(c);
    if (issues.length) throw new Error(`enrich: ${issues[0]!.path || 'config'}: ${issues[0]!.message}`);
    const key = c.key;
    const field = c.field ?? key;
    const prefix = c.prefix ?? '';
    const overwrite = c.overwrite ?? true;
    const onMiss = c.on_miss ?? 'keep';
    let table: Table = new Map();
    const columns: string[] | undefined = c.fields;

    // File: read now (a missing file fails the run at start), then checked every check_seconds.
    let checkAt = 0;
    let stamp = '';
    const file = c.file;
    const checkMs = (c.check_seconds ?? 5) * 1000;
    const reloadFile = () => {
      try {
        const st = statSync(file!);
        const s = `${st.mtimeMs}:${st.size}`;
        if (s === stamp) return;
        table = readTable(file!, key);
        stamp = s;
      } catch (e) {
        // A file caught half-written (or moved away while being replaced) keeps the last good table; the next check tries again.
        if (stamp === '') throw new Error(`cannot read lookup file ${file}: ${errorMessage(e)}`, { cause: e });
        ctx.log.warn({ file, err: errorMessage(e) }, 'enrich: lookup file unreadable, keeping the previous table');
      }
    };
    if (file) reloadFile();

    let timer: NodeJS.Timeout | undefined;
    let db: Kysely<unknown> | undefined;
    const loadSql = async () => {
      const { sql } = await import('kysely');
      const rows = await sql.raw<Rec>(c.sql!.query).execute(db!);
      table = tableOf(rows.rows, key, 'the query result');
    };

    const lookup = (r: Rec): Rec | undefined => {
      if (file && checkMs >= 0) {
        const now = Date.now();
        if (now >= checkAt) {
          checkAt = now + checkMs;
          reloadFile();
        }
      }
      const v = r[field];
      return v === undefined || v === null ? undefined : table.get(String(v));
    };

    return {
      ...(c.sql
        ? {
            async open() {
              db = await openDb(resolveTarget({ url: c.sql!.url, path: c.sql!.path }), ctx.log);
              await loadSql();
              timer = setInterval(
                () => {
                  loadSql().catch((e: unknown) => ctx.log.warn({ err: errorMessage(e) }, 'enrich: lookup query failed, keeping the previous table'));
                },
                (c.sql!.refresh_seconds ?? 300) * 1000,
              );
              timer.unref();
            },
            async close() {
              clearInterval(timer);
              await db?.destroy();
            },
          }
        : {}),
      apply(r) {
        const row = lookup(r);
        if (row === undefined) {
          if (onMiss === 'keep') return r;
          if (onMiss === 'drop') return null;
          throw new Error(`no lookup row for ${field} = ${JSON.stringify(r[field] ?? null)}`);
        }
        const cols = columns ?? Object.keys(row).filter((k) => k !== key);
        const existing = c.target === undefined ? r : r[c.target];
        const into: Rec = typeof existing === 'object' && existing !== null && !Array.isArray(existing) ? (existing as Rec) : {};
        for (const col of cols) {
          const name = prefix + col;
          if (!overwrite && Object.hasOwn(into, name)) continue;
          setField(into, name, row[col] ?? null);
        }
        if (c.target !== undefined) setField(r, c.target, into);
        return r;
      },
    };
  },
});
