import { Type } from '@sinclair/typebox';
import { defineSerializer, type DecodeOut, type Rec } from '../../types.js';
import { metadataOf } from './footer.js';
import { describeGroup, GroupReader, groupSpan, type GroupRef } from './row-groups.js';
import { splitParquet, type PieceHeader } from './split.js';
import { writeParquet } from './write.js';

const config = Type.Object(
  {
    compression: Type.Union([Type.Literal('snappy'), Type.Literal('gzip'), Type.Literal('brotli'), Type.Literal('none')], {
      default: 'snappy',
      description: 'Page compression when writing. Reading accepts any codec in the file (snappy, gzip, brotli, zstd, lz4, none) whatever this says.',
    }),
  },
  { additionalProperties: false },
);

/** Decodes row groups and reports each one that fails on its own, with its bytes. */
function readGroups(reader: GroupReader, data: Buffer, groups: GroupRef[], out: DecodeOut, unit?: string): void {
  for (const g of groups) {
    let records: Rec[];
    try {
      records = reader.read(data, g, unit === undefined ? undefined : `${unit}:${g.index}`);
    } catch (e) {
      // A row group read in windows fails in each of them: its bytes go to the DLQ once, from the first.
      if (g.selectStart > 0) continue;
      const [a, b] = groupSpan(g);
      out.error(`parquet row group ${g.index}: ${(e as Error).message}`, data.subarray(Math.max(0, a), Math.min(data.length, b)));
      continue;
    }
    for (const r of records) out.record(r);
  }
}

export default defineSerializer({
  key: 'parquet',
  summary: 'Apache Parquet files: read row group by row group (spooled to a temporary file when large); written as one file per batch.',
  direction: 'both',
  config,
  examples: [
    {
      title: 'Snappy (default)',
      yaml: 'type: parquet',
      // Written by @dsnp/parquetjs (not by this serializer): UTF8, INT64, BOOLEAN, TIMESTAMP_MILLIS.
      worked: {
        input:
          'UEFSMRUAFSAVICwVBBUAFQYVBhwYBHJ0cjEYBHJ0cjEWABYCGARydHIxGARydHIxAAAABAAAAHJ0cjEEAAAAcnRyMRUMGSUGABkYBGhvc3QVABYEFn4WfiYIPBgEcnRyMRgEcnRyMRYAFgIYBHJ0cjEYBHJ0cjEAABUAFSAVICwVBBUAFQYVBhwYCAIAAAAAAAAAGAgBAAAAAAAAABYAFgQYCAIAAAAAAAAAGAgBAAAAAAAAAAAAAAEAAAAAAAAAAgAAAAAAAAAVBBklBgAZGAdpZkluZGV4FQAWBBaeARaeASbyATwYCAIAAAAAAAAAGAgBAAAAAAAAABYAFgQYCAIAAAAAAAAAGAgBAAAAAAAAAAAAFQAVAhUCLBUEFQAVBhUGHBgBARgBABYAFgQYAQEYAQAAAAABFQAZJQYAGRgCdXAVABYEFkgWSCaoBDwYAQEYAQAWABYEGAEBGAEAAAAVABUcFRwsFQQVABUGFQYcGAgAPdulmgEAABgIAD3bpZoBAAAWAhYCGAgAPdulmgEAABgIAD3bpZoBAAAAAAACAAAAAwEAPdulmgEAABUEGSUGABkYAnRzFQAWBBaaARaaASbCBTwYCAA926WaAQAAGAgAPdulmgEAABYCFgIYCAA926WaAQAAGAgAPdulmgEAAAAAFQIZXEgEcm9vdBUIABUMJQAYBGhvc3QlAAAVBCUAGAdpZkluZGV4ABUAJQAYAnVwABUEJQIYAnRzJRIAFgQZHBlMJoYBHBUMGSUGABkYBGhvc3QVABYEFn4WfiYIPBgEcnRyMRgEcnRyMRYAFgIYBHJ0cjEYBHJ0cjEAAAAmkAMcFQQZJQYAGRgHaWZJbmRleBUAFgQWngEWngEm8gE8GAgCAAAAAAAAABgIAQAAAAAAAAAWABYEGAgCAAAAAAAAABgIAQAAAAAAAAAAAAAm8AQcFQAZJQYAGRgCdXAVABYEFkgWSCaoBDwYAQEYAQAWABYEGAEBGAEAAAAAJtwGHBUEGSUGABkYAnRzFQAWBBaaARaaASbCBTwYCAA926WaAQAAGAgAPdulmgEAABYCFgIYCAA926WaAQAAGAgAPdulmgEAAAAAABbiBxYEABkMGA9AZHNucC9wYXJxdWV0anMAYgEAAFBBUjE=',
        encoding: 'base64',
        records: [
          { host: 'rtr1', ifIndex: 1, up: true, ts: '2025-11-21T10:00:00.000Z' },
          { host: 'rtr1', ifIndex: 2, up: false, ts: null },
        ],
      },
    },
    { title: 'Gzip-compressed output', yaml: 'type: parquet\ncompression: gzip' },
  ],
  decoder: () => {
    // The reader of the last schema seen: the pieces of one file share it.
    let last: { schema: string; reader: GroupReader } | undefined;
    const readerFor = (schema: string) => {
      if (last?.schema !== schema) last = { schema, reader: new GroupReader(JSON.parse(schema)) };
      return last.reader;
    };
    return {
      framing: { kind: 'split', split: splitParquet },
      decode({ data, header }, out) {
        if (!header) {
          // A message (webhook body, queue message): one whole file in memory.
          let md: ReturnType<typeof metadataOf>;
          let reader: GroupReader;
          try {
            md = metadataOf(data);
            reader = new GroupReader(md.schema);
          } catch (e) {
            out.error((e as Error).message, data);
            return;
          }
          for (let i = 0; i < md.row_groups.length; i++) {
            let g: GroupRef;
            try {
              g = describeGroup(md, i, 0, data.length);
            } catch (e) {
              out.error(`parquet row group ${i}: ${(e as Error).message}`, '');
              continue;
            }
            readGroups(reader, data, [g], out);
          }
          return;
        }
        const h = JSON.parse(header.toString('utf8')) as PieceHeader;
        if ('error' in h) {
          const part = h.parts > 1 ? ` (raw bytes ${h.offset}-${h.offset + data.length - 1} of ${h.size}, part ${h.part} of ${h.parts})` : '';
          out.error(h.error + part, data);
          return;
        }
        let reader: GroupReader;
        try {
          reader = readerFor(h.schema);
        } catch (e) {
          out.error(`unreadable Parquet schema: ${(e as Error).message}`, data);
          return;
        }
        readGroups(reader, data, h.groups, out, h.unit);
      },
    };
  },
  encoder: (c) => ({
    extension: 'parquet',
    whole: true,
    head: () => '',
    separator: '',
    tail: '',
    body: (records) => writeParquet(records, c.compression),
    one: (r) => writeParquet([r], c.compression),
  }),
});
