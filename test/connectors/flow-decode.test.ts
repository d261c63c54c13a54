// The flow decoders on datagrams built from the specifications (test/helpers/flow-wire.ts): each
// format's fields under IANA's names, templates per exporter and observation domain, templates
// after their data, withdrawal and expiry, options records (sampling, interface names, time base),
// variable-length and enterprise elements, sequence gaps and exporter restarts.
import { describe, expect, it } from 'vitest';
import { decodeFlowDatagram } from '../../src/plugins/connectors/flow/decode.js';
import { FlowDecodeError } from '../../src/plugins/connectors/flow/reader.js';
import { DEFAULT_LIMITS, FlowState, type FlowEvents } from '../../src/plugins/connectors/flow/state.js';
import {
  counterSample,
  FIVE_TUPLE,
  fiveTuple,
  flowSample,
  ip4,
  ipfix,
  ipfixOptionsTemplate,
  netflow5,
  netflow9,
  sampledHeader,
  set,
  sflow,
  templateRecord,
  u16,
  u32,
  u64,
  v9OptionsTemplate,
  varlen,
} from '../helpers/flow-wire.js';
import { packetOf } from './peers/flow.js';

function recorder() {
  const seen = { gaps: [] as number[], restarts: [] as string[], dropped: [] as { reason: string; n: number }[] };
  const events: FlowEvents = {
    gap: (_e, _p, n) => void seen.gaps.push(n),
    restart: (_e, _p, why) => void seen.restarts.push(why),
    dropped: (reason, n) => void seen.dropped.push({ reason, n }),
  };
  return { seen, state: new FlowState(DEFAULT_LIMITS, events) };
}

const EXP = '198.51.100.7';

describe('NetFlow v5', () => {
  it('decodes every flow with IANA names, wall-clock times from sysUptime and the sampling interval of the header', () => {
    const { state } = recorder();
    const dg = netflow5({ seq: 100, uptime: 100_000, secs: 1_780_000_000, sampling: 0x4000 | 10 }, [
      { src: '10.0.0.1', dst: '10.0.0.2', packets: 3, bytes: 180, sport: 1234, dport: 80, protocol: 6, first: 90_000, last: 99_000, input: 2, output: 5 },
      { src: '10.0.0.3', dst: '10.0.0.4', packets: 1, bytes: 60, sport: 53, dport: 5353, protocol: 17 },
    ]);
    const recs = decodeFlowDatagram(dg, EXP, state, 'netflow5');
    expect(recs).toHaveLength(2);
    expect(recs[0]).toMatchObject({
      flow_protocol: 'netflow5',
      exporter: EXP,
      sourceIPv4Address: '10.0.0.1',
      destinationIPv4Address: '10.0.0.2',
      sourceTransportPort: 1234,
      destinationTransportPort: 80,
      protocolIdentifier: 6,
      packetDeltaCount: 3,
      octetDeltaCount: 180,
      ingressInterface: 2,
      egressInterface: 5,
      samplingInterval: 10,
      flowStartMilliseconds: new Date(1_780_000_000_000 - 10_000).toISOString(),
      flowEndMilliseconds: new Date(1_780_000_000_000 - 1_000).toISOString(),
    });
  });

  it('counts the flows a sequence gap skipped, and a restart when sysUptime goes back', () => {
    const { state, seen } = recorder();
    const f = { src: '10.0.0.1', dst: '10.0.0.2', packets: 1, bytes: 40, sport: 1, dport: 2, protocol: 6 };
    decodeFlowDatagram(netflow5({ seq: 0, uptime: 1000 }, [f, f]), EXP, state);
    decodeFlowDatagram(netflow5({ seq: 2, uptime: 2000 }, [f]), EXP, state);
    decodeFlowDatagram(netflow5({ seq: 8, uptime: 3000 }, [f]), EXP, state); // flows 3-7 lost
    decodeFlowDatagram(netflow5({ seq: 0, uptime: 10 }, [f]), EXP, state); // rebooted
    decodeFlowDatagram(netflow5({ seq: 1, uptime: 20 }, [f]), EXP, state);
    expect(seen.gaps).toEqual([5]);
    expect(seen.restarts).toHaveLength(1);
  });
});

describe('NetFlow v9', () => {
  it('holds data that comes before its template and decodes it when the template arrives, with its own datagram’s time base', () => {
    const { state, seen } = recorder();
    const data = set(300, fiveTuple('10.1.1.1', '10.2.2.2', 4000, 443, 6, 1500, 3), fiveTuple('10.1.1.3', '10.2.2.4', 4001, 53, 17, 80, 1));
    expect(decodeFlowDatagram(netflow9({ seq: 1, sourceId: 7 }, data), EXP, state)).toEqual([]);
    const recs = decodeFlowDatagram(netflow9({ seq: 2, sourceId: 7 }, set(0, templateRecord(300, FIVE_TUPLE))), EXP, state);
    expect(recs.map((r) => [r.sourceIPv4Address, r.destinationTransportPort, r.octetDeltaCount, r.packetDeltaCount, r.observationDomainId])).toEqual([
      ['10.1.1.1', 443, 1500, 3, 7],
      ['10.1.1.3', 53, 80, 1, 7],
    ]);
    expect(seen.dropped).toEqual([]);
  });

  it('keeps templates apart per source id: the same template id means different things', () => {
    const { state } = recorder();
    decodeFlowDatagram(netflow9({ seq: 1, sourceId: 1 }, set(0, templateRecord(256, FIVE_TUPLE))), EXP, state);
    decodeFlowDatagram(netflow9({ seq: 1, sourceId: 2 }, set(0, templateRecord(256, [[8, 4]]))), EXP, state);
    const a = decodeFlowDatagram(netflow9({ seq: 2, sourceId: 1 }, set(256, fiveTuple('10.0.0.1', '10.0.0.2', 1, 2, 6, 100, 1))), EXP, state);
    const b = decodeFlowDatagram(netflow9({ seq: 2, sourceId: 2 }, set(256, ip4('10.9.9.9'))), EXP, state);
    expect(a[0]).toMatchObject({ sourceIPv4Address: '10.0.0.1', octetDeltaCount: 100 });
    expect(b).toHaveLength(1);
    expect(b[0]!.sourceIPv4Address).toBe('10.9.9.9');
    expect(b[0]!.octetDeltaCount).toBeUndefined();
  });

  it('takes the sampling interval and interface names from options records and applies them to the flows', () => {
    const { state } = recorder();
    const opts = v9OptionsTemplate(
      257,
      [[2, 4]],
      [
        [34, 4],
        [82, 16],
      ],
    );
    const name = Buffer.alloc(16);
    name.write('ge-0/0/1');
    const dg = netflow9(
      { seq: 1 },
      set(0, templateRecord(256, [...FIVE_TUPLE, [10, 4]])),
      set(1, opts),
      set(257, u32(12), u32(100), name),
      set(256, fiveTuple('10.0.0.1', '10.0.0.2', 1, 2, 6, 100, 1), u32(12)),
    );
    const [rec] = decodeFlowDatagram(dg, EXP, state);
    expect(rec).toMatchObject({ samplingInterval: 100, ingressInterface: 12, in_if_name: 'ge-0/0/1' });
  });

  it('counts a lost datagram from the package sequence', () => {
    const { state, seen } = recorder();
    const t = set(0, templateRecord(256, FIVE_TUPLE));
    decodeFlowDatagram(netflow9({ seq: 10, uptime: 1000 }, t), EXP, state);
    decodeFlowDatagram(netflow9({ seq: 11, uptime: 2000 }, t), EXP, state);
    decodeFlowDatagram(netflow9({ seq: 14, uptime: 3000 }, t), EXP, state);
    expect(seen.gaps).toEqual([2]);
  });
});

describe('IPFIX', () => {
  it('decodes variable-length and enterprise-specific elements, and reduced-size counters', () => {
    const { state } = recorder();
    const tpl = templateRecord(400, [
      [8, 4],
      [1, 4], // octetDeltaCount in 4 bytes (reduced-size encoding)
      [82, 65535], // interfaceName, variable length
      [12, 65535, 29305], // enterprise-specific, variable length
    ]);
    const long = Buffer.alloc(300, 0x41);
    const data = set(
      400,
      ip4('10.0.0.1'),
      u32(5000),
      varlen(Buffer.from('eth0')),
      varlen(Buffer.from([1, 2, 3])),
      ip4('10.0.0.2'),
      u32(7),
      varlen(long),
      varlen(Buffer.alloc(0)),
    );
    const recs = decodeFlowDatagram(ipfix({ seq: 0 }, set(2, tpl), data), EXP, state, 'ipfix');
    expect(recs).toHaveLength(2);
    expect(recs[0]).toMatchObject({ sourceIPv4Address: '10.0.0.1', octetDeltaCount: 5000, interfaceName: 'eth0', e29305_ie12: '010203' });
    expect(recs[1]!.interfaceName).toBe('A'.repeat(300));
    expect(recs[1]!.e29305_ie12).toBe('');
  });

  it('withdraws a template (field count 0), and all templates (id 2), so later data waits for a new one', () => {
    const { state } = recorder();
    const data = set(256, fiveTuple('10.0.0.1', '10.0.0.2', 1, 2, 6, 100, 1));
    expect(decodeFlowDatagram(ipfix({ seq: 0 }, set(2, templateRecord(256, FIVE_TUPLE)), data), EXP, state)).toHaveLength(1);
    expect(decodeFlowDatagram(ipfix({ seq: 1 }, set(2, u16(256), u16(0)), data), EXP, state)).toEqual([]);
    expect(decodeFlowDatagram(ipfix({ seq: 1 }, set(2, templateRecord(256, FIVE_TUPLE)), data), EXP, state)).toHaveLength(2); // the held set too
    decodeFlowDatagram(ipfix({ seq: 3 }, set(2, u16(2), u16(0))), EXP, state);
    expect(decodeFlowDatagram(ipfix({ seq: 3 }, data), EXP, state)).toEqual([]);
  });

  it('drops data whose template never comes, counted with its reason, after pending_timeout', () => {
    const events: { reason: string; n: number }[] = [];
    const state = new FlowState({ ...DEFAULT_LIMITS, pendingTimeoutMs: 5000 }, { dropped: (reason, n) => void events.push({ reason, n }) });
    decodeFlowDatagram(ipfix({ seq: 0 }, set(999, Buffer.alloc(20))), EXP, state, 'auto', 1_000_000);
    state.sweep(1_004_000, true);
    expect(events).toEqual([]);
    state.sweep(1_006_000, true);
    expect(events).toEqual([{ reason: 'no_template', n: 1 }]);
    expect(state.pendingBytes).toBe(0);
  });

  it('forgets templates not refreshed within template_timeout', () => {
    const state = new FlowState({ ...DEFAULT_LIMITS, templateTimeoutMs: 60_000 });
    decodeFlowDatagram(ipfix({ seq: 0 }, set(2, templateRecord(256, FIVE_TUPLE))), EXP, state, 'auto', 0);
    const data = set(256, fiveTuple('10.0.0.1', '10.0.0.2', 1, 2, 6, 100, 1));
    expect(decodeFlowDatagram(ipfix({ seq: 0 }, data), EXP, state, 'auto', 30_000)).toHaveLength(1);
    expect(decodeFlowDatagram(ipfix({ seq: 1 }, data), EXP, state, 'auto', 120_000)).toEqual([]);
    expect(state.templateCount).toBe(0);
  });

  it('applies the PSAMP sampling rate and time base of an options record (softflowd sends these)', () => {
    const { state } = recorder();
    const opt = ipfixOptionsTemplate(
      258,
      [[143, 4]],
      [
        [160, 8],
        [305, 4],
        [306, 4],
      ],
    );
    const tpl = templateRecord(259, [...FIVE_TUPLE, [22, 4]]);
    const boot = 1_780_000_000_000;
    const dg = ipfix(
      { seq: 0 },
      set(2, tpl),
      set(3, opt),
      set(259, fiveTuple('10.0.0.1', '10.0.0.2', 1, 2, 6, 100, 1), u32(5000)),
      set(258, u32(1), u64(boot), u32(1), u32(9)),
    );
    const [rec] = decodeFlowDatagram(dg, EXP, state);
    expect(rec).toMatchObject({ samplingInterval: 10, flowStartMilliseconds: new Date(boot + 5000).toISOString() });
  });

  it('counts skipped data records per observation domain, and a sequence started over as a restart', () => {
    const { state, seen } = recorder();
    const t = set(2, templateRecord(256, FIVE_TUPLE));
    const rec = fiveTuple('10.0.0.1', '10.0.0.2', 1, 2, 6, 100, 1);
    decodeFlowDatagram(ipfix({ seq: 0 }, t, set(256, rec, rec)), EXP, state);
    decodeFlowDatagram(ipfix({ seq: 2 }, set(256, rec)), EXP, state);
    decodeFlowDatagram(ipfix({ seq: 10 }, set(256, rec)), EXP, state);
    decodeFlowDatagram(ipfix({ seq: 10, domain: 2 }, t, set(256, rec)), EXP, state); // another domain: its own sequence
    decodeFlowDatagram(ipfix({ seq: 0 }, t, set(256, rec)), EXP, state);
    expect(seen.gaps).toEqual([7]);
    expect(seen.restarts).toHaveLength(1);
  });
});

describe('sFlow v5', () => {
  it('decodes a flow sample’s raw packet header to addresses, ports and protocol, with the sampling rate', () => {
    const { state } = recorder();
    const frame = packetOf({ src: '10.5.0.1', dst: '10.6.0.2', protocol: 6, sport: 3333, dport: 22, packets: 1, payload: 100 }, 0);
    const dg = sflow({ seq: 1 }, flowSample({ seq: 1, rate: 512, input: 3, output: 7 }, sampledHeader(frame.subarray(0, 64), frame.length + 4)));
    const [rec] = decodeFlowDatagram(dg, EXP, state, 'sflow');
    expect(rec).toMatchObject({
      flow_protocol: 'sflow',
      flow_type: 'flow',
      agentAddress: '192.0.2.1',
      sourceIPv4Address: '10.5.0.1',
      destinationIPv4Address: '10.6.0.2',
      sourceTransportPort: 3333,
      destinationTransportPort: 22,
      protocolIdentifier: 6,
      octetDeltaCount: frame.length + 4,
      packetDeltaCount: 1,
      samplingInterval: 512,
      ingressInterface: 3,
      egressInterface: 7,
    });
  });

  it('decodes a counter sample into IF-MIB counters', () => {
    const { state } = recorder();
    const [rec] = decodeFlowDatagram(sflow({ seq: 1 }, counterSample({ seq: 4, ifIndex: 9, inOctets: 2 ** 40, outOctets: 77 })), EXP, state);
    expect(rec).toMatchObject({ flow_type: 'counters', ifIndex: 9, ifInOctets: 2 ** 40, ifOutOctets: 77, ifSpeed: 1_000_000_000 });
  });

  it('counts lost datagrams from the datagram sequence', () => {
    const { state, seen } = recorder();
    for (const seq of [1, 2, 6])
      decodeFlowDatagram(sflow({ seq, uptime: seq * 1000 }, counterSample({ seq, ifIndex: 1, inOctets: 1, outOctets: 1 })), EXP, state);
    expect(seen.gaps).toEqual([3]);
  });
});

describe('auto and protocol', () => {
  it('tells the formats apart by their version, and refuses one the source was not configured for', () => {
    const { state } = recorder();
    expect(() => decodeFlowDatagram(sflow({ seq: 1 }), EXP, state, 'ipfix')).toThrow(/a sflow datagram on a source of protocol ipfix/);
    expect(() => decodeFlowDatagram(Buffer.from('hello world'), EXP, state)).toThrow(FlowDecodeError);
    expect(decodeFlowDatagram(Buffer.concat([u16(10), u16(16), u32(0), u32(0), u32(0)]), EXP, state)).toEqual([]);
  });
});
