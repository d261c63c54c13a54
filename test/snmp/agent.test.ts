// The simulator against Debian's net-snmp tools (snmpget, snmpwalk, snmpbulkwalk, snmpset).
import { createSocket } from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SnmpAgent, type ActivityEntry } from '../../src/snmp/index.js';
import { run } from './peers.js';
import { elapse } from '../helpers/wait.js';

const AUTHS = ['MD5', 'SHA', 'SHA-224', 'SHA-256', 'SHA-384', 'SHA-512'];
// What `snmpwalk -h` lists for -x, plus AES192C (Cisco/Reeder key extension) that it also accepts.
const PRIVS: [cli: string, ours: string][] = [
  ['DES', 'DES'],
  ['AES', 'AES128'],
  ['AES-192', 'AES192'],
  ['AES-256', 'AES256'],
  ['AES192C', 'AES192C'],
  ['AES256C', 'AES256C'],
];
const userName = (a: string, p: string) => `u_${a.replace('-', '')}_${p}`;

const log: ActivityEntry[] = [];
let agent: SnmpAgent;
let target: string;

beforeAll(async () => {
  const users = AUTHS.flatMap((a) =>
    PRIVS.map(([, p]) => ({ name: userName(a, p), authProtocol: a, authKey: 'authpass123', privProtocol: p, privKey: 'privpass123' })),
  );
  users.push({ name: 'authonly', authProtocol: 'SHA-256', authKey: 'authpass123' } as (typeof users)[number]);
  agent = new SnmpAgent({
    port: 0,
    community: 'public',
    users,
    overrides: [
      { oid: '1.3.6.1.2.1.1.5.0', type: 'OctetString', value: 'overridden-name' },
      { oid: '1.3.6.1.4.1.99999.1.0', type: 'Counter64', value: 18446744073709551615n },
      { oid: '1.3.6.1.4.1.99999.2.0', type: 'Counter64', value: 5000000000 },
      { oid: '1.3.6.1.4.1.99999.3.0', type: 'hex', value: '00ff10' },
      { oid: '1.3.6.1.4.1.99999.4.0', type: 'IpAddress', value: '192.0.2.1' },
      { oid: '1.3.6.1.4.1.99999.5.0', type: 'Integer32', value: -42 },
      { oid: '1.3.6.1.4.1.99999.6.0', type: 'Opaque', value: '9f780441200000' },
    ],
    device: { interfaces: 4, counterBase: 2 ** 32 - 2_000_000_000 },
    onActivity: (e) => log.push(e),
  });
  target = `127.0.0.1:${await agent.start()}`;
});
afterAll(() => agent.stop());

describe('simulator served to net-snmp tools', () => {
  it('snmpget v2c: overrides win, every type, noSuchObject / noSuchInstance', async () => {
    const out = await run('snmpget', [
      '-v2c',
      '-c',
      'public',
      '-On',
      target,
      '1.3.6.1.2.1.1.5.0',
      '1.3.6.1.4.1.99999.1.0',
      '1.3.6.1.4.1.99999.2.0',
      '1.3.6.1.4.1.99999.3.0',
      '1.3.6.1.4.1.99999.4.0',
      '1.3.6.1.4.1.99999.5.0',
      '1.3.6.1.4.1.99999.6.0',
      '1.3.6.1.2.1.1.99.0',
      '1.3.6.1.2.1.1.1.7',
    ]);
    expect(out).toContain('.1.3.6.1.2.1.1.5.0 = STRING: "overridden-name"');
    expect(out).toContain('.1.3.6.1.4.1.99999.1.0 = Counter64: 18446744073709551615');
    expect(out).toContain('.1.3.6.1.4.1.99999.2.0 = Counter64: 5000000000');
    expect(out).toMatch(/\.1\.3\.6\.1\.4\.1\.99999\.3\.0 = Hex-STRING: 00 FF 10/);
    expect(out).toContain('.1.3.6.1.4.1.99999.4.0 = IpAddress: 192.0.2.1');
    expect(out).toContain('.1.3.6.1.4.1.99999.5.0 = INTEGER: -42');
    expect(out).toMatch(/\.1\.3\.6\.1\.4\.1\.99999\.6\.0 = Opaque: /);
    expect(out).toContain('.1.3.6.1.2.1.1.99.0 = No Such Object');
    expect(out).toContain('.1.3.6.1.2.1.1.1.7 = No Such Instance');
  });

  it('snmpbulkwalk and snmpwalk v2c return the same full tree, in order, with multi-part indexes', async () => {
    const bulk = (await run('snmpbulkwalk', ['-v2c', '-c', 'public', '-On', '-Cr10', target, '.1']))
      .split('\n')
      .filter((l) => l.startsWith('.') && !l.includes('No more variables'));
    const next = (await run('snmpwalk', ['-v2c', '-c', 'public', '-On', '-Cc', target, '.1']))
      .split('\n')
      .filter((l) => l.startsWith('.') && !l.includes('No more variables'));
    expect(bulk.length).toBe(agent.size);
    expect(next.map((l) => l.split(' = ')[0])).toEqual(bulk.map((l) => l.split(' = ')[0]));
    expect(bulk.some((l) => l.startsWith('.1.3.6.1.2.1.4.22.1.3.2.10.0.2.2 = IpAddress: 10.0.2.2'))).toBe(true);
    expect(bulk.some((l) => l.startsWith('.1.3.6.1.2.1.6.13.1.1.10.0.1.1.179.10.0.1.2.51234 = INTEGER: 5'))).toBe(true);
    expect(bulk.some((l) => /^\.1\.3\.6\.1\.2\.1\.31\.1\.1\.1\.6\.1 = Counter64: \d+/.test(l))).toBe(true);
  });

  it('snmpwalk v1 skips Counter64 and ends with noSuchName', async () => {
    const out = await run('snmpwalk', ['-v1', '-c', 'public', '-On', target, '.1']);
    expect(out).not.toContain('Counter64');
    expect(out).toContain('.1.3.6.1.2.1.2.2.1.10.1 = Counter32');
  });

  it('Counter32 moves and wraps at 2^32 while the Counter64 keeps counting', async () => {
    const read = async () => {
      const out = await run('snmpget', ['-v2c', '-c', 'public', '-On', '-Oqv', target, '1.3.6.1.2.1.2.2.1.10.1', '1.3.6.1.2.1.31.1.1.1.6.1']);
      const [c32, c64] = out.trim().split('\n');
      return [Number(c32), BigInt(c64!)] as const;
    };
    const [a32, a64] = await read();
    await elapse(4200); // 10G port at 40 %: 500 MB/s, the base is 2 GB below 2^32
    const [b32, b64] = await read();
    expect(b64).toBeGreaterThan(a64);
    expect(b64).toBeGreaterThan(2n ** 32n);
    expect(b32).toBe(Number(b64 % 2n ** 32n));
    expect(b32).toBeLessThan(a32);
  });

  it('snmpset with the read community is refused with noAccess, as snmpd does', async () => {
    await expect(run('snmpset', ['-v2c', '-c', 'public', target, '1.3.6.1.2.1.1.5.0', 's', 'x'])).rejects.toThrow(/noAccess/);
  });

  it('snmpset with the write community changes the value; a wrong type is refused', async () => {
    const rw = new SnmpAgent({ port: 0, writeCommunity: 'private', device: { interfaces: 1 } });
    const t = `127.0.0.1:${await rw.start()}`;
    try {
      await run('snmpset', ['-v2c', '-c', 'private', t, '1.3.6.1.2.1.1.5.0', 's', 'renamed']);
      expect(await run('snmpget', ['-v2c', '-c', 'public', '-On', t, '1.3.6.1.2.1.1.5.0'])).toContain('STRING: "renamed"');
      await expect(run('snmpset', ['-v2c', '-c', 'private', t, '1.3.6.1.2.1.1.5.0', 'i', '3'])).rejects.toThrow(/wrongType/);
    } finally {
      await rw.stop();
    }
  });

  it('a wrong community gets no answer and is logged', async () => {
    await expect(run('snmpget', ['-v2c', '-c', 'wrong', '-t', '0.3', '-r', '0', target, '1.3.6.1.2.1.1.5.0'])).rejects.toThrow(/Timeout/);
    expect(log.some((e) => e.principal === 'wrong' && e.error === 'unknown community')).toBe(true);
  });

  for (const a of AUTHS)
    for (const [cli, ours] of PRIVS)
      it(`snmpwalk v3 authPriv ${a}/${cli}`, async () => {
        const out = await run('snmpwalk', [
          '-v3',
          '-l',
          'authPriv',
          '-u',
          userName(a, ours),
          '-a',
          a,
          '-A',
          'authpass123',
          '-x',
          cli,
          '-X',
          'privpass123',
          '-On',
          target,
          '1.3.6.1.2.1.1',
        ]);
        expect(out).toContain('.1.3.6.1.2.1.1.5.0 = STRING: "overridden-name"');
        expect(out.trim().split('\n').length).toBe(8);
      });

  it('v3 authNoPriv, a wrong key and an unknown user', async () => {
    expect(
      await run('snmpget', ['-v3', '-l', 'authNoPriv', '-u', 'authonly', '-a', 'SHA-256', '-A', 'authpass123', '-On', target, '1.3.6.1.2.1.1.5.0']),
    ).toContain('overridden-name');
    await expect(
      run('snmpget', ['-v3', '-l', 'authNoPriv', '-u', 'authonly', '-a', 'SHA-256', '-A', 'wrongpass123', target, '1.3.6.1.2.1.1.5.0']),
    ).rejects.toThrow(/Authentication failure|digest/i);
    await expect(run('snmpget', ['-v3', '-l', 'noAuthNoPriv', '-u', 'nobody', target, '1.3.6.1.2.1.1.5.0'])).rejects.toThrow(/Unknown user name/i);
  });

  it('the activity log records requests served', () => {
    const e = log.find((x) => x.request === 'getbulk' && x.version === '2c');
    expect(e).toMatchObject({ principal: 'public', source: expect.stringMatching(/^127\.0\.0\.1:\d+$/) });
    expect(log.some((x) => x.version === '3' && x.request === 'getnext' && x.principal === 'u_SHA512_AES256')).toBe(true);
  });

  it('port in use and privileged port are clear 4xx errors', async () => {
    const other = new SnmpAgent({ port: agent.port });
    await expect(other.start()).rejects.toMatchObject({ statusCode: 409, message: expect.stringContaining('already in use') });
    if (process.getuid?.() !== 0) await expect(new SnmpAgent({ port: 161 }).start()).rejects.toMatchObject({ statusCode: 403 });
    expect(() => new SnmpAgent({ overrides: [{ oid: '1.3.6.1.1.0', type: 'Counter32', value: 2 ** 32 }] })).toThrow(
      /override 1: Counter32 value .* out of range/,
    );
  });

  it('a malformed datagram is logged and the agent keeps serving', async () => {
    const s = createSocket('udp4');
    await new Promise<void>((r) => s.send(Buffer.from('30050201', 'hex'), agent.port, '127.0.0.1', () => r()));
    s.close();
    expect(await run('snmpget', ['-v2c', '-c', 'public', '-On', target, '1.3.6.1.2.1.1.5.0'])).toContain('overridden-name');
    expect(log.some((e) => e.error?.startsWith('malformed message'))).toBe(true);
  });
});
