// How the daemon and the console serve the web UI (src/api/ui.ts): a fresh CSP nonce in every
// index.html, index.html never cached and hashed assets cached for good, {detail} errors, the
// switch-off, the initial JavaScript budget, and the rule that no UI code writes HTML from strings.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { consoleOn } from '../console/helpers.js';
import { testDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/fs.js';
import { ROOT, builtUi } from './ui-build.js';

/** The initial JavaScript of the UI may weigh at most this much, gzipped (issue 16). */
const INITIAL_JS_BUDGET = 150 * 1024;

let uiDir: string;
beforeAll(async () => {
  uiDir = await builtUi();
}, 120_000);

const nonceOf = (csp: string) => /'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];

describe('the daemon at /ui', () => {
  it('serves index.html with a strict CSP whose nonce is new in every response and is on every script and style', async () => {
    const d = await testDaemon({ SVC_UI_DIR: uiDir });
    const a = await fetch(`${d.url}/ui/`);
    const b = await fetch(`${d.url}/ui/`);
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toMatch(/^text\/html/);
    expect(a.headers.get('cache-control')).toBe('no-store');
    const csp = a.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    const nonce = nonceOf(csp)!;
    expect(nonce).toMatch(/^[A-Za-z0-9+/]{22}==$/);
    expect(nonceOf(b.headers.get('content-security-policy')!)).not.toBe(nonce);
    const html = await a.text();
    expect(html).not.toContain('__SVC_CSP_NONCE__');
    expect(html).toContain(`<meta property="csp-nonce" nonce="${nonce}">`);
    for (const tag of html.match(/<(script|link rel="stylesheet")[^>]*>/g)!) expect(tag).toContain(`nonce="${nonce}"`);
    expect(a.headers.get('x-content-type-options')).toBe('nosniff');
    expect(a.headers.get('referrer-policy')).toBe('no-referrer');
  });

  it('redirects / and /ui to /ui/; index.html by name is rendered the same way', async () => {
    const d = await testDaemon({ SVC_UI_DIR: uiDir });
    for (const path of ['/', '/ui']) {
      const r = await fetch(d.url + path, { redirect: 'manual' });
      expect(r.status, path).toBe(302);
      expect(r.headers.get('location')).toBe('/ui/');
    }
    const byName = await fetch(`${d.url}/ui/index.html`);
    expect(byName.headers.get('cache-control')).toBe('no-store');
    expect(await byName.text()).not.toContain('__SVC_CSP_NONCE__');
  });

  it('lets browsers keep hashed assets for a year; unknown files are 404 {detail}', async () => {
    const d = await testDaemon({ SVC_UI_DIR: uiDir });
    const html = await (await fetch(`${d.url}/ui/`)).text();
    const entry = /src="(\/ui\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const js = await fetch(d.url + entry);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(js.headers.get('content-security-policy')).toContain("default-src 'none'");
    // Read to its end: a body left unread holds the connection, and the daemon's stop waits for it.
    expect((await js.arrayBuffer()).byteLength).toBeGreaterThan(0);
    const missing = await fetch(`${d.url}/ui/assets/nope.js`);
    expect(missing.status).toBe(404);
    expect(Object.keys((await missing.json()) as object)).toEqual(['detail']);
  });

  it('needs no API key (the page itself holds no data; the API calls carry the credential)', async () => {
    const d = await testDaemon({ SVC_UI_DIR: uiDir, SVC_API_KEY: 'k' });
    expect((await fetch(`${d.url}/ui/`)).status).toBe(200);
    expect((await fetch(`${d.url}/api/pipelines`)).status).toBe(401);
  });

  it('SVC_UI_DIR empty: no UI, / and /ui are plain 404 {detail}', async () => {
    const d = await testDaemon({ SVC_UI_DIR: '' });
    for (const path of ['/', '/ui', '/ui/']) {
      const r = await fetch(d.url + path, { redirect: 'manual' });
      expect(r.status, path).toBe(404);
      expect((await r.json()) as object).toEqual({ detail: expect.stringContaining('no route for GET') });
    }
  });

  it('a folder without a built UI answers 404 {detail} saying how to build it', async () => {
    const d = await testDaemon({ SVC_UI_DIR: tempDir('svc-no-ui-') });
    const r = await fetch(`${d.url}/ui/`);
    expect(r.status).toBe(404);
    expect(((await r.json()) as { detail: string }).detail).toMatch(/not built.*npm run build/);
  });
});

describe('the console at /ui', () => {
  it('serves the same UI with its own nonce; its API still needs X-Auth-Token', async () => {
    const c = await consoleOn({ SVC_UI_DIR: uiDir });
    const r = await fetch(`${c.c.url}/ui/`);
    expect(r.status).toBe(200);
    expect(nonceOf(r.headers.get('content-security-policy')!)).toBeDefined();
    expect((await c.call('GET', '/api/stats/')).status).toBe(401);
    expect((await c.call('GET', '/api/healthz/ui')).body).toEqual({ status: 'ok', ui: '/ui/' });
  });

  it('says api-only on its shell probe when the UI is switched off', async () => {
    const c = await consoleOn({ SVC_UI_DIR: '' });
    expect((await c.call('GET', '/api/healthz/ui')).body).toEqual({ status: 'ok', ui: 'api-only' });
    expect((await fetch(`${c.c.url}/ui/`)).status).toBe(404);
  });
});

describe('the bundle', () => {
  it(`loads at most ${INITIAL_JS_BUDGET / 1024} KB of gzipped JavaScript up front; the editor and the charts come later`, () => {
    const html = readFileSync(join(uiDir, 'index.html'), 'utf8');
    const initial = [...html.matchAll(/(?:src|href)="\/ui\/(assets\/[^"]+\.js)"/g)].map((m) => m[1]!);
    expect(initial.length).toBeGreaterThan(0);
    // Static imports of the entry are initial too (Vite lists them as modulepreload links, and the
    // entry imports them by name); dynamic imports are not.
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const code = readFileSync(join(uiDir, file), 'utf8');
      for (const m of code.matchAll(/(?:^|[;\n}])\s*import\s*(?:[\w${},*\s]+from\s*)?["']\.\/([^"']+\.js)["']/g)) visit(`assets/${m[1]}`);
    };
    initial.forEach(visit);
    const gz = [...seen].reduce((n, f) => n + gzipSync(readFileSync(join(uiDir, f))).length, 0);
    expect(gz).toBeLessThanOrEqual(INITIAL_JS_BUDGET);
    const all = readdirSync(join(uiDir, 'assets')).filter((f) => f.endsWith('.js'));
    const editor = all.filter((f) => readFileSync(join(uiDir, 'assets', f), 'utf8').includes('cspNonce'));
    expect(editor.length).toBeGreaterThan(0);
    for (const f of editor) expect(seen.has(`assets/${f}`), `${f} (CodeMirror) is loaded up front`).toBe(false);
  });

  it('is built into the package: dist/ is in package.json files, and npm run build builds the UI', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[]; scripts: Record<string, string> };
    expect(pkg.files).toContain('dist');
    expect(pkg.scripts.build).toContain('vite build --config ui/vite.config.ts');
    // `npm test` runs `test:here` on a supported Node (scripts/supported-node.mjs), and that type-checks the UI.
    expect(pkg.scripts.test).toContain('npm run test:here');
    expect(pkg.scripts['test:here']).toContain('tsc -p ui/tsconfig.json --noEmit');
  });
});

describe('UI sources', () => {
  it('never turn strings into HTML (device-supplied text must stay text)', () => {
    const files = (dir: string): string[] => readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? files(join(dir, f)) : [join(dir, f)]));
    for (const f of files(join(ROOT, 'ui', 'src'))) {
      const code = readFileSync(f, 'utf8');
      expect(code, f).not.toMatch(
        /innerHTML|outerHTML|insertAdjacentHTML|dangerouslySetInnerHTML|document\.write|createContextualFragment|\beval\(|new Function\(/,
      );
    }
  });
});
