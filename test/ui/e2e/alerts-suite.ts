// (Run by test/ui/e2e.test.ts.) Alert delivery history (issue 29) in a real browser against a real
// `svc serve`: a rule whose webhook receiver refuses the connection and one whose receiver answers
// 200, both fired by two runs. The Alerts page marks the failing rule (badge, row colour, a banner)
// with its last error readable and when it last fired, shows the good one delivered, and the
// History button lists the failing rule's deliveries with their attempts. The URL's password and
// token appear nowhere on the page.
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/daemon.js';
import { until } from '../../helpers/wait.js';
import { launch, watchedPage, type WatchedPage } from '../browser.js';
import { serve, type Served } from '../serve.js';
import { builtUi } from '../ui-build.js';

let browser: Browser;
let w: WatchedPage;
let daemon: Served;
let receiver: Server;

async function api(method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${daemon.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': typeof body === 'string' ? 'application/yaml' : 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

export function alertsSuite() {
  describe('the Alerts page with delivery history', () => {
    beforeAll(async () => {
      daemon = await serve({ SVC_UI_DIR: await builtUi() });
      browser = await launch();
      w = await watchedPage(browser);
      receiver = createServer((req, res) => {
        req.resume();
        req.on('end', () => res.writeHead(200).end('ok'));
      });
      await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      await daemon?.stop();
      await new Promise((r) => receiver?.close(r));
    });

    it('a failing rule stands out with its last error; its history lists the attempts', async () => {
      const root = join(daemon.dir, 'ifstats');
      mkdirSync(join(root, 'in'), { recursive: true });
      writeFileSync(join(root, 'in', 'a.ndjson'), '{"ifIndex":1}\n{"ifIndex":2}\n');
      await api(
        'POST',
        '/api/pipelines',
        [
          'version: "1"',
          'pipeline:',
          '  name: ifstats',
          '  schedule: { type: manual }',
          `  source: { type: local, path: ${JSON.stringify(join(root, 'in'))}, file_pattern: "*.ndjson" }`,
          '  serializer_in: { type: ndjson }',
          '  serializer_out: { type: ndjson }',
          `  sinks: [{ type: local, path: ${JSON.stringify(join(root, 'out'))} }]`,
        ].join('\n'),
      );
      const refused = await freePort();
      const good = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/alerts`;
      await api('POST', '/api/pipelines/ifstats/alerts', {
        name: 'noc-webhook',
        condition: 'records_in > 0',
        action: 'webhook',
        webhook_url: `http://noc:hunter2pw@127.0.0.1:${refused}/hook?token=t0ps3cr3t`,
        cooldown_seconds: 0,
      });
      await api('POST', '/api/pipelines/ifstats/alerts', {
        name: 'chatops',
        condition: 'records_in > 0',
        action: 'webhook',
        webhook_url: good,
        cooldown_seconds: 0,
      });
      await api('POST', '/api/pipelines/ifstats/alerts', {
        name: 'run-failed',
        condition: 'failed',
        action: 'webhook',
        webhook_url: good,
        cooldown_seconds: 0,
      });
      for (let i = 1; i <= 2; i++) {
        const { run_id } = await api('POST', '/api/pipelines/ifstats/run');
        await until(
          async () => {
            const rules = (await api('GET', '/api/pipelines/ifstats/alerts')) as { name: string; last_deliveries: { run_id: string }[] }[];
            return rules.filter((r) => r.last_deliveries[0]?.run_id === run_id).length === 2;
          },
          20_000,
          `the deliveries of run ${i}`,
        );
      }

      await w.page.goto(`${daemon.url}/ui/#/alerts`);
      const failing = w.page.locator('tr[data-rule="noc-webhook"]');
      await expect.poll(() => failing.getAttribute('data-delivery')).toBe('failing');
      expect(await failing.getAttribute('class')).toContain('row-failing');
      expect(await failing.getByTestId('delivery-failing').textContent()).toBe('failing ×2');
      expect(await failing.getByTestId('delivery-error').textContent()).toMatch(/^connection failed: .*ECONNREFUSED/);
      expect(await failing.textContent()).toContain('last delivered: never');
      // The table shows the rule's URL without its password and with its token masked.
      expect(await failing.textContent()).toContain(`http://127.0.0.1:${refused}/hook?token=***`);
      expect(await w.page.getByTestId('alerts-failing').textContent()).toBe('1 rule is failing to deliver: ifstats/noc-webhook');
      // The good rule: delivered, not marked; the rule whose condition never matched: never.
      const delivered = w.page.locator('tr[data-rule="chatops"]');
      expect(await delivered.getAttribute('data-delivery')).toBe('delivered');
      expect(await delivered.locator('.badge').textContent()).toBe('delivered');
      expect(await delivered.getAttribute('class')).toBeNull();
      expect(await w.page.locator('tr[data-rule="run-failed"]').textContent()).toContain('never');

      await failing.getByRole('button', { name: 'History' }).click();
      const history = w.page.getByTestId('delivery-history');
      await history.waitFor();
      const rows = history.locator('tbody tr');
      expect(await rows.count()).toBe(2);
      expect(await rows.locator('.badge').allTextContents()).toEqual(['failed', 'failed']);
      expect(await rows.locator('td.num').allTextContents()).toEqual(['2', '1']);
      expect(await history.textContent()).toContain(`127.0.0.1:${refused}/hook?token=***`);
      const page = (await w.page.locator('main, body').first().textContent()) ?? '';
      expect(page).not.toContain('hunter2pw');
      expect(page).not.toContain('t0ps3cr3t');
      await w.shot('alerts-failing');
      expect(w.problems).toEqual([]);
    });
  });
}
