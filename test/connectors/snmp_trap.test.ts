// The snmp_trap connector: the shared conformance suite (source fed by pysnmp, sink read back from
// snmptrapd), then the source against net-snmp's own senders (snmptrap, snmpinform): the record
// shape with MIB names, resolve_oids off, v1 traps, the community and version filters, informs
// acknowledged, SNMPv3 with every auth and privacy protocol the tools have, a fleet of users bound
// to engine IDs, wrong keys dropped, mib_dirs/mib_modules, the reachability check and the bounded
// queue. The sink's own cases are in snmp_trap-sink.test.ts.
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline, type RunTelemetry } from '../../src/engine/runner.js';
import { silentLogger, type Logger } from '../../src/observability/log.js';
import type { ConnectionState } from '../../src/plugins/types.js';
import { freeUdpPort } from '../snmp/peers.js';
import { tempDir } from '../helpers/fs.js';
import { conformance, type Cfg, type Rec } from './conformance.js';
import { loadPipeline, outputRecords, until } from './helpers.js';
import { holdUdpPort, publishBodies, snmpinform, snmpTrap, snmptrap, snmptrapV1, type CliSecurity } from './peers/snmptrapd.js';
import { quiet } from '../helpers/wait.js';

conformance(snmpTrap);

const LINK_DOWN = '1.3.6.1.6.3.1.1.5.3';
const IF_INDEX = '1.3.6.1.2.1.2.2.1.1';
const IF_ADMIN = '1.3.6.1.2.1.2.2.1.7';
const IF_OPER = '1.3.6.1.2.1.2.2.1.8';
const X = '1.3.6.1.4.1.8072.9999.7';

/** A capturing logger: every line as an object. */
function memoryLogger(): { log: Logger; lines: Rec[] } {
  const lines: Rec[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as Rec) }) as unknown as Logger;
  return { log, lines };
}

const runs: { stop: AbortController; done: Promise<unknown> }[] = [];
afterEach(async () => {
  for (const r of runs.splice(0)) {
    r.stop.abort();
    await r.done.catch(() => {});
  }
});

/** A stream pipeline from an snmp_trap source into one NDJSON directory. */
function streamRun(source: Cfg, extra: Cfg = {}, log: Logger = silentLogger) {
  const out = tempDir('svc-trap-out-');
  const states: ConnectionState[] = [];
  const telemetry: RunTelemetry = { connection: (component, _t, s) => void (component === 'source' && states.push(s)) };
  const stop = new AbortController();
  const cfg = loadPipeline({
    name: 'trap-test',
    schedule: { type: 'stream' },
    source: { type: 'snmp_trap', host: '127.0.0.1', ...source },
    serializer_in: { type: 'json' },
    serializer_out: { type: 'ndjson' },
    sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
    ...extra,
  });
  const done = runPipeline(cfg, { signal: stop.signal, telemetry, log, processed: new MemoryProcessedFiles() });
  runs.push({ stop, done });
  const records = (): Rec[] => {
    try {
      return outputRecords(out);
    } catch {
      return [];
    }
  };
  return {
    states,
    done,
    records,
    connected: () => until(() => states.includes('connected'), 15_000, 'connected'),
    waitFor: (n: number, what = `${n} records`) => until(() => records().length >= n && records(), 20_000, what),
    async end() {
      stop.abort();
      return done;
    },
  };
}

describe('snmp_trap source: records', () => {
  it('a v2c linkDown from snmptrap: trap name, typed varbinds with names and labels, flattened object names, exact Counter64', async () => {
    const port = await freeUdpPort();
    const r = streamRun({ port, community: 'c1', mib_modules: ['IF-MIB'] });
    await r.connected();
    await snmptrap(port, { version: '2c', community: 'c1' }, LINK_DOWN, [
      [`${IF_INDEX}.3`, 'i', '3'],
      [`${IF_ADMIN}.3`, 'i', '1'],
      [`${IF_OPER}.3`, 'i', '2'],
      [`${X}.1.0`, 's', 'hello world'],
      [`${X}.2.0`, 'C', '18446744073709551615'],
      [`${X}.3.0`, 'x', 'DEADBEEF'],
      [`${X}.4.0`, 'a', '10.1.2.3'],
      [`${X}.5.0`, 'o', '1.3.6.1.2.1.1'],
      [`${X}.6.0`, 'u', '4294967295'],
      [`${X}.7.0`, 'c', '123'],
      [`${X}.8.0`, 't', '4200'],
    ]);
    const [rec] = await r.waitFor(1);
    expect(rec).toMatchObject({
      trap_oid: LINK_DOWN,
      trap_name: 'IF-MIB::linkDown',
      kind: 'trap',
      version: '2c',
      agent_address: '127.0.0.1',
      community: 'c1',
      ifIndex: 3,
      ifAdminStatus: 1,
      ifOperStatus: 2,
      [`${X}.1.0`]: 'hello world',
      [`${X}.2.0`]: '18446744073709551615',
      [`${X}.3.0`]: 'deadbeef',
      [`${X}.4.0`]: '10.1.2.3',
      [`${X}.5.0`]: '1.3.6.1.2.1.1',
      [`${X}.6.0`]: 4294967295,
      [`${X}.7.0`]: 123,
      [`${X}.8.0`]: 4200,
    });
    expect(rec!.source).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(typeof rec!.uptime).toBe('number');
    expect(Date.parse(rec!.received_at as string)).toBeGreaterThan(Date.now() - 60_000);
    const vbs = rec!.varbinds as Rec[];
    expect(vbs).toHaveLength(11);
    expect(vbs[0]).toEqual({ oid: `${IF_INDEX}.3`, name: 'IF-MIB::ifIndex.3', type: 'Integer32', value: 3 });
    expect(vbs[2]).toMatchObject({ name: 'IF-MIB::ifOperStatus.3', type: 'Integer32', value: 2, label: 'down' });
    expect(vbs[4]).toMatchObject({ type: 'Counter64', value: '18446744073709551615' });
    expect(vbs[5]).toMatchObject({ type: 'OctetString', value: 'deadbeef', encoding: 'hex' });
    expect(vbs.slice(6).map((v) => v.type)).toEqual(['IpAddress', 'ObjectIdentifier', 'Gauge32', 'Counter32', 'TimeTicks']);
    expect(vbs[7]).toMatchObject({ label: 'SNMPv2-MIB::system' });
  });

  it('resolve_oids false: numeric keys, no names; the same object twice keeps the later instance apart', async () => {
    const port = await freeUdpPort();
    const r = streamRun({ port, resolve_oids: false });
    await r.connected();
    await snmptrap(port, { version: '2c' }, LINK_DOWN, [
      [`${IF_INDEX}.3`, 'i', '3'],
      [`${IF_INDEX}.4`, 'i', '4'],
    ]);
    const [rec] = await r.waitFor(1);
    expect(rec).not.toHaveProperty('trap_name');
    expect(rec![`${IF_INDEX}.3`]).toBe(3);
    expect(rec![`${IF_INDEX}.4`]).toBe(4);
    expect((rec!.varbinds as Rec[])[0]).toEqual({ oid: `${IF_INDEX}.3`, type: 'Integer32', value: 3 });
    // With names: the first instance is `ifIndex`, the second `ifIndex.4`.
    const port2 = await freeUdpPort();
    const r2 = streamRun({ port: port2 });
    await r2.connected();
    await snmptrap(port2, { version: '2c' }, LINK_DOWN, [
      [`${IF_INDEX}.3`, 'i', '3'],
      [`${IF_INDEX}.4`, 'i', '4'],
    ]);
    const [named] = await r2.waitFor(1);
    expect(named).toMatchObject({ ifIndex: 3, 'ifIndex.4': 4 });
  });

  it('a v1 trap: enterprise, generic/specific, the agent-addr field, the RFC 3584 trap OID; generic traps map to snmpTraps', async () => {
    const port = await freeUdpPort();
    const r = streamRun({ port, version: '1' });
    await r.connected();
    await snmptrapV1(port, 'public', '1.3.6.1.4.1.8072.4', '10.9.8.7', 6, 17, [[`${X}.1.0`, 's', 'v1']]);
    await snmptrapV1(port, 'public', '1.3.6.1.4.1.8072.4', '10.9.8.7', 2, 0, [[`${IF_INDEX}.5`, 'i', '5']]);
    const recs = await r.waitFor(2);
    const specific = recs.find((x) => x.generic_trap === 6)!;
    expect(specific).toMatchObject({
      version: '1',
      trap_oid: '1.3.6.1.4.1.8072.4.0.17',
      enterprise: '1.3.6.1.4.1.8072.4',
      generic_trap: 6,
      specific_trap: 17,
      agent_address: '10.9.8.7',
      community: 'public',
      [`${X}.1.0`]: 'v1',
    });
    expect(recs.find((x) => x.generic_trap === 2)).toMatchObject({ trap_oid: LINK_DOWN, trap_name: 'IF-MIB::linkDown', ifIndex: 5 });
  });

  it('community and version filters: a wrong community and a version the source does not take are dropped and logged', async () => {
    const port = await freeUdpPort();
    const { log, lines } = memoryLogger();
    const r = streamRun({ port, community: 'right-secret', version: '1' }, {}, log);
    await r.connected();
    await snmptrap(port, { version: '2c', community: 'wrong' }, LINK_DOWN);
    await snmptrap(port, { version: '2c', community: 'right-secret' }, LINK_DOWN); // v2c: not taken by a version 1 source
    await snmptrapV1(port, 'right-secret', '1.3.6.1.4.1.8072.4', '10.0.0.1', 6, 1);
    const recs = await r.waitFor(1);
    await quiet(300);
    expect(r.records()).toHaveLength(1);
    expect(recs[0]).toMatchObject({ version: '1' });
    const warn = lines.find((l) => typeof l.msg === 'string' && (l.msg as string).includes('notification dropped'));
    expect(warn, JSON.stringify(lines)).toBeDefined();
    expect(warn!.reason).toBe('unknown community (not the configured one)');
    expect(JSON.stringify(lines)).not.toContain('wrong');
    expect(JSON.stringify(lines)).not.toContain('right-secret'); // our own community is never logged
    // Version 2c takes v1 and v2c.
    const port2 = await freeUdpPort();
    const r2 = streamRun({ port: port2 });
    await r2.connected();
    await snmptrapV1(port2, 'public', '1.3.6.1.4.1.8072.4', '10.0.0.1', 6, 1);
    await snmptrap(port2, { version: '2c' }, LINK_DOWN);
    expect((await r2.waitFor(2)).map((x) => x.version).sort()).toEqual(['1', '2c']);
  });

  it('v2c informs are acknowledged (snmpinform exits 0) and become records of kind inform', async () => {
    const port = await freeUdpPort();
    const r = streamRun({ port });
    await r.connected();
    await snmpinform(port, { version: '2c' }, LINK_DOWN, [[`${IF_INDEX}.9`, 'i', '9']]);
    const [rec] = await r.waitFor(1);
    expect(rec).toMatchObject({ kind: 'inform', version: '2c', ifIndex: 9 });
    // A wrong community gets no acknowledgement.
    await expect(snmpinform(port, { version: '2c', community: 'nope' }, LINK_DOWN, [], 1, 0)).rejects.toThrow(/Timeout|No Response/i);
  });
});

describe('snmp_trap source: SNMPv3', () => {
  const AUTHS: [cli: string, ours: string][] = [
    ['MD5', 'MD5'],
    ['SHA', 'SHA'],
    ['SHA-224', 'SHA224'],
    ['SHA-256', 'SHA256'],
    ['SHA-384', 'SHA384'],
    ['SHA-512', 'SHA512'],
  ];
  const PRIVS: [cli: string, ours: string][] = [
    ['DES', 'DES'],
    ['AES', 'AES128'],
    ['AES-192', 'AES192'],
    ['AES-256', 'AES256'],
  ];

  it('authPriv traps from snmptrap with every auth protocol and every privacy protocol net-snmp has (users bound to engine IDs)', async () => {
    const port = await freeUdpPort();
    const users: Cfg[] = [];
    const sends: CliSecurity[] = [];
    let n = 0;
    for (const [ca, a] of AUTHS)
      for (const [cp, p] of PRIVS) {
        const engineId = `0x8000000001020304${(++n).toString(16).padStart(4, '0')}`;
        users.push({ security_name: `u${n}`, auth_protocol: a, auth_key: `auth-key-${n}`, priv_protocol: p, priv_key: `priv-key-${n}`, engine_id: engineId });
        sends.push({ version: '3', user: `u${n}`, authProtocol: ca, authKey: `auth-key-${n}`, privProtocol: cp, privKey: `priv-key-${n}`, engineId });
      }
    const r = streamRun({ port, version: '3', users });
    await r.connected();
    for (const [i, s] of sends.entries()) await snmptrap(port, s, LINK_DOWN, [[`${IF_INDEX}.${i + 1}`, 'i', String(i + 1)]]);
    const recs = await r.waitFor(sends.length, `${sends.length} v3 traps`);
    const byUser = new Map(recs.map((x) => [x.security_name, x]));
    for (const [i, s] of sends.entries()) {
      expect(byUser.get(s.user), s.user).toMatchObject({ version: '3', kind: 'trap', engine_id: s.engineId!.slice(2), ifIndex: i + 1 });
      expect(byUser.get(s.user)).not.toHaveProperty('community');
    }
  }, 60_000);

  it('security_name: authNoPriv and noAuthNoPriv users; a wrong key or the same user from another engine is dropped', async () => {
    const port = await freeUdpPort();
    const { log, lines } = memoryLogger();
    const r = streamRun(
      {
        port,
        version: '3',
        security_name: 'ops',
        auth_protocol: 'SHA256',
        auth_key: 'ops-auth-key',
        users: [{ security_name: 'guest' }, { security_name: 'pinned', auth_protocol: 'MD5', auth_key: 'pinned-auth', engine_id: '0x80000000010203040506' }],
      },
      {},
      log,
    );
    await r.connected();
    await snmptrap(port, { version: '3', user: 'ops', authProtocol: 'SHA-256', authKey: 'wrong-auth-key', engineId: '0x800000000102030405aa' }, LINK_DOWN, [
      [`${IF_INDEX}.1`, 'i', '1'],
    ]);
    await snmptrap(port, { version: '3', user: 'pinned', authProtocol: 'MD5', authKey: 'pinned-auth', engineId: '0x800000000102030405bb' }, LINK_DOWN, [
      [`${IF_INDEX}.2`, 'i', '2'],
    ]);
    await snmptrap(port, { version: '3', user: 'ops', authProtocol: 'SHA-256', authKey: 'ops-auth-key', engineId: '0x800000000102030405cc' }, LINK_DOWN, [
      [`${IF_INDEX}.3`, 'i', '3'],
    ]);
    await snmptrap(port, { version: '3', user: 'guest' }, LINK_DOWN, [[`${IF_INDEX}.4`, 'i', '4']]);
    await snmptrap(port, { version: '3', user: 'pinned', authProtocol: 'MD5', authKey: 'pinned-auth', engineId: '0x80000000010203040506' }, LINK_DOWN, [
      [`${IF_INDEX}.5`, 'i', '5'],
    ]);
    await r.waitFor(3);
    await quiet(300);
    expect(
      r
        .records()
        .map((x) => x.ifIndex)
        .sort(),
    ).toEqual([3, 4, 5]);
    const warn = lines.find((l) => typeof l.reason === 'string' && /wrongDigest/.test(l.reason as string));
    expect(warn, JSON.stringify(lines.map((l) => l.reason))).toBeDefined();
    expect(JSON.stringify(lines)).not.toMatch(/ops-auth-key|wrong-auth-key|pinned-auth/);
  });

  it('v3 informs: snmpinform discovers our engine_id, is acknowledged at authPriv, and a wrong privacy key gets no acknowledgement', async () => {
    const port = await freeUdpPort();
    const r = streamRun({
      port,
      version: '3',
      engine_id: '0x80001f88800102030405060708',
      security_name: 'inf',
      auth_protocol: 'SHA512',
      auth_key: 'inform-auth',
      priv_protocol: 'AES256',
      priv_key: 'inform-priv',
    });
    await r.connected();
    await snmpinform(
      port,
      { version: '3', user: 'inf', authProtocol: 'SHA-512', authKey: 'inform-auth', privProtocol: 'AES-256', privKey: 'inform-priv' },
      LINK_DOWN,
      [[`${IF_INDEX}.7`, 'i', '7']],
    );
    const [rec] = await r.waitFor(1);
    expect(rec).toMatchObject({ kind: 'inform', version: '3', security_name: 'inf', engine_id: '80001f88800102030405060708', ifIndex: 7 });
    await expect(
      snmpinform(
        port,
        { version: '3', user: 'inf', authProtocol: 'SHA-512', authKey: 'inform-auth', privProtocol: 'AES-256', privKey: 'not-the-priv' },
        LINK_DOWN,
        [],
        1,
        0,
      ),
    ).rejects.toThrow();
    await quiet(300);
    expect(r.records()).toHaveLength(1);
  });

  it('3DES and AES192 (net-snmp has no 3DES): traps from the snmp_trap sink reach the source at authPriv', async () => {
    const port = await freeUdpPort();
    const engine = '0x80001f8880aabbccddeeff0011';
    const r = streamRun({
      port,
      version: '3',
      users: [
        { security_name: 'tdes', auth_protocol: 'SHA', auth_key: 'tdes-auth-key', priv_protocol: '3DES', priv_key: 'tdes-priv-key', engine_id: engine },
        { security_name: 'a192', auth_protocol: 'SHA224', auth_key: 'a192-auth-key', priv_protocol: 'AES192', priv_key: 'a192-priv-key', engine_id: engine },
      ],
    });
    await r.connected();
    const dir = tempDir('svc-trap-in-');
    mkdirSync(join(dir, 'in'));
    writeFileSync(join(dir, 'in', 'r.ndjson'), '{"n": 1}\n');
    for (const [user, priv] of [
      ['tdes', '3DES'],
      ['a192', 'AES192'],
    ] as const) {
      const auth = user === 'tdes' ? 'SHA' : 'SHA224';
      const cfg = loadPipeline({
        name: 'to-trap',
        schedule: { type: 'manual' },
        source: { type: 'local', path: join(dir, 'in') },
        serializer_in: { type: 'ndjson' },
        serializer_out: { type: 'json' },
        sinks: [
          {
            type: 'snmp_trap',
            host: '127.0.0.1',
            port,
            version: '3',
            trap_oid: 'IF-MIB::linkUp',
            engine_id: engine,
            security_name: user,
            auth_protocol: auth,
            auth_key: `${user}-auth-key`,
            priv_protocol: priv,
            priv_key: `${user}-priv-key`,
            varbinds: [{ oid: `${X}.1.0`, value_field: 'n', type: 'Integer32' }],
          },
        ],
      });
      const rec = await runPipeline(cfg, { log: silentLogger, processed: new MemoryProcessedFiles() });
      expect(rec.status, JSON.stringify(rec.errors)).toBe('success');
    }
    const recs = await r.waitFor(2);
    expect(recs.map((x) => x.security_name).sort()).toEqual(['a192', 'tdes']);
    for (const x of recs) expect(x).toMatchObject({ trap_name: 'IF-MIB::linkUp', [`${X}.1.0`]: 1, engine_id: engine.slice(2) });
  });
});

describe('snmp_trap source: MIBs, checks and backpressure', () => {
  it('mib_dirs: a notification of a MIB of our own is named; a module of mib_modules that is not loaded stops the run with its name', async () => {
    const dir = tempDir('svc-trap-mibs-');
    writeFileSync(
      join(dir, 'SVC-TEST-TRAP-MIB.txt'),
      `SVC-TEST-TRAP-MIB DEFINITIONS ::= BEGIN
IMPORTS MODULE-IDENTITY, OBJECT-TYPE, NOTIFICATION-TYPE, Integer32, enterprises FROM SNMPv2-SMI;
svcTestTrapMib MODULE-IDENTITY LAST-UPDATED "202601010000Z" ORGANIZATION "svc" CONTACT-INFO "svc" DESCRIPTION "test" ::= { enterprises 8072 9999 6 }
svcTestObjects OBJECT IDENTIFIER ::= { svcTestTrapMib 1 }
svcTestLevel OBJECT-TYPE SYNTAX INTEGER { low(1), high(2) } MAX-ACCESS accessible-for-notify STATUS current DESCRIPTION "level" ::= { svcTestObjects 1 }
svcTestAlarm NOTIFICATION-TYPE OBJECTS { svcTestLevel } STATUS current DESCRIPTION "alarm" ::= { svcTestTrapMib 0 1 }
END
`,
    );
    const port = await freeUdpPort();
    const r = streamRun({ port, mib_dirs: [dir], mib_modules: ['SVC-TEST-TRAP-MIB'] });
    await r.connected();
    await snmptrap(port, { version: '2c' }, '1.3.6.1.4.1.8072.9999.6.0.1', [['1.3.6.1.4.1.8072.9999.6.1.1.0', 'i', '2']]);
    const [rec] = await r.waitFor(1);
    expect(rec).toMatchObject({ trap_name: 'SVC-TEST-TRAP-MIB::svcTestAlarm', svcTestLevel: 2 });
    expect((rec!.varbinds as Rec[])[0]).toMatchObject({ name: 'SVC-TEST-TRAP-MIB::svcTestLevel.0', label: 'high' });

    const bad = streamRun({ port: await freeUdpPort(), mib_modules: ['NO-SUCH-MIB'] });
    const run = (await bad.done) as { status: string; error: string };
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/NO-SUCH-MIB not loaded: put its source in a directory of mib_dirs/);
  }, 60_000);

  it('test(): binds the port and releases it; a port in use names host:port and what to do', async () => {
    const port = await freeUdpPort();
    expect(
      await testConnector('source', {
        type: 'snmp_trap',
        host: '127.0.0.1',
        port,
        community: 'public',
        version: '2c',
        resolve_oids: true,
        mib_dirs: [],
        mib_modules: [],
      }),
    ).toMatchObject({ ok: true });
    // Released: a second check (and a receiver) can bind it again.
    const r = streamRun({ port });
    await r.connected();
    const held = await holdUdpPort();
    try {
      const bad = await testConnector('source', { type: 'snmp_trap', host: '127.0.0.1', port: held.port, community: 'secret-community', version: '2c' });
      expect(bad.ok).toBe(false);
      expect(bad.error).toBe(
        `snmp_trap: cannot listen on udp 127.0.0.1:${held.port}: UDP port ${held.port} on 127.0.0.1 is already in use; stop the other receiver there (snmptrapd, another pipeline) or choose another port`,
      );
      const notLocal = await testConnector('source', { type: 'snmp_trap', host: '192.0.2.1', port: 1162 });
      expect(notLocal.error).toMatch(
        /^snmp_trap: cannot listen on udp 192\.0\.2\.1:1162: address 192\.0\.2\.1 is not local to this machine; use an address of this machine/,
      );
    } finally {
      held.close();
    }
  });

  it('test(): a privileged port says how to get the right to it (run as nobody when the tests run as root)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-trap-priv-'));
    chmodSync(dir, 0o755);
    const script = join(dir, 'check.mts');
    writeFileSync(
      script,
      `import { testConnector } from ${JSON.stringify(join(process.cwd(), 'src/engine/connector-test.ts'))};\nconsole.log(JSON.stringify(await testConnector('source', { type: 'snmp_trap', host: '127.0.0.1', port: 162 })));\n`,
    );
    chmodSync(script, 0o644);
    const tsx = join(process.cwd(), 'node_modules/.bin/tsx');
    const [cmd, args] = process.getuid?.() === 0 ? ['runuser', ['-u', 'nobody', '--', 'env', `HOME=${dir}`, tsx, script]] : [tsx, [script]];
    const out = await new Promise<string>((resolve, reject) =>
      execFile(cmd, args, { timeout: 60_000 }, (e, stdout, stderr) => (e ? reject(new Error(stderr || e.message)) : resolve(stdout))),
    );
    const r = JSON.parse(out.trim().split('\n').pop()!) as { ok: boolean; error: string };
    rmSync(dir, { recursive: true, force: true });
    expect(r.ok).toBe(false);
    expect(r.error).toBe(
      'snmp_trap: cannot listen on udp 127.0.0.1:162: UDP port 162 is below 1024 and needs privilege (root or CAP_NET_BIND_SERVICE); use a port of 1024 or above; run with CAP_NET_BIND_SERVICE, or listen on 1162 and forward 162 to it',
    );
  }, 90_000);

  it('a running receiver holds its port: a second pipeline on it fails after its attempts with the clear message', async () => {
    const held = await holdUdpPort();
    try {
      const r = streamRun({ port: held.port });
      const run = (await r.done) as { status: string; error: string };
      expect(run.status).toBe('failed');
      expect(run.error).toMatch(new RegExp(`gave up after 3 reconnect attempts: cannot listen on udp 127\\.0\\.0\\.1:${held.port}: .*already in use`));
    } finally {
      held.close();
    }
  }, 30_000);

  it('bounded queue: while the pipeline is behind, arriving traps are dropped, counted and logged once per interval', async () => {
    const port = await freeUdpPort();
    const { log, lines } = memoryLogger();
    // 20 records a second behind a queue of 50: most of 3,000 traps sent at once cannot be kept.
    const r = streamRun({ port, max_queue_size: 50, resolve_oids: false }, { rate_limit_rps: 20 }, log);
    await r.connected();
    await publishBodies(
      port,
      'public',
      Array.from({ length: 3000 }, (_, i) => Buffer.from(JSON.stringify({ seq: i }))),
    );
    const warn = await until(() => lines.find((l) => typeof l.msg === 'string' && (l.msg as string).includes('queue full')), 10_000, 'a queue-full warning');
    expect(warn).toMatchObject({ level: 40, connector: 'snmp_trap', listener: `udp://127.0.0.1:${port}` });
    expect(warn.dropped_total).toBeGreaterThan(0);
    // One warning per interval, however many were dropped.
    expect(lines.filter((l) => typeof l.msg === 'string' && (l.msg as string).includes('notification dropped')).length).toBe(1);
    await quiet(500); // what was queued is written; the rest was dropped
    const kept = r.records().length;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(3000);
  }, 30_000);
});
