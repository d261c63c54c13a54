// Reads back a DLQ written by the `sql` sink: the rows of its table, oldest `_timestamp` first,
// streamed in chunks (the caller stops reading at its bound, which closes the cursor). Columns
// besides the envelope's (a row id, an insert time) are ignored; `record` read back as JSON text
// is parsed again by the caller.
import type { DlqItem, DlqReader, DlqReaderContext } from '../../types.js';
import { connectionName, openDriver, parseSqlUrl, parseTableName } from './client.js';
import { quoteIdent, type SqlDriver } from './driver.js';

const ROWS_PER_CHUNK = 1000;

/** A row's place in its table, by dialect (MySQL/MariaDB have none: ties keep the server's order). */
const STORAGE_ORDER: Partial<Record<SqlDriver['dialect'], string>> = { postgresql: 'ctid', sqlite: 'rowid' };

export function sqlDlqReader(c: { connection_url: string; table: string }, ctx: DlqReaderContext): DlqReader {
  let driver: SqlDriver | undefined;
  return {
    rows: true,
    async *read(): AsyncIterable<DlqItem> {
      const target = parseSqlUrl(c.connection_url);
      driver = await openDriver(target, connectionName(ctx.pipeline, 'dlq reader'));
      const quote = driver.dialect === 'mysql' ? (id: string) => `\`${id.replace(/`/g, '``')}\`` : quoteIdent;
      const t = parseTableName(c.table);
      const table = t.schema ? `${quote(t.schema)}.${quote(t.name)}` : quote(t.name);
      let n = 0;
      // Envelopes of one millisecond tie on _timestamp: the row's place in the table breaks the tie
      // where the database has one (ctid, rowid), so two reads (and a bounded read) agree.
      const tie = STORAGE_ORDER[driver.dialect] ? `, ${STORAGE_ORDER[driver.dialect]}` : '';
      for await (const rows of driver.rows(`SELECT * FROM ${table} ORDER BY ${quote('_timestamp')}${tie}`, ROWS_PER_CHUNK)) {
        for (const r of rows) yield { location: `${c.table}#${++n}`, records: [r] };
      }
    },
    async close() {
      await driver?.close();
    },
  };
}
