// (Run by test/ui/e2e.test.ts.) The pipeline graph and the Live tab (issue 29, items 2 and 3) in a
// real browser against a real `svc serve`: a webhook stream with a filter, a transform that fails
// on some records, two sinks (one with a condition) and a DLQ. The graph shows each stage's figures
// and follows a feed at a known rate; the Live tab shows the records passing a stage, newest
// first, a filter narrows them, a bad filter is explained, and a stopped pipeline is waited for.
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/daemon.js';
import { pace, until } from '../../helpers/wait.js';
import { launch, watchedPage, type WatchedPage } from '../browser.js';
import { serve, type Served } from '../serve.js';
import { builtUi } from '../ui-build.js';

let browser: Browser;
let w: WatchedPage;
let daemon: Served;

const NAME = 'graph-alarms';

async function api(method: string, path: string, body?: string, type = 'application/yaml'): Promise<any> {
  const res = await fetch(`${daemon.url}${path}`, { method, headers: body ? { 'content-type': type } : {}, body });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Alarm `id`: every fifth is `info` (the filter drops it), every third `major` (sinks[0] takes it); `bad` fails the second transform. */
const alarm = (id: number, bad = false) => ({ id, severity: id % 5 === 0 ? 'info' : id % 3 === 0 ? 'major' : 'minor', n: bad ? 'not a number' : id });

async function post(...alarms: object[]) {
  for (const a of alarms) await api('POST', `/webhooks/${NAME}`, JSON.stringify(a), 'application/json');
}

/** Posts one alarm every `gapMs` (a known rate) until stopped; returns how many it posted. */
function feeder(from: number, gapMs: number) {
  let on = true;
  let n = 0;
  const done = (async () => {
    while (on) {
      await post(alarm(from + n));
      n++;
      await pace(gapMs);
    }
  })();
  return {
    stop: async () => {
      on = false;
      await done;
      return n;
    },
  };
}

const expectedConsoleErrors = (p: string) => !/WebSocket connection to .*\/tap\?.* failed|status of 400/.test(p);

export function graphSuite() {
  describe('the pipeline graph and the Live tab', () => {
    beforeAll(async () => {
      daemon = await serve({ SVC_UI_DIR: await builtUi() });
      const out = JSON.stringify(join(daemon.dir, 'out'));
      await api(
        'POST',
        '/api/pipelines',
        `version: "1"
pipeline:
  name: ${NAME}
  schedule: { type: stream }
  source: { type: webhook, path: ${NAME} }
  serializer_in: { type: json }
  serializer_out: { type: ndjson }
  on_error: dlq
  transforms:
    - { type: filter, expression: "severity != 'info'" }
    - { type: add_field, fields: { next: "n + 1" } }
  sinks:
    - { type: local, path: ${out}, filename_template: major.ndjson, condition: "severity == 'major'" }
    - { type: local, path: ${out}, filename_template: all.ndjson }
  dlq: { type: local, path: ${JSON.stringify(join(daemon.dir, 'dlq'))}, filename_template: dlq.ndjson }
`,
      );
      await until(async () => (await api('GET', `/api/pipelines/${NAME}`)).active_run_id, 15_000, 'the stream to start', 100);
      browser = await launch();
      w = await watchedPage(browser);
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      await daemon?.stop();
    });

    const box = (id: string) => w.page.getByTestId(`graph-${id}`);

    it("draws the pipeline with each stage's figures, and follows a stream fed at a known rate", async () => {
      await w.page.goto(`${daemon.url}/ui/#/pipelines/${NAME}`);
      await expect.poll(() => w.page.getByTestId('graph-state').textContent(), { timeout: 8000 }).toContain('no records delivered yet');
      // The configuration is drawn before any record: each sink with its condition.
      await expect.poll(() => box('sink0').textContent()).toContain("if severity == 'major'");
      expect(await box('sink1').textContent()).toContain('every record');
      expect(await box('t0').textContent()).toContain("severity != 'info'");

      // 1 to 10: 5 and 10 are info (dropped by the filter), 7 fails the add_field: 7 written to all, 3 (3, 6, 9) to major.
      await post(...[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((i) => alarm(i, i === 7)));
      await expect.poll(() => box('source').textContent(), { timeout: 8000 }).toContain('records 10 ·');
      await expect.poll(() => w.page.getByTestId('graph-state').textContent()).toContain('live, refreshed every 2 s');
      await expect.poll(() => box('t0').textContent()).toContain('in 10 → out 8');
      await expect.poll(() => box('t1').textContent()).toContain('in 8 → out 7');
      expect(await box('t1').textContent()).toContain('errors 1');
      expect(await box('t1').locator('.tone-bad').textContent()).toBe('errors 1');
      await expect.poll(() => box('sink0').textContent()).toContain('matched 3');
      expect(await box('sink0').textContent()).toContain('written 3 ·');
      expect(await box('sink1').textContent()).toContain('written 7 ·');
      await expect.poll(() => box('dlq').textContent()).toContain('records 1 ·');
      expect(await box('dlq').textContent()).toContain('from parse 0 · transform 1');

      // A feed of 10 alarms a second: the source's count and rate move without a reload.
      const feed = feeder(100, 100);
      try {
        await expect
          .poll(async () => Number(/records ([\d,]+)/.exec((await box('source').textContent()) ?? '')?.[1]?.replace(/,/g, '')), { timeout: 15_000 })
          .toBeGreaterThanOrEqual(30);
        await expect
          .poll(async () => Number(/records [\d,]+ · ([\d.]+)\/s/.exec((await box('source').textContent()) ?? '')?.[1]), { timeout: 8000 })
          .toBeGreaterThan(1);
        await w.shot('graph-live');
      } finally {
        const n = await feed.stop();
        expect(n).toBeGreaterThanOrEqual(20);
      }
    });

    it('shows the records passing a stage, newest first; a filter narrows them; a bad filter is explained', async () => {
      // The sink's box links to the Live tab at that stage.
      await box('sink1').click();
      await w.page.waitForURL(/#\/pipelines\/graph-alarms\?tab=live&stage=1$/);
      const tap = w.page.getByTestId('tap');
      expect(await tap.getByTestId('tap-stage').inputValue()).toBe('1');
      // The editor stays mounted (hidden), so unsaved text would survive.
      expect(await w.page.getByTestId('yaml-editor').isHidden()).toBe(true);
      await tap.getByRole('button', { name: 'Start' }).click();
      await expect.poll(() => tap.getByTestId('tap-status').textContent(), { timeout: 8000 }).toContain('the pipeline is running');
      await post(alarm(201), alarm(202), alarm(203));
      const rows = tap.getByTestId('tap-records').locator('li');
      await expect.poll(() => rows.count(), { timeout: 8000 }).toBe(3);
      // Newest first, as the sink got them (after the transforms: `next` added).
      expect(await rows.nth(0).locator('summary code').textContent()).toBe('{"id":203,"severity":"minor","n":203,"next":204}');
      expect(await rows.nth(2).locator('summary code').textContent()).toContain('"id":201');
      await rows.nth(0).locator('summary').click();
      expect(await rows.nth(0).locator('pre').textContent()).toContain('\n  "severity": "minor",\n');
      expect(await tap.getByTestId('tap-counts').textContent()).toContain('3 records received');
      await w.shot('live-tab');
      await tap.getByRole('button', { name: 'Stop' }).click();
      await expect.poll(() => tap.getByTestId('tap-status').textContent()).toContain('Stopped');

      // A filter: only the major ones of the next six.
      await tap.getByRole('button', { name: 'Clear' }).click();
      await tap.getByTestId('tap-stage').selectOption('transforms');
      await tap.getByTestId('tap-filter').fill("severity == 'major'");
      await tap.getByRole('button', { name: 'Start' }).click();
      await expect.poll(() => tap.getByTestId('tap-status').textContent(), { timeout: 8000 }).toContain('the pipeline is running');
      await post(...[211, 212, 213, 214, 216, 217].map((i) => alarm(i)));
      await expect.poll(() => rows.count(), { timeout: 8000 }).toBe(2);
      expect(await rows.allTextContents()).toEqual([expect.stringContaining('"id":216'), expect.stringContaining('"id":213')]);
      await w.shot('live-tab-filtered');
      await tap.getByRole('button', { name: 'Stop' }).click();

      // A filter that does not compile: the server's reason, said before any record.
      await tap.getByTestId('tap-filter').fill('severity ==');
      await tap.getByRole('button', { name: 'Start' }).click();
      await expect.poll(() => tap.getByTestId('tap-status').textContent(), { timeout: 8000 }).toContain('Could not open the tap:');
      expect(await tap.getByTestId('tap-message').textContent()).toMatch(/^filter: /);
      await w.shot('live-tab-bad-filter');
      expect(w.problems.filter(expectedConsoleErrors)).toEqual([]);
    });

    it('marks an open circuit breaker in red, and cuts a long condition to its box with the whole in its tooltip', async () => {
      const condition = "severity == 'major' and region in ['north', 'south', 'east', 'west']";
      await api(
        'POST',
        '/api/pipelines',
        `version: "1"
pipeline:
  name: breaker
  schedule: { type: stream }
  source: { type: webhook, path: breaker }
  serializer_in: { type: json }
  on_error: continue
  sinks:
    - { type: rest, url: "http://127.0.0.1:${await freePort()}/nobody", retry_count: 0, circuit_breaker_threshold: 1, condition: ${JSON.stringify(condition)} }
`,
      );
      await until(async () => (await api('GET', '/api/pipelines/breaker')).active_run_id, 15_000, 'the stream to start', 100);
      await w.page.goto(`${daemon.url}/ui/#/pipelines/breaker`);
      for (const region of ['north', 'south']) await api('POST', '/webhooks/breaker', JSON.stringify({ severity: 'major', region }), 'application/json');
      const sink = box('sink0');
      await expect.poll(() => sink.textContent(), { timeout: 15_000 }).toContain('circuit OPEN: writes skipped');
      expect(await sink.getAttribute('class')).toContain('graph-alert');
      expect(await sink.textContent()).toMatch(/failed [12] · retries 0/);
      const cut = sink.locator('text', { hasText: 'if severity' });
      expect(await cut.locator('tspan').textContent()).toMatch(/^if severity == 'major' and \S*…$/);
      expect(await cut.locator('title').textContent()).toBe(`if ${condition}`);
      await w.shot('graph-circuit-open');
      await api('POST', '/api/pipelines/breaker/stop');
    });

    it('draws a stopped pipeline from its config, and the Live tab waits for it to run', async () => {
      await api('POST', `/api/pipelines/${NAME}/stop`);
      await w.page.goto(`${daemon.url}/ui/#/pipelines/${NAME}`);
      await expect.poll(() => w.page.getByTestId('graph-state').textContent(), { timeout: 15_000 }).toContain('not running');
      expect(await box('source').textContent()).not.toContain('records');
      expect(await box('sink0').textContent()).toContain("if severity == 'major'");
      await w.shot('graph-stopped');

      await w.page.getByTestId('tab-live').click();
      const tap = w.page.getByTestId('tap');
      await tap.getByTestId('tap-filter').fill('');
      await tap.getByRole('button', { name: 'Start' }).click();
      await expect.poll(() => tap.getByTestId('tap-status').textContent(), { timeout: 8000 }).toContain('waiting for it to run');
      await api('POST', `/api/pipelines/${NAME}/start`);
      await expect.poll(() => tap.getByTestId('tap-status').textContent(), { timeout: 15_000 }).toContain('the pipeline is running');
      await post(alarm(301));
      await expect.poll(() => tap.getByTestId('tap-records').locator('li').count(), { timeout: 8000 }).toBe(1);
      await tap.getByRole('button', { name: 'Stop' }).click();
      expect(w.problems.filter(expectedConsoleErrors)).toEqual([]);
    });

    it('behind SVC_API_KEY, taps with the session token of the signed-in user; with a pasted API key, says to sign in', async () => {
      const key = 'the-key';
      const guarded = await serve({ SVC_UI_DIR: await builtUi(), SVC_API_KEY: key, SVC_AUTH_USERS: 'ops:s3cret', SVC_AUTH_SECRET: 'ui-test-secret' });
      const g = await watchedPage(browser);
      try {
        const made = await fetch(`${guarded.url}/api/pipelines`, {
          method: 'POST',
          headers: { 'content-type': 'application/yaml', 'x-api-key': key },
          body: `version: "1"
pipeline:
  name: guarded
  schedule: { type: stream }
  source: { type: webhook, path: guarded }
  serializer_in: { type: json }
  serializer_out: { type: ndjson }
  sinks: [{ type: local, path: ${JSON.stringify(join(guarded.dir, 'out'))}, filename_template: out.ndjson }]
`,
        });
        expect(made.status).toBe(201);
        await g.page.goto(`${guarded.url}/ui/#/pipelines/guarded?tab=live`);
        const form = g.page.locator('form', { has: g.page.locator('input[name="username"]') });
        await form.locator('input[name="username"]').fill('ops');
        await form.locator('input[name="password"]').fill('s3cret');
        await form.getByRole('button', { name: 'Sign in' }).click();
        const tap = g.page.getByTestId('tap');
        await tap.getByRole('button', { name: 'Start' }).click();
        await expect.poll(() => tap.getByTestId('tap-status').textContent(), { timeout: 15_000 }).toMatch(/Tapping: the pipeline is (running|not running)/);
        await until(
          async () =>
            (
              await fetch(`${guarded.url}/api/pipelines/guarded`, { headers: { 'x-api-key': key } }).then(
                (r) => r.json() as Promise<{ active_run_id: string | null }>,
              )
            ).active_run_id,
          15_000,
          'the stream to start',
          100,
        );
        await fetch(`${guarded.url}/webhooks/guarded`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"signed":"in"}' });
        await expect.poll(() => tap.getByTestId('tap-records').locator('summary code').allTextContents(), { timeout: 8000 }).toEqual(['{"signed":"in"}']);
        await tap.getByRole('button', { name: 'Stop' }).click();
        // The only console errors are the 401s of the calls made before signing in.
        expect(g.problems.filter((p) => !/status of 401/.test(p))).toEqual([]);

        // An API key pasted for the tab cannot go on a WebSocket: the tab says what to do instead.
        await g.page.evaluate(`sessionStorage.setItem('svc.credential', JSON.stringify({ kind: 'key', value: '${key}' }))`);
        await g.page.reload();
        await g.page.getByTestId('tap').waitFor();
        await g.page.getByText('The Live tab needs a signed-in session').waitFor();
        expect(await g.page.getByTestId('tap').getByRole('button', { name: 'Start' }).isDisabled()).toBe(true);
        await g.shot('live-tab-api-key');
      } finally {
        await g.page.context().close();
        await guarded.stop();
      }
    });
  });
}
