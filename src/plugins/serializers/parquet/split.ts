// Framing `split` for Parquet: the unit is spooled (memory, or a temporary file when large), its
// footer read, and one piece yielded per row group, or per run of small row groups up to
// targetBytes, or per window of maxRecords rows of a large one. Each piece carries only the bytes
// of its row groups; its header says which columns lie where and the schema to read them with.
import { randomUUID } from 'node:crypto';
import type { FileMetaData } from 'hyparquet';
import type { SplitOptions, SplitPiece } from '../../types.js';
import { footerLength, MIN_SIZE, parseFooter } from './footer.js';
import { describeGroup, groupSpan, type GroupRef } from './row-groups.js';
import { spool, type Spool } from './spool.js';

/** What decode() is told about a piece: row groups to read, or why the unit cannot be read. */
export type PieceHeader = { schema: string; unit: string; groups: GroupRef[] } | { error: string; offset: number; size: number; part: number; parts: number };

/** Units up to this size stay in memory instead of going to a temporary file. */
const MEMORY_SPOOL = 8 << 20;
/** Windows of a row group times its columns: at most this many (a piece header per window lists every column). */
const MAX_WINDOW_CELLS = 1 << 20;
/** An unreadable unit goes to the dead-letter queue in raw parts of at most this size. */
const RAW_PART = 16 << 20;

const headerOf = (h: PieceHeader) =>
  Buffer.from(
    JSON.stringify(h, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v)),
    'utf8',
  );

export async function* splitParquet(stream: AsyncIterable<Buffer>, opts: SplitOptions): AsyncGenerator<SplitPiece> {
  const s = await spool(stream, Math.max(MEMORY_SPOOL, opts.targetBytes));
  try {
    if (s.size === 0) return;
    let metadata: FileMetaData;
    let footerStart: number;
    try {
      const tail = s.size >= MIN_SIZE ? await s.read(s.size - 8, 8) : Buffer.alloc(8);
      const len = footerLength(s.size, await s.read(0, 4), tail);
      footerStart = s.size - 8 - len;
      metadata = parseFooter(await s.read(footerStart, len + 8));
    } catch (e) {
      yield* rawParts(s, (e as Error).message);
      return;
    }
    yield* groupPieces(s, metadata, footerStart, opts);
  } finally {
    await s.close();
  }
}

/** The unreadable unit itself, in parts, so the dead-letter queue holds all of its bytes. */
async function* rawParts(s: Spool, error: string): AsyncGenerator<SplitPiece> {
  const parts = Math.max(1, Math.ceil(s.size / RAW_PART));
  for (let part = 0; part < parts; part++) {
    const offset = part * RAW_PART;
    const data = await s.read(offset, Math.min(RAW_PART, s.size - offset));
    yield { data, header: headerOf({ error, offset, size: s.size, part: part + 1, parts }) };
  }
}

async function* groupPieces(s: Spool, metadata: FileMetaData, footerStart: number, opts: SplitOptions): AsyncGenerator<SplitPiece> {
  const schema = JSON.stringify(metadata.schema, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v));
  // Names this unit for the decoder's cache of a row group read in windows.
  const unit = randomUUID();
  const { targetBytes, maxRecords } = opts;
  let run: GroupRef[] = [];
  let runBytes = 0;
  let runRows = 0;

  /** Reads the bytes of `groups` (file offsets) and makes their piece; windows share one read. */
  const pieces = async function* (groups: GroupRef[], windows?: [number, number][]): AsyncGenerator<SplitPiece> {
    let start = Infinity;
    let end = 0;
    for (const g of groups) {
      const [a, b] = groupSpan(g);
      start = Math.min(start, a);
      end = Math.max(end, b);
    }
    // Offsets past the row group area belong to a corrupt footer: decode() reports those columns.
    start = Math.min(Math.max(start, 0), footerStart);
    end = Math.min(Math.max(end, start), footerStart);
    const data = await s.read(start, end - start);
    const rebased = groups.map((g) => ({ ...g, columns: g.columns.map((c) => ({ ...c, start: c.start - start, end: c.end - start })) }));
    if (!windows) {
      yield { data, header: headerOf({ schema, unit, groups: rebased }) };
      return;
    }
    for (const [selectStart, selectEnd] of windows) yield { data, header: headerOf({ schema, unit, groups: [{ ...rebased[0]!, selectStart, selectEnd }] }) };
  };

  for (let i = 0; i < metadata.row_groups.length; i++) {
    let g: GroupRef;
    try {
      g = describeGroup(metadata, i, 0, footerStart);
    } catch (e) {
      yield { data: Buffer.alloc(0), header: headerOf({ error: `row group ${i}: ${(e as Error).message}`, offset: 0, size: s.size, part: 1, parts: 1 }) };
      continue;
    }
    if (g.rows === 0) continue;
    const [a, b] = groupSpan(g);
    // Decoded size follows the uncompressed size (the compressed span when a writer left it out).
    const bytes = Number(metadata.row_groups[i]!.total_byte_size) || b - a;
    // A large row group goes out in windows of rows, so that a piece holds about what targetBytes
    // of text input would: dictionary-encoded columns are far smaller than their records, so a row
    // counts at least 16 bytes per column (a 7-field record: 112 bytes, like its NDJSON line).
    const rowBytes = Math.max(bytes / g.rows, 16 * g.columns.length);
    let windowRows = Math.max(1, Math.floor(targetBytes / rowBytes));
    // Each window's header lists the columns: windows times columns is bounded, whatever size the
    // footer claims (a declared size of terabytes made windows of one row). record_chunk_size is
    // the user's own choice, bounded by the row count (describeGroup).
    if (maxRecords !== undefined) windowRows = Math.min(windowRows, maxRecords);
    else windowRows = Math.max(windowRows, Math.ceil((g.rows * Math.max(1, g.columns.length)) / MAX_WINDOW_CELLS));
    const size = rowBytes * g.rows;
    if (run.length && (runBytes + size > targetBytes || (maxRecords !== undefined && runRows + g.rows > maxRecords))) {
      yield* pieces(run);
      run = [];
      runBytes = runRows = 0;
    }
    if (g.rows > windowRows) {
      const windows: [number, number][] = [];
      for (let w = 0; w < g.rows; w += windowRows) windows.push([w, Math.min(w + windowRows, g.rows)]);
      yield* pieces([g], windows);
      continue;
    }
    run.push(g);
    runBytes += size;
    runRows += g.rows;
  }
  if (run.length) yield* pieces(run);
}
