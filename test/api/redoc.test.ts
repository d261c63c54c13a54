// ReDoc offline (issue 17): /redoc refers to no external URL; the ReDoc bundle it loads is served by
// the daemon (JavaScript, cacheable for a year under a URL that changes with its content), with its
// licence notices; like /redoc it needs no API key.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testDaemon } from '../helpers/daemon.js';
import { launch } from '../ui/browser.js';

const bundles = join(dirname(createRequire(import.meta.url).resolve('redoc/package.json')), 'bundles');

describe('/redoc', () => {
  it('is served from the package: no external URL, the script is JavaScript from the daemon', async () => {
    const d = await testDaemon();
    const page = await d.call('GET', '/redoc');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.text).toContain('<redoc spec-url="/openapi.json"></redoc>');
    // Nothing from another origin: no scheme, no protocol-relative URL.
    expect(page.text).not.toMatch(/https?:|["'(]\/\//i);
    const scripts = [...page.text.matchAll(/<script[^>]*\ssrc="([^"]+)"/g)].map((m) => m[1]!);
    expect(scripts).toHaveLength(1);
    expect(scripts[0]).toMatch(/^\/docs\/redoc\.standalone\.js\?v=[0-9a-f]{16}$/);
    // What the bundle itself would fetch from elsewhere (Redocly's logo) the browser is told to refuse.
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    for (const d of csp.split(/;\s*/)) expect(d).not.toMatch(/https?:|\*/);

    const res = await fetch(d.url + scripts[0]);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const js = Buffer.from(await res.arrayBuffer());
    expect(js.equals(readFileSync(join(bundles, 'redoc.standalone.js')))).toBe(true);

    // The bundle's first line points to its licence notices by a relative name: served beside it.
    expect(js.subarray(0, 100).toString()).toContain('see redoc.standalone.js.LICENSE.txt');
    const notices = await d.call('GET', '/docs/redoc.standalone.js.LICENSE.txt');
    expect(notices.status).toBe(200);
    expect(notices.text).toContain('ReDoc - OpenAPI/Swagger-generated API Reference Documentation');
  });

  it('needs no API key, page nor script', async () => {
    const d = await testDaemon({ SVC_API_KEY: 'k3y' });
    expect((await d.call('GET', '/api/pipelines')).status).toBe(401);
    const page = await d.call('GET', '/redoc');
    expect(page.status).toBe(200);
    const src = /src="([^"]+)"/.exec(page.text)![1]!;
    const script = await fetch(d.url + src);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/^text\/javascript/);
  });

  it('renders in a real browser with every request to another origin refused: the API reference and its search work', async () => {
    const d = await testDaemon();
    const browser = await launch();
    try {
      const page = await browser.newPage();
      const elsewhere: string[] = [];
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      // Offline: anything not for the daemon fails (the CSP already stops the logo before it gets here).
      await page.route('**/*', (r) => (new URL(r.request().url()).origin === d.url ? r.continue() : (elsewhere.push(r.request().url()), r.abort())));
      await page.goto(d.url + '/redoc');
      await page.getByRole('heading', { name: /svc pipeline engine API/ }).waitFor({ timeout: 20_000 });
      await page.fill('input[placeholder="Search..."]', 'rollback');
      // The search index is built in a worker (from a blob): results mean it runs under the policy.
      await page.locator('[data-role="search:results"]').getByText('/api/pipelines/{name}/rollback').waitFor({ timeout: 10_000 });
      expect(elsewhere).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
