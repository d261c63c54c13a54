// POST /api/walk/execute through the console API against real agents: Debian's snmpd (v1, v2c, v3
// authPriv; compared with snmpwalk's own output) and pysnmp's snmpsimd (edge values, a table).
import { createSocket, type Socket } from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freeUdpPort, run, startSnmpd, startSnmpsimd, V3_USER, type Peer } from '../snmp/peers.js';
import { detailOnly, loggedIn, started } from './helpers.js';
import { CORPUS as NET_SNMP_MIBS } from '../mib/helpers.js';

/** A logged-in console with the net-snmp MIBs that lives for a whole describe block. */
async function longConsole() {
  const a = await loggedIn({ SVC_MIB_BUNDLED_SOURCE_DIR: NET_SNMP_MIBS });
  started.splice(started.indexOf(a.c), 1);
  return a;
}

/** snmpwalk's lines (without the trailing spaces of empty values and wrapped hex). */
const lines = (out: string) =>
  out
    .split('\n')
    .filter((l) => l.includes(' = '))
    .map((l) => l.trimEnd());

describe('walker against snmpd', () => {
  let snmpd: Peer;
  let a: Awaited<ReturnType<typeof longConsole>>;
  let target: { target: string; port: number };
  beforeAll(async () => {
    [snmpd, a] = await Promise.all([startSnmpd(), longConsole()]);
    target = { target: '127.0.0.1', port: snmpd.port };
  });
  afterAll(async () => {
    await a?.c.stop();
    await snmpd?.stop();
  });

  it('v2c parsed: typed {oid, type, value} in snmpbulkwalk order, GETBULK, stats counted', async () => {
    await a.api('DELETE', '/api/stats/');
    const r = await a.api('POST', '/api/walk/execute', { ...target, community: 'public', oid: '1.3.6.1.2.1', parse: true });
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
    const ref = lines(await run('snmpbulkwalk', ['-v2c', '-c', 'public', '-On', '-Cr25', `127.0.0.1:${snmpd.port}`, '.1.3.6.1.2.1']));
    expect(r.body.results.map((x: any) => '.' + x.oid)).toEqual(ref.map((l) => l.split(' = ')[0]));
    expect(r.body).toMatchObject({
      operation: 'GETBULK',
      version: '2c',
      oid: '1.3.6.1.2.1',
      format: 'current',
      parse: true,
      use_mibs: false,
      truncated: false,
      count: ref.length,
      max_repetitions: 25,
    });
    const byOid = new Map<string, any>(r.body.results.map((x: any) => [x.oid, x]));
    const descr = ref.find((l) => l.startsWith('.1.3.6.1.2.1.1.1.0 '))!.split(' = STRING: ')[1];
    expect(byOid.get('1.3.6.1.2.1.1.1.0')).toEqual({ oid: '1.3.6.1.2.1.1.1.0', type: 'OctetString', value: JSON.parse(descr!) });
    expect(byOid.get('1.3.6.1.2.1.1.2.0')).toEqual({ oid: '1.3.6.1.2.1.1.2.0', type: 'ObjectIdentifier', value: '1.3.6.1.4.1.8072.3.2.10' });
    expect(byOid.get('1.3.6.1.2.1.2.2.1.1.1')).toEqual({ oid: '1.3.6.1.2.1.2.2.1.1.1', type: 'Integer32', value: 1 });
    const hc = r.body.results.find((x: any) => x.type === 'Counter64');
    expect(typeof hc.value).toBe('number');
    const stats = (await a.api('GET', '/api/stats/')).body.walker;
    expect(stats).toMatchObject({ walks: 1, oids: ref.length, errors: 0 });
    expect(stats.last_duration_ms).toBeGreaterThanOrEqual(0);
  });

  it('raw: the lines snmpwalk -On prints', async () => {
    const r = await a.api('POST', '/api/walk/execute', { ...target, oid: '1.3.6.1.2.1.1', parse: false });
    const ref = lines(await run('snmpwalk', ['-v2c', '-c', 'public', '-On', `127.0.0.1:${snmpd.port}`, '.1.3.6.1.2.1.1']));
    const moving = (l: string) => l.startsWith('.1.3.6.1.2.1.1.3.0 ');
    expect(r.body.results.filter((l: string) => !moving(l))).toEqual(ref.filter((l) => !moving(l)));
    expect(r.body.results.find(moving)).toMatch(/^\.1\.3\.6\.1\.2\.1\.1\.3\.0 = Timeticks: \(\d+\) \d+:\d\d:\d\d\.\d\d$/);
  });

  it('raw with use_mibs: the lines snmpwalk prints with the same MIBs loaded (numeric indexes, -Ob)', async () => {
    const sys = await a.api('POST', '/api/walk/execute', { ...target, oid: 'sysObjectID.0', parse: false, use_mibs: true });
    expect(sys.body.results).toEqual(['SNMPv2-MIB::sysObjectID.0 = OID: NET-SNMP-TC::linux']);
    for (const oid of ['1.3.6.1.2.1.1', '1.3.6.1.2.1.2.2']) {
      const r = await a.api('POST', '/api/walk/execute', { ...target, oid, parse: false, use_mibs: true });
      const ref = lines(await run('snmpwalk', ['-v2c', '-c', 'public', '-Ob', '-M', NET_SNMP_MIBS, '-m', 'ALL', `127.0.0.1:${snmpd.port}`, '.' + oid]));
      // Counters and uptime move between the two walks; OID values naming an object defined by
      // two modules may pick either (net-snmp: load order; we: the SMIv2 one).
      const stable = (l: string) => !/= (Counter32|Counter64|Timeticks): /.test(l);
      const anyModule = (l: string) => l.replace(/= OID: [\w-]+::/, '= OID: ').trimEnd();
      expect(r.body.results.filter(stable).map(anyModule)).toEqual(ref.filter(stable).map(anyModule));
      expect(r.body.results.length).toBe(ref.length);
    }
  });

  it('parsed with use_mibs: names, enum labels and DISPLAY-HINT forms', async () => {
    const r = await a.api('POST', '/api/walk/execute', { ...target, oid: '1.3.6.1.2.1.2.2', use_mibs: true });
    expect(r.body.oid_name).toBe('IF-MIB::ifTable');
    const by = new Map<string, any>(r.body.results.map((x: any) => [x.name, x]));
    expect(by.get('IF-MIB::ifOperStatus.1')).toEqual({
      oid: '1.3.6.1.2.1.2.2.1.8.1',
      name: 'IF-MIB::ifOperStatus.1',
      type: 'Integer32',
      value: 1,
      label: 'up',
    });
    expect(by.get('IF-MIB::ifType.1')).toMatchObject({ value: 24, label: 'softwareLoopback' });
    expect(by.get('IF-MIB::ifDescr.1')).toEqual({ oid: '1.3.6.1.2.1.2.2.1.2.1', name: 'IF-MIB::ifDescr.1', type: 'OctetString', value: 'lo' });
    const mac = [...by.values()].find((x) => x.name.startsWith('IF-MIB::ifPhysAddress.') && x.value);
    expect(mac.encoding).toBe('hex');
    expect(mac.display).toBe([...Buffer.from(mac.value, 'hex')].map((b) => b.toString(16)).join(':'));
    const ref = await run('snmpget', ['-v2c', '-c', 'public', '-M', NET_SNMP_MIBS, '-m', 'ALL', `127.0.0.1:${snmpd.port}`, mac.name]);
    expect(ref.trim()).toBe(`${mac.name} = STRING: ${mac.display}`);
  });

  it('grouped: ifTable rows keyed by index, columns by name, plus scalars', async () => {
    const r = await a.api('POST', '/api/walk/execute', { ...target, oid: 'IF-MIB::interfaces', json_format: 'grouped', use_mibs: true });
    expect(r.status).toBe(200);
    expect(r.body.results).toBeUndefined();
    expect(Object.keys(r.body.scalars)).toEqual(['IF-MIB::ifNumber.0']);
    const n = r.body.scalars['IF-MIB::ifNumber.0'].value;
    expect(r.body.scalars['IF-MIB::ifNumber.0']).toEqual({ oid: '1.3.6.1.2.1.2.1.0', type: 'Integer32', value: n });
    const t = r.body.tables['IF-MIB::ifTable'];
    expect(t).toMatchObject({ oid: '1.3.6.1.2.1.2.2', entry: 'IF-MIB::ifEntry', index: ['ifIndex'], row_count: n });
    expect(t.columns.slice(0, 8)).toEqual(['ifIndex', 'ifDescr', 'ifType', 'ifMtu', 'ifSpeed', 'ifPhysAddress', 'ifAdminStatus', 'ifOperStatus']);
    expect(Object.keys(t.rows)).toEqual(Array.from({ length: n }, (_, i) => String(i + 1)));
    expect(t.rows['1'].ifIndex).toEqual({ type: 'Integer32', value: 1 });
    expect(t.rows['1'].ifDescr).toEqual({ type: 'OctetString', value: 'lo' });
    expect(t.rows['1'].ifOperStatus).toEqual({ type: 'Integer32', value: 1, label: 'up' });
    expect(Object.keys(t.rows['1'])).toEqual(t.columns);
    expect(r.body.other).toEqual([]);
    // Raw grouped: the cells are the value texts.
    const raw = await a.api('POST', '/api/walk/execute', { ...target, oid: '1.3.6.1.2.1.1', json_format: 'grouped', parse: false, use_mibs: true });
    expect(raw.body.scalars['SNMPv2-MIB::sysName.0']).toMatch(/^STRING: \S+/);
    expect(raw.body.scalars['SNMPv2-MIB::sysUpTime.0']).toMatch(/^Timeticks: \(\d+\)/);
    expect(raw.body.tables['SNMPv2-MIB::sysORTable'].rows['1'].sysORDescr).toBe('STRING: The SNMP Management Architecture MIB.');
  });

  it('v1 walks with GETNEXT: the OIDs snmpwalk -v1 returns', async () => {
    const r = await a.api('POST', '/api/walk/execute', { ...target, version: '1', oid: '1.3.6.1.2.1.1' });
    expect(r.body).toMatchObject({ operation: 'GETNEXT', version: '1' });
    expect(r.body.max_repetitions).toBeUndefined();
    const ref = lines(await run('snmpwalk', ['-v1', '-c', 'public', '-On', `127.0.0.1:${snmpd.port}`, '.1.3.6.1.2.1.1']));
    expect(r.body.results.map((x: any) => '.' + x.oid)).toEqual(ref.map((l) => l.split(' = ')[0]));
  });

  it('v3 authPriv (SHA/AES) walk; a wrong key is a 502 that says which check failed', async () => {
    const v3 = {
      ...target,
      version: '3',
      username: V3_USER.name,
      auth_protocol: V3_USER.authProtocol,
      auth_key: V3_USER.authKey,
      priv_protocol: V3_USER.privProtocol,
      priv_key: V3_USER.privKey,
    };
    const r = await a.api('POST', '/api/walk/execute', { ...v3, oid: 'SNMPv2-MIB::system' });
    expect(r.status).toBe(200);
    expect(r.body.results[0]).toMatchObject({ oid: '1.3.6.1.2.1.1.1.0', type: 'OctetString' });
    expect(r.body.count).toBeGreaterThan(5);
    const bad = detailOnly(await a.api('POST', '/api/walk/execute', { ...v3, auth_key: 'wrongpass123' }), 502);
    expect(bad).toMatch(/wrongDigests/);
    expect(bad).toMatch(/SNMPv3 user name, protocols and keys/);
  });

  it('max_oids and walk_max_oids stop the walk and say so', async () => {
    const r = await a.api('POST', '/api/walk/execute', { ...target, oid: '1.3.6.1.2.1.1', max_oids: 5 });
    expect(r.body).toMatchObject({ count: 5, truncated: true, max_oids: 5 });
    expect(r.body.results.map((x: any) => x.oid)).toEqual([
      '1.3.6.1.2.1.1.1.0',
      '1.3.6.1.2.1.1.2.0',
      '1.3.6.1.2.1.1.3.0',
      '1.3.6.1.2.1.1.4.0',
      '1.3.6.1.2.1.1.5.0',
    ]);
    expect((await a.api('POST', '/api/settings/app', { walk_max_oids: 3 })).status).toBe(200);
    try {
      const capped = await a.api('POST', '/api/walk/execute', { ...target, oid: '1.3.6.1.2.1.1', max_oids: 50 });
      expect(capped.body).toMatchObject({ count: 3, truncated: true, max_oids: 3 });
      // Exactly at the cap is not truncated.
      const exact = await a.api('POST', '/api/walk/execute', { ...target, oid: '1.3.6.1.2.1.2.1' });
      expect(exact.body).toMatchObject({ count: 1, truncated: false });
    } finally {
      await a.api('POST', '/api/settings/app', { walk_max_oids: 100000 });
    }
  });

  it('a wrong community: 504 within the timeout bound, naming host, port, timeout and retries', async () => {
    const t0 = Date.now();
    const before = (await a.api('GET', '/api/stats/')).body.walker.errors;
    const d = detailOnly(await a.api('POST', '/api/walk/execute', { ...target, community: 'wrong', timeout_ms: 300, retries: 1 }), 504);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(d).toBe(
      `no response from 127.0.0.1:${snmpd.port} (SNMPv2c) within 300 ms per attempt, 2 attempts (timeout_ms 300, retries 1); check that an SNMP agent runs there, that UDP is not filtered and that the community string is right`,
    );
    expect((await a.api('GET', '/api/stats/')).body.walker.errors).toBe(before + 1);
  });
});

// Values at the type edges, a table the MIBs know, and one they do not.
const SIM_DATA =
  [
    '1.3.6.1.2.1.1.1.0|4|say "hi" \\ there',
    '1.3.6.1.2.1.1.4.0|4|',
    '1.3.6.1.2.1.1.5.0|4x|00ff10',
    '1.3.6.1.2.1.2.1.0|2|3',
    ...[1, 2, 3].flatMap((i) => [`1.3.6.1.2.1.2.2.1.1.${i}|2|${i}`]),
    ...[1, 2, 3].flatMap((i) => [`1.3.6.1.2.1.2.2.1.2.${i}|4|port${i}`]),
    ...[1, 2, 3].flatMap((i) => [`1.3.6.1.2.1.2.2.1.8.${i}|2|${i === 2 ? 2 : 1}`]),
    '1.3.6.1.2.1.2.2.1.10.1|65|4294967295',
    '1.3.6.1.2.1.2.2.1.10.2|65|0',
    '1.3.6.1.2.1.2.2.1.10.3|65|7',
    '1.3.6.1.2.1.31.1.1.1.6.1|70|18446744073709551615',
    '1.3.6.1.2.1.31.1.1.1.6.2|70|9007199254740993',
    '1.3.6.1.2.1.31.1.1.1.6.3|70|9007199254740991',
    '1.3.6.1.4.1.99999.1.0|66|4000000000',
    '1.3.6.1.4.1.99999.2.0|64|10.1.2.3',
    '1.3.6.1.4.1.99999.3.0|67|8640000',
  ].join('\n') + '\n';

describe('walker against snmpsimd (pysnmp)', () => {
  let sim: Peer;
  let a: Awaited<ReturnType<typeof longConsole>>;
  let target: { target: string; port: number; timeout_ms: number };
  beforeAll(async () => {
    [sim, a] = await Promise.all([
      startSnmpsimd(SIM_DATA, { user: 'simuser', authProto: 'SHA', authKey: 'authpass123', privProto: 'AES', privKey: 'privpass123' }),
      longConsole(),
    ]);
    target = { target: '127.0.0.1', port: sim.port, timeout_ms: 3000 };
  });
  afterAll(async () => {
    await a?.c.stop();
    await sim?.stop();
  });

  it('parsed: Counter64 a number up to 2^53-1 and a string above, hex for binary strings', async () => {
    const r = await a.api('POST', '/api/walk/execute', { ...target, oid: '1.3.6' });
    const v = Object.fromEntries(r.body.results.map((x: any) => [x.oid, x]));
    expect(v['1.3.6.1.2.1.31.1.1.1.6.1']).toEqual({ oid: '1.3.6.1.2.1.31.1.1.1.6.1', type: 'Counter64', value: '18446744073709551615' });
    expect(v['1.3.6.1.2.1.31.1.1.1.6.2'].value).toBe('9007199254740993');
    expect(v['1.3.6.1.2.1.31.1.1.1.6.3'].value).toBe(9007199254740991);
    expect(v['1.3.6.1.2.1.1.5.0']).toEqual({ oid: '1.3.6.1.2.1.1.5.0', type: 'OctetString', value: '00ff10', encoding: 'hex' });
    expect(v['1.3.6.1.2.1.1.1.0'].value).toBe('say "hi" \\ there');
    expect(v['1.3.6.1.2.1.1.4.0'].value).toBe('');
    expect(v['1.3.6.1.2.1.2.2.1.10.1']).toEqual({ oid: '1.3.6.1.2.1.2.2.1.10.1', type: 'Counter32', value: 4294967295 });
    expect(v['1.3.6.1.4.1.99999.1.0']).toEqual({ oid: '1.3.6.1.4.1.99999.1.0', type: 'Gauge32', value: 4000000000 });
    expect(v['1.3.6.1.4.1.99999.2.0']).toEqual({ oid: '1.3.6.1.4.1.99999.2.0', type: 'IpAddress', value: '10.1.2.3' });
    expect(v['1.3.6.1.4.1.99999.3.0']).toEqual({ oid: '1.3.6.1.4.1.99999.3.0', type: 'TimeTicks', value: 8640000 });
    expect(r.body.count).toBe(SIM_DATA.trim().split('\n').length);
  });

  it('raw: the same lines snmpwalk -On prints for every type (quotes escaped, hex, Counter64, days of uptime)', async () => {
    const r = await a.api('POST', '/api/walk/execute', { ...target, oid: '1.3.6', parse: false });
    // snmpwalk also prints the endOfMibView that ends the walk; we stop there.
    const ref = lines(await run('snmpwalk', ['-v2c', '-c', 'public', '-On', `127.0.0.1:${sim.port}`, '.1.3.6'])).filter(
      (l) => !l.includes('No more variables left'),
    );
    expect(r.body.results).toEqual(ref);
    expect(r.body.results).toContain('.1.3.6.1.2.1.1.4.0 = ""');
    expect(r.body.results).toContain('.1.3.6.1.4.1.99999.3.0 = Timeticks: (8640000) 1 day, 0:00:00.00');
  });

  it('grouped without MIB names for values: table rows, scalars, and what no MIB places', async () => {
    const r = await a.api('POST', '/api/walk/execute', { ...target, oid: '1.3.6', json_format: 'grouped' });
    expect(r.body.use_mibs).toBe(false);
    expect(r.body.scalars['SNMPv2-MIB::sysDescr.0']).toEqual({ oid: '1.3.6.1.2.1.1.1.0', type: 'OctetString', value: 'say "hi" \\ there' });
    const t = r.body.tables['IF-MIB::ifTable'];
    expect(t.columns).toEqual(['ifIndex', 'ifDescr', 'ifOperStatus', 'ifInOctets']);
    expect(t.rows).toEqual({
      1: {
        ifIndex: { type: 'Integer32', value: 1 },
        ifDescr: { type: 'OctetString', value: 'port1' },
        ifOperStatus: { type: 'Integer32', value: 1 },
        ifInOctets: { type: 'Counter32', value: 4294967295 },
      },
      2: {
        ifIndex: { type: 'Integer32', value: 2 },
        ifDescr: { type: 'OctetString', value: 'port2' },
        ifOperStatus: { type: 'Integer32', value: 2 },
        ifInOctets: { type: 'Counter32', value: 0 },
      },
      3: {
        ifIndex: { type: 'Integer32', value: 3 },
        ifDescr: { type: 'OctetString', value: 'port3' },
        ifOperStatus: { type: 'Integer32', value: 1 },
        ifInOctets: { type: 'Counter32', value: 7 },
      },
    });
    expect(r.body.tables['IF-MIB::ifXTable']).toMatchObject({ entry: 'IF-MIB::ifXEntry', index: ['ifIndex'], columns: ['ifHCInOctets'], row_count: 3 });
    expect(r.body.other.map((x: any) => x.oid)).toEqual(['1.3.6.1.4.1.99999.1.0', '1.3.6.1.4.1.99999.2.0', '1.3.6.1.4.1.99999.3.0']);
  });

  it('v3 authPriv against pysnmp (context "public")', async () => {
    const r = await a.api('POST', '/api/walk/execute', {
      ...target,
      oid: '1.3.6.1.2.1.2.2.1.2',
      version: '3',
      username: 'simuser',
      auth_protocol: 'SHA',
      auth_key: 'authpass123',
      priv_protocol: 'AES',
      priv_key: 'privpass123',
      context_name: 'public',
    });
    expect(r.body.results.map((x: any) => x.value)).toEqual(['port1', 'port2', 'port3']);
  });
});

describe('walker errors', () => {
  let a: Awaited<ReturnType<typeof longConsole>>;
  let silent: Socket;
  beforeAll(async () => {
    a = await longConsole();
    silent = createSocket('udp4');
    await new Promise<void>((r) => silent.bind(0, '127.0.0.1', () => r()));
  });
  afterAll(async () => {
    silent?.close();
    await a?.c.stop();
  });

  it('a silent UDP port: 504 after timeout x attempts, not a hang; v3 names the credentials', async () => {
    const port = silent.address().port;
    const t0 = Date.now();
    const d = detailOnly(await a.api('POST', '/api/walk/execute', { target: '127.0.0.1', port, oid: '1.3.6.1.2.1', timeout_ms: 250, retries: 2 }), 504);
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(700);
    expect(took).toBeLessThan(2500);
    expect(d).toContain(`no response from 127.0.0.1:${port} (SNMPv2c) within 250 ms per attempt, 3 attempts (timeout_ms 250, retries 2)`);
    expect(d).toContain('community');
    const v3 = detailOnly(
      await a.api('POST', '/api/walk/execute', {
        target: '127.0.0.1',
        port,
        version: '3',
        username: 'u1',
        auth_key: 'authpass123',
        timeout_ms: 200,
        retries: 0,
      }),
      504,
    );
    expect(v3).toContain('SNMPv3 user name, protocols and keys');
    // The application settings are the defaults when the request has none.
    await a.api('POST', '/api/settings/app', { walk_timeout_ms: 200, walk_retries: 0 });
    const t1 = Date.now();
    expect(detailOnly(await a.api('POST', '/api/walk/execute', { target: '127.0.0.1', port }), 504)).toContain('(timeout_ms 200, retries 0)');
    expect(Date.now() - t1).toBeLessThan(1500);
  });

  it(`more than ${4} walks at once: 429 for the extra ones`, async () => {
    const port = silent.address().port;
    const body = { target: '127.0.0.1', port, timeout_ms: 600, retries: 0 };
    const all = await Promise.all(Array.from({ length: 6 }, () => a.api('POST', '/api/walk/execute', body)));
    expect(all.map((r) => r.status).sort()).toEqual([429, 429, 504, 504, 504, 504]);
    expect(all.find((r) => r.status === 429)!.body).toEqual({ detail: '4 walks are already running; try again when one finishes' });
  });

  it('nothing listening (ICMP port unreachable): 502 at once; unknown host: 400', async () => {
    const port = await freeUdpPort();
    const t0 = Date.now();
    expect(detailOnly(await a.api('POST', '/api/walk/execute', { target: '127.0.0.1', port, timeout_ms: 5000 }), 502)).toBe(
      `nothing listens on udp 127.0.0.1:${port} (ICMP port unreachable); check the host and port`,
    );
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(detailOnly(await a.api('POST', '/api/walk/execute', { target: 'no-such-host.invalid' }), 400)).toMatch(
      /^cannot resolve host "no-such-host\.invalid"/,
    );
  });

  it('bad input is 422 with what is wrong', async () => {
    const walk = (body: Record<string, unknown>) => a.api('POST', '/api/walk/execute', { target: '127.0.0.1', ...body });
    expect(detailOnly(await walk({ oid: '1.3.x' }), 422)).toMatch(/oid "1\.3\.x"/);
    expect(detailOnly(await walk({ oid: 'NO-SUCH-MIB::thing' }), 422)).toBe(
      'oid "NO-SUCH-MIB::thing" is neither a numeric OID nor a name known to the loaded MIBs (GET /api/mibs/browse/search finds names)',
    );
    expect(detailOnly(await walk({ oid: '1.3.6.1.2.1.4294967296' }), 422)).toMatch(/arc above 4294967295/);
    expect(detailOnly(await walk({ port: 70000 }), 422)).toMatch(/port/);
    expect(detailOnly(await walk({ version: '4' }), 422)).toMatch(/version/);
    expect(detailOnly(await walk({ json_format: 'tree' }), 422)).toMatch(/json_format/);
    expect(detailOnly(await walk({ colour: 'red' }), 422)).toMatch(/additional/);
    expect(detailOnly(await a.api('POST', '/api/walk/execute', { port: 161 }), 422)).toMatch(/target/);
    expect(detailOnly(await walk({ version: '3' }), 422)).toMatch(/^SNMPv3 needs username/);
    expect(detailOnly(await walk({ version: '3', username: 'u', auth_key: 'short' }), 422)).toMatch(/at least 8 characters/);
    expect(detailOnly(await walk({ version: '3', username: 'u', auth_protocol: 'SHA3', auth_key: 'longenough' }), 422)).toMatch(/unknown auth protocol "SHA3"/);
    expect(detailOnly(await walk({ username: 'u' }), 422)).toMatch(/username is for SNMPv3/);
  });

  it('the walker is in the OpenAPI document under tag walker', async () => {
    const doc = await fetch(`${a.c.url}/docs/json`).then((r) => r.json() as Promise<any>);
    const op = doc.paths['/api/walk/execute'].post;
    expect(op.tags).toEqual(['walker']);
    expect(op.summary).toMatch(/GETBULK/);
    expect(Object.keys(op.requestBody.content['application/json'].schema.properties)).toEqual(
      expect.arrayContaining(['target', 'port', 'community', 'oid', 'parse', 'use_mibs', 'json_format', 'version', 'username']),
    );
  });
});
