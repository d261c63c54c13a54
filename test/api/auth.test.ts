// Authentication and rate limiting of the API as a running daemon sees them (spec doc 2 sections
// 5 and 8): X-API-Key on protected /api/*, exempt paths, webhook secrets independent of the key,
// browser login tokens, 429 with Retry-After.
import { describe, expect, it } from 'vitest';
import { testDaemon } from '../helpers/daemon.js';
import { expectError, localYaml, register, webhookYaml, workArea } from './_helpers.js';

const KEY = { 'x-api-key': 'k3y' };

describe('SVC_API_KEY', () => {
  it('protected /api/* paths need X-API-Key; a wrong, missing or query key is 401 {detail}', async () => {
    const d = await testDaemon({ SVC_API_KEY: 'k3y' });
    expectError(await d.call('GET', '/api/pipelines'), 401);
    expectError(await d.call('GET', '/api/pipelines', { headers: { 'x-api-key': 'nope' } }), 401);
    expect(expectError(await d.call('GET', '/api/pipelines?api_key=k3y'), 401)).toMatch(/X-API-Key/);
    expectError(await d.call('POST', '/api/pipelines', { yaml: localYaml('x', workArea()) }), 401);
    expectError(await d.call('GET', '/api/runs'), 401);
    expectError(await d.call('GET', '/api/daemon/status'), 401);
    expectError(await d.call('POST', '/api/daemon/stop'), 401);
    const ok = await d.call('GET', '/api/pipelines', { headers: KEY });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual([]);
  });

  it('probes, metrics, docs, the OpenAPI document and webhooks are exempt', async () => {
    const d = await testDaemon({ SVC_API_KEY: 'k3y' });
    const w = workArea();
    const r = await d.call('POST', '/api/pipelines', { yaml: webhookYaml('open', { path: 'open', outDir: w.outDir }), headers: KEY });
    expect(r.status).toBe(201);
    for (const path of ['/api/health', '/api/ready', '/metrics', '/openapi.json', '/docs']) {
      expect((await d.call('GET', path)).status, path).toBe(200);
    }
    expect((await d.call('POST', '/webhooks/open', { body: { a: 1 } })).status).toBe(202);
  });

  it('a browser login token is accepted instead of the key', async () => {
    const d = await testDaemon({ SVC_API_KEY: 'k3y', SVC_AUTH_USERS: 'ops:pa55' });
    expectError(await d.call('POST', '/api/auth/login', { body: { username: 'ops', password: 'wrong' } }), 401);
    const login = await d.call('POST', '/api/auth/login', { body: { username: 'ops', password: 'pa55' } });
    expect(login.status).toBe(200);
    expect(login.body).toEqual({ token: expect.any(String), username: 'ops' });
    const auth = { authorization: `Bearer ${login.body.token}` };
    expect((await d.call('GET', '/api/auth/me', { headers: auth })).body).toEqual({ username: 'ops' });
    expect((await d.call('GET', '/api/pipelines', { headers: auth })).status).toBe(200);
    expectError(await d.call('GET', '/api/pipelines', { headers: { authorization: 'Bearer forged.token' } }), 401);
  });
});

describe('SVC_RATE_LIMIT', () => {
  it('over the limit /api/* answers 429 {detail} with Retry-After; probes and webhooks are not limited', async () => {
    const d = await testDaemon({ SVC_RATE_LIMIT: '3', SVC_RATE_LIMIT_WINDOW: '60' });
    const w = workArea();
    await register(d, webhookYaml('rl', { path: 'rl', outDir: w.outDir })); // 1
    expect((await d.call('GET', '/api/pipelines')).status).toBe(200); // 2
    expect((await d.call('GET', '/api/runs')).status).toBe(200); // 3
    const limited = await d.call('GET', '/api/pipelines');
    expectError(limited, 429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await d.call('GET', '/api/health')).status).toBe(200);
    expect((await d.call('GET', '/api/ready')).status).toBe(200);
    expect((await d.call('POST', '/webhooks/rl', { body: { a: 1 } })).status).toBe(202);
  });
});
