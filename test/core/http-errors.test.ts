// The HTTP error catalog (src/core/http-errors.ts): checked against docs/api-errors.md both ways,
// against the code (every code is thrown or answered somewhere, every code used is in the
// catalog), and its one handler answers {detail} with the catalog's status.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Fastify from 'fastify';
import { Type } from '@sinclair/typebox';
import { afterAll, describe, expect, it } from 'vitest';
import { HTTP_ERRORS, HttpError, httpError, httpErrorHandler, httpErrorWith, noRouteHandler } from '../../src/core/http-errors.js';

const root = join(import.meta.dirname, '..', '..');

describe('HTTP error catalog', () => {
  it('docs/api-errors.md lists every code with its status, and no code that is not in the catalog', () => {
    const doc = readFileSync(join(root, 'docs/api-errors.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1]!, Number(m[2])] as const);
    const documented = new Map(rows);
    expect(rows.length, 'a code documented twice').toBe(documented.size);
    for (const [code, e] of Object.entries(HTTP_ERRORS)) {
      expect(documented.has(code), `${code} is in the catalog but not in docs/api-errors.md (run npm run docs)`).toBe(true);
      expect(documented.get(code), `${code}: status in docs/api-errors.md`).toBe(e.status);
    }
    for (const code of documented.keys()) expect(code in HTTP_ERRORS, `${code} is in docs/api-errors.md but not in the catalog`).toBe(true);
  });

  it('every code is used by the code, and every code used is in the catalog', () => {
    const srcText = (dir: string): string =>
      readdirSync(dir, { withFileTypes: true })
        .map((e) => (e.isDirectory() ? srcText(join(dir, e.name)) : e.name.endsWith('.ts') ? readFileSync(join(dir, e.name), 'utf8') : ''))
        .join('\n');
    const code = srcText(join(root, 'src')).replace(/export const HTTP_ERRORS = \{[\s\S]*?\} as const satisfies [^;]*;/, '');
    const used = new Set([...code.matchAll(/'(HTTP_[A-Z_]+)'|HTTP_ERRORS\.(HTTP_[A-Z_]+)/g)].map((m) => (m[1] ?? m[2])!));
    expect([...used].sort()).toEqual(Object.keys(HTTP_ERRORS).sort());
  });

  it('each entry has a status of 4xx or 5xx and a message', () => {
    for (const [code, e] of Object.entries(HTTP_ERRORS)) {
      expect(e.status, code).toBeGreaterThanOrEqual(400);
      expect(e.status, code).toBeLessThan(600);
      expect(e.message.length, code).toBeGreaterThan(0);
      expect(e.meaning.length, code).toBeGreaterThan(0);
    }
  });

  it('fills the message template in order', () => {
    const e = httpError('HTTP_ALERT_RULE_NOT_FOUND', 'p1', 'r1');
    expect(e).toBeInstanceOf(HttpError);
    expect(e.code).toBe('HTTP_ALERT_RULE_NOT_FOUND');
    expect(e.statusCode).toBe(404);
    expect(e.message).toBe("pipeline 'p1' has no alert rule 'r1'");
    expect(httpError('HTTP_INVALID', 'as given').message).toBe('as given');
  });
});

describe('the one error handler', () => {
  const apps: ReturnType<typeof Fastify>[] = [];
  afterAll(async () => {
    for (const a of apps) await a.close();
  });
  const build = async (opts: Parameters<typeof httpErrorHandler>[0] = {}) => {
    const app = Fastify({ ajv: { customOptions: { allErrors: true } } });
    apps.push(app);
    const logged: string[] = [];
    app.setErrorHandler(httpErrorHandler({ ...opts, log: { error: (_o, msg) => void logged.push(msg) } }));
    app.setNotFoundHandler(noRouteHandler);
    app.get('/catalog', async () => {
      throw httpErrorWith({ 'retry-after': '7' }, 'HTTP_LOGIN_RATE_LIMITED', 'slow down');
    });
    app.get('/bug', async () => {
      throw new Error('boom');
    });
    app.post('/typed', { schema: { body: Type.Object({ n: Type.Integer(), s: Type.String() }) } }, async () => ({}));
    app.post('/small', { bodyLimit: 10 }, async () => ({}));
    await app.ready();
    return { app, logged };
  };

  it('answers a catalog error with its status, headers and {detail}', async () => {
    const { app } = await build();
    const r = await app.inject({ method: 'GET', url: '/catalog' });
    expect(r.statusCode).toBe(429);
    expect(r.headers['retry-after']).toBe('7');
    expect(r.json()).toEqual({ detail: 'slow down' });
  });

  it('answers validation errors 422 with every problem, and unknown errors 500 (logged)', async () => {
    const { app, logged } = await build();
    const v = await app.inject({ method: 'POST', url: '/typed', payload: { n: 'x' } });
    expect(v.statusCode).toBe(422);
    expect(v.json().detail).toBe("body must have required property 's'; body.n must be integer");
    const b = await app.inject({ method: 'GET', url: '/bug' });
    expect(b.statusCode).toBe(500);
    expect(b.json()).toEqual({ detail: 'internal error: boom' });
    expect(logged).toEqual(['request failed']);
    const n = await app.inject({ method: 'GET', url: '/nowhere?x=1' });
    expect(n.statusCode).toBe(404);
    expect(n.json()).toEqual({ detail: 'no route for GET /nowhere' });
  });

  it("names the body limit when asked, and keeps Fastify's words in plain mode", async () => {
    const { app } = await build({ bodyLimit: () => 10 });
    const r = await app.inject({ method: 'POST', url: '/small', payload: { long: 'x'.repeat(50) } });
    expect(r.statusCode).toBe(413);
    expect(r.json()).toEqual({ detail: 'request body is larger than the limit of 10 bytes' });
    const plain = await build({ plain: true });
    const b = await plain.app.inject({ method: 'GET', url: '/bug' });
    expect(b.json()).toEqual({ detail: 'boom' });
    expect(plain.logged).toEqual([]);
  });
});
