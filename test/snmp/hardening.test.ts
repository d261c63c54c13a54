// Hostile and broken peers: GETBULK error statuses (tooBig, genErr, authorizationError), spoofed
// v3 answers to the manager session, malformed notifications, replayed v3 informs and forged v3
// traps that must be refused before any key work. Broken peers are raw datagrams on loopback;
// the correct-behaviour checks use snmpd, snmpinform and our agent.
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { SnmpAgent, SnmpResponseError, SnmpSession, SnmpTimeoutError, TrapReceiver, walk, type TrapEvent } from '../../src/snmp/index.js';
import { decodeMessage, encodeCommunity, encodeV3, PduType, unwrapV3, USM_STATS, type AnyPdu, type Pdu, type V3Message } from '../../src/snmp/message.js';
import { localize, makeUser, type LocalUser, type UsmUserConfig } from '../../src/snmp/usm.js';
import type { VarBind } from '../../src/snmp/values.js';
import { run, startSnmpd, V3_USER, type Peer } from './peers.js';
import { quiet, until } from '../helpers/wait.js';

// Counts key localisations (the receiver must not localise for messages it can refuse cheaply).
vi.mock('../../src/snmp/usm.js', async (importOriginal) => {
  const mod = await importOriginal<typeof import('../../src/snmp/usm.js')>();
  return { ...mod, localize: vi.fn(mod.localize) };
});

/** A loopback UDP socket on an ephemeral port that answers each datagram with `answer` (if any). */
async function udpPeer(answer: (buf: Buffer, rinfo: RemoteInfo) => Buffer | undefined): Promise<{ port: number; socket: Socket; close(): Promise<void> }> {
  const socket = createSocket('udp4');
  socket.on('message', (buf, rinfo) => {
    const out = answer(buf, rinfo);
    if (out) socket.send(out, rinfo.port, rinfo.address);
  });
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', () => r()));
  return { port: socket.address().port, socket, close: () => new Promise<void>((r) => socket.close(() => r())) };
}

const SYS_UPTIME = '1.3.6.1.2.1.1.3.0';
const TRAP_OID = '1.3.6.1.6.3.1.1.4.1.0';
const upTicks = (v = 42): VarBind => ({ oid: SYS_UPTIME, type: 'TimeTicks', value: v });
const trapOid = (v = '1.3.6.1.6.3.1.1.5.3'): VarBind => ({ oid: TRAP_OID, type: 'ObjectIdentifier', value: v });

// ---------------------------------------------------------------------------------------------
describe('walker: GETBULK error statuses', () => {
  /** A v2c agent serving `oids` (Integer32 values) that answers GETBULK with `error(maxRep)` when non-zero. */
  function bulkAgent(oids: string[], error: (maxRep: number) => number) {
    const reps: number[] = [];
    return {
      reps,
      peer: udpPeer((buf) => {
        const m = decodeMessage(buf) as { version: 0 | 1; community: Buffer; pdu: Pdu };
        const q = m.pdu;
        reps.push(q.errorIndex);
        const es = error(q.errorIndex);
        const from = q.varbinds[0]!.oid;
        const next = oids.filter((o) => o > from).slice(0, q.errorIndex);
        const res: Pdu = es
          ? { type: PduType.Response, requestId: q.requestId, errorStatus: es, errorIndex: es === 1 ? 0 : 1, varbinds: es === 1 ? [] : q.varbinds }
          : {
              type: PduType.Response,
              requestId: q.requestId,
              errorStatus: 0,
              errorIndex: 0,
              varbinds: next.length ? next.map((oid) => ({ oid, type: 'Integer32', value: 1 })) : [{ oid: from, type: 'EndOfMibView', value: null }],
            };
        return encodeCommunity(m.version, m.community, res);
      }),
    };
  }
  // Same length so string order is OID order.
  const OIDS = Array.from({ length: 30 }, (_, i) => `1.3.6.1.4.1.99.${10 + i}`);

  it('tooBig is retried with half the max-repetitions (down to 1), then the walk completes', async () => {
    const a = bulkAgent(OIDS, (n) => (n > 3 ? 1 : 0));
    const peer = await a.peer;
    try {
      const out = await walk({ host: '127.0.0.1', port: peer.port, oid: '1.3.6.1.4.1.99', maxRepetitions: 12, timeoutMs: 500, retries: 0 });
      expect(out.map((v) => v.oid)).toEqual(OIDS);
      // 12 -> 6 -> 3, and 3 kept for the rest of the walk.
      expect(a.reps.slice(0, 4)).toEqual([12, 6, 3, 3]);
      expect(new Set(a.reps.slice(2))).toEqual(new Set([3]));
    } finally {
      await peer.close();
    }
  });

  it('tooBig even at max-repetitions 1 fails the walk instead of returning a partial result', async () => {
    const a = bulkAgent(OIDS, () => 1);
    const peer = await a.peer;
    try {
      const err = await walk({ host: '127.0.0.1', port: peer.port, oid: '1.3.6.1.4.1.99', maxRepetitions: 5, timeoutMs: 500, retries: 0 }).catch((e) => e);
      expect(err).toBeInstanceOf(SnmpResponseError);
      expect(err).toMatchObject({ errorStatus: 1, message: expect.stringMatching(/tooBig/) });
      expect(a.reps).toEqual([5, 2, 1]);
    } finally {
      await peer.close();
    }
  });

  for (const [name, status] of [
    ['genErr', 5],
    ['authorizationError', 16],
  ] as const)
    it(`${name} on GETBULK fails the walk`, async () => {
      const a = bulkAgent(OIDS, () => status);
      const peer = await a.peer;
      try {
        await expect(walk({ host: '127.0.0.1', port: peer.port, oid: '1.3.6.1.4.1.99', timeoutMs: 500, retries: 0 })).rejects.toMatchObject({
          name: 'SnmpResponseError',
          errorStatus: status,
          message: expect.stringContaining(name),
        });
        expect(a.reps).toEqual([25]);
      } finally {
        await peer.close();
      }
    });

  it('our agent: an object too big for any response fails the walk with tooBig after 5 -> 2 -> 1', async () => {
    let bulks = 0;
    const agent = new SnmpAgent({
      port: 0,
      device: false,
      overrides: [
        { oid: '1.3.6.1.4.1.9.1.0', type: 'OctetString', value: 'a' },
        { oid: '1.3.6.1.4.1.9.2.0', type: 'OctetString', value: 'b'.repeat(65100) },
        { oid: '1.3.6.1.4.1.9.3.0', type: 'OctetString', value: 'c' },
      ],
      onActivity: (e) => void (e.request === 'getbulk' && bulks++),
    });
    const port = await agent.start();
    try {
      await expect(walk({ host: '127.0.0.1', port, oid: '1.3.6.1.4.1.9', maxRepetitions: 5, timeoutMs: 1000, retries: 0 })).rejects.toMatchObject({
        errorStatus: 1,
        message: expect.stringMatching(/tooBig/),
      });
      // The first step gets 1.3.6.1.4.1.9.1.0 (trimmed to fit), then three tries for the big one.
      expect(bulks).toBe(4);
    } finally {
      await agent.stop();
    }
  });
});

// ---------------------------------------------------------------------------------------------
describe('v3 session: answers must match the request (RFC 3412 7.2 step 12)', () => {
  const USER: UsmUserConfig = { name: 'u1', authProtocol: 'SHA', authKey: 'authpass123', privProtocol: 'AES', privKey: 'privpass123' };
  const ENGINE = Buffer.from('80001f8880deadbeef00000001', 'hex');
  const OTHER = Buffer.from('80001f8880deadbeef00000002', 'hex');
  const local = localize(makeUser(USER), ENGINE);
  const authOnly: LocalUser = { name: local.name, auth: local.auth };

  type Answer = (m: V3Message, pdu: AnyPdu) => { header?: Partial<Parameters<typeof encodeV3>[0]>; keys: LocalUser | null; pdu: Pdu };
  /** A v3 agent for ENGINE: discovery as usual, then `answer` for every request; records requests (boots, time). */
  async function fakeAgent(answer: Answer) {
    const seen: { boots: number; time: number; flags: number }[] = [];
    const peer = await udpPeer((buf) => {
      const m = decodeMessage(buf) as V3Message;
      const base = {
        msgId: m.msgId,
        maxSize: 65507,
        reportable: false,
        engineId: ENGINE,
        boots: 1,
        time: 10,
        userName: m.userName,
        contextEngineId: ENGINE,
        contextName: '',
      };
      if (m.engineId.length === 0)
        return encodeV3(base, null, {
          type: PduType.Report,
          requestId: m.msgId,
          errorStatus: 0,
          errorIndex: 0,
          varbinds: [{ oid: USM_STATS.unknownEngineIDs, type: 'Counter32', value: 1 }],
        });
      seen.push({ boots: m.boots, time: m.time, flags: m.flags });
      const res = unwrapV3(m, local);
      if ('error' in res) return undefined;
      const a = answer(m, res.pdu);
      return encodeV3({ ...base, ...a.header }, a.keys, a.pdu);
    });
    return { peer, seen };
  }
  const response = (q: AnyPdu, value = 'real'): Pdu => ({
    type: PduType.Response,
    requestId: q.requestId,
    errorStatus: 0,
    errorIndex: 0,
    varbinds: [{ oid: '1.3.6.1.2.1.1.5.0', type: 'OctetString', value: Buffer.from(value) }],
  });
  const open = (port: number) => SnmpSession.open({ host: '127.0.0.1', port, version: '3', user: USER, timeoutMs: 300, retries: 0 });

  const spoofs: [string, Answer][] = [
    ['noAuthNoPriv response to an authPriv request', (_m, q) => ({ keys: null, pdu: response(q, 'spoofed') })],
    ['authNoPriv response to an authPriv request', (_m, q) => ({ keys: authOnly, pdu: response(q, 'spoofed') })],
    ['response for another user name', (_m, q) => ({ header: { userName: 'u2' }, keys: local, pdu: response(q, 'spoofed') })],
    ['response from another engine ID', (_m, q) => ({ header: { engineId: OTHER, contextEngineId: OTHER }, keys: local, pdu: response(q, 'spoofed') })],
    ['response with another request-id', (_m, q) => ({ keys: local, pdu: { ...response(q, 'spoofed'), requestId: q.requestId + 1 } })],
  ];
  for (const [name, answer] of spoofs)
    it(`a ${name} is not taken as the answer (timeout)`, async () => {
      const { peer } = await fakeAgent(answer);
      const s = await open(peer.port);
      try {
        await expect(s.get(['1.3.6.1.2.1.1.5.0'])).rejects.toBeInstanceOf(SnmpTimeoutError);
      } finally {
        s.close();
        await peer.close();
      }
    });

  it('the matching authPriv response is taken (control for the cases above)', async () => {
    const { peer } = await fakeAgent((_m, q) => ({ keys: local, pdu: response(q) }));
    const s = await open(peer.port);
    try {
      expect(String((await s.get(['1.3.6.1.2.1.1.5.0'])).varbinds[0]!.value)).toBe('real');
    } finally {
      s.close();
      await peer.close();
    }
  });

  it('an unauthenticated notInTimeWindows report is an error and does not move the engine time', async () => {
    let n = 0;
    const { peer, seen } = await fakeAgent((m, q) =>
      n++ === 0
        ? {
            header: { boots: 99, time: 999_999 },
            keys: null,
            pdu: {
              type: PduType.Report,
              requestId: m.msgId,
              errorStatus: 0,
              errorIndex: 0,
              varbinds: [{ oid: USM_STATS.notInTimeWindows, type: 'Counter32', value: 1 }],
            },
          }
        : { keys: local, pdu: response(q) },
    );
    const s = await open(peer.port);
    try {
      await expect(s.get(['1.3.6.1.2.1.1.5.0'])).rejects.toThrow(/notInTimeWindows/);
      expect(String((await s.get(['1.3.6.1.2.1.1.5.0'])).varbinds[0]!.value)).toBe('real');
      // Every request still carried the discovered boots 1 and a time near 10, not 99 / 999999.
      expect(seen.length).toBe(2);
      for (const r of seen) {
        expect(r).toMatchObject({ boots: 1, flags: 7 });
        expect(r.time).toBeGreaterThanOrEqual(10);
        expect(r.time).toBeLessThan(20);
      }
    } finally {
      s.close();
      await peer.close();
    }
  });

  describe('against snmpd', () => {
    let snmpd: Peer;
    beforeAll(async () => {
      snmpd = await startSnmpd();
    });
    afterAll(() => snmpd?.stop());

    it('an authenticated notInTimeWindows report still resynchronises the engine time', async () => {
      const s = await SnmpSession.open({ host: '127.0.0.1', port: snmpd.port, version: '3', user: V3_USER, timeoutMs: 2000, retries: 0 });
      try {
        expect((await s.get(['1.3.6.1.2.1.1.5.0'])).varbinds[0]!.type).toBe('OctetString');
        // Pretend our view of snmpd's clock went stale: snmpd answers notInTimeWindows (authNoPriv).
        const engine = (s as unknown as { engine: { boots: number; time: number } }).engine;
        const boots = engine.boots;
        engine.boots = 0;
        engine.time = 0;
        expect((await s.get(['1.3.6.1.2.1.1.5.0'])).varbinds[0]!.type).toBe('OctetString');
        expect(engine).not.toBe((s as unknown as { engine: unknown }).engine);
        expect((s as unknown as { engine: { boots: number } }).engine.boots).toBe(boots);
      } finally {
        s.close();
      }
    });
  });
});

// ---------------------------------------------------------------------------------------------
describe('trap receiver: malformed notifications', () => {
  const events: TrapEvent[] = [];
  const drops: string[] = [];
  let rx: TrapReceiver;
  let client: Awaited<ReturnType<typeof udpPeer>>;
  const acks: Buffer[] = [];
  const USER: UsmUserConfig = { name: 'm3', authProtocol: 'SHA', authKey: 'authpass123', privProtocol: 'AES', privKey: 'privpass123' };

  beforeAll(async () => {
    rx = new TrapReceiver({ port: 0, community: 'public', users: [USER], onTrap: (e) => events.push(e), onDrop: (r) => drops.push(r) });
    await rx.start();
    client = await udpPeer((b) => void acks.push(b));
  });
  afterAll(async () => {
    await client.close();
    await rx.stop();
  });
  beforeEach(() => {
    events.length = drops.length = acks.length = 0;
  });
  const send = (b: Buffer) => new Promise<void>((r) => client.socket.send(b, rx.port, '127.0.0.1', () => r()));
  const v2c = (type: number, varbinds: VarBind[], version: 0 | 1 = 1) =>
    encodeCommunity(version, 'public', { type, requestId: 77, errorStatus: 0, errorIndex: 0, varbinds });

  const cases: [string, VarBind[], RegExp][] = [
    ['sysUpTime.0 as Counter64', [{ oid: SYS_UPTIME, type: 'Counter64', value: 123n }, trapOid()], /sysUpTime\.0 of type Counter64, not TimeTicks/],
    ['sysUpTime.0 as OctetString', [{ oid: SYS_UPTIME, type: 'OctetString', value: Buffer.from('abc') }, trapOid()], /sysUpTime\.0 of type OctetString/],
    ['sysUpTime.0 as Null', [{ oid: SYS_UPTIME, type: 'Null', value: null }, trapOid()], /sysUpTime\.0 of type Null/],
    [
      'snmpTrapOID.0 as OctetString',
      [upTicks(), { oid: TRAP_OID, type: 'OctetString', value: Buffer.from('hello') }],
      /snmpTrapOID\.0 of type OctetString, not ObjectIdentifier/,
    ],
    ['snmpTrapOID.0 as Integer32', [upTicks(), { oid: TRAP_OID, type: 'Integer32', value: 7 }], /snmpTrapOID\.0 of type Integer32/],
    ['no sysUpTime.0', [trapOid()], /first varbind is 1\.3\.6\.1\.6\.3\.1\.1\.4\.1\.0, not sysUpTime\.0/],
    ['no snmpTrapOID.0', [upTicks(), { oid: '1.3.6.1.4.1.1', type: 'Integer32', value: 1 }], /second varbind is 1\.3\.6\.1\.4\.1\.1, not snmpTrapOID\.0/],
    ['snmpTrapOID.0 first', [trapOid(), upTicks()], /not sysUpTime\.0/],
    ['no varbinds', [], /first varbind is missing/],
  ];
  for (const [name, vbs, reason] of cases)
    for (const [kind, type] of [
      ['trap', PduType.TrapV2],
      ['inform', PduType.Inform],
    ] as const)
      it(`v2c ${kind} with ${name} is dropped (and not acknowledged)`, async () => {
        await send(v2c(type, vbs));
        const d = await until(() => drops.find((x) => reason.test(x)));
        expect(d).toBeDefined();
        await quiet(50);
        expect(events).toEqual([]);
        expect(acks).toEqual([]);
      });

  it('a well-formed v2c inform is still acknowledged and its event is JSON-safe', async () => {
    await send(v2c(PduType.Inform, [upTicks(4242), trapOid('1.3.6.1.4.1.8072.9.7'), { oid: '1.3.6.1.4.1.1', type: 'Counter64', value: 5n }]));
    const e = await until(() => events[0]);
    expect(e).toMatchObject({ version: '2c', kind: 'inform', uptime: 4242, trapOid: '1.3.6.1.4.1.8072.9.7' });
    expect(e.varbinds.map((v) => v.oid)).toEqual(['1.3.6.1.4.1.1']);
    await until(() => acks[0]);
    expect(drops).toEqual([]);
  });

  for (const [name, type] of [
    ['SNMPv2-Trap', PduType.TrapV2],
    ['InformRequest', PduType.Inform],
    ['GetRequest', PduType.Get],
  ] as const)
    it(`a v1 message carrying an ${name} is dropped`, async () => {
      await send(v2c(type, [upTicks(), trapOid()], 0));
      await until(() => drops.find((x) => x.includes('in an SNMPv1 message')));
      await quiet(50);
      expect(events).toEqual([]);
      expect(acks).toEqual([]);
    });

  it('a v3 trap with sysUpTime.0 as Counter64 is dropped after authentication', async () => {
    const engine = Buffer.from('8000000001020304aabb', 'hex');
    const keys = localize(makeUser(USER), engine);
    const pdu: Pdu = {
      type: PduType.TrapV2,
      requestId: 5,
      errorStatus: 0,
      errorIndex: 0,
      varbinds: [{ oid: SYS_UPTIME, type: 'Counter64', value: 2n ** 63n }, trapOid()],
    };
    await send(
      encodeV3(
        { msgId: 5, maxSize: 65507, reportable: false, engineId: engine, boots: 1, time: 1, userName: 'm3', contextEngineId: engine, contextName: '' },
        keys,
        pdu,
      ),
    );
    await until(() => drops.find((x) => /sysUpTime\.0 of type Counter64/.test(x)));
    expect(events).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
describe('trap receiver: v3 informs are checked against our time window (RFC 3414 3.2 step 7a)', () => {
  const USER: UsmUserConfig = { name: 'inf', authProtocol: 'SHA', authKey: 'authpass123', privProtocol: 'AES', privKey: 'privpass123' };
  const events: TrapEvent[] = [];
  const drops: string[] = [];
  let rx: TrapReceiver;
  let target: string;
  beforeAll(async () => {
    rx = new TrapReceiver({ port: 0, users: [USER], engineId: '80001f8880cafe000000000001', onTrap: (e) => events.push(e), onDrop: (r) => drops.push(r) });
    target = `127.0.0.1:${await rx.start()}`;
  });
  afterAll(() => rx.stop());
  beforeEach(() => {
    events.length = drops.length = 0;
  });

  it('snmpinform with our engine ID but no time gets an authenticated notInTimeWindows, resynchronises and is acknowledged', async () => {
    // -e skips discovery, so the first inform goes out with boots 0 / time 0: outside our window.
    await run('snmpinform', [
      '-v3',
      '-e',
      `0x${rx.engineId.toString('hex')}`,
      '-l',
      'authPriv',
      '-u',
      'inf',
      '-a',
      'SHA',
      '-A',
      'authpass123',
      '-x',
      'AES',
      '-X',
      'privpass123',
      '-t',
      '2',
      '-r',
      '0',
      target,
      '',
      '1.3.6.1.4.1.8072.9.77',
      '1.3.6.1.4.1.8072.9.0',
      's',
      'after-resync',
    ]);
    expect(drops).toEqual([expect.stringMatching(/"inf": notInTimeWindow \(boots 0 time 0/)]);
    expect(events.map((e) => e.trapOid)).toEqual(['1.3.6.1.4.1.8072.9.77']);
  });

  it('a stale or replayed authenticated inform is refused with an authenticated report and not acknowledged', async () => {
    const keys = localize(makeUser(USER), rx.engineId);
    const inform = (boots: number, time: number, msgId: number) =>
      encodeV3(
        { msgId, maxSize: 65507, reportable: true, engineId: rx.engineId, boots, time, userName: 'inf', contextEngineId: rx.engineId, contextName: '' },
        keys,
        { type: PduType.Inform, requestId: msgId, errorStatus: 0, errorIndex: 0, varbinds: [upTicks(), trapOid('1.3.6.1.4.1.8072.9.78')] },
      );
    const got: Buffer[] = [];
    const peer = await udpPeer((b) => void got.push(b));
    try {
      const send = (b: Buffer) => new Promise<void>((r) => peer.socket.send(b, rx.port, '127.0.0.1', () => r()));
      const stale = inform(77, 4_000_000, 4242);
      for (let i = 0; i < 3; i++) await send(stale); // replays
      await send(inform(1, 100_000, 4243)); // right boots, time far ahead of ours
      await until(() => got.length >= 4 || undefined);
      for (const b of got) {
        const m = decodeMessage(b) as V3Message;
        expect(m.flags & 3).toBe(1); // authNoPriv: the sender can trust the time in it
        const res = unwrapV3(m, { name: keys.name, auth: keys.auth });
        expect('pdu' in res && res.pdu.type === PduType.Report && res.pdu.varbinds[0]!.oid).toBe(USM_STATS.notInTimeWindows);
        expect(m.boots).toBe(1);
      }
      expect(drops.length).toBe(4);
      expect(events).toEqual([]);
      // Inside the window (time as our report says): taken and acknowledged.
      const m0 = decodeMessage(got[0]!) as V3Message;
      got.length = 0;
      await send(inform(m0.boots, m0.time, 4244));
      await until(() => events[0]);
      await until(() => got[0]);
      const ack = decodeMessage(got[0]!) as V3Message;
      expect(ack.flags & 3).toBe(3);
      expect('pdu' in unwrapV3(ack, keys) && (unwrapV3(ack, keys) as { pdu: Pdu }).pdu.type).toBe(PduType.Response);
    } finally {
      await peer.close();
    }
  });

  it('v3 traps (sender authoritative) keep working whatever their engine time', async () => {
    await run('snmptrap', [
      '-v3',
      '-e',
      '0x8000000001020304cc01',
      '-Z',
      '5,123456789',
      '-l',
      'authPriv',
      '-u',
      'inf',
      '-a',
      'SHA',
      '-A',
      'authpass123',
      '-x',
      'AES',
      '-X',
      'privpass123',
      target,
      '',
      '1.3.6.1.4.1.8072.9.79',
    ]);
    await until(() => events.find((e) => e.trapOid === '1.3.6.1.4.1.8072.9.79'));
    expect(drops).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
describe('trap receiver: forged v3 messages are refused before the keys are localised', () => {
  const localizeSpy = vi.mocked(localize);
  // 3DES and AES256C extend keys per Reeder: a 1 MB password-to-key per new engine ID.
  const USERS: UsmUserConfig[] = [
    { name: 'r3des', authProtocol: 'SHA', authKey: 'authpass123', privProtocol: '3DES', privKey: 'privpass123' },
    { name: 'r256c', authProtocol: 'MD5', authKey: 'authpass123', privProtocol: 'AES256C', privKey: 'privpass123' },
    { name: 'authonly', authProtocol: 'SHA', authKey: 'authpass123' },
  ];
  const drops: string[] = [];
  const events: TrapEvent[] = [];
  let rx: TrapReceiver;
  let client: Awaited<ReturnType<typeof udpPeer>>;
  beforeAll(async () => {
    rx = new TrapReceiver({ port: 0, users: USERS, onTrap: (e) => events.push(e), onDrop: (r) => drops.push(r) });
    await rx.start();
    client = await udpPeer(() => undefined);
  });
  afterAll(async () => {
    await client.close();
    await rx.stop();
  });
  beforeEach(() => {
    drops.length = events.length = 0;
    localizeSpy.mockClear();
  });
  const send = (b: Buffer) => new Promise<void>((r) => client.socket.send(b, rx.port, '127.0.0.1', () => r()));
  /** A v3 trap for a random engine ID with msgFlags `flags` and a garbage MAC / ciphertext. */
  function forged(userName: string, flags: number): Buffer {
    const engineId = randomBytes(12);
    const fake: LocalUser = { name: userName, auth: { protocol: 'SHA', key: randomBytes(20), macLen: 12, hash: 'sha1' } };
    const keys = flags & 2 ? { ...fake, priv: { protocol: 'AES128' as const, key: randomBytes(16) } } : flags & 1 ? fake : null;
    const msg = encodeV3(
      { msgId: 1, maxSize: 65507, reportable: false, engineId, boots: 1, time: 1, userName, contextEngineId: engineId, contextName: '' },
      keys,
      { type: PduType.TrapV2, requestId: 1, errorStatus: 0, errorIndex: 0, varbinds: [upTicks(), trapOid()] },
    );
    if (flags === 2) msg[msg.indexOf(Buffer.from([0x04, 0x01, 0x03]), 4) + 2] = 2; // priv without auth
    return msg;
  }

  it('noAuthNoPriv (and priv-without-auth) for users with keys: unsupportedSecLevel, nothing localised', async () => {
    const N = 30;
    for (let i = 0; i < N; i++) for (const u of ['r3des', 'r256c', 'authonly']) await send(forged(u, 0));
    for (let i = 0; i < 5; i++) await send(forged('r3des', 2));
    await until(() => drops.length >= 3 * N + 5 || undefined);
    expect(drops.every((d) => d.includes('unsupportedSecLevel'))).toBe(true);
    expect(localizeSpy).not.toHaveBeenCalled();
  });

  it('authPriv for a user without privacy: unsupportedSecLevel, nothing localised', async () => {
    for (let i = 0; i < 10; i++) await send(forged('authonly', 3));
    await until(() => drops.length >= 10 || undefined);
    expect(drops.every((d) => d.includes('unsupportedSecLevel'))).toBe(true);
    expect(localizeSpy).not.toHaveBeenCalled();
  });

  it('a wrong MAC is refused with the auth key alone: the privacy key is never derived', async () => {
    const N = 20;
    for (let i = 0; i < N; i++) for (const u of ['r3des', 'r256c']) for (const f of [1, 3]) await send(forged(u, f));
    await until(() => drops.length >= 4 * N || undefined);
    expect(drops.every((d) => d.includes('wrongDigest'))).toBe(true);
    expect(localizeSpy).toHaveBeenCalledTimes(4 * N);
    for (const [user] of localizeSpy.mock.calls) expect(user.priv).toBeUndefined();
  });

  it('snmptrap authPriv AES256C (Reeder) still gets through: auth key for the MAC, then the privacy key', async () => {
    await run('snmptrap', [
      '-v3',
      '-e',
      '0x8000000001020304dd01',
      '-l',
      'authPriv',
      '-u',
      'r256c',
      '-a',
      'MD5',
      '-A',
      'authpass123',
      '-x',
      'AES256C',
      '-X',
      'privpass123',
      `127.0.0.1:${rx.port}`,
      '',
      '1.3.6.1.4.1.8072.9.80',
    ]);
    await until(() => events[0]);
    expect(events[0]).toMatchObject({ user: 'r256c', trapOid: '1.3.6.1.4.1.8072.9.80' });
    expect(localizeSpy.mock.calls.map(([u]) => !!u.priv)).toEqual([false, true]);
  });
});
