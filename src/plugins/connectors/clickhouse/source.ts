// Source `clickhouse` (batch): one SELECT per run, its rows streamed from the server as JSONEachRow.
// Each row is one message (decoded on its own by serializer_in, json by default); `chunk_size`
// cuts the result into units of that many rows, 0 keeps it one unit. Rows are read as the runner
// takes them, so a large result is never held whole (chunk_size > 0 holds one unit of rows).
import { Type, type Static } from '@sinclair/typebox';
import type { ClickHouseClient, Row } from '@clickhouse/client';
import { errorMessage, SourceError } from '../../../core/errors.js';
import { connectionReporter } from '../../connector-runtime/reconnect.js';
import { defineSource, type LintIssue, type SourceUnit } from '../../types.js';
import { clickhouseClient, describe, FORMAT_CLAUSE, lintServer, placeholders, Queries, serverFields, type ParamValue } from './client.js';

const scalar = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);

const config = Type.Object(
  {
    ...serverFields,
    query: Type.String({
      minLength: 1,
      description: 'The SELECT to run, without a FORMAT clause (rows are read as JSONEachRow). Values come from params through `{name:Type}` placeholders.',
    }),
    params: Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), Type.Union([scalar, Type.Array(scalar)]), {
      default: {},
      description:
        'Values of the `{name:Type}` placeholders in query, bound by the server (ClickHouse 19.6+); older servers get them inlined as typed literals (`CAST(value AS Type)`; `Identifier` as a quoted name).',
    }),
    chunk_size: Type.Integer({
      minimum: 0,
      default: 0,
      description: 'Rows per unit (records handed on together and finalized together); 0 = the whole result as one unit, streamed.',
    }),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

function lint(c: Config): LintIssue[] {
  const out = lintServer(c);
  if (FORMAT_CLAUSE.test(c.query)) out.push({ path: 'query', message: 'remove the FORMAT clause: the connector reads JSONEachRow' });
  for (const p of placeholders(c.query))
    if (!(p.name in c.params)) out.push({ path: 'params', message: `the query uses {${p.name}:${p.type}}: add params.${p.name}` });
  return out;
}

/** The query as the source sends it: without a trailing semicolon. */
const sqlOf = (c: Config) => c.query.trim().replace(/;\s*$/, '');

export default defineSource({
  key: 'clickhouse',
  summary: 'Run a SELECT on ClickHouse (HTTP interface) and stream its rows, one record each, optionally in chunks of chunk_size rows.',
  mode: 'batch',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a SELECT consumes nothing: a run that fails (query error, lost connection, a sink failure) leaves the table as it was and the next run reads it again, so rows can be read twice but none is dropped by the source.',
  },
  config,
  lint,
  examples: [
    {
      title: 'Yesterday’s cell KPIs, with a bound parameter, 10,000 rows per unit',
      yaml: 'type: clickhouse\nhost: clickhouse.internal\nusername: svc\npassword: ${CLICKHOUSE_PASSWORD:-change-me}\ndatabase: pm\nquery: SELECT cell, kpi, value FROM cell_kpi WHERE day = yesterday() AND region = {region:String}\nparams:\n  region: north\nchunk_size: 10000',
    },
    {
      title: 'HTTPS on a non-default port',
      yaml: 'type: clickhouse\nhost: ch.example.net\nsecure: true\nhttp_port: 443\nquery: SELECT * FROM alarms WHERE raised > now() - INTERVAL 1 HOUR',
    },
  ],
  // The query itself, with its parameters, asked for no rows: credentials, database, tables,
  // columns and syntax are checked without reading data.
  async test(c, { signal }) {
    const client = await clickhouseClient(c, 'svc connector test');
    try {
      const rs = await new Queries(client).select(`SELECT * FROM (${sqlOf(c)}) LIMIT 0`, c.params as Record<string, ParamValue>, 'JSONEachRow', signal);
      await rs.text();
    } catch (e) {
      throw new Error(describe(e, c), { cause: e });
    } finally {
      await client.close();
    }
  },
  create(c, ctx) {
    const report = connectionReporter(ctx, 'clickhouse');
    let client: ClickHouseClient | undefined;
    return {
      async *units(signal) {
        report('connecting');
        client = await clickhouseClient(c, `svc ${ctx.pipeline}`);
        let rows: AsyncIterator<Row[]>;
        try {
          const rs = await new Queries(client).select(sqlOf(c), c.params as Record<string, ParamValue>, 'JSONEachRow', signal);
          rows = (rs.stream() as AsyncIterable<Row[]>)[Symbol.asyncIterator]();
        } catch (e) {
          const msg = describe(e, c);
          report('disconnected', msg);
          throw new SourceError(`clickhouse: ${msg}`, { cause: e });
        }
        report('connected');
        /** Rows of the response not yet handed out (a network chunk holds many). */
        let pending: Row[] = [];
        let at = 0;
        let ended = false;
        const next = async (): Promise<Row | undefined> => {
          while (at >= pending.length) {
            if (ended) return undefined;
            let r: IteratorResult<Row[]>;
            try {
              r = await rows.next();
            } catch (e) {
              const msg = describe(e, c);
              report('disconnected', msg);
              throw new SourceError(`clickhouse: reading the result: ${msg}`, { cause: e });
            }
            if (r.done) ended = true;
            else {
              pending = r.value;
              at = 0;
            }
          }
          return pending[at++];
        };
        const meta = { source_path: `clickhouse:${c.database}` };
        if (c.chunk_size === 0) {
          const unit: SourceUnit = {
            meta: { ...meta, clickhouse_chunk: 1 },
            messages: true,
            async *read() {
              for (let r = await next(); r; r = await next()) yield Buffer.from(r.text);
            },
          };
          yield unit;
          return;
        }
        for (let n = 1; !signal.aborted; n++) {
          const batch: Buffer[] = [];
          while (batch.length < c.chunk_size) {
            const r = await next();
            if (!r) break;
            batch.push(Buffer.from(r.text));
          }
          if (batch.length === 0) return;
          yield {
            meta: { ...meta, clickhouse_chunk: n, messages: batch.length },
            size: batch.reduce((s, b) => s + b.length, 0),
            messages: true,
            async *read() {
              yield* batch;
            },
          };
          if (batch.length < c.chunk_size) return;
        }
      },
      async close() {
        await client?.close().catch((e) => ctx.log.debug({ err: errorMessage(e) }, 'clickhouse: close failed'));
      },
    };
  },
});
