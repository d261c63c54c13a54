// (Run by test/ui/e2e.test.ts.) The operator console's web UI in a real browser against a real `svc serve` (its console port):
// sign in (X-Auth-Token, WebSocket ?token=), flow 3 of issue 16 (start the simulator, walk it, see
// ifTable as a table, raw and parsed, with its CSV), the live activity log and stats, and every
// console page loading with no console error and no CSP violation. Screenshots in test-results/ui/.
import { readFileSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/daemon.js';
import { launch, watchedPage, type WatchedPage } from '../browser.js';
import { serve, type Served } from '../serve.js';
import { builtUi } from '../ui-build.js';

let browser: Browser;
let w: WatchedPage;
let svc: Served;
let simPort: number;

export function consoleSuite() {
  describe('the console UI', () => {
    beforeAll(async () => {
      svc = await serve({ SVC_UI_DIR: await builtUi(), SVC_AUTH_USERS: 'ops:console-pass' });
      simPort = await freePort();
      browser = await launch();
      w = await watchedPage(browser);
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      await svc?.stop();
    });

    describe('the console UI', () => {
      it('asks for a console session first, then connects the live channel', async () => {
        await w.page.goto(`${svc.consoleUrl}/ui/`);
        const form = w.page.locator('form', { has: w.page.locator('input[name="username"]') });
        await form.waitFor();
        expect(await w.page.locator('h1').textContent()).toBe('svc operator console');
        await form.locator('input[name="username"]').fill('ops');
        await form.locator('input[name="password"]').fill('console-pass');
        await form.getByRole('button', { name: 'Sign in' }).click();
        await w.page.locator('h1', { hasText: 'SNMP simulator' }).waitFor();
        await w.page.getByTestId('socket-state').getByText('live: open').waitFor();
        // The simulator's state came over the WebSocket (full_state).
        await w.page.locator('h1 .badge', { hasText: 'stopped' }).waitFor();
        expect(w.problems).toEqual([]);
      });

      it('flow 3: starts the simulator, walks it, and shows ifTable pivoted by index, parsed and raw, with CSV', async () => {
        const start = w.page.getByRole('form', { name: 'start simulator' });
        await start.locator('input[name="port"]').fill(String(simPort));
        await start.getByRole('button', { name: 'Start' }).click();
        await w.page.locator('h1 .badge', { hasText: 'running' }).waitFor();
        await w.page.getByTestId('simulator-status').getByText(`udp 127.0.0.1:${simPort}`).waitFor();

        await w.page.getByRole('link', { name: 'Walker' }).click();
        const form = w.page.getByRole('form', { name: 'walk' });
        await form.locator('input[name="port"]').fill(String(simPort));
        await form.locator('input[name="oid"]').fill('IF-MIB::ifTable');
        await form.getByRole('button', { name: 'Walk' }).click();
        const table = w.page.locator('[data-table="IF-MIB::ifTable"]');
        await table.waitFor();
        const headers = await table.locator('thead th').allTextContents();
        expect(headers.slice(0, 3)).toEqual(['Index', 'ifIndex', 'ifDescr']);
        expect(headers).toEqual(expect.arrayContaining(['ifOperStatus', 'ifInOctets']));
        const rows = table.locator('tbody tr');
        expect(await rows.count()).toBeGreaterThan(0);
        expect(await rows.first().locator('td').first().textContent()).toBe('1');
        // Parsed with MIB labels: an enumerated status reads as label(value).
        expect(await table.locator('tbody').textContent()).toMatch(/up\(1\)|down\(2\)/);
        await w.shot('console-walker');

        const [download] = await Promise.all([w.page.waitForEvent('download'), table.getByRole('button', { name: 'CSV' }).click()]);
        expect(download.suggestedFilename()).toBe('ifTable.csv');
        const csv = readFileSync((await download.path())!, 'utf8').split('\r\n');
        expect(csv[0]).toMatch(/^index,ifIndex,ifDescr,/);
        expect(csv.length - 2).toBe(await rows.count());

        await w.page.getByRole('button', { name: 'Raw' }).click();
        await expect.poll(() => table.locator('tbody').textContent()).toMatch(/INTEGER: /);
        await w.shot('console-walker-raw');
        expect(w.problems).toEqual([]);
      });

      it('shows the walk in the simulator activity log and the stats, live', async () => {
        await w.page.getByRole('link', { name: 'Simulator' }).click();
        const activity = w.page.getByTestId('activity');
        await activity.waitFor();
        expect(await activity.textContent()).toContain('getbulk');
        await w.shot('console-simulator');
        await w.page.getByRole('link', { name: 'Stats' }).click();
        const stats = w.page.getByTestId('stats');
        await expect.poll(() => stats.textContent()).toMatch(/walks2oids\d+errors0/); // the parsed walk and the raw one
        await w.shot('console-stats');
        expect(w.problems).toEqual([]);
      });

      it('every console page loads with no console error and no CSP violation', async () => {
        for (const [name, hash, heading] of [
          ['console-simulator-fresh', '#/simulator', 'SNMP simulator'],
          ['console-walker-fresh', '#/walker', 'Walker'],
          ['console-stats-fresh', '#/stats', 'Stats'],
        ] as const) {
          w.problems.length = 0;
          await w.page.goto('about:blank');
          await w.page.goto(`${svc.consoleUrl}/ui/${hash}`);
          await w.page.locator('h1', { hasText: heading }).waitFor();
          await w.page.getByTestId('socket-state').getByText('live: open').waitFor();
          await w.shot(name);
          expect(w.problems, name).toEqual([]);
        }
      });
    });
  });
}
