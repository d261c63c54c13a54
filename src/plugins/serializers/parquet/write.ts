// Records -> one complete Parquet file. The schema is inferred from the batch, column by column
// (keys in first-seen order, every column nullable); hyparquet-writer encodes it.
import { brotliCompressSync, gzipSync } from 'node:zlib';
import type { CompressionCodec } from 'hyparquet';
import { ByteWriter, parquetWrite, type ColumnSource } from 'hyparquet-writer';
import type { Rec } from '../../types.js';

export type Compression = 'snappy' | 'gzip' | 'brotli' | 'none';

const CODECS: Record<Compression, CompressionCodec> = { snappy: 'SNAPPY', gzip: 'GZIP', brotli: 'BROTLI', none: 'UNCOMPRESSED' };

// hyparquet-writer brings snappy; gzip and brotli come from node:zlib (native).
const compressors = {
  GZIP: (b: Uint8Array) => new Uint8Array(gzipSync(b)),
  BROTLI: (b: Uint8Array) => new Uint8Array(brotliCompressSync(b)),
};

/** Rows per row group: a batch is one row group unless it is larger. */
const ROW_GROUP = 100_000;

type Kind = 'bool' | 'int' | 'float' | 'string' | 'date' | 'json';

/** The kind of one non-null value. */
function kindOf(v: unknown): Kind {
  switch (typeof v) {
    case 'boolean':
      return 'bool';
    case 'bigint':
      return 'int';
    case 'number':
      return Number.isSafeInteger(v) ? 'int' : 'float';
    case 'string':
      return 'string';
    default:
      return v instanceof Date ? 'date' : 'json';
  }
}

/**
 * One column. Booleans -> BOOLEAN; numbers that are all safe integers (or bigint) -> INT64; other
 * numbers -> DOUBLE; strings -> STRING (UTF8); Date -> TIMESTAMP (ms); objects and arrays -> JSON
 * (annotated UTF-8 text); a column of mixed kinds -> STRING, each value as its text or JSON.
 */
export function columnOf(name: string, records: Rec[]): ColumnSource {
  let kind: Kind | undefined;
  let mixed = false;
  for (const r of records) {
    const v = r[name];
    if (v === null || v === undefined) continue;
    const k = kindOf(v);
    if (kind === undefined || kind === k) kind = k;
    else if ((kind === 'int' && k === 'float') || (kind === 'float' && k === 'int')) kind = 'float';
    else mixed = true;
  }
  const raw = records.map((r) => r[name] ?? null);
  if (mixed || kind === undefined || kind === 'string') return { name, type: 'STRING', nullable: true, data: mixed ? raw.map(asText) : raw };
  switch (kind) {
    case 'bool':
      // PLAIN, not hyparquet-writer's RLE choice: valid Parquet, but some readers (parquetjs) misread RLE booleans.
      return { name, type: 'BOOLEAN', nullable: true, data: raw, encoding: 'PLAIN' };
    case 'int':
      return { name, type: 'INT64', nullable: true, data: raw.map((v) => (v === null ? null : BigInt(v as number | bigint))) };
    case 'float':
      return { name, type: 'DOUBLE', nullable: true, data: raw.map((v) => (v === null ? null : Number(v))) };
    case 'date':
      return { name, type: 'TIMESTAMP', nullable: true, data: raw };
    case 'json':
      return { name, type: 'JSON', nullable: true, data: raw };
  }
}

const asText = (v: unknown): string | null =>
  v === null ? null : typeof v === 'string' ? v : v instanceof Date ? v.toISOString() : typeof v === 'object' ? JSON.stringify(v) : String(v);

/** Keys in first-seen order across the batch. */
function columnsOf(records: Rec[]): string[] {
  const seen = new Set<string>();
  for (const r of records) for (const k in r) seen.add(k);
  return [...seen];
}

/** The records as one complete Parquet file. */
export function writeParquet(records: Rec[], compression: Compression): Buffer {
  const writer = new ByteWriter();
  parquetWrite({
    writer,
    columnData: columnsOf(records).map((name) => columnOf(name, records)),
    codec: CODECS[compression],
    compressors,
    rowGroupSize: ROW_GROUP,
    createdBy: 'svc (hyparquet-writer)',
  });
  return Buffer.from(writer.getBuffer());
}
