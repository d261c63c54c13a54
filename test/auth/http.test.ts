// The auth hook and routes over HTTP (app.inject) on a small Fastify app with the real store.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { httpErrorHandler } from '../../src/core/http-errors.js';
import authRoutes from '../../src/api/routes/auth.js';
import { installAuth } from '../../src/auth/guard.js';
import { SlidingWindowLimiter } from '../../src/auth/rate-limit.js';
import { issueToken, TOKEN_TTL_MS } from '../../src/auth/tokens.js';
import { loadSettings } from '../../src/settings.js';
import { openStore, type SqlStore } from '../../src/store/index.js';

const KEY = 'the-api-key-0123';

interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

interface Harness {
  app: FastifyInstance;
  store: SqlStore;
  lines: LogLine[];
  warnings: () => LogLine[];
  settings: ReturnType<typeof loadSettings>;
  limiter: SlidingWindowLimiter | undefined;
}

const open: Harness[] = [];
const tmpDirs: string[] = [];

afterEach(async () => {
  for (const h of open.splice(0)) {
    await h.app.close();
    await h.store.close();
  }
  for (const d of tmpDirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Stand-in handlers for the surfaces the hook classifies. */
const SURFACES = [
  '/',
  '/api/health',
  '/api/ready',
  '/api/pipelines',
  '/api/pipelines/:name',
  '/api/internal/pipeline-stats',
  '/api/internal/transform-state/:pipeline',
  '/agent/health',
  '/agent/status',
  '/metrics',
  '/favicon.ico',
  '/docs',
  '/docs/*',
  '/redoc',
  '/openapi.json',
  '/webhooks/*',
  '/ui',
  '/ui/*',
];

async function build(env: Record<string, string>, opts: { limiter?: SlidingWindowLimiter; dbPath?: string } = {}): Promise<Harness> {
  const settings = loadSettings({ SVC_AUTH_SECRET: 'test-secret', ...env });
  const lines: LogLine[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) });
  const store = await openStore({ path: opts.dbPath ?? ':memory:' });
  // Same ajv options and error handler as src/api/app.ts (validation -> 422, the catalog's errors -> their status).
  const app = Fastify({ ajv: { customOptions: { allErrors: true, coerceTypes: true, useDefaults: true, removeAdditional: false } } });
  app.setErrorHandler(httpErrorHandler({ plain: true }));
  const { limiter } = installAuth(app, { settings, log, ...(opts.limiter ? { limiter: opts.limiter } : {}) });
  await app.register(async (scope) => authRoutes(scope, { settings, log, store }));
  await app.register(async (scope) => {
    for (const url of SURFACES) scope.route({ method: ['GET', 'POST', 'PUT'], url, handler: async () => ({ served: url }) });
  });
  await app.ready();
  const h: Harness = { app, store, lines, settings, limiter, warnings: () => lines.filter((l) => l.level === 40) };
  open.push(h);
  return h;
}

const get = (h: Harness, url: string, headers: Record<string, string> = {}, remoteAddress?: string) =>
  h.app.inject({ method: 'GET', url, headers, ...(remoteAddress ? { remoteAddress } : {}) });

async function login(h: Harness, username: string, password: string) {
  return h.app.inject({ method: 'POST', url: '/api/auth/login', payload: { username, password } });
}

describe('API key (SVC_API_KEY)', () => {
  it('is not checked when SVC_API_KEY is empty', async () => {
    const h = await build({});
    expect((await get(h, '/api/pipelines')).statusCode).toBe(200);
    expect((await get(h, '/api/internal/pipeline-stats')).statusCode).toBe(200);
    expect(h.warnings()).toEqual([]);
  });

  it('leaves the exempt paths open', async () => {
    const h = await build({ SVC_API_KEY: KEY });
    for (const url of [
      '/',
      '/api/health',
      '/api/ready',
      '/agent/health',
      '/metrics',
      '/favicon.ico',
      '/docs',
      '/docs/static/index.html',
      '/redoc',
      '/openapi.json',
      '/webhooks/ingest/a',
      '/ui',
      '/ui/app.js',
      '/api/health?verbose=1',
    ]) {
      const r = await get(h, url);
      expect(r.statusCode, url).toBe(200);
    }
    // login is exempt: a wrong password gives the login's 401, not the key's
    const r = await login(h, 'nobody', 'x');
    expect(r.statusCode).toBe(401);
    expect(r.json()).toEqual({ detail: 'invalid username or password' });
  });

  it('needs X-API-Key on other /api/* paths, with bodies that say what to do', async () => {
    const h = await build({ SVC_API_KEY: KEY });
    const missing = await get(h, '/api/pipelines');
    expect(missing.statusCode).toBe(401);
    expect(missing.headers['content-type']).toMatch(/application\/json/);
    expect(missing.json()).toEqual({
      detail: 'missing X-API-Key header: send the key configured in SVC_API_KEY, or log in with POST /api/auth/login and send Authorization: Bearer <token>',
    });
    const wrong = await get(h, '/api/pipelines', { 'x-api-key': 'nope' });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json()).toEqual({ detail: 'invalid X-API-Key header: it does not match the key configured in SVC_API_KEY' });
    expect((await get(h, '/api/pipelines', { 'X-API-Key': KEY })).json()).toEqual({ served: '/api/pipelines' });
    expect((await get(h, '/api/pipelines/abc', { 'x-api-key': KEY })).statusCode).toBe(200);
    expect((await get(h, '/api/pipelines', { 'x-api-key': `${KEY}x` })).statusCode).toBe(401);
    expect((await get(h, '/api/pipelines', { 'x-api-key': '' })).statusCode).toBe(401);
    // unknown /api paths are refused before the 404, so route names do not leak
    expect((await get(h, '/api/nothing-here')).statusCode).toBe(401);
    expect((await get(h, '/api/nothing-here', { 'x-api-key': KEY })).statusCode).toBe(404);
  });

  it('does not accept the key as a query parameter', async () => {
    const h = await build({ SVC_API_KEY: KEY });
    for (const q of ['api_key', 'apikey', 'key', 'x-api-key']) {
      const r = await get(h, `/api/pipelines?${q}=${KEY}`);
      expect(r.statusCode, q).toBe(401);
      expect(r.json()).toEqual({ detail: 'the API key is not accepted as a query parameter: send it in the X-API-Key header' });
    }
  });

  it('cannot be bypassed with another spelling of a protected path', async () => {
    const h = await build({ SVC_API_KEY: KEY });
    for (const url of [
      '/%61pi/pipelines',
      '/api/%70ipelines',
      '//api/pipelines',
      '/api//pipelines',
      '/API/pipelines',
      '/ui/../api/pipelines',
      '/api/health/../pipelines',
      '/api/pipelines/',
      '/api',
    ]) {
      const r = await get(h, url);
      expect(r.statusCode, url).toBe(401);
    }
  });

  it('is also satisfied by a session token from /api/auth/login', async () => {
    const h = await build({ SVC_API_KEY: KEY, SVC_AUTH_USERS: 'alice:wonder:land' });
    const r = await login(h, 'alice', 'wonder:land');
    expect(r.statusCode).toBe(200);
    const { token } = r.json() as { token: string };
    expect((await get(h, '/api/pipelines', { authorization: `Bearer ${token}` })).statusCode).toBe(200);
    expect((await get(h, '/api/auth/me', { authorization: `Bearer ${token}` })).json()).toEqual({ username: 'alice' });
    // a wrong key does not spoil a valid token
    expect((await get(h, '/api/pipelines', { authorization: `Bearer ${token}`, 'x-api-key': 'wrong' })).statusCode).toBe(200);

    const bad = await get(h, '/api/pipelines', { authorization: 'Bearer not-a-token' });
    expect(bad.statusCode).toBe(401);
    expect(bad.json()).toEqual({ detail: 'invalid or expired session token: log in again with POST /api/auth/login, or send the X-API-Key header' });
    const expired = issueToken('alice', 'test-secret', Date.now() - TOKEN_TTL_MS - 1);
    expect((await get(h, '/api/pipelines', { authorization: `Bearer ${expired}` })).statusCode).toBe(401);
    const otherNode = issueToken('alice', 'another-secret');
    expect((await get(h, '/api/pipelines', { authorization: `Bearer ${otherNode}` })).statusCode).toBe(401);
  });
});

describe('internal surfaces (SVC_INTERNAL_AUTH_MODE)', () => {
  const INTERNAL = ['/api/internal/pipeline-stats', '/api/internal/transform-state/p1', '/agent/status'];

  it('off: pass through without logging', async () => {
    const h = await build({ SVC_API_KEY: KEY, SVC_INTERNAL_AUTH_MODE: 'off' });
    for (const url of INTERNAL) {
      expect((await get(h, url)).statusCode).toBe(200);
      expect((await get(h, url, { 'x-api-key': 'wrong' })).statusCode).toBe(200);
    }
    expect(h.warnings()).toEqual([]);
  });

  it('warn (default): a missing or invalid key is logged at WARNING and the request served', async () => {
    const h = await build({ SVC_API_KEY: KEY });
    expect(h.settings.INTERNAL_AUTH_MODE).toBe('warn');
    expect((await h.app.inject({ method: 'POST', url: '/api/internal/pipeline-stats?x=1', payload: {} })).statusCode).toBe(200);
    expect((await get(h, '/agent/status', { 'x-api-key': 'wrong' })).statusCode).toBe(200);
    expect((await get(h, '/api/internal/pipeline-stats', { 'x-api-key': KEY })).statusCode).toBe(200);
    const w = h.warnings();
    expect(w).toHaveLength(2);
    expect(w[0]).toMatchObject({ method: 'POST', path: '/api/internal/pipeline-stats', ip: '127.0.0.1', reason: 'missing' });
    expect(w[0]!.msg).toMatch(/SVC_INTERNAL_AUTH_MODE=warn/);
    expect(w[1]).toMatchObject({ method: 'GET', path: '/agent/status', reason: 'invalid' });
    expect(JSON.stringify(h.lines)).not.toContain('wrong'); // the presented key is not logged
  });

  it('warn: session tokens do not count as the key on internal surfaces', async () => {
    const h = await build({ SVC_API_KEY: KEY });
    const token = issueToken('alice', 'test-secret');
    expect((await get(h, '/api/internal/pipeline-stats', { authorization: `Bearer ${token}` })).statusCode).toBe(200);
    expect(h.warnings()).toHaveLength(1);
  });

  it('enforce: a missing or invalid key gives 401, bearer tokens are refused, probes stay open', async () => {
    const h = await build({ SVC_API_KEY: KEY, SVC_INTERNAL_AUTH_MODE: 'enforce', SVC_AUTH_USERS: 'alice:pw' });
    const { token } = (await login(h, 'alice', 'pw')).json() as { token: string };
    for (const url of INTERNAL) {
      const missing = await get(h, url);
      expect(missing.statusCode, url).toBe(401);
      expect(missing.json()).toEqual({
        detail: 'missing X-API-Key header: internal endpoints need the key configured in SVC_API_KEY (session tokens are not accepted here)',
      });
      expect((await get(h, url, { 'x-api-key': 'wrong' })).json()).toEqual({
        detail: 'invalid X-API-Key header: it does not match the key configured in SVC_API_KEY',
      });
      expect((await get(h, url, { authorization: `Bearer ${token}` })).statusCode, url).toBe(401);
      expect((await get(h, url, { 'x-api-key': KEY })).statusCode, url).toBe(200);
    }
    expect((await get(h, '/agent/health')).statusCode).toBe(200);
    expect((await get(h, '/api/health')).statusCode).toBe(200);
    // bearer still works on the ordinary API
    expect((await get(h, '/api/pipelines', { authorization: `Bearer ${token}` })).statusCode).toBe(200);
    expect(h.warnings()).toEqual([]);
  });

  it('enforce without SVC_API_KEY: surfaces pass through, and that is said once at start', async () => {
    const h = await build({ SVC_INTERNAL_AUTH_MODE: 'enforce' });
    expect((await get(h, '/api/internal/pipeline-stats')).statusCode).toBe(200);
    expect((await get(h, '/agent/status')).statusCode).toBe(200);
    const w = h.warnings();
    expect(w).toHaveLength(1);
    expect(w[0]!.msg).toMatch(/enforce has no effect while SVC_API_KEY is empty/);
  });

  it('an invalid mode is logged once at WARNING and treated as warn', async () => {
    const h = await build({ SVC_API_KEY: KEY, SVC_INTERNAL_AUTH_MODE: 'strict' });
    const w = h.warnings();
    expect(w).toHaveLength(1);
    expect(w[0]).toMatchObject({ variable: 'SVC_INTERNAL_AUTH_MODE', value: 'strict' });
    expect(w[0]!.msg).toBe('SVC_INTERNAL_AUTH_MODE="strict" is not one of off, warn, enforce: treating it as warn');
    expect((await get(h, '/api/internal/pipeline-stats')).statusCode).toBe(200);
    expect(h.warnings()).toHaveLength(2);
    expect(h.warnings()[1]).toMatchObject({ reason: 'missing' });
  });
});

describe('rate limit (SVC_RATE_LIMIT)', () => {
  it('answers 429 with Retry-After past the limit and recovers after the window', async () => {
    let now = 1_700_000_000_000;
    const limiter = new SlidingWindowLimiter(3, 60, { now: () => now });
    const h = await build({ SVC_RATE_LIMIT: '3', SVC_RATE_LIMIT_WINDOW: '60' }, { limiter });
    expect(h.limiter).toBe(limiter);
    for (let i = 0; i < 3; i++) {
      expect((await get(h, '/api/pipelines')).statusCode).toBe(200);
      now += 1000;
    }
    const r = await get(h, '/api/pipelines');
    expect(r.statusCode).toBe(429);
    expect(r.headers['retry-after']).toBe('57');
    expect(r.json()).toEqual({
      detail: 'rate limit exceeded: at most 3 requests per 60 seconds per client (SVC_RATE_LIMIT, SVC_RATE_LIMIT_WINDOW); retry after 57 seconds',
    });
    // probes and non-/api paths are never limited
    for (let i = 0; i < 10; i++) {
      expect((await get(h, '/api/health')).statusCode).toBe(200);
      expect((await get(h, '/api/ready')).statusCode).toBe(200);
      expect((await get(h, '/metrics')).statusCode).toBe(200);
    }
    // every other /api path is, login and internal included
    expect((await login(h, 'a', 'b')).statusCode).toBe(429);
    expect((await get(h, '/api/internal/pipeline-stats')).statusCode).toBe(429);
    // per client IP
    expect((await get(h, '/api/pipelines', {}, '10.1.2.3')).statusCode).toBe(200);
    // sliding: the first request leaves the window 60 s after it was made
    now += 56_000; // 59 s after the first
    expect((await get(h, '/api/pipelines')).headers['retry-after']).toBe('1');
    now += 1000;
    expect((await get(h, '/api/pipelines')).statusCode).toBe(200);
    expect((await get(h, '/api/pipelines')).statusCode).toBe(429);
    now += 60_000;
    for (let i = 0; i < 3; i++) expect((await get(h, '/api/pipelines')).statusCode).toBe(200);
  });

  it('counts before authentication, so key guessing is limited too', async () => {
    const h = await build({ SVC_API_KEY: KEY, SVC_RATE_LIMIT: '2' });
    expect(h.limiter?.max).toBe(2);
    expect(h.limiter?.windowMs).toBe(60_000);
    expect((await get(h, '/api/pipelines', { 'x-api-key': 'guess1' })).statusCode).toBe(401);
    expect((await get(h, '/api/pipelines', { 'x-api-key': 'guess2' })).statusCode).toBe(401);
    const r = await get(h, '/api/pipelines', { 'x-api-key': KEY });
    expect(r.statusCode).toBe(429);
    expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(59);
  });

  it('is off when SVC_RATE_LIMIT is 0', async () => {
    const h = await build({});
    expect(h.limiter).toBeUndefined();
    for (let i = 0; i < 50; i++) expect((await get(h, '/api/pipelines')).statusCode).toBe(200);
  });
});

describe('POST /api/auth/login and GET /api/auth/me', () => {
  it('logs a bootstrap user in and returns a token for /me', async () => {
    const h = await build({ SVC_AUTH_USERS: 'alice:pw1,bob:p:w:2' });
    const r = await login(h, 'bob', 'p:w:2');
    expect(r.statusCode).toBe(200);
    const body = r.json() as { token: string; username: string };
    expect(body.username).toBe('bob');
    expect(Object.keys(body).sort()).toEqual(['token', 'username']);
    const me = await get(h, '/api/auth/me', { authorization: `Bearer ${body.token}` });
    expect(me.statusCode).toBe(200);
    expect(me.json()).toEqual({ username: 'bob' });
  });

  it('refuses wrong passwords and unknown users alike, without logging the password', async () => {
    const h = await build({ SVC_AUTH_USERS: 'alice:pw1' });
    for (const [u, p] of [
      ['alice', 'pw2'],
      ['alice', ''],
      ['mallory', 'pw1'],
      ['Alice', 'pw1'],
    ] as const) {
      const r = await login(h, u, p);
      expect(r.statusCode, `${u}/${p}`).toBe(401);
      expect(r.json()).toEqual({ detail: 'invalid username or password' });
    }
    expect(JSON.stringify(h.lines)).not.toContain('pw1');
  });

  it('answers 422 on a malformed body', async () => {
    const h = await build({ SVC_AUTH_USERS: 'alice:pw1' });
    for (const payload of [{}, { username: 'alice' }, { password: 'pw1' }, { username: '', password: 'pw1' }, { username: { a: 1 }, password: 'x' }]) {
      const r = await h.app.inject({ method: 'POST', url: '/api/auth/login', payload });
      expect(r.statusCode, JSON.stringify(payload)).toBe(422);
      expect(typeof (r.json() as { detail: unknown }).detail).toBe('string');
    }
    expect((await h.app.inject({ method: 'POST', url: '/api/auth/login' })).statusCode).toBe(422);
  });

  it('warns about SVC_AUTH_USERS entries without a colon at start', async () => {
    const h = await build({ SVC_AUTH_USERS: 'alice:pw1,justapassword' });
    const w = h.warnings();
    expect(w).toHaveLength(1);
    expect(w[0]!.msg).toMatch(/entry 2 has no ':'/);
    expect(JSON.stringify(w)).not.toContain('justapassword');
  });

  it('/me answers 401 when not logged in', async () => {
    const h = await build({});
    const none = await get(h, '/api/auth/me');
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer');
    expect(none.json()).toEqual({ detail: 'not logged in: send Authorization: Bearer <token> with a token from POST /api/auth/login' });
    const bad = await get(h, '/api/auth/me', { authorization: 'Bearer abc.def' });
    expect(bad.statusCode).toBe(401);
    expect(bad.json()).toEqual({ detail: 'invalid or expired session token: log in again with POST /api/auth/login' });
    const expired = issueToken('alice', 'test-secret', Date.now() - TOKEN_TTL_MS);
    expect((await get(h, '/api/auth/me', { authorization: `Bearer ${expired}` })).statusCode).toBe(401);
  });
});

describe('POST /api/auth/change-password', () => {
  const change = (h: Harness, token: string | undefined, body: object) =>
    h.app.inject({ method: 'POST', url: '/api/auth/change-password', payload: body, headers: token ? { authorization: `Bearer ${token}` } : {} });

  it('stores a scrypt hash that persists across restarts and overrides the bootstrap password', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-auth-'));
    tmpDirs.push(dir);
    const env = { SVC_AUTH_USERS: 'alice:old-pw,bob:bob-pw', SVC_DB_URL: 'postgresql://db.example/svc' };
    const dbPath = join(dir, 'svc.db');
    const h = await build(env, { dbPath });
    const { token } = (await login(h, 'alice', 'old-pw')).json() as { token: string };

    const wrong = await change(h, token, { current_password: 'nope', new_password: 'new-pw' });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json()).toEqual({ detail: 'current_password is wrong' });
    expect(await h.store.users.passwordHash('alice')).toBeUndefined();

    const ok = await change(h, token, { current_password: 'old-pw', new_password: 'new-pw' });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({ ok: true, username: 'alice' });
    expect(await h.store.users.passwordHash('alice')).toMatch(/^scrypt\$[0-9a-f]{32}\$[0-9a-f]{64}$/);

    expect((await login(h, 'alice', 'old-pw')).statusCode).toBe(401);
    expect((await login(h, 'alice', 'new-pw')).statusCode).toBe(200);
    expect((await login(h, 'bob', 'bob-pw')).statusCode).toBe(200); // others keep their bootstrap password

    // restart: same database file, same SVC_AUTH_USERS
    await h.app.close();
    await h.store.close();
    open.splice(open.indexOf(h), 1);
    const h2 = await build(env, { dbPath });
    expect((await login(h2, 'alice', 'old-pw')).statusCode).toBe(401);
    const again = await login(h2, 'alice', 'new-pw');
    expect(again.statusCode).toBe(200);
    // and it can be changed again, checked against the stored hash
    const t2 = (again.json() as { token: string }).token;
    expect((await change(h2, t2, { current_password: 'old-pw', new_password: 'x' })).statusCode).toBe(401);
    expect((await change(h2, t2, { current_password: 'new-pw', new_password: 'newer-pw' })).statusCode).toBe(200);
    expect((await login(h2, 'alice', 'newer-pw')).statusCode).toBe(200);
  });

  it('answers 400 without SVC_DB_URL', async () => {
    const h = await build({ SVC_AUTH_USERS: 'alice:pw' });
    const { token } = (await login(h, 'alice', 'pw')).json() as { token: string };
    const r = await change(h, token, { current_password: 'pw', new_password: 'new' });
    expect(r.statusCode).toBe(400);
    expect(r.json()).toEqual({ detail: 'password changes need a SQL database: set SVC_DB_URL (passwords are not stored in the embedded database)' });
    expect(await h.store.users.passwordHash('alice')).toBeUndefined();
  });

  it('needs a session token and a well-formed body', async () => {
    const h = await build({ SVC_AUTH_USERS: 'alice:pw', SVC_DB_URL: 'postgresql://db.example/svc' });
    const anon = await change(h, undefined, { current_password: 'pw', new_password: 'new' });
    expect(anon.statusCode).toBe(401);
    expect((anon.json() as { detail: string }).detail).toMatch(/^not logged in/);
    const { token } = (await login(h, 'alice', 'pw')).json() as { token: string };
    for (const body of [{}, { current_password: 'pw' }, { current_password: 'pw', new_password: '' }]) {
      expect((await change(h, token, body)).statusCode, JSON.stringify(body)).toBe(422);
    }
  });

  it('with SVC_API_KEY set, the session token alone is enough', async () => {
    const h = await build({ SVC_API_KEY: KEY, SVC_AUTH_USERS: 'alice:pw', SVC_DB_URL: 'postgresql://db.example/svc' });
    const { token } = (await login(h, 'alice', 'pw')).json() as { token: string };
    expect((await change(h, token, { current_password: 'pw', new_password: 'new' })).statusCode).toBe(200);
    // the key alone is not a user
    const keyOnly = await h.app.inject({ method: 'GET', url: '/api/auth/me', headers: { 'x-api-key': KEY } });
    expect(keyOnly.statusCode).toBe(401);
  });
});
