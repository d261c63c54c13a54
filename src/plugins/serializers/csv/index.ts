import { Type } from '@sinclair/typebox';
import { parse, type CsvError } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { defineSerializer, type Rec } from '../../types.js';

const config = Type.Object(
  {
    delimiter: Type.String({ default: ',', minLength: 1, maxLength: 1, description: 'Field separator (one character).' }),
    has_header: Type.Boolean({
      default: true,
      description: 'The first line names the columns (read) / write a header line (write). Without it columns are column_1, column_2, ...',
    }),
    quotechar: Type.String({ default: '"', minLength: 1, maxLength: 1, description: 'Quote character around fields.' }),
  },
  { additionalProperties: false },
);

/** Column order for a batch: keys in first-seen order across its records. */
export function columnsOf(records: Rec[]): string[] {
  const seen = new Set<string>();
  for (const r of records) for (const k in r) seen.add(k);
  return [...seen];
}

const cast = {
  boolean: (v: boolean) => String(v),
  object: (v: object) => JSON.stringify(v),
  date: (v: Date) => v.toISOString(),
};

export default defineSerializer({
  key: 'csv',
  summary: 'Comma-separated values (RFC 4180 quoting, embedded newlines); values are read as strings.',
  direction: 'both',
  config,
  examples: [
    {
      title: 'With a header line (default)',
      yaml: 'type: csv',
      worked: {
        input: 'host,ifIndex,descr\nrtr1,1,"Gi0/1, uplink"\nrtr1,2,"say ""hi"""\n',
        records: [
          { host: 'rtr1', ifIndex: '1', descr: 'Gi0/1, uplink' },
          { host: 'rtr1', ifIndex: '2', descr: 'say "hi"' },
        ],
      },
    },
    { title: 'Semicolon-separated, no header', yaml: "type: csv\ndelimiter: ';'\nhas_header: false" },
  ],
  decoder: (c) => {
    // A quote inside a quoted field is written doubled (RFC 4180), whatever the quote character.
    const opts = { delimiter: c.delimiter, quote: c.quotechar, escape: c.quotechar, bom: true };
    return {
      framing: { kind: 'lines', headerLines: c.has_header ? 1 : 0, quote: c.quotechar },
      decode({ data, header, firstLine }, out) {
        let columns: string[] | undefined;
        if (c.has_header) {
          if (!header || header.length === 0) return;
          try {
            columns = (parse(header, opts) as string[][])[0];
          } catch (e) {
            // Without column names no row of the chunk maps to a record: the chunk is one error.
            out.error(`CSV header line: ${(e as Error).message}`, data);
            return;
          }
          if (!columns) return;
        }
        const rows = parse(data, {
          ...opts,
          bom: firstLine === 1, // only the start of a unit (no header line) may hold a BOM
          columns: columns ?? false,
          raw: true,
          skip_empty_lines: true,
          skip_records_with_error: true,
          on_skip: (err: CsvError | undefined, raw: string | undefined) => {
            const line = firstLine + ((err as { lines?: number } | undefined)?.lines ?? 1) - 1;
            // csv-parse's raw holds the first character of the line end ('\n', or '\r' of CRLF): drop it.
            out.error(`CSV line ${line}: ${err?.message ?? 'unreadable row'}`, (raw ?? '').replace(/[\r\n]$/, ''));
          },
        }) as unknown as { record: Rec | string[] }[];
        for (const { record } of rows) {
          if (Array.isArray(record)) {
            const r: Rec = {};
            for (let i = 0; i < record.length; i++) r[`column_${i + 1}`] = record[i];
            out.record(r);
          } else out.record(record);
        }
      },
    };
  },
  encoder: (c) => {
    const opts = { delimiter: c.delimiter, quote: c.quotechar, escape: c.quotechar, cast, eof: true };
    return {
      extension: 'csv',
      head: (records) => (c.has_header ? stringify([columnsOf(records)], opts) : ''),
      separator: '',
      tail: '',
      body: (records) => Buffer.from(stringify(records, { ...opts, columns: columnsOf(records) }), 'utf8'),
      one: (r) => Buffer.from(stringify([r], { ...opts, columns: Object.keys(r), eof: false }), 'utf8'),
    };
  },
});
