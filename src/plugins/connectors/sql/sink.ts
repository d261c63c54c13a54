// Sink `sql`: each batch is one transaction of statements of at most chunk_size rows (PostgreSQL:
// COPY; MariaDB/MySQL and SQLite: multi-row INSERT), inserting or upserting.
//
// - Columns: each record writes the columns its keys name (table.ts); the table is described from
//   the catalog at the first write (columns, unique keys) and again when a record names a column
//   the description lacks.
// - Refused records: a statement the database refuses for its data (a constraint, a value of the
//   wrong type) is split until the refused rows are found (at the row the database names, as
//   PostgreSQL's COPY does, else in halves); they are reported to the runtime
//   (WriteResult.rejected, with the database's message: dead-lettered under on_error dlq) and the
//   rest of the batch lands. PostgreSQL aborts a whole transaction on an error, so there the batch
//   is first tried without savepoints and, only if something is refused, written again with a
//   savepoint around each statement.
// - A connection failure is a retryable WriteError (the connection is dropped, the retry opens a
//   new one); a missing table or column, a missing unique index for upsert, a syntax or permission
//   error is not retryable.
import { Type } from '@sinclair/typebox';
import { errorMessage, WriteError } from '../../../core/errors.js';
import { Connection } from '../../connector-runtime/connection.js';
import { defineSink, type LintIssue, type Rec, type WriteResult } from '../../types.js';
import { connectionName, connectionUrlField, lintUrl, openDriver, parseSqlUrl, parseTableName, whereOf, withDriver } from './client.js';
import { quoteIdent, SqlError, type ErrorKind, type InsertSpec, type SqlDriver, type TableInfo, type TableName } from './driver.js';
import { checkUpsertIndex, planBatch, upsertColumns, type Plan } from './table.js';
import { sqlDlqReader } from './dlq-reader.js';

const config = Type.Object(
  {
    connection_url: connectionUrlField,
    table: Type.String({
      minLength: 1,
      description:
        'Table to write: `name` or `schema.name` (PostgreSQL schema, MariaDB database, SQLite attached database), as the database spells it (PostgreSQL: else in lower case, as an unquoted name reads).',
    }),
    mode: Type.Union([Type.Literal('insert'), Type.Literal('upsert')], {
      default: 'insert',
      description:
        '`insert`: INSERT every record. `upsert`: insert, or update the row with the same upsert_keys (PostgreSQL and SQLite ON CONFLICT ... DO UPDATE, MariaDB ON DUPLICATE KEY UPDATE); needs a primary key or unique index on exactly those columns.',
    }),
    upsert_keys: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description:
        'mode upsert: the columns that identify a row (a primary key or unique index must cover exactly them). Every record must have them, not null.',
    }),
    chunk_size: Type.Integer({
      minimum: 1,
      default: 500,
      description: 'Most rows per statement (PostgreSQL: per COPY); a batch is one transaction of as many statements as it needs.',
    }),
  },
  { additionalProperties: false },
);

function lint(c: typeof config.static): LintIssue[] {
  const out = lintUrl(c.connection_url);
  try {
    parseTableName(c.table);
  } catch (e) {
    out.push({ path: 'table', message: errorMessage(e) });
  }
  if (c.mode === 'upsert' && c.upsert_keys.length === 0)
    out.push({ path: 'upsert_keys', message: 'mode upsert needs upsert_keys: the columns that identify a row' });
  if (c.mode === 'insert' && c.upsert_keys.length > 0) out.push({ path: 'upsert_keys', message: 'upsert_keys apply to mode upsert only' });
  const dup = c.upsert_keys.find((k, i) => c.upsert_keys.indexOf(k) !== i);
  if (dup !== undefined) out.push({ path: 'upsert_keys', message: `'${dup}' is listed twice` });
  return out;
}

/** PostgreSQL refused a statement of the quick first pass: the batch is written again, carefully. */
class Restart extends Error {}

/** A failure the Connection should retry; `kind` says whether the connection is still usable. */
class Failure extends Error {
  constructor(
    message: string,
    readonly kind: ErrorKind,
    options: { cause: unknown },
  ) {
    super(message, options);
  }
}

/** The table's description and the upsert columns, checked: what a write and the reachability check need. */
async function describeTable(d: SqlDriver, name: TableName, c: typeof config.static, where: string): Promise<{ table: TableInfo; upsert?: string[] }> {
  const table = await d.describe(name);
  if (!table) throw new SqlError(`table ${c.table} does not exist in ${where}`, 'fatal');
  if (c.mode !== 'upsert') return { table };
  try {
    const upsert = upsertColumns(table, c.upsert_keys);
    checkUpsertIndex(table, upsert, d.dialect === 'mysql' ? (id) => `\`${id.replace(/`/g, '``')}\`` : quoteIdent);
    return { table, upsert };
  } catch (e) {
    throw new SqlError(errorMessage(e), 'fatal');
  }
}

export default defineSink({
  key: 'sql',
  summary:
    'Insert or upsert records into a PostgreSQL, MariaDB/MySQL or SQLite table: COPY (PostgreSQL) or multi-row statements, one transaction per batch, refused rows dead-lettered.',
  accepts: 'records',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a batch is one transaction that commits before the write counts; a connection lost before the COMMIT was answered retries the whole batch, which may then be there twice in mode insert (mode upsert makes the retry harmless). Rows the database refuses are dead-lettered, the rest lands.',
  },
  config,
  lint,
  examples: [
    {
      title: 'Append counters to a PostgreSQL table',
      yaml: 'type: sql\nconnection_url: postgresql://svc:${PG_PASSWORD:-change-me}@db.internal:5432/nms\ntable: pm.counters\nchunk_size: 1000',
    },
    {
      title: 'Keep one row per device in MariaDB (upsert on its primary key)',
      yaml: 'type: sql\nconnection_url: mariadb://svc:${DB_PASSWORD:-change-me}@inventory.internal:3306/inventory\ntable: devices\nmode: upsert\nupsert_keys: [hostname]',
    },
    { title: 'A local SQLite file (relative to the working directory)', yaml: 'type: sql\nconnection_url: sqlite:///data/alarms.db\ntable: alarms' },
  ],
  async test(c) {
    await withDriver(c.connection_url, (d, t) => describeTable(d, parseTableName(c.table), c, whereOf(t)));
  },
  dlqReader: sqlDlqReader,
  create(c, ctx) {
    const name = parseTableName(c.table);
    let where = '';
    const link = new Connection<SqlDriver>(
      ctx,
      'sql',
      (lost) => {
        const target = parseSqlUrl(c.connection_url);
        where = whereOf(target);
        return openDriver(target, connectionName(ctx.pipeline, ctx.component), lost);
      },
      (d) => d.close(),
    );
    let described: { table: TableInfo; upsert?: string[] } | undefined;
    // Writes run one at a time: a connection carries one transaction.
    let last: Promise<unknown> = Promise.resolve();

    /** One transaction over the plan; the refused records. `careful`: a savepoint around each statement. */
    async function writePlan(d: SqlDriver, plan: Plan, records: Rec[], careful: boolean) {
      const rejected: { index: number; reason: string }[] = [];
      let bytes = 0;
      const attempt = async (spec: InsertSpec, idx: number[], rows: Rec[]): Promise<void> => {
        try {
          if (careful && d.needsSavepoint) await d.atomic(async () => void (bytes += await d.insert(spec, rows)));
          else bytes += await d.insert(spec, rows);
        } catch (e) {
          if (d.classify(e) !== 'data') throw e;
          if (d.needsSavepoint && !careful) throw new Restart();
          if (rows.length === 1) return void rejected.push({ index: idx[0]!, reason: errorMessage(e) });
          // A row the database named (PostgreSQL COPY) is tried alone, between the rows before and after it; else halves.
          const at = e instanceof SqlError ? e.row : undefined;
          const cuts = at !== undefined && at >= 0 && at < rows.length ? [at, at + 1, rows.length] : [rows.length >> 1, rows.length];
          let start = 0;
          for (const cut of cuts) {
            if (cut > start) await attempt(spec, idx.slice(start, cut), rows.slice(start, cut));
            start = cut;
          }
        }
      };
      await d.begin(careful);
      try {
        for (const run of plan.runs) {
          const rows = run.idx.map((i) => records[i]!);
          for (let from = 0; from < rows.length; ) {
            const n = d.fit(run.spec, rows, from, c.chunk_size);
            await attempt(run.spec, run.idx.slice(from, from + n), rows.slice(from, from + n));
            from += n;
          }
        }
        try {
          await d.commit();
        } catch (e) {
          // A deferred constraint refused the COMMIT: the careful pass checks constraints per statement.
          if (!careful && d.classify(e) === 'data') throw new Restart();
          throw e;
        }
      } catch (e) {
        await d.rollback().catch(() => {});
        throw e;
      }
      return { rejected, bytes };
    }

    const writeBatch = (records: Rec[]) =>
      link.use(
        async (d): Promise<WriteResult | undefined> => {
          try {
            described ??= await describeTable(d, name, c, where);
            let plan = planBatch(records, described.table, described.upsert);
            if (plan.unknownColumns) {
              // The table may have gained columns since it was described.
              described = await describeTable(d, name, c, where);
              plan = planBatch(records, described.table, described.upsert);
            }
            let written: Awaited<ReturnType<typeof writePlan>>;
            try {
              written = await writePlan(d, plan, records, false);
            } catch (e) {
              if (!(e instanceof Restart)) throw e;
              written = await writePlan(d, plan, records, true);
            }
            return { rejected: [...plan.rejected, ...written.rejected], bytes: written.bytes };
          } catch (e) {
            const kind = e instanceof Restart ? 'data' : d.classify(e);
            if (kind === 'fatal') throw new WriteError(`sql: ${errorMessage(e)}`, false, { cause: e });
            if (kind === 'data') throw new WriteError(`sql: the transaction was refused at COMMIT: ${errorMessage(e)}`, false, { cause: e });
            throw new Failure(errorMessage(e), kind, { cause: e });
          }
        },
        (e) => !(e instanceof Failure) || e.kind === 'broken',
      );

    return {
      async write(batch) {
        const records = batch.records ?? [];
        if (records.length === 0) return;
        const p = last.then(() => writeBatch(records));
        last = p.catch(() => {});
        return p;
      },
      close: () => link.end(),
    };
  },
});
