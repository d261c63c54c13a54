import { Type } from '@sinclair/typebox';
import { ConfigError } from '../../../core/errors.js';
import { defineSerializer, type DecodeOut, type LintIssue, type Rec, type SplitOptions, type SplitPiece } from '../../types.js';
import { decoderFor, lintEncoding } from '../../common/text.js';
import { codesFor, unitsOf, XmlScanner, type Codes, type ScanEvent } from './scan.js';
import { encodeName, escapersFor } from './names.js';
import { parseRecords } from './records.js';
import { readSetting } from '../../../settings.js';
import { PendingBytes } from '../../../util/pending-bytes.js';

const config = Type.Object(
  {
    root_element: Type.String({
      default: 'records',
      minLength: 1,
      description: 'Name of the document element written around the records. Any root is accepted on read; a root named like record_element is one record.',
    }),
    record_element: Type.String({
      default: 'record',
      minLength: 1,
      description: 'Name of the elements under the root that are records (prefix included, as written).',
    }),
    encoding: Type.String({
      default: 'utf-8',
      description:
        'Character encoding of the bytes, whatever the XML declaration says: any WHATWG label to read (utf-8, latin1, utf-16le, windows-1252, ...); utf-8, latin1 (iso-8859-1) or ascii to write.',
    }),
  },
  { additionalProperties: false },
);

type Config = { root_element: string; record_element: string; encoding: string };

/** XML 1.0 Name (prefix allowed), for the two element parameters. */
const XML_NAME =
  /^[:A-Z_a-z\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u02FF\u0370-\u037D\u037F-\u1FFF\u200C-\u200D\u2070-\u218F\u2C00-\u2FEF\u3001-\uD7FF\uF900-\uFDCF\uFDF0-\uFFFD\u{10000}-\u{EFFFF}][-.0-9:A-Z_a-z\u00B7\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u037D\u037F-\u1FFF\u200C-\u200D\u203F-\u2040\u2070-\u218F\u2C00-\u2FEF\u3001-\uD7FF\uF900-\uFDCF\uFDF0-\uFFFD\u{10000}-\u{EFFFF}]*$/u;

/** Encodings the writer supports: ASCII-compatible, because the sink writes head and tail as UTF-8 text. */
const WRITABLE: Record<string, { enc: BufferEncoding; label: string; maxChar: number }> = {
  'utf-8': { enc: 'utf8', label: 'UTF-8', maxChar: 0x10ffff },
  utf8: { enc: 'utf8', label: 'UTF-8', maxChar: 0x10ffff },
  latin1: { enc: 'latin1', label: 'ISO-8859-1', maxChar: 0xff },
  'iso-8859-1': { enc: 'latin1', label: 'ISO-8859-1', maxChar: 0xff },
  ascii: { enc: 'latin1', label: 'US-ASCII', maxChar: 0x7f },
  'us-ascii': { enc: 'latin1', label: 'US-ASCII', maxChar: 0x7f },
};

function lint(c: Config): LintIssue[] {
  const issues = lintEncoding(c.encoding);
  for (const f of ['root_element', 'record_element'] as const) {
    if (!XML_NAME.test(c[f])) issues.push({ path: f, message: `"${c[f]}" is not an XML element name` });
  }
  return issues;
}

interface Span {
  start: number;
  end: number;
  problem?: string;
}

function makeDecoder(c: Config) {
  const codes: Codes = codesFor(c.encoding);
  const w = codes.width;
  const toText = decoderFor(c.encoding);
  const scanner = () => new XmlScanner(codes, c.record_element, c.root_element);
  const maxDepth = readSetting('DECODE_MAX_DEPTH');

  /** One record element on its own (the slow path, for a piece that did not parse as a whole). */
  function one(text: string): { rec?: Rec; error?: string } {
    try {
      return { rec: parseRecords(text, c.record_element, c.root_element, 'record', true, maxDepth).records[0] ?? {} };
    } catch (e) {
      return { error: (e as Error).message.replace(/^(?:undefined:)?(\d+):(\d+): /, 'line $1, column $2 of the record: ') };
    }
  }

  async function* split(stream: AsyncIterable<Buffer>, opts: SplitOptions): AsyncGenerator<SplitPiece> {
    const sc = scanner();
    const held = new PendingBytes();
    let pending: Buffer = held.bytes; // held.bytes, kept up to date
    let header: Buffer | undefined;
    let pieceStart = 0; // unit offset in pending where the next piece starts
    let records = 0;
    let content = false; // the piece holds a record or another element
    const pieces: SplitPiece[] = [];
    const cut = (end: number) => {
      if (content) pieces.push({ data: pending.subarray(pieceStart * w, end * w), header });
      pieceStart = end;
      records = 0;
      content = false;
    };
    // Bytes outside any root that are not XML go out as a piece of their own (the decoder reports them).
    const junk = (end: number) => {
      if (end > pieceStart) pieces.push({ data: pending.subarray(pieceStart * w, end * w) });
      pieceStart = end;
      sc.stray = false;
    };
    const drain = (final: boolean) => {
      const u = unitsOf(pending, w);
      for (let ev: ScanEvent | null; (ev = sc.next(u, final)); ) {
        if (ev.kind === 'root') {
          if (sc.stray) junk(ev.start);
          // Every piece of this document gets the root's start tag; what precedes it is prolog.
          header = ev.isRecord ? undefined : Buffer.from(pending.subarray(ev.start * w, ev.end * w));
          pieceStart = ev.isRecord ? ev.start : ev.end;
        } else if (ev.kind === 'rootEnd') {
          cut(ev.end);
          header = undefined;
        } else {
          content = true;
          if (ev.kind === 'record') records++;
          if ((ev.end - pieceStart) * w >= opts.targetBytes || (opts.maxRecords !== undefined && records >= opts.maxRecords)) cut(ev.end);
        }
      }
      if (final) {
        if (content) cut(u.length);
        if (sc.stray) junk(u.length);
        return;
      }
      if (sc.stray && sc.depth === 0 && (sc.pos - pieceStart) * w >= opts.targetBytes) junk(sc.pos);
      if (pieceStart > 0) {
        held.consume(pieceStart * w);
        pending = held.bytes;
        sc.rebase(pieceStart);
        pieceStart = 0;
      }
      // The token at sc.pos needs more input, and is scanned again from its start: once worth it.
      held.incomplete(sc.pos * w);
    };
    for await (const b of stream) {
      held.push(b);
      pending = held.bytes;
      if (!held.ready) continue;
      drain(false);
      yield* pieces.splice(0);
    }
    drain(true);
    yield* pieces.splice(0);
  }

  function decode({ data, header, firstLine }: { data: Buffer; header?: Buffer; firstLine: number }, out: DecodeOut) {
    const buf = header ? Buffer.concat([header, data]) : data;
    let failure = 'the input ends inside an element';
    // Usually the piece parses in one go; else record by record, so one broken record costs only itself.
    try {
      const text = toText(buf);
      const r = parseRecords(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text, c.record_element, c.root_element, 'document', false, maxDepth);
      if (!r.open) {
        if (r.other) out.note(`xml: elements under the root other than <${c.record_element}> are ignored`);
        for (const rec of r.records) out.record(rec);
        return;
      }
    } catch (e) {
      failure = (e as Error).message; // malformed somewhere: find the records and parse each alone
    }
    const skip = header ? header.length : 0;
    const sc = scanner();
    const u = unitsOf(buf, w);
    const spans: Span[] = [];
    let other = false;
    for (let ev: ScanEvent | null; (ev = sc.next(u, true)); ) {
      if (ev.kind === 'record') spans.push(ev);
      else if (ev.kind === 'other') other = true;
    }
    if (other) out.note(`xml: elements under the root other than <${c.record_element}> are ignored`);
    // Not XML at all (or no record in it to blame): the whole piece is the error.
    if (spans.length === 0) out.error(`XML piece ${firstLine}: ${failure.replace(/^(?:undefined:)?(\d+):(\d+): /, 'line $1, column $2: ')}`, data);
    for (const s of spans) {
      const raw = buf.subarray(s.start * w, s.end * w);
      const where = `XML piece ${firstLine}, byte ${s.start * w - skip}`;
      if (s.problem) {
        out.error(`${where}: ${s.problem}`, raw);
        continue;
      }
      const r = one(toText(raw));
      if (r.rec) out.record(r.rec);
      else out.error(`${where}: ${r.error}`, raw);
    }
  }

  return { framing: { kind: 'split' as const, split }, decode };
}

function makeEncoder(c: Config) {
  const w = WRITABLE[c.encoding.toLowerCase().replace(/_/g, '-')];
  if (!w) throw new ConfigError(`xml serializer: cannot write encoding "${c.encoding}"; for output use one of ${Object.keys(WRITABLE).join(', ')}`);
  // The sink writes head and tail as UTF-8: in another encoding the root's name must be ASCII.
  if (w.enc !== 'utf8' && !/^[\x21-\x7e]+$/.test(c.root_element))
    throw new ConfigError(`xml serializer: root_element "${c.root_element}" must be ASCII to write ${w.label}`);
  const esc = escapersFor(w.maxChar);
  const names = new Map<string, string>();
  const nameOf = (k: string): string => {
    let n = names.get(k);
    if (n === undefined) {
      if (names.size > 10_000) names.clear();
      names.set(k, (n = encodeName(k, w.maxChar)));
    }
    return n;
  };
  // Written as configured (lint checked they are XML names); a prefix gets no xmlns declaration.
  const record = c.record_element;
  const decl = `<?xml version="1.0" encoding="${w.label}"?>\n`;

  const scalar = (v: unknown): string => {
    if (typeof v === 'string') return v;
    if (v instanceof Date) return Number.isNaN(v.getTime()) ? '' : v.toISOString();
    if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
    return String(v);
  };
  const isObject = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date) && !(v instanceof Uint8Array);
  const isScalar = (v: unknown) => v !== null && v !== undefined && typeof v !== 'object';

  /** `<name attrs>children</name>` for an object; attributes from `@` fields, text from `#text`. */
  const element = (name: string, v: unknown): string => {
    if (v === null || v === undefined) return `<${name}/>`;
    if (Array.isArray(v)) {
      let s = '';
      // An array inside an array has no element of its own: written as JSON text.
      for (const item of v) s += Array.isArray(item) ? `<${name}>${esc.text(JSON.stringify(item))}</${name}>` : element(name, item);
      return s;
    }
    if (!isObject(v)) return `<${name}>${esc.text(scalar(v))}</${name}>`;
    let attrs = '';
    let body = '';
    for (const k in v) {
      const x = v[k];
      if (x === undefined) continue;
      if (k.charCodeAt(0) === 64 /* @ */ && isScalar(x)) {
        const a = k.slice(1);
        if (a !== '' && nameOf(a) === a && !a.startsWith('xmlns')) {
          attrs += ` ${a}="${esc.attr(scalar(x))}"`;
          continue;
        }
      } else if (k === '#text' && isScalar(x)) {
        body += esc.text(scalar(x));
        continue;
      }
      body += element(nameOf(k), x);
    }
    return body ? `<${name}${attrs}>${body}</${name}>` : `<${name}${attrs}/>`;
  };

  const recordXml = (r: Rec) => element(record, r) + '\n';
  return {
    extension: 'xml',
    head: () => `${decl}<${c.root_element}>\n`,
    separator: '',
    tail: `</${c.root_element}>\n`,
    body: (records: Rec[]) => {
      let s = '';
      for (const r of records) s += recordXml(r);
      return Buffer.from(s, w.enc);
    },
    // A message is a document of its own whose root is the record (read back as one record).
    one: (r: Rec) => Buffer.from(decl + element(record, r), w.enc),
  };
}

export default defineSerializer({
  key: 'xml',
  summary: 'XML documents: each record element under the root is a record; child elements become fields, attributes `@name`.',
  direction: 'both',
  config,
  lint,
  examples: [
    {
      title: 'Records with attributes, nested and repeated elements',
      yaml: 'type: xml',
      worked: {
        input:
          '<?xml version="1.0" encoding="UTF-8"?>\n<records>\n' +
          '  <record id="1"><host>rtr1</host><if><index>1</index><descr>Gi0/1 &amp; uplink</descr></if></record>\n' +
          '  <record id="2"><host>rtr2</host><tag>core</tag><tag>edge</tag><note/></record>\n</records>\n',
        records: [
          { '@id': '1', host: 'rtr1', if: { index: '1', descr: 'Gi0/1 & uplink' } },
          { '@id': '2', host: 'rtr2', tag: ['core', 'edge'], note: '' },
        ],
      },
    },
    {
      title: 'Other element names, Latin-1 file',
      yaml: 'type: xml\nroot_element: inventory\nrecord_element: device\nencoding: latin1',
    },
  ],
  decoder: (c) => makeDecoder(c),
  encoder: (c) => makeEncoder(c),
});
