// Hostile flow datagrams (issue 31): every count and length the wire claims is checked against the
// bytes that follow. Truncated packets, templates and sets of length 0, 65535-byte variable-length
// fields, templates after their data and withdrawn, floods of templates, exporters and held data
// sets: each is an error with a reason (FlowDecodeError, nothing else), or bounded by a cap and
// counted, within a time bound. Then through the source: each bad datagram is dead-lettered at stage
// parse with its reason and its bytes, and the flows around it are delivered.
import { afterEach, describe, expect, it } from 'vitest';
import { decodeFlowDatagram } from '../../src/plugins/connectors/flow/decode.js';
import { MAX_RECORDS_PER_DATAGRAM } from '../../src/plugins/connectors/flow/netflow.js';
import { FlowDecodeError } from '../../src/plugins/connectors/flow/reader.js';
import { DEFAULT_LIMITS, FlowState } from '../../src/plugins/connectors/flow/state.js';
import {
  counterSample,
  FIVE_TUPLE,
  fiveTuple,
  flowSample,
  ipfix,
  netflow5,
  netflow9,
  sampledHeader,
  set,
  sflow,
  templateRecord,
  u16,
  u32,
  u8,
  varlen,
} from '../helpers/flow-wire.js';
import { until } from '../helpers/wait.js';
import { flowPipeline } from '../connectors/peers/flow.js';

const EXP = '203.0.113.9';
/** Time one hostile datagram may take to be refused: generous, far below what a loop over a claimed count would take. */
const MAX_MS = 200;

/** Decodes `dg` and returns the reason it was refused; fails on success or on any other error. */
function refused(dg: Buffer, state = new FlowState()): string {
  const t0 = performance.now();
  try {
    decodeFlowDatagram(dg, EXP, state);
  } catch (e) {
    expect(e).toBeInstanceOf(FlowDecodeError);
    expect(performance.now() - t0).toBeLessThan(MAX_MS);
    return (e as Error).message;
  }
  throw new Error('the datagram was accepted');
}

const f5 = { src: '10.0.0.1', dst: '10.0.0.2', packets: 1, bytes: 40, sport: 1, dport: 2, protocol: 6 };
const goodIpfix = () => ipfix({ seq: 0 }, set(2, templateRecord(256, FIVE_TUPLE)), set(256, fiveTuple('10.0.0.1', '10.0.0.2', 1, 2, 6, 100, 1)));

describe('truncated datagrams', () => {
  it('every format, cut at every length, is refused with a reason (or decodes what is whole)', () => {
    const whole = [
      netflow5({ seq: 0 }, [f5, f5]),
      netflow9({ seq: 0 }, set(0, templateRecord(256, FIVE_TUPLE)), set(256, fiveTuple('10.0.0.1', '10.0.0.2', 1, 2, 6, 100, 1))),
      goodIpfix(),
      sflow({ seq: 1 }, flowSample({ seq: 1, rate: 10 }, sampledHeader(Buffer.alloc(60, 1))), counterSample({ seq: 1, ifIndex: 1, inOctets: 1, outOctets: 1 })),
    ];
    for (const dg of whole) {
      for (let n = 0; n < dg.length; n++) {
        try {
          decodeFlowDatagram(dg.subarray(0, n), EXP, new FlowState());
        } catch (e) {
          expect(e, `${dg.subarray(0, 2).toString('hex')} cut at ${n}`).toBeInstanceOf(FlowDecodeError);
        }
      }
    }
  });

  it('counts that claim more than follows: v5 count, IPFIX message length, set length, sFlow sample and record counts', () => {
    expect(refused(netflow5({ seq: 0 }, [f5]).subarray(0, 40))).toMatch(/truncated: NetFlow v5 count 1 needs 72 bytes/);
    const claimsMore = Buffer.from(netflow5({ seq: 0 }, [f5]));
    claimsMore.writeUInt16BE(30, 2);
    expect(refused(claimsMore)).toMatch(/count 30 needs 1464 bytes/);
    const longIpfix = Buffer.from(goodIpfix());
    longIpfix.writeUInt16BE(60_000, 2);
    expect(refused(longIpfix)).toMatch(/IPFIX message length 60000/);
    expect(refused(ipfix({ seq: 0 }, Buffer.concat([u16(256), u16(5000), Buffer.alloc(8)])))).toMatch(/set 256 of length 5000/);
    expect(refused(sflow({ seq: 1 }, Buffer.alloc(0)).subarray(0, 28).fill(0xff, 24, 28))).toMatch(/truncated: 4294967295 samples/);
    const records = Buffer.concat([u32(1), u32(32), u32(1), u32(3), u32(10), u32(10), u32(0), u32(3), u32(7), u32(0xffff_ffff)]);
    expect(refused(sflow({ seq: 1 }, records))).toMatch(/4294967295 flow records/);
  });
});

describe('zero lengths', () => {
  it('a set of length 0 (it would never advance) and a template field of length 0 are refused; nothing of the datagram is learned', () => {
    const state = new FlowState();
    expect(refused(ipfix({ seq: 0 }, Buffer.concat([u16(2), u16(0)])), state)).toMatch(/length 0 is shorter than its header/);
    expect(refused(netflow9({ seq: 0 }, Buffer.concat([u16(0), u16(0)])), state)).toMatch(/length 0 is shorter than its header/);
    // A good template, then one with a zero-length field, in one datagram: neither is learned.
    const dg = ipfix({ seq: 0 }, set(2, templateRecord(256, FIVE_TUPLE), templateRecord(257, [[8, 0]])));
    expect(refused(dg, state)).toMatch(/template 257: field sourceIPv4Address has length 0/);
    expect(state.templateCount).toBe(0);
    expect(refused(netflow9({ seq: 0 }, set(0, templateRecord(300, []))))).toMatch(/a template of no fields/);
  });
});

describe('65535-byte variable-length fields', () => {
  it('a field that claims 65535 bytes with fewer behind it is refused; the longest that fits in a message decodes', () => {
    const state = new FlowState();
    decodeFlowDatagram(ipfix({ seq: 0 }, set(2, templateRecord(256, [[82, 65535]]))), EXP, state);
    const claim = ipfix({ seq: 0 }, set(256, u8(255), u16(65535), Buffer.alloc(100, 0x41)));
    expect(refused(claim, state)).toMatch(/truncated: interfaceName of template 256 needs 65535 bytes/);
    // IPFIX message lengths are 16 bits: 65,510 bytes of value is as long as a message can carry.
    const big = Buffer.alloc(65_535 - 16 - 4 - 3, 0x42);
    const recs = decodeFlowDatagram(ipfix({ seq: 0 }, set(256, varlen(big))), EXP, state);
    expect(recs).toHaveLength(1);
    expect((recs[0]!.interfaceName as string).length).toBe(big.length);
  });

  it('variable length in a NetFlow v9 template (which has none) is refused', () => {
    expect(refused(netflow9({ seq: 0 }, set(0, templateRecord(256, [[82, 65535]]))))).toMatch(/NetFlow v9 has no variable-length fields/);
  });

  it('a template of 1-byte records cannot turn one datagram into 60,000 records', () => {
    const state = new FlowState();
    decodeFlowDatagram(ipfix({ seq: 0 }, set(2, templateRecord(256, [[4, 1]]))), EXP, state);
    expect(refused(ipfix({ seq: 0 }, set(256, Buffer.alloc(60_000, 6))), state)).toMatch(new RegExp(`more than ${MAX_RECORDS_PER_DATAGRAM} records`));
  });
});

describe('templates after data, withdrawal, and the caps', () => {
  it('data held for templates that never come is capped per exporter and in bytes, then expires, each drop counted', () => {
    const drops: Record<string, number> = {};
    const state = new FlowState(
      { ...DEFAULT_LIMITS, maxPendingPerExporter: 50, pendingTimeoutMs: 1000 },
      { dropped: (reason, n) => void (drops[reason] = (drops[reason] ?? 0) + n) },
    );
    for (let i = 0; i < 500; i++) decodeFlowDatagram(ipfix({ seq: i }, set(256 + i, Buffer.alloc(1000))), EXP, state, 'auto', 0);
    expect(state.pendingBytes).toBe(50 * 1000);
    expect(drops.pending_limit).toBe(450);
    state.sweep(5000, true);
    expect(state.pendingBytes).toBe(0);
    expect(drops.no_template).toBe(50);
  });

  it('a withdrawn template no longer decodes data; a withdrawal of a reserved id is refused', () => {
    const state = new FlowState();
    decodeFlowDatagram(goodIpfix(), EXP, state);
    expect(state.templateCount).toBe(1);
    decodeFlowDatagram(ipfix({ seq: 1 }, set(2, u16(256), u16(0))), EXP, state);
    expect(state.templateCount).toBe(0);
    expect(decodeFlowDatagram(ipfix({ seq: 1 }, set(256, fiveTuple('10.0.0.1', '10.0.0.2', 1, 2, 6, 100, 1))), EXP, state)).toEqual([]);
    expect(refused(ipfix({ seq: 2 }, set(2, u16(7), u16(0))), state)).toMatch(/withdrawal of template id 7/);
  });

  it('a flood of template ids and of exporters stays within the caps', () => {
    const state = new FlowState({ ...DEFAULT_LIMITS, maxTemplatesPerExporter: 100, maxExporters: 20 });
    for (let i = 0; i < 2000; i++) decodeFlowDatagram(ipfix({ seq: 0 }, set(2, templateRecord(256 + i, [[8, 4]]))), EXP, state);
    expect(state.templateCount).toBe(100);
    for (let i = 0; i < 500; i++) decodeFlowDatagram(goodIpfix(), `10.9.${i >> 8}.${i & 255}`, state);
    expect(state.exporters.size).toBe(20);
    expect(state.templateCount).toBe(20);
  });

  it('mutated datagrams of every format end in records or a FlowDecodeError, nothing else', () => {
    let seed = 31;
    const rand = () => (seed = (seed * 1_103_515_245 + 12_345) & 0x7fff_ffff) / 0x8000_0000;
    const bases = [
      netflow5({ seq: 0 }, [f5]),
      goodIpfix(),
      netflow9({ seq: 0 }, set(0, templateRecord(256, FIVE_TUPLE)), set(256, fiveTuple('10.0.0.1', '10.0.0.2', 1, 2, 6, 100, 1))),
      sflow({ seq: 1 }, flowSample({ seq: 1, rate: 10 }, sampledHeader(Buffer.alloc(60, 1))), counterSample({ seq: 1, ifIndex: 1, inOctets: 1, outOctets: 1 })),
    ];
    const state = new FlowState();
    const t0 = performance.now();
    for (let i = 0; i < 20_000; i++) {
      const dg = Buffer.from(bases[i % bases.length]!);
      for (let k = 1 + Math.floor(rand() * 4); k > 0; k--) dg[Math.floor(rand() * dg.length)] = Math.floor(rand() * 256);
      try {
        decodeFlowDatagram(dg, EXP, state);
      } catch (e) {
        if (!(e instanceof FlowDecodeError)) throw e;
      }
    }
    expect(performance.now() - t0).toBeLessThan(20_000);
  });
});

describe('through the flow source', () => {
  let run: Awaited<ReturnType<typeof flowPipeline>> | undefined;
  afterEach(async () => {
    await run?.end();
    run = undefined;
  });

  it('each bad datagram is dead-lettered at stage parse with its reason and bytes; the flows around them are delivered', async () => {
    run = await flowPipeline({ protocol: 'auto' });
    const truncated = netflow5({ seq: 0 }, [f5, f5]).subarray(0, 80);
    const zeroSet = ipfix({ seq: 0 }, Buffer.concat([u16(2), u16(0)]));
    const zeroField = ipfix({ seq: 0 }, set(2, templateRecord(300, [[8, 0]])));
    const claim = ipfix({ seq: 1 }, set(256, u8(255), u16(65535), Buffer.alloc(10)));
    await run.send(netflow5({ seq: 0 }, [f5]), truncated, zeroSet, ipfix({ seq: 0 }, set(2, templateRecord(256, [[82, 65535]]))), claim, zeroField);
    await run.send(netflow5({ seq: 1 }, [{ ...f5, bytes: 77 }]));
    await until(() => run!.deadLetters().length === 4 && run!.records().length === 2, 10_000, 'four dead letters and two flows');
    const dead = run.deadLetters();
    expect(dead.map((d) => d._stage)).toEqual(['parse', 'parse', 'parse', 'parse']);
    expect(dead.map((d) => Buffer.from(d.raw as string, 'base64').toString('hex')).sort()).toEqual(
      [truncated, zeroSet, claim, zeroField].map((b) => b.toString('hex')).sort(),
    );
    const reasons = dead.map((d) => d._error as string).join('\n');
    expect(reasons).toMatch(/flow datagram from 127.0.0.1: truncated: NetFlow v5 count 2/);
    expect(reasons).toMatch(/length 0 is shorter than its header/);
    expect(reasons).toMatch(/interfaceName of template 256 needs 65535 bytes/);
    expect(reasons).toMatch(/field sourceIPv4Address has length 0/);
    expect(run.records().map((r) => r.octetDeltaCount)).toEqual([40, 77]);
  });
});
