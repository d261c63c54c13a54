// A tolerant scanner over XML bytes that finds where each record element starts and ends, for the
// xml serializer: it cuts large files between records and, when a piece does not parse, isolates
// the broken record. It reads markup only (tags, comments, CDATA, PIs, DOCTYPE), keeps a stack of
// the open elements (name hashes) and recovers like an HTML parser: an end tag closes up to the matching open
// element. Hand-written because a full parser (saxes) stops at the first well-formedness error and
// parses every character, while this only jumps from '<' to '<'. It runs on code units of the
// input encoding (bytes; 16-bit units for UTF-16), so piece and error offsets are byte-exact.

export type Units = Uint8Array | Uint16Array;

/** Code units of the ASCII characters the scanner looks for, in the input encoding. */
export interface Codes {
  /** Bytes per code unit: 1 (UTF-8, Latin-1 and other ASCII-compatible encodings) or 2 (UTF-16). */
  width: 1 | 2;
  /** The code unit of an ASCII character. */
  of(ch: string): number;
  /** A name as the scanner sees it (one char per code unit), from the real name. */
  key(name: string): string;
}

export function codesFor(encoding: string): Codes {
  // The WHATWG name behind the label (latin1 -> windows-1252, unicode -> utf-16le, ...).
  const e = new TextDecoder(encoding.toLowerCase().replace(/_/g, '-')).encoding;
  if (e === 'utf-16le' || e === 'utf-16be') {
    const unit = (c: number) => (e === 'utf-16be' ? ((c & 0xff) << 8) | (c >> 8) : c);
    return {
      width: 2,
      of: (ch) => unit(ch.charCodeAt(0)),
      key: (n) => String.fromCharCode(...Array.from({ length: n.length }, (_, i) => unit(n.charCodeAt(i)))),
    };
  }
  // Other encodings are ASCII-compatible; non-ASCII name characters are compared as Latin-1 bytes.
  return { width: 1, of: (ch) => ch.charCodeAt(0), key: (n) => Buffer.from(n, e === 'utf-8' ? 'utf8' : 'latin1').toString('latin1') };
}

/** The bytes as code units (UTF-16 needs an even, aligned view; an odd last byte is left out). */
export function unitsOf(b: Uint8Array, width: 1 | 2): Units {
  if (width === 1) return b;
  if (b.byteOffset % 2 !== 0) b = new Uint8Array(b);
  return new Uint16Array(b.buffer, b.byteOffset, b.length >> 1);
}

export type ScanEvent =
  /** The root element's start tag [start, end); `isRecord` when the root is itself a record. */
  | { kind: 'root'; start: number; end: number; isRecord: boolean }
  /** A record element [start, end); `problem` when its markup is broken or it was cut off. */
  | { kind: 'record'; start: number; end: number; problem?: string }
  /** A child of the root that is not a record ended at `end`. */
  | { kind: 'other'; end: number }
  /** The root element closed at `end`. */
  | { kind: 'rootEnd'; end: number };

/** Name hash (open elements are matched by it: no string per tag; a collision only matters in broken XML). */
const mix = (h: number, ch: number) => (Math.imul(h, 31) + ch) | 0;

export class XmlScanner {
  /** Scanned up to here (a token start when waiting for more input). */
  pos = 0;
  /** Text or broken markup was seen outside any root element (the input may not be XML at all). */
  stray = false;
  /** Hashes of the open elements' names, the root first. */
  private stack: number[] = [];
  private recStart = -1;
  private recDepth = 2;
  private problem: string | undefined;
  private queue: ScanEvent[] = [];
  private readonly c: Record<'lt' | 'gt' | 'slash' | 'bang' | 'qm' | 'dq' | 'sq' | 'dash' | 'lbr' | 'rbr' | 'sp' | 'tab' | 'lf' | 'cr', number>;
  private readonly cdata: number[];
  private readonly record: { units: number[]; hash: number; name: string };
  private readonly root: { units: number[]; hash: number };

  constructor(codes: Codes, recordElement: string, rootElement: string) {
    const o = codes.of;
    this.c = {
      lt: o('<'),
      gt: o('>'),
      slash: o('/'),
      bang: o('!'),
      qm: o('?'),
      dq: o('"'),
      sq: o("'"),
      dash: o('-'),
      lbr: o('['),
      rbr: o(']'),
      sp: o(' '),
      tab: o('\t'),
      lf: o('\n'),
      cr: o('\r'),
    };
    this.cdata = [...'[CDATA['].map(o);
    const unitsOfName = (n: string) => [...codes.key(n)].map((ch) => ch.charCodeAt(0));
    const rec = unitsOfName(recordElement);
    const root = unitsOfName(rootElement);
    this.record = { units: rec, hash: rec.reduce(mix, 0), name: recordElement };
    this.root = { units: root, hash: root.reduce(mix, 0) };
  }

  /** Shifts every offset down by `k` (the caller dropped the first `k` units). */
  rebase(k: number) {
    this.pos -= k;
    if (this.recStart >= 0) this.recStart -= k;
  }

  /** Open elements (0: outside the root). */
  get depth() {
    return this.stack.length;
  }

  private visible(u: Units, from: number, to: number) {
    for (let i = from; i < to; i++) if (!this.space(u[i]!)) return true;
    return false;
  }

  private space(u: number) {
    return u === this.c.sp || u === this.c.lf || u === this.c.tab || u === this.c.cr;
  }

  private flag(p: string) {
    if (this.recStart >= 0) this.problem ??= p;
  }

  /** Offset of `a` followed by `b` at or after `from`, -1 if none yet. */
  private find2(u: Units, a: number, b: number, from: number): number {
    for (let i = u.indexOf(a, from); i !== -1; i = u.indexOf(a, i + 1)) if (i + 1 < u.length && u[i + 1] === b) return i;
    return -1;
  }

  /** The next event, or null when the input so far is used up (`final`: the input ended). */
  next(u: Units, final: boolean): ScanEvent | null {
    for (;;) {
      if (this.queue.length) return this.queue.shift()!;
      if (!this.step(u)) {
        if (!final) return null;
        // End of input: what is still open is cut off.
        if (this.pos < u.length) this.flag('unterminated markup at the end of the input');
        this.pos = u.length;
        if (this.recStart >= 0) this.endRecord(u.length, `<${this.record.name}> is not closed at the end of the input`);
        this.stack.length = 0;
        return this.queue.shift() ?? null;
      }
    }
  }

  /** Handles one token; false when more input is needed (pos stays at the token start). */
  private step(u: Units): boolean {
    const { c } = this;
    const lt = u.indexOf(c.lt, this.pos);
    const textEnd = lt === -1 ? u.length : lt;
    if (this.stack.length === 0 && !this.stray) this.stray = this.visible(u, this.pos, textEnd);
    if (lt === -1) {
      this.pos = u.length;
      return false;
    }
    this.pos = lt;
    const len = u.length;
    if (lt + 1 >= len) return false;
    const c1 = u[lt + 1]!;
    if (c1 === c.qm) {
      // <? ... ?>
      const end = this.find2(u, c.qm, c.gt, lt + 2);
      if (end === -1) return false;
      this.pos = end + 2;
      return true;
    }
    if (c1 === c.bang) return this.markupDecl(u, lt);
    const isEnd = c1 === c.slash;
    const n0 = isEnd ? lt + 2 : lt + 1; // name start
    // The name, and its hash, up to white space, '/', '>' or '<'.
    let h = 0;
    let e = n0;
    for (; e < len; e++) {
      const ch = u[e]!;
      if (ch === c.gt || ch === c.slash || ch === c.lt || this.space(ch)) break;
      h = mix(h, ch);
    }
    if (e >= len) return false;
    if (e === n0) {
      if (this.stack.length === 0) this.stray = true;
      this.flag("'<' that does not start markup");
      this.pos = lt + 1;
      return true;
    }
    if (isEnd) {
      const gt = u.indexOf(c.gt, e);
      if (gt === -1) return false;
      this.endTag(u, h, n0, e, lt, gt + 1);
      this.pos = gt + 1;
      return true;
    }
    // Start tag: '>' outside quoted attribute values; a '<' before it means the tag is broken.
    let i = e;
    for (; i < len; i++) {
      const ch = u[i]!;
      if (ch === c.gt || ch === c.lt) break;
      if (ch === c.dq || ch === c.sq) {
        const q = u.indexOf(ch, i + 1);
        if (q === -1) return false;
        i = q;
      }
    }
    if (i >= len) return false;
    if (u[i] === c.lt) {
      this.flag(`start tag <${nameAt(u, n0, e)} is not closed with '>'`);
      this.startTag(u, h, n0, e, lt, i, true);
      this.pos = i;
      return true;
    }
    this.startTag(u, h, n0, e, lt, i + 1, u[i - 1] === c.slash);
    this.pos = i + 1;
    return true;
  }

  /** <!-- -->, <![CDATA[ ]]>, <!DOCTYPE ...[...]>: skipped. */
  private markupDecl(u: Units, lt: number): boolean {
    const { c } = this;
    if (lt + 3 >= u.length) return false;
    if (u[lt + 2] === c.dash && u[lt + 3] === c.dash) {
      for (let i = this.find2(u, c.dash, c.dash, lt + 4); i !== -1; i = this.find2(u, c.dash, c.dash, i + 1)) {
        if (i + 2 >= u.length) return false;
        if (u[i + 2] === c.gt) {
          this.pos = i + 3;
          return true;
        }
      }
      return false;
    }
    if (lt + 2 + this.cdata.length > u.length) return false;
    if (this.cdata.every((x, k) => u[lt + 2 + k] === x)) {
      for (let i = this.find2(u, c.rbr, c.rbr, lt + 9); i !== -1; i = this.find2(u, c.rbr, c.rbr, i + 1)) {
        if (i + 2 >= u.length) return false;
        if (u[i + 2] === c.gt) {
          this.pos = i + 3;
          return true;
        }
      }
      return false;
    }
    // DOCTYPE and other declarations: up to '>', past quoted strings and an internal subset in
    // [ ] (whose comments and quoted strings may hold ']' and '>').
    let i = lt + 2;
    let subset = false;
    for (; i < u.length; i++) {
      const ch = u[i]!;
      if (ch === c.dq || ch === c.sq) {
        const q = u.indexOf(ch, i + 1);
        if (q === -1) return false;
        i = q;
      } else if (subset && ch === c.lt && u[i + 1] === c.bang && u[i + 2] === c.dash && u[i + 3] === c.dash) {
        let k = this.find2(u, c.dash, c.dash, i + 4);
        while (k !== -1 && u[k + 2] !== c.gt) k = this.find2(u, c.dash, c.dash, k + 1);
        if (k === -1 || k + 2 >= u.length) return false;
        i = k + 2;
      } else if (ch === c.lbr) subset = true;
      else if (ch === c.rbr) subset = false;
      else if (ch === c.gt && !subset) break;
    }
    if (i >= u.length) return false;
    this.pos = i + 1;
    return true;
  }

  private is(u: Units, s: number, e: number, h: number, name: { units: number[]; hash: number }): boolean {
    if (h !== name.hash || e - s !== name.units.length) return false;
    for (let k = 0; k < name.units.length; k++) if (u[s + k] !== name.units[k]) return false;
    return true;
  }

  private startTag(u: Units, h: number, n0: number, n1: number, start: number, end: number, selfClosing: boolean) {
    const depth = this.stack.length;
    if (depth === 0) {
      const isRecord = this.is(u, n0, n1, h, this.record) && !this.is(u, n0, n1, h, this.root);
      this.recDepth = isRecord ? 1 : 2;
      this.queue.push({ kind: 'root', start, end, isRecord });
      if (isRecord) this.beginRecord(start);
      if (selfClosing) {
        if (isRecord) this.endRecord(end);
        this.queue.push({ kind: 'rootEnd', end });
      } else this.stack.push(h);
      return;
    }
    if (depth === 1 && this.recDepth === 2 && this.is(u, n0, n1, h, this.record)) {
      this.beginRecord(start);
      if (selfClosing) this.endRecord(end);
      else this.stack.push(h);
      return;
    }
    if (selfClosing) {
      if (depth === 1 && this.recStart < 0) this.queue.push({ kind: 'other', end });
    } else this.stack.push(h);
  }

  private endTag(u: Units, h: number, n0: number, n1: number, start: number, end: number) {
    const { stack } = this;
    let at = stack.length - 1;
    if (stack[at] !== h) {
      at = stack.lastIndexOf(h);
      const name = nameAt(u, n0, n1);
      if (at === -1) {
        this.flag(`end tag </${name}> has no start tag`);
        return;
      }
      // (When it closes an ancestor of the record, the record gets the message below.)
      if (!(this.recStart >= 0 && at < this.recDepth - 1)) this.flag(`end tag </${name}> does not match the open element`);
    }
    if (this.recStart >= 0 && at < this.recDepth - 1) {
      // An ancestor of the record closes: the record ends, cut off, before this end tag.
      this.endRecord(start, `<${this.record.name}> is not closed before </${nameAt(u, n0, n1)}>`);
    }
    stack.length = at;
    if (this.recStart >= 0 && at === this.recDepth - 1) this.endRecord(end);
    else if (this.recStart < 0 && this.recDepth === 2 && at === 1) this.queue.push({ kind: 'other', end });
    if (at === 0) this.queue.push({ kind: 'rootEnd', end });
  }

  private beginRecord(start: number) {
    this.recStart = start;
    this.problem = undefined;
  }

  private endRecord(end: number, problem?: string) {
    const p = this.problem ?? problem;
    this.queue.push(p ? { kind: 'record', start: this.recStart, end, problem: p } : { kind: 'record', start: this.recStart, end });
    this.recStart = -1;
    this.problem = undefined;
  }
}

/** A name for messages (bytes shown one char per unit). */
function nameAt(u: Units, s: number, e: number): string {
  let out = '';
  for (let i = s; i < e && i < s + 100; i++) out += String.fromCharCode(u[i]!);
  return out;
}
