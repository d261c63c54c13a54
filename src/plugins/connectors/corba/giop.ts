// GIOP 1.2 framing (CORBA 3 part 2 ch. 9.4): the 12-byte header ('GIOP', version, flags with bit 0
// the byte order and bit 1 "more fragments follow", message type, body size), Request and
// LocateRequest headers with a KeyAddr TargetAddress, Reply and LocateReply headers, CancelRequest,
// CloseConnection and MessageError; Fragment messages reassembled into the message they continue.
// Every offset is relative to the first byte of the message: that is what CDR alignment counts from,
// and in GIOP 1.2 a request or reply body starts on an 8-byte boundary.
import { CdrError, CdrReader, CdrWriter } from './cdr.js';

export const MSG = {
  Request: 0,
  Reply: 1,
  CancelRequest: 2,
  LocateRequest: 3,
  LocateReply: 4,
  CloseConnection: 5,
  MessageError: 6,
  Fragment: 7,
} as const;

export const REPLY_STATUS = [
  'NO_EXCEPTION',
  'USER_EXCEPTION',
  'SYSTEM_EXCEPTION',
  'LOCATION_FORWARD',
  'LOCATION_FORWARD_PERM',
  'NEEDS_ADDRESSING_MODE',
] as const;
export const LOCATE_STATUS = [
  'UNKNOWN_OBJECT',
  'OBJECT_HERE',
  'OBJECT_FORWARD',
  'OBJECT_FORWARD_PERM',
  'LOC_SYSTEM_EXCEPTION',
  'LOC_NEEDS_ADDRESSING_MODE',
] as const;

export const HEADER_SIZE = 12;
const FLAG_LITTLE_ENDIAN = 1;
const FLAG_FRAGMENT = 2;
/** The CodeSets service context: char data in UTF-8 (0x05010001), wchar in UTF-16 (0x00010109). */
export const SC_CODE_SETS = 1;
export const UTF8 = 0x05010001;
export const UTF16 = 0x00010109;

export class GiopError extends Error {
  override name = 'GiopError';
}

export interface ServiceContext {
  id: number;
  data: Buffer;
}

function header(w: CdrWriter, type: number) {
  w.raw(Buffer.from('GIOP'));
  w.octet(1);
  w.octet(2);
  w.octet(w.littleEndian ? FLAG_LITTLE_ENDIAN : 0);
  w.octet(type);
  w.ulong(0); // size, patched when the message is complete
}

function finish(w: CdrWriter): Buffer {
  w.patchUlong(8, w.pos - HEADER_SIZE);
  return Buffer.from(w.bytes());
}

function targetKey(w: CdrWriter, key: Uint8Array) {
  w.short(0); // TargetAddress discriminant KeyAddr
  w.octets(key);
}

function serviceContexts(w: CdrWriter, list: ServiceContext[]) {
  w.ulong(list.length);
  for (const sc of list) {
    w.ulong(sc.id);
    w.octets(sc.data);
  }
}

/** The CodeSets service context announcing UTF-8 strings (sent on a connection's first request). */
export function codeSetsContext(littleEndian = true): ServiceContext {
  const w = new CdrWriter(littleEndian);
  w.encapsulation((e) => {
    e.ulong(UTF8);
    e.ulong(UTF16);
  });
  // encapsulation() wrote it as sequence<octet>: drop the length for the raw context data.
  return { id: SC_CODE_SETS, data: Buffer.from(w.bytes().subarray(4)) };
}

export interface RequestOptions {
  requestId: number;
  key: Uint8Array;
  operation: string;
  /** false: a oneway request (response_flags 0). */
  responseExpected?: boolean;
  contexts?: ServiceContext[];
  /** Writes the in and inout arguments, in order; alignment counts from the message start. */
  body?: (w: CdrWriter) => void;
  littleEndian?: boolean;
}

/** A Request 1.2: RequestHeader_1_2 then, when there are arguments, the body aligned to 8. */
export function encodeRequest(o: RequestOptions): Buffer {
  const w = new CdrWriter(o.littleEndian ?? true, 512);
  header(w, MSG.Request);
  w.ulong(o.requestId);
  w.octet(o.responseExpected === false ? 0 : 3); // SyncScope WITH_TARGET: a reply expected
  w.raw(Buffer.alloc(3)); // reserved
  targetKey(w, o.key);
  w.string(o.operation);
  serviceContexts(w, o.contexts ?? []);
  if (o.body) {
    const before = w.pos;
    w.align(8);
    const aligned = w.pos;
    o.body(w);
    if (w.pos === aligned) w.pos = before; // no arguments: no padding either
  }
  return finish(w);
}

export function encodeLocateRequest(requestId: number, key: Uint8Array, littleEndian = true): Buffer {
  const w = new CdrWriter(littleEndian, 128);
  header(w, MSG.LocateRequest);
  w.ulong(requestId);
  targetKey(w, key);
  return finish(w);
}

export function encodeCancelRequest(requestId: number, littleEndian = true): Buffer {
  const w = new CdrWriter(littleEndian, 16);
  header(w, MSG.CancelRequest);
  w.ulong(requestId);
  return finish(w);
}

export function encodeSimple(type: typeof MSG.CloseConnection | typeof MSG.MessageError, littleEndian = true): Buffer {
  const w = new CdrWriter(littleEndian, 12);
  header(w, type);
  return finish(w);
}

/** What the 12-byte header says. */
export interface Header {
  major: number;
  minor: number;
  littleEndian: boolean;
  more: boolean;
  type: number;
  size: number;
}

export function readHeader(b: Buffer): Header {
  if (b.length < HEADER_SIZE) throw new GiopError('short GIOP header');
  if (b.toString('latin1', 0, 4) !== 'GIOP')
    throw new GiopError(`not a GIOP message (starts with ${JSON.stringify(b.toString('latin1', 0, 4))}): is this port an IIOP endpoint?`);
  const flags = b[6]!;
  const littleEndian = (flags & FLAG_LITTLE_ENDIAN) !== 0;
  return {
    major: b[4]!,
    minor: b[5]!,
    littleEndian,
    more: (flags & FLAG_FRAGMENT) !== 0,
    type: b[7]!,
    size: littleEndian ? b.readUInt32LE(8) : b.readUInt32BE(8),
  };
}

/** A reader over a whole message, positioned after the header. */
export function messageReader(msg: Buffer): CdrReader {
  const h = readHeader(msg);
  const r = new CdrReader(msg, h.littleEndian);
  r.pos = HEADER_SIZE;
  return r;
}

/**
 * Cuts a TCP byte stream into GIOP messages and joins fragments: a message with the "more
 * fragments" flag is held until the Fragment messages with its request id complete it (GIOP 1.2
 * fragments after the first are a multiple of 8 bytes, so the joined body keeps its alignment).
 */
export class GiopFramer {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private partial = new Map<number, Buffer[]>();
  /** Bytes held in `partial`: fragments count against maxMessage together, not each on its own. */
  private partialBytes = 0;

  /** `maxMessage`: SVC_CORBA_MAX_MESSAGE_BYTES in the client; a header claiming more fails at once. */
  constructor(private readonly maxMessage = 64 << 20) {}

  /** Complete messages in `chunk` and what came before it (header included, fragments joined). */
  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const out: Buffer[] = [];
    for (;;) {
      if (this.buffered < HEADER_SIZE) break;
      const head = this.peek(HEADER_SIZE);
      const h = readHeader(head);
      if (h.major !== 1) throw new GiopError(`unsupported GIOP version ${h.major}.${h.minor}`);
      if (h.size > this.maxMessage) throw new GiopError(`GIOP message of ${h.size} bytes is larger than the ${this.maxMessage} allowed`);
      const total = HEADER_SIZE + h.size;
      if (this.buffered < total) break;
      const msg = this.take(total);
      const whole = this.assemble(msg, h);
      if (whole) out.push(whole);
    }
    return out;
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length >= n) return this.chunks[0]!.subarray(0, n);
    const all = Buffer.concat(this.chunks);
    this.chunks = [all];
    return all.subarray(0, n);
  }

  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const msg = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length ? [rest] : [];
    this.buffered = rest.length;
    return msg;
  }

  /** Counts `n` more bytes of unfinished messages; a peer that never finishes them cannot fill memory. */
  private hold(n: number) {
    this.partialBytes += n;
    if (this.partialBytes > this.maxMessage)
      throw new GiopError(
        `fragmented GIOP messages of more than ${this.maxMessage} bytes in all are pending: the peer sends fragments that never complete a message`,
      );
  }

  private assemble(msg: Buffer, h: Header): Buffer | undefined {
    if (h.type === MSG.Fragment) {
      if (h.minor < 2) throw new GiopError('GIOP 1.1 fragments are not supported (no request id to match them)');
      const r = messageReader(msg);
      const id = r.ulong();
      const parts = this.partial.get(id);
      if (!parts) return undefined; // a fragment of a request we cancelled or never had
      this.hold(msg.length - HEADER_SIZE - 4);
      parts.push(msg.subarray(HEADER_SIZE + 4));
      if (h.more) return undefined;
      this.partial.delete(id);
      for (const p of parts) this.partialBytes -= p.length;
      const joined = Buffer.concat(parts);
      joined[6] = joined[6]! & ~FLAG_FRAGMENT;
      if (joined[6]! & FLAG_LITTLE_ENDIAN) joined.writeUInt32LE(joined.length - HEADER_SIZE, 8);
      else joined.writeUInt32BE(joined.length - HEADER_SIZE, 8);
      return joined;
    }
    if (h.more) {
      if (h.minor < 2) throw new GiopError('fragmented GIOP 1.0/1.1 messages are not supported');
      const id = messageReader(msg).ulong(); // every 1.2 message that can be fragmented starts with its request id
      const earlier = this.partial.get(id);
      if (earlier) for (const p of earlier) this.partialBytes -= p.length;
      this.hold(msg.length);
      this.partial.set(id, [Buffer.from(msg)]);
      return undefined;
    }
    return msg;
  }
}

export interface Reply {
  requestId: number;
  status: (typeof REPLY_STATUS)[number] | `status ${number}`;
  contexts: ServiceContext[];
  /** The reply body (results, an exception, a forwarded IOR), aligned from the message start. */
  body: CdrReader;
}

function readContexts(r: CdrReader): ServiceContext[] {
  const n = r.seqLength(8);
  const out: ServiceContext[] = [];
  for (let i = 0; i < n; i++) out.push({ id: r.ulong(), data: r.octets() });
  return out;
}

/** A Reply: its header, and a reader at the start of its body. */
export function decodeReply(msg: Buffer): Reply {
  const h = readHeader(msg);
  const r = messageReader(msg);
  try {
    if (h.minor >= 2) {
      const requestId = r.ulong();
      const s = r.ulong();
      const contexts = readContexts(r);
      if (r.remaining > 0) r.align(8);
      return { requestId, status: REPLY_STATUS[s] ?? `status ${s}`, contexts, body: r };
    }
    // GIOP 1.0/1.1: service contexts first, then id and status, body not realigned.
    const contexts = readContexts(r);
    const requestId = r.ulong();
    const s = r.ulong();
    return { requestId, status: REPLY_STATUS[s] ?? `status ${s}`, contexts, body: r };
  } catch (e) {
    if (e instanceof CdrError) throw new GiopError(`malformed Reply: ${e.message}`);
    throw e;
  }
}

export interface LocateReply {
  requestId: number;
  status: (typeof LOCATE_STATUS)[number] | `status ${number}`;
  body: CdrReader;
}

export function decodeLocateReply(msg: Buffer): LocateReply {
  const h = readHeader(msg);
  const r = messageReader(msg);
  try {
    const requestId = r.ulong();
    const s = r.ulong();
    if (h.minor >= 2 && r.remaining > 0) r.align(8);
    return { requestId, status: LOCATE_STATUS[s] ?? `status ${s}`, body: r };
  } catch (e) {
    if (e instanceof CdrError) throw new GiopError(`malformed LocateReply: ${e.message}`);
    throw e;
  }
}

/** The request id of a Reply or LocateReply (to match it before decoding the rest). */
export function replyRequestId(msg: Buffer): number {
  const h = readHeader(msg);
  const r = messageReader(msg);
  if (h.type === MSG.Reply && h.minor < 2) readContexts(r);
  return r.ulong();
}

export interface SystemException {
  id: string;
  minor: number;
  completed: 'YES' | 'NO' | 'MAYBE';
}

export function readSystemException(r: CdrReader): SystemException {
  const id = r.string();
  const minor = r.ulong();
  const c = r.ulong();
  return { id, minor, completed: (['YES', 'NO', 'MAYBE'] as const)[c] ?? 'MAYBE' };
}
