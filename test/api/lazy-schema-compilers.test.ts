// The API's schemas compiled on first use (src/api/lazy-schema-compilers.ts) answer exactly as
// Fastify's own compilers do: the same requests against two real apps, one with each, the same
// answers: coercion, defaults, errors (all of them), a root value coerced, responses serialized
// through their schema; and nothing is compiled before a request needs it.
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { lazySchemaController } from '../../src/api/lazy-schema-compilers.js';

const AJV = { customOptions: { allErrors: true, coerceTypes: true, useDefaults: true, removeAdditional: false } };

const apps: FastifyInstance[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
});

/** An app with routes whose schemas cover body, querystring, params and response. */
async function app(lazy: boolean): Promise<FastifyInstance> {
  const a = Fastify({ ajv: AJV, ...(lazy ? { schemaController: lazySchemaController() } : {}) });
  apps.push(a);
  const body = {
    type: 'object',
    properties: { n: { type: 'integer' }, tag: { type: 'string', default: 'none' }, list: { type: 'array', items: { type: 'integer' } } },
    required: ['n'],
    additionalProperties: false,
  };
  const reply = { 200: { type: 'object', properties: { n: { type: 'integer' }, tag: { type: 'string' }, list: { type: 'array' } } } };
  a.post('/items', { schema: { body, response: reply } }, async (req) => ({ ...(req.body as object), secret: 'not in the schema' }));
  a.get(
    '/items/:id',
    {
      schema: {
        params: { type: 'object', properties: { id: { type: 'integer', minimum: 1 } } },
        querystring: { type: 'object', properties: { limit: { type: 'integer', default: 10 } } },
      },
    },
    async (req) => ({
      id: (req.params as { id: number }).id,
      limit: (req.query as { limit: number }).limit,
    }),
  );
  // A root value coerced: Ajv can only change it with the request as its parent (schemaEnv).
  a.post('/count', { schema: { body: { type: 'integer' } } }, async (req) => ({ body: req.body, type: typeof req.body }));
  await a.ready();
  return a;
}

const requests = [
  { method: 'POST' as const, url: '/items', payload: { n: '5', list: ['1', 2] } },
  { method: 'POST' as const, url: '/items', payload: { n: 'five', extra: 1 } },
  { method: 'POST' as const, url: '/items', payload: {} },
  { method: 'GET' as const, url: '/items/7' },
  { method: 'GET' as const, url: '/items/7?limit=3' },
  { method: 'GET' as const, url: '/items/0?limit=x' },
  { method: 'POST' as const, url: '/count', payload: '42', headers: { 'content-type': 'application/json' } },
  { method: 'POST' as const, url: '/count', payload: '"x"', headers: { 'content-type': 'application/json' } },
];

describe('lazy schema compilers', () => {
  it('answer every request as the default compilers do', async () => {
    const [eager, lazy] = [await app(false), await app(true)];
    for (const r of requests) {
      const [a, b] = [await eager.inject(r), await lazy.inject(r)];
      expect({ status: b.statusCode, body: b.json() }, `${r.method} ${r.url}`).toEqual({ status: a.statusCode, body: a.json() });
    }
    // The cases above do differ: a coerced body, a default, a 400 listing every error, a dropped field.
    expect((await lazy.inject(requests[0]!)).json()).toEqual({ n: 5, tag: 'none', list: [1, 2] });
    expect((await lazy.inject(requests[1]!)).json().message).toMatch(/integer.*additional|additional.*integer/s);
    expect((await lazy.inject(requests[6]!)).json()).toEqual({ body: 42, type: 'number' });
  });

  it('compile a schema when a request first needs it, not when the app starts', async () => {
    // Counts Ajv compilations, passing each on to Ajv itself.
    // ajv is CommonJS: its module.exports, the Ajv class, arrives as the default export.
    const proto = ((await import('ajv')).default as unknown as { prototype: { compile: (...a: unknown[]) => unknown } }).prototype;
    const ajvCompile = proto.compile;
    let compiles = 0;
    proto.compile = function (this: unknown, ...args: unknown[]) {
      compiles++;
      return ajvCompile.apply(this, args);
    };
    try {
      await app(false);
      expect(compiles).toBeGreaterThan(0); // the default compiles every route's schemas at start
      compiles = 0;
      const a = await app(true);
      expect(compiles).toBe(0);
      expect((await a.inject({ method: 'GET', url: '/items/3' })).statusCode).toBe(200);
      const afterOne = compiles;
      expect(afterOne).toBeGreaterThan(0);
      await a.inject({ method: 'GET', url: '/items/4' });
      expect(compiles).toBe(afterOne);
    } finally {
      proto.compile = ajvCompile;
    }
  });
});
