// Cuts a 3GPP TS 32.435 measurement file into pieces that decode on their own. A cut falls right
// after a `</measValue>`, `</measInfo>` or `</measData>` end tag once enough bytes are pending,
// so a piece never splits a value. Each piece's header carries what it needs to be parsed: a meta
// line (byte offset of the piece in the file, whether it is the last piece), then the bytes of the
// elements still open at the cut up to their first repeated child: the file prologue and
// fileHeader, the current measData start tag and managedElement, the current measInfo start tag
// with job, granPeriod, repPeriod and measTypes. Header plus data is thus a well-formed prefix.
//
// Only markup boundaries are found here (native indexOf for "meas", "<!" and "<?"); comments, CDATA
// and processing instructions are skipped so that their text cannot fake a boundary.
import type { SplitOptions, SplitPiece } from '../../types.js';

/** The first line of every piece header. */
export const META_PREFIX = 'svc-pm-xml';

/**
 * Records (one per measValue, each repeating its context fields) weigh about 1.4 times their XML as
 * NDJSON (measured on the benchmark's data): pieces are cut at targetBytes / EXPANSION of input so a
 * piece's records weigh a little less than a targetBytes chunk of NDJSON.
 */
const EXPANSION = 2;

/** Piece headers up to this size do not make their pieces larger (see the cut in step()). */
const CTX_FREE = 64 << 10;

/** Past this many pending bytes without a boundary a piece is cut anyway (memory bound). */
const FORCE_MIN = 16 << 20;

const LT = 0x3c;
const GT = 0x3e;
const SLASH = 0x2f;
const COLON = 0x3a;
const LBRACKET = 0x5b;

const MEAS = Buffer.from('meas');
const PAT_BANG = Buffer.from('<!');
const PAT_PI = Buffer.from('<?');
const COMMENT_END = Buffer.from('-->');
const CDATA_END = Buffer.from(']]>');
const PI_END = Buffer.from('?>');
const CDATA_START = Buffer.from('<![CDATA[');
const COMMENT_START = Buffer.from('<!--');

const isNameChar = (c: number) =>
  (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === 0x2d || c === 0x2e || c >= 0x80;
const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d;

/** Which of the three elements a name is (local part after "meas"), or 0. */
function kindAt(b: Buffer, i: number): 'measData' | 'measInfo' | 'measValue' | undefined {
  // i points just past "meas"
  const c = b[i];
  let name: 'measData' | 'measInfo' | 'measValue';
  let len: number;
  if (c === 0x44 /* D */ && b[i + 1] === 0x61 && b[i + 2] === 0x74 && b[i + 3] === 0x61) {
    name = 'measData';
    len = 4;
  } else if (c === 0x49 /* I */ && b[i + 1] === 0x6e && b[i + 2] === 0x66 && b[i + 3] === 0x6f) {
    name = 'measInfo';
    len = 4;
  } else if (c === 0x56 /* V */ && b[i + 1] === 0x61 && b[i + 2] === 0x6c && b[i + 3] === 0x75 && b[i + 4] === 0x65) {
    name = 'measValue';
    len = 5;
  } else return undefined;
  const after = b[i + len];
  if (after === undefined) return name; // decided once more bytes arrive (caller checks length)
  return isSpace(after) || after === GT || after === SLASH ? name : undefined;
}

/** End (exclusive) of the start tag opened at `lt`, quote-aware; -1 if not complete yet. */
function startTagEnd(b: Buffer, from: number): number {
  let q = 0;
  for (let i = from; i < b.length; i++) {
    const c = b[i]!;
    if (q) {
      if (c === q) q = 0;
    } else if (c === 0x22 || c === 0x27) q = c;
    else if (c === GT) return i + 1;
  }
  return -1;
}

interface Context {
  /** Absolute offset of the open measData start tag, -1 outside one. */
  mdStart: number;
  mdCtx: Buffer | null;
  miStart: number;
  miCtx: Buffer | null;
}

/** A cached search for one pattern, kept valid while the window moves and grows. */
class Finder {
  /** Absolute position of the next match, or -1 meaning "none before `searched`". */
  private at = -1;
  private searched = 0;
  constructor(private readonly pat: Buffer) {}
  next(buf: Buffer, base: number, from: number): number {
    if (this.at !== -1 && this.at >= from) return this.at;
    const start = Math.max(from, this.at === -1 ? this.searched - this.pat.length + 1 : from);
    const i = buf.indexOf(this.pat, Math.max(0, start - base));
    this.at = i === -1 ? -1 : i + base;
    this.searched = base + buf.length;
    return this.at;
  }
}

export function metaLine(offset: number, final: boolean): Buffer {
  return Buffer.from(`${META_PREFIX} offset=${offset} final=${final ? 1 : 0}\n`, 'latin1');
}

export async function* splitPmXml(stream: AsyncIterable<Buffer>, opts: SplitOptions): AsyncGenerator<SplitPiece> {
  const target = Math.max(1, Math.floor(opts.targetBytes / EXPANSION));
  const maxRecords = opts.maxRecords;
  const forceAt = Math.max(FORCE_MIN, opts.targetBytes * 16);
  let work: Buffer = Buffer.alloc(0);
  /** Absolute offset of work[0], which is always the start of the next piece. */
  let base = 0;
  /** Absolute offset up to which markup has been classified. */
  let scan = 0;
  let fileCtx: Buffer | null = null;
  const ctx: Context = { mdStart: -1, mdCtx: null, miStart: -1, miCtx: null };
  /** Context bytes the next piece needs (empty for the first piece). */
  let pieceCtx: Buffer = Buffer.alloc(0);
  let records = 0;
  /** The last boundary of this piece, with the context there (record_chunk_size cuts). */
  let lastCut = -1;
  let lastCtx: Context | null = null;
  const finders = { meas: new Finder(MEAS), bang: new Finder(PAT_BANG), pi: new Finder(PAT_PI) };

  const ctxBytes = (c: Context): Buffer => {
    const parts: Buffer[] = [];
    if (fileCtx) parts.push(fileCtx);
    if (c.mdStart !== -1 && c.mdCtx) parts.push(c.mdCtx);
    if (c.miStart !== -1 && c.miCtx) parts.push(c.miCtx);
    return Buffer.concat(parts);
  };

  /** Cuts the piece at absolute offset `at`; the next piece starts there with context `c`. */
  const cut = (at: number, c: Context): SplitPiece => {
    const rel = at - base;
    const piece = { data: work.subarray(0, rel), header: Buffer.concat([metaLine(base, false), pieceCtx]) };
    pieceCtx = ctxBytes(c);
    work = work.subarray(rel);
    base = at;
    lastCut = -1;
    lastCtx = null;
    return piece;
  };

  /** Classifies markup from `scan` on; returns a piece to yield, null when more bytes are needed. */
  const step = (): SplitPiece | null => {
    for (;;) {
      const m = finders.meas.next(work, base, scan);
      const bang = finders.bang.next(work, base, scan);
      const pi = finders.pi.next(work, base, scan);
      let p = m;
      if (bang !== -1 && (p === -1 || bang < p)) p = bang;
      if (pi !== -1 && (p === -1 || pi < p)) p = pi;
      if (p === -1) {
        scan = Math.max(scan, base + work.length - 12); // a marker may start in the last bytes
        return null;
      }
      const r = p - base;
      if (p === pi) {
        const e = work.indexOf(PI_END, r + 2);
        if (e === -1) return null;
        scan = base + e + 2;
        continue;
      }
      if (p === bang) {
        if (work.length - r < 9) return null;
        let e: number;
        if (work.compare(COMMENT_START, 0, 4, r, r + 4) === 0) e = work.indexOf(COMMENT_END, r + 4) + 3;
        else if (work.compare(CDATA_START, 0, 9, r, r + 9) === 0) e = work.indexOf(CDATA_END, r + 9) + 3;
        else {
          // <!DOCTYPE ...> possibly with an internal subset [ ... ]
          const gt = work.indexOf(GT, r);
          const lb = work.indexOf(LBRACKET, r);
          e = lb !== -1 && (gt === -1 || lb < gt) ? work.indexOf(']', lb) : gt;
          if (e !== -1) e = work.indexOf(GT, e) + 1;
          else e = 0;
        }
        if (e <= 2) return null; // not closed yet (indexOf gave -1)
        scan = base + e;
        continue;
      }
      // "meas" at r: is it the name of a start or end tag?
      if (work.length - r < 10) return null;
      const kind = kindAt(work, r + 4);
      if (!kind) {
        scan = p + 4;
        continue;
      }
      let k = r - 1;
      if (work[k] === COLON) {
        k--;
        while (k >= 0 && isNameChar(work[k]!)) k--;
      }
      let end = false;
      if (work[k] === SLASH) {
        end = true;
        k--;
      }
      if (work[k] !== LT) {
        scan = p + 4;
        continue;
      }
      const lt = base + k;
      const tagEnd = end ? work.indexOf(GT, r) + 1 : startTagEnd(work, r);
      if (tagEnd <= 0) return null; // the tag is not complete yet: look at it again with more bytes
      const e = base + tagEnd;
      scan = e;
      const selfClosing = !end && work[tagEnd - 2] === SLASH;
      let boundary = false;
      if (!end) {
        if (kind === 'measData') {
          if (!fileCtx) fileCtx = Buffer.from(work.subarray(0, Math.max(0, lt - base)));
          if (!selfClosing) ctx.mdStart = lt;
          ctx.mdCtx = null;
        } else if (kind === 'measInfo') {
          if (ctx.mdStart !== -1 && !ctx.mdCtx) ctx.mdCtx = Buffer.from(work.subarray(Math.max(0, ctx.mdStart - base), lt - base));
          if (!selfClosing) ctx.miStart = lt;
          ctx.miCtx = null;
          boundary = selfClosing;
        } else {
          if (ctx.miStart !== -1 && !ctx.miCtx) ctx.miCtx = Buffer.from(work.subarray(Math.max(0, ctx.miStart - base), lt - base));
          boundary = selfClosing;
        }
      } else {
        if (kind === 'measData') ctx.mdStart = -1;
        else if (kind === 'measInfo') ctx.miStart = -1;
        boundary = true;
      }
      if (!boundary) continue;
      if (maxRecords !== undefined) {
        const n = kind === 'measValue' ? 1 : 0; // a record is a measValue
        if (records + n > maxRecords && lastCut !== -1) {
          // Cut before this measValue; if it alone fills a piece, the read loop cuts after it next.
          const piece = cut(lastCut, lastCtx!);
          records = n;
          lastCut = e;
          lastCtx = { ...ctx };
          return piece;
        }
        records += n;
        if (records >= maxRecords) {
          records = 0;
          return cut(e, ctx);
        }
        lastCut = e;
        lastCtx = { ...ctx };
      }
      // A piece with a large header is at least four times its header, which is parsed again with
      // every piece: megabytes of measTypes before many small pieces would be parsed many times over.
      if (e - base >= target && (pieceCtx.length <= CTX_FREE || e - base >= 4 * pieceCtx.length)) {
        records = 0;
        return cut(e, ctx);
      }
    }
  };

  for await (const chunk of stream) {
    work = work.length ? Buffer.concat([work, chunk]) : chunk;
    for (;;) {
      // record_chunk_size: a cut at the previous boundary left a full measValue pending.
      if (maxRecords !== undefined && lastCut !== -1 && records >= maxRecords) {
        records = 0;
        yield cut(lastCut, lastCtx!);
        continue;
      }
      const piece = step();
      if (piece) {
        yield piece;
        continue;
      }
      if (work.length >= forceAt) {
        // No boundary in a very long stretch (an unclosed comment, a giant element): cut anyway so
        // memory stays bounded; the decoder reports the broken piece.
        scan = Math.max(scan, base + work.length);
        yield cut(base + work.length, ctx);
      }
      break;
    }
  }
  if (base === 0 && work.length === 0) return; // an empty file
  yield { data: work, header: Buffer.concat([metaLine(base, true), pieceCtx]) };
}
