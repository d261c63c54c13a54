// Reads Parquet row groups synchronously from bytes in memory. The engine's decode() is synchronous,
// and hyparquet's public reader is asynchronous, so this drives hyparquet's own synchronous steps
// (readColumn per column chunk, assembleNested for structs, lists and maps) the way its
// rowgroup.js does, without the promises.
import type { DecodedArray, FileMetaData, SchemaElement, SchemaTree } from 'hyparquet';
import { parquetSchema } from 'hyparquet';
import { assembleNested } from 'hyparquet/src/assemble.js';
import { readColumn } from 'hyparquet/src/column.js';
import { DEFAULT_PARSERS } from 'hyparquet/src/convert.js';
import { getTreePath, isListLike, isMapLike } from 'hyparquet/src/schema.js';
import { flatten } from 'hyparquet/src/utils.js';
import type { Rec } from '../../types.js';
import { compressors } from './codecs.js';
import { checkPages, type ChunkRef } from './pages.js';
import { jsonSafe, leafConverter, parsers, readerElement } from './values.js';

/** A row group (or a window of its rows) as a piece header describes it. */
export interface GroupRef {
  /** Index of the row group in its file (for messages). */
  index: number;
  rows: number;
  /** Rows [selectStart, selectEnd) of the group are decoded (record_chunk_size windows). */
  selectStart: number;
  selectEnd: number;
  columns: ChunkRef[];
}

const allParsers = { ...DEFAULT_PARSERS, ...parsers };

/** Values (all columns) any row group may claim, whatever its size: 16 Mi (a few hundred MB decoded). */
export const MAX_GROUP_VALUES = 1 << 24;
/** Values a row group may claim per byte past MAX_GROUP_VALUES: 8 bit-packed booleans, and room for compression. */
export const VALUES_PER_BYTE = 64;

/** The byte range [start, end) of a column chunk in its file (as hyparquet's planner computes it). */
export function chunkRange(meta: NonNullable<FileMetaData['row_groups'][number]['columns'][number]['meta_data']>): [number, number] {
  const start = Number(meta.dictionary_page_offset || meta.data_page_offset);
  return [start, start + Number(meta.total_compressed_size)];
}

/**
 * Describes row group `index` of `metadata`, with byte offsets made relative to `base`. Throws on
 * metadata that cannot describe a readable row group, or that claims more values than the bytes of
 * its columns (within the first `fileBytes` of the file) can hold.
 */
export function describeGroup(metadata: FileMetaData, index: number, base: number, fileBytes = Infinity): GroupRef {
  const rg = metadata.row_groups[index]!;
  const rows = Number(rg.num_rows);
  // A corrupt footer can decode a field as another thrift type (a binary where a list belongs):
  // checked here, as what describes the group travels on as JSON (found by fuzzing).
  if (!Array.isArray(rg.columns)) throw new Error('corrupt row group: its column list is not a list');
  if (!Number.isSafeInteger(rows) || rows < 0) throw new Error(`corrupt row group: ${String(rg.num_rows)} rows`);
  let values = 0;
  let span = 0;
  const columns = rg.columns.map((c, i): ChunkRef => {
    if (c.file_path) throw new Error(`column ${i} lives in another file (${c.file_path}), which is not supported`);
    if (!c.meta_data) throw new Error(`column ${i} has no metadata`);
    const [start, end] = chunkRange(c.meta_data);
    const n = Number(c.meta_data.num_values);
    // Every row has at least one value (or null) in every column: more rows than values is a corrupt
    // count, which would be cut into windows of rows by the billion (found by fuzzing).
    if (!(n >= rows)) throw new Error(`corrupt row group: ${rows} rows, but column ${i} holds ${String(c.meta_data.num_values)} values`);
    values += n;
    span += Math.max(0, Math.min(end, fileBytes) - Math.max(start, 0)); // what a footer claims past the data is not there
    return { path: c.meta_data.path_in_schema, type: c.meta_data.type, codec: c.meta_data.codec, start: start - base, end: end - base, values: n };
  });
  // The counts become arrays and loops (rows, windows of rows, page values and runs, which are
  // checked against them): bounded by the bytes of the row group. Run-length encoding packs a
  // column of nulls or of one value into a few bytes whatever its length, so a row group may
  // claim any count up to MAX_GROUP_VALUES, and past it at most VALUES_PER_BYTE a byte.
  const most = Math.max(MAX_GROUP_VALUES, VALUES_PER_BYTE * span);
  if (values > most) {
    throw new Error(
      `corrupt row group: its columns claim ${values} values in ${span} bytes (more than ${VALUES_PER_BYTE} a byte past the first ${MAX_GROUP_VALUES}): a corrupt or hostile count`,
    );
  }
  return { index, rows, selectStart: 0, selectEnd: rows, columns };
}

/** The span [start, end) of bytes in the file that a row group occupies. */
export function groupSpan(g: GroupRef, base = 0): [number, number] {
  let start = Infinity;
  let end = 0;
  for (const c of g.columns) {
    start = Math.min(start, c.start + base);
    end = Math.max(end, c.end + base);
  }
  return g.columns.length ? [start, end] : [base, base];
}

/** Decodes row groups of one schema; built once per schema and reused for its pieces. */
export class GroupReader {
  private readonly tree: SchemaTree;
  private readonly convert = new Map<string, (v: unknown) => unknown>();
  private readonly emptyLists = new Map<string, (v: unknown) => unknown>();

  constructor(schema: SchemaElement[]) {
    this.tree = parquetSchema({ schema: schema.map(readerElement) });
    for (const e of leaves(parquetSchema({ schema }))) {
      const f = leafConverter(e.element);
      if (f) this.convert.set(e.path.join('.'), f);
    }
    for (const child of this.tree.children) {
      const f = repeatedFixer(child);
      if (f) this.emptyLists.set(child.element.name, f);
    }
  }

  /**
   * The records of rows [selectStart, selectEnd) of a row group whose chunks are in `data`. With a
   * `key` (unit and row group), the decoded columns are kept for the next window of the same row
   * group, so a row group read in windows is decoded once, not once per window.
   */
  read(data: Uint8Array, g: GroupRef, key?: string): Rec[] {
    let d = key !== undefined && this.cached?.key === key ? this.cached.group : undefined;
    if (!d) {
      this.cached = undefined;
      d = this.decodeGroup(data, g);
      if (key !== undefined && g.selectEnd < g.rows) this.cached = { key, group: d };
    } else if (g.selectEnd >= g.rows) this.cached = undefined; // its last window
    return rowsOf(d, g.selectStart, g.selectEnd);
  }

  private cached?: { key: string; group: DecodedGroup };

  /** Decodes every row of a row group into top-level columns (structs, lists and maps assembled). */
  private decodeGroup(data: Uint8Array, g: GroupRef): DecodedGroup {
    const columns = new Map<string, DecodedArray>();
    for (const c of g.columns) {
      const name = c.path.join('.');
      if (c.start < 0 || c.end > data.length || c.end < c.start)
        throw new Error(`column ${name}: its bytes lie outside the row group (truncated or corrupt file)`);
      const schemaPath = getTreePath(this.tree, c.path);
      const declared = schemaPath[schemaPath.length - 1]?.element.type;
      // The values are converted by the schema's type: a chunk of another type would pass its raw values on (found by fuzzing).
      if (declared !== c.type)
        throw new Error(`column ${name}: its chunk holds ${String(c.type)} values, the schema says ${String(declared)} (corrupt footer)`);
      const view = new DataView(data.buffer, data.byteOffset + c.start, c.end - c.start);
      const reader = { view, offset: 0 };
      const select = { groupStart: 0, selectStart: 0, selectEnd: g.rows, groupRows: g.rows };
      const decoder = {
        pathInSchema: c.path,
        type: c.type,
        element: schemaPath[schemaPath.length - 1]!.element,
        schemaPath,
        codec: c.codec,
        parsers: allParsers,
        compressors,
        utf8: false,
      };
      let values: DecodedArray;
      try {
        checkPages(view, c, schemaPath);
        values = flatten(readColumn(reader, select, decoder).data);
      } catch (e) {
        throw new Error(`column ${name}: ${(e as Error).message}`, { cause: e });
      }
      if (values.length < g.rows) throw new Error(`column ${name}: ${values.length} values for ${g.rows} rows (truncated or corrupt column chunk)`);
      const f = this.convert.get(name);
      columns.set(name, f ? (Array.from(values as ArrayLike<unknown>, f) as DecodedArray) : values);
    }

    const group: DecodedGroup = { names: [], columns: [] };
    for (const child of this.tree.children) {
      const name = child.element.name;
      let values: DecodedArray | undefined;
      const nested = child.children.length > 0;
      if (!nested) values = columns.get(name);
      else {
        const sub = new Map([...columns].filter(([k]) => k.startsWith(name + '.')));
        if (sub.size) {
          assembleNested(sub, child, allParsers);
          values = sub.get(name);
          if (!values) throw new Error(`column ${name}: nested data could not be assembled`);
        }
      }
      if (!values) continue; // a column the row group does not hold
      group.names.push(name);
      group.columns.push({ values, nested, fix: this.emptyLists.get(name) });
    }
    return group;
  }
}

interface DecodedGroup {
  names: string[];
  columns: { values: DecodedArray; nested: boolean; fix?: (v: unknown) => unknown }[];
}

function rowsOf({ names, columns }: DecodedGroup, from: number, to: number): Rec[] {
  const out: Rec[] = new Array(to - from);
  for (let i = from; i < to; i++) {
    const row: Rec = {};
    for (let j = 0; j < names.length; j++) {
      const c = columns[j]!;
      let v: unknown = c.values[i];
      if (c.fix) v = c.fix(v);
      row[names[j]!] = c.nested ? jsonSafe(v) : v === undefined ? null : v;
    }
    out[i - from] = row;
  }
  return out;
}

/**
 * hyparquet reads an empty legacy repeated field (REPEATED without a LIST annotation, as
 * parquetjs and old writers make them) as undefined; it is an empty list, not a null. Returns the
 * fix for a value of node `n`, or undefined when nothing below `n` needs it.
 */
function repeatedFixer(n: SchemaTree): ((v: unknown) => unknown) | undefined {
  if (isListLike(n) || isMapLike(n)) return undefined;
  const kids = n.children.flatMap((c) => {
    const f = repeatedFixer(c);
    return f ? [[c.element.name, f] as const] : [];
  });
  const inner = kids.length
    ? (o: unknown) => {
        if (o && typeof o === 'object') for (const [k, f] of kids) (o as Rec)[k] = f((o as Rec)[k]);
        return o;
      }
    : undefined;
  if (n.element.repetition_type === 'REPEATED') return (v) => (v == null ? [] : inner ? (v as unknown[]).map(inner) : v);
  return inner && ((v) => (v == null ? v : inner(v)));
}

function leaves(t: SchemaTree): SchemaTree[] {
  return t.children.length ? t.children.flatMap(leaves) : [t];
}
