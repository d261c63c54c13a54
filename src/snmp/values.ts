// SNMP value typing: the wire types, coercion of user input (API, YAML, overrides) into them with
// errors that say what does not fit, and the JSON form of decoded values.
import { isIPv4 } from 'node:net';
import { Tag } from './ber.js';
import { exactNumber } from '../util/exact-number.js';

/** An error in user input (a value, OID, port or option); statusCode makes the API answer 4xx. */
export class SnmpInputError extends Error {
  override name = 'SnmpInputError';
  constructor(
    message: string,
    readonly statusCode = 400,
  ) {
    super(message);
  }
}

/** The agent did not answer in time, after all retries. */
export class SnmpTimeoutError extends Error {
  override name = 'SnmpTimeoutError';
  readonly statusCode = 504;
}

/** The agent answered with an error status, or a report PDU (v3 USM errors). */
export class SnmpResponseError extends Error {
  override name = 'SnmpResponseError';
  readonly statusCode = 502;
  constructor(
    message: string,
    readonly errorStatus = 0,
    readonly errorIndex = 0,
  ) {
    super(message);
  }
}

export type SnmpType =
  | 'Integer32'
  | 'OctetString'
  | 'ObjectIdentifier'
  | 'IpAddress'
  | 'Counter32'
  | 'Gauge32'
  | 'TimeTicks'
  | 'Opaque'
  | 'Counter64'
  | 'Null'
  | 'NoSuchObject'
  | 'NoSuchInstance'
  | 'EndOfMibView';

/**
 * Decoded values: Integer32/Counter32/Gauge32/TimeTicks number, OctetString/Opaque Buffer,
 * ObjectIdentifier and IpAddress dotted strings, Counter64 bigint, the rest null.
 */
export type SnmpValue = number | bigint | string | Buffer | null;

export interface VarBind {
  oid: string;
  type: SnmpType;
  value: SnmpValue;
}

export const TYPE_TAG: Record<SnmpType, number> = {
  Integer32: Tag.Integer,
  OctetString: Tag.OctetString,
  ObjectIdentifier: Tag.Oid,
  IpAddress: Tag.IpAddress,
  Counter32: Tag.Counter32,
  Gauge32: Tag.Gauge32,
  TimeTicks: Tag.TimeTicks,
  Opaque: Tag.Opaque,
  Counter64: Tag.Counter64,
  Null: Tag.Null,
  NoSuchObject: Tag.NoSuchObject,
  NoSuchInstance: Tag.NoSuchInstance,
  EndOfMibView: Tag.EndOfMibView,
};

export const TAG_TYPE: Record<number, SnmpType> = Object.fromEntries(Object.entries(TYPE_TAG).map(([k, v]) => [v, k as SnmpType]));

// Names users write: SMI names, net-snmp's snmpset letters, common aliases (compared lower-case).
const ALIASES: Record<string, SnmpType> = {
  integer: 'Integer32',
  integer32: 'Integer32',
  int: 'Integer32',
  i: 'Integer32',
  octetstring: 'OctetString',
  'octet string': 'OctetString',
  string: 'OctetString',
  s: 'OctetString',
  displaystring: 'OctetString',
  hex: 'OctetString',
  hexstring: 'OctetString',
  x: 'OctetString',
  objectidentifier: 'ObjectIdentifier',
  'object identifier': 'ObjectIdentifier',
  oid: 'ObjectIdentifier',
  o: 'ObjectIdentifier',
  ipaddress: 'IpAddress',
  ip: 'IpAddress',
  a: 'IpAddress',
  counter32: 'Counter32',
  counter: 'Counter32',
  c: 'Counter32',
  gauge32: 'Gauge32',
  gauge: 'Gauge32',
  unsigned32: 'Gauge32',
  unsigned: 'Gauge32',
  u: 'Gauge32',
  timeticks: 'TimeTicks',
  t: 'TimeTicks',
  opaque: 'Opaque',
  counter64: 'Counter64',
  C: 'Counter64',
  null: 'Null',
  n: 'Null',
  nosuchobject: 'NoSuchObject',
  nosuchinstance: 'NoSuchInstance',
  endofmibview: 'EndOfMibView',
};

const HEX_NAMES = new Set(['hex', 'hexstring', 'x']);

/** The canonical type for a user-given type name; throws SnmpInputError listing the accepted names. */
export function parseType(name: string): SnmpType {
  const t = name === 'C' ? 'Counter64' : ALIASES[name.trim().toLowerCase()];
  if (!t) throw new SnmpInputError(`unknown SNMP type "${name}"; use one of ${Object.keys(TYPE_TAG).join(', ')} (or hex for an OctetString given in hex)`);
  return t;
}

const OID_RE = /^\.?(0|1|2)(\.(0|[1-9]\d{0,9}))*$/;

/** Normalises a numeric OID (leading dot allowed); throws SnmpInputError when it is not one. */
export function parseOid(text: string, what = 'OID', allowOneArc = false): string {
  const s = String(text).trim();
  if (!OID_RE.test(s)) throw new SnmpInputError(`${what} "${text}" is not a numeric OID (like 1.3.6.1.2.1.1.1.0)`);
  const oid = s.startsWith('.') ? s.slice(1) : s;
  if (!oid.includes('.') && !allowOneArc) throw new SnmpInputError(`${what} "${text}" needs at least two arcs`);
  const parts = oid.split('.').map(Number);
  if (parts.some((p) => p > 0xffffffff)) throw new SnmpInputError(`${what} "${text}" has an arc above 4294967295`);
  if (parts[0]! < 2 && parts[1]! >= 40) throw new SnmpInputError(`${what} "${text}": the second arc must be below 40 under 0 and 1`);
  if (parts.length > 128) throw new SnmpInputError(`${what} "${text}" has more than 128 arcs`);
  return oid;
}

export const oidParts = (oid: string): number[] => oid.split('.').map(Number);

/** Lexicographic OID order on arcs (the order of GETNEXT). */
export function compareOids(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

export function isUnder(oid: string, root: string): boolean {
  const n = root.length;
  if (oid.length <= n || oid.charCodeAt(n) !== 46) return false;
  // From the end: OIDs of one walk differ in their last arcs (faster than startsWith for short strings).
  for (let i = n - 1; i >= 0; i--) if (oid.charCodeAt(i) !== root.charCodeAt(i)) return false;
  return true;
}

const U32 = 0xffffffff;
const U64 = (1n << 64n) - 1n;

function integerOf(value: unknown, type: SnmpType, oid: string): number | bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) throw new SnmpInputError(`${type} value for ${oid} must be an integer, got ${value}`);
    return value;
  }
  if (typeof value === 'string' && /^-?\d+$/.test(value.trim())) return type === 'Counter64' ? BigInt(value.trim()) : Number(value.trim());
  throw new SnmpInputError(`${type} value for ${oid} must be an integer, got ${JSON.stringify(value)}`);
}

function hexBytes(text: string, oid: string): Buffer {
  const h = text.replace(/^0x/i, '').replace(/[\s:-]/g, '');
  if (!/^([0-9a-fA-F]{2})*$/.test(h)) throw new SnmpInputError(`hex value for ${oid} is not an even number of hex digits: ${JSON.stringify(text)}`);
  return Buffer.from(h, 'hex');
}

/**
 * A varbind from user input: `type` is any accepted type name, `value` a JSON value.
 * Counter64 takes a number, bigint or decimal string; OctetString takes text, or hex with type
 * `hex`/`x` or a `{hex: "..."}` object; Opaque takes hex. Throws SnmpInputError when it does not fit.
 */
export function makeVarBind(oidText: string, typeName: string, value: unknown): VarBind {
  const oid = parseOid(oidText);
  const type = parseType(typeName);
  const isHex = HEX_NAMES.has(typeName.trim().toLowerCase());
  return { oid, type, value: coerceValue(type, value, oid, isHex) };
}

export function coerceValue(type: SnmpType, value: unknown, oid = 'the varbind', hex = false): SnmpValue {
  switch (type) {
    case 'Integer32': {
      const v = integerOf(value, type, oid);
      if (v < -0x80000000 || v > 0x7fffffff) throw new SnmpInputError(`Integer32 value for ${oid} is out of range -2147483648..2147483647: ${v}`);
      return Number(v);
    }
    case 'Counter32':
    case 'Gauge32':
    case 'TimeTicks': {
      const v = integerOf(value, type, oid);
      if (v < 0 || v > U32) throw new SnmpInputError(`${type} value for ${oid} is out of range 0..4294967295: ${v}`);
      return Number(v);
    }
    case 'Counter64': {
      const v = BigInt(integerOf(value, type, oid));
      if (v < 0n || v > U64) throw new SnmpInputError(`Counter64 value for ${oid} is out of range 0..18446744073709551615: ${v}`);
      return v;
    }
    case 'OctetString':
    case 'Opaque': {
      if (Buffer.isBuffer(value)) return value;
      if (value && typeof value === 'object' && typeof (value as { hex?: unknown }).hex === 'string') return hexBytes((value as { hex: string }).hex, oid);
      if (typeof value !== 'string') throw new SnmpInputError(`${type} value for ${oid} must be a string, got ${JSON.stringify(value)}`);
      const buf = hex || type === 'Opaque' ? hexBytes(value, oid) : Buffer.from(value, 'utf8');
      if (buf.length > 65535) throw new SnmpInputError(`${type} value for ${oid} is longer than 65535 bytes`);
      return buf;
    }
    case 'ObjectIdentifier':
      if (typeof value !== 'string') throw new SnmpInputError(`ObjectIdentifier value for ${oid} must be a numeric OID string`);
      return parseOid(value, `ObjectIdentifier value for ${oid}`);
    case 'IpAddress':
      if (typeof value !== 'string' || !isIPv4(value))
        throw new SnmpInputError(`IpAddress value for ${oid} must be a dotted IPv4 address, got ${JSON.stringify(value)}`);
      return value;
    default:
      if (value !== null && value !== undefined && value !== '') throw new SnmpInputError(`${type} for ${oid} takes no value`);
      return null;
  }
}

const PRINTABLE = /^[\t\n\r\x20-\x7e]*$/;

/** True when the bytes are printable text worth showing as such (what snmpwalk calls STRING). */
export function isPrintable(buf: Buffer): boolean {
  return PRINTABLE.test(buf.toString('latin1'));
}

/**
 * JSON form of a decoded value ("parsed"): OctetString as text when printable, else hex with a
 * colon-free lower-case string; Counter64 as a number while exact, else a decimal string.
 */
export function jsonValue(vb: VarBind): string | number | null {
  const v = vb.value;
  if (Buffer.isBuffer(v)) return vb.type === 'OctetString' && isPrintable(v) ? v.toString('utf8') : v.toString('hex');
  if (typeof v === 'bigint') return exactNumber(v);
  return v;
}

/** Whether an OctetString would be shown as hex by jsonValue (so a reader knows how to read it back). */
export const isHexShown = (vb: VarBind): boolean => Buffer.isBuffer(vb.value) && !(vb.type === 'OctetString' && isPrintable(vb.value));
