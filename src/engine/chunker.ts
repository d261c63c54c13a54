// Cuts a unit's byte stream into chunks that decode independently: at line boundaries for
// line-oriented formats (never inside a quoted CSV field), or the whole unit otherwise. Memory stays
// bounded by the chunk size: a file is never read whole unless its format needs it.
import type { Framing, Rec } from '../plugins/types.js';

export interface Chunk {
  data: Buffer;
  /** Set for message units: the messages of this chunk (data is empty). */
  messages?: Buffer[];
  /** Set for units of records (SourceUnit.records): the records of this chunk (data is empty). */
  records?: Rec[];
  header?: Buffer;
  firstLine: number;
  /** The chunk is not to be decoded: its bytes are a parse error with this reason (a line past the line ceiling). */
  error?: string;
}

export interface ChunkOptions {
  /** Cut once this many bytes are pending (the cut is at the last line end before it). */
  targetBytes: number;
  /** record_chunk_size: at most this many lines per chunk. */
  maxLines?: number;
  /** A line (a CSV record, quotes and all) longer than this is handed on cut, as a chunk of its own (default MAX_LINE_BYTES). */
  maxLineBytes?: number;
}

/**
 * The longest line held whole: past it, what was read of the line goes on as a chunk of its own,
 * which its decoder reports as a parse error (an unterminated quote runs to the end of the input).
 */
export const MAX_LINE_BYTES = 64 << 20;

const NL = 0x0a;

function countLines(b: Buffer): number {
  let n = 0;
  for (let i = b.indexOf(NL); i !== -1; i = b.indexOf(NL, i + 1)) n++;
  return n;
}

/**
 * Offset just past the line end that closes a chunk: the last newline (outside quotes when `quote`
 * is set) before `limit` bytes, or the first one after it when a single line is longer, or the
 * end of the `maxLines`-th line when that comes first. -1 when there is no complete line.
 */
function cutPoint(b: Buffer, limit: number, quote: number | undefined, maxLines: number | undefined): number {
  if (quote === undefined && maxLines === undefined) {
    const i = b.lastIndexOf(NL, limit - 1);
    if (i !== -1) return i + 1;
    const j = b.indexOf(NL, limit);
    return j === -1 ? -1 : j + 1;
  }
  let cut = -1;
  let lines = 0;
  if (quote === undefined) {
    for (let i = b.indexOf(NL); i !== -1; i = b.indexOf(NL, i + 1)) {
      if (i >= limit && cut !== -1) break;
      cut = i + 1;
      if (++lines >= maxLines!) break;
    }
    return cut;
  }
  // A doubled quote inside a quoted field toggles twice, so parity tracking is exact (RFC 4180).
  let inQuote = false;
  for (let i = 0; i < b.length; i++) {
    const c = b[i];
    if (c === quote) inQuote = !inQuote;
    else if (c === NL && !inQuote) {
      if (i >= limit && cut !== -1) break;
      cut = i + 1;
      if (maxLines !== undefined && ++lines >= maxLines) break;
    }
  }
  return cut;
}

/** One view of `parts` when they lie one after the other in the same memory (a source that read a file into one buffer); else undefined. */
function adjacent(parts: Buffer[]): Buffer | undefined {
  if (parts.length <= 1) return parts[0];
  const first = parts[0]!;
  let end = first.byteOffset + first.length;
  for (let i = 1; i < parts.length; i++) {
    const p = parts[i]!;
    if (p.buffer !== first.buffer || p.byteOffset !== end) return undefined;
    end += p.length;
  }
  return Buffer.from(first.buffer, first.byteOffset, end - first.byteOffset);
}

export async function* chunksOf(stream: AsyncIterable<Buffer>, framing: Framing, opts: ChunkOptions): AsyncGenerator<Chunk> {
  if (framing.kind === 'split') {
    let piece = 1;
    for await (const p of framing.split!(stream, { targetBytes: opts.targetBytes, maxRecords: opts.maxLines }))
      yield { data: p.data, header: p.header, firstLine: piece++ };
    return;
  }
  if (framing.kind === 'whole') {
    const parts: Buffer[] = [];
    for await (const b of stream) parts.push(b);
    yield { data: adjacent(parts) ?? Buffer.concat(parts), firstLine: 1 };
    return;
  }
  const quote = framing.quote ? framing.quote.charCodeAt(0) : undefined;
  const maxLineBytes = opts.maxLineBytes ?? MAX_LINE_BYTES;
  let headerLinesLeft = framing.headerLines ?? 0;
  let header: Buffer | undefined;
  let pending: Buffer = Buffer.alloc(0);
  let line = 1;
  // The leftover of the last read (an incomplete chunk) joined with only the start of the next read
  // (`read`): from byte `from` of `pending` on, pending is a copy of read's first bytes. After the
  // next cut, pending is read itself from there, or (a cut inside the leftover) the copy joined
  // with the `rest` of the read.
  let joined: { from: number; read: Buffer; rest: Buffer } | undefined;
  const take = (end: number): Buffer => {
    const out = pending.subarray(0, end);
    pending = pending.subarray(end);
    if (joined) {
      pending = end >= joined.from ? joined.read.subarray(end - joined.from) : Buffer.concat([pending, joined.rest]);
      joined = undefined;
    }
    return out;
  };
  /**
   * `pending` followed by the read `b`. Only as much of b as the next cut can reach is copied (up
   * to its first line end at or past the byte target, or the one that completes a window of
   * maxLines, whichever comes first), not the whole read: a fresh buffer the size of a read (1 MiB
   * from a file) cost more in page faults than the copy itself (bench otlp-export,
   * docs/benchmarks.md). With quotes the cut scans past that line end (it may be inside a quote),
   * and header lines are taken first: those join the whole read, as before.
   */
  const joinRead = (b: Buffer): Buffer => {
    if (!pending.length) return b;
    let reach = -1;
    if (quote === undefined && headerLinesLeft === 0) {
      reach = b.indexOf(NL, Math.max(0, opts.targetBytes - pending.length));
      if (opts.maxLines !== undefined) {
        let lines = countLines(pending);
        for (let i = b.indexOf(NL); i !== -1 && (reach === -1 || i < reach); i = b.indexOf(NL, i + 1)) {
          if (++lines >= opts.maxLines) {
            reach = i;
            break;
          }
        }
      }
    }
    if (reach === -1 || reach + 1 === b.length) return Buffer.concat([pending, b]);
    joined = { from: pending.length, read: b, rest: b.subarray(reach + 1) };
    return Buffer.concat([pending, b.subarray(0, reach + 1)]);
  };
  // A line longer than the chunk target: its parts wait here, each new part scanned once for the
  // line's end (with the quote state carried over), instead of joining and rescanning everything
  // read so far at every read (quadratic: a 100 MB unterminated CSV quote took minutes). A line
  // past maxLineBytes goes on in pieces marked as errors, up to its end: none of it is decoded.
  let long: Buffer[] | undefined;
  let longBytes = 0;
  let cut = false;
  let inQuote = false;
  /** Offset just past the end of the line in `b` (a newline outside quotes), or -1. */
  const lineEnd = (b: Buffer): number => {
    if (quote === undefined) {
      const i = b.indexOf(NL);
      return i === -1 ? -1 : i + 1;
    }
    for (let i = 0; i < b.length; i++) {
      const c = b[i];
      if (c === quote) inQuote = !inQuote;
      else if (c === NL && !inQuote) return i + 1;
    }
    return -1;
  };
  const tooLong = `a line longer than ${maxLineBytes} bytes: cut, and not decoded (a CSV quote that is never closed runs to the end of the input)`;
  // A line that came whole in one read is held already; it is refused the same, so the outcome does not depend on read sizes.
  // (A chunk above the target is a single line: cuts are made before the target otherwise.)
  const overLong = (data: Buffer) => data.length > Math.max(maxLineBytes, opts.targetBytes);
  const cutPiece = (parts: Buffer[]): Chunk => {
    const data = Buffer.concat(parts);
    const c = { data, header, firstLine: line, error: tooLong };
    line += countLines(data);
    return c;
  };

  for await (const b of stream) {
    if (long) {
      const end = lineEnd(b);
      if (end === -1) {
        long.push(b);
        longBytes += b.length;
        if (longBytes > maxLineBytes) {
          yield cutPiece(long);
          long = [];
          longBytes = 0;
          cut = true;
        }
        continue;
      }
      if (cut) {
        // The rest of a line that was cut: an error too, then on with what follows it.
        yield cutPiece([...long, b.subarray(0, end)]);
        pending = b.subarray(end);
      } else pending = Buffer.concat([...long, b]);
      long = undefined;
      cut = false;
    } else pending = joinRead(b);
    while (headerLinesLeft > 0) {
      const end = cutPoint(pending, pending.length, quote, 1);
      if (end === -1) break;
      // Its own small buffer: the header travels with every chunk (and to worker threads).
      const h = take(end);
      header = Buffer.concat(header ? [header, h] : [h]);
      headerLinesLeft--;
      line += countLines(h); // a quoted CSV header may span several lines
    }
    // (Header lines still to come: nothing to cut yet.)
    for (; headerLinesLeft === 0; ) {
      let end: number;
      if (opts.maxLines !== undefined) {
        end = cutPoint(pending, opts.targetBytes, quote, opts.maxLines);
        // Fewer lines than a window so far: wait for more unless the bytes are plenty already.
        if (end !== -1 && pending.length < opts.targetBytes && countLines(pending.subarray(0, end)) < opts.maxLines) break;
      } else {
        if (pending.length < opts.targetBytes) break;
        end = cutPoint(pending, opts.targetBytes, quote, undefined);
      }
      if (end === -1) break; // one line longer than the target: wait for its end
      const data = take(end);
      if (overLong(data)) {
        yield cutPiece([data]);
        continue;
      }
      yield { data, header, firstLine: line };
      line += countLines(data);
    }
    if (joined) {
      // Not reached: a joined read ends at the line end of the next cut, so the loop cut at least once.
      pending = Buffer.concat([pending, joined.rest]);
      joined = undefined;
    }
    if (pending.length >= opts.targetBytes) {
      // Still no complete line in a chunk's worth of bytes: one long line, read on part by part.
      inQuote = false;
      if (lineEnd(pending) === -1) {
        long = [pending];
        longBytes = pending.length;
        pending = Buffer.alloc(0);
      }
    }
  }
  if (long && cut) {
    if (longBytes) yield cutPiece(long);
    return;
  }
  if (long) pending = Buffer.concat(long);
  // The rest (the last line may lack its newline). A file that is only a header yields nothing.
  if (pending.length && headerLinesLeft === 0) yield overLong(pending) ? cutPiece([pending]) : { data: pending, header, firstLine: line };
}

type MessageChunkOptions = Pick<ChunkOptions, 'targetBytes'> & { maxMessages?: number };

/** Groups whole messages into chunks of about `targetBytes` (at most `maxMessages`), never split: add() hands a full chunk back, rest() the last one. */
function messageGrouper(opts: MessageChunkOptions) {
  const empty = Buffer.alloc(0);
  let batch: Buffer[] = [];
  let bytes = 0;
  const take = (): Chunk => {
    const c = { data: empty, messages: batch, firstLine: 1 };
    batch = [];
    bytes = 0;
    return c;
  };
  return {
    add(m: Buffer): Chunk | undefined {
      batch.push(m);
      bytes += m.length;
      return bytes >= opts.targetBytes || (opts.maxMessages !== undefined && batch.length >= opts.maxMessages) ? take() : undefined;
    },
    rest: (): Chunk | undefined => (batch.length ? take() : undefined),
  };
}

/** Message units: whole messages grouped into chunks of about `targetBytes`, never split. */
export async function* messageChunksOf(stream: AsyncIterable<Buffer>, opts: MessageChunkOptions): AsyncGenerator<Chunk> {
  const g = messageGrouper(opts);
  for await (const m of stream) {
    const c = g.add(m);
    if (c) yield c;
  }
  const last = g.rest();
  if (last) yield last;
}

/**
 * The same chunks from messages already in memory (SourceUnit.bodies): no await per message, which
 * at a stream source's rate (a Kafka consumer's 100,000 messages a second) costs more than the rest
 * of its hand-over.
 */
export function* bodyChunksOf(bodies: readonly Buffer[], opts: MessageChunkOptions): Generator<Chunk> {
  const g = messageGrouper(opts);
  for (let i = 0; i < bodies.length; i++) {
    const c = g.add(bodies[i]!);
    if (c) yield c;
  }
  const last = g.rest();
  if (last) yield last;
}

/** Units of records (SourceUnit.records): chunks of at most `maxRecords` (record_chunk_size), else one. */
export function* recordChunksOf(records: Rec[], maxRecords?: number): Generator<Chunk> {
  const empty = Buffer.alloc(0);
  const step = maxRecords ?? records.length;
  for (let i = 0; i < records.length; i += step) yield { data: empty, records: records.slice(i, i + step), firstLine: 1 };
}
