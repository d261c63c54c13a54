// Our walker against real agents: Debian's snmpd (v1, v2c, v3 authPriv) and snmpsimd
// (pysnmp: 3DES and the AES-192/256 key-extension variants that net-snmp's CLI lacks).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonValue, rawValue, SnmpInputError, SnmpTimeoutError, walk } from '../../src/snmp/index.js';
import { freeUdpPort, run, startSnmpd, startSnmpsimd, V3_USER, type Peer } from './peers.js';

describe('walker against snmpd', () => {
  let snmpd: Peer;
  beforeAll(async () => {
    snmpd = await startSnmpd();
  });
  afterAll(() => snmpd?.stop());

  /** OID -> value text as snmpbulkwalk prints it (-On -Oe -Oq: numeric, no enums, value only). */
  async function reference(args: string[]): Promise<Map<string, string>> {
    const out = await run('snmpbulkwalk', [...args, '-On', '-Oq', '-Oe', '-Ot', '-Cr25', `127.0.0.1:${snmpd.port}`, '.1.3.6.1.2.1']);
    const m = new Map<string, string>();
    for (const line of out.split('\n')) {
      const sp = line.indexOf(' ');
      if (line.startsWith('.')) m.set(line.slice(1, sp), line.slice(sp + 1));
    }
    return m;
  }

  it('v2c GETBULK walk returns the same OIDs in the same order as snmpbulkwalk, typed values agree', async () => {
    const ref = await reference(['-v2c', '-c', 'public']);
    const ours = await walk({ host: '127.0.0.1', port: snmpd.port, community: 'public', oid: '1.3.6.1.2.1', maxRepetitions: 25 });
    // Counters and uptime move between the two walks: compare names, and values of static objects.
    expect(ours.map((v) => v.oid)).toEqual([...ref.keys()]);
    const descr = ours.find((v) => v.oid === '1.3.6.1.2.1.1.1.0')!;
    expect(`"${jsonValue(descr)}"`).toBe(ref.get('1.3.6.1.2.1.1.1.0'));
    const ifIndex = ours.filter((v) => v.oid.startsWith('1.3.6.1.2.1.2.2.1.1.'));
    expect(ifIndex.length).toBeGreaterThan(0);
    for (const v of ifIndex) expect(String(v.value)).toBe(ref.get(v.oid));
    expect(ours.find((v) => v.type === 'Counter64')).toBeDefined();
    expect(typeof ours.find((v) => v.type === 'Counter64')!.value).toBe('bigint');
    expect(rawValue(descr).hex).toBe(Buffer.from(String(jsonValue(descr))).toString('hex'));
  });

  it('v1 GETNEXT walk of the system group', async () => {
    const ours = await walk({ host: '127.0.0.1', port: snmpd.port, version: '1', community: 'public', oid: '1.3.6.1.2.1.1' });
    const ref = await run('snmpwalk', ['-v1', '-c', 'public', '-On', `127.0.0.1:${snmpd.port}`, '.1.3.6.1.2.1.1']);
    expect(ours.map((v) => '.' + v.oid)).toEqual(
      ref
        .split('\n')
        .filter((l) => l.startsWith('.'))
        .map((l) => l.split(' = ')[0]),
    );
  });

  it('v3 authPriv SHA/AES walk (engine discovery, time sync)', async () => {
    const ours = await walk({ host: '127.0.0.1', port: snmpd.port, version: '3', user: V3_USER, oid: '1.3.6.1.2.1.1' });
    expect(ours.length).toBeGreaterThan(5);
    expect(ours[0]!.oid).toBe('1.3.6.1.2.1.1.1.0');
  });

  it('v3 with a wrong key is a clear error', async () => {
    await expect(
      walk({ host: '127.0.0.1', port: snmpd.port, version: '3', user: { ...V3_USER, authKey: 'wrongpass123' }, oid: '1.3.6.1.2.1.1' }),
    ).rejects.toThrow(/wrongDigests/);
  });

  it('a leaf instance walks to itself; a wrong community times out clearly', async () => {
    const one = await walk({ host: '127.0.0.1', port: snmpd.port, oid: '1.3.6.1.2.1.1.5.0' });
    expect(one.map((v) => v.oid)).toEqual(['1.3.6.1.2.1.1.5.0']);
    await expect(walk({ host: '127.0.0.1', port: snmpd.port, community: 'nope', timeoutMs: 200, retries: 1 })).rejects.toBeInstanceOf(SnmpTimeoutError);
  });
});

describe('walker errors', () => {
  it('an unreachable target fails fast with a clear error, not a hang', async () => {
    const port = await freeUdpPort();
    const t0 = Date.now();
    await expect(walk({ host: '127.0.0.1', port, timeoutMs: 500, retries: 2 })).rejects.toThrow(/no SNMP agent at udp 127\.0\.0\.1:\d+|no answer/);
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('bad input is a 400', async () => {
    await expect(walk({ host: '127.0.0.1', oid: '1.3.x' })).rejects.toBeInstanceOf(SnmpInputError);
    await expect(walk({ host: 'no-such-host.invalid', oid: '1.3.6' })).rejects.toMatchObject({ statusCode: 400 });
  });
});

// pysnmp's snmpsimd is the independent peer for 3DES and for both AES-192/256 key extensions.
const SIM_DATA =
  '1.3.6.1.2.1.1.1.0|4|snmpsim device\n1.3.6.1.2.1.1.3.0|67|12345\n1.3.6.1.2.1.2.2.1.10.1|65|4294967295\n1.3.6.1.2.1.4.20.1.1.10.0.0.1|64|10.0.0.1\n1.3.6.1.2.1.31.1.1.1.6.1|70|18446744073709551615\n';
const SIM_PRIVS: [sim: string, ours: string][] = [
  ['3DES', '3DES'],
  ['DES', 'DES'],
  ['AES192', 'AES192C'],
  ['AES192BLMT', 'AES192'],
  ['AES256', 'AES256C'],
  ['AES256BLMT', 'AES256'],
];

describe('walker against snmpsimd', () => {
  for (const [sim, ours] of SIM_PRIVS)
    it(`v3 SHA/${sim} (ours ${ours}) and v2c`, async () => {
      const peer = await startSnmpsimd(SIM_DATA, { user: 'simuser', authProto: 'SHA', authKey: 'authpass123', privProto: sim, privKey: 'privpass123' });
      try {
        const v3 = await walk({
          host: '127.0.0.1',
          port: peer.port,
          version: '3',
          contextName: 'public',
          timeoutMs: 3000,
          user: { name: 'simuser', authProtocol: 'SHA', authKey: 'authpass123', privProtocol: ours, privKey: 'privpass123' },
          oid: '1.3.6',
        });
        expect(v3.map((v) => [v.oid, v.type, jsonValue(v)])).toEqual([
          ['1.3.6.1.2.1.1.1.0', 'OctetString', 'snmpsim device'],
          ['1.3.6.1.2.1.1.3.0', 'TimeTicks', 12345],
          ['1.3.6.1.2.1.2.2.1.10.1', 'Counter32', 4294967295],
          ['1.3.6.1.2.1.4.20.1.1.10.0.0.1', 'IpAddress', '10.0.0.1'],
          ['1.3.6.1.2.1.31.1.1.1.6.1', 'Counter64', '18446744073709551615'],
        ]);
        if (sim === '3DES') {
          const v2 = await walk({ host: '127.0.0.1', port: peer.port, community: 'public', oid: '1.3.6', timeoutMs: 3000 });
          expect(v2.length).toBe(5);
        }
      } finally {
        await peer.stop();
      }
    }, 40_000);
});
