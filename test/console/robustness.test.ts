// The console against requests a careful client would not send: encoded paths, partial settings,
// empty JSON bodies, values an event cannot carry as JSON, odd overrides and trap varbinds.
import { createSocket } from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { decodeMessage, encodeV3, PduType, type V3Message } from '../../src/snmp/message.js';
import { run } from '../snmp/peers.js';
import { consoleOn, detailOnly, loggedIn, started } from './helpers.js';

const sockets: WebSocket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.close();
});

/** A raw request: fetch would normalise `/%61pi` away. */
async function rawGet(url: string, path: string, method = 'GET') {
  const { request } = await import('node:http');
  const u = new URL(url);
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, method }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('authentication by route, not by the raw URL', () => {
  it('a percent-encoded /api path is still authenticated (401 {detail}), and open routes stay open', async () => {
    const { c } = await consoleOn({ SVC_AUTH_USERS: 'ops:s3cret-pass' });
    for (const [method, path] of [
      ['GET', '/%61pi/stats/'],
      ['GET', '/%61pi/settings/check'],
      ['POST', '/%61pi/simulator/stop'],
      ['GET', '/%61pi/settings/app'],
      ['GET', '/api/%73tats/'],
    ]) {
      const r = await rawGet(c.url, path!, method);
      expect([path, r.status, Object.keys(r.body)]).toEqual([path, 401, ['detail']]);
    }
    expect((await rawGet(c.url, '/%61pi/health')).status).toBe(200);
    expect((await rawGet(c.url, '/api/no-such-route')).status).toBe(404);
  });
});

describe('application settings', () => {
  it('a partial POST changes only the fields it names', async () => {
    const a = await loggedIn();
    expect((await a.api('POST', '/api/settings/app', { walk_timeout_ms: 5000 })).body.walk_timeout_ms).toBe(5000);
    const r = await a.api('POST', '/api/settings/app', { trap_event_limit: 50 });
    expect(r.body).toMatchObject({ trap_event_limit: 50, walk_timeout_ms: 5000 });
    expect((await a.api('GET', '/api/settings/app')).body).toMatchObject({ trap_event_limit: 50, walk_timeout_ms: 5000 });
    detailOnly(await a.api('POST', '/api/settings/app', { walk_timeout_ms: 5 }), 422);
  });
});

describe('bodies', () => {
  it('POST with content-type application/json and an empty body is no body: stop and start answer 200', async () => {
    const a = await loggedIn();
    const post = (path: string) => fetch(a.c.url + path, { method: 'POST', headers: { 'x-auth-token': a.token, 'content-type': 'application/json' } });
    expect((await post('/api/simulator/stop')).status).toBe(200);
    // Start without a body uses the defaults (port 1161, which may be taken on a shared machine:
    // then 409 with the reason, also the contract); before, an empty body was 400 or 422.
    const start = await post('/api/simulator/start');
    const body = (await start.json()) as { state?: string; detail?: string };
    if (start.status === 200) expect(body.state).toBe('running');
    else expect([start.status, body.detail]).toEqual([409, 'UDP port 1161 on 127.0.0.1 is already in use']);
    await post('/api/simulator/stop');
    const bad = await fetch(a.c.url + '/api/settings/app', {
      method: 'POST',
      headers: { 'x-auth-token': a.token, 'content-type': 'application/json' },
      body: '{"walk_timeout_ms":',
    });
    expect(bad.status).toBe(400);
    expect(Object.keys((await bad.json()) as object)).toEqual(['detail']);
  });

  it('the trap receiver binds 127.0.0.1 when SVC_HOST is a name (as the simulator does)', async () => {
    const a = await loggedIn({ SVC_HOST: 'localhost' });
    const r = await a.api('POST', '/api/traps/start', { port: 0 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.host).toBe('127.0.0.1');
    // A second start says to stop first; the receiver has no restart endpoint, so none is suggested.
    const again = detailOnly(await a.api('POST', '/api/traps/start', { port: 0 }), 409);
    expect(again).toBe('the trap receiver is already running; stop it first');
  });
});

describe('WebSocket', () => {
  it('an event carrying a bigint is sent (a number up to 2^53, a string beyond), and the console goes on', async () => {
    const a = await loggedIn();
    const ws = new WebSocket(`${a.c.url.replace('http', 'ws')}/api/ws?token=${a.token}`);
    sockets.push(ws);
    const messages: any[] = [];
    ws.on('message', (m: Buffer) => messages.push(JSON.parse(m.toString())));
    await expect.poll(() => messages.length).toBe(1);
    const max = BigInt(Number.MAX_SAFE_INTEGER);
    a.c.deps.events.publish('trap', { uptime: 5n, edge: max, past: max + 1n, low: -max, below: -max - 1n, big: 18446744073709551615n });
    await expect
      .poll(() => messages.find((m) => m.type === 'trap')?.data)
      .toEqual({
        uptime: 5,
        edge: Number.MAX_SAFE_INTEGER,
        past: '9007199254740992',
        low: -Number.MAX_SAFE_INTEGER,
        below: '-9007199254740992',
        big: '18446744073709551615',
      });
    expect((await a.api('GET', '/api/health')).status).toBe(200);
  });
});

describe('WebSocket stats period', () => {
  it('a changed stats_push_interval_s applies to an open socket within a second', async () => {
    const a = await loggedIn();
    await a.api('POST', '/api/settings/app', { stats_push_interval_s: 3600 });
    const ws = new WebSocket(`${a.c.url.replace('http', 'ws')}/api/ws?token=${a.token}`);
    sockets.push(ws);
    const types: string[] = [];
    ws.on('message', (m: Buffer) => types.push((JSON.parse(m.toString()) as { type: string }).type));
    await expect.poll(() => types).toEqual(['full_state']);
    await a.api('POST', '/api/settings/app', { stats_push_interval_s: 1 });
    await expect.poll(() => types.filter((t) => t === 'stats').length, { timeout: 8000 }).toBeGreaterThanOrEqual(2);
  });
});

describe('simulator overrides', () => {
  it('type hexstring is served as bytes (as hex); a value the agent cannot serve is 422 and nothing is saved', async () => {
    const a = await loggedIn();
    const ok = await a.api('POST', '/api/simulator/data', { overrides: [{ oid: '1.3.6.1.4.1.99.1.0', type: 'hexstring', value: 'DEADBEEF' }] });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const start = await a.api('POST', '/api/simulator/start', { host: '127.0.0.1', port: 0 });
    const got = await run('snmpget', ['-v2c', '-c', 'public', '-On', '-t', '1', '-r', '0', `127.0.0.1:${start.body.port}`, '1.3.6.1.4.1.99.1.0']);
    expect(got.trim()).toBe('.1.3.6.1.4.1.99.1.0 = Hex-STRING: DE AD BE EF');
    const tooLong = detailOnly(
      await a.api('POST', '/api/simulator/data', { overrides: [{ oid: '1.3.6.1.4.1.99.2.0', type: 'OctetString', value: 'x'.repeat(70000) }] }),
      422,
    );
    expect(tooLong).toMatch(/^overrides\[0\] \(1\.3\.6\.1\.4\.1\.99\.2\.0\): .*longer than 65535 bytes/);
    expect((await a.api('GET', '/api/simulator/data')).body.count).toBe(1);
    expect((await a.api('POST', '/api/simulator/restart')).body.state).toBe('running');
  });
});

describe('trap sender and walker input', () => {
  it('v1 with a Counter64 varbind is 422; an enum label with an explicit string type is sent as text', async () => {
    const a = await loggedIn();
    const rx = await a.api('POST', '/api/traps/start', { host: '127.0.0.1', port: 0 });
    const to = { target: '127.0.0.1', port: rx.body.port };
    const v1 = detailOnly(
      await a.api('POST', '/api/traps/send', {
        ...to,
        version: '1',
        oid: '1.3.6.1.6.3.1.1.5.3',
        varbinds: [{ oid: '1.3.6.1.4.1.1.1', type: 'Counter64', value: 1 }],
      }),
      422,
    );
    expect(v1).toContain('SNMPv1 has no Counter64');
    const sent = await a.api('POST', '/api/traps/send', {
      ...to,
      oid: 'IF-MIB::linkUp',
      varbinds: [
        { oid: 'IF-MIB::ifAdminStatus.1', type: 's', value: 'up' },
        { oid: 'IF-MIB::ifOperStatus.1', value: 'up' },
      ],
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body.varbinds.map((v: any) => [v.type, v.value])).toEqual([
      ['OctetString', 'up'],
      ['Integer32', 1],
    ]);
  });

  it('a walk to a name that does not resolve counts no walk and sets no duration', async () => {
    const a = await loggedIn();
    await a.api('DELETE', '/api/stats/');
    detailOnly(await a.api('POST', '/api/walk/execute', { target: 'no-such-host.invalid', oid: '1.3.6.1.2.1.1' }), 400);
    expect((await a.api('GET', '/api/stats/')).body.walker).toMatchObject({ walks: 0, errors: 0, last_duration_ms: 0 });
  });

  it('lowering trap_event_limit drops the oldest events at once, in the status too', async () => {
    const a = await loggedIn();
    const rx = await a.api('POST', '/api/traps/start', { host: '127.0.0.1', port: 0 });
    for (let i = 0; i < 15; i++) await run('snmptrap', ['-v2c', '-c', 'public', `127.0.0.1:${rx.body.port}`, '', '1.3.6.1.6.3.1.1.5.3']);
    await expect.poll(async () => (await a.api('GET', '/api/traps/status')).body.received).toBe(15);
    await a.api('POST', '/api/settings/app', { trap_event_limit: 10 });
    expect((await a.api('GET', '/api/traps/status')).body).toMatchObject({ events: 10, event_limit: 10 });
  });
});

describe('snmpEngineBoots', () => {
  /** The engine boots an SNMPv3 discovery report carries (RFC 3414 4). */
  async function discoveredBoots(port: number): Promise<number> {
    const s = createSocket('udp4');
    try {
      const msg = encodeV3(
        {
          msgId: 5,
          maxSize: 65507,
          reportable: true,
          engineId: Buffer.alloc(0),
          boots: 0,
          time: 0,
          userName: '',
          contextEngineId: Buffer.alloc(0),
          contextName: '',
        },
        null,
        { type: PduType.Get, requestId: 5, errorStatus: 0, errorIndex: 0, varbinds: [] },
      );
      const answer = await new Promise<Buffer>((resolve) => {
        s.once('message', resolve);
        s.send(msg, port, '127.0.0.1');
      });
      return (decodeMessage(answer) as V3Message).boots;
    } finally {
      s.close();
    }
  }

  it('grows by one at every start of the simulator and the trap receiver, across console restarts', async () => {
    const a = await loggedIn();
    const sim = await a.api('POST', '/api/simulator/start', { host: '127.0.0.1', port: 0 });
    const rx = await a.api('POST', '/api/traps/start', { host: '127.0.0.1', port: 0 });
    expect(await discoveredBoots(sim.body.port)).toBe(1);
    expect(await discoveredBoots(rx.body.port)).toBe(1);
    const again = await a.api('POST', '/api/simulator/restart');
    expect(await discoveredBoots(again.body.port)).toBe(2);
    // The console stops and starts on the same state: both services resume, one boot more.
    await a.c.stop();
    started.splice(started.indexOf(a.c), 1);
    const b = await loggedIn({}, a.dir);
    const simStatus = (await b.api('GET', '/api/simulator/status')).body;
    const rxStatus = (await b.api('GET', '/api/traps/status')).body;
    expect(await discoveredBoots(simStatus.port)).toBe(3);
    expect(await discoveredBoots(rxStatus.port)).toBe(2);
  });
});
