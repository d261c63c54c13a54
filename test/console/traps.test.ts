// The trap receiver and sender through the console API: Debian's snmptrap/snmpinform into the
// receiver (v1, v2c, v3 from many users and engine IDs, informs), events newest first and capped,
// WebSocket pushes, resume across a console restart; the sender read by Debian's snmptrapd.
import { spawn } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { run, startSnmptrapd, V3_AUTHS, V3_PRIVS, v3TrapsFromEveryPair, v3UserMatrix, type Peer } from '../snmp/peers.js';
import { detailOnly, loggedIn, started } from './helpers.js';
import { quiet, until } from '../helpers/wait.js';
import { CORPUS as NET_SNMP_MIBS } from '../mib/helpers.js';

/** A logged-in console with the net-snmp MIBs that lives for a whole describe block. */
async function longConsole(dir?: string) {
  const a = await loggedIn({ SVC_MIB_BUNDLED_SOURCE_DIR: NET_SNMP_MIBS }, dir);
  started.splice(started.indexOf(a.c), 1);
  return a;
}
type Con = Awaited<ReturnType<typeof longConsole>>;

/** Every WebSocket message of a session. */
async function socket(a: Con) {
  const ws = new WebSocket(`${a.c.url.replace('http', 'ws')}/api/ws?token=${a.token}`);
  const messages: { type: string; data: any; timestamp: string }[] = [];
  ws.on('message', (raw: Buffer) => messages.push(JSON.parse(raw.toString())));
  await until(() => messages.find((m) => m.type === 'full_state'));
  return { ws, messages };
}

// 240 users, every auth x priv pair ten times, plus one name with different keys per sender engine.
const USERS = v3UserMatrix().map((u) => ({
  username: u.name,
  auth_protocol: u.authProtocol,
  auth_key: u.authKey,
  priv_protocol: u.privProtocol,
  priv_key: u.privKey,
}));
const SHARED = [
  {
    username: 'shared',
    engine_id: '0x80000000010203040aa1',
    auth_protocol: 'SHA',
    auth_key: 'engine-one-key',
    priv_protocol: 'AES',
    priv_key: 'engine-one-priv',
  },
  {
    username: 'shared',
    engine_id: '80000000010203040aa2',
    auth_protocol: 'MD5',
    auth_key: 'engine-two-key',
    priv_protocol: 'DES',
    priv_key: 'engine-two-priv',
  },
];
const OUR_ENGINE = '8000000001feedface01';

describe('trap receiver', () => {
  let a: Con;
  let sock: Awaited<ReturnType<typeof socket>>;
  let target: string;
  const traps = async (q = '') => (await a.api('GET', `/api/traps/${q}`)).body;

  beforeAll(async () => {
    a = await longConsole();
    sock = await socket(a);
  });
  afterAll(async () => {
    sock?.ws.close();
    await a?.c.stop();
  });

  it('starts stopped with the documented defaults; start validates its input (422)', async () => {
    expect((await a.api('GET', '/api/traps/status')).body).toMatchObject({
      state: 'stopped',
      error: null,
      port: 1162,
      community: null,
      resolve_mibs: false,
      v3_users: 0,
      started_at: null,
      received: 0,
      events: 0,
      event_limit: 1000,
      resume_on_console_start: false,
    });
    expect(detailOnly(await a.api('POST', '/api/traps/start', { port: 0, host: 'localhost' }), 422)).toMatch(
      /host "localhost" must be an IPv4 or IPv6 address/,
    );
    expect(detailOnly(await a.api('POST', '/api/traps/start', { port: 0, v3_users: [{ username: 'x', auth_key: 'short' }] }), 422)).toMatch(
      /^v3_users\[0\]: .*at least 8 characters/,
    );
    expect(
      detailOnly(
        await a.api('POST', '/api/traps/start', {
          port: 0,
          v3_users: [{ username: 'x', auth_protocol: 'SHA', auth_key: 'longenough', priv_protocol: 'ROT13', priv_key: 'longenough' }],
        }),
        422,
      ),
    ).toMatch(/^v3_users\[0\]: unknown privacy protocol "ROT13"/);
    expect(detailOnly(await a.api('POST', '/api/traps/start', { port: 0, v3_users: [SHARED[0], SHARED[0]] }), 422)).toMatch(
      /^v3_users\[1\]: user "shared" for engine 80000000010203040aa1 is listed twice/,
    );
    expect(detailOnly(await a.api('POST', '/api/traps/start', { port: 70000 }), 422)).toMatch(/port/);
    expect(detailOnly(await a.api('POST', '/api/traps/start', { port: 0, engine_id: 'zz' }), 422)).toMatch(/engine_id/);
    expect((await a.api('GET', '/api/traps/status')).body.state).toBe('stopped');
  });

  it(`start with ${USERS.length + SHARED.length} v3 users: status running, pushed over the WebSocket as status messages`, async () => {
    const r = await a.api('POST', '/api/traps/start', {
      host: '127.0.0.1',
      port: 0,
      community: 'public',
      resolve_mibs: true,
      engine_id: OUR_ENGINE,
      v3_users: [...USERS, ...SHARED],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      state: 'running',
      host: '127.0.0.1',
      community: 'public',
      resolve_mibs: true,
      v3_users: USERS.length + 2,
      engine_id: OUR_ENGINE,
      resume_on_console_start: true,
    });
    expect(r.body.port).toBeGreaterThan(1023);
    expect(JSON.stringify(r.body)).not.toContain('secret');
    target = `127.0.0.1:${r.body.port}`;
    const states = await until(() => {
      const s = sock.messages.filter((m) => m.type === 'status').map((m) => m.data.traps.state);
      return s.includes('running') ? s : undefined;
    });
    expect(states).toEqual(['starting', 'running']);
    expect(detailOnly(await a.api('POST', '/api/traps/start', { port: 0 }), 409)).toBe('the trap receiver is already running; stop it first');
  });

  it('snmptrap v2c: the event names the notification and varbinds from the MIBs, with enum labels; pushed as `trap`', async () => {
    await a.api('DELETE', '/api/stats/');
    await run('snmptrap', [
      '-v2c',
      '-c',
      'public',
      target,
      '4242',
      '1.3.6.1.6.3.1.1.5.3',
      '1.3.6.1.2.1.2.2.1.1.3',
      'i',
      '3',
      '1.3.6.1.2.1.2.2.1.7.3',
      'i',
      '2',
      '1.3.6.1.2.1.2.2.1.8.3',
      'i',
      '7',
      '1.3.6.1.2.1.2.2.1.2.3',
      's',
      'eth "3"',
      '1.3.6.1.4.1.99999.1',
      'C',
      '18446744073709551615',
      '1.3.6.1.4.1.99999.2',
      'x',
      '00FF',
    ]);
    const e = await until(async () => (await traps()).traps.find((t: any) => t.trap_oid === '1.3.6.1.6.3.1.1.5.3'));
    expect(e).toMatchObject({
      id: expect.any(Number),
      version: '2c',
      kind: 'trap',
      community: 'public',
      trap_name: 'IF-MIB::linkDown',
      uptime: 4242,
      source: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
    });
    expect(e.varbinds).toEqual([
      { oid: '1.3.6.1.2.1.2.2.1.1.3', name: 'IF-MIB::ifIndex.3', type: 'Integer32', value: 3 },
      { oid: '1.3.6.1.2.1.2.2.1.7.3', name: 'IF-MIB::ifAdminStatus.3', type: 'Integer32', value: 2, label: 'down' },
      { oid: '1.3.6.1.2.1.2.2.1.8.3', name: 'IF-MIB::ifOperStatus.3', type: 'Integer32', value: 7, label: 'lowerLayerDown' },
      { oid: '1.3.6.1.2.1.2.2.1.2.3', name: 'IF-MIB::ifDescr.3', type: 'OctetString', value: 'eth "3"' },
      { oid: '1.3.6.1.4.1.99999.1', name: 'SNMPv2-SMI::enterprises.99999.1', type: 'Counter64', value: '18446744073709551615' },
      { oid: '1.3.6.1.4.1.99999.2', name: 'SNMPv2-SMI::enterprises.99999.2', type: 'OctetString', value: '00ff', encoding: 'hex' },
    ]);
    const pushed = await until(() => sock.messages.find((m) => m.type === 'trap' && m.data.id === e.id));
    expect(pushed.data).toEqual(e);
    expect((await a.api('GET', '/api/stats/')).body.traps).toMatchObject({ received: 1, dropped: 0 });
  });

  it('snmptrap v1: RFC 3584 trap OID, v1 fields, TRAP-TYPE name', async () => {
    await run('snmptrap', ['-v1', '-c', 'public', target, '1.3.6.1.4.1.8072.4', '192.0.2.9', '6', '17', '555', '1.3.6.1.2.1.1.5.0', 's', 'r1']);
    await run('snmptrap', ['-v1', '-c', 'public', target, '1.3.6.1.4.1.8072.4', '192.0.2.9', '0', '0', '556']);
    const spec = await until(async () => (await traps()).traps.find((t: any) => t.version === '1' && t.v1.generic_trap === 6));
    expect(spec).toMatchObject({
      trap_oid: '1.3.6.1.4.1.8072.4.0.17',
      uptime: 555,
      v1: { enterprise: '1.3.6.1.4.1.8072.4', agent_addr: '192.0.2.9', generic_trap: 6, specific_trap: 17 },
    });
    expect(spec.varbinds).toEqual([{ oid: '1.3.6.1.2.1.1.5.0', name: 'SNMPv2-MIB::sysName.0', type: 'OctetString', value: 'r1' }]);
    const cold = await until(async () => (await traps()).traps.find((t: any) => t.version === '1' && t.v1.generic_trap === 0));
    expect(cold).toMatchObject({ trap_oid: '1.3.6.1.6.3.1.1.5.1', trap_name: 'SNMPv2-MIB::coldStart' });
  });

  it('snmptrap v3 from users of every auth/priv pair, each from its own engine ID', async () => {
    const n = await v3TrapsFromEveryPair(target, '1.3.6.1.2.1.1.5.0');
    const v3 = await until(async () => {
      const l = (await traps()).traps.filter((t: any) => t.version === '3');
      return l.length >= n ? l : undefined;
    });
    // Newest first.
    expect(v3.map((t: any) => t.varbinds[0].value)).toEqual(V3_AUTHS.flatMap((au) => V3_PRIVS.map(([cli]) => `${au}/${cli}`)).reverse());
    expect(new Set(v3.map((t: any) => t.engine_id)).size).toBe(n);
    expect(v3.at(-1)).toMatchObject({ user: 'user-0-0-0', kind: 'trap', trap_oid: '1.3.6.1.4.1.8072.9.1', engine_id: '80000000010203040001' });
  });

  it('one user name with different keys per engine ID; keys of the other engine are dropped and counted', async () => {
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
    const two = await until(async () => (await traps()).traps.find((t: any) => t.trap_oid === '1.3.6.1.4.1.8072.9.2002'));
    expect(two).toMatchObject({ user: 'shared', engine_id: '80000000010203040aa2' });
    expect((await traps()).traps.find((t: any) => t.trap_oid === '1.3.6.1.4.1.8072.9.2001')?.engine_id).toBe('80000000010203040aa1');
    const st = await until(async () => {
      const s = (await a.api('GET', '/api/traps/status')).body;
      return s.dropped >= 1 ? s : undefined;
    });
    expect(st.last_drop).toMatchObject({ source: expect.stringMatching(/^127\.0\.0\.1:/), reason: 'SNMPv3 user "shared": wrongDigest' });
    expect((await traps()).traps.some((t: any) => t.trap_oid === '1.3.6.1.4.1.8072.9.2003')).toBe(false);
    // A wrong community is dropped too.
    await run('snmptrap', ['-v2c', '-c', 'private', target, '', '1.3.6.1.6.3.1.1.5.1']);
    await until(async () => ((await a.api('GET', '/api/traps/status')).body.last_drop?.reason === 'unknown community "private"' ? true : undefined));
    expect((await a.api('GET', '/api/stats/')).body.traps.dropped).toBe(2);
  });

  it('snmpinform v2c and v3 are acknowledged (snmpinform exits 0 only then) and counted', async () => {
    const before = (await a.api('GET', '/api/stats/')).body.traps.informs_acknowledged;
    await run('snmpinform', ['-v2c', '-c', 'public', '-t', '2', '-r', '0', target, '', '1.3.6.1.6.3.1.1.5.4', '1.3.6.1.2.1.2.2.1.1.4', 'i', '4']);
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
      '1.3.6.1.2.1.1.5.0',
      's',
      'inform-v3',
    ]);
    const l = (await traps()).traps;
    expect(l.find((t: any) => t.kind === 'inform' && t.version === '2c')).toMatchObject({ trap_name: 'IF-MIB::linkUp', acknowledged: true });
    expect(l.find((t: any) => t.kind === 'inform' && t.version === '3')).toMatchObject({ user: 'user-5-3-2', engine_id: OUR_ENGINE, acknowledged: true });
    expect((await a.api('GET', '/api/stats/')).body.traps.informs_acknowledged).toBe(before + 2);
    expect((await a.api('GET', '/api/traps/status')).body.informs_acknowledged).toBe(2);
  });

  it('newest first, ?limit, capped at trap_event_limit, cleared by DELETE', async () => {
    const all = await traps();
    expect(all.total).toBe(all.count);
    const ids = all.traps.map((t: any) => t.id);
    expect(ids).toEqual([...ids].sort((x: number, y: number) => y - x));
    expect((await traps('?limit=3')).traps.map((t: any) => t.id)).toEqual(ids.slice(0, 3));
    detailOnly(await a.api('GET', '/api/traps/?limit=0'), 422);
    expect((await a.api('POST', '/api/settings/app', { trap_event_limit: 10 })).status).toBe(200);
    for (let i = 1; i <= 12; i++) await run('snmptrap', ['-v2c', '-c', 'public', target, '', `1.3.6.1.4.1.8072.9.3.${i}`]);
    const capped = await until(async () => {
      const l = await traps();
      return l.traps[0]?.trap_oid === '1.3.6.1.4.1.8072.9.3.12' ? l : undefined;
    });
    expect(capped.total).toBe(10);
    expect(capped.traps.map((t: any) => t.trap_oid)).toEqual(Array.from({ length: 10 }, (_, i) => `1.3.6.1.4.1.8072.9.3.${12 - i}`));
    expect((await a.api('GET', '/api/traps/status')).body).toMatchObject({ events: 10, event_limit: 10 });
    expect((await a.api('DELETE', '/api/traps/')).body).toEqual({ cleared: 10 });
    expect(await traps()).toEqual({ total: 0, count: 0, traps: [] });
    await a.api('POST', '/api/settings/app', { trap_event_limit: 1000 });
  });

  it('stop: status messages stopping, stopped; a stopped receiver receives nothing', async () => {
    sock.messages.length = 0;
    const r = await a.api('POST', '/api/traps/stop');
    expect(r.body).toMatchObject({ state: 'stopped', resume_on_console_start: false, started_at: null });
    const states = await until(() => {
      const s = sock.messages.filter((m) => m.type === 'status').map((m) => m.data.traps.state);
      return s.includes('stopped') ? s : undefined;
    });
    expect(states).toEqual(['stopping', 'stopped']);
    await run('snmptrap', ['-v2c', '-c', 'public', target, '', '1.3.6.1.4.1.8072.9.4']).catch(() => undefined);
    await quiet(200);
    expect((await traps()).total).toBe(0);
    expect((await a.api('POST', '/api/traps/stop')).body.state).toBe('stopped');
  });
});

describe('receiver start errors and resume', () => {
  let blocker: Socket | undefined;
  afterAll(() => blocker?.close());

  it('port in use: 409, state error with the reason, the console keeps running; stop clears the error', async () => {
    const a = await loggedIn();
    blocker = createSocket('udp4');
    await new Promise<void>((r) => blocker!.bind(0, '127.0.0.1', () => r()));
    const port = blocker.address().port;
    expect(detailOnly(await a.api('POST', '/api/traps/start', { host: '127.0.0.1', port }), 409)).toBe(`UDP port ${port} on 127.0.0.1 is already in use`);
    expect((await a.api('GET', '/api/traps/status')).body).toMatchObject({
      state: 'error',
      error: `UDP port ${port} on 127.0.0.1 is already in use`,
      port,
      resume_on_console_start: false,
    });
    expect((await a.api('GET', '/api/health')).body).toEqual({ status: 'ok' });
    expect((await a.api('POST', '/api/traps/stop')).body).toMatchObject({ state: 'stopped', error: null });
    // From error a start is allowed again.
    expect((await a.api('POST', '/api/traps/start', { host: '127.0.0.1', port: 0 })).body.state).toBe('running');
  });

  it('a running receiver comes back on the same port when the console restarts; a stopped one stays stopped', async () => {
    const a = await loggedIn({ SVC_MIB_BUNDLED_SOURCE_DIR: NET_SNMP_MIBS });
    const r = await a.api('POST', '/api/traps/start', { host: '127.0.0.1', port: 0, community: 'sekrit', resolve_mibs: true, v3_users: [USERS[0]] });
    const port = r.body.port;
    const engine = r.body.engine_id;
    await a.c.stop();
    started.splice(started.indexOf(a.c), 1);
    const b = await loggedIn({ SVC_MIB_BUNDLED_SOURCE_DIR: NET_SNMP_MIBS }, a.dir);
    expect((await b.api('GET', '/api/traps/status')).body).toMatchObject({
      state: 'running',
      port,
      community: 'sekrit',
      resolve_mibs: true,
      v3_users: 1,
      engine_id: engine,
      resume_on_console_start: true,
    });
    const u = USERS[0]!;
    await run('snmpinform', [
      '-v3',
      '-l',
      'authPriv',
      '-u',
      u.username,
      '-a',
      u.auth_protocol,
      '-A',
      u.auth_key,
      '-x',
      'DES',
      '-X',
      u.priv_key,
      '-t',
      '2',
      '-r',
      '0',
      `127.0.0.1:${port}`,
      '',
      '1.3.6.1.6.3.1.1.5.2',
    ]);
    expect((await b.api('GET', '/api/traps/')).body.traps[0]).toMatchObject({ trap_name: 'SNMPv2-MIB::warmStart', user: u.username, engine_id: engine });
    await b.api('POST', '/api/traps/stop');
    await b.c.stop();
    started.splice(started.indexOf(b.c), 1);
    const c = await loggedIn({}, a.dir);
    expect((await c.api('GET', '/api/traps/status')).body).toMatchObject({ state: 'stopped', port, community: 'sekrit', resume_on_console_start: false });
  });

  it('a port below 1024 without privilege: 403 and state error (console run as nobody)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-console-nobody-'));
    chmodSync(dir, 0o777);
    const env = {
      ...process.env,
      SVC_HOST: '127.0.0.1',
      SVC_CONSOLE_PORT: '0',
      SVC_STATE_DIR: dir,
      SVC_DB_PATH: join(dir, 'svc.db'),
      SVC_MIB_DIR: join(dir, 'mibs'),
      SVC_MIB_SOURCE_DIR: join(dir, 'mib-sources'),
      SVC_MIB_BUNDLED_SOURCE_DIR: '',
      SVC_AUTH_USERS: 'ops:s3cret-pass',
      HOME: dir,
    };
    const args =
      process.getuid?.() === 0
        ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', 'node_modules/.bin/tsx', 'src/cli/main.ts', 'console']
        : ['node_modules/.bin/tsx', 'src/cli/main.ts', 'console'];
    const proc = spawn(args[0]!, args.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout!.on('data', (d) => (out += d));
    proc.stderr!.on('data', (d) => (out += d));
    try {
      const url = await until(() => /"url":"(http:\/\/[^"]+)"/.exec(out)?.[1], 25_000).catch(() => {
        throw new Error(`console did not start: ${out}`);
      });
      const call = async (method: string, path: string, body?: unknown, token?: string) => {
        const res = await fetch(url + path, {
          method,
          headers: { 'content-type': 'application/json', ...(token ? { 'x-auth-token': token } : {}) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: res.status, body: (await res.json()) as any };
      };
      const token = (await call('POST', '/api/settings/login', { username: 'ops', password: 's3cret-pass' })).body.token;
      const r = await call('POST', '/api/traps/start', { host: '127.0.0.1', port: 162 }, token);
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ detail: 'UDP port 162 is below 1024 and needs privilege (root or CAP_NET_BIND_SERVICE); use a port of 1024 or above' });
      expect((await call('GET', '/api/traps/status', undefined, token)).body).toMatchObject({ state: 'error', error: r.body.detail });
      expect((await call('GET', '/api/health')).body).toEqual({ status: 'ok' });
    } finally {
      proc.kill('SIGTERM');
    }
  }, 40_000);
});

describe('trap sender read by snmptrapd', () => {
  const ENGINE = '8000000001aabbccdd01';
  let trapd: Peer;
  let a: Con;
  let to: { target: string; port: number };
  beforeAll(async () => {
    [trapd, a] = await Promise.all([
      startSnmptrapd(
        [`createUser -e 0x${ENGINE} trapsha SHA authpass123 AES privpass123`, 'createUser informer SHA-256 authpass123 AES privpass123'].join('\n'),
      ),
      longConsole(),
    ]);
    to = { target: '127.0.0.1', port: trapd.port };
  });
  afterAll(async () => {
    await a?.c.stop();
    await trapd?.stop();
  });

  it('v2c trap with varbinds of every type: what snmptrapd logs, and the answer says what was sent', async () => {
    await a.api('DELETE', '/api/stats/');
    const r = await a.api('POST', '/api/traps/send', {
      ...to,
      community: 'public',
      oid: '1.3.6.1.6.3.1.1.5.4',
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
        { oid: '1.3.6.1.4.1.2.9', type: 'Counter64', value: '9007199254740993' },
        { oid: '1.3.6.1.4.1.2.10', type: 'Counter64', value: '18446744073709551615' },
        { oid: '1.3.6.1.4.1.2.11', type: 'C', value: 5000000000 },
        { oid: '1.3.6.1.4.1.2.12', type: 'Opaque', value: '0102' },
        { oid: '1.3.6.1.4.1.2.13', type: 'Null' },
        { oid: '1.3.6.1.4.1.2.14', type: 'u', value: 4294967295 },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      sent: true,
      version: '2c',
      kind: 'trap',
      trap_oid: '1.3.6.1.6.3.1.1.5.4',
      trap_name: 'IF-MIB::linkUp',
      uptime: 777,
      port: trapd.port,
    });
    expect(r.body.acknowledged).toBeUndefined();
    expect(r.body.varbinds.map((v: any) => [v.type, v.value])).toEqual([
      ['Integer32', -5],
      ['OctetString', 'hello trapd'],
      ['OctetString', 'deadbeef'],
      ['ObjectIdentifier', '1.3.6.1.4.1.8072'],
      ['IpAddress', '198.51.100.1'],
      ['Counter32', 4294967295],
      ['Gauge32', 12],
      ['TimeTicks', 100],
      ['Counter64', '9007199254740993'],
      ['Counter64', '18446744073709551615'],
      ['Counter64', 5000000000],
      ['Opaque', '0102'],
      ['Null', null],
      ['Gauge32', 4294967295],
    ]);
    const out = await until(() => (trapd.output().includes('.1.3.6.1.4.1.2.14') ? trapd.output() : undefined));
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
      '.1.3.6.1.4.1.2.14 = Gauge32: 4294967295',
    ])
      expect(out).toContain(s);
    expect((await a.api('GET', '/api/stats/')).body.traps).toMatchObject({ sent: 1, send_errors: 0 });
  });

  it('MODULE::name for the notification and varbinds; types from the MIB; enum labels as values', async () => {
    const r = await a.api('POST', '/api/traps/send', {
      ...to,
      oid: 'IF-MIB::linkDown',
      varbinds: [
        { oid: 'IF-MIB::ifIndex.7', value: 7 },
        { oid: 'IF-MIB::ifAdminStatus.7', value: 'down' },
        { oid: 'ifDescr.7', value: 'ge-0/0/7' },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ trap_oid: '1.3.6.1.6.3.1.1.5.3', trap_name: 'IF-MIB::linkDown' });
    expect(r.body.varbinds).toEqual([
      { oid: '1.3.6.1.2.1.2.2.1.1.7', name: 'IF-MIB::ifIndex.7', type: 'Integer32', value: 7 },
      { oid: '1.3.6.1.2.1.2.2.1.7.7', name: 'IF-MIB::ifAdminStatus.7', type: 'Integer32', value: 2, label: 'down' },
      { oid: '1.3.6.1.2.1.2.2.1.2.7', name: 'IF-MIB::ifDescr.7', type: 'OctetString', value: 'ge-0/0/7' },
    ]);
    const out = await until(() => (trapd.output().includes('"ge-0/0/7"') ? trapd.output() : undefined));
    expect(out).toContain('.1.3.6.1.6.3.1.1.4.1.0 = OID: .1.3.6.1.6.3.1.1.5.3');
    expect(out).toContain('.1.3.6.1.2.1.2.2.1.7.7 = INTEGER: 2');
  });

  it('unknown names and values that do not fit are 422 naming them; nothing is sent', async () => {
    const send = (body: Record<string, unknown>) => a.api('POST', '/api/traps/send', { ...to, oid: '1.3.6.1.6.3.1.1.5.3', ...body });
    expect(detailOnly(await send({ oid: 'IF-MIB::linkSideways' }), 422)).toBe(
      'oid "IF-MIB::linkSideways" is neither a numeric OID nor a name known to the loaded MIBs (GET /api/mibs/browse/search finds names)',
    );
    expect(
      detailOnly(
        await send({
          varbinds: [
            { oid: '1.3.6.1.4.1.1', type: 'i', value: 1 },
            { oid: 'IF-MIB::ifIndex.1', type: 'Integer32', value: 2 ** 31 },
          ],
        }),
        422,
      ),
    ).toBe('varbinds[1] (IF-MIB::ifIndex.1): Integer32 value for 1.3.6.1.2.1.2.2.1.1.1 is out of range -2147483648..2147483647: 2147483648');
    expect(detailOnly(await send({ varbinds: [{ oid: '1.3.6.1.4.1.1', type: 'IpAddress', value: '300.1.1.1' }] }), 422)).toMatch(
      /^varbinds\[0\] \(SNMPv2-SMI::enterprises\.1\): IpAddress value .* must be a dotted IPv4 address/,
    );
    expect(detailOnly(await send({ varbinds: [{ oid: '1.3.6.1.4.1.1', type: 'Counter64', value: -1 }] }), 422)).toMatch(
      /^varbinds\[0\] .*Counter64 .*out of range/,
    );
    expect(detailOnly(await send({ varbinds: [{ oid: '1.3.6.1.4.1.1', type: 'Bogus', value: 1 }] }), 422)).toMatch(
      /^varbinds\[0\] .*unknown SNMP type "Bogus"/,
    );
    expect(detailOnly(await send({ varbinds: [{ oid: '1.3.6.1.4.1.1', value: 1 }] }), 422)).toBe(
      "varbinds[0] (SNMPv2-SMI::enterprises.1): give a type; the loaded MIBs do not define this object's syntax",
    );
    expect(detailOnly(await send({ varbinds: [{ oid: 'NOPE-MIB::x', type: 'i', value: 1 }] }), 422)).toMatch(/^varbinds\[0\]\.oid "NOPE-MIB::x" is neither/);
    expect(detailOnly(await send({ version: '1', inform: true }), 422)).toBe('SNMPv1 has no informs; use version "2c" or "3"');
    detailOnly(await send({ target: undefined }), 422);
    expect((await a.api('GET', '/api/stats/')).body.traps.send_errors).toBe(0);
  });

  it('v1 trap: RFC 3584 fields, logged by snmptrapd as an enterprise-specific trap', async () => {
    const r = await a.api('POST', '/api/traps/send', {
      ...to,
      version: '1',
      oid: '1.3.6.1.4.1.8072.4.0.33',
      agent_addr: '192.0.2.33',
      varbinds: [{ oid: '1.3.6.1.4.1.3.1', type: 's', value: 'v1-trap' }],
    });
    expect(r.body.v1).toEqual({ enterprise: '1.3.6.1.4.1.8072.4', agent_addr: '192.0.2.33', generic_trap: 6, specific_trap: 33 });
    const out = await until(() => (trapd.output().includes('v1-trap') ? trapd.output() : undefined));
    expect(out).toMatch(/Enterprise Specific Trap \(33\)/);
    expect(out).toContain('192.0.2.33');
  });

  it('informs: acknowledged by snmptrapd (v2c, v3); no acknowledgement is a 504 naming host, port, timeout and retries', async () => {
    expect(
      (
        await a.api('POST', '/api/traps/send', {
          ...to,
          inform: true,
          oid: '1.3.6.1.4.1.8072.4.0.34',
          varbinds: [{ oid: '1.3.6.1.4.1.3.2', type: 'i', value: 1 }],
        })
      ).body,
    ).toMatchObject({ kind: 'inform', acknowledged: true });
    const v3 = await a.api('POST', '/api/traps/send', {
      ...to,
      version: '3',
      inform: true,
      username: 'informer',
      auth_protocol: 'SHA-256',
      auth_key: 'authpass123',
      priv_protocol: 'AES',
      priv_key: 'privpass123',
      oid: '1.3.6.1.4.1.8072.4.0.36',
      varbinds: [{ oid: '1.3.6.1.4.1.3.4', type: 's', value: 'v3-inform' }],
    });
    expect(v3.body).toMatchObject({ version: '3', kind: 'inform', acknowledged: true });
    await until(() => trapd.output().includes('"v3-inform"') || undefined);
    const silent = createSocket('udp4');
    await new Promise<void>((r) => silent.bind(0, '127.0.0.1', () => r()));
    try {
      const port = silent.address().port;
      const t0 = Date.now();
      const d = detailOnly(
        await a.api('POST', '/api/traps/send', { target: '127.0.0.1', port, inform: true, oid: '1.3.6.1.6.3.1.1.5.1', timeout_ms: 200, retries: 1 }),
        504,
      );
      expect(Date.now() - t0).toBeLessThan(1500);
      expect(d).toBe(
        `inform not acknowledged: no response from 127.0.0.1:${port} (SNMPv2c) within 200 ms per attempt, 2 attempts (timeout_ms 200, retries 1); check that a trap receiver runs there, that UDP is not filtered and that the community string is right`,
      );
    } finally {
      silent.close();
    }
    expect((await a.api('GET', '/api/stats/')).body.traps.send_errors).toBeGreaterThanOrEqual(1);
  });

  it('v3 trap with the engine ID snmptrapd has the user for (createUser -e)', async () => {
    const r = await a.api('POST', '/api/traps/send', {
      ...to,
      version: '3',
      engine_id: ENGINE,
      username: 'trapsha',
      auth_protocol: 'SHA',
      auth_key: 'authpass123',
      priv_protocol: 'AES',
      priv_key: 'privpass123',
      oid: '1.3.6.1.4.1.8072.4.0.35',
      varbinds: [{ oid: '1.3.6.1.4.1.3.3', type: 's', value: 'v3-trapsha' }],
    });
    expect(r.body).toMatchObject({ version: '3', kind: 'trap' });
    await until(() => trapd.output().includes('"v3-trapsha"') || undefined);
  });

  it('round trip: the console sends into its own receiver', async () => {
    const rx = (await a.api('POST', '/api/traps/start', { host: '127.0.0.1', port: 0, resolve_mibs: true })).body;
    try {
      await a.api('POST', '/api/traps/send', {
        target: '127.0.0.1',
        port: rx.port,
        community: 'anything',
        inform: true,
        oid: 'SNMPv2-MIB::coldStart',
        varbinds: [{ oid: 'IF-MIB::ifHCInOctets.1', value: '18446744073709551615' }],
      });
      const e = (await a.api('GET', '/api/traps/')).body.traps[0];
      expect(e).toMatchObject({ kind: 'inform', community: 'anything', trap_name: 'SNMPv2-MIB::coldStart', acknowledged: true });
      expect(e.varbinds).toEqual([{ oid: '1.3.6.1.2.1.31.1.1.1.6.1', name: 'IF-MIB::ifHCInOctets.1', type: 'Counter64', value: '18446744073709551615' }]);
    } finally {
      await a.api('POST', '/api/traps/stop');
    }
  });

  it('the trap endpoints are in the OpenAPI document under tag traps', async () => {
    const doc = await fetch(`${a.c.url}/docs/json`).then((r) => r.json() as Promise<any>);
    for (const [p, m] of [
      ['/api/traps/status', 'get'],
      ['/api/traps/start', 'post'],
      ['/api/traps/stop', 'post'],
      ['/api/traps/send', 'post'],
      ['/api/traps/', 'get'],
      ['/api/traps/', 'delete'],
    ]) {
      expect(doc.paths[p!][m!].tags).toEqual(['traps']);
      expect(doc.paths[p!][m!].summary).toBeTruthy();
    }
  });
});
