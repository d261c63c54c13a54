// The operator console server (spec doc 1): login and sessions, first-run password, credential
// rotation, application settings, stats, the WebSocket, errors as {detail}, OpenAPI at /docs.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { consoleStateDir } from '../../src/console/server.js';
import { consoleOn, detailOnly, started } from './helpers.js';
import { until } from '../helpers/wait.js';

describe('operator console', () => {
  it('first run without SVC_AUTH_USERS: a random admin password, logged once, stored hashed; never a fixed default', async () => {
    const a = await consoleOn();
    const line = a.logs.find((l) => l.msg === 'console first-run password generated (shown once; rotate it with POST /api/settings/auth)')!;
    expect(line.username).toBe('admin');
    const password = line.password as string;
    expect(password.length).toBeGreaterThanOrEqual(16);
    const stored = readFileSync(join(consoleStateDir(a.c.deps.settings), 'credentials.json'), 'utf8');
    expect(stored).not.toContain(password);
    expect(stored).toMatch(/"admin": "scrypt\$[0-9a-f]+\$[0-9a-f]+"/);
    await a.login('admin', password);
    // Another install gets another password; a restart on the same state does not log a new one.
    const b = await consoleOn();
    expect(b.logs.find((l) => l.username === 'admin')?.password).not.toBe(password);
    await a.c.stop();
    started.splice(started.indexOf(a.c), 1);
    const again = await consoleOn({}, a.dir);
    expect(again.logs.some((l) => 'password' in l)).toBe(false);
    await again.login('admin', password);
  });

  it('open paths answer without a token; every other /api path is 401 {detail} without a valid X-Auth-Token', async () => {
    const { call } = await consoleOn({ SVC_AUTH_USERS: 'ops:s3cret-pass' });
    expect((await call('GET', '/api/meta')).body).toEqual({ name: 'svc-console', version: expect.any(String) });
    expect((await call('GET', '/api/health')).body).toEqual({ status: 'ok' });
    expect((await call('GET', '/api/healthz/ui')).status).toBe(200);
    for (const [m, p] of [
      ['GET', '/api/stats/'],
      ['GET', '/api/settings/check'],
      ['GET', '/api/settings/app'],
      ['POST', '/api/settings/logout'],
      ['DELETE', '/api/stats/'],
    ]) {
      expect(detailOnly(await call(m!, p!), 401)).toBe('missing, expired or unknown X-Auth-Token: log in with POST /api/settings/login');
      expect(detailOnly(await call(m!, p!, { token: 'forged' }), 401)).toContain('X-Auth-Token');
    }
    expect(detailOnly(await call('GET', '/nowhere'), 404)).toBe('no route for GET /nowhere');
  });

  it('login, check, logout; wrong passwords are 401 and then 429 after 10 failures a minute', async () => {
    const { call, login } = await consoleOn({ SVC_AUTH_USERS: 'ops:s3cret-pass,noc:other-pass' });
    const token = await login('ops', 's3cret-pass');
    const check = await call('GET', '/api/settings/check', { token });
    expect(check.body).toEqual({ valid: true, username: 'ops', expires_at: expect.stringMatching(/^\d{4}-/) });
    expect(Date.parse(check.body.expires_at) - Date.now()).toBeGreaterThan(7.9 * 3600_000);
    expect((await call('POST', '/api/settings/logout', { token })).body).toEqual({ ok: true });
    detailOnly(await call('GET', '/api/settings/check', { token }), 401);
    expect(detailOnly(await call('POST', '/api/settings/login', { body: { username: 'ops', password: 'nope' } }), 401)).toBe('wrong username or password');
    expect(detailOnly(await call('POST', '/api/settings/login', { body: { username: 'ghost', password: 'nope' } }), 401)).toBe('wrong username or password');
    detailOnly(await call('POST', '/api/settings/login', { body: { username: 'ops' } }), 422);
    for (let i = 0; i < 8; i++) await call('POST', '/api/settings/login', { body: { username: 'ops', password: 'x' } });
    const limited = await call('POST', '/api/settings/login', { body: { username: 'ops', password: 'x' } });
    expect(detailOnly(limited, 429)).toMatch(/^too many failed logins from 127\.0\.0\.1; retry in \d+ s$/);
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  it('credential rotation: checks the current password, stores the new one hashed, ends old sessions, survives a restart', async () => {
    const a = await consoleOn({ SVC_AUTH_USERS: 'ops:s3cret-pass' });
    const token = await a.login('ops', 's3cret-pass');
    expect(detailOnly(await a.call('POST', '/api/settings/auth', { token, body: { current_password: 'bad', new_password: 'longer-pass-1' } }), 401)).toBe(
      'current password is wrong',
    );
    detailOnly(await a.call('POST', '/api/settings/auth', { token, body: { current_password: 's3cret-pass', new_password: 'short' } }), 422);
    const ok = await a.call('POST', '/api/settings/auth', {
      token,
      body: { current_password: 's3cret-pass', new_password: 'longer-pass-1', new_username: 'operator' },
    });
    expect(ok.body).toEqual({ ok: true, username: 'operator' });
    detailOnly(await a.call('GET', '/api/settings/check', { token }), 401);
    detailOnly(await a.call('POST', '/api/settings/login', { body: { username: 'ops', password: 's3cret-pass' } }), 401);
    expect(readFileSync(join(consoleStateDir(a.c.deps.settings), 'credentials.json'), 'utf8')).not.toContain('longer-pass-1');
    // Restart with the same SVC_AUTH_USERS: the stored (rotated) users win; ops is seeded again as a separate user.
    await a.c.stop();
    started.splice(started.indexOf(a.c), 1);
    const b = await consoleOn({ SVC_AUTH_USERS: 'ops:s3cret-pass' }, a.dir);
    await b.login('operator', 'longer-pass-1');
  });

  it('application settings: defaults, partial update validated and persisted', async () => {
    const a = await consoleOn({ SVC_AUTH_USERS: 'ops:s3cret-pass' });
    const token = await a.login('ops', 's3cret-pass');
    const defaults = (await a.call('GET', '/api/settings/app', { token })).body;
    expect(defaults).toEqual({
      trap_event_limit: 1000,
      simulator_log_limit: 1000,
      walk_timeout_ms: 3000,
      walk_retries: 1,
      walk_max_repetitions: 25,
      walk_max_oids: 100000,
      stats_push_interval_s: 5,
      mib_repository_url: '',
    });
    const upd = await a.call('POST', '/api/settings/app', { token, body: { trap_event_limit: 50, walk_timeout_ms: 1000 } });
    expect(upd.body).toEqual({ ...defaults, trap_event_limit: 50, walk_timeout_ms: 1000 });
    expect(detailOnly(await a.call('POST', '/api/settings/app', { token, body: { trap_event_limit: 1 } }), 422)).toContain('trap_event_limit');
    expect(detailOnly(await a.call('POST', '/api/settings/app', { token, body: { nope: 1 } }), 422)).toContain('additional properties');
    await a.c.stop();
    started.splice(started.indexOf(a.c), 1);
    const b = await consoleOn({ SVC_AUTH_USERS: 'ops:s3cret-pass' }, a.dir);
    expect((await b.call('GET', '/api/settings/app', { token: await b.login('ops', 's3cret-pass') })).body.trap_event_limit).toBe(50);
  });

  it('stats: counters per area with their reset time; DELETE resets them', async () => {
    const a = await consoleOn({ SVC_AUTH_USERS: 'ops:s3cret-pass' });
    const token = await a.login('ops', 's3cret-pass');
    a.c.deps.stats.inc('traps', 'received', 3);
    const s = (await a.call('GET', '/api/stats/', { token })).body;
    expect(Object.keys(s)).toEqual(['simulator', 'traps', 'walker', 'mibs', 'since']);
    expect(s.traps.received).toBe(3);
    const reset = (await a.call('DELETE', '/api/stats/', { token })).body;
    expect(reset.traps.received).toBe(0);
    expect(Date.parse(reset.since)).toBeGreaterThanOrEqual(Date.parse(s.since));
  });

  it('WebSocket: closes 4401 without a valid token; full_state first, pong to ping, hub events and stats pushed', async () => {
    const a = await consoleOn({ SVC_AUTH_USERS: 'ops:s3cret-pass' });
    const wsUrl = a.c.url.replace('http', 'ws') + '/api/ws';
    const closed = await new Promise<{ code: number; reason: string }>((resolve) => {
      new WebSocket(wsUrl + '?token=forged').on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    });
    expect(closed).toEqual({ code: 4401, reason: 'unauthorized: log in (POST /api/settings/login) and connect with ?token=<token>' });

    const token = await a.login('ops', 's3cret-pass');
    const ws = new WebSocket(`${wsUrl}?token=${token}`);
    const messages: any[] = [];
    const next = (type: string) =>
      new Promise<any>((resolve) => {
        const seen = messages.find((m) => m.type === type);
        if (seen) return resolve(seen);
        const on = (raw: Buffer) => {
          const m = JSON.parse(raw.toString());
          if (m.type === type) {
            ws.off('message', on);
            resolve(m);
          }
        };
        ws.on('message', on);
      });
    ws.on('message', (raw: Buffer) => messages.push(JSON.parse(raw.toString())));
    const first = await next('full_state');
    expect(messages[0].type).toBe('full_state');
    expect(first.data.stats.traps.received).toBe(0);
    expect(first.timestamp).toMatch(/^\d{4}-\d\d-\d\dT/);
    ws.send('ping');
    expect((await next('pong')).type).toBe('pong');
    messages.length = 0;
    ws.send(JSON.stringify({ type: 'ping' }));
    await next('pong');
    a.c.deps.events.publish('trap', { trap_oid: '1.3.6.1.6.3.1.1.5.3' });
    expect((await next('trap')).data).toEqual({ trap_oid: '1.3.6.1.6.3.1.1.5.3' });
    await a.call('DELETE', '/api/stats/', { token });
    expect((await next('stats')).data.traps.received).toBe(0);
    ws.close();
  });

  it('WebSocket: stats are pushed every stats_push_interval_s; a logged-out session is closed with 4401 at the next push', async () => {
    const a = await consoleOn({ SVC_AUTH_USERS: 'ops:s3cret-pass' });
    const token = await a.login('ops', 's3cret-pass');
    await a.call('POST', '/api/settings/app', { token, body: { stats_push_interval_s: 1 } });
    const ws = new WebSocket(`${a.c.url.replace('http', 'ws')}/api/ws?token=${token}`);
    const types: string[] = [];
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    ws.on('message', (raw: Buffer) => types.push((JSON.parse(raw.toString()) as { type: string }).type));
    await until(() => types.includes('stats'), 5000, 'the first stats push');
    expect(types).toEqual(['full_state', 'stats']);
    await a.call('POST', '/api/settings/logout', { token });
    expect(await closed).toBe(4401);
  });

  it('OpenAPI at /docs lists the console routes with the X-Auth-Token scheme', async () => {
    const a = await consoleOn({ SVC_AUTH_USERS: 'ops:s3cret-pass' });
    const doc = (await a.call('GET', '/docs/json')).body;
    expect(doc.components.securitySchemes.token).toEqual({ type: 'apiKey', in: 'header', name: 'X-Auth-Token' });
    for (const p of ['/api/settings/login', '/api/settings/app', '/api/stats/', '/api/meta']) expect(Object.keys(doc.paths)).toContain(p);
    // WebSocket routes are not OpenAPI operations: the channel is described in the document's info.
    expect(doc.info.description).toContain('/api/ws?token=');
  });

  it('a port already in use is a clear start-up error', async () => {
    const a = await consoleOn();
    const port = new URL(a.c.url).port;
    await expect(consoleOn({ SVC_CONSOLE_PORT: port })).rejects.toThrow(/EADDRINUSE/);
  });
});
