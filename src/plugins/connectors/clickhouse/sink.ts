// Sink `clickhouse`: each batch is one INSERT ... FORMAT JSONEachRow (one per 100,000 records), the
// record's fields matching the table's columns by name. ClickHouse inserts a block all or nothing;
// when it refuses one row (a value that does not parse into its column, an unknown field) it names
// it (`at row N`), and the sink sends the batch again without that record, which is reported as
// refused (dead-lettered by the runtime) while the others land. Lost connections and server
// overload are retried by the runtime; wrong credentials, a missing table or database are not.
import { Type } from '@sinclair/typebox';
import type { ClickHouseClient } from '@clickhouse/client';
import { WriteError } from '../../../core/errors.js';
import { Connection } from '../../connector-runtime/connection.js';
import { defineSink, type Rec, type WriteResult } from '../../types.js';
import { clickhouseClient, describe, failedRow, isPermanent, lintServer, serverAnswer, serverFields, tableRef, type ServerConfig } from './client.js';

/** Most records in one INSERT (a larger batch is several, in order). */
const MAX_ROWS = 100_000;
/** Most refused records taken out of one batch before the rest of it is refused too. */
const MAX_REFUSED = 20;

const config = Type.Object(
  {
    ...serverFields,
    table: Type.String({
      minLength: 1,
      description:
        'Table to insert into: a name in database, or `db.table`. Record fields are matched to its columns by name; missing columns take their defaults.',
    }),
  },
  { additionalProperties: false },
);

/** A failure without an answer from the server: the connection is dropped and opened again by the next attempt. */
class Broken extends Error {}
class MissingTable extends Error {}

/** EXISTS TABLE: credentials, database and table in one cheap query. */
async function checkTable(client: ClickHouseClient, c: ServerConfig & { table: string }, signal?: AbortSignal) {
  const rs = await client.query({ query: `EXISTS TABLE ${tableRef(c.table)}`, format: 'JSONEachRow', abort_signal: signal });
  const [row] = await rs.json<{ result: number | string }>();
  if (Number(row?.result) !== 1)
    throw new MissingTable(`table ${c.table.includes('.') ? c.table : `${c.database}.${c.table}`} does not exist (check table and database)`);
}

export default defineSink({
  key: 'clickhouse',
  summary: 'Insert records into a ClickHouse table (HTTP interface, JSONEachRow), a row the server refuses dead-lettered on its own.',
  accepts: 'records',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a batch counts as written once ClickHouse acknowledged its INSERT; a connection lost before the answer retries the whole batch, which may then be there twice (a ReplacingMergeTree keyed on the record removes such duplicates at merge time).',
  },
  config,
  lint: (c) => lintServer(c),
  examples: [
    {
      title: 'Alarms into a MergeTree table',
      yaml: 'type: clickhouse\nhost: clickhouse.internal\nusername: svc\npassword: ${CLICKHOUSE_PASSWORD:-change-me}\ndatabase: nms\ntable: alarms\nretry_count: 3',
    },
    { title: 'HTTPS on 8443, table in another database', yaml: 'type: clickhouse\nhost: ch.example.net\nport: 9440\nsecure: true\ntable: pm.counters_15m' },
  ],
  async test(c, { signal }) {
    const client = await clickhouseClient(c, 'svc connector test');
    try {
      await checkTable(client, c, signal);
    } catch (e) {
      throw new Error(e instanceof MissingTable ? e.message : describe(e, c), { cause: e });
    } finally {
      await client.close();
    }
  },
  create(c, ctx) {
    const link = new Connection<ClickHouseClient>(
      ctx,
      'clickhouse',
      async () => {
        const client = await clickhouseClient(c, `svc ${ctx.pipeline}`);
        try {
          await (await client.query({ query: 'SELECT 1', format: 'JSONEachRow', abort_signal: ctx.signal })).text();
        } catch (e) {
          await client.close();
          throw new Error(describe(e, c), { cause: e });
        }
        return client;
      },
      (client) => client.close(),
    );
    const table = tableRef(c.table);

    /**
     * One INSERT of `records`; refused rows are taken out and the rest sent again. Resolves with the
     * bytes the server says it wrote (its X-ClickHouse-Summary; 0 from servers that send none): the
     * client serialises the rows itself, so the body's size is not known here.
     */
    async function insert(client: ClickHouseClient, records: Rec[], base: number, rejected: NonNullable<WriteResult['rejected']>): Promise<number> {
      let idx = records.map((_, i) => i);
      while (idx.length > 0) {
        try {
          const r = await client.insert({ table, values: idx.map((i) => records[i]!), format: 'JSONEachRow', abort_signal: ctx.signal });
          return Number(r.summary?.written_bytes ?? 0) || 0;
        } catch (e) {
          const a = serverAnswer(e);
          if (!a) throw new Broken(describe(e, c), { cause: e }); // the runtime retries the batch on a new connection
          if (isPermanent(a)) throw new WriteError(`clickhouse: ${describe(e, c)}`, false, { cause: e });
          const row = failedRow(a);
          if (row === undefined || row > idx.length) throw new Error(describe(e, c), { cause: e }); // overload and the like: retried
          if (rejected.length >= MAX_REFUSED)
            throw new WriteError(`clickhouse: more than ${MAX_REFUSED} records of one batch refused; the last: ${describe(e, c)}`, false, { cause: e });
          rejected.push({ index: base + idx[row - 1]!, reason: `clickhouse refused the record: Code ${a.code}: ${a.text}` });
          idx = idx.filter((_, k) => k !== row - 1);
        }
      }
      return 0;
    }

    return {
      async write(batch) {
        const records = batch.records!;
        if (records.length === 0) return;
        return link.use(
          async (client) => {
            const rejected: NonNullable<WriteResult['rejected']> = [];
            let bytes = 0;
            for (let i = 0; i < records.length; i += MAX_ROWS) bytes += await insert(client, records.slice(i, i + MAX_ROWS), i, rejected);
            return { rejected, bytes };
          },
          (e) => e instanceof Broken,
        );
      },
      close: () => link.end(),
    };
  },
});
