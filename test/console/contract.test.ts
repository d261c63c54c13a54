// Every endpoint of spec doc 1 section 4, read from the spec itself: routed, in the OpenAPI at /docs,
// and behind X-Auth-Token unless it is one of the documented open endpoints.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONSOLE_OPEN_PATHS } from '../../src/console/server.js';
import { consoleOn } from './helpers.js';

/** Spec doc 1, as the repository keeps it (docs/spec/README.md). */
const SPEC = fileURLToPath(new URL('../../docs/spec/1-operator-console-api.md', import.meta.url));

/** `| GET | /api/meta | ...` rows of section 4 as [method, path]. */
function specEndpoints(): [string, string][] {
  const text = readFileSync(SPEC, 'utf8');
  const section = text.slice(text.indexOf('## 4. Endpoints'), text.indexOf('## 5.'));
  return [...section.matchAll(/^\| (GET|POST|PUT|DELETE|PATCH) \| (\S+) \|/gm)].map((m) => [m[1]!, m[2]!.split('?')[0]!]);
}

/** Path templates compared without parameter names: `{oid}`, `{filename:path}`, `:name`, `*` -> `{}`. */
const shape = (p: string) =>
  p
    .replace(/\{[^}]+\}/g, '{}')
    .replace(/:[A-Za-z_]+/g, '{}')
    .replace(/\*/g, '{}');

describe('spec doc 1 endpoints', () => {
  it('every endpoint of section 4 is routed and documented in the OpenAPI', async () => {
    const endpoints = specEndpoints();
    expect(endpoints.length).toBeGreaterThanOrEqual(45);
    const { c, call } = await consoleOn({ SVC_AUTH_USERS: 'ops:s3cret-pass' });
    const openapi = (await call('GET', '/docs/json')).body as { paths: Record<string, Record<string, unknown>> };
    const documented = new Set(Object.entries(openapi.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${shape(p)}`)));
    // @fastify/swagger leaves WebSocket routes out; the document's description covers /api/ws.
    const missing = endpoints.filter(([m, p]) => p !== '/api/ws' && !documented.has(`${m} ${shape(p)}`));
    expect(missing).toEqual([]);
    expect((openapi as unknown as { info: { description: string } }).info.description).toContain('WebSocket GET /api/ws?token=');
    for (const [method, path] of endpoints) {
      const url = path.replace('{filename:path}', 'common/X.mib').replace('{oid}', '1.3.6.1');
      expect(
        c.app.hasRoute({ method: method as 'GET', url: url.replace('common/X.mib', '*') }) ||
          c.app.hasRoute({ method: method as 'GET', url }) ||
          path.includes('{'),
        `${method} ${path}`,
      ).toBe(true);
    }
  });

  it('every endpoint but the open ones answers 401 {detail} without a token', async () => {
    const { call } = await consoleOn({ SVC_AUTH_USERS: 'ops:s3cret-pass' });
    for (const [method, path] of specEndpoints()) {
      if (CONSOLE_OPEN_PATHS.has(path)) continue;
      const url = path.replace('{filename:path}', 'common%2FX.mib').replace('{oid}', '1.3.6.1');
      const r = await call(method, url);
      expect([method, path, r.status, r.body]).toEqual([method, path, 401, { detail: expect.stringContaining('X-Auth-Token') }]);
    }
  });
});
