// (Run by test/ui/e2e.test.ts.) Live counters (issue 29) in a real browser against a real
// `svc serve`: a webhook stream fed by the test shows its counts and records/s on the Pipelines
// page, the Runs page and the run's page while it runs, the pages follow when more records come,
// and after the stop the run's final counts equal the sink's lines.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/wait.js';
import { launch, watchedPage, type WatchedPage } from '../browser.js';
import { serve, type Served } from '../serve.js';
import { builtUi } from '../ui-build.js';

let browser: Browser;
let w: WatchedPage;
let daemon: Served;
let runId: string;

async function api(method: string, path: string, body?: string, type = 'application/yaml'): Promise<any> {
  const res = await fetch(`${daemon.url}${path}`, { method, headers: body ? { 'content-type': type } : {}, body });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** `n` alarms posted to the stream's webhook, one request each. */
async function feed(from: number, n: number) {
  for (let i = from; i < from + n; i++)
    await api('POST', '/webhooks/live-alarms', JSON.stringify({ id: i, severity: i % 3 ? 'minor' : 'major' }), 'application/json');
}

const sinkLines = () => {
  try {
    return readFileSync(join(daemon.dir, 'out', 'alarms.ndjson'), 'utf8')
      .split('\n')
      .filter(Boolean).length;
  } catch {
    return 0;
  }
};

export function liveSuite() {
  describe('live counters in the UI', () => {
    beforeAll(async () => {
      const uiDir = await builtUi();
      daemon = await serve({ SVC_UI_DIR: uiDir });
      await api(
        'POST',
        '/api/pipelines',
        `version: "1"
pipeline:
  name: live-alarms
  schedule: { type: stream }
  source: { type: webhook, path: live-alarms }
  serializer_in: { type: json }
  serializer_out: { type: ndjson }
  sinks: [{ type: local, path: ${JSON.stringify(join(daemon.dir, 'out'))}, filename_template: alarms.ndjson }]
`,
      );
      runId = await until(async () => (await api('GET', '/api/pipelines/live-alarms')).active_run_id, 15_000, 'the stream to start', 100);
      browser = await launch();
      w = await watchedPage(browser);
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      await daemon?.stop();
    });

    it("the Pipelines page shows the running stream's counts and records/s, and follows it", async () => {
      await feed(0, 7);
      await w.page.goto(`${daemon.url}/ui/#/pipelines`);
      const row = w.page.locator('tr[data-pipeline="live-alarms"]');
      const cells = row.locator('td.num');
      // Records in, records out (the last hour, the running run included), then the live rate.
      await expect.poll(() => cells.nth(0).textContent(), { timeout: 8000 }).toBe('7');
      await expect.poll(() => cells.nth(1).textContent(), { timeout: 8000 }).toBe('7');
      await expect.poll(() => row.getByTestId('live-rate').textContent(), { timeout: 8000 }).toMatch(/[\d.]+\/s · [\d.]+\/s/);
      await expect.poll(() => row.locator('.live-dot').count()).toBe(1);
      await w.shot('live-pipelines');
      // More records: the page follows without a reload.
      await feed(7, 5);
      await expect.poll(() => cells.nth(0).textContent(), { timeout: 8000 }).toBe('12');
      await expect.poll(() => cells.nth(1).textContent(), { timeout: 8000 }).toBe('12');
    });

    it("the Runs page shows the running run's counts with records/s under them", async () => {
      await w.page.goto(`${daemon.url}/ui/#/runs`);
      const row = w.page.locator(`tr[data-run="${runId}"]`);
      await row.waitFor();
      await expect.poll(() => row.locator('.badge').textContent()).toBe('running');
      await expect.poll(() => row.getByTestId('run-in').textContent(), { timeout: 8000 }).toMatch(/^12[\d.]+\/s$/);
      await feed(12, 3);
      await expect.poll(() => row.getByTestId('run-in').textContent(), { timeout: 8000 }).toMatch(/^15[\d.]+\/s$/);
      await expect.poll(() => row.getByTestId('run-out').textContent(), { timeout: 8000 }).toMatch(/^15[\d.]+\/s$/);
      await w.shot('live-runs');
    });

    it("the run's page shows live rates while it runs, and the exact final counts after the stop", async () => {
      await w.page.goto(`${daemon.url}/ui/#/runs/${runId}`);
      const facts = w.page.getByTestId('run-facts');
      await expect.poll(() => facts.textContent(), { timeout: 8000 }).toContain('15 / 15 / 0');
      await expect.poll(() => w.page.getByTestId('run-live-rate').textContent()).toMatch(/[\d.]+\/s \/ [\d.]+\/s/);
      await w.shot('live-run-detail');
      await api('POST', '/api/pipelines/live-alarms/stop');
      await expect.poll(async () => (await w.page.locator('h1 .badge').textContent()) ?? '', { timeout: 15_000 }).toBe('success');
      expect(sinkLines()).toBe(15);
      await expect.poll(() => facts.textContent()).toContain('15 / 15 / 0');
      await expect.poll(() => w.page.getByTestId('run-live-rate').count()).toBe(0);
      expect(w.problems).toEqual([]);
    });
  });
}
