// The agent against hostile or odd datagrams and requests: each is answered (or dropped and logged)
// and the agent goes on serving; checked with raw datagrams and with Debian's snmpget/snmpset.
import { createSocket, type Socket } from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { SnmpAgent, type ActivityEntry } from '../../src/snmp/agent.js';
import { BerError, BerReader } from '../../src/snmp/ber.js';
import { decodeMessage, encodeCommunity, encodeV3, PduType, unwrapV3, type Pdu, type V3Message } from '../../src/snmp/message.js';
import { run } from './peers.js';

const agents: SnmpAgent[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) await a.stop();
  for (const s of sockets.splice(0)) s.close();
});

async function agentWithLog(opts: ConstructorParameters<typeof SnmpAgent>[0] = {}) {
  const log: ActivityEntry[] = [];
  const agent = new SnmpAgent({ host: '127.0.0.1', port: 0, onActivity: (e) => log.push(e), ...opts });
  await agent.start();
  agents.push(agent);
  return { agent, log, target: `127.0.0.1:${agent.port}` };
}

/** Sends one datagram; resolves with the answer, or null when none comes within `ms`. */
async function exchange(port: number, msg: Buffer, ms = 1000): Promise<Buffer | null> {
  const s = createSocket('udp4');
  sockets.push(s);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), ms);
    s.once('message', (m) => {
      clearTimeout(timer);
      resolve(m);
    });
    s.send(msg, port, '127.0.0.1');
  });
}

/** A BER TLV with a definite length (short or long form). */
function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const n = body.length;
  const len = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), len, body]);
}
const hex = (h: string) => Buffer.from(h, 'hex');
/** A v1/v2c message (version 0/1) with one varbind of raw OID content and raw value TLV. */
function rawMessage(version: number, community: string, pduType: number, oidContent: Buffer, value: Buffer): Buffer {
  const varbinds = tlv(0x30, tlv(0x30, tlv(0x06, oidContent), value));
  const pdu = tlv(pduType, hex('020101'), hex('020100'), hex('020100'), varbinds);
  return tlv(0x30, tlv(0x02, Buffer.from([version])), tlv(0x04, Buffer.from(community)), pdu);
}

const sysName = (target: string) => run('snmpget', ['-v2c', '-c', 'public', '-On', '-t', '1', '-r', '0', target, '1.3.6.1.2.1.1.5.0']);

describe('OID decoding (RFC 2578 limits, as net-snmp)', () => {
  const oidOf = (content: string) => new BerReader(tlv(0x06, hex(content))).oid();

  it('refuses an OID that ends inside a sub-identifier, arcs above 2^32-1 and more than 128 arcs', () => {
    expect(oidOf('2b0601')).toBe('1.3.6.1');
    expect(oidOf('2b8fffffff7f')).toBe('1.3.4294967295');
    expect(() => oidOf('80')).toThrow(BerError);
    expect(() => oidOf('2b0681')).toThrow(/inside a sub-identifier/);
    expect(() => oidOf('2b9080808000')).toThrow(/above 4294967295/);
    expect(() => oidOf('2b' + '01'.repeat(126))).not.toThrow();
    expect(() => oidOf('2b' + '01'.repeat(127))).toThrow(/128/);
  });

  it('a GET whose OID is all continuation bytes, or has a 200-byte arc, is logged as malformed; the agent still serves', async () => {
    const { agent, log, target } = await agentWithLog();
    // A v2c GET of the OID `06 01 80` (decoded to nothing before the fix, then echoed: a crash).
    expect(await exchange(agent.port, rawMessage(1, 'public', 0xa0, hex('80'), hex('0500')), 300)).toBeNull();
    // A 200-byte sub-identifier (decoded to Infinity before the fix: the echo never ended).
    const huge = Buffer.concat([hex('2b'), Buffer.alloc(199, 0xff), hex('01')]);
    expect(await exchange(agent.port, rawMessage(1, 'public', 0xa0, huge, hex('0500')), 300)).toBeNull();
    expect(log.filter((e) => e.error?.startsWith('malformed message')).map((e) => e.error)).toEqual([
      expect.stringContaining('inside a sub-identifier'),
      expect.stringContaining('above 4294967295'),
    ]);
    expect(await sysName(target)).toContain('STRING');
  });

  it('values are decoded as leniently as net-snmp does; a SET of an Integer32 out of range is wrongValue', async () => {
    const { agent, log } = await agentWithLog({ writeCommunity: 'private' });
    // SET 1.3.6.1.4.1.9.<n>.0 to a raw value.
    const set = async (version: number, n: number, value: string) => {
      const answer = await exchange(agent.port, rawMessage(version, 'private', 0xa3, hex(`2b0601040109${n.toString(16).padStart(2, '0')}00`), hex(value)));
      return (decodeMessage(answer!) as { pdu: Pdu }).pdu.errorStatus;
    };
    // INTEGER 2^31 in 5 bytes: read as 2147483648 (net-snmp prints it so), refused as a value.
    expect(await set(1, 1, '02050080000000')).toBe(10);
    expect(await set(0, 1, '02050080000000')).toBe(3);
    // A 5-byte Counter32 keeps its low 32 bits; a 9-byte Counter64 of 2^64 + 9 its low 64: both taken.
    expect(await set(1, 2, '41050100000007')).toBe(0);
    expect(await set(1, 3, '4609010000000000000009')).toBe(0);
    const got = await run('snmpget', [
      '-v2c',
      '-c',
      'public',
      '-On',
      '-t',
      '1',
      '-r',
      '0',
      `127.0.0.1:${agent.port}`,
      '1.3.6.1.4.1.9.1.0',
      '1.3.6.1.4.1.9.2.0',
      '1.3.6.1.4.1.9.3.0',
    ]);
    expect(got.trim().split('\n')).toEqual([
      '.1.3.6.1.4.1.9.1.0 = No Such Object available on this agent at this OID',
      '.1.3.6.1.4.1.9.2.0 = Counter32: 7',
      '.1.3.6.1.4.1.9.3.0 = Counter64: 9',
    ]);
    expect(log.filter((e) => e.error)).toEqual([]);
  });
});

describe('engine boots', () => {
  it('are taken from the options (default 1) and must be 0..2147483646', async () => {
    expect(new SnmpAgent({ device: false }).engineBoots).toBe(1);
    expect(new SnmpAgent({ device: false, engineBoots: 2147483646 }).engineBoots).toBe(2147483646);
    for (const engineBoots of [-1, 1.5, 2147483647])
      expect(() => new SnmpAgent({ device: false, engineBoots })).toThrow(/engine boots must be 0\.\.2147483646/);
  });
});

describe('SET', () => {
  it('a read-only community gets noAccess (as from snmpd); exception values are wrongType and not stored', async () => {
    const { log, target } = await agentWithLog({ writeCommunity: 'private' });
    await expect(run('snmpset', ['-v2c', '-c', 'public', '-t', '1', '-r', '0', target, '1.3.6.1.4.1.9.1.0', 'i', '5'])).rejects.toThrow(/noAccess/);
    await expect(run('snmpset', ['-v2c', '-c', 'private', '-t', '1', '-r', '0', target, '1.3.6.1.4.1.9.2.0', 'n', 'x'])).rejects.toThrow(/wrongType/);
    await expect(run('snmpset', ['-v1', '-c', 'private', '-t', '1', '-r', '0', target, '1.3.6.1.4.1.9.2.0', 'n', 'x'])).rejects.toThrow(/badValue/);
    expect(await run('snmpset', ['-v2c', '-c', 'private', '-On', '-t', '1', '-r', '0', target, '1.3.6.1.4.1.9.3.0', 'i', '7'])).toContain('INTEGER: 7');
    // The refused Null was not stored: the walk shows only the INTEGER.
    const walk = await run('snmpwalk', ['-v2c', '-c', 'public', '-On', '-t', '1', '-r', '0', target, '1.3.6.1.4.1.9']);
    expect(walk.trim().split('\n')[0]).toBe('.1.3.6.1.4.1.9.3.0 = INTEGER: 7');
    expect(walk).not.toContain('9.2.0');
    expect(log.filter((e) => e.request === 'set')).toHaveLength(4);
  });
});

describe('messages an agent does not serve', () => {
  it('a trap sent to the agent, and a v1 GETBULK, are logged as refused (request unknown / getbulk)', async () => {
    const { agent, log, target } = await agentWithLog();
    await run('snmptrap', ['-v2c', '-c', 'public', target, '', '1.3.6.1.6.3.1.1.5.3']);
    const bulk: Pdu = { type: PduType.GetBulk, requestId: 9, errorStatus: 0, errorIndex: 5, varbinds: [{ oid: '1.3.6.1.2.1.1', type: 'Null', value: null }] };
    expect(await exchange(agent.port, encodeCommunity(0, 'public', bulk), 300)).toBeNull();
    await expect.poll(() => log.length).toBe(2);
    expect(log.map((e) => [e.request, e.error])).toEqual([
      ['unknown', 'unsupported PDU type 0xa7 (an agent answers get, getnext, getbulk and set)'],
      ['getbulk', 'GETBULK is not part of SNMPv1'],
    ]);
  });
});

describe('SNMPv3 header checks (RFC 3412 7.2)', () => {
  const header = (agent: SnmpAgent, maxSize: number) => ({
    msgId: 77,
    maxSize,
    reportable: true,
    engineId: agent.engineId,
    boots: 0,
    time: 0,
    userName: 'plain',
    contextEngineId: agent.engineId,
    contextName: '',
  });
  const bulk: Pdu = { type: PduType.GetBulk, requestId: 78, errorStatus: 0, errorIndex: 50, varbinds: [{ oid: '1.3.6.1.2.1.2.2', type: 'Null', value: null }] };

  it('a GETBULK answer fits the manager msgMaxSize; below 484 the message is dropped', async () => {
    const { agent, log } = await agentWithLog({ users: [{ name: 'plain' }] });
    const big = await exchange(agent.port, encodeV3(header(agent, 65507), null, bulk));
    const small = await exchange(agent.port, encodeV3(header(agent, 484), null, bulk));
    expect(big!.length).toBeGreaterThan(484);
    expect(small!.length).toBeLessThanOrEqual(484);
    // Both are answers with rows (the small one with fewer), not tooBig.
    const rows = (m: Buffer) => {
      const r = unwrapV3(decodeMessage(m) as V3Message, null);
      if ('error' in r) throw new Error(r.error);
      expect((r.pdu as Pdu).errorStatus).toBe(0);
      return (r.pdu as Pdu).varbinds.length;
    };
    expect(rows(big!)).toBe(50);
    expect(rows(small!)).toBeGreaterThan(0);
    expect(rows(small!)).toBeLessThan(50);
    expect(await exchange(agent.port, encodeV3(header(agent, 400), null, bulk), 300)).toBeNull();
    expect(log.at(-1)!.error).toBe('msgMaxSize 400 below 484');
  });

  it('a GET answer that does not fit is tooBig; a GETBULK keeps at least its first varbind or is tooBig', async () => {
    const big = (n: number) => ({ oid: `1.3.6.1.4.1.99.${n}.0`, type: 'OctetString', value: 'x'.repeat(400) });
    const { agent } = await agentWithLog({ users: [{ name: 'plain' }], device: false, overrides: [big(1), big(2)] });
    const answer = async (pdu: Pdu, maxSize: number) => {
      const r = unwrapV3(decodeMessage((await exchange(agent.port, encodeV3(header(agent, maxSize), null, pdu)))!) as V3Message, null);
      if ('error' in r) throw new Error(r.error);
      return { status: (r.pdu as Pdu).errorStatus, oids: (r.pdu as Pdu).varbinds.map((v) => v.oid) };
    };
    const get: Pdu = {
      type: PduType.Get,
      requestId: 81,
      errorStatus: 0,
      errorIndex: 0,
      varbinds: [1, 2].map((n) => ({ oid: `1.3.6.1.4.1.99.${n}.0`, type: 'Null' as const, value: null })),
    };
    expect(await answer(get, 2000)).toEqual({ status: 0, oids: ['1.3.6.1.4.1.99.1.0', '1.3.6.1.4.1.99.2.0'] });
    expect(await answer(get, 700)).toEqual({ status: 1, oids: [] });
    const walk: Pdu = {
      type: PduType.GetBulk,
      requestId: 82,
      errorStatus: 0,
      errorIndex: 10,
      varbinds: [{ oid: '1.3.6.1.4.1.99', type: 'Null', value: null }],
    };
    expect(await answer(walk, 700)).toEqual({ status: 0, oids: ['1.3.6.1.4.1.99.1.0'] });
    expect(await answer(walk, 484)).toEqual({ status: 1, oids: [] });
  });
});
