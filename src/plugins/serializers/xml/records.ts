// Builds records from XML with saxes (a conforming, non-validating parser: any well-formedness
// error throws). The mapping, documented in docs/formats/xml-msgpack.md:
//   attributes -> `@name` fields (namespace declarations dropped); child elements -> fields, a
//   repeated child -> a list; an element with only text -> the text ('' when empty or only
//   whitespace); text beside child elements or attributes -> `#text` (whitespace-only runs dropped);
//   names keep their prefix and have `_xHHHH_` escapes decoded.
import { SaxesParser, type SaxesTagPlain } from 'saxes';
import type { Rec } from '../../types.js';
import { setField } from '../../common/record.js';
import { decodeName } from './names.js';

const WS = /^[ \t\r\n]*$/;
/** Only white space (or empty); most values start with a visible character, so the regex is rarely run. */
const blank = (s: string) => s.length === 0 || (s.charCodeAt(0) <= 32 && WS.test(s));

interface Frame {
  /** Attributes and children so far; null while the element is a plain text leaf. */
  obj: Rec | null;
  /** The text run since the last child element. */
  seg: string;
  /** Text runs beside children that are not whitespace only. */
  texts: string;
}

function addField(o: Rec, key: string, value: unknown) {
  const old = o[key];
  // Values are never undefined, so undefined means new (an inherited name like toString is checked).
  if (old === undefined || !Object.hasOwn(o, key)) setField(o, key, value);
  else if (Array.isArray(old)) old.push(value);
  else setField(o, key, [old, value]);
}

function openFrame(tag: SaxesTagPlain): Frame {
  let obj: Rec | null = null;
  for (const k in tag.attributes) {
    if (k === 'xmlns' || k.startsWith('xmlns:')) continue;
    setField((obj ??= {}), '@' + decodeName(k), tag.attributes[k]);
  }
  return { obj, seg: '', texts: '' };
}

function closeFrame(f: Frame): unknown {
  if (!f.obj) return blank(f.seg) ? '' : f.seg;
  if (!blank(f.seg)) f.texts += f.seg;
  if (f.texts) setField(f.obj, '#text', f.texts);
  return f.obj;
}

export interface RecordsResult {
  records: Rec[];
  /** The input ended inside an element below the root (a record cut off): not complete. */
  open: boolean;
  /** The root has children that are not records (they are skipped). */
  other: boolean;
}

/**
 * Records of `text`: in mode `document` the record elements under its root (or the root itself
 * when it is named `recordName` and not `rootName`); in mode `record` the text is one record
 * element. The input may stop before the root's end tag (a piece of a large document). Throws on
 * malformed XML and on elements nested deeper than `maxDepth`.
 */
export function parseRecords(
  text: string,
  recordName: string,
  rootName: string,
  mode: 'document' | 'record',
  position = false,
  maxDepth = Infinity,
): RecordsResult {
  const p = new SaxesParser({ position });
  const records: Rec[] = [];
  const frames: Frame[] = [];
  let depth = 0;
  let recDepth = 2;
  let other = false;
  p.on('opentag', (tag) => {
    // Records nest as deeply as their elements, and later steps walk them recursively.
    if (++depth > maxDepth)
      throw new Error(`elements nested deeper than ${maxDepth} (SVC_DECODE_MAX_DEPTH): flatten the data at its source, or raise the setting`);
    if (depth === 1) recDepth = mode === 'record' || (tag.name === recordName && tag.name !== rootName) ? 1 : 2;
    if (frames.length === 0) {
      if (depth !== recDepth || tag.name !== recordName) {
        if (depth === 2 && recDepth === 2) other = true;
        return;
      }
    } else {
      const parent = frames[frames.length - 1]!;
      parent.obj ??= {};
      if (parent.seg) {
        if (!blank(parent.seg)) parent.texts += parent.seg;
        parent.seg = '';
      }
    }
    frames.push(openFrame(tag as SaxesTagPlain));
  });
  const onText = (t: string) => {
    if (frames.length) frames[frames.length - 1]!.seg += t;
  };
  p.on('text', onText);
  p.on('cdata', onText);
  p.on('closetag', (tag) => {
    depth--;
    if (frames.length === 0) return;
    const value = closeFrame(frames.pop()!);
    if (frames.length === 0) records.push(typeof value === 'string' ? (value === '' ? {} : { '#text': value }) : (value as Rec));
    else addField(frames[frames.length - 1]!.obj!, decodeName(tag.name), value);
  });
  p.write(text);
  if (mode === 'record') p.close();
  return { records, open: frames.length > 0 || depth > 1, other };
}
