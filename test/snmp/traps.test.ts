// Trap receiver fed by Debian's snmptrap/snmpinform; trap sender read by Debian's snmptrapd.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonValue, sendTrap, SnmpInputError, TrapReceiver, v1Fields, type TrapEvent } from '../../src/snmp/index.js';
import { run, startSnmptrapd, V3_AUTHS, V3_PRIVS, v3TrapsFromEveryPair, v3UserMatrix, type Peer } from './peers.js';
import { until } from '../helpers/wait.js';

describe('receiver fed by snmptrap / snmpinform', () => {
  const events: TrapEvent[] = [];
  const drops: string[] = [];
  let rx: TrapReceiver;
  let target: string;
  // 240 users with their own keys: every auth x priv pair, ten users each.
  const users = v3UserMatrix();

  beforeAll(async () => {
    rx = new TrapReceiver({ port: 0, community: 'public', users, onTrap: (e) => events.push(e), onDrop: (r) => drops.push(r) });
    target = `127.0.0.1:${await rx.start()}`;
  });
  afterAll(() => rx.stop());

  it('v2c trap with every type', async () => {
    await run('snmptrap', [
      '-v2c',
      '-c',
      'public',
      target,
      '4242',
      '1.3.6.1.6.3.1.1.5.3',
      '1.3.6.1.2.1.2.2.1.1.2',
      'i',
      '-7',
      '1.3.6.1.2.1.2.2.1.2.2',
      's',
      'eth1 down',
      '1.3.6.1.4.1.1.1',
      'x',
      '00FF10',
      '1.3.6.1.4.1.1.2',
      'o',
      '1.3.6.1.4.1.8072',
      '1.3.6.1.4.1.1.3',
      'a',
      '192.0.2.7',
      '1.3.6.1.4.1.1.4',
      'c',
      '4294967295',
      '1.3.6.1.4.1.1.5',
      'u',
      '77',
      '1.3.6.1.4.1.1.6',
      't',
      '99',
      '1.3.6.1.4.1.1.7',
      'C',
      '18446744073709551615',
    ]);
    const e = await until(() => events.find((x) => x.version === '2c' && x.trapOid === '1.3.6.1.6.3.1.1.5.3'));
    expect(e).toMatchObject({ kind: 'trap', community: 'public', uptime: 4242, source: expect.stringMatching(/^127\.0\.0\.1:/) });
    expect(e.varbinds.map((v) => [v.oid, v.type, jsonValue(v)])).toEqual([
      ['1.3.6.1.2.1.2.2.1.1.2', 'Integer32', -7],
      ['1.3.6.1.2.1.2.2.1.2.2', 'OctetString', 'eth1 down'],
      ['1.3.6.1.4.1.1.1', 'OctetString', '00ff10'],
      ['1.3.6.1.4.1.1.2', 'ObjectIdentifier', '1.3.6.1.4.1.8072'],
      ['1.3.6.1.4.1.1.3', 'IpAddress', '192.0.2.7'],
      ['1.3.6.1.4.1.1.4', 'Counter32', 4294967295],
      ['1.3.6.1.4.1.1.5', 'Gauge32', 77],
      ['1.3.6.1.4.1.1.6', 'TimeTicks', 99],
      ['1.3.6.1.4.1.1.7', 'Counter64', '18446744073709551615'],
    ]);
  });

  it('v1 traps: enterprise-specific and generic', async () => {
    await run('snmptrap', ['-v1', '-c', 'public', target, '1.3.6.1.4.1.8072.4', '192.0.2.9', '6', '17', '555', '1.3.6.1.2.1.1.5.0', 's', 'r1']);
    await run('snmptrap', ['-v1', '-c', 'public', target, '1.3.6.1.4.1.8072.4', '192.0.2.9', '2', '0', '556', '1.3.6.1.2.1.2.2.1.1.3', 'i', '3']);
    const spec = await until(() => events.find((x) => x.version === '1' && x.v1?.genericTrap === 6));
    expect(spec).toMatchObject({
      trapOid: '1.3.6.1.4.1.8072.4.0.17',
      uptime: 555,
      v1: { enterprise: '1.3.6.1.4.1.8072.4', agentAddr: '192.0.2.9', specificTrap: 17 },
    });
    expect(jsonValue(spec.varbinds[0]!)).toBe('r1');
    const gen = await until(() => events.find((x) => x.version === '1' && x.v1?.genericTrap === 2));
    expect(gen.trapOid).toBe('1.3.6.1.6.3.1.1.5.3');
  });

  it('v2c inform is acknowledged (snmpinform exits 0 only on the acknowledgement)', async () => {
    await run('snmpinform', ['-v2c', '-c', 'public', '-t', '2', '-r', '0', target, '', '1.3.6.1.4.1.8072.2.3.0.1', '1.3.6.1.4.1.8072.2.3.2.1', 'i', '5']);
    expect(events.find((x) => x.kind === 'inform' && x.version === '2c')?.trapOid).toBe('1.3.6.1.4.1.8072.2.3.0.1');
  });

  it('a wrong community is dropped with a reason', async () => {
    await run('snmptrap', ['-v2c', '-c', 'private', target, '', '1.3.6.1.6.3.1.1.5.1']);
    await until(() => drops.find((d) => d.includes('unknown community "private"')));
  });

  it('v3 traps from many users, every auth/priv pair, each from its own engine ID', async () => {
    const n = await v3TrapsFromEveryPair(target, '1.3.6.1.4.1.8072.9.0');
    await until(() => events.filter((e) => e.version === '3').length >= n || undefined);
    const v3 = events.filter((e) => e.version === '3');
    expect(v3.map((e) => jsonValue(e.varbinds[0]!))).toEqual(V3_AUTHS.flatMap((a) => V3_PRIVS.map(([cli]) => `${a}/${cli}`)));
    expect(new Set(v3.map((e) => e.engineId)).size).toBe(n);
    expect(v3[0]).toMatchObject({ user: 'user-0-0-0', kind: 'trap', trapOid: '1.3.6.1.4.1.8072.9.1' });
  });

  it('v3 trap with a wrong key is dropped, the receiver keeps going', async () => {
    await run('snmptrap', [
      '-v3',
      '-e',
      '0x80000000010203040999',
      '-l',
      'authPriv',
      '-u',
      'user-1-1-1',
      '-a',
      'SHA',
      '-A',
      'wrong-secret-key',
      '-x',
      'AES',
      '-X',
      'priv-1-1-1-secret',
      target,
      '',
      '1.3.6.1.4.1.8072.9.999',
    ]);
    await until(() => drops.find((d) => d.includes('user-1-1-1') && d.includes('wrongDigest')));
    expect(events.some((e) => e.trapOid === '1.3.6.1.4.1.8072.9.999')).toBe(false);
  });

  it('one user name with different keys per engine ID (snmptrapd createUser -e)', async () => {
    rx.addUser({
      name: 'shared',
      engineId: '0x80000000010203040aa1',
      authProtocol: 'SHA',
      authKey: 'engine-one-key',
      privProtocol: 'AES',
      privKey: 'engine-one-priv',
    });
    rx.addUser({
      name: 'shared',
      engineId: '80000000010203040aa2',
      authProtocol: 'MD5',
      authKey: 'engine-two-key',
      privProtocol: 'DES',
      privKey: 'engine-two-priv',
    });
    await run('snmptrap', [
      '-v3',
      '-e',
      '0x80000000010203040aa1',
      '-l',
      'authPriv',
      '-u',
      'shared',
      '-a',
      'SHA',
      '-A',
      'engine-one-key',
      '-x',
      'AES',
      '-X',
      'engine-one-priv',
      target,
      '',
      '1.3.6.1.4.1.8072.9.2001',
    ]);
    await run('snmptrap', [
      '-v3',
      '-e',
      '0x80000000010203040aa2',
      '-l',
      'authPriv',
      '-u',
      'shared',
      '-a',
      'MD5',
      '-A',
      'engine-two-key',
      '-x',
      'DES',
      '-X',
      'engine-two-priv',
      target,
      '',
      '1.3.6.1.4.1.8072.9.2002',
    ]);
    // Engine one's keys from engine two: refused.
    await run('snmptrap', [
      '-v3',
      '-e',
      '0x80000000010203040aa2',
      '-l',
      'authPriv',
      '-u',
      'shared',
      '-a',
      'SHA',
      '-A',
      'engine-one-key',
      '-x',
      'AES',
      '-X',
      'engine-one-priv',
      target,
      '',
      '1.3.6.1.4.1.8072.9.2003',
    ]);
    await until(() => events.find((e) => e.trapOid === '1.3.6.1.4.1.8072.9.2002'));
    await until(() => drops.find((d) => d.includes('"shared"') && d.includes('wrongDigest')));
    expect(events.find((e) => e.trapOid === '1.3.6.1.4.1.8072.9.2001')?.engineId).toBe('80000000010203040aa1');
    expect(events.some((e) => e.trapOid === '1.3.6.1.4.1.8072.9.2003')).toBe(false);
  });

  it('v3 informs: snmpinform discovers our engine and gets its acknowledgement', async () => {
    await run('snmpinform', [
      '-v3',
      '-l',
      'authPriv',
      '-u',
      'user-5-3-2',
      '-a',
      'SHA-512',
      '-A',
      'auth-5-3-2-secret',
      '-x',
      'AES-256',
      '-X',
      'priv-5-3-2-secret',
      '-t',
      '2',
      '-r',
      '0',
      target,
      '',
      '1.3.6.1.4.1.8072.9.1000',
      '1.3.6.1.4.1.8072.9.0',
      's',
      'inform-v3',
    ]);
    const e = events.find((x) => x.kind === 'inform' && x.version === '3');
    expect(e).toMatchObject({ user: 'user-5-3-2', engineId: rx.engineId.toString('hex'), trapOid: '1.3.6.1.4.1.8072.9.1000' });
  });
});

describe('sender read by snmptrapd', () => {
  const ENGINE = '8000000001aabbccdd01';
  let trapd: Peer;
  beforeAll(async () => {
    trapd = await startSnmptrapd(
      [
        `createUser -e 0x${ENGINE} trapsha SHA authpass123 AES privpass123`,
        `createUser -e 0x${ENGINE} trapmd5 MD5 authpass123 DES privpass123`,
        `createUser -e 0x${ENGINE} trap512 SHA-512 authpass123 AES256 privpass123`,
        `createUser -e 0x${ENGINE} trap192 SHA authpass123 AES192 privpass123`,
        'createUser informer SHA-256 authpass123 AES privpass123',
      ].join('\n'),
    );
  });
  afterAll(() => trapd?.stop());
  const base = () => ({ host: '127.0.0.1', port: trapd.port });

  it('v2c trap with typed varbinds of every type', async () => {
    await sendTrap({
      ...base(),
      community: 'public',
      trapOid: '1.3.6.1.6.3.1.1.5.4',
      uptime: 777,
      varbinds: [
        { oid: '1.3.6.1.4.1.2.1', type: 'Integer32', value: -5 },
        { oid: '1.3.6.1.4.1.2.2', type: 'OctetString', value: 'hello trapd' },
        { oid: '1.3.6.1.4.1.2.3', type: 'hex', value: 'de:ad:be:ef' },
        { oid: '1.3.6.1.4.1.2.4', type: 'ObjectIdentifier', value: '1.3.6.1.4.1.8072' },
        { oid: '1.3.6.1.4.1.2.5', type: 'IpAddress', value: '198.51.100.1' },
        { oid: '1.3.6.1.4.1.2.6', type: 'Counter32', value: 4294967295 },
        { oid: '1.3.6.1.4.1.2.7', type: 'Gauge32', value: '12' },
        { oid: '1.3.6.1.4.1.2.8', type: 'TimeTicks', value: 100 },
        { oid: '1.3.6.1.4.1.2.9', type: 'Counter64', value: 9007199254740993n },
        { oid: '1.3.6.1.4.1.2.10', type: 'Counter64', value: '18446744073709551615' },
        { oid: '1.3.6.1.4.1.2.11', type: 'Counter64', value: 5000000000 },
        { oid: '1.3.6.1.4.1.2.12', type: 'Opaque', value: '0102' },
        { oid: '1.3.6.1.4.1.2.13', type: 'Null' },
      ],
    });
    const out = await until(() => (trapd.output().includes('.1.3.6.1.4.1.2.13') ? trapd.output() : undefined));
    for (const s of [
      '.1.3.6.1.2.1.1.3.0 = Timeticks: (777)',
      '.1.3.6.1.6.3.1.1.4.1.0 = OID: .1.3.6.1.6.3.1.1.5.4',
      '.1.3.6.1.4.1.2.1 = INTEGER: -5',
      '.1.3.6.1.4.1.2.2 = STRING: "hello trapd"',
      '.1.3.6.1.4.1.2.3 = Hex-STRING: DE AD BE EF',
      '.1.3.6.1.4.1.2.4 = OID: .1.3.6.1.4.1.8072',
      '.1.3.6.1.4.1.2.5 = IpAddress: 198.51.100.1',
      '.1.3.6.1.4.1.2.6 = Counter32: 4294967295',
      '.1.3.6.1.4.1.2.7 = Gauge32: 12',
      '.1.3.6.1.4.1.2.8 = Timeticks: (100)',
      '.1.3.6.1.4.1.2.9 = Counter64: 9007199254740993',
      '.1.3.6.1.4.1.2.10 = Counter64: 18446744073709551615',
      '.1.3.6.1.4.1.2.11 = Counter64: 5000000000',
      '.1.3.6.1.4.1.2.12 = OPAQUE: 01 02',
      '.1.3.6.1.4.1.2.13 = NULL',
    ])
      expect(out).toContain(s);
  });

  it('v1 trap (RFC 3584 mapping of the notification OID)', async () => {
    await sendTrap({
      ...base(),
      version: '1',
      community: 'public',
      trapOid: '1.3.6.1.4.1.8072.4.0.33',
      varbinds: [{ oid: '1.3.6.1.4.1.3.1', type: 's', value: 'v1-trap' }],
    });
    const out = await until(() => (trapd.output().includes('v1-trap') ? trapd.output() : undefined));
    expect(out).toMatch(/Enterprise Specific Trap \(33\)/);
    expect(v1Fields('1.3.6.1.6.3.1.1.5.3', '0.0.0.0', 0)).toMatchObject({ genericTrap: 2, specificTrap: 0 });
  });

  it('v2c inform is acknowledged by snmptrapd', async () => {
    expect(
      await sendTrap({
        ...base(),
        community: 'public',
        inform: true,
        trapOid: '1.3.6.1.4.1.8072.4.0.34',
        varbinds: [{ oid: '1.3.6.1.4.1.3.2', type: 'i', value: 1 }],
      }),
    ).toMatchObject({ acknowledged: true, kind: 'inform' });
  });

  for (const [user, auth, priv] of [
    ['trapsha', 'SHA', 'AES'],
    ['trapmd5', 'MD5', 'DES'],
    ['trap512', 'SHA512', 'AES256'],
    ['trap192', 'SHA', 'AES192'],
  ])
    it(`v3 trap ${auth}/${priv} with our engine ID`, async () => {
      await sendTrap({
        ...base(),
        version: '3',
        engineId: ENGINE,
        user: { name: user!, authProtocol: auth, authKey: 'authpass123', privProtocol: priv, privKey: 'privpass123' },
        trapOid: '1.3.6.1.4.1.8072.4.0.35',
        varbinds: [{ oid: '1.3.6.1.4.1.3.3', type: 's', value: `v3-${user}` }],
      });
      await until(() => trapd.output().includes(`"v3-${user}"`) || undefined);
    });

  it('v3 inform discovers snmptrapd and is acknowledged', async () => {
    const res = await sendTrap({
      ...base(),
      version: '3',
      inform: true,
      timeoutMs: 2000,
      user: { name: 'informer', authProtocol: 'SHA-256', authKey: 'authpass123', privProtocol: 'AES', privKey: 'privpass123' },
      trapOid: '1.3.6.1.4.1.8072.4.0.36',
      varbinds: [{ oid: '1.3.6.1.4.1.3.4', type: 's', value: 'v3-inform' }],
    });
    expect(res.acknowledged).toBe(true);
    await until(() => trapd.output().includes('"v3-inform"') || undefined);
  });

  it('symbolic OIDs go through the resolver; bad varbinds are 400s', async () => {
    const resolver = (n: string) => ({ 'IF-MIB::linkDown': '1.3.6.1.6.3.1.1.5.3', 'IF-MIB::ifIndex': '1.3.6.1.2.1.2.2.1.1' })[n];
    await sendTrap({ ...base(), resolver, trapOid: 'IF-MIB::linkDown', varbinds: [{ oid: 'IF-MIB::ifIndex', type: 'Integer32', value: 9 }] });
    await until(() => trapd.output().includes('.1.3.6.1.2.1.2.2.1.1 = INTEGER: 9') || undefined);
    await expect(sendTrap({ ...base(), trapOid: 'IF-MIB::linkDown' })).rejects.toThrow(/no MIB resolver/);
    await expect(
      sendTrap({ ...base(), trapOid: '1.3.6.1.6.3.1.1.5.3', varbinds: [{ oid: '1.3.6.1.4.1.1', type: 'Integer32', value: 2 ** 31 }] }),
    ).rejects.toThrow(/varbind 1: Integer32 value .* out of range/);
    await expect(
      sendTrap({ ...base(), trapOid: '1.3.6.1.6.3.1.1.5.3', varbinds: [{ oid: '1.3.6.1.4.1.1', type: 'Counter64', value: -1 }] }),
    ).rejects.toBeInstanceOf(SnmpInputError);
    await expect(
      sendTrap({ ...base(), trapOid: '1.3.6.1.6.3.1.1.5.3', varbinds: [{ oid: '1.3.6.1.4.1.1', type: 'IpAddress', value: '300.1.1.1' }] }),
    ).rejects.toMatchObject({ statusCode: 400 });
    await expect(sendTrap({ ...base(), trapOid: '1.3.6.1.6.3.1.1.5.3', varbinds: [{ oid: '1.3.6.1.4.1.1', type: 'Bogus', value: 1 }] })).rejects.toThrow(
      /unknown SNMP type "Bogus"/,
    );
  });
});
