// The Parquet file frame: "PAR1" <row groups> <footer (thrift FileMetaData)> <footer length u32le> "PAR1".
import { parquetMetadata, type FileMetaData } from 'hyparquet';
import { markGeoColumns } from 'hyparquet/src/geoparquet.js';
import { checkThrift } from './thrift-check.js';

export const MIN_SIZE = 12;

/**
 * Checks the frame of a file of `size` bytes from its first 4 and last 8 bytes and returns the
 * footer's length; throws with a message that says what is wrong.
 */
export function footerLength(size: number, head: Buffer, tail: Buffer): number {
  if (size < MIN_SIZE) throw new Error(`not a Parquet file: ${size} bytes is shorter than the smallest possible file (${MIN_SIZE})`);
  if (head.toString('latin1', 0, 4) !== 'PAR1') throw new Error('not a Parquet file: it does not start with the magic bytes PAR1');
  const magic = tail.toString('latin1', 4, 8);
  if (magic === 'PARE') throw new Error('encrypted Parquet file (footer magic PARE): encryption is not supported');
  if (magic !== 'PAR1') throw new Error('truncated Parquet file: it does not end with the magic bytes PAR1 (the footer is missing)');
  const len = tail.readUInt32LE(0);
  if (len > size - MIN_SIZE) throw new Error(`corrupt Parquet footer: its length field says ${len} bytes, more than the file holds (${size} bytes)`);
  return len;
}

/** Parses `footer` (the footer bytes, its length field and the closing magic). */
export function parseFooter(footer: Buffer): FileMetaData {
  let md: FileMetaData;
  try {
    checkThrift(new DataView(footer.buffer, footer.byteOffset, footer.length - 8), 0);
    // GeoParquet columns are marked after the schema is checked: hyparquet's marking skips a
    // group's children by its num_children, and a negative count loops forever (found by fuzzing).
    md = parquetMetadata(footer, { geoparquet: false });
  } catch (e) {
    throw new Error(`corrupt Parquet footer: ${(e as Error).message}`, { cause: e });
  }
  if (!Array.isArray(md.schema) || md.schema.length === 0 || !Array.isArray(md.row_groups))
    throw new Error('corrupt Parquet footer: no schema or row group list');
  const bad = md.schema.find(
    (e) => e.num_children !== undefined && !(Number.isInteger(e.num_children) && e.num_children >= 0 && e.num_children < md.schema.length),
  );
  if (bad) throw new Error(`corrupt Parquet footer: schema element '${String(bad.name)}' has ${String(bad.num_children)} children`);
  try {
    markGeoColumns(md.schema, md.key_value_metadata);
  } catch (e) {
    throw new Error(`corrupt Parquet footer: GeoParquet metadata: ${(e as Error).message}`, { cause: e });
  }
  return md;
}

/** The metadata of a whole file held in memory. */
export function metadataOf(file: Buffer): FileMetaData {
  const len = footerLength(file.length, file.subarray(0, 4), file.subarray(file.length - 8));
  return parseFooter(file.subarray(file.length - 8 - len));
}
