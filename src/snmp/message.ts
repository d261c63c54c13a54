// SNMP messages: v1/v2c community messages and v3 messages with USM (RFC 3412/3414), the PDUs of
// RFC 3416 and the v1 Trap-PDU of RFC 1157. Decoding is two-step for v3 so a receiver can look up
// the user and engine from the header before authenticating and decrypting.
import { BerError, BerReader, BerWriter, Tag } from './ber.js';
import { computeMac, decrypt, encrypt, type LocalUser } from './usm.js';
import { oidParts, TAG_TYPE, TYPE_TAG, type VarBind } from './values.js';

export const PduType = {
  Get: 0xa0,
  GetNext: 0xa1,
  Response: 0xa2,
  Set: 0xa3,
  TrapV1: 0xa4,
  GetBulk: 0xa5,
  Inform: 0xa6,
  TrapV2: 0xa7,
  Report: 0xa8,
} as const;

export const Version = { v1: 0, v2c: 1, v3: 3 } as const;
export type SnmpVersion = '1' | '2c' | '3';
export const versionName = (v: number): SnmpVersion => (v === 0 ? '1' : v === 1 ? '2c' : '3');

export const ErrorStatus = [
  'noError',
  'tooBig',
  'noSuchName',
  'badValue',
  'readOnly',
  'genErr',
  'noAccess',
  'wrongType',
  'wrongLength',
  'wrongEncoding',
  'wrongValue',
  'noCreation',
  'inconsistentValue',
  'resourceUnavailable',
  'commitFailed',
  'undoFailed',
  'authorizationError',
  'notWritable',
  'inconsistentName',
];

export interface Pdu {
  type: number;
  requestId: number;
  /** For GetBulk: non-repeaters. */
  errorStatus: number;
  /** For GetBulk: max-repetitions. */
  errorIndex: number;
  varbinds: VarBind[];
}

export interface TrapV1Fields {
  enterprise: string;
  agentAddr: string;
  genericTrap: number;
  specificTrap: number;
  timestamp: number;
}

export type AnyPdu = Pdu | (Pdu & TrapV1Fields);

/** A PDU whose VarBindList content is already BER (the agent's pre-encoded rows, see agent-table.ts). */
export interface EncodedPdu {
  type: number;
  requestId: number;
  errorStatus: number;
  errorIndex: number;
  body: Uint8Array;
}

export const USM_STATS = {
  unsupportedSecLevels: '1.3.6.1.6.3.15.1.1.1.0',
  notInTimeWindows: '1.3.6.1.6.3.15.1.1.2.0',
  unknownUserNames: '1.3.6.1.6.3.15.1.1.3.0',
  unknownEngineIDs: '1.3.6.1.6.3.15.1.1.4.0',
  wrongDigests: '1.3.6.1.6.3.15.1.1.5.0',
  decryptionErrors: '1.3.6.1.6.3.15.1.1.6.0',
};

// ---------- encoding ----------

export function writeValue(w: BerWriter, vb: VarBind): void {
  writeTypedValue(w, vb.type, vb.value);
}

/** writeValue without a VarBind object (the agent encodes computed values straight from its rows). */
export function writeTypedValue(w: BerWriter, type: VarBind['type'], v: VarBind['value']): void {
  const tag = TYPE_TAG[type];
  switch (type) {
    case 'Integer32':
      return w.int(v as number);
    case 'Counter32':
    case 'Gauge32':
    case 'TimeTicks':
    case 'Counter64':
      return w.uint(v as number | bigint, tag);
    case 'OctetString':
    case 'Opaque':
      return w.octets(v as Buffer, tag);
    case 'ObjectIdentifier':
      return w.oidText(v as string);
    case 'IpAddress': {
      const p = (v as string).split('.');
      return w.octets(Buffer.from([+p[0]!, +p[1]!, +p[2]!, +p[3]!]), Tag.IpAddress);
    }
    default:
      return w.nul(tag);
  }
}

/** The raw form of a value: its type and its BER content octets in hex (lossless). */
export function rawValue(vb: VarBind): { type: VarBind['type']; hex: string } {
  const w = new BerWriter(64);
  writeValue(w, vb);
  const r = new BerReader(w.buf, 0, w.pos);
  const { len } = r.header();
  return { type: vb.type, hex: w.buf.subarray(r.pos, r.pos + len).toString('hex') };
}

export function writeVarBind(w: BerWriter, vb: VarBind): void {
  w.begin(Tag.Sequence);
  w.oidText(vb.oid);
  writeValue(w, vb);
  w.end();
}

export function writePdu(w: BerWriter, pdu: AnyPdu | EncodedPdu): void {
  w.begin(pdu.type);
  if (pdu.type === PduType.TrapV1) {
    const t = pdu as Pdu & TrapV1Fields;
    w.oid(oidParts(t.enterprise));
    const p = t.agentAddr.split('.');
    w.octets(Buffer.from([+p[0]!, +p[1]!, +p[2]!, +p[3]!]), Tag.IpAddress);
    w.int(t.genericTrap);
    w.int(t.specificTrap);
    w.uint(t.timestamp, Tag.TimeTicks);
  } else {
    w.int(pdu.requestId);
    w.int(pdu.errorStatus);
    w.int(pdu.errorIndex);
  }
  w.begin(Tag.Sequence);
  if ('body' in pdu) w.raw(pdu.body);
  else {
    for (const vb of pdu.varbinds) writeVarBind(w, vb);
  }
  w.end();
  w.end();
}

const shared = new BerWriter(65536);

/** A v1 or v2c message. */
export function encodeCommunity(version: 0 | 1, community: string | Buffer, pdu: AnyPdu | EncodedPdu): Buffer {
  const w = shared.reset();
  w.begin(Tag.Sequence);
  w.int(version);
  w.octets(typeof community === 'string' ? Buffer.from(community) : community);
  writePdu(w, pdu);
  w.end();
  return w.toBuffer();
}

export interface V3Header {
  msgId: number;
  maxSize: number;
  /** Reportable flag (requests and informs set it; responses, traps and reports do not). */
  reportable: boolean;
  engineId: Buffer;
  boots: number;
  time: number;
  userName: string;
  contextEngineId: Buffer;
  contextName: string;
}

/** A v3 message; `user` null sends noAuthNoPriv under header.userName (discovery, reports). */
export function encodeV3(h: V3Header, user: LocalUser | null, pdu: AnyPdu | EncodedPdu): Buffer {
  const scoped = new BerWriter(1024);
  scoped.begin(Tag.Sequence);
  scoped.octets(h.contextEngineId);
  scoped.string(h.contextName);
  writePdu(scoped, pdu);
  scoped.end();
  let data: Buffer = scoped.buf.subarray(0, scoped.pos);
  let privParams: Buffer = Buffer.alloc(0);
  if (user?.priv) ({ data, privParams } = encrypt(user, h.boots, h.time, data));
  const auth = !!user?.auth;
  const flags = (auth ? 1 : 0) | (user?.priv ? 2 : 0) | (h.reportable ? 4 : 0);

  const w = shared.reset();
  w.begin(Tag.Sequence);
  w.int(3);
  w.begin(Tag.Sequence);
  w.int(h.msgId);
  w.int(h.maxSize);
  w.octets(Buffer.from([flags]));
  w.int(3);
  w.end();
  w.begin(Tag.OctetString);
  w.begin(Tag.Sequence);
  w.octets(h.engineId);
  w.int(h.boots);
  w.int(h.time);
  w.string(h.userName);
  w.placeholder(auth ? user!.auth!.macLen : 0);
  w.octets(privParams);
  w.end();
  w.end();
  if (user?.priv) w.octets(data);
  else w.raw(data);
  w.end();
  const msg = w.toBuffer();
  // Located after writing: closing long sequences shifts their content.
  if (auth) computeMac(user!, msg).copy(msg, authParamsAt(msg));
  return msg;
}

function authParamsAt(msg: Buffer): number {
  const r = new BerReader(msg);
  r.sequence();
  r.int();
  r.skip();
  r.sequence(Tag.OctetString);
  r.sequence();
  r.skip();
  r.skip();
  r.skip();
  r.skip();
  return r.octetsAt().at;
}

// ---------- decoding ----------

export function readVarBinds(r: BerReader, end: number): VarBind[] {
  const out: VarBind[] = [];
  while (r.pos < end) {
    const vbEnd = r.sequence();
    const oid = r.oid();
    const len = r.len();
    const tag = r.tag;
    const type = TAG_TYPE[tag];
    if (!type) throw new BerError(`unknown value tag 0x${tag.toString(16)} for ${oid}`);
    let value: VarBind['value'];
    switch (tag) {
      // Lenient as net-snmp's decoder, which agents in the field rely on: a 5-byte INTEGER is read
      // as it is, unsigned values as their low 32 (or 64) bits. An agent checks the range of what it
      // is asked to SET (wrongValue).
      case Tag.Integer: {
        const negative = r.buf[r.pos]! & 0x80;
        const u = r.uint32(len);
        value = negative ? u - 256 ** len : u;
        break;
      }
      case Tag.Counter32:
      case Tag.Gauge32:
      case Tag.TimeTicks:
        value = r.uint32(len) >>> 0;
        break;
      case Tag.Counter64:
        value = r.uint64(len) & 0xffffffffffffffffn;
        break;
      case Tag.OctetString:
      case Tag.Opaque:
        value = r.buf.subarray(r.pos, r.pos + len);
        r.pos += len;
        break;
      case Tag.IpAddress:
        if (len !== 4) throw new BerError(`IpAddress of ${len} bytes for ${oid}`);
        value = `${r.buf[r.pos]}.${r.buf[r.pos + 1]}.${r.buf[r.pos + 2]}.${r.buf[r.pos + 3]}`;
        r.pos += 4;
        break;
      case Tag.Oid:
        value = r.oidContent(len);
        break;
      default:
        r.pos += len;
        value = null;
    }
    r.pos = vbEnd;
    out.push({ oid, type, value });
  }
  return out;
}

export function readPdu(r: BerReader): AnyPdu {
  const type = r.peekTag();
  const end = r.sequence(type);
  if (type === PduType.TrapV1) {
    const enterprise = r.oid();
    const addr = r.octets(Tag.IpAddress);
    const agentAddr = addr.length === 4 ? `${addr[0]}.${addr[1]}.${addr[2]}.${addr[3]}` : '0.0.0.0';
    const genericTrap = r.int();
    const specificTrap = r.int();
    const { len } = r.header(Tag.TimeTicks);
    const timestamp = r.uint32(len);
    const vbEnd = r.sequence();
    const varbinds = readVarBinds(r, vbEnd);
    r.pos = end;
    return { type, requestId: 0, errorStatus: 0, errorIndex: 0, varbinds, enterprise, agentAddr, genericTrap, specificTrap, timestamp };
  }
  if (type < 0xa0 || type > 0xa8) throw new BerError(`unknown PDU type 0x${type.toString(16)}`);
  const requestId = r.int();
  const errorStatus = r.int();
  const errorIndex = r.int();
  const vbEnd = r.sequence();
  const varbinds = readVarBinds(r, vbEnd);
  r.pos = end;
  return { type, requestId, errorStatus, errorIndex, varbinds };
}

export interface CommunityMessage {
  version: 0 | 1;
  community: Buffer;
  pdu: AnyPdu;
}

export interface V3Message extends V3Header {
  version: 3;
  flags: number;
  securityModel: number;
  authParams: { at: number; len: number };
  privParams: Buffer;
  /** The scoped PDU bytes (encrypted when flags & 2). */
  data: Buffer;
  raw: Buffer;
}

/** First step: the version and, for v3, the header; for v1/v2c the whole message. */
export function decodeMessage(buf: Buffer): CommunityMessage | V3Message {
  const r = new BerReader(buf);
  r.sequence();
  const version = r.int();
  if (version === 0 || version === 1) {
    const community = r.octets();
    return { version, community, pdu: readPdu(r) };
  }
  if (version !== 3) throw new BerError(`unsupported SNMP version ${version}`);
  r.sequence();
  const msgId = r.int();
  const maxSize = r.int();
  const flagsBuf = r.octets();
  const flags = flagsBuf[0] ?? 0;
  const securityModel = r.int();
  const secEnd = r.sequence(Tag.OctetString);
  r.sequence();
  const engineId = r.octets();
  const boots = r.int();
  const time = r.int();
  const userName = r.octets().toString('utf8');
  const authParams = r.octetsAt();
  const privParams = r.octets();
  r.pos = secEnd;
  let data: Buffer;
  if (flags & 2) data = r.octets();
  else {
    const start = r.pos;
    r.skip();
    data = buf.subarray(start, r.pos);
  }
  return {
    version: 3,
    msgId,
    maxSize,
    flags,
    securityModel,
    engineId,
    boots,
    time,
    userName,
    authParams,
    privParams,
    data,
    raw: buf,
    reportable: !!(flags & 4),
    contextEngineId: Buffer.alloc(0),
    contextName: '',
  };
}

export type UnwrapFailure = 'wrongDigest' | 'decryptionError' | 'unsupportedSecLevel';

/** Second step: checks the MAC, decrypts, decodes the scoped PDU (fills contextEngineId/contextName). */
/** Whether the message's HMAC is right for this user's localised auth key (RFC 3414 6.3.2). */
export function macMatches(m: V3Message, user: LocalUser): boolean {
  const { at, len } = m.authParams;
  if (!user.auth || len !== user.auth.macLen) return false;
  const given = Buffer.from(m.raw.subarray(at, at + len));
  m.raw.fill(0, at, at + len);
  const mac = computeMac(user, m.raw);
  given.copy(m.raw, at);
  return mac.equals(given);
}

/** `macChecked`: the caller verified the MAC already (with macMatches), so it is not computed twice. */
export function unwrapV3(m: V3Message, user: LocalUser | null, opts: { macChecked?: boolean } = {}): { pdu: AnyPdu } | { error: UnwrapFailure } {
  const wantAuth = !!(m.flags & 1);
  const wantPriv = !!(m.flags & 2);
  if ((wantAuth && !user?.auth) || (wantPriv && !user?.priv) || (!wantAuth && user?.auth)) return { error: 'unsupportedSecLevel' };
  if (wantAuth && !opts.macChecked && !macMatches(m, user!)) return { error: 'wrongDigest' };
  let scoped = m.data;
  if (wantPriv) {
    try {
      scoped = decrypt(user!, m.boots, m.time, m.privParams, m.data);
    } catch {
      return { error: 'decryptionError' };
    }
  }
  try {
    const r = new BerReader(scoped);
    r.sequence();
    m.contextEngineId = r.octets();
    m.contextName = r.octets().toString('utf8');
    return { pdu: readPdu(r) };
  } catch {
    return { error: wantPriv ? 'decryptionError' : 'wrongDigest' };
  }
}
