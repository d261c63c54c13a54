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
  toText(bytes: Buffer): string;
}

// What an element means, from its local name and its parent's kind.
const OTHER = 0;
const ROOT = 1;
const FILE_HEADER = 2;
const FILE_SENDER = 3;
const HEADER_MEAS_COLLEC = 4;
const MEAS_DATA = 5;
const MANAGED_ELEMENT = 6;
const MEAS_INFO = 7;
const JOB = 8;
const GRAN_PERIOD = 9;
const REP_PERIOD = 10;
const MEAS_TYPES = 11;
const MEAS_TYPE = 12;
const MEAS_VALUE = 13;
const R_VALUE = 14;
const MEAS_RESULTS = 15;
const SUSPECT = 16;

function kindOf(parent: number, local: string): number {
  switch (parent) {
    case -1:
      return ROOT;
    case ROOT:
      return local === 'measData' ? MEAS_DATA : local === 'fileHeader' ? FILE_HEADER : OTHER;
    case FILE_HEADER:
      return local === 'fileSender' ? FILE_SENDER : local === 'measCollec' ? HEADER_MEAS_COLLEC : OTHER;
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
          return GRAN_PERIOD;
        case 'job':
          return JOB;
        case 'repPeriod':
          return REP_PERIOD;
      }
      return OTHER;
    case MEAS_VALUE:
      return local === 'r' ? R_VALUE : local === 'measResults' ? MEAS_RESULTS : local === 'suspect' ? SUSPECT : OTHER;
  }
  return OTHER;
}

const collects = (kind: number) => kind === R_VALUE || kind === MEAS_RESULTS || kind === MEAS_TYPE || kind === MEAS_TYPES || kind === SUSPECT;

const SPACE = 0x20;
const GREATER_THAN = 0x3e;
const SLASH = 0x2f;
const BANG = 0x21;
const QMARK = 0x3f;
const EQUALS = 0x3d;
const DOUBLE_QUOTE = 0x22;
const SINGLE_QUOTE = 0x27;

const isSpace = (code: number) => code === SPACE || code === 0x0a || code === 0x09 || code === 0x0d;
const isNameChar = (code: number) =>
  (code >= 0x61 && code <= 0x7a) ||
  (code >= 0x41 && code <= 0x5a) ||
  (code >= 0x30 && code <= 0x3a) ||
  code === 0x5f ||
  code === 0x2d ||
  code === 0x2e ||
  code >= 0x80;
const localOf = (qname: string) => {
  const i = qname.indexOf(':');
  return i === -1 ? qname : qname.slice(i + 1);
};

const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

class XmlError extends Error {
  constructor(
    message: string,
    readonly at: number,
  ) {
    super(message);
  }
}

function decodeEntities(text: string, at: number): string {
  let out = '';
  let from = 0;
  for (let i = text.indexOf('&'); i !== -1; i = text.indexOf('&', from)) {
    const semi = text.indexOf(';', i);
    if (semi === -1 || semi - i > 12) throw new XmlError(`"&" not starting an entity reference`, at + i);
    const name = text.slice(i + 1, semi);
    let char: string | undefined;
    if (name.charCodeAt(0) === 0x23 /* # */) {
      const code = name[1] === 'x' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      const digits = name[1] === 'x' ? /^#x[0-9a-fA-F]+$/ : /^#[0-9]+$/;
      if (digits.test(name) && code <= 0x10ffff) char = String.fromCodePoint(code);
    } else char = ENTITIES[name];
    if (char === undefined) throw new XmlError(`unknown entity &${name};`, at + i);
    out += text.slice(from, i) + char;
    from = semi + 1;
  }
  return out + text.slice(from);
}

type Make = (context: unknown[], ldn: unknown, suspect: unknown, values: unknown[]) => Rec;
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
  return (context, ldn, suspectValue, values) => {
    const rec: Rec = {};
    for (let i = 0; i < keys.length; i++) rec[keys[i]!] = context[i];
    rec.meas_obj_ldn = ldn;
    if (suspect) rec.suspect = suspectValue;
    for (let i = 0; i < counters.length; i++) rec[counters[i]!] = values[i];
    return rec;
  };
}

/**
 * A record constructor for one set of context fields and one sequence of counter fields: an object
 * literal with a fixed key order, so the records of a measInfo share one hidden class (JSON.stringify
 * and transforms stay on fast paths). Counter names come from the input: they enter the code only as
 * JSON string literals, and `__proto__` is never one of them (it is renamed, see fieldNames).
 */
function factoryFor(keys: string[], suspect: boolean, counters: string[]): Make {
  const signature = JSON.stringify([keys, suspect, counters]); // unambiguous whatever the names hold
  let make = factories.get(signature);
  if (!make) {
    const fields = keys.map((key, i) => `${JSON.stringify(key)}: context[${i}]`);
    fields.push('meas_obj_ldn: ldn');
    if (suspect) fields.push('suspect: suspect');
    counters.forEach((counter, i) => fields.push(`${JSON.stringify(counter)}: values[${i}]`));
    make = new Function('context', 'ldn', 'suspect', 'values', `return { ${fields.join(', ')} };`) as Make;
    if (factories.size >= MAX_FACTORIES || factoryBytes + signature.length > MAX_FACTORY_BYTES) {
      factories.clear();
      factoryBytes = 0;
    }
    factories.set(signature, make);
    factoryBytes += signature.length;
  }
  return make;
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
  return types.map((type) => {
    if (!RESERVED.has(type)) return type;
    taken ??= new Set(types);
    let field = COLLISION_PREFIX + type;
    while (RESERVED.has(field) || taken.has(field)) field = COLLISION_PREFIX + field;
    return field;
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
  private attrNames: string[] = [];
  private attrValues: string[] = [];
  private attrCount = 0;
  // text of the element being collected
  private collecting = 0;
  private text = '';
  // file and managed element context
  private file: Record<string, string | undefined> = {};
  private managedElement: Record<string, string | undefined> = {};
  // measInfo context
  private measInfo: Record<string, string | undefined> = {};
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
  private measInfoStart = 0;
  // measValue being read
  private measObjLdn: string | null = null;
  private slots: number[] = [];
  private vals: unknown[] = [];
  private suspect: boolean | undefined;
  private pAttr: string | undefined;
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
  private input = '';
  private inData = false;
  private data: Buffer = Buffer.alloc(0);
  private exact = false;
  private meta: PieceMeta = { offset: 0, final: true };
  private safe = 0;

  constructor(
    private readonly options: PmXmlOptions,
    private readonly out: DecodeOut,
  ) {}

  decode(data: Buffer, header: Buffer | undefined, piece: number) {
    this.data = data;
    this.compileBudget = data.length + COMPILE_ALLOWANCE;
    let ctx: Buffer | undefined;
    if (header && header.length) {
      const newline = header.indexOf(0x0a);
      const line = header.subarray(0, newline === -1 ? header.length : newline).toString('latin1');
      const match = new RegExp(`^${META_PREFIX} offset=(\\d+) final=([01])$`).exec(line);
      if (!match) {
        this.out.error(`PM XML piece ${piece}: unreadable piece header`, data);
        return;
      }
      this.meta = { offset: Number(match[1]), final: match[2] === '1' };
      ctx = header.subarray(newline + 1);
    } else this.meta = { offset: 0, final: true }; // a whole document
    let brokenMi: string | undefined;
    if (ctx && ctx.length) {
      this.inData = false;
      this.exact = false;
      this.input = this.options.toText(ctx);
      try {
        if (this.scan(0) !== -1) throw new XmlError('context ends inside markup', this.input.length);
      } catch (e) {
        const message = e instanceof XmlError ? e.message : String(e);
        if (this.openIndex(MEAS_INFO) === -1) {
          this.out.error(`PM XML piece ${piece}: malformed file or measData header: ${message}`, data);
          return;
        }
        brokenMi = message;
      }
    }
    this.inData = true;
    const text = this.options.toText(data);
    this.input = text;
    // Offsets in the text are byte offsets when the text is ASCII (the usual case).
    this.exact = text.length === data.length;
    // A byte-order mark is passed over (kept in the text so that byte offsets stay right).
    let pos = this.meta.offset === 0 && text.charCodeAt(0) === 0xfeff ? 1 : 0;
    this.safe = pos;
    this.measInfoStart = 0;
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
    else if (partial !== -1) this.out.error(`PM XML piece ${piece}: the piece ends inside markup (no element boundary found)`, this.raw(partial, text.length));
    this.flush();
  }

  /** Stack index of the innermost open element of kind `k`, or -1. */
  private openIndex(kind: number): number {
    for (let i = this.depth - 1; i >= 0; i--) if (this.kinds[i] === kind) return i;
    return -1;
  }

  private flush() {
    const pending = this.pending;
    for (let i = 0; i < pending.length; i++) this.out.record(pending[i]!);
    pending.length = 0;
  }

  private raw(from: number, to: number): Buffer {
    return this.exact ? this.data.subarray(from, to) : Buffer.from(this.input.slice(from, to), 'utf8');
  }

  private byteAt(i: number): number {
    return this.meta.offset + (this.exact ? i : Buffer.byteLength(this.input.slice(0, i), 'utf8'));
  }

  /** After a malformed element: skip to the end of the enclosing measInfo; -1 ends the piece. */
  private recover(e: XmlError): number {
    const text = this.input;
    const measInfoDepth = this.openIndex(MEAS_INFO);
    const where = `byte ${this.byteAt(Math.min(e.at, text.length))}`;
    this.collecting = 0;
    if (measInfoDepth === -1) {
      this.out.error(`PM XML: not well-formed at ${where}: ${e.message}`, this.raw(this.safe, text.length));
      return -1;
    }
    const id = this.measInfo.meas_info_id;
    const message = `PM XML: malformed measInfo${id !== undefined ? ` "${id}"` : ''} at ${where}: ${e.message}; its values in this piece are skipped`;
    this.pending.length = 0;
    const endTag = '</' + this.names[measInfoDepth]!;
    for (let i = text.indexOf(endTag, e.at); i !== -1; i = text.indexOf(endTag, i + 1)) {
      let j = i + endTag.length;
      while (isSpace(text.charCodeAt(j))) j++;
      if (text.charCodeAt(j) !== GREATER_THAN) continue;
      this.out.error(message, this.raw(this.measInfoStart, j + 1));
      this.depth = measInfoDepth;
      this.safe = j + 1;
      return j + 1;
    }
    this.out.error(message, this.raw(this.measInfoStart, text.length));
    this.depth = measInfoDepth + 1;
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
      const complete = this.slots.length;
      const ldn = this.measObjLdn !== null ? ` ${JSON.stringify(this.measObjLdn)}` : '';
      skipped = `1 partial element skipped (measValue${ldn} with ${complete} complete value${complete === 1 ? '' : 's'})`;
    } else {
      const count = (partial !== -1 ? 1 : 0) + (this.collecting ? 1 : 0);
      skipped = `${count} partial element${count === 1 ? '' : 's'} skipped`;
    }
    const end = this.meta.offset + this.data.length;
    const what = names.length
      ? `${this.depth} open element${this.depth === 1 ? '' : 's'} closed automatically (${names.join(' > ')})`
      : 'no measCollecFile element';
    this.out.note(`PM XML: file truncated at byte ${end}: ${what}, ${skipped}`);
    this.slots.length = 0;
    this.vals.length = 0;
    this.depth = 0;
  }

  /**
   * Reads markup from `pos` to the end of the current text. Returns -1, or the offset of markup
   * cut by the end of the text. Throws XmlError for what is not well-formed.
   */
  private scan(pos: number): number {
    const text = this.input;
    const length = text.length;
    while (pos < length) {
      const tagStart = text.indexOf('<', pos);
      if (tagStart === -1) {
        if (this.collecting) this.addTail(pos, length);
        return -1;
      }
      if (this.collecting && tagStart > pos) this.addText(pos, tagStart);
      const next = text.charCodeAt(tagStart + 1);
      if (next === SLASH) {
        const tagEnd = text.indexOf('>', tagStart + 2);
        if (tagEnd === -1) return tagStart;
        if (this.depth === 0) throw new XmlError(`end tag without a start tag`, tagStart);
        const top = this.names[this.depth - 1]!;
        if (!(tagEnd - tagStart - 2 === top.length && text.startsWith(top, tagStart + 2))) {
          const name = text.slice(tagStart + 2, tagEnd).trimEnd();
          if (name !== top) throw new XmlError(`end tag </${name}> does not match <${top}>`, tagStart);
        }
        this.end(tagStart, tagEnd + 1);
        pos = tagEnd + 1;
      } else if (next === BANG) {
        if (text.startsWith('<!--', tagStart)) {
          const commentEnd = text.indexOf('-->', tagStart + 4);
          if (commentEnd === -1) return tagStart;
          pos = commentEnd + 3;
        } else if (text.startsWith('<![CDATA[', tagStart)) {
          const cdataEnd = text.indexOf(']]>', tagStart + 9);
          if (cdataEnd === -1) return tagStart;
          if (this.collecting) this.text += text.slice(tagStart + 9, cdataEnd);
          pos = cdataEnd + 3;
        } else if (text.startsWith('<!DOCTYPE', tagStart) && this.depth === 0) {
          let doctypeEnd = text.indexOf('>', tagStart);
          const subsetStart = text.indexOf('[', tagStart);
          if (subsetStart !== -1 && (doctypeEnd === -1 || subsetStart < doctypeEnd)) {
            const subsetEnd = text.indexOf(']', subsetStart);
            doctypeEnd = subsetEnd === -1 ? -1 : text.indexOf('>', subsetEnd);
          }
          if (doctypeEnd === -1) return tagStart;
          pos = doctypeEnd + 1;
        } else if (length - tagStart < 9) return tagStart;
        else throw new XmlError(`"<!" not starting a comment or CDATA section`, tagStart);
      } else if (next === QMARK) {
        const piEnd = text.indexOf('?>', tagStart + 2);
        if (piEnd === -1) return tagStart;
        pos = piEnd + 2;
      } else {
        // Fast path for the bulk of a file, `<r p="N">value</r>` inside a measValue; anything
        // else (prefixes, entities, other quoting or spacing) takes the general path below.
        if (
          next === 0x72 &&
          text.charCodeAt(tagStart + 2) === SPACE &&
          text.charCodeAt(tagStart + 3) === 0x70 &&
          text.charCodeAt(tagStart + 4) === EQUALS &&
          text.charCodeAt(tagStart + 5) === DOUBLE_QUOTE &&
          this.kinds[this.depth - 1] === MEAS_VALUE &&
          this.depth > 0
        ) {
          const pEnd = text.indexOf('"', tagStart + 6);
          if (pEnd !== -1 && text.charCodeAt(pEnd + 1) === GREATER_THAN) {
            const valueEnd = text.indexOf('<', pEnd + 2);
            if (
              valueEnd !== -1 &&
              text.charCodeAt(valueEnd + 1) === SLASH &&
              text.charCodeAt(valueEnd + 2) === 0x72 &&
              text.charCodeAt(valueEnd + 3) === GREATER_THAN
            ) {
              const pValue = text.slice(tagStart + 6, pEnd);
              const content = text.slice(pEnd + 2, valueEnd);
              if (content.indexOf('&') === -1 && pValue.indexOf('&') === -1 && pValue.indexOf('<') === -1) {
                this.value(pValue, content, tagStart, valueEnd + 4);
                pos = valueEnd + 4;
                continue;
              }
            }
          }
        }
        const after = this.start(tagStart);
        if (after < 0) return tagStart;
        pos = after;
      }
    }
    return -1;
  }

  private addText(from: number, to: number) {
    const chunk = this.input.slice(from, to);
    this.text += chunk.indexOf('&') === -1 ? chunk : decodeEntities(chunk, from);
  }

  /** Text at the very end: in a truncated file it may stop inside an entity reference. */
  private addTail(from: number, to: number) {
    const chunk = this.input.slice(from, to);
    try {
      this.text += chunk.indexOf('&') === -1 ? chunk : decodeEntities(chunk, from);
    } catch (e) {
      if (!this.inData || !this.meta.final) throw e;
      const amp = chunk.lastIndexOf('&');
      this.text += decodeEntities(chunk.slice(0, amp), from); // the text is dropped with its measValue
    }
  }

  private attr(name: string): string | undefined {
    for (let i = 0; i < this.attrCount; i++) if (this.attrNames[i] === name) return this.attrValues[i];
    return undefined;
  }

  /** Reads the start tag at `lt`; returns the offset after it, or -1 when the text ends inside it. */
  private start(tagStart: number): number {
    const text = this.input;
    const length = text.length;
    let i = tagStart + 1;
    let qname: string;
    if (text.charCodeAt(i) === 0x72 && !isNameChar(text.charCodeAt(i + 1))) {
      qname = 'r'; // the common case, without a slice
      i++;
    } else {
      while (isNameChar(text.charCodeAt(i))) i++;
      if (i === tagStart + 1) {
        if (i >= length) return -1;
        throw new XmlError(`"<" not starting a tag`, tagStart);
      }
      if (i >= length) return -1;
      qname = text.slice(tagStart + 1, i);
    }
    let count = 0;
    let selfClosing = false;
    for (;;) {
      let code = text.charCodeAt(i);
      if (isSpace(code)) {
        do code = text.charCodeAt(++i);
        while (isSpace(code));
      } else if (code !== GREATER_THAN && code !== SLASH && i < length) throw new XmlError(`attributes of <${qname}> must be separated by blanks`, i);
      if (code === GREATER_THAN) {
        i++;
        break;
      }
      if (code === SLASH) {
        if (i + 1 >= length) return -1;
        if (text.charCodeAt(i + 1) !== GREATER_THAN) throw new XmlError(`"/" inside <${qname}>`, i);
        i += 2;
        selfClosing = true;
        break;
      }
      if (i >= length) return -1;
      const nameStart = i;
      while (isNameChar(code)) code = text.charCodeAt(++i);
      if (i === nameStart) throw new XmlError(`unexpected character "${text[i]}" in <${qname}>`, i);
      const name = text.slice(nameStart, i);
      while (isSpace(code)) code = text.charCodeAt(++i);
      if (i >= length) return -1;
      if (code !== EQUALS) throw new XmlError(`attribute ${name} of <${qname}> has no value`, i);
      code = text.charCodeAt(++i);
      while (isSpace(code)) code = text.charCodeAt(++i);
      if (i >= length) return -1;
      if (code !== DOUBLE_QUOTE && code !== SINGLE_QUOTE) throw new XmlError(`attribute ${name} of <${qname}> is not quoted`, i);
      const valueEnd = text.indexOf(code === DOUBLE_QUOTE ? '"' : "'", i + 1);
      if (valueEnd === -1) return -1;
      let value = text.slice(i + 1, valueEnd);
      if (value.indexOf('<') !== -1) throw new XmlError(`"<" in the value of attribute ${name}`, i);
      if (value.indexOf('&') !== -1) value = decodeEntities(value, i + 1);
      this.attrNames[count] = name;
      this.attrValues[count] = value;
      count++;
      i = valueEnd + 1;
    }
    this.attrCount = count;
    const parent = this.depth === 0 ? -1 : this.kinds[this.depth - 1]!;
    const kind = parent === -1 && this.sawRoot ? OTHER : kindOf(parent, qname === 'r' ? 'r' : localOf(qname));
    this.open(kind, tagStart);
    if (selfClosing) this.close(kind, tagStart, i);
    else {
      this.names[this.depth] = qname;
      this.kinds[this.depth] = kind;
      this.depth++;
    }
    return i;
  }

  private end(tagStart: number, after: number) {
    this.depth--;
    this.close(this.kinds[this.depth]!, tagStart, after);
  }

  /** A start tag of kind `k` at `lt` with its attributes read. */
  private open(kind: number, tagStart: number) {
    if (collects(kind)) {
      this.collecting = kind;
      this.text = '';
    }
    switch (kind) {
      case R_VALUE:
        this.pAttr = this.attrCount ? this.attr('p') : undefined;
        this.elStart = tagStart;
        return;
      case MEAS_VALUE:
        this.measObjLdn = this.attr('measObjLdn') ?? null;
        this.slots.length = 0;
        this.vals.length = 0;
        this.suspect = undefined;
        this.rIndex = 0;
        this.serial++;
        if (!this.ctxKeys) this.buildContext();
        if (!this.slotOf) this.buildSlots();
        return;
      case MEAS_TYPE:
        this.pAttr = this.attr('p');
        return;
      case MEAS_RESULTS:
        this.elStart = tagStart;
        return;
      case MEAS_INFO:
        this.measInfo = { meas_info_id: this.attr('measInfoId') };
        this.typeList = [];
        this.typeByP = new Map();
        this.ctxKeys = null;
        this.slotOf = null;
        this.measInfoStart = this.inData ? tagStart : 0;
        return;
      case JOB:
        this.measInfo.job_id = this.attr('jobId');
        return;
      case GRAN_PERIOD:
        this.measInfo.gran_duration = this.attr('duration');
        this.measInfo.gran_end_time = this.attr('endTime');
        return;
      case REP_PERIOD:
        this.measInfo.rep_duration = this.attr('duration');
        return;
      case MANAGED_ELEMENT:
        this.managedElement = { managed_element: this.attr('localDn'), user_label: this.attr('userLabel'), sw_version: this.attr('swVersion') };
        return;
      case MEAS_DATA:
        this.managedElement = {};
        return;
      case FILE_HEADER:
        this.file.file_format_version = this.attr('fileFormatVersion');
        this.file.vendor_name = this.attr('vendorName');
        this.file.dn_prefix = this.attr('dnPrefix');
        return;
      case FILE_SENDER:
        this.file.sender = this.attr('localDn');
        return;
      case HEADER_MEAS_COLLEC:
        this.file.begin_time = this.attr('beginTime');
        return;
      case ROOT:
        this.sawRoot = true;
        return;
    }
  }

  /** The end of an element of kind `k` (from `lt`, its end tag or self-closing start tag, to `after`). */
  private close(kind: number, tagStart: number, after: number) {
    if (kind === this.collecting) this.collecting = 0;
    switch (kind) {
      case R_VALUE:
        this.value(this.pAttr, this.text, this.elStart, after);
        return;
      case MEAS_RESULTS: {
        const content = this.text;
        this.results(content.length ? content.split(/[ \t\r\n]+/).filter(Boolean) : [], this.elStart, after);
        return;
      }
      case SUSPECT: {
        const content = this.text.trim();
        this.suspect = content === 'true' || content === '1';
        return;
      }
      case MEAS_VALUE:
        this.emitValue();
        return;
      case MEAS_TYPE: {
        const name = this.text.trim();
        if (this.pAttr !== undefined) this.typeByP.set(this.pAttr, this.typeList.length);
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
        this.managedElement = {};
        if (this.inData) this.safe = after;
        return;
    }
  }

  /** One `r` value: its counter is the measType with the same p (or at that position in measTypes). */
  private value(pValue: string | undefined, text: string, tagStart: number, after: number) {
    let typeIndex: number | undefined;
    if (pValue !== undefined) {
      typeIndex = this.typeByP.get(pValue);
      if (typeIndex === undefined) {
        const position = Number(pValue) - 1;
        if (Number.isInteger(position) && position >= 0 && position < this.typeList.length) typeIndex = position;
      }
    } else if (this.rIndex < this.typeList.length) typeIndex = this.rIndex;
    this.rIndex++;
    const measInfoId = this.measInfo.meas_info_id ?? '';
    const tag = `<r${pValue !== undefined ? ` p="${pValue}"` : ''}>`;
    if (typeIndex === undefined) {
      this.out.error(`PM XML: measInfo "${measInfoId}": ${tag} matches no measType`, this.raw(tagStart, after));
      return;
    }
    if (!this.put(typeIndex, counterValue(text, this.options.numeric))) {
      this.out.error(
        `PM XML: measInfo "${measInfoId}": ${tag} is a second value for counter "${this.typeList[typeIndex]}" in measValue ${JSON.stringify(this.measObjLdn)}; the first is kept`,
        this.raw(tagStart, after),
      );
    }
  }

  /** Adds the value of counter `i` (index in typeList) to the measValue; false if it has one already. */
  private put(typeIndex: number, value: unknown): boolean {
    const slot = this.slotOf![typeIndex]!;
    if (this.seen[slot] === this.serial) return false;
    this.seen[slot] = this.serial;
    this.slots.push(slot);
    this.vals.push(value);
    return true;
  }

  /** measResults tokens, paired with the measTypes in order. */
  private results(tokens: string[], tagStart: number, after: number) {
    const paired = Math.min(tokens.length, this.typeList.length);
    let dup = 0;
    for (let i = 0; i < paired; i++) if (!this.put(i, counterValue(tokens[i]!, this.options.numeric))) dup++;
    const measInfoId = this.measInfo.meas_info_id ?? '';
    if (tokens.length > this.typeList.length) {
      this.out.error(
        `PM XML: measInfo "${measInfoId}": ${tokens.length} values in measResults for ${this.typeList.length} measTypes; the extra ones are skipped`,
        this.raw(tagStart, after),
      );
    }
    if (dup)
      this.out.error(
        `PM XML: measInfo "${measInfoId}": measResults has ${dup} more value${dup === 1 ? '' : 's'} for counters named twice in measTypes; the first of each is kept`,
        this.raw(tagStart, after),
      );
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
      const counters = slots.map((slot) => this.fields[slot]!);
      let cost = 64;
      for (const key of this.ctxKeys!) cost += key.length + 8;
      for (const counter of counters) cost += counter.length + 8;
      if (cost <= this.compileBudget) {
        this.compileBudget -= cost;
        make = factoryFor(this.ctxKeys!, suspect, counters);
      } else make = plainMake(this.ctxKeys!, suspect, counters);
      this.lastMake = make;
      this.lastSlots = slots.slice();
      this.lastSuspect = suspect;
    }
    this.pending.push(make!(this.ctxVals, this.measObjLdn, this.suspect, this.vals));
    slots.length = 0;
    this.vals.length = 0;
  }

  /** Field names and slots of the counters of the current measInfo (see fieldNames). */
  private buildSlots() {
    const names = fieldNames(this.typeList);
    const first = new Map<string, number>();
    this.slotOf = names.map((field, i) => {
      const slot = first.get(field);
      if (slot !== undefined) return slot;
      first.set(field, i);
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
    const add = (key: string, value: unknown) => {
      if (value !== undefined) {
        keys.push(key);
        vals.push(value);
      }
    };
    const file = this.file;
    add('file_format_version', file.file_format_version);
    add('vendor_name', file.vendor_name);
    add('dn_prefix', file.dn_prefix);
    add('sender', file.sender);
    add('begin_time', file.begin_time);
    if (this.options.addManagedElement) {
      add('managed_element', this.managedElement.managed_element);
      add('user_label', this.managedElement.user_label);
      add('sw_version', this.managedElement.sw_version);
    }
    const measInfo = this.measInfo;
    add('meas_info_id', measInfo.meas_info_id);
    add('job_id', measInfo.job_id);
    if (this.options.addDuration) add('gran_period_s', measInfo.gran_duration === undefined ? undefined : durationSeconds(measInfo.gran_duration));
    add('gran_end_time', measInfo.gran_end_time);
    if (this.options.addDuration) add('rep_period_s', measInfo.rep_duration === undefined ? undefined : durationSeconds(measInfo.rep_duration));
    this.ctxKeys = keys;
    this.ctxVals = vals;
    this.lastMake = null;
  }
}
