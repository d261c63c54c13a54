// Hostile tests of issue 28's console, SNMP and schema findings, each built from its reproduction:
// password guessing past the login limit (console and daemon), the simulator's GETBULK reflection
// and its bind address, replays of one authenticated SNMPv3 trap, and schema names that leave the
// folder, are silently rewritten or disclose the absolute path.
import { createSocket, type Socket } from 'node:dgram';
import { existsSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeMessage, encodeCommunity, encodeV3, PduType, type CommunityMessage, type Pdu } from '../../src/snmp/message.js';
import { SnmpSession } from '../../src/snmp/session.js';
import { localize, makeUser, NotificationReplayGuard } from '../../src/snmp/usm.js';
import { consoleOn, loggedIn } from '../console/helpers.js';
import { testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/fs.js';
import { until } from '../helpers/wait.js';

const sockets: Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.close();
});

function udpSocket(): Socket {
  const s = createSocket('udp4');
  sockets.push(s);
  return s;
}

/** Sends `msg` to host:port and resolves with the first answer, or null after `ms` without one. */
function exchange(host: string, port: number, msg: Buffer, ms = 2000): Promise<Buffer | null> {
  const s = udpSocket();
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), ms);
    s.once('message', (m) => {
      clearTimeout(timer);
      resolve(m);
    });
    s.send(msg, port, host);
  });
}

describe('login limiter: a client over its failure limit is refused before the password is checked', () => {
  const RIGHT = 's3cret-pass';
  type Login = (password: string) => Promise<{ status: number; body: unknown; headers: Headers }>;

  /** The reproduction: 199 wrong guesses, then the right password (a default window of 60 s holds them all). */
  async function guessing(login: Login) {
    const statuses: number[] = [];
    for (let i = 0; i < 199; i++) statuses.push((await login(`guess-${i}`)).status);
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(new Set(statuses.slice(10))).toEqual(new Set([429]));
    const limited = await login(RIGHT);
    expect(limited.status).toBe(429);
    expect((limited.body as { detail: string }).detail).toMatch(/^too many failed logins from 127\.0\.0\.1; retry in \d+ s$/);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  }

  /** With a 5-s window: 10 failures, the right password refused, then taken once the failures left the window. */
  async function windowPasses(login: Login) {
    const t0 = Date.now();
    expect((await Promise.all(Array.from({ length: 10 }, (_, i) => login(`w${i}`)))).map((r) => r.status)).toEqual(Array(10).fill(401));
    expect((await login(RIGHT)).status).toBe(429);
    // Refused attempts are not counted, so retrying meanwhile does not push the end of the window.
    await until(async () => ((await login(RIGHT)).status === 200 ? true : undefined), 30_000);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(4000);
  }

  it('console: 199 wrong guesses then the right password is 429', async () => {
    const { call } = await consoleOn({ SVC_AUTH_USERS: `ops:${RIGHT}` });
    await guessing((password) => call('POST', '/api/settings/login', { body: { username: 'ops', password } }));
  }, 60_000);

  it('console: after the window (SVC_AUTH_LOGIN_WINDOW_SECONDS) the right password is 200 again', async () => {
    const { call } = await consoleOn({ SVC_AUTH_USERS: `ops:${RIGHT}`, SVC_AUTH_LOGIN_WINDOW_SECONDS: '5' });
    await windowPasses((password) => call('POST', '/api/settings/login', { body: { username: 'ops', password } }));
  }, 60_000);

  it('console: 40 concurrent guesses get at most 10 password checks (401); the rest are 429', async () => {
    const { call } = await consoleOn({ SVC_AUTH_USERS: `ops:${RIGHT}` });
    const all = await Promise.all(Array.from({ length: 40 }, (_, i) => call('POST', '/api/settings/login', { body: { username: 'ops', password: `g${i}` } })));
    expect(all.filter((r) => r.status === 401)).toHaveLength(10);
    expect(all.filter((r) => r.status === 429)).toHaveLength(30);
    expect((await call('POST', '/api/settings/login', { body: { username: 'ops', password: RIGHT } })).status).toBe(429);
  }, 60_000);

  it('daemon: /api/auth/login has the same limit, checked before the password; successes do not count', async () => {
    const d = await testDaemon({ SVC_AUTH_USERS: `ops:${RIGHT}` });
    const login: Login = (password) => d.call('POST', '/api/auth/login', { body: { username: 'ops', password } });
    for (let i = 0; i < 12; i++) expect((await login(RIGHT)).status).toBe(200);
    await guessing(login);
  }, 60_000);

  it('daemon: after the window the right password is 200 again', async () => {
    const d = await testDaemon({ SVC_AUTH_USERS: `ops:${RIGHT}`, SVC_AUTH_LOGIN_WINDOW_SECONDS: '5' });
    await windowPasses((password) => d.call('POST', '/api/auth/login', { body: { username: 'ops', password } }));
  }, 60_000);
});

describe('simulator: GETBULK answers are capped; the bind address is honoured', () => {
  async function simulator(host = '127.0.0.1') {
    const a = await loggedIn();
    const r = await a.api('POST', '/api/simulator/start', { host, port: 0 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return { ...a, port: r.body.port as number };
  }

  it('max-repetitions 10000 from the SNMP client (v2c and v3): at most 100 varbinds (snmpd maxGetbulkResponses)', async () => {
    const a = await loggedIn();
    const user = { name: 'bulk', authProtocol: 'SHA', authKey: 'bulk-auth-key', privProtocol: 'AES128', privKey: 'bulk-priv-key' };
    const r = await a.api('POST', '/api/simulator/start', {
      host: '127.0.0.1',
      port: 0,
      v3_users: [{ username: user.name, auth_protocol: user.authProtocol, auth_key: user.authKey, priv_protocol: user.privProtocol, priv_key: user.privKey }],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    for (const target of [
      { version: '2c' as const, community: 'public' },
      { version: '3' as const, user },
    ]) {
      const session = await SnmpSession.open({ host: '127.0.0.1', port: r.body.port, timeoutMs: 3000, ...target });
      try {
        const pdu = await session.request(PduType.GetBulk, [{ oid: '1.3.6.1', type: 'Null', value: null }], 0, 10000);
        expect(pdu.errorStatus).toBe(0);
        expect(pdu.varbinds.length).toBeGreaterThan(1);
        expect(pdu.varbinds.length).toBeLessThanOrEqual(100);
      } finally {
        session.close();
      }
    }
  });

  it('the 41-byte reflection request: the answer is at most 16 times the request, and still a useful answer', async () => {
    const { port } = await simulator();
    const bulk: Pdu = { type: PduType.GetBulk, requestId: 1, errorStatus: 0, errorIndex: 10000, varbinds: [{ oid: '1.3.6.1.2.1', type: 'Null', value: null }] };
    const req = encodeCommunity(1, 'public', bulk);
    expect(req.length).toBeLessThanOrEqual(41);
    const answer = await exchange('127.0.0.1', port, req);
    expect(answer).not.toBeNull();
    expect(answer!.length).toBeLessThanOrEqual(16 * req.length);
    const pdu = (decodeMessage(answer!) as CommunityMessage).pdu;
    expect(pdu.errorStatus).toBe(0);
    expect(pdu.varbinds.length).toBeGreaterThan(1);
  });

  it('bound to 127.0.0.1, it answers there and on no other local address', async () => {
    const a = await simulator('127.0.0.1');
    expect((await a.api('GET', '/api/simulator/status')).body.host).toBe('127.0.0.1');
    const get: Pdu = { type: PduType.Get, requestId: 2, errorStatus: 0, errorIndex: 0, varbinds: [{ oid: '1.3.6.1.2.1.1.5.0', type: 'Null', value: null }] };
    const msg = encodeCommunity(1, 'public', get);
    expect(await exchange('127.0.0.1', a.port, msg)).not.toBeNull();
    // 127.0.0.2 is local on Linux (all of 127/8); plus the machine's own non-loopback addresses.
    const others = [
      '127.0.0.2',
      ...Object.values(networkInterfaces()).flatMap((l) => (l ?? []).filter((i) => i.family === 'IPv4' && !i.internal).map((i) => i.address)),
    ];
    for (const host of others) expect(await exchange(host, a.port, msg, 1000), host).toBeNull();
  });
});

describe('trap receiver: replays of one authenticated SNMPv3 trap', () => {
  const ENGINE = Buffer.from('80000000010203040599', 'hex');
  const USER = { username: 'rp', auth_protocol: 'SHA', auth_key: 'replay-auth-key' };
  const local = localize(makeUser({ name: USER.username, authProtocol: USER.auth_protocol, authKey: USER.auth_key }), ENGINE);
  const trap = (msgId: number, time: number) =>
    encodeV3(
      { msgId, maxSize: 65507, reportable: false, engineId: ENGINE, boots: 3, time, userName: USER.username, contextEngineId: ENGINE, contextName: '' },
      local,
      {
        type: PduType.TrapV2,
        requestId: msgId,
        errorStatus: 0,
        errorIndex: 0,
        varbinds: [
          { oid: '1.3.6.1.2.1.1.3.0', type: 'TimeTicks', value: time * 100 },
          { oid: '1.3.6.1.6.3.1.1.4.1.0', type: 'ObjectIdentifier', value: '1.3.6.1.6.3.1.1.5.3' },
        ],
      },
    );

  it('601 copies of one trap: one accepted, 600 dropped and counted as replays; a new trap and the time window still work', async () => {
    const a = await loggedIn();
    const r = await a.api('POST', '/api/traps/start', { host: '127.0.0.1', port: 0, v3_users: [USER] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const port = r.body.port as number;
    const status = async () => (await a.api('GET', '/api/traps/status')).body;
    const s = udpSocket();
    const send = (msg: Buffer) => new Promise<void>((res, rej) => s.send(msg, port, '127.0.0.1', (e) => (e ? rej(e) : res())));

    const once = trap(4242, 1000);
    for (let i = 0; i < 601; i++) await send(once);
    const after = await until(async () => {
      const st = await status();
      return st.received + st.dropped >= 601 ? st : undefined;
    }, 10_000);
    expect(after).toMatchObject({ received: 1, dropped: 600, replays: 600 });
    expect(after.last_drop.reason).toMatch(/replay/);
    expect((await a.api('GET', '/api/stats/')).body.traps).toMatchObject({ received: 1, replays: 600 });

    // A new message of the same sender is taken; one older than the window (RFC 3414 3.2 7b) is not.
    await send(trap(4243, 1001));
    await send(trap(4244, 1001 - 151));
    const end = await until(async () => {
      const st = await status();
      return st.received + st.dropped >= 603 ? st : undefined;
    }, 10_000);
    expect(end).toMatchObject({ received: 2, dropped: 601, replays: 600 });
    expect(end.last_drop.reason).toMatch(/notInTimeWindow/);
  });
});

describe('replay guard memory', () => {
  it('remembers at most its caps, and forgets messages once they are out of the window', () => {
    const g = new NotificationReplayGuard(150, 1000, 50);
    const mac = Buffer.alloc(12, 7);
    const t0 = 1_000_000;
    for (let i = 0; i < 20_000; i++)
      expect(g.check({ engineId: Buffer.from(`80000000${(i % 200).toString(16).padStart(4, '0')}`, 'hex'), boots: 1, time: 10, msgId: i }, mac, true, t0)).toBe(
        'ok',
      );
    expect(g.size).toEqual({ messages: 1000, engines: 50 });
    const m = { engineId: Buffer.from('8000000001', 'hex'), boots: 1, time: 10, msgId: 1 };
    expect(g.check(m, mac, true, t0)).toBe('ok');
    expect(g.check(m, mac, true, t0 + 150_000)).toBe('replay');
    // 152 s on, the sender's time is past 10 + 150: out of the window, and no longer remembered.
    expect(g.check(m, mac, true, t0 + 152_000)).toBe('notInTimeWindow');
    expect(g.check({ ...m, time: 170, msgId: 2 }, mac, true, t0 + 152_000)).toBe('ok');
    expect(g.size.messages).toBe(1);
  });
});

describe('schema names (daemon API)', () => {
  async function upload(d: TestDaemon, name: string, o: { subdir?: string } = {}) {
    const form = new FormData();
    form.append('file', new Blob(['{}']), name);
    if (o.subdir !== undefined) form.append('subdir', o.subdir);
    const res = await fetch(`${d.url}/api/schemas/upload`, { method: 'POST', body: form });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }
  const detailOnly = (r: { status: number; body: Record<string, unknown> }, status: number) => {
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    expect(Object.keys(r.body)).toEqual(['detail']);
    return r.body.detail as string;
  };

  function tree() {
    const root = tempDir('svc-hostile-schemas-');
    const dir = join(root, 'schemas');
    const outside = join(root, 'outside');
    mkdirSync(dir);
    mkdirSync(outside);
    symlinkSync(outside, join(dir, 'outdir'));
    return { root, dir, outside };
  }

  it('a subdir through a symlink that leads outside is 400, and nothing is created outside', async () => {
    const t = tree();
    const d = await testDaemon({ SVC_SCHEMA_DIR: t.dir });
    for (const subdir of ['outdir/new', 'outdir/a/b/c', 'outdir']) {
      const detail = detailOnly(await upload(d, 'x.json', { subdir }), 400);
      expect(detail).not.toContain(t.root);
    }
    expect(readdirSync(t.outside)).toEqual([]);
  });

  it("file names with '../' or folders are 400 {detail}, not stripped to a plain name", async () => {
    const t = tree();
    const d = await testDaemon({ SVC_SCHEMA_DIR: t.dir });
    for (const name of ['../evil.json', '../../evil.json', 'a/evil.json', '..\\evil.json']) {
      expect(detailOnly(await upload(d, name), 400)).toMatch(/invalid file name/);
    }
    expect(existsSync(join(t.dir, 'evil.json'))).toBe(false);
    expect(existsSync(join(t.root, 'evil.json'))).toBe(false);
    expect(readdirSync(t.dir)).toEqual(['outdir']);
  });

  it('a 300-character name (file or folder) is 400 that names the limit and not the absolute path', async () => {
    const t = tree();
    const d = await testDaemon({ SVC_SCHEMA_DIR: t.dir });
    for (const r of [
      await upload(d, `${'n'.repeat(300)}.json`),
      await upload(d, 'x.json', { subdir: 'ok/' + 'd'.repeat(300) }),
      await upload(d, 'x.json', { subdir: Array(400).fill('abcdefgh').join('/') }),
    ]) {
      const detail = detailOnly(r, 400);
      expect(detail).toMatch(/bytes/);
      expect(detail).not.toContain(t.root);
    }
    expect(readdirSync(t.dir)).toEqual(['outdir']);
    // Reading or deleting a long name is a 404 or 400, never a 500 with the path.
    for (const method of ['GET', 'DELETE']) {
      const r = await d.call(method, `/api/schemas/${'n'.repeat(300)}.json`);
      expect([400, 404], JSON.stringify(r.body)).toContain(r.status);
      expect(JSON.stringify(r.body)).not.toContain(t.root);
    }
  });
});
