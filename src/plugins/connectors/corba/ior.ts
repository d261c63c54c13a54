// Object references: stringified IORs (`IOR:` + the hex of a CDR encapsulation holding the type id
// and the tagged profiles; the IIOP profile, tag 0, carries version, host, port and object key) and
// corbaloc URLs (`corbaloc:iiop:host:port/key`, `corbaloc::host/key`, several addresses separated by
// commas, the key %-escaped), both turned into an ObjectRef: a type id and the addresses to try.
import { CdrError, CdrReader, CdrWriter } from './cdr.js';

export const TAG_INTERNET_IOP = 0;
export const DEFAULT_CORBALOC_PORT = 2809;

export interface IiopProfile {
  host: string;
  port: number;
  /** The object key sent in each request's TargetAddress (KeyAddr). */
  key: Buffer;
  major: number;
  minor: number;
}

export interface ObjectRef {
  /** The repository id (`IDL:Svc/Pm:1.0`); empty for corbaloc, which carries none. */
  typeId: string;
  /** IIOP profiles in the reference's order; a nil reference has none. */
  profiles: IiopProfile[];
}

export class ObjectRefError extends Error {
  override name = 'ObjectRefError';
}

/** Decodes an IOR from a CDR stream (a reply body, an encapsulation). */
export function readIor(r: CdrReader): ObjectRef {
  const typeId = r.string();
  const n = r.seqLength(8);
  const profiles: IiopProfile[] = [];
  for (let i = 0; i < n; i++) {
    const tag = r.ulong();
    const data = r.octets();
    if (tag !== TAG_INTERNET_IOP) continue; // TAG_MULTIPLE_COMPONENTS and others: not ours to use
    const p = CdrReader.encapsulation(data);
    const major = p.octet();
    const minor = p.octet();
    const host = p.string();
    const port = p.ushort();
    const key = Buffer.from(p.octets());
    // IIOP 1.1+: a sequence of tagged components follows (code sets, ORB type...); not needed here.
    profiles.push({ host, port, key, major, minor });
  }
  return { typeId, profiles };
}

/** Encodes an IOR into a CDR stream (IIOP 1.2 profiles without components). */
export function writeIor(w: CdrWriter, ref: ObjectRef): void {
  w.string(ref.typeId);
  w.ulong(ref.profiles.length);
  for (const p of ref.profiles) {
    w.ulong(TAG_INTERNET_IOP);
    w.encapsulation((e) => {
      e.octet(p.major);
      e.octet(p.minor);
      e.string(p.host);
      e.ushort(p.port);
      e.octets(p.key);
      if (p.minor >= 1) e.ulong(0);
    });
  }
}

/** `IOR:<hex>` → the reference. */
export function parseIor(text: string): ObjectRef {
  const t = text.trim();
  if (!/^IOR:/i.test(t)) throw new ObjectRefError('an IOR starts with "IOR:"');
  const hex = t.slice(4);
  if (hex.length === 0 || hex.length % 2 !== 0 || !/^[0-9a-f]+$/i.test(hex))
    throw new ObjectRefError('an IOR is "IOR:" followed by an even number of hex digits');
  try {
    const ref = readIor(CdrReader.encapsulation(Buffer.from(hex, 'hex')));
    if (ref.profiles.length === 0) throw new ObjectRefError(`the IOR (type ${ref.typeId || 'unknown'}) has no IIOP profile: nothing to connect to`);
    return ref;
  } catch (e) {
    if (e instanceof CdrError) throw new ObjectRefError(`the IOR does not decode: ${e.message}`);
    throw e;
  }
}

/** The reference as `IOR:<hex>` (little-endian encapsulation). */
export function iorString(ref: ObjectRef): string {
  const w = new CdrWriter(true);
  w.octet(1);
  writeIor(w, ref);
  return `IOR:${w.bytes().toString('hex')}`;
}

/** `corbaloc:[iiop]:[major.minor@]host[:port][,...]/key` → the reference (no type id). */
export function parseCorbaloc(text: string): ObjectRef {
  const t = text.trim();
  const m = /^corbaloc:(.*)$/i.exec(t);
  if (!m) throw new ObjectRefError('a corbaloc URL starts with "corbaloc:"');
  const rest = m[1]!;
  const slash = rest.indexOf('/');
  if (slash < 0) throw new ObjectRefError('a corbaloc URL needs "/<object key>" after the address (e.g. corbaloc:iiop:127.0.0.1:2809/NameService)');
  const addrs = rest.slice(0, slash);
  const key = unescapeKey(rest.slice(slash + 1));
  const profiles: IiopProfile[] = [];
  for (const a of addrs.split(',')) {
    let addr: string;
    if (/^iiop:/i.test(a)) addr = a.slice(5);
    else if (a.startsWith(':')) addr = a.slice(1);
    else if (/^rir:/i.test(a)) throw new ObjectRefError('corbaloc:rir: names an initial reference of a local ORB; use corbaloc:iiop:host:port/key');
    else throw new ObjectRefError(`unsupported corbaloc address '${a}': only iiop (corbaloc:iiop:host:port/key) is supported`);
    let major = 1;
    let minor = 0;
    const at = addr.indexOf('@');
    if (at >= 0) {
      const v = /^(\d+)\.(\d+)$/.exec(addr.slice(0, at));
      if (!v) throw new ObjectRefError(`bad IIOP version '${addr.slice(0, at)}' in corbaloc address '${a}'`);
      major = Number(v[1]);
      minor = Number(v[2]);
      addr = addr.slice(at + 1);
    }
    let host: string;
    let portText: string | undefined;
    if (addr.startsWith('[')) {
      const close = addr.indexOf(']');
      if (close < 0) throw new ObjectRefError(`unclosed IPv6 address in '${a}'`);
      host = addr.slice(1, close);
      const after = addr.slice(close + 1);
      if (after && !after.startsWith(':')) throw new ObjectRefError(`bad corbaloc address '${a}'`);
      portText = after ? after.slice(1) : undefined;
    } else {
      const colon = addr.lastIndexOf(':');
      host = colon >= 0 ? addr.slice(0, colon) : addr;
      portText = colon >= 0 ? addr.slice(colon + 1) : undefined;
    }
    if (!host) throw new ObjectRefError(`corbaloc address '${a}' has no host`);
    let port = DEFAULT_CORBALOC_PORT;
    if (portText !== undefined && portText !== '') {
      if (!/^\d+$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535)
        throw new ObjectRefError(`bad port '${portText}' in corbaloc address '${a}'`);
      port = Number(portText);
    }
    profiles.push({ host, port, key, major, minor });
  }
  return { typeId: '', profiles };
}

function unescapeKey(s: string): Buffer {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '%') {
      const h = s.slice(i + 1, i + 3);
      if (!/^[0-9a-f]{2}$/i.test(h)) throw new ObjectRefError(`bad %-escape '%${h}' in the corbaloc object key`);
      out.push(parseInt(h, 16));
      i += 2;
    } else out.push(...Buffer.from(c, 'utf8'));
  }
  return Buffer.from(out);
}

/** An IOR or a corbaloc URL. */
export function parseObjectUrl(text: string): ObjectRef {
  const t = text.trim();
  if (/^IOR:/i.test(t)) return parseIor(t);
  if (/^corbaloc:/i.test(t)) return parseCorbaloc(t);
  throw new ObjectRefError('an object reference is an IOR ("IOR:...") or a corbaloc URL ("corbaloc:iiop:host:port/key")');
}

/** host:port of the first profile, for messages. */
export const whereOf = (ref: ObjectRef) =>
  ref.profiles[0] ? `${ref.profiles[0].host.includes(':') ? `[${ref.profiles[0].host}]` : ref.profiles[0].host}:${ref.profiles[0].port}` : '(nil reference)';
