// The console's SNMP agent simulator through its API (spec doc 1 sections 2-4), served to Debian's
// net-snmp tools: v2c and v3 authPriv, overrides (live, persisted, validated), the state machine
// (409 double start, error on a busy port with the console still answering, restart, resume after
// a console restart), the activity log (ring capped by simulator_log_limit, coalesced pushes),
// WebSocket status and simulator_log messages, stats.
import { createSocket, type Socket } from 'node:dgram';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { consoleStateDir } from '../../src/console/server.js';
import { tempDir } from '../helpers/fs.js';
import { freeUdpPort, run } from '../snmp/peers.js';
import { detailOnly, loggedIn, started } from './helpers.js';
import { elapse } from '../helpers/wait.js';

const SYS_NAME = '1.3.6.1.2.1.1.5.0';
const IF_HC_IN_OCTETS_1 = '1.3.6.1.2.1.31.1.1.1.6.1';
const IF_IN_OCTETS_1 = '1.3.6.1.2.1.2.2.1.10.1';

const unprivilegedPortStart = () => {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8'));
  } catch {
    return 1024;
  }
};

type Api = Awaited<ReturnType<typeof loggedIn>>;

const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) await new Promise<void>((r) => s.close(() => r()));
});

/** A UDP socket holding a port, so a start on it fails. */
async function occupy(port = 0): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.bind(port, '127.0.0.1', () => resolve());
  });
  sockets.push(s);
  return s.address().port;
}

async function startSim(a: Api, body: Record<string, unknown> = {}) {
  const r = await a.api('POST', '/api/simulator/start', { host: '127.0.0.1', port: 0, ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.state).toBe('running');
  expect(r.body.port).toBeGreaterThan(0);
  return { status: r.body, target: `127.0.0.1:${r.body.port as number}` };
}

const v2 = (target: string, ...args: string[]) => run('snmpget', ['-v2c', '-c', 'public', '-On', '-t', '2', '-r', '1', target, ...args]);

/** Stops a console started by the helpers (as console.test.ts restarts one). */
async function stopConsole(a: Api) {
  await a.c.stop();
  started.splice(started.indexOf(a.c), 1);
}

/** Collects WebSocket messages; `next(type, pred)` waits for a matching one (seen or future). */
function listen(a: Api) {
  const ws = new WebSocket(`${a.c.url.replace('http', 'ws')}/api/ws?token=${a.token}`);
  const messages: any[] = [];
  const waiters: { match: (m: any) => boolean; resolve: (m: any) => void }[] = [];
  ws.on('message', (raw: Buffer) => {
    const m = JSON.parse(raw.toString());
    messages.push(m);
    for (const w of [...waiters]) if (w.match(m)) waiters.splice(waiters.indexOf(w), 1) && w.resolve(m);
  });
  const next = (type: string, pred: (data: any) => boolean = () => true) =>
    new Promise<any>((resolve, reject) => {
      const match = (m: any) => m.type === type && pred(m.data);
      const seen = messages.find(match);
      if (seen) return resolve(seen);
      const timer = setTimeout(() => reject(new Error(`no ${type} message; got ${messages.map((m) => m.type).join(',')}`)), 10_000);
      waiters.push({ match, resolve: (m) => (clearTimeout(timer), resolve(m)) });
    });
  return { ws, messages, next, opened: new Promise((r) => ws.once('open', r)) };
}

describe('console SNMP simulator', () => {
  it('state machine: stopped -> running (real port shown) -> stopped; 409 on a double start; restart with the last config', async () => {
    const a = await loggedIn();
    const initial = (await a.api('GET', '/api/simulator/status')).body;
    expect(initial).toMatchObject({
      state: 'stopped',
      error: null,
      port: 1161,
      community: 'public',
      versions: ['1', '2c'],
      v3_users: [],
      started_at: null,
      uptime_s: null,
      overrides: 0,
      log_entries: 0,
      resume_on_console_start: false,
    });
    const { status, target } = await startSim(a);
    expect(status).toMatchObject({ host: '127.0.0.1', community: 'public', writable: false, error: null, resume_on_console_start: true });
    expect(status.engine_id).toMatch(/^80001f8880[0-9a-f]{16}$/);
    expect(status.oids).toBeGreaterThan(300);
    expect(await v2(target, SYS_NAME)).toContain(`.${SYS_NAME} = STRING: "edge-router-01"`);

    const again = await a.api('POST', '/api/simulator/start', { host: '127.0.0.1', port: 0 });
    expect(detailOnly(again, 409)).toBe('the simulator is already running; stop it first or use restart');
    expect((await a.api('GET', '/api/simulator/status')).body.port).toBe(status.port);

    const stopped = await a.api('POST', '/api/simulator/stop');
    expect(stopped.body).toMatchObject({ state: 'stopped', started_at: null, resume_on_console_start: false });
    await expect(run('snmpget', ['-v2c', '-c', 'public', '-t', '0.3', '-r', '0', target, SYS_NAME])).rejects.toThrow(/Timeout/);
    expect((await a.api('POST', '/api/simulator/stop')).body.state).toBe('stopped');

    // Restart when stopped: the last config (community "lab" here; port 0 again picks a free port).
    const second = await startSim(a, { community: 'lab' });
    await a.api('POST', '/api/simulator/stop');
    const re = await a.api('POST', '/api/simulator/restart');
    expect(re.body).toMatchObject({ state: 'running', community: 'lab', engine_id: status.engine_id });
    const t2 = `127.0.0.1:${re.body.port}`;
    expect(await run('snmpget', ['-v2c', '-c', 'lab', '-On', t2, SYS_NAME])).toContain('edge-router-01');
    // Restart when running: a new agent (new start time), same config.
    const re2 = await a.api('POST', '/api/simulator/restart');
    expect(re2.body.state).toBe('running');
    expect(Date.parse(re2.body.started_at)).toBeGreaterThanOrEqual(Date.parse(re.body.started_at));
    expect(second.status.engine_id).toBe(status.engine_id);
  });

  it('restart before any start uses the defaults (port 1161, community public, SVC_HOST)', async () => {
    const a = await loggedIn();
    // Port 1161 may be taken on a shared machine: then restart fails with 409 and state error, which is also the contract.
    const r = await a.api('POST', '/api/simulator/restart');
    const st = (await a.api('GET', '/api/simulator/status')).body;
    expect(st).toMatchObject({ host: '127.0.0.1', port: 1161, community: 'public' });
    if (r.status === 200) expect(st.state).toBe('running');
    else expect(detailOnly(r, 409)).toBe('UDP port 1161 on 127.0.0.1 is already in use');
  });

  it('v2c tools: snmpget, snmpwalk, snmpbulkwalk; interface counters move between two gets; stats count requests', async () => {
    const a = await loggedIn();
    const { status, target } = await startSim(a);
    const bulk = (await run('snmpbulkwalk', ['-v2c', '-c', 'public', '-On', '-Cr25', target, '.1']))
      .split('\n')
      .filter((l) => l.startsWith('.') && !l.includes('No more variables'));
    expect(bulk.length).toBe(status.oids);
    const walk = (await run('snmpwalk', ['-v2c', '-c', 'public', '-On', target, '1.3.6.1.2.1.1'])).trim().split('\n');
    expect(walk.length).toBe(8);
    const read = async () => (await v2(target, '-Oqv', IF_HC_IN_OCTETS_1, IF_IN_OCTETS_1)).trim().split('\n');
    const [hc1] = await read();
    await elapse(300); // the counters move on
    const [hc2, c32] = await read();
    expect(BigInt(hc2!)).toBeGreaterThan(BigInt(hc1!));
    expect(Number(c32)).toBeLessThan(2 ** 32);
    const s = (await a.api('GET', '/api/stats/')).body.simulator;
    expect(s.getbulk).toBeGreaterThan(10);
    expect(s.getnext).toBe(9); // snmpwalk of system: 8 objects and the step past the subtree
    expect(s.get).toBe(2);
    expect(s.requests).toBe(s.getbulk + s.getnext + s.get);
    expect(s.errors).toBe(0);
    await expect(run('snmpget', ['-v2c', '-c', 'wrong', '-t', '0.3', '-r', '0', target, SYS_NAME])).rejects.toThrow(/Timeout/);
    expect((await a.api('GET', '/api/stats/')).body.simulator.errors).toBe(1);
  });

  it('v3 authPriv users (SHA256/AES, SHA512/AES256, MD5/DES); keys never shown; wrong keys refused and counted', async () => {
    const a = await loggedIn();
    const users = [
      { username: 'ops256', auth_protocol: 'SHA256', auth_key: 'auth-secret-1', priv_protocol: 'AES', priv_key: 'priv-secret-1' },
      { username: 'ops512', auth_protocol: 'SHA512', auth_key: 'auth-secret-2', priv_protocol: 'AES256', priv_key: 'priv-secret-2' },
      { username: 'legacy', auth_protocol: 'MD5', auth_key: 'auth-secret-3', priv_protocol: 'DES', priv_key: 'priv-secret-3' },
    ];
    const { status, target } = await startSim(a, { v3_users: users, engine_id: '0x8000000001020304' });
    expect(status.versions).toEqual(['1', '2c', '3']);
    expect(status.engine_id).toBe('8000000001020304');
    expect(status.v3_users).toEqual([
      { username: 'ops256', auth_protocol: 'SHA256', priv_protocol: 'AES' },
      { username: 'ops512', auth_protocol: 'SHA512', priv_protocol: 'AES256' },
      { username: 'legacy', auth_protocol: 'MD5', priv_protocol: 'DES' },
    ]);
    const shown = JSON.stringify((await a.api('GET', '/api/simulator/status')).body);
    for (const u of users) {
      expect(shown).not.toContain(u.auth_key);
      expect(shown).not.toContain(u.priv_key);
    }
    const v3 = (u: string, auth: string, ak: string, priv: string, pk: string, cmd = 'snmpget', ...rest: string[]) =>
      run(cmd, ['-v3', '-l', 'authPriv', '-u', u, '-a', auth, '-A', ak, '-x', priv, '-X', pk, '-On', '-t', '2', '-r', '0', target, ...rest]);
    expect(await v3('ops256', 'SHA-256', 'auth-secret-1', 'AES', 'priv-secret-1', 'snmpget', SYS_NAME)).toContain('STRING: "edge-router-01"');
    const walked = await v3('ops512', 'SHA-512', 'auth-secret-2', 'AES-256', 'priv-secret-2', 'snmpbulkwalk', '1.3.6.1.2.1.2.2.1.2');
    expect(walked.trim().split('\n')).toHaveLength(8);
    expect(await v3('legacy', 'MD5', 'auth-secret-3', 'DES', 'priv-secret-3', 'snmpwalk', '1.3.6.1.2.1.1')).toContain('edge-router-01');
    await expect(v3('ops256', 'SHA-256', 'wrong-secret', 'AES', 'priv-secret-1', 'snmpget', SYS_NAME)).rejects.toThrow(/Authentication failure|digest/i);
    expect((await a.api('GET', '/api/stats/')).body.simulator.errors).toBeGreaterThanOrEqual(1);
    const logs = (await a.api('GET', '/api/simulator/logs')).body.entries as any[];
    expect(logs.some((e) => e.principal === 'ops256' && e.error === 'wrongDigest')).toBe(true);
    expect(logs.some((e) => e.principal === 'ops512' && e.version === '3' && e.request === 'getbulk')).toBe(true);
  });

  it('start input is validated (422 naming the field) and leaves the state alone', async () => {
    const a = await loggedIn();
    const bad = async (body: Record<string, unknown>) => detailOnly(await a.api('POST', '/api/simulator/start', { host: '127.0.0.1', port: 0, ...body }), 422);
    expect(await bad({ v3_users: [{ username: 'u', auth_protocol: 'SHA999', auth_key: 'longenough' }] })).toBe(
      'v3_users[0]: unknown auth protocol "SHA999"; use one of MD5, SHA, SHA224, SHA256, SHA384, SHA512',
    );
    expect(
      await bad({ v3_users: [{ username: 'u', auth_protocol: 'SHA', auth_key: 'longenough', priv_protocol: 'BLOWFISH', priv_key: 'longenough' }] }),
    ).toMatch(/^v3_users\[0\]: unknown privacy protocol "BLOWFISH"/);
    expect(
      await bad({
        v3_users: [
          { username: 'ok', auth_key: 'longenough' },
          { username: 'u', auth_protocol: 'SHA256', auth_key: 'short' },
        ],
      }),
    ).toBe('v3_users[1]: SNMPv3 user "u": auth key must be at least 8 characters');
    expect(await bad({ v3_users: [{ username: 'u', priv_protocol: 'AES', priv_key: 'longenough' }] })).toBe(
      'v3_users[0]: SNMPv3 user "u": privacy needs authentication (auth_protocol and auth_key)',
    );
    expect(await bad({ v3_users: [{ username: 'u' }, { username: 'u' }] })).toBe('v3_users[1]: user "u" is listed twice');
    expect(await bad({ engine_id: 'zz' })).toContain('engine_id');
    expect(await bad({ host: 'not-an-address' })).toBe('host "not-an-address" must be an IPv4 or IPv6 address (0.0.0.0 or :: for every interface)');
    expect(await bad({ port: 70000 })).toContain('body.port');
    expect(await bad({ community: '' })).toContain('body.community');
    expect(await bad({ extra: 1 })).toContain('additional properties');
    expect(await bad({ community: 'same', write_community: 'same' })).toContain('write_community must differ');
    expect((await a.api('GET', '/api/simulator/status')).body).toMatchObject({ state: 'stopped', error: null });
  });

  it('a busy port: 409 naming it, state error with the reason, the console keeps answering; a later start recovers', async () => {
    const a = await loggedIn();
    const ws = listen(a);
    await ws.opened;
    const port = await occupy();
    const r = await a.api('POST', '/api/simulator/start', { host: '127.0.0.1', port });
    expect(detailOnly(r, 409)).toBe(`UDP port ${port} on 127.0.0.1 is already in use`);
    const st = (await a.api('GET', '/api/simulator/status')).body;
    expect(st).toMatchObject({ state: 'error', error: `UDP port ${port} on 127.0.0.1 is already in use`, port, resume_on_console_start: false });
    expect((await a.call('GET', '/api/health')).body).toEqual({ status: 'ok' });
    const pushed = await ws.next('status', (d) => d.simulator.state === 'error');
    expect(pushed.data.simulator.error).toContain(String(port));
    expect(ws.messages.filter((m) => m.type === 'status').map((m) => m.data.simulator.state)).toEqual(['starting', 'error']);
    // Restart retries the last config: still busy.
    detailOnly(await a.api('POST', '/api/simulator/restart'), 409);
    const ok = await startSim(a);
    expect(ok.status.error).toBeNull();
    ws.ws.close();
  });

  // Root (and a lowered net.ipv4.ip_unprivileged_port_start) may bind port 161: nothing to refuse then.
  it.skipIf(process.getuid?.() === 0 || unprivilegedPortStart() <= 161)(
    'a port below 1024 without privilege is 403 (skipped as root, which may bind it)',
    async () => {
      const a = await loggedIn();
      const r = await a.api('POST', '/api/simulator/start', { host: '127.0.0.1', port: 161 });
      expect(detailOnly(r, 403)).toContain('UDP port 161 is below 1024 and needs privilege');
      expect((await a.api('GET', '/api/simulator/status')).body.state).toBe('error');
    },
  );

  it('overrides win over the device, apply live, persist with the start config, and a running simulator comes back after a console restart', async () => {
    const a = await loggedIn();
    const overrides = [
      { oid: SYS_NAME, type: 'OctetString', value: 'lab-switch-7' },
      { oid: '.1.3.6.1.4.1.99999.1.0', type: 'Counter64', value: '18446744073709551615' },
      { oid: '1.3.6.1.4.1.99999.2.0', type: 'hex', value: '00:ff:10' },
      { oid: '1.3.6.1.4.1.99999.3.0', type: 'IpAddress', value: '192.0.2.7' },
      { oid: IF_IN_OCTETS_1, type: 'Counter32', value: 42 },
    ];
    const saved = await a.api('POST', '/api/simulator/data', { overrides });
    expect(saved.body).toEqual({
      overrides: [...overrides.slice(0, 1), { ...overrides[1], oid: '1.3.6.1.4.1.99999.1.0' }, ...overrides.slice(2)],
      count: 5,
      applied_live: false,
    });
    const port = await freeUdpPort();
    const { target } = await startSim(a, { port });
    const out = await v2(target, SYS_NAME, '1.3.6.1.4.1.99999.1.0', '1.3.6.1.4.1.99999.2.0', '1.3.6.1.4.1.99999.3.0', IF_IN_OCTETS_1);
    expect(out).toContain(`.${SYS_NAME} = STRING: "lab-switch-7"`);
    expect(out).toContain('.1.3.6.1.4.1.99999.1.0 = Counter64: 18446744073709551615');
    expect(out).toMatch(/\.1\.3\.6\.1\.4\.1\.99999\.2\.0 = Hex-STRING: 00 FF 10/);
    expect(out).toContain('.1.3.6.1.4.1.99999.3.0 = IpAddress: 192.0.2.7');
    expect(out).toContain(`.${IF_IN_OCTETS_1} = Counter32: 42`);
    // The walk sees the new OIDs in order after the device's tree.
    expect(await run('snmpwalk', ['-v2c', '-c', 'public', '-On', target, '1.3.6.1.4.1.99999'])).toMatch(/99999\.1\.0[^]*99999\.2\.0[^]*99999\.3\.0/);

    // Live: a new list replaces the old one at once.
    const live = await a.api('POST', '/api/simulator/data', {
      overrides: [
        { oid: SYS_NAME, type: 's', value: 'renamed-live' },
        { oid: '1.3.6.1.4.1.99999.1.0', type: 'Gauge32', value: 7 },
      ],
    });
    expect(live.body).toMatchObject({ count: 2, applied_live: true });
    const after = await v2(target, SYS_NAME, '1.3.6.1.4.1.99999.1.0', '1.3.6.1.4.1.99999.2.0', IF_IN_OCTETS_1);
    expect(after).toContain('STRING: "renamed-live"');
    expect(after).toContain('.1.3.6.1.4.1.99999.1.0 = Gauge32: 7');
    expect(after).toContain('.1.3.6.1.4.1.99999.2.0 = No Such Object');
    expect(after).not.toContain('Counter32: 42');
    expect((await a.api('GET', '/api/simulator/status')).body.overrides).toBe(2);

    // Console restart on the same state: overrides and config kept, the simulator running again on its port.
    await stopConsole(a);
    const b = await loggedIn({}, a.dir);
    const st = (await b.api('GET', '/api/simulator/status')).body;
    expect(st).toMatchObject({ state: 'running', port, overrides: 2, resume_on_console_start: true });
    expect((await b.api('GET', '/api/simulator/data')).body.overrides).toEqual(live.body.overrides);
    expect(await v2(target, SYS_NAME)).toContain('renamed-live');
    // Stopped by the operator: it stays stopped after the next console restart.
    await b.api('POST', '/api/simulator/stop');
    await stopConsole(b);
    const c = await loggedIn({}, a.dir);
    expect((await c.api('GET', '/api/simulator/status')).body).toMatchObject({ state: 'stopped', port, overrides: 2, resume_on_console_start: false });
  });

  it('a simulator that cannot come back (port taken meanwhile) is in state error; the console starts anyway', async () => {
    const a = await loggedIn();
    const port = await freeUdpPort();
    await startSim(a, { port });
    await stopConsole(a);
    await occupy(port);
    const b = await loggedIn({}, a.dir);
    expect((await b.api('GET', '/api/simulator/status')).body).toMatchObject({
      state: 'error',
      error: `UDP port ${port} on 127.0.0.1 is already in use`,
      resume_on_console_start: true,
    });
    expect(b.logs.some((l) => l.msg === 'simulator could not be resumed')).toBe(true);
  });

  it('state files that do not validate: the console starts, the simulator is in state error, broken overrides are ignored with a warning', async () => {
    const dir = tempDir('svc-console-');
    const stateDir = join(dir, 'console');
    mkdirSync(stateDir, { recursive: true });
    const config = {
      host: '127.0.0.1',
      port: 0,
      community: 'public',
      write_community: null,
      engine_id: null,
      v3_users: [{ username: 'u', auth_protocol: 'ROT13', auth_key: 'longenough' }],
    };
    writeFileSync(join(stateDir, 'simulator.json'), JSON.stringify({ config, resume: true, engine_id: null }));
    writeFileSync(join(stateDir, 'simulator-overrides.json'), '{"overrides": [');
    const a = await loggedIn({}, dir);
    const st = (await a.api('GET', '/api/simulator/status')).body;
    expect(st).toMatchObject({ state: 'error', overrides: 0 });
    expect(st.error).toContain('unknown auth protocol "ROT13"');
    expect(a.logs.some((l) => l.msg === 'simulator overrides unreadable; serving none until saved again')).toBe(true);
    await startSim(a);
  });

  it('bad overrides are 422 naming the entry, and nothing is saved', async () => {
    const a = await loggedIn();
    const good = [{ oid: SYS_NAME, type: 'OctetString', value: 'kept' }];
    await a.api('POST', '/api/simulator/data', { overrides: good });
    const file = join(consoleStateDir(a.c.deps.settings), 'simulator-overrides.json');
    const before = readFileSync(file, 'utf8');
    const bad = async (entry: Record<string, unknown>) => detailOnly(await a.api('POST', '/api/simulator/data', { overrides: [good[0], entry] }), 422);
    expect(await bad({ oid: 'iso.3.6', type: 'Integer32', value: 1 })).toBe(
      'overrides[1] (iso.3.6): OID "iso.3.6" is not a numeric OID (like 1.3.6.1.2.1.1.1.0)',
    );
    expect(await bad({ oid: '1.3.6.1.4.1.1.0', type: 'Float', value: 1 })).toMatch(/^overrides\[1\] \(1\.3\.6\.1\.4\.1\.1\.0\): unknown SNMP type "Float"/);
    expect(await bad({ oid: '1.3.6.1.4.1.1.0', type: 'Integer32', value: 'ten' })).toBe(
      'overrides[1] (1.3.6.1.4.1.1.0): Integer32 value for 1.3.6.1.4.1.1.0 must be an integer, got "ten"',
    );
    expect(await bad({ oid: '1.3.6.1.4.1.1.0', type: 'Counter32', value: -1 })).toContain('out of range 0..4294967295');
    expect(await bad({ oid: '1.3.6.1.4.1.1.0', type: 'IpAddress', value: '300.1.1.1' })).toContain('must be a dotted IPv4 address');
    expect(await bad({ oid: '1.3.6.1.4.1.1.0', type: 'NoSuchObject', value: null })).toContain('is not a value an agent can serve');
    expect(await bad({ oid: `.${SYS_NAME}`, type: 'OctetString', value: 'twice' })).toContain(`OID ${SYS_NAME} is already overridden by overrides[0]`);
    expect(await bad({ oid: '1.3.6.1.4.1.1.0', type: 'Integer32' })).toBe("body.overrides.1 must have required property 'value'");
    expect(readFileSync(file, 'utf8')).toBe(before);
    expect((await a.api('GET', '/api/simulator/data')).body).toEqual({ overrides: good, count: 1 });
  });

  it('a SET through write_community does not bring back overrides replaced since the start', async () => {
    const a = await loggedIn();
    const { status, target } = await startSim(a, { write_community: 'private' });
    expect(status.writable).toBe(true);
    expect(JSON.stringify(status)).not.toContain('private');
    await a.api('POST', '/api/simulator/data', { overrides: [{ oid: SYS_NAME, type: 'OctetString', value: 'after-start' }] });
    await run('snmpset', ['-v2c', '-c', 'private', target, '1.3.6.1.2.1.1.4.0', 's', 'ops@example.net']);
    const out = await v2(target, SYS_NAME, '1.3.6.1.2.1.1.4.0');
    expect(out).toContain('STRING: "after-start"');
    expect(out).toContain('STRING: "ops@example.net"');
    expect((await a.api('GET', '/api/stats/')).body.simulator.set).toBe(1);
    await expect(run('snmpset', ['-v2c', '-c', 'public', target, '1.3.6.1.2.1.1.4.0', 's', 'x'])).rejects.toThrow(/noAccess/);
  });

  it('activity log: newest first, capped at simulator_log_limit, ?limit, cleared; stats', async () => {
    const a = await loggedIn();
    expect((await a.api('POST', '/api/settings/app', { simulator_log_limit: 10 })).status).toBe(200);
    const { target } = await startSim(a);
    await v2(target, SYS_NAME);
    const one = (await a.api('GET', '/api/simulator/logs')).body;
    expect(one.total).toBe(1);
    expect(one.capacity).toBe(10);
    expect(one.entries[0]).toEqual({
      id: 1,
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      source: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
      version: '2c',
      principal: 'public',
      request: 'get',
      oids: [SYS_NAME],
      varbinds: 1,
    });
    await run('snmpwalk', ['-v2c', '-c', 'public', '-On', target, '1.3.6.1.2.1.1']); // 9 getnext
    await run('snmpwalk', ['-v1', '-c', 'public', '-On', target, '1.3.6.1.2.1.1']); // 9 more
    const logs = (await a.api('GET', '/api/simulator/logs')).body;
    expect(logs.total).toBe(10);
    expect(logs.entries.map((e: any) => e.id)).toEqual([19, 18, 17, 16, 15, 14, 13, 12, 11, 10]);
    expect(logs.entries[0]).toMatchObject({ version: '1', request: 'getnext' });
    expect((await a.api('GET', '/api/simulator/logs?limit=3')).body.entries.map((e: any) => e.id)).toEqual([19, 18, 17]);
    detailOnly(await a.api('GET', '/api/simulator/logs?limit=0'), 422);
    expect((await a.api('GET', '/api/simulator/status')).body.log_entries).toBe(10);
    expect((await a.api('DELETE', '/api/simulator/logs')).body).toEqual({ ok: true, cleared: 10 });
    expect((await a.api('GET', '/api/simulator/logs')).body).toEqual({ entries: [], total: 0, capacity: 10 });
    expect((await a.api('GET', '/api/stats/')).body.simulator).toMatchObject({ requests: 19, get: 1, getnext: 18, getbulk: 0, set: 0, errors: 0 });
  });

  it('WebSocket: status on every transition, simulator_log per entry, coalesced under load without losing count', async () => {
    const a = await loggedIn();
    const ws = listen(a);
    await ws.opened;
    const full = await ws.next('full_state');
    expect(full.data.simulator.state).toBe('stopped');
    const { target } = await startSim(a);
    await ws.next('status', (d) => d.simulator.state === 'running');
    expect(ws.messages.filter((m) => m.type === 'status').map((m) => m.data.simulator.state)).toEqual(['starting', 'running']);
    await v2(target, SYS_NAME);
    const log = await ws.next('simulator_log');
    expect(log.data).toMatchObject({ id: 1, request: 'get', principal: 'public', oids: [SYS_NAME] });
    // A burst (one GETBULK per OID): far more entries than pushes a second; every entry is accounted
    // for by a push or a push's `skipped` count.
    await run('snmpbulkwalk', ['-v2c', '-c', 'public', '-Cr1', target, '.1']);
    const total = (await a.api('GET', '/api/stats/')).body.simulator.requests as number;
    expect(total).toBeGreaterThan(300);
    await ws.next('simulator_log', (d) => d.id === total);
    const pushes = ws.messages.filter((m) => m.type === 'simulator_log');
    expect(pushes.length).toBeLessThan(total / 2);
    expect(pushes.some((m) => m.data.skipped > 0)).toBe(true);
    expect(pushes.reduce((n, m) => n + 1 + (m.data.skipped ?? 0), 0)).toBe(total);
    await a.api('POST', '/api/simulator/stop');
    await ws.next('status', (d) => d.simulator.state === 'stopped');
    expect(ws.messages.filter((m) => m.type === 'status').map((m) => m.data.simulator.state)).toEqual(['starting', 'running', 'stopping', 'stopped']);
    ws.ws.close();
  });

  it('OpenAPI lists the simulator routes under the simulator tag', async () => {
    const a = await loggedIn();
    const doc = (await a.call('GET', '/docs/json')).body;
    for (const [p, m] of [
      ['/api/simulator/status', 'get'],
      ['/api/simulator/start', 'post'],
      ['/api/simulator/stop', 'post'],
      ['/api/simulator/restart', 'post'],
      ['/api/simulator/data', 'get'],
      ['/api/simulator/data', 'post'],
      ['/api/simulator/logs', 'get'],
      ['/api/simulator/logs', 'delete'],
    ] as const) {
      expect(doc.paths[p][m].tags).toEqual(['simulator']);
      expect(doc.paths[p][m].summary).toBeTruthy();
    }
    expect(Object.keys(doc.paths['/api/simulator/start'].post.requestBody.content['application/json'].schema.properties)).toEqual([
      'port',
      'community',
      'host',
      'write_community',
      'engine_id',
      'v3_users',
    ]);
  });
});
