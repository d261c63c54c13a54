// Checks a column chunk's pages before hyparquet decodes them. hyparquet trusts what a file says: a
// garbled page header without a size sends its reader into an endless loop, and an RLE run longer
// than its page (a run header is one varint) makes it grow an array until V8 aborts the whole
// process, which no try/catch survives. So every size, count and run is checked to be plausible
// first. This walks headers and run headers only; compressed pages are decompressed once more.
import type { CompressionCodec, ParquetType, SchemaTree } from 'hyparquet';
import { parquetHeader } from 'hyparquet/src/column.js';
import { decompressPage } from 'hyparquet/src/datapage.js';
import { getMaxDefinitionLevel, getMaxRepetitionLevel } from 'hyparquet/src/schema.js';
import { compressors } from './codecs.js';
import { checkThrift } from './thrift-check.js';

/** One column chunk of a row group, its byte range relative to the bytes handed to read(). */
export interface ChunkRef {
  path: string[];
  type: ParquetType;
  codec: CompressionCodec;
  start: number;
  end: number;
  /** Values in the chunk (footer), bounding what its pages may claim. */
  values: number;
}

const PAGE_TYPES = new Set(['DATA_PAGE', 'DATA_PAGE_V2', 'DICTIONARY_PAGE', 'INDEX_PAGE']);
/** Larger pages are refused rather than allocated (writers default to 1 MiB pages). */
const MAX_PAGE = 256 << 20;
/** The fewest bytes a PLAIN value of each type takes (BYTE_ARRAY: its 4-byte length). */
const MIN_BYTES: Record<string, number> = { BOOLEAN: 1 / 8, INT32: 4, FLOAT: 4, INT64: 8, DOUBLE: 8, INT96: 12, BYTE_ARRAY: 4, FIXED_LEN_BYTE_ARRAY: 1 };

const count = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0;
const bitWidth = (max: number) => 32 - Math.clz32(max);

/**
 * Walks RLE / bit-packed hybrid runs from `offset` of `v` the way hyparquet reads them and refuses
 * an RLE run longer than the values still expected (bit-packed runs are bounded there). hyparquet
 * reads runs until it has the values it expects, past the levels' declared length if need be (into
 * the values that follow): so does this walk (found by fuzzing: a 2-byte level block followed by
 * a value read as a run of 2^30).
 */
function checkRuns(v: DataView, offset: number, width: number, expected: number, what: string): void {
  let o = offset;
  let seen = 0;
  const stop = v.byteLength;
  while (seen < expected && o < stop) {
    // hyparquet's varint: 32-bit OR of 7-bit groups.
    let header = 0;
    for (let shift = 0; o < v.byteLength; shift += 7) {
      const b = v.getUint8(o++);
      header |= (b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    const n = header >>> 1;
    if (header & 1) {
      seen += n * 8;
      o += n * width;
    } else {
      if (n > expected - seen) throw new Error(`${what}: a run of ${n} values where ${expected - seen} are left`);
      seen += n;
      o += (width + 7) >> 3;
    }
  }
}

/** Checks the levels and run-length values of a decompressed V1 data page. */
function checkV1(p: Uint8Array, n: number, encoding: string, type: string, maxRep: number, maxDef: number): void {
  const v = new DataView(p.buffer, p.byteOffset, p.byteLength);
  let o = 0;
  for (const [max, what] of [
    [maxRep, 'repetition levels'],
    [maxDef, 'definition levels'],
  ] as const) {
    if (!max) continue;
    if (o + 4 > v.byteLength) throw new Error(`${what} missing`);
    const len = v.getUint32(o, true);
    o += 4;
    checkRuns(v, o, bitWidth(max), n, what);
    o += len;
  }
  checkValues(v, o, n, encoding, type, true);
}

/** Run-length encoded values (dictionary indices, RLE booleans) from offset `o`. */
function checkValues(v: DataView, o: number, n: number, encoding: string, type: string, v1: boolean): void {
  if (o >= v.byteLength) return;
  if (encoding === 'RLE' && type === 'BOOLEAN') {
    if (o + 4 > v.byteLength) return;
    checkRuns(v, o + 4, 1, n, 'boolean values'); // after the runs' 4-byte length
  } else if (encoding === 'PLAIN_DICTIONARY' || encoding === 'RLE_DICTIONARY' || (v1 && encoding === 'RLE')) {
    const width = v.getUint8(o);
    if (width > 32) throw new Error(`dictionary index width ${width}`);
    if (width) checkRuns(v, o + 1, width, n, 'dictionary indices');
  }
}

export function checkPages(view: DataView, c: ChunkRef, schemaPath: SchemaTree[]): void {
  const maxRep = getMaxRepetitionLevel(schemaPath);
  const maxDef = getMaxDefinitionLevel(schemaPath);
  const reader = { view, offset: 0 };
  let values = 0;
  let page = 0;
  while (reader.offset < view.byteLength - 1) {
    const at = reader.offset;
    const where = `page ${page} at byte ${at} of the chunk`;
    let h: ReturnType<typeof parquetHeader>;
    try {
      checkThrift(view, reader.offset);
      h = parquetHeader(reader);
    } catch (e) {
      throw new Error(`${where}: unreadable page header (${(e as Error).message})`, { cause: e });
    }
    const size = h.compressed_page_size;
    const full = h.uncompressed_page_size;
    const bad = (what: string) => new Error(`${where}: corrupt page header (${what})`);
    if (!PAGE_TYPES.has(h.type)) throw bad(`page type ${String(h.type)}`);
    if (!count(size) || reader.offset + size > view.byteLength) throw bad(`compressed size ${String(size)}, ${view.byteLength - reader.offset} bytes left`);
    if (!count(full) || full > MAX_PAGE) throw bad(`uncompressed size ${String(full)}`);
    const body = new Uint8Array(view.buffer, view.byteOffset + reader.offset, size);
    try {
      if (h.type === 'DICTIONARY_PAGE') {
        const n = h.dictionary_page_header?.num_values;
        if (!count(n) || n * (MIN_BYTES[c.type] ?? 1) > full) throw bad(`dictionary of ${String(n)} values in ${full} bytes`);
      } else if (h.type === 'DATA_PAGE') {
        const d = h.data_page_header;
        if (!d || !count(d.num_values)) throw bad(`value count ${String(d?.num_values)}`);
        values += d.num_values;
        if (values > c.values) throw bad(`${values} values, the footer says ${c.values}`);
        checkV1(decompressPage(body, full, c.codec, compressors), d.num_values, d.encoding, c.type, maxRep, maxDef);
      } else if (h.type === 'DATA_PAGE_V2') {
        const d = h.data_page_header_v2;
        if (!d || !count(d.num_values)) throw bad(`value count ${String(d?.num_values)}`);
        values += d.num_values;
        if (values > c.values) throw bad(`${values} values, the footer says ${c.values}`);
        const rep = d.repetition_levels_byte_length;
        const def = d.definition_levels_byte_length;
        if (!count(rep) || !count(def) || rep + def > size || rep + def > full)
          throw bad(`level lengths ${String(rep)}, ${String(def)} in a ${size}-byte page`);
        if (!count(d.num_rows) || !count(d.num_nulls) || d.num_nulls > d.num_values) throw bad(`${String(d.num_rows)} rows, ${String(d.num_nulls)} nulls`);
        const v = new DataView(body.buffer, body.byteOffset, body.byteLength);
        if (maxRep) checkRuns(v, 0, bitWidth(maxRep), d.num_values, 'repetition levels');
        if (maxDef) checkRuns(v, rep, bitWidth(maxDef), d.num_values, 'definition levels');
        const rest = body.subarray(rep + def);
        const p = d.is_compressed === false ? rest : decompressPage(rest, full - rep - def, c.codec, compressors);
        checkValues(new DataView(p.buffer, p.byteOffset, p.byteLength), 0, d.num_values, d.encoding, c.type, false);
      }
    } catch (e) {
      throw e instanceof Error && e.message.startsWith(where) ? e : new Error(`${where}: ${(e as Error).message}`, { cause: e });
    }
    reader.offset += size;
    page++;
  }
}
