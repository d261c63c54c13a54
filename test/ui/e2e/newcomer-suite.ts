// (Run by test/ui/e2e.test.ts.) What a newcomer tripped over in the browser (issue 29, item 7): the
// console's sign-in page says where the first-run password is; a failed walk clears the previous
// walk's tables; `#/plugins/sink/<key>` opens the plugin, and a plugin or kind that does not exist
// says so. Screenshots in test-results/ui/.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/daemon.js';
import { until } from '../../helpers/wait.js';
import { launch, watchedPage, type WatchedPage } from '../browser.js';
import { serve, type Served } from '../serve.js';
import { builtUi } from '../ui-build.js';

let browser: Browser;
let w: WatchedPage;
let svc: Served;

/** Problems other than the browser's own line for an answer with an error status (a failed walk is one, on purpose). */
const unexpected = (problems: string[]) => problems.filter((p) => !p.includes('Failed to load resource'));

export function newcomerSuite() {
  describe('what a newcomer tripped over', () => {
    beforeAll(async () => {
      svc = await serve({ SVC_UI_DIR: await builtUi(), SVC_AUTH_USERS: 'ops:console-pass' });
      browser = await launch();
      w = await watchedPage(browser);
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      await svc?.stop();
    });

    it("the console's sign-in page says where the first-run password is", async () => {
      await w.page.goto(`${svc.consoleUrl}/ui/`);
      const hint = w.page.getByTestId('first-run-hint');
      await hint.waitFor();
      const text = (await hint.textContent())!.replace(/\s+/g, ' ');
      expect(text).toContain('the user admin with a random password');
      expect(text).toContain('console first-run password generated');
      expect(text).toContain('svc serve');
      await w.shot('console-login-first-run');
      expect(w.problems).toEqual([]);
    });

    it('a walk that fails clears the tables of the walk before it; the error stays', async () => {
      // Signed out after the test before; signed in already when this test runs a second time.
      await signInToConsole(w.page);
      await w.page.getByRole('link', { name: 'Simulator' }).click();
      await w.page.locator('h1', { hasText: 'SNMP simulator' }).waitFor();
      // A second attempt finds the simulator its first one started.
      const badge = w.page.locator('h1 .badge');
      await expect.poll(() => badge.textContent()).not.toBe('…');
      if ((await badge.textContent()) === 'running') {
        await w.page.getByRole('button', { name: 'Stop', exact: true }).click();
        await w.page.locator('h1 .badge', { hasText: 'stopped' }).waitFor();
      }
      const simPort = await freePort();
      const start = w.page.getByRole('form', { name: 'start simulator' });
      await start.locator('input[name="port"]').fill(String(simPort));
      await start.getByRole('button', { name: 'Start' }).click();
      await w.page.locator('h1 .badge', { hasText: 'running' }).waitFor();
      // The agent is bound once its address shows: a walk sent before that would time out.
      await w.page.getByTestId('simulator-status').getByText(`udp 127.0.0.1:${simPort}`).waitFor();

      await w.page.getByRole('link', { name: 'Walker' }).click();
      const form = w.page.getByRole('form', { name: 'walk' });
      await form.locator('input[name="port"]').fill(String(simPort));
      await form.locator('input[name="oid"]').fill('IF-MIB::ifTable');
      await form.getByRole('button', { name: 'Walk' }).click();
      const result = w.page.getByTestId('walk-result');
      await result.locator('[data-table="IF-MIB::ifTable"]').waitFor();

      // The same walk to a port where nothing listens: an error, and no table of the walk before.
      const closed = await freePort();
      await form.locator('input[name="port"]').fill(String(closed));
      await form.locator('input[name="timeout_ms"]').fill('500');
      await form.getByRole('button', { name: 'Walk' }).click();
      const error = w.page.getByRole('alert');
      await error.waitFor();
      expect(await error.textContent()).toMatch(new RegExp(`udp 127\\.0\\.0\\.1:${closed}`));
      await expect.poll(() => result.count()).toBe(0);
      await w.shot('console-walker-failed');

      // A walk that works again shows its tables and no error.
      await form.locator('input[name="port"]').fill(String(simPort));
      await form.getByRole('button', { name: 'Walk' }).click();
      await result.locator('[data-table="IF-MIB::ifTable"]').waitFor();
      expect(await w.page.getByRole('alert').count()).toBe(0);
      await w.page.getByRole('link', { name: 'Simulator' }).click();
      await w.page.getByRole('button', { name: 'Stop', exact: true }).click();
      await w.page.locator('h1 .badge', { hasText: 'stopped' }).waitFor();
      expect(unexpected(w.problems)).toEqual([]);
    });

    it('a simulator state that arrives after the user typed a port does not put the old port back', async () => {
      // A page of its own: its WebSocket and status request are held until the port is typed, as
      // on a loaded machine where the socket's first full_state comes late.
      const page = await browser.newPage();
      try {
        await signInToConsole(page);
        await page.getByRole('link', { name: 'Simulator' }).click();
        await page.locator('h1', { hasText: 'SNMP simulator' }).waitFor();
        let release!: () => void;
        const held = new Promise<void>((resolve) => {
          release = resolve;
        });
        await page.routeWebSocket(/\/api\/ws/, (ws) => {
          const server = ws.connectToServer();
          server.onMessage(async (message) => {
            await held;
            ws.send(message);
          });
        });
        await page.route('**/api/simulator/status', async (route) => {
          await held;
          await route.continue();
        });
        await page.reload();
        await page.locator('h1', { hasText: 'SNMP simulator' }).waitFor();
        expect(await page.locator('h1 .badge').textContent()).toBe('…');
        const port = page.getByRole('form', { name: 'start simulator' }).locator('input[name="port"]');
        await port.fill('16161');
        release();
        await page.locator('h1 .badge', { hasText: 'stopped' }).waitFor();
        expect(await port.inputValue()).toBe('16161');
      } finally {
        await page.close();
      }
    });

    it('#/plugins/sink/<key> opens the plugin like #/plugins/sinks/<key>; a plugin or a kind that does not exist says so', async () => {
      w.problems.length = 0;
      await w.page.goto(`${svc.url}/ui/#/plugins/sink/local`);
      await w.page.locator('h1', { hasText: 'sink local' }).waitFor();
      await w.page.getByTestId('plugin-params').waitFor();
      await w.shot('plugin-sink-singular');

      await w.page.goto(`${svc.url}/ui/#/plugins/source/mqtt`);
      await w.page.locator('h1', { hasText: 'source mqtt' }).waitFor();

      await w.page.goto(`${svc.url}/ui/#/plugins/sinks/no-such-sink`);
      const missing = w.page.getByTestId('plugin-missing');
      await missing.waitFor();
      expect(await missing.textContent()).toBe("This daemon has no sink 'no-such-sink'.");
      // The list to pick from is below.
      await w.page.locator('.plugin-list li', { hasText: 'local' }).first().waitFor();
      await w.shot('plugin-missing');

      await w.page.goto(`${svc.url}/ui/#/plugins/widgets/local`);
      await expect.poll(() => missing.textContent()).toBe("'widgets' is not a kind of plugin: the kinds are sources, sinks, serializers, transforms.");
      expect(w.problems).toEqual([]);
    });

    it('the Runs charts draw one series per pipeline, zoomed to the runs', async () => {
      const pipeline = (name: string) => {
        const dir = join(svc.dir, name);
        mkdirSync(join(dir, 'in'), { recursive: true });
        writeFileSync(join(dir, 'in', 'a.ndjson'), Array.from({ length: 50 }, (_, i) => JSON.stringify({ i })).join('\n') + '\n');
        return [
          'version: "1"',
          'pipeline:',
          `  name: ${name}`,
          '  schedule: { type: manual }',
          `  source: { type: local, path: ${JSON.stringify(join(dir, 'in'))} }`,
          '  serializer_in: { type: ndjson }',
          '  serializer_out: { type: ndjson }',
          `  sinks: [{ type: local, path: ${JSON.stringify(join(dir, 'out'))} }]`,
          '',
        ].join('\n');
      };
      for (const name of ['chart-alpha', 'chart-beta']) {
        const created = await fetch(`${svc.url}/api/pipelines`, { method: 'POST', headers: { 'content-type': 'application/yaml' }, body: pipeline(name) });
        expect(created.status).toBe(201);
        for (let i = 0; i < 2; i++) {
          expect((await fetch(`${svc.url}/api/pipelines/${name}/run`, { method: 'POST' })).status).toBe(202);
          await until(async () => {
            const runs = (await (await fetch(`${svc.url}/api/runs?pipeline=${name}`)).json()) as { status: string }[];
            return runs.length === i + 1 && runs.every((r) => r.status !== 'running');
          }, 20_000);
        }
      }
      w.problems.length = 0;
      await w.page.goto(`${svc.url}/ui/#/runs`);
      const legend = w.page.getByTestId('chart-rate').locator('.u-legend');
      await legend.waitFor();
      await expect.poll(async () => (await legend.textContent()) ?? '').toMatch(/chart-alpha.*chart-beta/s);
      expect(await w.page.getByTestId('chart-duration').locator('.u-legend').textContent()).toMatch(/chart-alpha.*chart-beta/s);
      await w.shot('runs-charts-per-pipeline');
      expect(w.problems).toEqual([]);
    });

    it("the console's Stats page charts the counters as rates over time", async () => {
      const login = await fetch(`${svc.consoleUrl}/api/settings/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'ops', password: 'console-pass' }),
      });
      const { token } = (await login.json()) as { token: string };
      const pushed = await fetch(`${svc.consoleUrl}/api/settings/app`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-auth-token': token },
        body: JSON.stringify({ stats_push_interval_s: 1 }),
      });
      expect(pushed.status).toBe(200);
      w.problems.length = 0;
      await w.page.goto(`${svc.consoleUrl}/ui/#/stats`);
      await w.page.locator('h1', { hasText: 'Stats' }).waitFor();
      for (const id of ['chart-simulator', 'chart-traps', 'chart-walker']) await w.page.getByTestId(id).locator('canvas').waitFor({ timeout: 20_000 });
      expect(await w.page.getByTestId('chart-simulator').locator('.u-legend').textContent()).toMatch(/get.*getnext.*getbulk.*set.*errors/s);
      await w.shot('console-stats-charts');
      expect(w.problems).toEqual([]);
    });
  });
}

/** Signs in to the console as the suite's user, unless the page's session is signed in already. */
async function signInToConsole(page: Page) {
  await page.goto(`${svc.consoleUrl}/ui/`);
  const form = page.locator('form', { has: page.locator('input[name="username"]') });
  await page.locator('h1, input[name="username"]').first().waitFor();
  if (await form.locator('input[name="username"]').isVisible()) {
    await form.locator('input[name="username"]').fill('ops');
    await form.locator('input[name="password"]').fill('console-pass');
    await form.getByRole('button', { name: 'Sign in' }).click();
  }
}
