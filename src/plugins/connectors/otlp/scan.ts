// The one-pass path of OTLP metrics: an ExportMetricsServiceRequest read once from its bytes,
// checking every bound of walk.ts (lengths within the bytes that follow, wire types, message and
// AnyValue nesting, UTF-8, the output estimate) while it builds the records decode.ts would build
// from the same bytes, without protobufjs message objects and without a second walk
// (bench otlp-ingest, docs/benchmarks.md).
//
// It takes the requests every OTLP encoder writes: gauges and sums of number points. Anything else
// (histograms, exponential histograms, summaries, a metric without a name, a singular message or
// oneof set twice, an over-long varint, any malformed or oversized body) makes it give up with
// `undefined`, and the request takes the general path (walk.ts, then decode.ts), which decides what
// it is and says why: this path never refuses a body itself, so every refusal and its wording stay
// the general path's. test/connectors/otlp-scan.test.ts holds both paths to the same records, byte
// for byte, and the fuzz target `otlp` compares them on every input.
import { isUtf8 } from 'node:buffer';
import { RESERVED, type Layout } from './decode.js';
import { EXPANSION, MAX_ANY_DEPTH, MAX_DEPTH, RECORD_OVERHEAD, type WalkResult } from './walk.js';
import type { Rec } from '../../types.js';

/** Thrown (one instance) when the request needs the general path. */
const GIVE_UP = new Error('otlp scan: the general path decides');
const giveUp = (): never => {
  throw GIVE_UP;
};

const TEMPORALITY = ['unspecified', 'delta', 'cumulative'];
const TWO32 = 4294967296;
const reserved = RESERVED.metrics;

// The state of the request being read (one at a time: nothing here awaits).
/** Node's Buffer text readers without the encoding lookup of toString (what protobufjs calls too). */
type TextBuffer = Buffer & { utf8Slice(s: number, e: number): string; latin1Slice(s: number, e: number): string; base64Slice(s: number, e: number): string };
const EMPTY = Buffer.alloc(0) as TextBuffer;
let buf: TextBuffer = EMPTY;
let pos = 0;
let maxOutput = 0;
let estimate = 0;
let nested = false;
let out: Rec[] = [];

/** A varint of at most 5 bytes (every tag, length and 32-bit value of a well-formed request). */
function varint(end: number): number {
  if (pos >= end) giveUp();
  let b = buf[pos++]!;
  if (b < 0x80) return b;
  let v = b & 0x7f;
  let mul = 128;
  for (let i = 1; i < 5; i++) {
    if (pos >= end) giveUp();
    b = buf[pos++]!;
    v += (b & 0x7f) * mul;
    if (b < 0x80) return v;
    mul *= 128;
  }
  // protobufjs reads a longer 32-bit varint its own way: the general path keeps its reading.
  return giveUp();
}

/** A length-delimited field's length, checked against what is left of its message; returns its end. */
function lengthEnd(end: number): number {
  const len = varint(end);
  if (len > end - pos) giveUp();
  return pos + len;
}

// An int64 varint as protobufjs reads it (LongBits): two unsigned 32-bit words.
let lo = 0;
let hi = 0;
function varint64(end: number) {
  lo = 0;
  hi = 0;
  for (let i = 0; i < 10; i++) {
    if (pos >= end) giveUp();
    const b = buf[pos++]!;
    if (i < 4) lo = (lo | ((b & 0x7f) << (i * 7))) >>> 0;
    else if (i === 4) {
      lo = (lo | ((b & 0x7f) << 28)) >>> 0;
      hi = (hi | ((b & 0x7f) >> 4)) >>> 0;
    } else hi = (hi | ((b & 0x7f) << ((i - 5) * 7 + 3))) >>> 0;
    if (b < 0x80) return;
  }
  giveUp();
}
function fixed64(end: number) {
  if (end - pos < 8) giveUp();
  const b = buf;
  const p = pos;
  lo = (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)) >>> 0;
  hi = (b[p + 4]! | (b[p + 5]! << 8) | (b[p + 6]! << 16) | (b[p + 7]! << 24)) >>> 0;
  pos += 8;
}
function double(end: number): number {
  if (end - pos < 8) giveUp();
  const v = buf.readDoubleLE(pos);
  pos += 8;
  return v;
}

/** A signed int64 (lo, hi) as decode.ts's int() writes it: a number when exact, else decimal text. */
function int64Value(): number | string {
  const n = (hi | 0) * TWO32 + lo;
  return Number.isSafeInteger(n) ? n : BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)).toString();
}

/**
 * Skips a field this path does not read. A field of the schema (`known`: a bit per field number)
 * that came with another wire type, a group, or a field number out of range: the general path.
 */
function skip(tag: number, end: number, known: number) {
  const id = Math.floor(tag / 8);
  if (id === 0 || id > 536870911 || (id < 32 && (known >>> id) & 1)) giveUp();
  switch (tag & 7) {
    case 0:
      for (let i = 0; ; i++) {
        if (i === 10 || pos >= end) giveUp();
        if (buf[pos++]! < 0x80) break;
      }
      return;
    case 1:
      if (end - pos < 8) giveUp();
      pos += 8;
      return;
    case 5:
      if (end - pos < 4) giveUp();
      pos += 4;
      return;
    case 2:
      pos = lengthEnd(end);
      return;
    default:
      giveUp();
  }
}

/** Text of [s, e), which must be UTF-8 (as walk.ts checks every string field). */
function text(s: number, e: number): string {
  for (let i = s; i < e; i++) {
    if (buf[i]! >= 0x80) {
      if (!isUtf8(buf.subarray(s, e))) giveUp();
      return buf.utf8Slice(s, e);
    }
  }
  return buf.latin1Slice(s, e);
}
function stringField(end: number): string {
  const e = lengthEnd(end);
  const t = text(pos, e);
  pos = e;
  return t;
}

// The key of a point's attribute, by its place among the point's attributes: the points of a
// metric mostly repeat their keys in the same order, so the key's bytes are compared with the
// previous point's and its text (and its name in the record) taken again when they match.
const keyAt: number[] = [];
const keyLen: number[] = [];
const keyText: string[] = [];
const keyField: string[] = [];

/**
 * A KeyValue in [pos, end) at message depth `depth`, inside `anyDepth` AnyValues: its key, its name
 * in a flat record, its value. `slot`: its place among a point's attributes (-1 elsewhere).
 */
let kvKey = '';
let kvField = '';
let kvValue: unknown = null;
function keyValue(end: number, depth: number, slot: number, anyDepth: number) {
  if (depth > MAX_DEPTH) giveUp();
  let ks = -1;
  let ke = -1;
  let hasValue = false;
  kvValue = null;
  while (pos < end) {
    const tag = varint(end);
    if (tag === 0x0a) {
      if (ks >= 0) text(ks, ke); // an earlier key is checked too (protobufjs keeps the last)
      ke = lengthEnd(end);
      ks = pos;
      pos = ke;
    } else if (tag === 0x12) {
      if (hasValue) giveUp(); // protobufjs merges the two
      hasValue = true;
      const e = lengthEnd(end);
      kvValue = anyValue(e, depth + 1, anyDepth + 1);
      pos = e;
    } else skip(tag, end, 0b110);
  }
  if (ks < 0) {
    kvKey = '';
    kvField = fieldName('');
    return;
  }
  const len = ke - ks;
  if (slot >= 0 && keyLen[slot] === len) {
    const at = keyAt[slot]!;
    let same = true;
    for (let i = 0; i < len; i++)
      if (buf[at + i] !== buf[ks + i]) {
        same = false;
        break;
      }
    if (same) {
      kvKey = keyText[slot]!;
      kvField = keyField[slot]!;
      return;
    }
  }
  kvKey = text(ks, ke);
  kvField = fieldName(kvKey);
  if (slot >= 0) {
    keyAt[slot] = ks;
    keyLen[slot] = len;
    keyText[slot] = kvKey;
    keyField[slot] = kvField;
  }
}

/** A point attribute's name in a flat record (decode.ts addAttributes). */
const fieldName = (k: string) =>
  reserved.has(k) || k.startsWith('resource.') || k.startsWith('scope.') || k.startsWith('attributes.') ? `attributes.${k}` : k;

/** An AnyValue in [pos, end) as decode.ts's anyValue() makes it; `depth` its message depth, `anyDepth` its AnyValue depth. */
function anyValue(end: number, depth: number, anyDepth: number): unknown {
  if (depth > MAX_DEPTH || anyDepth > MAX_ANY_DEPTH) giveUp();
  let v: unknown = null;
  let set = 0;
  while (pos < end) {
    const tag = varint(end);
    switch (tag) {
      case 0x0a:
        v = stringField(end);
        break;
      case 0x10:
        v = varint(end) % TWO32 !== 0;
        break;
      case 0x18:
        varint64(end);
        v = int64Value();
        break;
      case 0x21:
        v = double(end);
        break;
      case 0x2a: {
        const e = lengthEnd(end);
        v = arrayValue(e, depth + 1, anyDepth);
        pos = e;
        break;
      }
      case 0x32: {
        const e = lengthEnd(end);
        v = kvList(e, depth + 1, anyDepth);
        pos = e;
        break;
      }
      case 0x3a: {
        const e = lengthEnd(end);
        v = buf.base64Slice(pos, e);
        pos = e;
        break;
      }
      default:
        skip(tag, end, 0b11111110);
        continue; // not a member of the oneof
    }
    set++;
  }
  // Two members of the oneof (the last wins in protobufjs, two messages merge): the general path.
  if (set > 1) giveUp();
  return v;
}

function arrayValue(end: number, depth: number, anyDepth: number): unknown[] {
  if (depth > MAX_DEPTH) giveUp();
  const values: unknown[] = [];
  while (pos < end) {
    const tag = varint(end);
    if (tag === 0x0a) {
      const e = lengthEnd(end);
      values.push(anyValue(e, depth + 1, anyDepth + 1));
      pos = e;
    } else skip(tag, end, 0b10);
  }
  return values;
}

/** A KeyValueList as an object, as decode.ts's attrs(). */
function kvList(end: number, depth: number, anyDepth: number): Record<string, unknown> {
  if (depth > MAX_DEPTH) giveUp();
  const o: Record<string, unknown> = {};
  while (pos < end) {
    const tag = varint(end);
    if (tag === 0x0a) {
      const e = lengthEnd(end);
      keyValue(e, depth + 1, -1, anyDepth);
      o[kvKey] = kvValue;
      pos = e;
    } else skip(tag, end, 0b10);
  }
  return o;
}

/** A resource's or scope's attribute. */
interface Attribute {
  key: string;
  value: unknown;
}

/** An InstrumentationScope read whole. */
interface Context {
  name: string;
  version: string;
  attributes: Attribute[];
}
function resource(end: number): Attribute[] {
  // Resource: attributes (1), dropped_attributes_count (2); depth 3.
  const attributes: Attribute[] = [];
  while (pos < end) {
    const tag = varint(end);
    if (tag === 0x0a) {
      const e = lengthEnd(end);
      keyValue(e, 4, -1, 0);
      attributes.push({ key: kvKey, value: kvValue });
      pos = e;
    } else if (tag === 0x10) varint(end);
    else skip(tag, end, 0b110);
  }
  return attributes;
}
function scope(end: number): Context {
  // InstrumentationScope: name (1), version (2), attributes (3), dropped_attributes_count (4); depth 4.
  const c: Context = { name: '', version: '', attributes: [] };
  while (pos < end) {
    const tag = varint(end);
    if (tag === 0x0a) c.name = stringField(end);
    else if (tag === 0x12) c.version = stringField(end);
    else if (tag === 0x1a) {
      const e = lengthEnd(end);
      keyValue(e, 5, -1, 0);
      c.attributes.push({ key: kvKey, value: kvValue });
      pos = e;
    } else if (tag === 0x20) varint(end);
    else skip(tag, end, 0b11110);
  }
  return c;
}

/** The fields a resource and a scope add to each of their records (decode.ts context()). */
function context(res: Attribute[], sc: Context | undefined): Rec {
  const o: Rec = {};
  if (nested) {
    const r: Record<string, unknown> = {};
    for (const a of res) r[a.key] = a.value;
    o.resource = r;
    const s: Rec = {};
    if (sc?.name) s.name = sc.name;
    if (sc?.version) s.version = sc.version;
    if (sc?.attributes.length) {
      const at: Record<string, unknown> = {};
      for (const a of sc.attributes) at[a.key] = a.value;
      s.attributes = at;
    }
    o.scope = s;
    return o;
  }
  for (const a of res) o[`resource.${a.key}`] = a.value;
  if (sc?.name) o['scope.name'] = sc.name;
  if (sc?.version) o['scope.version'] = sc.version;
  if (sc) for (const a of sc.attributes) o[`scope.attributes.${a.key}`] = a.value;
  return o;
}

// The last time converted, for the next point (the points of a request mostly share theirs).
let timeLo = 0;
let timeHi = 0;
let timeText = '0';
let timeIso: string | undefined;
let startLo = 0;
let startHi = 0;
let startText = '0';
const decimal = (l: number, h: number) => ((BigInt(h) << 32n) | BigInt(l)).toString();
function setTime(l: number, h: number) {
  timeLo = l;
  timeHi = h;
  timeText = decimal(l, h);
  if (l === 0 && h === 0) timeIso = undefined;
  else {
    const d = new Date(Math.floor((h * TWO32 + l) / 1e6));
    timeIso = Number.isNaN(d.getTime()) ? undefined : d.toISOString();
  }
}

// A point's attributes, gathered before the record is built (its fields come first in it).
const attrField: string[] = [];
const attrValue: unknown[] = [];

/** A NumberDataPoint in [pos, end) (depth 6) -> one record. `above`: the own bytes of the containers holding it. */
function numberPoint(end: number, above: number, head: Rec, ctx: Rec) {
  // walk.ts' estimate, point by point, so a body that would exceed it stops before its records are built.
  estimate += RECORD_OVERHEAD + EXPANSION * (end - pos) + EXPANSION * above;
  if (estimate > maxOutput) giveUp();
  let tLo = 0;
  let tHi = 0;
  let sLo = 0;
  let sHi = 0;
  let flags = 0;
  let kind = 0;
  let dbl = 0;
  let iLo = 0;
  let iHi = 0;
  let n = 0;
  while (pos < end) {
    const tag = varint(end);
    switch (tag) {
      case 0x3a: {
        const e = lengthEnd(end);
        keyValue(e, 7, n, 0);
        attrField[n] = nested ? kvKey : kvField;
        attrValue[n++] = kvValue;
        pos = e;
        break;
      }
      case 0x19:
        fixed64(end);
        tLo = lo;
        tHi = hi;
        break;
      case 0x11:
        fixed64(end);
        sLo = lo;
        sHi = hi;
        break;
      case 0x21:
        dbl = double(end);
        kind = 1;
        break;
      case 0x31:
        fixed64(end);
        iLo = lo;
        iHi = hi;
        kind = 2;
        break;
      case 0x40:
        flags = varint(end) % TWO32;
        break;
      case 0x2a:
        exemplar(lengthEnd(end));
        break;
      default:
        skip(tag, end, 0b111111100);
    }
  }
  if (tLo !== timeLo || tHi !== timeHi) setTime(tLo, tHi);
  const hasStart = sLo !== 0 || sHi !== 0;
  if (hasStart && (sLo !== startLo || sHi !== startHi)) {
    startLo = sLo;
    startHi = sHi;
    startText = decimal(sLo, sHi);
  }
  let value: unknown = null;
  if (kind === 1) value = dbl;
  else if (kind === 2) {
    lo = iLo;
    hi = iHi;
    value = int64Value();
  }
  const has = (timeIso !== undefined ? 1 : 0) | (hasStart ? 2 : 0) | (flags ? 4 : 0);
  // The previous point's record copied when this one has the same fields in the same order (its
  // values then set in the order it was built in): fewer objects and steps per point than anew.
  const copy = !nested && shape !== undefined && has === shapeHas && sameFields(n);
  const r: Rec = copy ? { ...shape } : { ...head };
  if (has & 1) r.timestamp = timeIso;
  r.time_unix_nano = timeText;
  if (has & 2) r.start_time_unix_nano = startText;
  if (has & 4) r.flags = flags;
  r.value = value;
  if (nested) {
    const a: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) a[attrField[i]!] = attrValue[i];
    r.attributes = a;
  } else for (let i = 0; i < n; i++) r[attrField[i]!] = attrValue[i];
  if (!copy) {
    Object.assign(r, ctx);
    if (!nested) {
      shape = r;
      shapeHas = has;
      shapeFields.length = n;
      for (let i = 0; i < n; i++) shapeFields[i] = attrField[i]!;
    }
  }
  attrValue.fill(null, 0, n);
  out.push(r);
}

// The first flat record of the current metric's shape (scan.ts builds the others as copies of it):
// its optional point fields (`has` bits: timestamp, start time, flags) and its attributes' field
// names, in order. Reset for each metric (its head and its scope's fields are in the record).
let shape: Rec | undefined;
let shapeHas = 0;
const shapeFields: string[] = [];
function sameFields(n: number): boolean {
  if (n !== shapeFields.length) return false;
  for (let i = 0; i < n; i++) if (attrField[i] !== shapeFields[i]) return false;
  return true;
}

/** An Exemplar (depth 7): read for its bounds only (the records do not carry exemplars). */
function exemplar(end: number) {
  while (pos < end) {
    const tag = varint(end);
    if (tag === 0x3a) {
      const e = lengthEnd(end);
      keyValue(e, 8, -1, 0);
      pos = e;
    } else if (tag === 0x11 || tag === 0x19 || tag === 0x31) fixed64(end);
    else if (tag === 0x22 || tag === 0x2a) pos = lengthEnd(end);
    else skip(tag, end, 0b11111100);
  }
}

/** A Metric in [pos, end) (depth 4). */
function metric(end: number, above: number, ctx: Rec) {
  // First its own fields (they may come after its data), then its data.
  let name = '';
  let description = '';
  let unit = '';
  let data = 0;
  let dataStart = 0;
  let dataEnd = 0;
  let own = 0;
  while (pos < end) {
    const fieldStart = pos;
    const tag = varint(end);
    if (tag === 0x2a || tag === 0x3a || tag === 0x4a || tag === 0x52 || tag === 0x5a) {
      if (data) giveUp(); // a second data field: the general path takes the first present
      data = tag >>> 3;
      dataEnd = lengthEnd(end);
      dataStart = pos;
      pos = dataEnd;
      continue;
    }
    if (tag === 0x0a) name = stringField(end);
    else if (tag === 0x12) description = stringField(end);
    else if (tag === 0x1a) unit = stringField(end);
    else if (tag === 0x62) {
      const e = lengthEnd(end);
      keyValue(e, 5, -1, 0);
      pos = e;
    } else skip(tag, end, 0b1111010101110);
    own += pos - fieldStart;
  }
  if (!data) return;
  // Histograms and summaries, and the refusal of a metric without a name: the general path.
  if ((data !== 5 && data !== 7) || !name) giveUp();
  const head: Rec = { signal: 'metrics', name };
  if (description) head.description = description;
  if (unit) head.unit = unit;
  head.type = data === 5 ? 'gauge' : 'sum';
  // Gauge (1: points) or Sum (1: points, 2: aggregation_temporality, 3: is_monotonic), depth 5.
  pos = dataStart;
  let dataOwn = 0;
  let temporality = 0;
  let monotonic = false;
  while (pos < dataEnd) {
    const fieldStart = pos;
    const tag = varint(dataEnd);
    if (tag === 0x0a) {
      pos = lengthEnd(dataEnd);
      continue;
    }
    if (data === 7 && tag === 0x10) temporality = (varint(dataEnd) % TWO32) | 0;
    else if (data === 7 && tag === 0x18) monotonic = varint(dataEnd) % TWO32 !== 0;
    else skip(tag, dataEnd, data === 7 ? 0b1110 : 0b10);
    dataOwn += pos - fieldStart;
  }
  if (data === 7) {
    head.temporality = TEMPORALITY[temporality] ?? 'unspecified';
    head.monotonic = monotonic;
  }
  const pointAbove = above + own + dataOwn;
  shape = undefined;
  pos = dataStart;
  while (pos < dataEnd) {
    const tag = varint(dataEnd);
    if (tag === 0x0a) {
      const e = lengthEnd(dataEnd);
      numberPoint(e, pointAbove, head, ctx);
      pos = e;
    } else skip(tag, dataEnd, 0);
  }
  pos = end;
}

/**
 * The first pass over a ResourceMetrics or ScopeMetrics in [pos, end): its field 1 (the resource or
 * the scope, which its children need, wherever it stands) read by `head`, field 3 (the schema URL)
 * checked, the children (field 2) stepped over. `own` is the bytes of its own fields, for the
 * output estimate; `start` where the children are read from in the second pass (eachChild).
 */
function ownFields<H>(end: number, head: (end: number) => H): { head: H | undefined; own: number; start: number } {
  const start = pos;
  let value: H | undefined;
  let seen = false;
  let own = 0;
  while (pos < end) {
    const fieldStart = pos;
    const tag = varint(end);
    if (tag === 0x12) {
      pos = lengthEnd(end);
      continue;
    }
    if (tag === 0x0a) {
      if (seen) giveUp(); // protobufjs merges the two
      seen = true;
      const e = lengthEnd(end);
      value = head(e);
      pos = e;
    } else if (tag === 0x1a) stringField(end);
    else skip(tag, end, 0b1110);
    own += pos - fieldStart;
  }
  return { head: value, own, start };
}

/** The second pass: each child (field 2) of the message in [start, end), read by `child` up to its end. */
function eachChild(start: number, end: number, child: (end: number) => void) {
  pos = start;
  while (pos < end) {
    const tag = varint(end);
    if (tag === 0x12) {
      const e = lengthEnd(end);
      child(e);
      pos = e;
    } else skip(tag, end, 0);
  }
}

/** A ScopeMetrics in [pos, end) (depth 3). */
function scopeMetrics(end: number, above: number, res: Attribute[]) {
  const { head: sc, own, start } = ownFields(end, scope);
  const ctx = context(res, sc);
  eachChild(start, end, (e) => metric(e, above + own, ctx));
}

/** A ResourceMetrics in [pos, end) (depth 2). */
function resourceMetrics(end: number, above: number) {
  const { head: res, own, start } = ownFields(end, resource);
  eachChild(start, end, (e) => scopeMetrics(e, above + own, res ?? []));
}

export interface Scanned {
  records: Rec[];
  /** What walk.ts finds in the same body (none refused on this path). */
  walk: WalkResult;
}

/**
 * The records of an ExportMetricsServiceRequest (protobuf) in one pass, or undefined when the
 * request takes the general path (walk.ts, then decode.ts): see the head of this file.
 */
export function scanMetrics(body: Uint8Array, maxOutputBytes: number, layout: Layout): Scanned | undefined {
  buf = (Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.length)) as TextBuffer;
  maxOutput = maxOutputBytes;
  nested = layout === 'nested';
  estimate = 0;
  out = [];
  keyLen.length = 0;
  // Times are cached by value; a new request may hold any, so start from "none" (0 is converted too).
  setTime(0, 0);
  startLo = startHi = 0;
  startText = '0';
  const end = buf.length;
  try {
    // The request's own bytes (fields other than resource_metrics) first: they count in every record.
    pos = 0;
    let own = 0;
    while (pos < end) {
      const fieldStart = pos;
      const tag = varint(end);
      if (tag === 0x0a) pos = lengthEnd(end);
      else {
        skip(tag, end, 0b10);
        own += pos - fieldStart;
      }
    }
    pos = 0;
    while (pos < end) {
      const tag = varint(end);
      if (tag === 0x0a) {
        const e = lengthEnd(end);
        resourceMetrics(e, own);
        pos = e;
      } else skip(tag, end, 0b10);
    }
    const records = out;
    return { records, walk: { records: records.length, refused: 0, reason: '', estimate } };
  } catch (e) {
    if (e === GIVE_UP) return undefined;
    throw e;
  } finally {
    out = [];
    buf = EMPTY;
    shape = undefined;
  }
}
