// Concatenated top-level BER records (split_records): finding record boundaries in a byte stream,
// skipping over corrupt stretches to the next record that parses, and decoding with a list of
// message classes (the first whose tag fits and that decodes wins).
import { Asn1DecodeError, decodeBer, elementEnd, firstTags, peekTag } from './ber.js';
import { tagText, type Asn1Type } from './model.js';

export interface MessageClass {
  name: string;
  type: Asn1Type;
}

/** Tags a record may start with; null when one class is an open type (anything goes). */
export function topTags(classes: MessageClass[]): Set<number> | null {
  const all = new Set<number>();
  for (const c of classes) {
    const f = firstTags(c.type);
    if (f === null) return null;
    for (const t of f) all.add(t);
  }
  return all;
}

/** The outcome of looking at the bytes at one offset. */
export type Frame = { end: number } | 'more' | { bad: string };

/** A complete, structurally valid element at `pos` whose tag may start a record. */
export function frameAt(buf: Buffer, pos: number, end: number, tops: Set<number> | null): Frame {
  try {
    const tag = peekTag(buf, pos, end);
    if (tag === -1) return 'more';
    if (tops && !tops.has(tag)) return { bad: `tag ${tagText(tag)} starts no message class` };
    const e = elementEnd(buf, pos, end);
    return e < 0 ? 'more' : { end: e };
  } catch (err) {
    return { bad: (err as Error).message };
  }
}

/**
 * First offset after `from` where a valid record starts: -1 when the answer needs more bytes
 * (only when not `final`); `end` when there is none.
 */
export function resync(buf: Buffer, from: number, end: number, tops: Set<number> | null, final: boolean): number {
  for (let q = from; q < end; q++) {
    // Cheap pre-check on the first tag octet before a full structural walk.
    const f = frameAt(buf, q, end, tops);
    if (f === 'more') {
      if (!final) return -1;
      continue;
    }
    if ('end' in f) return q;
  }
  return end;
}

export interface RecordSink {
  record(value: unknown, cls: MessageClass): void;
  error(message: string, raw: Buffer): void;
}

/** Decodes one record with the first class whose tag fits and that decodes without error. */
export function decodeOne(classes: MessageClass[], buf: Buffer, pos: number, end: number): { value: unknown; cls: MessageClass; end: number } {
  let firstErr: Error | undefined;
  const tag = peekTag(buf, pos, end);
  for (const cls of classes) {
    const f = firstTags(cls.type);
    if (f && !f.has(tag)) continue;
    try {
      const r = decodeBer(cls.type, buf, pos, end);
      return { value: r.value, cls, end: r.end };
    } catch (err) {
      firstErr ??= err as Error;
    }
  }
  if (firstErr) throw firstErr;
  throw new Asn1DecodeError(`tag ${tagText(tag)} matches none of the message classes (${classes.map((c) => c.name).join(', ')})`, pos);
}

/**
 * Decodes every record in `data` (a piece cut at record boundaries, possibly with corrupt stretches).
 * `base` is the piece's offset in its unit, so messages give unit byte offsets.
 */
export function decodeRecords(data: Buffer, base: number, classes: MessageClass[], tops: Set<number> | null, sink: RecordSink): void {
  let p = 0;
  const end = data.length;
  while (p < end) {
    // The splitter checked the structure already: decode first, look closer only on failure.
    let ok: ReturnType<typeof decodeOne> | undefined;
    try {
      ok = decodeOne(classes, data, p, end);
    } catch {
      // below: find out what is wrong and where the next record starts
    }
    if (ok) {
      sink.record(ok.value, ok.cls);
      p = ok.end;
      continue;
    }
    const f = frameAt(data, p, end, tops);
    if (f !== 'more' && 'end' in f) {
      try {
        const r = decodeOne(classes, data, p, f.end);
        if (r.end !== f.end) throw new Asn1DecodeError('record ends before its length says', r.end);
        sink.record(r.value, r.cls);
      } catch (err) {
        const at = err instanceof Asn1DecodeError ? ` (element at byte ${base + err.offset})` : '';
        sink.error(`ASN.1 record at byte ${base + p}: ${(err as Error).message}${at}`, data.subarray(p, f.end));
      }
      p = f.end;
      continue;
    }
    // Corrupt or truncated: report the bytes up to the next record that parses.
    const q = resync(data, p + 1, end, tops, true);
    const why = f === 'more' ? `truncated record (${end - p} bytes left, the element needs more)` : `invalid record: ${f.bad}`;
    sink.error(`ASN.1 ${why} at byte ${base + p}; ${q - p} bytes skipped${q < end ? ` to the next record at byte ${base + q}` : ''}`, data.subarray(p, q));
    p = q;
  }
}

/**
 * Cuts a byte stream at top-level record boundaries into pieces of about `targetBytes / 16` (at
 * most `maxRecords` records). A corrupt stretch stays in the piece before the next valid record, where
 * the decoder reports it. Yields [piece, offset of the piece in the unit].
 */

export async function* splitRecords(
  stream: AsyncIterable<Buffer>,
  tops: Set<number> | null,
  targetBytes: number,
  maxRecords: number | undefined,
): AsyncGenerator<{ data: Buffer; offset: number }> {
  // Pieces of 1/16 of the engine's chunk size: a decoded CDR takes about ten times its BER size in
  // objects, and smaller pieces let them die young (measured: ~25% less CPU per record, mostly GC).
  const pieceBytes = Math.max(1, Math.floor(targetBytes / 16));
  // Bytes are appended into a buffer that grows geometrically (no re-copy of everything pending
  // per read); a cut hands out a view and carries the incomplete tail over into a fresh buffer.
  let buf = Buffer.allocUnsafe(Math.max(pieceBytes * 2, 1 << 16));
  let len = 0;
  let base = 0; // unit offset of buf[0]
  let p = 0; // scanned up to here: buf[0..p) is whole records (and corrupt stretches)
  let records = 0;
  const append = (b: Buffer) => {
    if (len + b.length > buf.length) {
      const next = Buffer.allocUnsafe(Math.max(buf.length * 2, len + b.length));
      buf.copy(next, 0, 0, len);
      buf = next;
    }
    b.copy(buf, len);
    len += b.length;
  };
  const cut = function* (at: number) {
    if (at === 0) return;
    const piece = buf.subarray(0, at);
    const rest = Buffer.allocUnsafe(Math.max(pieceBytes * 2, 1 << 16, len - at));
    buf.copy(rest, 0, at, len);
    yield { data: piece, offset: base };
    base += at;
    buf = rest;
    len -= at;
    p -= at;
    records = 0;
  };
  const scan = function* (final: boolean) {
    while (p < len) {
      const view = buf.subarray(0, len);
      const f = frameAt(view, p, len, tops);
      let next: number;
      if (f !== 'more' && 'end' in f) {
        next = f.end;
        records++;
      } else if (f === 'more' && !final && len - p < 16 << 20)
        return; // wait for the rest of the record
      else {
        next = resync(view, p + 1, len, tops, final);
        if (next === -1) return;
      }
      p = next;
      if (p >= pieceBytes || (maxRecords !== undefined && records >= maxRecords)) yield* cut(p);
    }
  };
  for await (const b of stream) {
    append(b);
    yield* scan(false);
  }
  yield* scan(true);
  yield* cut(len);
}
