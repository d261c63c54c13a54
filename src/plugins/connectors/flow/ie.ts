// IANA's IPFIX information elements (https://www.iana.org/assignments/ipfix/, RFC 7012): the name
// and abstract data type of the elements flow exporters send, which name the fields of every flow
// record (NetFlow v9 field types 1-127 are the same numbers, RFC 3954 section 8). An element not
// listed here is named `ie<id>` (or `e<enterprise>_ie<id>` for an enterprise-specific one) and
// kept as hex.
import { ipv6Text } from '../../../util/ip-text.js';
import { FlowDecodeError } from './reader.js';

export type IeType =
  | 'unsigned'
  | 'signed'
  | 'float'
  | 'boolean'
  | 'ipv4'
  | 'ipv6'
  | 'mac'
  | 'string'
  | 'octets'
  | 'dateTimeSeconds'
  | 'dateTimeMilliseconds'
  | 'dateTimeMicroseconds'
  | 'dateTimeNanoseconds';

const U = 'unsigned';
/** id -> [name, type] */
const TABLE: Record<number, [string, IeType]> = {
  1: ['octetDeltaCount', U],
  2: ['packetDeltaCount', U],
  3: ['deltaFlowCount', U],
  4: ['protocolIdentifier', U],
  5: ['ipClassOfService', U],
  6: ['tcpControlBits', U],
  7: ['sourceTransportPort', U],
  8: ['sourceIPv4Address', 'ipv4'],
  9: ['sourceIPv4PrefixLength', U],
  10: ['ingressInterface', U],
  11: ['destinationTransportPort', U],
  12: ['destinationIPv4Address', 'ipv4'],
  13: ['destinationIPv4PrefixLength', U],
  14: ['egressInterface', U],
  15: ['ipNextHopIPv4Address', 'ipv4'],
  16: ['bgpSourceAsNumber', U],
  17: ['bgpDestinationAsNumber', U],
  18: ['bgpNextHopIPv4Address', 'ipv4'],
  19: ['postMCastPacketDeltaCount', U],
  20: ['postMCastOctetDeltaCount', U],
  21: ['flowEndSysUpTime', U],
  22: ['flowStartSysUpTime', U],
  23: ['postOctetDeltaCount', U],
  24: ['postPacketDeltaCount', U],
  25: ['minimumIpTotalLength', U],
  26: ['maximumIpTotalLength', U],
  27: ['sourceIPv6Address', 'ipv6'],
  28: ['destinationIPv6Address', 'ipv6'],
  29: ['sourceIPv6PrefixLength', U],
  30: ['destinationIPv6PrefixLength', U],
  31: ['flowLabelIPv6', U],
  32: ['icmpTypeCodeIPv4', U],
  33: ['igmpType', U],
  34: ['samplingInterval', U],
  35: ['samplingAlgorithm', U],
  36: ['flowActiveTimeout', U],
  37: ['flowIdleTimeout', U],
  38: ['engineType', U],
  39: ['engineId', U],
  40: ['exportedOctetTotalCount', U],
  41: ['exportedMessageTotalCount', U],
  42: ['exportedFlowRecordTotalCount', U],
  44: ['sourceIPv4Prefix', 'ipv4'],
  45: ['destinationIPv4Prefix', 'ipv4'],
  46: ['mplsTopLabelType', U],
  47: ['mplsTopLabelIPv4Address', 'ipv4'],
  48: ['samplerId', U],
  49: ['samplerMode', U],
  50: ['samplerRandomInterval', U],
  52: ['minimumTTL', U],
  53: ['maximumTTL', U],
  54: ['fragmentIdentification', U],
  55: ['postIpClassOfService', U],
  56: ['sourceMacAddress', 'mac'],
  57: ['postDestinationMacAddress', 'mac'],
  58: ['vlanId', U],
  59: ['postVlanId', U],
  60: ['ipVersion', U],
  61: ['flowDirection', U],
  62: ['ipNextHopIPv6Address', 'ipv6'],
  63: ['bgpNextHopIPv6Address', 'ipv6'],
  64: ['ipv6ExtensionHeaders', U],
  80: ['destinationMacAddress', 'mac'],
  81: ['postSourceMacAddress', 'mac'],
  82: ['interfaceName', 'string'],
  83: ['interfaceDescription', 'string'],
  85: ['octetTotalCount', U],
  86: ['packetTotalCount', U],
  88: ['fragmentOffset', U],
  89: ['forwardingStatus', U],
  130: ['exporterIPv4Address', 'ipv4'],
  131: ['exporterIPv6Address', 'ipv6'],
  136: ['flowEndReason', U],
  139: ['icmpTypeCodeIPv6', U],
  143: ['meteringProcessId', U],
  144: ['exportingProcessId', U],
  148: ['flowId', U],
  149: ['observationDomainId', U],
  150: ['flowStartSeconds', 'dateTimeSeconds'],
  151: ['flowEndSeconds', 'dateTimeSeconds'],
  152: ['flowStartMilliseconds', 'dateTimeMilliseconds'],
  153: ['flowEndMilliseconds', 'dateTimeMilliseconds'],
  154: ['flowStartMicroseconds', 'dateTimeMicroseconds'],
  155: ['flowEndMicroseconds', 'dateTimeMicroseconds'],
  156: ['flowStartNanoseconds', 'dateTimeNanoseconds'],
  157: ['flowEndNanoseconds', 'dateTimeNanoseconds'],
  160: ['systemInitTimeMilliseconds', 'dateTimeMilliseconds'],
  161: ['flowDurationMilliseconds', U],
  176: ['icmpTypeIPv4', U],
  177: ['icmpCodeIPv4', U],
  178: ['icmpTypeIPv6', U],
  179: ['icmpCodeIPv6', U],
  210: ['paddingOctets', 'octets'],
  225: ['postNATSourceIPv4Address', 'ipv4'],
  226: ['postNATDestinationIPv4Address', 'ipv4'],
  227: ['postNAPTSourceTransportPort', U],
  228: ['postNAPTDestinationTransportPort', U],
  234: ['ingressVRFID', U],
  235: ['egressVRFID', U],
  302: ['selectorId', U],
  304: ['selectorAlgorithm', U],
  305: ['samplingPacketInterval', U],
  306: ['samplingPacketSpace', U],
  309: ['samplingSize', U],
  310: ['samplingPopulation', U],
  312: ['dataLinkFrameSize', U],
  315: ['dataLinkFrameSection', 'octets'],
};

export interface FieldSpec {
  id: number;
  /** 0 for IANA elements. */
  enterprise: number;
  /** Bytes, or VARIABLE_LENGTH. */
  length: number;
  name: string;
  type: IeType;
}

/** RFC 7011 section 7: a field length of 65535 in a template means variable length. */
export const VARIABLE_LENGTH = 65535;

export function fieldSpec(id: number, enterprise: number, length: number): FieldSpec {
  const known = enterprise === 0 ? TABLE[id] : undefined;
  if (known) return { id, enterprise, length, name: known[0], type: known[1] };
  return { id, enterprise, length, name: enterprise ? `e${enterprise}_ie${id}` : `ie${id}`, type: 'octets' };
}

/** The IANA name of an element (tests, docs). */
export const ieName = (id: number) => TABLE[id]?.[0];

export function ipv4(b: Buffer, at: number): string {
  return `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`;
}

export const mac = (b: Buffer, at: number) =>
  b
    .subarray(at, at + 6)
    .toString('hex')
    .replace(/(..)(?!$)/g, '$1:');

/** An unsigned big-endian integer of 1-8 bytes (reduced-size encoding, RFC 7011 section 6.2): a number, or a decimal string past 2^53. */
export function unsigned(b: Buffer, at: number, len: number): number | string {
  if (len <= 6) return b.readUIntBE(at, len);
  // 7 or 8 bytes: counters are far below 2^53 in practice, and BigInt costs ~10x on this hot path.
  const hi = b.readUIntBE(at, len - 4);
  const lo = b.readUInt32BE(at + len - 4);
  if (hi < 0x20_0000) return hi * 0x1_0000_0000 + lo;
  return ((BigInt(hi) << 32n) | BigInt(lo)).toString();
}

function signed(b: Buffer, at: number, len: number): number | string {
  if (len <= 6) return b.readIntBE(at, len);
  let v = 0n;
  for (let i = 0; i < len; i++) v = (v << 8n) | BigInt(b[at + i]!);
  v = BigInt.asIntN(len * 8, v);
  return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v.toString();
}

/** Years 1970-9999: the ISO text is then `YYYY-MM-DDTHH:MM:SS.mmmZ`, and its first 20 characters depend only on the second. */
const ISO_CACHEABLE = 253_402_300_800_000;
const ISO_SLOTS = 256;
const isoSecs = new Float64Array(ISO_SLOTS).fill(-1);
const isoHeads: string[] = new Array<string>(ISO_SLOTS).fill('');

/**
 * A time in ms since 1970 as UTC ISO 8601 with milliseconds (`Date.prototype.toISOString`), a
 * string past the range a Date holds. The text up to the second is cached (a direct-mapped cache
 * of 256 seconds): the flows of a datagram span a few seconds, and building a Date and its text
 * for each of their two times was the decoder's largest cost.
 */
export function isoMs(ms: number): string {
  if (!(ms >= 0 && ms < ISO_CACHEABLE)) return Number.isFinite(ms) && Math.abs(ms) < 8.64e15 ? new Date(ms).toISOString() : String(ms);
  const whole = Math.floor(ms);
  const sec = Math.floor(whole / 1000);
  const slot = sec & (ISO_SLOTS - 1);
  if (isoSecs[slot] !== sec) {
    isoSecs[slot] = sec;
    isoHeads[slot] = new Date(sec * 1000).toISOString().slice(0, 20);
  }
  const f = whole - sec * 1000;
  return `${isoHeads[slot]}${f < 10 ? '00' : f < 100 ? '0' : ''}${f}Z`;
}
const iso = isoMs;

/** The value of one field, by its abstract data type; a length the type does not allow is kept as hex. */
export function fieldValue(f: FieldSpec, b: Buffer, at: number, len: number): unknown {
  switch (f.type) {
    case 'unsigned':
      if (len >= 1 && len <= 8) return unsigned(b, at, len);
      break;
    case 'signed':
      if (len >= 1 && len <= 8) return signed(b, at, len);
      break;
    case 'float':
      if (len === 4) return b.readFloatBE(at);
      if (len === 8) return b.readDoubleBE(at);
      break;
    case 'boolean':
      if (len === 1) return b[at] === 1;
      break;
    case 'ipv4':
      if (len === 4) return ipv4(b, at);
      break;
    case 'ipv6':
      if (len === 16) return ipv6Text(b, at);
      break;
    case 'mac':
      if (len === 6) return mac(b, at);
      break;
    case 'string':
      // Exporters pad names with NULs (fixed-length fields): what follows the first one is not text.
      return b.toString('utf8', at, at + len).replace(/\0[\s\S]*$/, '');
    case 'dateTimeSeconds':
      if (len === 4) return iso(b.readUInt32BE(at) * 1000);
      break;
    case 'dateTimeMilliseconds':
      // Two 32-bit halves: readBigUInt64BE and a BigInt per time cost more than the rest of the field.
      if (len === 8) return iso(b.readUInt32BE(at) * 0x1_0000_0000 + b.readUInt32BE(at + 4));
      break;
    case 'dateTimeMicroseconds':
    case 'dateTimeNanoseconds':
      // NTP format (RFC 7011 section 6.1.9-10): seconds since 1900, then the fraction.
      if (len === 8) return iso((b.readUInt32BE(at) - 2_208_988_800) * 1000 + Math.floor((b.readUInt32BE(at + 4) / 2 ** 32) * 1000));
      break;
    case 'octets':
      return b.toString('hex', at, at + len);
  }
  return b.toString('hex', at, at + len);
}

export type FieldRead = (b: Buffer, at: number, len: number) => unknown;

/**
 * The reader of one template field, chosen once when the template is learned (a function per
 * type and length instead of fieldValue's switch for every field of every record): the common
 * fixed-length elements read directly, the rest through fieldValue.
 */
export function readerOf(f: FieldSpec): FieldRead {
  const generic: FieldRead = (b, at, len) => fieldValue(f, b, at, len);
  if (f.length === VARIABLE_LENGTH) return generic;
  switch (f.type) {
    case 'unsigned':
      if (f.length === 1) return (b, at) => b[at];
      if (f.length === 2) return (b, at) => b.readUInt16BE(at);
      if (f.length === 4) return (b, at) => b.readUInt32BE(at);
      if (f.length === 8) return (b, at) => unsigned(b, at, 8);
      break;
    case 'ipv4':
      if (f.length === 4) return ipv4;
      break;
    case 'dateTimeMilliseconds':
      if (f.length === 8) return (b, at) => iso(b.readUInt32BE(at) * 0x1_0000_0000 + b.readUInt32BE(at + 4));
      break;
    case 'dateTimeSeconds':
      if (f.length === 4) return (b, at) => iso(b.readUInt32BE(at) * 1000);
      break;
  }
  return generic;
}

/** A field whose length cannot hold its type at all: the template is refused (a zero-length IP address is nonsense, not data). */
export function checkFieldLength(f: FieldSpec, where: string): void {
  if (f.length === 0) throw new FlowDecodeError(`${where}: field ${f.name} has length 0`);
}
