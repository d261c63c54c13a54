// Decodes one piece of a 3GPP TS 32.435 measurement file (see split.ts for what a piece is) into
// one flat record per measValue: the context fields, then one field per counter. A small scanner
// for this fixed vocabulary, measured against saxes and fast-xml-parser (docs/formats/pm_xml.md):
// it handles what the files use (any namespace prefix, attributes in any order and quoting, the
// five predefined and numeric entities, CDATA, comments, processing instructions, a DOCTYPE) and
// reports what is not well-formed in the part it reads: mismatched or stray end tags, bad attribute
// syntax, unknown entities.
import type { DecodeOut, Rec } from '../../types.js';
import { META_PREFIX } from './split.js';
import { counterValue, durationSeconds } from './values.js';

export interface PmXmlOptions {
  addManagedElement: boolean;
  addDuration: boolean;
  numeric: boolean;
  /** Bytes to text in the configured encoding. */
  toText(b: Buffer): string;
}

// What an element means, from its local name and its parent's kind.
const OTHER = 0;
const ROOT = 1;
const FILE_HEADER = 2;
const FILE_SENDER = 3;
const HDR_COLLEC = 4;
const MEAS_DATA = 5;
const MANAGED_ELEMENT = 6;
const MEAS_INFO = 7;
const JOB = 8;
const GRAN = 9;
const REP = 10;
const MEAS_TYPES = 11;
const MEAS_TYPE = 12;
const MEAS_VALUE = 13;
const R = 14;
const MEAS_RESULTS = 15;
const SUSPECT = 16;

function kindOf(parent: number, local: string): number {
  switch (parent) {
    case -1:
      return ROOT;
    case ROOT:
      return local === 'measData' ? MEAS_DATA : local === 'fileHeader' ? FILE_HEADER : OTHER;
    case FILE_HEADER:
      return local === 'fileSender' ? FILE_SENDER : local === 'measCollec' ? HDR_COLLEC : OTHER;
    case MEAS_DATA:
      return local === 'measInfo' ? MEAS_INFO : local === 'managedElement' ? MANAGED_ELEMENT : OTHER;
    case MEAS_INFO:
      switch (local) {
        case 'measValue':
          return MEAS_VALUE;
        case 'measType':
          return MEAS_TYPE;
        case 'measTypes':
          return MEAS_TYPES;
        case 'granPeriod':
          return GRAN;
        case 'job':
          return JOB;
        case 'repPeriod':
          return REP;
      }
      return OTHER;
    case MEAS_VALUE:
      return local === 'r' ? R : local === 'measResults' ? MEAS_RESULTS : local === 'suspect' ? SUSPECT : OTHER;
  }
  return OTHER;
}

const collects = (k: number) => k === R || k === MEAS_RESULTS || k === MEAS_TYPE || k === MEAS_TYPES || k === SUSPECT;

const SP = 0x20;
const GT = 0x3e;
const SLASH = 0x2f;
const BANG = 0x21;
const QMARK = 0x3f;
const EQ = 0x3d;
const DQ = 0x22;
const SQ = 0x27;

const isSpace = (c: number) => c === SP || c === 0x0a || c === 0x09 || c === 0x0d;
const isNameChar = (c: number) =>
  (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x3a) || c === 0x5f || c === 0x2d || c === 0x2e || c >= 0x80;
const localOf = (q: string) => {
  const i = q.indexOf(':');
  return i === -1 ? q : q.slice(i + 1);
};

const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

class XmlError extends Error {
  constructor(message: string, readonly at: number) {
    super(message);
  }
}

function decodeEntities(s: string, at: number): string {
  let out = '';
  let from = 0;
  for (let i = s.indexOf('&'); i !== -1; i = s.indexOf('&', from)) {
    const semi = s.indexOf(';', i);
    if (semi === -1 || semi - i > 12) throw new XmlError(`"&" not starting an entity reference`, at + i);
    const name = s.slice(i + 1, semi);
    let ch: string | undefined;
    if (name.charCodeAt(0) === 0x23 /* # */) {
      const code = name[1] === 'x' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      const digits = name[1] === 'x' ? /^#x[0-9a-fA-F]+$/ : /^#[0-9]+$/;
      if (digits.test(name) && code <= 0x10ffff) ch = String.fromCodePoint(code);
    } else ch = ENTITIES[name];
    if (ch === undefined) throw new XmlError(`unknown entity &${name};`, at + i);
    out += s.slice(from, i) + ch;
    from = semi + 1;
  }
  return out + s.slice(from);
}

type Make = (c: unknown[], ldn: unknown, suspect: unknown, v: unknown[]) => Rec;
const factories = new Map<string, Make>();
/** Distinct record shapes kept compiled; past this the cache starts over (a long-running daemon). */
const MAX_FACTORIES = 4096;
/** Total signature bytes of the compiled shapes kept: long counter names must not fill memory. */
const MAX_FACTORY_BYTES = 16 << 20;
let factoryBytes = 0;
/** Work (in characters of field names) a piece may spend compiling shapes beyond its own size. */
const COMPILE_ALLOWANCE = 256 << 10;

/** The same record as factoryFor's, built field by field: no compile, no cache. */
function plainMake(keys: string[], suspect: boolean, counters: string[]): Make {
  return (c, l, s, v) => {
    const o: Rec = {};
    for (let i = 0; i < keys.length; i++) o[keys[i]!] = c[i];
    o.meas_obj_ldn = l;
    if (suspect) o.suspect = s;
    for (let i = 0; i < counters.length; i++) o[counters[i]!] = v[i];
    return o;
  };
}

/**
 * A record constructor for one set of context fields and one sequence of counter fields: an object
 * literal with a fixed key order, so the records of a measInfo share one hidden class (JSON.stringify
 * and transforms stay on fast paths). Counter names come from the input: they enter the code only as
 * JSON string literals, and `__proto__` is never one of them (it is renamed, see fieldNames).
 */
function factoryFor(keys: string[], suspect: boolean, counters: string[]): Make {
  const sig = JSON.stringify([keys, suspect, counters]); // unambiguous whatever the names hold
  let f = factories.get(sig);
  if (!f) {
    const fields = keys.map((k, i) => `${JSON.stringify(k)}: c[${i}]`);
    fields.push('meas_obj_ldn: l');
    if (suspect) fields.push('suspect: s');
    counters.forEach((k, i) => fields.push(`${JSON.stringify(k)}: v[${i}]`));
    f = new Function('c', 'l', 's', 'v', `return { ${fields.join(', ')} };`) as Make;
    if (factories.size >= MAX_FACTORIES || factoryBytes + sig.length > MAX_FACTORY_BYTES) {
      factories.clear();
      factoryBytes = 0;
    }
    factories.set(sig, f);
    factoryBytes += sig.length;
  }
  return f;
}

/**
 * Field names a counter may not take: the context fields (whether or not this file has them, so a
 * counter's field name does not depend on the file header) and `__proto__`.
 */
const RESERVED = new Set([
  'file_format_version',
  'vendor_name',
  'dn_prefix',
  'sender',
  'begin_time',
  'managed_element',
  'user_label',
  'sw_version',
  'meas_info_id',
  'job_id',
  'gran_period_s',
  'gran_end_time',
  'rep_period_s',
  'meas_obj_ldn',
  'suspect',
  '__proto__',
]);
const COLLISION_PREFIX = 'counter_';

/**
 * The field name of each counter of a measInfo: its name, or for a name in RESERVED the name with
 * `counter_` in front (again, until it is neither reserved nor another counter's name). The context
 * field keeps its meaning; the counter stays findable under a predictable name.
 */
function fieldNames(types: string[]): string[] {
  let taken: Set<string> | undefined;
  return types.map((t) => {
    if (!RESERVED.has(t)) return t;
    taken ??= new Set(types);
    let f = COLLISION_PREFIX + t;
    while (RESERVED.has(f) || taken.has(f)) f = COLLISION_PREFIX + f;
    return f;
  });
}

interface PieceMeta {
  offset: number;
  final: boolean;
}

export class PmXmlDecoder {
  // element stack
  private names: string[] = [];
  private kinds: number[] = [];
  private depth = 0;
  private sawRoot = false;
  // attributes of the tag being read
  private an: string[] = [];
  private av: string[] = [];
  private na = 0;
  // text of the element being collected
  private collecting = 0;
  private text = '';
  // file and managed element context
  private file: Record<string, string | undefined> = {};
  private me: Record<string, string | undefined> = {};
  // measInfo context
  private mi: Record<string, string | undefined> = {};
  private typeList: string[] = [];
  /** p attribute -> index in typeList. */
  private typeByP = new Map<string, number>();
  private ctxKeys: string[] | null = null;
  private ctxVals: unknown[] = [];
  /** Per index in typeList: its slot, the first counter with the same field name (null: not built). */
  private slotOf: number[] | null = null;
  private fields: string[] = [];
  /** Per slot: the serial of the last measValue that had a value for it (duplicates). */
  private seen: number[] = [];
  private serial = 0;
  /** The last record shape of this measInfo: its slot sequence and constructor. */
  private lastSlots: number[] = [];
  private lastSuspect = false;
  private lastMake: Make | null = null;
  private miStart = 0;
  // measValue being read
  private ldn: string | null = null;
  private slots: number[] = [];
  private vals: unknown[] = [];
  private suspect: boolean | undefined;
  private p: string | undefined;
  private elStart = 0;
  private rIndex = 0;
  /**
   * Characters of field names this piece may still spend on compiling record shapes: a shape
   * costs its names, which may be far longer than the measValue that asks for it (long measType
   * names, a new order of r elements in every measValue). Past it, records are built field by field.
   */
  private compileBudget = 0;
  /** Records of the open measInfo: given out at its end (or the piece's), dropped if it is malformed. */
  private pending: Rec[] = [];
  // the piece being read
  private s = '';
  private inData = false;
  private data: Buffer = Buffer.alloc(0);
  private exact = false;
  private meta: PieceMeta = { offset: 0, final: true };
  private safe = 0;

  constructor(
    private readonly o: PmXmlOptions,
    private readonly out: DecodeOut,
  ) {}

  decode(data: Buffer, header: Buffer | undefined, piece: number) {
    this.data = data;
    this.compileBudget = data.length + COMPILE_ALLOWANCE;
    let ctx: Buffer | undefined;
    if (header && header.length) {
      const nl = header.indexOf(0x0a);
      const line = header.subarray(0, nl === -1 ? header.length : nl).toString('latin1');
      const m = new RegExp(`^${META_PREFIX} offset=(\\d+) final=([01])$`).exec(line);
      if (!m) {
        this.out.error(`PM XML piece ${piece}: unreadable piece header`, data);
        return;
      }
      this.meta = { offset: Number(m[1]), final: m[2] === '1' };
      ctx = header.subarray(nl + 1);
    } else this.meta = { offset: 0, final: true }; // a whole document
    let brokenMi: string | undefined;
    if (ctx && ctx.length) {
      this.inData = false;
      this.exact = false;
      this.s = this.o.toText(ctx);
      try {
        if (this.scan(0) !== -1) throw new XmlError('context ends inside markup', this.s.length);
      } catch (e) {
        const msg = e instanceof XmlError ? e.message : String(e);
        if (this.openIndex(MEAS_INFO) === -1) {
          this.out.error(`PM XML piece ${piece}: malformed file or measData header: ${msg}`, data);
          return;
        }
        brokenMi = msg;
      }
    }
    this.inData = true;
    const s = this.o.toText(data);
    this.s = s;
    // Offsets in the text are byte offsets when the text is ASCII (the usual case).
    this.exact = s.length === data.length;
    // A byte-order mark is passed over (kept in the text so that byte offsets stay right).
    let pos = this.meta.offset === 0 && s.charCodeAt(0) === 0xfeff ? 1 : 0;
    this.safe = pos;
    this.miStart = 0;
    if (brokenMi !== undefined) pos = this.recover(new XmlError(brokenMi, 0));
    let partial = -1;
    while (pos !== -1) {
      try {
        partial = this.scan(pos);
        break;
      } catch (e) {
        if (!(e instanceof XmlError)) throw e;
        pos = this.recover(e);
      }
    }
    if (pos === -1) {
      this.pending.length = 0;
      return;
    }
    if (this.meta.final && (this.depth > 0 || partial !== -1 || !this.sawRoot)) this.truncated(partial);
    else if (partial !== -1) this.out.error(`PM XML piece ${piece}: the piece ends inside markup (no element boundary found)`, this.raw(partial, s.length));
    this.flush();
  }

  /** Stack index of the innermost open element of kind `k`, or -1. */
  private openIndex(k: number): number {
    for (let i = this.depth - 1; i >= 0; i--) if (this.kinds[i] === k) return i;
    return -1;
  }

  private flush() {
    const p = this.pending;
    for (let i = 0; i < p.length; i++) this.out.record(p[i]!);
    p.length = 0;
  }

  private raw(a: number, b: number): Buffer {
    return this.exact ? this.data.subarray(a, b) : Buffer.from(this.s.slice(a, b), 'utf8');
  }

  private byteAt(i: number): number {
    return this.meta.offset + (this.exact ? i : Buffer.byteLength(this.s.slice(0, i), 'utf8'));
  }

  /** After a malformed element: skip to the end of the enclosing measInfo; -1 ends the piece. */
  private recover(e: XmlError): number {
    const s = this.s;
    const d = this.openIndex(MEAS_INFO);
    const where = `byte ${this.byteAt(Math.min(e.at, s.length))}`;
    this.collecting = 0;
    if (d === -1) {
      this.out.error(`PM XML: not well-formed at ${where}: ${e.message}`, this.raw(this.safe, s.length));
      return -1;
    }
    const id = this.mi.meas_info_id;
    const msg = `PM XML: malformed measInfo${id !== undefined ? ` "${id}"` : ''} at ${where}: ${e.message}; its values in this piece are skipped`;
    this.pending.length = 0;
    const close = '</' + this.names[d]!;
    for (let i = s.indexOf(close, e.at); i !== -1; i = s.indexOf(close, i + 1)) {
      let j = i + close.length;
      while (isSpace(s.charCodeAt(j))) j++;
      if (s.charCodeAt(j) !== GT) continue;
      this.out.error(msg, this.raw(this.miStart, j + 1));
      this.depth = d;
      this.safe = j + 1;
      return j + 1;
    }
    this.out.error(msg, this.raw(this.miStart, s.length));
    this.depth = d + 1;
    return -1;
  }

  /** The end of a truncated file: complete measValues were given out; an unfinished one is dropped. */
  private truncated(partial: number) {
    const names: string[] = [];
    // The innermost few are enough to say where (a hostile file may leave thousands open).
    for (let i = 0; i < this.depth; i++) {
      if (i === 3 && this.depth > 8) {
        names.push(`... ${this.depth - 6} more ...`);
        i = this.depth - 4;
        continue;
      }
      names.push(localOf(this.names[i]!));
    }
    let skipped: string;
    if (this.openIndex(MEAS_VALUE) !== -1) {
      // A record with some of its counters would read as a complete measurement.
      const n = this.slots.length;
      const ldn = this.ldn !== null ? ` ${JSON.stringify(this.ldn)}` : '';
      skipped = `1 partial element skipped (measValue${ldn} with ${n} complete value${n === 1 ? '' : 's'})`;
    } else {
      const k = (partial !== -1 ? 1 : 0) + (this.collecting ? 1 : 0);
      skipped = `${k} partial element${k === 1 ? '' : 's'} skipped`;
    }
    const n = this.meta.offset + this.data.length;
    const what = names.length ? `${this.depth} open element${this.depth === 1 ? '' : 's'} closed automatically (${names.join(' > ')})` : 'no measCollecFile element';
    this.out.note(`PM XML: file truncated at byte ${n}: ${what}, ${skipped}`);
    this.slots.length = 0;
    this.vals.length = 0;
    this.depth = 0;
  }

  /**
   * Reads markup from `pos` to the end of the current text. Returns -1, or the offset of markup
   * cut by the end of the text. Throws XmlError for what is not well-formed.
   */
  private scan(pos: number): number {
    const s = this.s;
    const n = s.length;
    while (pos < n) {
      const lt = s.indexOf('<', pos);
      if (lt === -1) {
        if (this.collecting) this.addTail(pos, n);
        return -1;
      }
      if (this.collecting && lt > pos) this.addText(pos, lt);
      const c = s.charCodeAt(lt + 1);
      if (c === SLASH) {
        const gt = s.indexOf('>', lt + 2);
        if (gt === -1) return lt;
        if (this.depth === 0) throw new XmlError(`end tag without a start tag`, lt);
        const top = this.names[this.depth - 1]!;
        if (!(gt - lt - 2 === top.length && s.startsWith(top, lt + 2))) {
          const name = s.slice(lt + 2, gt).trimEnd();
          if (name !== top) throw new XmlError(`end tag </${name}> does not match <${top}>`, lt);
        }
        this.end(lt, gt + 1);
        pos = gt + 1;
      } else if (c === BANG) {
        if (s.startsWith('<!--', lt)) {
          const e = s.indexOf('-->', lt + 4);
          if (e === -1) return lt;
          pos = e + 3;
        } else if (s.startsWith('<![CDATA[', lt)) {
          const e = s.indexOf(']]>', lt + 9);
          if (e === -1) return lt;
          if (this.collecting) this.text += s.slice(lt + 9, e);
          pos = e + 3;
        } else if (s.startsWith('<!DOCTYPE', lt) && this.depth === 0) {
          let e = s.indexOf('>', lt);
          const lb = s.indexOf('[', lt);
          if (lb !== -1 && (e === -1 || lb < e)) {
            const rb = s.indexOf(']', lb);
            e = rb === -1 ? -1 : s.indexOf('>', rb);
          }
          if (e === -1) return lt;
          pos = e + 1;
        } else if (n - lt < 9) return lt;
        else throw new XmlError(`"<!" not starting a comment or CDATA section`, lt);
      } else if (c === QMARK) {
        const e = s.indexOf('?>', lt + 2);
        if (e === -1) return lt;
        pos = e + 2;
      } else {
        // Fast path for the bulk of a file, `<r p="N">value</r>` inside a measValue; anything
        // else (prefixes, entities, other quoting or spacing) takes the general path below.
        if (c === 0x72 && s.charCodeAt(lt + 2) === SP && s.charCodeAt(lt + 3) === 0x70 && s.charCodeAt(lt + 4) === EQ && s.charCodeAt(lt + 5) === DQ && this.kinds[this.depth - 1] === MEAS_VALUE && this.depth > 0) {
          const q2 = s.indexOf('"', lt + 6);
          if (q2 !== -1 && s.charCodeAt(q2 + 1) === GT) {
            const ve = s.indexOf('<', q2 + 2);
            if (ve !== -1 && s.charCodeAt(ve + 1) === SLASH && s.charCodeAt(ve + 2) === 0x72 && s.charCodeAt(ve + 3) === GT) {
              const p = s.slice(lt + 6, q2);
              const text = s.slice(q2 + 2, ve);
              if (text.indexOf('&') === -1 && p.indexOf('&') === -1 && p.indexOf('<') === -1) {
                this.value(p, text, lt, ve + 4);
                pos = ve + 4;
                continue;
              }
            }
          }
        }
        const r = this.start(lt);
        if (r < 0) return lt;
        pos = r;
      }
    }
    return -1;
  }

  private addText(a: number, b: number) {
    const t = this.s.slice(a, b);
    this.text += t.indexOf('&') === -1 ? t : decodeEntities(t, a);
  }

  /** Text at the very end: in a truncated file it may stop inside an entity reference. */
  private addTail(a: number, b: number) {
    const t = this.s.slice(a, b);
    try {
      this.text += t.indexOf('&') === -1 ? t : decodeEntities(t, a);
    } catch (e) {
      if (!this.inData || !this.meta.final) throw e;
      const amp = t.lastIndexOf('&');
      this.text += decodeEntities(t.slice(0, amp), a); // the text is dropped with its measValue
    }
  }

  private attr(name: string): string | undefined {
    for (let i = 0; i < this.na; i++) if (this.an[i] === name) return this.av[i];
    return undefined;
  }

  /** Reads the start tag at `lt`; returns the offset after it, or -1 when the text ends inside it. */
  private start(lt: number): number {
    const s = this.s;
    const n = s.length;
    let i = lt + 1;
    let q: string;
    if (s.charCodeAt(i) === 0x72 && !isNameChar(s.charCodeAt(i + 1))) {
      q = 'r'; // the common case, without a slice
      i++;
    } else {
      while (isNameChar(s.charCodeAt(i))) i++;
      if (i === lt + 1) {
        if (i >= n) return -1;
        throw new XmlError(`"<" not starting a tag`, lt);
      }
      if (i >= n) return -1;
      q = s.slice(lt + 1, i);
    }
    let na = 0;
    let selfClosing = false;
    for (;;) {
      let ch = s.charCodeAt(i);
      if (isSpace(ch)) {
        do ch = s.charCodeAt(++i);
        while (isSpace(ch));
      } else if (ch !== GT && ch !== SLASH && i < n) throw new XmlError(`attributes of <${q}> must be separated by blanks`, i);
      if (ch === GT) {
        i++;
        break;
      }
      if (ch === SLASH) {
        if (i + 1 >= n) return -1;
        if (s.charCodeAt(i + 1) !== GT) throw new XmlError(`"/" inside <${q}>`, i);
        i += 2;
        selfClosing = true;
        break;
      }
      if (i >= n) return -1;
      const ns = i;
      while (isNameChar(ch)) ch = s.charCodeAt(++i);
      if (i === ns) throw new XmlError(`unexpected character "${s[i]}" in <${q}>`, i);
      const name = s.slice(ns, i);
      while (isSpace(ch)) ch = s.charCodeAt(++i);
      if (i >= n) return -1;
      if (ch !== EQ) throw new XmlError(`attribute ${name} of <${q}> has no value`, i);
      ch = s.charCodeAt(++i);
      while (isSpace(ch)) ch = s.charCodeAt(++i);
      if (i >= n) return -1;
      if (ch !== DQ && ch !== SQ) throw new XmlError(`attribute ${name} of <${q}> is not quoted`, i);
      const ve = s.indexOf(ch === DQ ? '"' : "'", i + 1);
      if (ve === -1) return -1;
      let v = s.slice(i + 1, ve);
      if (v.indexOf('<') !== -1) throw new XmlError(`"<" in the value of attribute ${name}`, i);
      if (v.indexOf('&') !== -1) v = decodeEntities(v, i + 1);
      this.an[na] = name;
      this.av[na] = v;
      na++;
      i = ve + 1;
    }
    this.na = na;
    const parent = this.depth === 0 ? -1 : this.kinds[this.depth - 1]!;
    const kind = parent === -1 && this.sawRoot ? OTHER : kindOf(parent, q === 'r' ? 'r' : localOf(q));
    this.open(kind, lt);
    if (selfClosing) this.close(kind, lt, i);
    else {
      this.names[this.depth] = q;
      this.kinds[this.depth] = kind;
      this.depth++;
    }
    return i;
  }

  private end(lt: number, after: number) {
    this.depth--;
    this.close(this.kinds[this.depth]!, lt, after);
  }

  /** A start tag of kind `k` at `lt` with its attributes read. */
  private open(k: number, lt: number) {
    if (collects(k)) {
      this.collecting = k;
      this.text = '';
    }
    switch (k) {
      case R:
        this.p = this.na ? this.attr('p') : undefined;
        this.elStart = lt;
        return;
      case MEAS_VALUE:
        this.ldn = this.attr('measObjLdn') ?? null;
        this.slots.length = 0;
        this.vals.length = 0;
        this.suspect = undefined;
        this.rIndex = 0;
        this.serial++;
        if (!this.ctxKeys) this.buildContext();
        if (!this.slotOf) this.buildSlots();
        return;
      case MEAS_TYPE:
        this.p = this.attr('p');
        return;
      case MEAS_RESULTS:
        this.elStart = lt;
        return;
      case MEAS_INFO:
        this.mi = { meas_info_id: this.attr('measInfoId') };
        this.typeList = [];
        this.typeByP = new Map();
        this.ctxKeys = null;
        this.slotOf = null;
        this.miStart = this.inData ? lt : 0;
        return;
      case JOB:
        this.mi.job_id = this.attr('jobId');
        return;
      case GRAN:
        this.mi.gran_duration = this.attr('duration');
        this.mi.gran_end_time = this.attr('endTime');
        return;
      case REP:
        this.mi.rep_duration = this.attr('duration');
        return;
      case MANAGED_ELEMENT:
        this.me = { managed_element: this.attr('localDn'), user_label: this.attr('userLabel'), sw_version: this.attr('swVersion') };
        return;
      case MEAS_DATA:
        this.me = {};
        return;
      case FILE_HEADER:
        this.file.file_format_version = this.attr('fileFormatVersion');
        this.file.vendor_name = this.attr('vendorName');
        this.file.dn_prefix = this.attr('dnPrefix');
        return;
      case FILE_SENDER:
        this.file.sender = this.attr('localDn');
        return;
      case HDR_COLLEC:
        this.file.begin_time = this.attr('beginTime');
        return;
      case ROOT:
        this.sawRoot = true;
        return;
    }
  }

  /** The end of an element of kind `k` (from `lt`, its end tag or self-closing start tag, to `after`). */
  private close(k: number, lt: number, after: number) {
    if (k === this.collecting) this.collecting = 0;
    switch (k) {
      case R:
        this.value(this.p, this.text, this.elStart, after);
        return;
      case MEAS_RESULTS: {
        const t = this.text;
        this.results(t.length ? t.split(/[ \t\r\n]+/).filter(Boolean) : [], this.elStart, after);
        return;
      }
      case SUSPECT: {
        const t = this.text.trim();
        this.suspect = t === 'true' || t === '1';
        return;
      }
      case MEAS_VALUE:
        this.emitValue();
        return;
      case MEAS_TYPE: {
        const name = this.text.trim();
        if (this.p !== undefined) this.typeByP.set(this.p, this.typeList.length);
        this.typeList.push(name);
        this.slotOf = null;
        return;
      }
      case MEAS_TYPES:
        this.typeList = this.text.split(/[ \t\r\n]+/).filter(Boolean);
        this.slotOf = null;
        return;
      case MEAS_INFO:
        this.flush();
        if (this.inData) this.safe = after;
        return;
      case MEAS_DATA:
        this.me = {};
        if (this.inData) this.safe = after;
        return;
    }
  }

  /** One `r` value: its counter is the measType with the same p (or at that position in measTypes). */
  private value(p: string | undefined, text: string, lt: number, after: number) {
    let i: number | undefined;
    if (p !== undefined) {
      i = this.typeByP.get(p);
      if (i === undefined) {
        const n = Number(p) - 1;
        if (Number.isInteger(n) && n >= 0 && n < this.typeList.length) i = n;
      }
    } else if (this.rIndex < this.typeList.length) i = this.rIndex;
    this.rIndex++;
    const mi = this.mi.meas_info_id ?? '';
    const tag = `<r${p !== undefined ? ` p="${p}"` : ''}>`;
    if (i === undefined) {
      this.out.error(`PM XML: measInfo "${mi}": ${tag} matches no measType`, this.raw(lt, after));
      return;
    }
    if (!this.put(i, counterValue(text, this.o.numeric))) {
      this.out.error(`PM XML: measInfo "${mi}": ${tag} is a second value for counter "${this.typeList[i]}" in measValue ${JSON.stringify(this.ldn)}; the first is kept`, this.raw(lt, after));
    }
  }

  /** Adds the value of counter `i` (index in typeList) to the measValue; false if it has one already. */
  private put(i: number, v: unknown): boolean {
    const slot = this.slotOf![i]!;
    if (this.seen[slot] === this.serial) return false;
    this.seen[slot] = this.serial;
    this.slots.push(slot);
    this.vals.push(v);
    return true;
  }

  /** measResults tokens, paired with the measTypes in order. */
  private results(toks: string[], lt: number, after: number) {
    const n = Math.min(toks.length, this.typeList.length);
    let dup = 0;
    for (let i = 0; i < n; i++) if (!this.put(i, counterValue(toks[i]!, this.o.numeric))) dup++;
    const mi = this.mi.meas_info_id ?? '';
    if (toks.length > this.typeList.length) {
      this.out.error(`PM XML: measInfo "${mi}": ${toks.length} values in measResults for ${this.typeList.length} measTypes; the extra ones are skipped`, this.raw(lt, after));
    }
    if (dup) this.out.error(`PM XML: measInfo "${mi}": measResults has ${dup} more value${dup === 1 ? '' : 's'} for counters named twice in measTypes; the first of each is kept`, this.raw(lt, after));
  }

  /** The record of a complete measValue. */
  private emitValue() {
    const slots = this.slots;
    const suspect = this.suspect !== undefined;
    let make = this.lastMake;
    const last = this.lastSlots;
    let same = make !== null && suspect === this.lastSuspect && last.length === slots.length;
    for (let i = 0; same && i < slots.length; i++) same = last[i] === slots[i];
    if (!same) {
      const counters = slots.map((k) => this.fields[k]!);
      let cost = 64;
      for (const k of this.ctxKeys!) cost += k.length + 8;
      for (const k of counters) cost += k.length + 8;
      if (cost <= this.compileBudget) {
        this.compileBudget -= cost;
        make = factoryFor(this.ctxKeys!, suspect, counters);
      } else make = plainMake(this.ctxKeys!, suspect, counters);
      this.lastMake = make;
      this.lastSlots = slots.slice();
      this.lastSuspect = suspect;
    }
    this.pending.push(make!(this.ctxVals, this.ldn, this.suspect, this.vals));
    slots.length = 0;
    this.vals.length = 0;
  }

  /** Field names and slots of the counters of the current measInfo (see fieldNames). */
  private buildSlots() {
    const names = fieldNames(this.typeList);
    const first = new Map<string, number>();
    this.slotOf = names.map((f, i) => {
      const s = first.get(f);
      if (s !== undefined) return s;
      first.set(f, i);
      return i;
    });
    this.fields = names;
    this.seen = new Array<number>(names.length).fill(0);
    this.lastMake = null;
  }

  /** Context fields of the records of the current measInfo (absent ones are left out). */
  private buildContext() {
    const keys: string[] = [];
    const vals: unknown[] = [];
    const add = (k: string, v: unknown) => {
      if (v !== undefined) {
        keys.push(k);
        vals.push(v);
      }
    };
    const f = this.file;
    add('file_format_version', f.file_format_version);
    add('vendor_name', f.vendor_name);
    add('dn_prefix', f.dn_prefix);
    add('sender', f.sender);
    add('begin_time', f.begin_time);
    if (this.o.addManagedElement) {
      add('managed_element', this.me.managed_element);
      add('user_label', this.me.user_label);
      add('sw_version', this.me.sw_version);
    }
    const mi = this.mi;
    add('meas_info_id', mi.meas_info_id);
    add('job_id', mi.job_id);
    if (this.o.addDuration) add('gran_period_s', mi.gran_duration === undefined ? undefined : durationSeconds(mi.gran_duration));
    add('gran_end_time', mi.gran_end_time);
    if (this.o.addDuration) add('rep_period_s', mi.rep_duration === undefined ? undefined : durationSeconds(mi.rep_duration));
    this.ctxKeys = keys;
    this.ctxVals = vals;
    this.lastMake = null;
  }
}
