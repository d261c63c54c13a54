// BER/message codec against pysnmp (Debian python3-pysnmp4) in both directions, at the edges of
// every type; and the typing of user input.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BerError } from '../../src/snmp/ber.js';
import { decodeMessage, encodeCommunity, encodeV3, PduType, unwrapV3, type CommunityMessage, type V3Message } from '../../src/snmp/message.js';
import { localize, makeUser } from '../../src/snmp/usm.js';
import { compareOidStrings, jsonValue, makeVarBind, parseOid, SnmpInputError, type VarBind } from '../../src/snmp/index.js';

const PY = `import sys, json
from pysnmp.proto import api
from pyasn1.codec.ber import encoder, decoder
p = api.protoModules[api.protoVersion2c]
def enc():
    pdu = p.SNMPv2TrapPDU(); p.apiTrapPDU.setDefaults(pdu)
    vbs = [
      ('1.3.6.1.4.1.1.1', p.Integer(-2147483648)), ('1.3.6.1.4.1.1.2', p.Integer(2147483647)), ('1.3.6.1.4.1.1.3', p.Integer(-129)),
      ('1.3.6.1.4.1.1.4', p.Counter32(4294967295)), ('1.3.6.1.4.1.1.5', p.Gauge32(128)), ('1.3.6.1.4.1.1.6', p.TimeTicks(4294967295)),
      ('1.3.6.1.4.1.1.7', p.Counter64(18446744073709551615)), ('1.3.6.1.4.1.1.8', p.Counter64(0)),
      ('1.3.6.1.4.1.1.9', p.OctetString(b'\\x00\\xff' * 200)), ('1.3.6.1.4.1.1.10', p.ObjectIdentifier('2.999.4294967295.0')),
      ('1.3.6.1.4.1.4294967295.11', p.IpAddress('255.0.128.1')), ('1.3.6.1.4.1.1.12', p.Opaque(b'\\x9f\\x78')), ('1.3.6.1.4.1.1.13', p.Null('')),
    ]
    p.apiTrapPDU.setVarBinds(pdu, vbs)
    msg = p.Message(); p.apiMessage.setDefaults(msg); p.apiMessage.setCommunity(msg, 'c0mm'); p.apiMessage.setPDU(msg, pdu)
    print(encoder.encode(msg).hex())
def dec(h):
    msg, _ = decoder.decode(bytes.fromhex(h), asn1Spec=p.Message())
    pdu = p.apiMessage.getPDU(msg)
    out = []
    for oid, val in p.apiPDU.getVarBinds(pdu):
        v = val.getComponent(True) if hasattr(val, 'getComponent') else val
        name = v.__class__.__name__
        if name in ('OctetString', 'Opaque'): x = bytes(v).hex()
        elif name == 'IpAddress': x = '.'.join(str(b) for b in bytes(v))
        elif name == 'ObjectIdentifier': x = str(v)
        elif name == 'Null': x = None
        else: x = str(int(v))
        out.append([str(oid), name, x])
    print(json.dumps({'community': str(p.apiMessage.getCommunity(msg)), 'vbs': out}))
enc() if sys.argv[1] == 'enc' else dec(sys.argv[2])
`;
const py = (...args: string[]): string => execFileSync('/usr/bin/python3', ['-c', PY, ...args], { encoding: 'utf8' }).trim();

const EXPECTED: [string, string, string | null][] = [
  ['1.3.6.1.4.1.1.1', 'Integer32', '-2147483648'],
  ['1.3.6.1.4.1.1.2', 'Integer32', '2147483647'],
  ['1.3.6.1.4.1.1.3', 'Integer32', '-129'],
  ['1.3.6.1.4.1.1.4', 'Counter32', '4294967295'],
  ['1.3.6.1.4.1.1.5', 'Gauge32', '128'],
  ['1.3.6.1.4.1.1.6', 'TimeTicks', '4294967295'],
  ['1.3.6.1.4.1.1.7', 'Counter64', '18446744073709551615'],
  ['1.3.6.1.4.1.1.8', 'Counter64', '0'],
  ['1.3.6.1.4.1.1.9', 'OctetString', '00ff'.repeat(200)],
  ['1.3.6.1.4.1.1.10', 'ObjectIdentifier', '2.999.4294967295.0'],
  ['1.3.6.1.4.1.4294967295.11', 'IpAddress', '255.0.128.1'],
  ['1.3.6.1.4.1.1.12', 'Opaque', '9f78'],
  ['1.3.6.1.4.1.1.13', 'Null', null],
];

const show = (vb: VarBind): string | null => (Buffer.isBuffer(vb.value) ? vb.value.toString('hex') : vb.value === null ? null : String(vb.value));

describe('codec vs pysnmp', () => {
  it('decodes a pysnmp-encoded v2c trap with edge values of every type', () => {
    const m = decodeMessage(Buffer.from(py('enc'), 'hex')) as CommunityMessage;
    expect(m.version).toBe(1);
    expect(m.community.toString()).toBe('c0mm');
    expect(m.pdu.type).toBe(PduType.TrapV2);
    expect(m.pdu.varbinds.map((v) => [v.oid, v.type, show(v)])).toEqual(EXPECTED);
  });

  it('encodes what pysnmp decodes to the same values (long lengths, negative and 64-bit integers, big arcs)', () => {
    const vbs = EXPECTED.map(([oid, type, v]) =>
      makeVarBind(oid, type === 'OctetString' ? 'hex' : type, type === 'Counter64' ? BigInt(v!) : type.endsWith('32') || type === 'TimeTicks' ? Number(v) : v),
    );
    const hex = encodeCommunity(1, 'c0mm', { type: PduType.TrapV2, requestId: 77, errorStatus: 0, errorIndex: 0, varbinds: vbs }).toString('hex');
    const out = JSON.parse(py('dec', hex)) as { community: string; vbs: [string, string, string | null][] };
    expect(out.community).toBe('c0mm');
    const pyNames: Record<string, string> = { Integer: 'Integer32', Integer32: 'Integer32', Unsigned32: 'Gauge32' };
    expect(out.vbs.map(([o, t, v]) => [o, pyNames[t] ?? t, v])).toEqual(EXPECTED);
  });
});

describe('value typing', () => {
  it('Counter64 from number, bigint or string; JSON form exact', () => {
    expect(makeVarBind('1.3.6.1.1', 'Counter64', 5).value).toBe(5n);
    expect(makeVarBind('1.3.6.1.1', 'counter64', '18446744073709551615').value).toBe(18446744073709551615n);
    expect(jsonValue(makeVarBind('1.3.6.1.1', 'C', 2n ** 60n))).toBe('1152921504606846976');
    expect(jsonValue(makeVarBind('1.3.6.1.1', 'Counter64', 42))).toBe(42);
  });

  it('values that do not fit their type are SnmpInputError (400) naming the OID and the range', () => {
    const bad: [string, unknown, RegExp][] = [
      ['Integer32', 2 ** 31, /Integer32 value for 1\.3\.6\.1\.1 is out of range/],
      ['Integer32', 1.5, /must be an integer/],
      ['Counter32', -1, /out of range 0\.\.4294967295/],
      ['Gauge32', 'abc', /must be an integer/],
      ['Counter64', 2n ** 64n, /out of range 0\.\.18446744073709551615/],
      ['Counter64', -1, /out of range/],
      ['IpAddress', '1.2.3', /dotted IPv4/],
      ['ObjectIdentifier', 'not.an.oid', /not a numeric OID/],
      ['hex', 'abc', /even number of hex digits/],
      ['OctetString', 12, /must be a string/],
      ['Null', 3, /takes no value/],
      ['Float', 1, /unknown SNMP type "Float"/],
    ];
    for (const [type, value, re] of bad) {
      let err: unknown;
      try {
        makeVarBind('1.3.6.1.1', type, value);
      } catch (e) {
        err = e;
      }
      expect(err, `${type} ${String(value)}`).toBeInstanceOf(SnmpInputError);
      expect((err as SnmpInputError).statusCode).toBe(400);
      expect((err as Error).message).toMatch(re);
    }
  });

  it('OIDs: leading dot, arc limits, OID order', () => {
    expect(parseOid('.1.3.6.1')).toBe('1.3.6.1');
    expect(() => parseOid('1.3.6.4294967296')).toThrow(/above 4294967295/);
    expect(() => parseOid('1.40.1')).toThrow(/below 40/);
    expect(() => parseOid('1.3..6')).toThrow(SnmpInputError);
    expect(['1.3.6.1.10', '1.3.6.1.9', '1.3.6.1', '1.3.6.1.9.1'].sort(compareOidStrings)).toEqual(['1.3.6.1', '1.3.6.1.9', '1.3.6.1.9.1', '1.3.6.1.10']);
  });
});

describe('malformed input', () => {
  it('mutated and truncated messages only ever throw BerError or fail USM checks (no crash, no hang)', () => {
    const seeds = [
      Buffer.from(py('enc'), 'hex'),
      encodeV3(
        {
          msgId: 9,
          maxSize: 65507,
          reportable: true,
          engineId: Buffer.from('80001f8880aabbccdd', 'hex'),
          boots: 1,
          time: 5,
          userName: 'u',
          contextEngineId: Buffer.alloc(0),
          contextName: '',
        },
        localize(
          makeUser({ name: 'u', authProtocol: 'SHA', authKey: 'authpass123', privProtocol: 'AES', privKey: 'privpass123' }),
          Buffer.from('80001f8880aabbccdd', 'hex'),
        ),
        { type: PduType.Get, requestId: 9, errorStatus: 0, errorIndex: 0, varbinds: [{ oid: '1.3.6.1.2.1.1.5.0', type: 'Null', value: null }] },
      ),
    ];
    const user = localize(
      makeUser({ name: 'u', authProtocol: 'SHA', authKey: 'authpass123', privProtocol: 'AES', privKey: 'privpass123' }),
      Buffer.from('80001f8880aabbccdd', 'hex'),
    );
    let seed = 12345;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    let decoded = 0;
    for (let i = 0; i < 5000; i++) {
      const msg = Buffer.from(seeds[i % 2]!);
      const cut = rnd(4) === 0 ? rnd(msg.length) : msg.length;
      for (let k = 1 + rnd(3); k > 0; k--) msg[rnd(msg.length)] = rnd(256);
      try {
        const m = decodeMessage(msg.subarray(0, cut));
        if (m.version === 3) unwrapV3(m as V3Message, user);
        decoded++;
      } catch (e) {
        expect(e, String(e)).toBeInstanceOf(BerError);
      }
    }
    expect(decoded).toBeGreaterThan(0);
  });
});
