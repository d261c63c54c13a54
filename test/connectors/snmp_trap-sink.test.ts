// The snmp_trap sink against Debian's snmptrapd (its own config on a free loopback port, its -F
// output parsed back): typed and auto-typed varbinds, sysUpTime.0 and snmpTrapOID.0 first, MIB
// names for trap_oid and varbinds, per-record refusals to the DLQ, v1, v3 traps (createUser -e),
// v2c and v3 informs acknowledged, and the failures a user must be told about.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { autoVarBind } from '../../src/plugins/connectors/snmp_trap/sink.js';
import { freeUdpPort } from '../snmp/peers.js';
import { tempDir } from '../helpers/fs.js';
import type { Cfg, Rec } from './conformance.js';
import { loadPipeline, outputRecords, until } from './helpers.js';
import { startTrapd, type Trapd, type TrapdLine } from './peers/snmptrapd.js';
import { quiet } from '../helpers/wait.js';

const X = '1.3.6.1.4.1.8072.9999.8';
const TRAP = '1.3.6.1.4.1.8072.9999.8.0.1';
const ENGINE = '0x80001f888001020304050607aa';

let trapd: Trapd;
let v3d: Trapd;
beforeAll(async () => {
  trapd = await startTrapd();
  // v3: one user bound to our sink's engine ID per protocol pair (traps), and users of snmptrapd's own engine (informs).
  v3d = await startTrapd(
    [
      `createUser -e ${ENGINE} t-sha256-aes256 SHA-256 "trap-auth-key" AES-256 "trap-priv-key"`,
      `createUser -e ${ENGINE} t-md5-des MD5 "trap-auth-key" DES "trap-priv-key"`,
      `createUser -e ${ENGINE} t-sha512-auth SHA-512 "trap-auth-key"`,
      `createUser -e ${ENGINE} t-none`,
      'createUser i-sha-aes SHA "inform-auth-key" AES "inform-priv-key"',
    ].join('\n'),
  );
}, 60_000);
afterAll(async () => {
  await trapd?.stop();
  await v3d?.stop();
});

let chan = 0;
const community = () => `c${process.pid}-${++chan}`;

/** NDJSON records through one snmp_trap sink; refused records land in a local DLQ. */
async function sinkRun(sink: Cfg, records: Rec[] | string, extra: Cfg = {}) {
  const dir = tempDir('svc-trap-sink-');
  mkdirSync(join(dir, 'in'));
  writeFileSync(join(dir, 'in', 'r.ndjson'), typeof records === 'string' ? records : records.map((r) => JSON.stringify(r) + '\n').join(''));
  const dlqDir = join(dir, 'dlq');
  const cfg = loadPipeline({
    name: 'trap-sink-test',
    schedule: { type: 'manual' },
    source: { type: 'local', path: join(dir, 'in') },
    serializer_in: { type: 'ndjson' },
    serializer_out: { type: 'json' },
    sinks: [{ type: 'snmp_trap', host: '127.0.0.1', port: trapd.port, trap_oid: TRAP, ...sink }],
    on_error: 'dlq',
    dlq: { type: 'local', path: dlqDir, filename_template: 'dlq.ndjson' },
    ...extra,
  });
  const rec = await runPipeline(cfg, { log: silentLogger, processed: new MemoryProcessedFiles() });
  let dlq: Rec[] = [];
  try {
    dlq = outputRecords(dlqDir);
  } catch {
    /* none */
  }
  return { rec, dlq };
}

const received = (d: Trapd, f: (t: TrapdLine) => boolean, n: number) =>
  until(() => d.traps().filter(f).length >= n && d.traps().filter(f), 10_000, `${n} traps at snmptrapd`);
const vb = (t: TrapdLine, oid: string) => t.varbinds.find((v) => v.oid === oid);

describe('snmp_trap sink: varbinds', () => {
  it('typed varbinds from record fields, after sysUpTime.0 and snmpTrapOID.0 = trap_oid', async () => {
    const c = community();
    const { rec } = await sinkRun(
      {
        community: c,
        varbinds: [
          { oid: `${X}.1.0`, value_field: 'n', type: 'Integer32' },
          { oid: `${X}.2.0`, value_field: 'text', type: 'OctetString' },
          { oid: `${X}.3.0`, value_field: 'big', type: 'Counter64' },
          { oid: `${X}.4.0`, value_field: 'ip', type: 'IpAddress' },
          { oid: `${X}.5.0`, value_field: 'oid', type: 'ObjectIdentifier' },
          { oid: `${X}.6.0`, value_field: 'g', type: 'Gauge32' },
          { oid: `${X}.7.0`, value_field: 'cnt', type: 'Counter32' },
          { oid: `${X}.8.0`, value_field: 'ticks', type: 'TimeTicks' },
          { oid: `${X}.9.0`, value_field: 'raw', type: 'hex' },
          { oid: `${X}.10.0`, value_field: 'site.name', type: 'OctetString' },
          { oid: `${X}.11.0`, value_field: 'n', type: 'OctetString' },
        ],
      },
      [
        {
          n: -5,
          text: 'link down on ge-0/0/1',
          big: '18446744073709551615',
          ip: '192.0.2.7',
          oid: '1.3.6.1.2.1.1',
          g: 4294967295,
          cnt: 7,
          ticks: 4200,
          raw: 'c0ffee',
          site: { name: 'paris' },
        },
      ],
    );
    expect(rec.status, JSON.stringify(rec.errors)).toBe('success');
    const [t] = await received(trapd, (x) => x.community === c, 1);
    expect(t!.version).toBe('2c');
    expect(t!.trapOid).toBe(TRAP);
    expect(t!.varbinds.map((v) => [v.type, v.value])).toEqual([
      ['INTEGER', -5],
      ['STRING', 'link down on ge-0/0/1'],
      ['Counter64', '18446744073709551615'],
      ['IpAddress', '192.0.2.7'],
      ['OID', '1.3.6.1.2.1.1'],
      ['Gauge32', 4294967295],
      ['Counter32', 7],
      ['Timeticks', 4200],
      ['Hex-STRING', 'c0ffee'],
      ['STRING', 'paris'],
      ['STRING', '-5'],
    ]);
    // On the wire: sysUpTime.0 first, snmpTrapOID.0 second.
    const line = trapd.peer
      .output()
      .split('\n')
      .find((l) => l.includes(`community ${c}\t`))!;
    expect(line.split('|~|')[0]).toMatch(/\t\.1\.3\.6\.1\.2\.1\.1\.3\.0 = Timeticks: /);
    expect(line.split('|~|')[1]).toBe(`.1.3.6.1.6.3.1.1.4.1.0 = OID: .${TRAP}`);
  });

  it('empty varbinds: every field is a varbind named by its OID or MIB name, auto-typed', async () => {
    const c = community();
    const { rec, dlq } = await sinkRun(
      { community: c, mib_modules: ['IF-MIB'] },
      `{"${X}.1.0": 42, "${X}.2.0": 3000000000, "${X}.3.0": "text", "${X}.4.0": true, "${X}.5.0": false, "${X}.6.0": null, "${X}.7.0": 1.5, "${X}.8.0": {"a": [1]}, "ifOperStatus.3": "down", "IF-MIB::ifDescr.3": "eth0"}\n`,
    );
    expect(rec.status, JSON.stringify(rec.errors)).toBe('success');
    expect(dlq).toEqual([]);
    const [t] = await received(trapd, (x) => x.community === c, 1);
    expect(t!.varbinds.map((v) => [v.oid, v.type, v.value])).toEqual([
      [`${X}.1.0`, 'INTEGER', 42],
      [`${X}.2.0`, 'Counter64', '3000000000'],
      [`${X}.3.0`, 'STRING', 'text'],
      [`${X}.4.0`, 'INTEGER', 1],
      [`${X}.5.0`, 'INTEGER', 2],
      [`${X}.6.0`, 'NULL', 'NULL'],
      [`${X}.7.0`, 'STRING', '1.5'],
      [`${X}.8.0`, 'STRING', '{"a":[1]}'],
      // MIB objects take their syntax: an enumeration by label, a DisplayString.
      ['1.3.6.1.2.1.2.2.1.8.3', 'INTEGER', 2],
      ['1.3.6.1.2.1.2.2.1.2.3', 'STRING', 'eth0'],
    ]);
    expect(() => autoVarBind('1.3', -2147483649)).toThrow(/fits no SNMP integer type/);
  });

  it('symbolic trap_oid and varbind names through mib_modules (bare names looked up there first)', async () => {
    const c = community();
    const { rec } = await sinkRun(
      {
        community: c,
        trap_oid: 'linkDown',
        mib_modules: ['IF-MIB'],
        varbinds: [
          { oid: 'ifIndex.3', value_field: 'i' },
          { oid: 'IF-MIB::ifAdminStatus.3', value_field: 'admin' },
          { oid: 'ifOperStatus.3', value_field: 'oper', type: 'Integer32' },
        ],
      },
      [{ i: 3, admin: 'up', oper: 'down' }],
    );
    expect(rec.status, JSON.stringify(rec.errors)).toBe('success');
    const [t] = await received(trapd, (x) => x.community === c, 1);
    expect(t!.trapOid).toBe('1.3.6.1.6.3.1.1.5.3');
    expect(t!.varbinds.map((v) => [v.oid, v.value])).toEqual([
      ['1.3.6.1.2.1.2.2.1.1.3', 3],
      ['1.3.6.1.2.1.2.2.1.7.3', 1],
      ['1.3.6.1.2.1.2.2.1.8.3', 2],
    ]);
  });

  it('a value that does not fit its type, a missing field or a field that is no OID: that record goes to the DLQ, the others are sent', async () => {
    const c = community();
    const records = [
      { seq: 0, n: 1, ip: '10.0.0.1' },
      { seq: 1, n: 'abc', ip: '10.0.0.1' },
      { seq: 2, n: 2147483648, ip: '10.0.0.1' },
      { seq: 3, n: 3, ip: 'not-an-ip' },
      { seq: 4, ip: '10.0.0.1' },
      { seq: 5, n: 5, ip: '10.0.0.5' },
    ];
    const { rec, dlq } = await sinkRun(
      {
        community: c,
        varbinds: [
          { oid: `${X}.1.0`, value_field: 'seq', type: 'Integer32' },
          { oid: `${X}.2.0`, value_field: 'n', type: 'Integer32' },
          { oid: `${X}.3.0`, value_field: 'ip', type: 'IpAddress' },
        ],
      },
      records,
    );
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    const got = await received(trapd, (x) => x.community === c, 2);
    expect(got.map((t) => vb(t, `${X}.1.0`)!.value).sort()).toEqual([0, 5]);
    expect(dlq.map((d) => (d.record as Rec).seq)).toEqual([1, 2, 3, 4]);
    for (const d of dlq) expect(d).toMatchObject({ _stage: 'sink', _error: expect.stringMatching(/^sinks\[0\] \(snmp_trap\): snmp_trap: /) });
    const why = dlq.map((d) => String(d._error));
    expect(why[0]).toMatch(/Integer32 value for .* must be an integer, got "abc"/);
    expect(why[1]).toMatch(/out of range -2147483648\.\.2147483647: 2147483648/);
    expect(why[2]).toMatch(/IpAddress value .* must be a dotted IPv4 address/);
    expect(why[3]).toMatch(/the record has no field "n"/);

    const auto = await sinkRun({ community: community() }, [{ [`${X}.1.0`]: 1 }, { seq: 1 }]);
    expect(auto.dlq).toHaveLength(1);
    expect(auto.dlq[0]!._error).toMatch(/field "seq" is not an OID or a known MIB name/);
  });
});

describe('snmp_trap sink: versions, informs, failures', () => {
  it('version 1: an SNMPv1 Trap-PDU (enterprise, specific trap, agent_address) per RFC 3584; Counter64 refused per record', async () => {
    const c = community();
    const { rec, dlq } = await sinkRun(
      { community: c, version: '1', agent_address: '192.0.2.99', trap_oid: '1.3.6.1.4.1.8072.9999.8.0.42', varbinds: [{ oid: `${X}.1.0`, value_field: 'v' }] },
      [{ v: 7 }, { v: 5000000000 }],
    );
    expect(rec.status).toBe('success');
    const [t] = await received(trapd, (x) => x.community === c, 1);
    expect(t).toMatchObject({ version: '1', v1: { enterprise: '1.3.6.1.4.1.8072.9999.8', generic: 6, specific: 42 } });
    expect(t!.agent).toBe('192.0.2.99');
    expect(vb(t!, `${X}.1.0`)).toMatchObject({ type: 'INTEGER', value: 7 });
    expect(dlq[0]!._error).toMatch(/SNMPv1 has no Counter64/);
  });

  it('v3 traps (createUser -e <our engine ID>): authPriv SHA-256/AES-256 and MD5/DES, authNoPriv, noAuthNoPriv; context_name', async () => {
    const users: [string, Cfg][] = [
      ['t-sha256-aes256', { auth_protocol: 'SHA256', auth_key: 'trap-auth-key', priv_protocol: 'AES256', priv_key: 'trap-priv-key' }],
      ['t-md5-des', { auth_protocol: 'MD5', auth_key: 'trap-auth-key', priv_protocol: 'DES', priv_key: 'trap-priv-key' }],
      ['t-sha512-auth', { auth_protocol: 'SHA512', auth_key: 'trap-auth-key' }],
      ['t-none', {}],
    ];
    for (const [i, [user, keys]] of users.entries()) {
      const { rec } = await sinkRun(
        {
          port: v3d.port,
          version: '3',
          engine_id: ENGINE,
          security_name: user,
          context_name: 'ctx1',
          ...keys,
          varbinds: [{ oid: `${X}.1.0`, value_field: 'i', type: 'Integer32' }],
        },
        [{ i }],
      );
      expect(rec.status, JSON.stringify(rec.errors)).toBe('success');
    }
    const got = await received(v3d, (t) => t.version === '3' && t.user?.startsWith('t-') === true, 4);
    expect(got.map((t) => [t.user, vb(t, `${X}.1.0`)!.value])).toEqual(users.map(([u], i) => [u, i]));
    expect(got[0]!.security).toContain('context ctx1');
    // A wrong key: snmptrapd drops it (nothing received), the sink cannot know (UDP).
    const before = v3d.traps().length;
    const { rec } = await sinkRun(
      {
        port: v3d.port,
        version: '3',
        engine_id: ENGINE,
        security_name: 't-sha256-aes256',
        auth_protocol: 'SHA256',
        auth_key: 'wrong-auth-key',
        priv_protocol: 'AES256',
        priv_key: 'trap-priv-key',
      },
      [{ [`${X}.1.0`]: 9 }],
    );
    expect(rec.status).toBe('success');
    await quiet(500);
    expect(v3d.traps().length).toBe(before);
  });

  it('inform: true: v2c and v3 (authPriv, snmptrapd engine discovered) informs count once acknowledged; an unacknowledged one fails the write', async () => {
    const c = community();
    const two = await sinkRun(
      { community: c, inform: true },
      Array.from({ length: 50 }, (_, i) => ({ [`${X}.1.0`]: i })),
    );
    expect(two.rec.status, JSON.stringify(two.rec.errors)).toBe('success');
    const got = await received(trapd, (x) => x.community === c, 50);
    expect(got[0]!.security).toMatch(/^INFORM/);
    // bytes_out counts the informs sent: the same varbinds as traps, a few bytes apart each (request IDs, uptime).
    const traps = await sinkRun(
      { community: community() },
      Array.from({ length: 50 }, (_, i) => ({ [`${X}.1.0`]: i })),
    );
    expect(traps.rec.bytes_out).toBeGreaterThan(50 * 40);
    expect(Math.abs(two.rec.bytes_out - traps.rec.bytes_out)).toBeLessThanOrEqual(50 * 8);
    const three = await sinkRun(
      {
        port: v3d.port,
        version: '3',
        inform: true,
        security_name: 'i-sha-aes',
        auth_protocol: 'SHA',
        auth_key: 'inform-auth-key',
        priv_protocol: 'AES',
        priv_key: 'inform-priv-key',
      },
      [{ [`${X}.1.0`]: 1 }],
    );
    expect(three.rec.status, JSON.stringify(three.rec.errors)).toBe('success');
    await received(v3d, (t) => t.user === 'i-sha-aes', 1);
    const wrong = await sinkRun(
      {
        port: v3d.port,
        version: '3',
        inform: true,
        timeout_seconds: 0.5,
        retries: 0,
        security_name: 'i-sha-aes',
        auth_protocol: 'SHA',
        auth_key: 'wrong-auth-key',
        priv_protocol: 'AES',
        priv_key: 'inform-priv-key',
      },
      [{ [`${X}.1.0`]: 1 }],
      { on_error: 'continue', dlq: undefined },
    );
    expect(wrong.rec.records_out).toBe(0);
    expect(wrong.rec.errors[0]).toBe(
      `sinks[0] (snmp_trap): snmp_trap: agent at 127.0.0.1:${v3d.port} refused the request: wrongDigests (1 records from r.ndjson)`,
    );
    expect(JSON.stringify(wrong.rec)).not.toContain('wrong-auth-key');
  }, 60_000);

  it('nothing listening: the write fails (ICMP port unreachable) and names host:port; test() says the same; an unknown host is named', async () => {
    const port = await freeUdpPort();
    const { rec } = await sinkRun(
      { port, varbinds: [] },
      Array.from({ length: 20 }, (_, i) => ({ [`${X}.1.0`]: i })),
      { on_error: 'continue', dlq: undefined },
    );
    expect(rec.records_out).toBe(0);
    expect(rec.errors[0]).toBe(`sinks[0] (snmp_trap): snmp_trap: nothing listens on udp 127.0.0.1:${port} (ICMP port unreachable) (20 records from r.ndjson)`);
    const t = await testConnector('sink', { type: 'snmp_trap', host: '127.0.0.1', port, trap_oid: TRAP, community: 'secret-community' });
    expect(t.error).toBe(`snmp_trap: nothing listens on udp 127.0.0.1:${port} (ICMP port unreachable): start the trap receiver or check host and port`);
    const h = await testConnector('sink', { type: 'snmp_trap', host: 'no-such-host.invalid', trap_oid: TRAP });
    expect(h.error).toBe('snmp_trap: cannot resolve host "no-such-host.invalid"');
    expect(await testConnector('sink', { type: 'snmp_trap', host: '127.0.0.1', port: v3d.port, trap_oid: TRAP })).toMatchObject({ ok: true });
  });

  it('mib_dirs: a notification and an object of a MIB of our own by name; a module of mib_modules that is not loaded fails the write with its name', async () => {
    const dir = tempDir('svc-trap-sink-mibs-');
    writeFileSync(
      join(dir, 'SVC-SINK-TRAP-MIB.txt'),
      `SVC-SINK-TRAP-MIB DEFINITIONS ::= BEGIN
IMPORTS MODULE-IDENTITY, OBJECT-TYPE, NOTIFICATION-TYPE, enterprises FROM SNMPv2-SMI;
svcSinkTrapMib MODULE-IDENTITY LAST-UPDATED "202601010000Z" ORGANIZATION "svc" CONTACT-INFO "svc" DESCRIPTION "test" ::= { enterprises 8072 9999 5 }
svcSinkLevel OBJECT-TYPE SYNTAX INTEGER { low(1), high(2) } MAX-ACCESS accessible-for-notify STATUS current DESCRIPTION "level" ::= { svcSinkTrapMib 1 }
svcSinkAlarm NOTIFICATION-TYPE OBJECTS { svcSinkLevel } STATUS current DESCRIPTION "alarm" ::= { svcSinkTrapMib 0 1 }
END
`,
    );
    const c = community();
    const { rec } = await sinkRun(
      {
        community: c,
        mib_dirs: [dir],
        mib_modules: ['SVC-SINK-TRAP-MIB'],
        trap_oid: 'svcSinkAlarm',
        varbinds: [{ oid: 'svcSinkLevel.0', value_field: 'level' }],
      },
      [{ level: 'high' }],
    );
    expect(rec.status, JSON.stringify(rec.errors)).toBe('success');
    const [t] = await received(trapd, (x) => x.community === c, 1);
    expect(t!.trapOid).toBe('1.3.6.1.4.1.8072.9999.5.0.1');
    expect(t!.varbinds).toEqual([{ oid: '1.3.6.1.4.1.8072.9999.5.1.0', type: 'INTEGER', value: 2 }]);
    const missing = await sinkRun({ community: community(), mib_modules: ['NO-SUCH-MIB'] }, [{ [`${X}.1.0`]: 1 }], { on_error: 'continue', dlq: undefined });
    expect(missing.rec.records_out).toBe(0);
    expect(missing.rec.errors[0]).toMatch(/MIB module NO-SUCH-MIB not loaded: put its source in a directory of mib_dirs/);
  }, 60_000);

  it('lint: v3 fields need version 3, a priv_key needs an auth_key, informs need v2c or v3, an unknown varbind type is named', async () => {
    const { loadComponent } = await import('../../src/config/load.js');
    const issues = (cfg: Cfg) =>
      (loadComponent('sink', { type: 'snmp_trap', host: 'h', trap_oid: '1.3.6', ...cfg }, { env: {} }).diagnostics ?? []).map((d) => `${d.path}: ${d.message}`);
    expect(issues({ security_name: 'u' }).join('\n')).toMatch(/version: SNMPv3 fields .* use version '3'/);
    expect(issues({ version: '3', security_name: 'u', priv_key: 'privpriv' }).join('\n')).toMatch(/priv_key: privacy needs authentication/);
    expect(issues({ version: '3' }).join('\n')).toMatch(/security_name: version 3 needs security_name/);
    expect(issues({ version: '1', inform: true }).join('\n')).toMatch(/inform: SNMPv1 has no informs/);
    expect(issues({ varbinds: [{ oid: '1.3.6.1', value_field: 'a', type: 'Float' }] }).join('\n')).toMatch(/varbinds\[0\]\.type: unknown SNMP type "Float"/);
    expect(issues({ version: '3', security_name: 'u', auth_key: 'short' }).join('\n')).toMatch(/auth_key: an SNMPv3 passphrase has at least 8 characters/);
    // The source's users list.
    const src = (cfg: Cfg) =>
      (loadComponent('source', { type: 'snmp_trap', ...cfg }, { env: {} }).diagnostics ?? []).map((d) => `${d.path}: ${d.message}`).join('\n');
    expect(src({ users: [{ security_name: 'a', auth_key: 'authauth' }] })).toMatch(/users: SNMPv3 users are listed: use version '3'/);
    expect(src({ version: '3', users: [{ security_name: 'a', priv_key: 'privpriv' }] })).toMatch(/users\[0\]\.priv_key: privacy needs authentication/);
    expect(src({ version: '3', users: [{ security_name: 'a', engine_id: 'xyz' }] })).toMatch(/users\[0\]\.engine_id/);
    expect(src({ version: '3', users: [{ security_name: 'a' }] })).toBe('');
  });
});
