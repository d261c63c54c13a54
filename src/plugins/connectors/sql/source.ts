// Source `sql` (batch): runs `query` once per run and hands its rows on as JSON. With chunk_size
// above 0 the rows are streamed from the server (a pg-cursor, a mysql2 query stream, a
// better-sqlite3 iterator) and each chunk of chunk_size rows is one unit, a JSON array that the
// default serializer_in (json) decodes into one record per row: the result is never held whole.
// chunk_size 0 reads the whole result at once into one unit. Values are made JSON-safe (values.ts).
import { Type } from '@sinclair/typebox';
import { errorMessage, SourceError } from '../../../core/errors.js';
import { connectionReporter } from '../../connector-runtime/reconnect.js';
import { defineSource, type SourceUnit } from '../../types.js';
import { connectionName, connectionUrlField, lintUrl, openDriver, parseSqlUrl, whereOf, withDriver } from './client.js';

const config = Type.Object(
  {
    connection_url: connectionUrlField,
    query: Type.String({
      minLength: 1,
      description: 'One SQL statement whose rows become the records (one record per row, keyed by column name). Runs as written, once per run.',
    }),
    chunk_size: Type.Integer({
      minimum: 0,
      default: 0,
      description: 'Rows per unit, streamed from the server so the result is never held whole; 0 reads the whole result at once.',
    }),
  },
  { additionalProperties: false },
);

export default defineSource({
  key: 'sql',
  summary: 'Read the rows of a SQL query from PostgreSQL, MariaDB/MySQL or SQLite, streamed in chunks.',
  mode: 'batch',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a query consumes nothing: a run that fails (the query, a sink) leaves the database as it was, and the next run queries again, so rows can be read twice but the source drops none.',
  },
  config,
  lint: (c) => lintUrl(c.connection_url),
  examples: [
    {
      title: 'Yesterday’s interface counters from PostgreSQL, 5,000 rows at a time',
      yaml: "type: sql\nconnection_url: postgresql://svc:${PG_PASSWORD:-change-me}@db.internal:5432/nms\nquery: SELECT host, if_index, in_octets, out_octets, ts FROM counters WHERE ts >= now() - interval '1 day'\nchunk_size: 5000",
    },
    {
      title: 'An inventory table in MariaDB (SQLAlchemy-style URL)',
      yaml: 'type: sql\nconnection_url: mysql+pymysql://reader:${DB_PASSWORD:-change-me}@inventory.internal:3306/inventory\nquery: SELECT * FROM devices WHERE active = 1\nchunk_size: 1000',
    },
    { title: 'A local SQLite file', yaml: 'type: sql\nconnection_url: sqlite:////var/lib/collector/samples.db\nquery: SELECT * FROM samples' },
  ],
  async test(c) {
    await withDriver(c.connection_url, async (d) => {
      try {
        await d.check(c.query);
      } catch (e) {
        throw new Error(`query: ${errorMessage(e)}`, { cause: e });
      }
    });
  },
  create(c, ctx) {
    const report = connectionReporter(ctx, 'sql');
    return {
      async *units(signal) {
        const target = parseSqlUrl(c.connection_url);
        report('connecting');
        let driver;
        try {
          driver = await openDriver(target, connectionName(ctx.pipeline, ctx.component));
        } catch (e) {
          report('disconnected', errorMessage(e));
          throw new SourceError(`sql: cannot connect to ${errorMessage(e)}`, { cause: e });
        }
        report('connected');
        const where = whereOf(target);
        let n = 0;
        const rows = driver.rows(c.query, c.chunk_size)[Symbol.asyncIterator]();
        try {
          for (;;) {
            if (signal.aborted) return;
            let next: IteratorResult<Record<string, unknown>[]>;
            try {
              next = await rows.next();
            } catch (e) {
              throw new SourceError(`sql: query failed on ${where}: ${errorMessage(e)}`, { cause: e });
            }
            if (next.done) return;
            const body = Buffer.from(JSON.stringify(next.value));
            const unit: SourceUnit = {
              meta: { source_path: where, sql_chunk: ++n, sql_rows: next.value.length },
              size: body.length,
              async *read() {
                yield body;
              },
            };
            yield unit;
          }
        } finally {
          // A run that stops early (batch_size, a stop) leaves the result unread: the cursor or stream is closed first.
          await rows.return?.().catch(() => {});
          await driver.close().catch(() => {});
        }
      },
    };
  },
});
