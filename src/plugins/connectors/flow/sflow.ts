// sFlow version 5 (sflow.org/sflow_version_5.txt): flow samples (one record per sampled packet,
// its raw header decoded to addresses, ports and protocol) and counter samples (one record per
// interface counter block). Fields carry IANA's IPFIX names where one exists (the mapping is in
// docs/connectors/flow.md); counter samples keep IF-MIB's names, which IPFIX has no elements for.
import type { Rec } from '../../types.js';
import { ipv4, mac } from './ie.js';
import { ipv6Text } from '../../../util/ip-text.js';
import { FlowDecodeError, Reader } from './reader.js';
import type { FlowState } from './state.js';
import { MAX_RECORDS_PER_DATAGRAM } from './netflow.js';

/** sFlow's interface value for "not known" (sflow_version_5.txt, flow_sample). */
const UNKNOWN_INTERFACE = 0x3fffffff;

function address(r: Reader, what: string): string {
  const type = r.u32(`${what} address type`);
  if (type === 1) {
    r.need(4, what);
    const a = ipv4(r.buf, r.pos);
    r.pos += 4;
    return a;
  }
  if (type === 2) {
    r.need(16, what);
    const a = ipv6Text(r.buf, r.pos);
    r.pos += 16;
    return a;
  }
  throw new FlowDecodeError(`sFlow: ${what} address type ${type} (1 IPv4 and 2 IPv6 are defined)`);
}

/** Decodes one sampled packet's header (Ethernet, IPv4 or IPv6) into the record; what is cut off is left out. */
export function decodePacketHeader(protocol: number, h: Buffer, rec: Rec): void {
  let at = 0;
  let ethertype: number;
  if (protocol === 1) {
    // Ethernet (ISO 8802-3): MACs, VLAN tags (802.1Q, QinQ), then the ethertype.
    if (h.length < 14) return;
    rec.destinationMacAddress = mac(h, 0);
    rec.sourceMacAddress = mac(h, 6);
    ethertype = h.readUInt16BE(12);
    at = 14;
    for (let tags = 0; (ethertype === 0x8100 || ethertype === 0x88a8) && tags < 2; tags++) {
      if (h.length < at + 4) return;
      if (rec.vlanId === undefined) rec.vlanId = h.readUInt16BE(at) & 0x0fff;
      ethertype = h.readUInt16BE(at + 2);
      at += 4;
    }
  } else if (protocol === 11) ethertype = 0x0800;
  else if (protocol === 12) ethertype = 0x86dd;
  else return;
  let proto: number;
  if (ethertype === 0x0800) {
    if (h.length < at + 20 || h[at]! >> 4 !== 4) return;
    const ihl = (h[at]! & 0x0f) * 4;
    rec.ipVersion = 4;
    rec.ipClassOfService = h[at + 1];
    rec.protocolIdentifier = proto = h[at + 9]!;
    rec.sourceIPv4Address = ipv4(h, at + 12);
    rec.destinationIPv4Address = ipv4(h, at + 16);
    // Only the first fragment carries the transport header.
    if ((h.readUInt16BE(at + 6) & 0x1fff) !== 0 || ihl < 20) return;
    at += ihl;
  } else if (ethertype === 0x86dd) {
    if (h.length < at + 40 || h[at]! >> 4 !== 6) return;
    rec.ipVersion = 6;
    rec.ipClassOfService = (h.readUInt16BE(at) >> 4) & 0xff;
    rec.protocolIdentifier = proto = h[at + 6]!;
    rec.sourceIPv6Address = ipv6Text(h, at + 8);
    rec.destinationIPv6Address = ipv6Text(h, at + 24);
    at += 40;
  } else return;
  if ((proto === 6 || proto === 17 || proto === 132) && h.length >= at + 4) {
    rec.sourceTransportPort = h.readUInt16BE(at);
    rec.destinationTransportPort = h.readUInt16BE(at + 2);
    if (proto === 6 && h.length >= at + 14) rec.tcpControlBits = h[at + 13];
  } else if ((proto === 1 || proto === 58) && h.length >= at + 2) {
    rec[proto === 1 ? 'icmpTypeCodeIPv4' : 'icmpTypeCodeIPv6'] = h.readUInt16BE(at);
  }
}

/** One flow sample's records (only the first of each kind counts, as sflowtool reads them). */
function flowSample(r: Reader, expanded: boolean, base: Rec, out: Rec[]): void {
  const rec: Rec = { ...base, flow_type: 'flow' };
  rec.sampleSequence = r.u32('sample sequence');
  if (expanded) {
    rec.sourceIdType = r.u32('source id type');
    rec.sourceIdIndex = r.u32('source id index');
  } else {
    const src = r.u32('source id');
    rec.sourceIdType = src >>> 24;
    rec.sourceIdIndex = src & 0xffffff;
  }
  const rate = r.u32('sampling rate');
  rec.samplingInterval = rate || 1;
  rec.samplingPopulation = r.u32('sample pool');
  rec.droppedPacketDeltaCount = r.u32('drops');
  if (expanded) {
    r.skip(4, 'input format');
    rec.ingressInterface = r.u32('input');
    r.skip(4, 'output format');
    rec.egressInterface = r.u32('output');
  } else {
    // Top two bits: the format (0 one interface, 1 discarded, 2 several); the index is the rest, 0x3fffffff "unknown" (left out).
    const input = r.u32('input') & 0x3fffffff;
    const output = r.u32('output') & 0x3fffffff;
    if (input !== UNKNOWN_INTERFACE) rec.ingressInterface = input;
    if (output !== UNKNOWN_INTERFACE) rec.egressInterface = output;
  }
  const n = r.u32('flow record count');
  r.need(n * 8, `${n} flow records`);
  for (let i = 0; i < n; i++) {
    const format = r.u32('flow record format');
    const len = r.u32('flow record length');
    const body = r.sub(len, `flow record ${format} of length ${len}`);
    if (format === 1) {
      // Sampled header: protocol, frame length, stripped bytes, header length, header.
      const protocol = body.u32('header protocol');
      const frameLength = body.u32('frame length');
      body.skip(4, 'stripped');
      const hlen = body.u32('header length');
      body.need(hlen, `sampled header of length ${hlen}`);
      rec.octetDeltaCount = frameLength;
      rec.packetDeltaCount = 1;
      decodePacketHeader(protocol, body.buf.subarray(body.pos, body.pos + hlen), rec);
    } else if (format === 3 && rec.sourceIPv4Address === undefined) {
      // Sampled IPv4: what an exporter sends instead of (or beside) the header.
      const length = body.u32('length');
      rec.protocolIdentifier = body.u32('protocol');
      body.need(8, 'addresses');
      rec.sourceIPv4Address = ipv4(body.buf, body.pos);
      rec.destinationIPv4Address = ipv4(body.buf, body.pos + 4);
      body.pos += 8;
      rec.sourceTransportPort = body.u32('source port');
      rec.destinationTransportPort = body.u32('destination port');
      rec.tcpControlBits = body.u32('tcp flags');
      rec.ipClassOfService = body.u32('tos');
      rec.octetDeltaCount ??= length;
      rec.packetDeltaCount = 1;
    } else if (format === 1001) {
      rec.vlanId ??= body.u32('source vlan');
      body.skip(4, 'source priority');
      rec.postVlanId = body.u32('destination vlan');
    } else if (format === 1002) {
      const hop = address(body, 'next hop');
      rec[hop.includes(':') ? 'ipNextHopIPv6Address' : 'ipNextHopIPv4Address'] = hop;
      rec.sourceIPv4PrefixLength = body.u32('source mask');
      rec.destinationIPv4PrefixLength = body.u32('destination mask');
    }
    // Other formats (extended gateway, user, URL...) are skipped by their length.
  }
  out.push(rec);
}

/** One counter sample: a record per generic interface counter block (format 1), IF-MIB names. */
function counterSample(r: Reader, expanded: boolean, base: Rec, out: Rec[]): void {
  const seq = r.u32('sample sequence');
  let type: number;
  let index: number;
  if (expanded) {
    type = r.u32('source id type');
    index = r.u32('source id index');
  } else {
    const src = r.u32('source id');
    type = src >>> 24;
    index = src & 0xffffff;
  }
  const n = r.u32('counter record count');
  r.need(n * 8, `${n} counter records`);
  for (let i = 0; i < n; i++) {
    const format = r.u32('counter record format');
    const len = r.u32('counter record length');
    const c = r.sub(len, `counter record ${format} of length ${len}`);
    if (format !== 1) continue;
    if (out.length >= MAX_RECORDS_PER_DATAGRAM) throw new FlowDecodeError(`more than ${MAX_RECORDS_PER_DATAGRAM} records in one datagram`);
    out.push({
      ...base,
      flow_type: 'counters',
      sampleSequence: seq,
      sourceIdType: type,
      sourceIdIndex: index,
      ifIndex: c.u32('ifIndex'),
      ifType: c.u32('ifType'),
      ifSpeed: c.u64('ifSpeed'),
      ifDirection: c.u32('ifDirection'),
      ifStatus: c.u32('ifStatus'),
      ifInOctets: c.u64('ifInOctets'),
      ifInUcastPkts: c.u32('ifInUcastPkts'),
      ifInMulticastPkts: c.u32('ifInMulticastPkts'),
      ifInBroadcastPkts: c.u32('ifInBroadcastPkts'),
      ifInDiscards: c.u32('ifInDiscards'),
      ifInErrors: c.u32('ifInErrors'),
      ifInUnknownProtos: c.u32('ifInUnknownProtos'),
      ifOutOctets: c.u64('ifOutOctets'),
      ifOutUcastPkts: c.u32('ifOutUcastPkts'),
      ifOutMulticastPkts: c.u32('ifOutMulticastPkts'),
      ifOutBroadcastPkts: c.u32('ifOutBroadcastPkts'),
      ifOutDiscards: c.u32('ifOutDiscards'),
      ifOutErrors: c.u32('ifOutErrors'),
      ifPromiscuousMode: c.u32('ifPromiscuousMode'),
    });
  }
}

export function decodeSflow(buf: Buffer, exporter: string, state: FlowState, now: number): Rec[] {
  const r = new Reader(buf);
  const version = r.u32('version');
  if (version !== 5) throw new FlowDecodeError(`sFlow: version ${version}; only version 5 is decoded`);
  const agent = address(r, 'agent');
  const subAgent = r.u32('sub-agent id');
  const seq = r.u32('sequence number');
  const uptime = r.u32('uptime');
  const n = r.u32('sample count');
  r.need(n * 8, `${n} samples`);
  const base: Rec = { flow_protocol: 'sflow', exporter, agentAddress: agent, subAgentId: subAgent };
  const out: Rec[] = [];
  for (let i = 0; i < n; i++) {
    const tag = r.u32('sample type');
    const len = r.u32('sample length');
    const body = r.sub(len, `sample ${tag} of length ${len}`);
    // Enterprise 0: 1 flow sample, 2 counter sample, 3 and 4 their expanded forms; others are skipped.
    if (out.length >= MAX_RECORDS_PER_DATAGRAM) throw new FlowDecodeError(`more than ${MAX_RECORDS_PER_DATAGRAM} records in one datagram`);
    if (tag === 1 || tag === 3) flowSample(body, tag === 3, base, out);
    else if (tag === 2 || tag === 4) counterSample(body, tag === 4, base, out);
  }
  // Checked after the decode, so that a broken datagram changes nothing; sequence per agent and sub-agent.
  const e = state.exporter('sflow', exporter, subAgent, now);
  state.sequence(e, seq, seq + 1, uptime);
  return out;
}
