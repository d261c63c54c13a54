// (Run by test/ui/e2e.test.ts.) The daemon's web UI in a real browser (Debian's Chromium through playwright-core) against a real
// `svc serve` on loopback: flow 1 of issue 16 (write a pipeline, see the typo's diagnostic at its
// line, fix it, save, run, see the run in the history and its chart), then every page loads with
// no console error and no CSP violation. Screenshots of every page land in test-results/ui/.
// The tests of this file share one daemon and one browser and run in order.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launch, watchedPage, type WatchedPage } from '../browser.js';
import { serve, type Served } from '../serve.js';
import { builtUi } from '../ui-build.js';

let browser: Browser;
let w: WatchedPage;
let base: string;
let work: string;
let daemon: Served;

export function daemonSuite() {
  describe('the daemon UI', () => {
    beforeAll(async () => {
      const uiDir = await builtUi();
      daemon = await serve({ SVC_UI_DIR: uiDir });
      base = daemon.url;
      work = daemon.dir;
      mkdirSync(join(work, 'in'));
      writeFileSync(join(work, 'in', 'cells.csv'), 'cell,rsrp\nA1,-91\nA2,-97\nB1,-88\nB2,-102\nC1,-95\n');
      browser = await launch();
      w = await watchedPage(browser);
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      await daemon?.stop();
    });

    const pipelineYaml = (typo: boolean) => `version: "1"
pipeline:
  name: flow-one
  description: Cell measurements, CSV to NDJSON
  schedule:
    type: manual
  source:
    type: local
    path: ${JSON.stringify(join(work, 'in'))}
    ${typo ? 'file_patern' : 'file_pattern'}: "*.csv"
  serializer_in:
    type: csv
  serializer_out:
    type: ndjson
  sinks:
    - type: local
      path: ${JSON.stringify(join(work, 'out'))}
`;

    async function replaceEditorText(text: string) {
      const content = w.page.locator('.cm-content');
      await content.click();
      await w.page.keyboard.press('Control+A');
      await w.page.keyboard.insertText(text);
    }

    describe('flow 1: write, fix, save, run, see the run', () => {
      it('shows the empty pipeline list', async () => {
        await w.page.goto(`${base}/ui/#/pipelines`);
        await w.page.getByText('No pipelines are registered yet.').waitFor();
        await w.shot('pipelines-empty');
      });

      it('completes keys from the plugin schemas', async () => {
        await w.page.getByRole('link', { name: 'Write the first one' }).click();
        await w.page.locator('.cm-content').waitFor();
        // The starter is valid: the server says so.
        await w.page.getByTestId('validation-state').getByText('valid').waitFor();
        // Type a key prefix on a new line inside the local source and ask for completion.
        await w.page.locator('.cm-line', { hasText: 'path: /data/in' }).click();
        await w.page.keyboard.press('End');
        await w.page.keyboard.press('Enter');
        await w.page.keyboard.type('move_af');
        const popup = w.page.locator('.cm-tooltip-autocomplete');
        await popup.waitFor();
        await expect.poll(() => popup.textContent()).toContain('move_after_read');
        await w.shot('editor-completion');
        await w.page.keyboard.press('Escape');
      });

      it('shows the typo as a diagnostic at its line and column, and clears it once fixed', async () => {
        await replaceEditorText(pipelineYaml(true));
        const problem = w.page.getByTestId('problems').locator('li.error');
        await problem.first().waitFor();
        const line =
          pipelineYaml(true)
            .split('\n')
            .findIndex((l) => l.includes('file_patern')) + 1;
        await expect
          .poll(() => problem.allTextContents())
          .toEqual([expect.stringMatching(new RegExp(`^${line}:5 pipeline\\.source\\.file_patern.*did you mean 'file_pattern'`))]);
        // Inline too: the word is underlined on that line and the gutter marks it.
        const underlined = w.page.locator('.cm-lintRange-error');
        await expect.poll(() => underlined.textContent()).toBe('file_patern');
        await expect.poll(() => w.page.locator('.cm-gutter-lint .cm-lint-marker-error').count()).toBe(1);
        await expect.poll(() => w.page.locator('button.primary', { hasText: 'Create' }).isDisabled()).toBe(true);
        await w.shot('editor-diagnostic');

        await replaceEditorText(pipelineYaml(false));
        await w.page.getByTestId('validation-state').getByText('valid').waitFor();
        await expect.poll(() => problem.count()).toBe(0);
      });

      it('creates the pipeline, runs it, and shows the run in the history with its chart', async () => {
        await w.page.locator('button.primary', { hasText: 'Create' }).click();
        await w.page.waitForURL(/#\/pipelines\/flow-one$/);
        await w.page.locator('.subtitle', { hasText: 'Version 1' }).waitFor();
        await w.page.locator('.cm-content', { hasText: 'flow-one' }).waitFor();
        await w.page.getByRole('button', { name: 'Run now' }).click();
        await w.page.getByRole('link', { name: 'open the run' }).click();
        await w.page.waitForURL(/#\/runs\/[0-9a-f-]{36}$/);
        const facts = w.page.getByTestId('run-facts');
        await expect.poll(async () => (await w.page.locator('h1 .badge').textContent()) ?? '', { timeout: 15_000 }).toBe('success');
        await expect.poll(() => facts.textContent()).toContain('5 / 5 / 0');
        // The run names the version it ran, linked to the versions page.
        const version = w.page.getByTestId('run-version').getByRole('link', { name: 'version 1' });
        expect(await version.getAttribute('href')).toBe('#/versions/flow-one?b=1');
        await w.shot('run-detail');

        await w.page.goto(`${base}/ui/#/runs?pipeline=flow-one`);
        const rows = w.page.getByTestId('runs-table').locator('tbody tr');
        await expect.poll(() => rows.count()).toBe(1);
        expect(await rows.first().textContent()).toContain('success');
        await w.page.getByTestId('chart-rate').locator('canvas').waitFor();
        await w.page.getByTestId('chart-duration').locator('canvas').waitFor();
        await w.shot('runs');
        // CSV export: the server's CSV of the filtered runs, saved as a file.
        const [download] = await Promise.all([w.page.waitForEvent('download'), w.page.getByRole('button', { name: 'Export CSV' }).click()]);
        expect(download.suggestedFilename()).toMatch(/^runs-flow-one-.*\.csv$/);
        const csv = readFileSync((await download.path())!, 'utf8')
          .trim()
          .split('\n');
        expect(csv[0]).toMatch(/^run_id,pipeline,node_id,status,/);
        expect(csv).toHaveLength(2);

        await w.page.goto(`${base}/ui/#/pipelines`);
        const row = w.page.locator('tr[data-pipeline="flow-one"]');
        await expect.poll(() => row.textContent()).toContain('success');
        expect(await row.locator('td.num').first().textContent()).toBe('5');
        await w.shot('pipelines');
        expect(w.problems).toEqual([]);
      });
    });

    describe('flow 2: view the diff of two versions, then roll back', () => {
      it('shows the changed line side by side and rolls back to version 1', async () => {
        const v2 = pipelineYaml(false).replace('Cell measurements, CSV to NDJSON', 'Cell measurements, second edition');
        const put = await fetch(`${base}/api/pipelines/flow-one`, { method: 'PUT', headers: { 'content-type': 'application/yaml' }, body: v2 });
        expect(put.status).toBe(200);
        await w.page.goto(`${base}/ui/#/versions/flow-one`);
        const rows = w.page.getByTestId('versions-table').locator('tbody tr');
        await expect.poll(() => rows.count()).toBe(2);
        const diff = w.page.getByTestId('version-diff');
        await diff.locator('.cm-mergeView').waitFor();
        // The description line differs: one changed line on each side, with the changed words marked.
        await expect.poll(() => diff.locator('.cm-changedLine').count()).toBe(2);
        expect(await diff.locator('.cm-changedText').allTextContents()).toEqual(expect.arrayContaining(['second edition']));
        await w.shot('versions-diff');

        await w.page.locator('tr[data-version="1"]').getByRole('button', { name: 'Roll back to this' }).click();
        await w.page.getByText('rolled back to version 1').waitFor();
        await expect.poll(() => w.page.locator('tr[data-version="1"]').textContent()).toContain('active');
        const state = (await (await fetch(`${base}/api/pipelines/flow-one`)).json()) as { version: number; yaml: string };
        expect(state.version).toBe(1);
        expect(state.yaml).toContain('CSV to NDJSON');
        await w.shot('versions-rolled-back');
        expect(w.problems).toEqual([]);
      });
    });

    describe('alerts', () => {
      it('adds a rule through the form, shows it never fired, and deletes it', async () => {
        await w.page.goto(`${base}/ui/#/alerts/flow-one`);
        await w.page.getByRole('button', { name: 'New rule' }).click();
        const form = w.page.getByRole('form', { name: 'alert rule' });
        await form.locator('input[name="name"]').fill('too-many-skips');
        await form.locator('input[name="condition"]').fill('error_rate > 0.05');
        await form.locator('input[name="webhook_url"]').fill('http://127.0.0.1:9/hook');
        await form.getByRole('button', { name: 'Add rule' }).click();
        const row = w.page.locator('tr[data-rule="too-many-skips"]');
        await expect.poll(() => row.textContent()).toContain('never');
        expect(await row.textContent()).toContain('error_rate > 0.05');
        await w.shot('alerts');
        // A condition the server refuses comes back as its {detail}.
        await w.page.getByRole('button', { name: 'New rule' }).click();
        await form.locator('input[name="name"]').fill('broken');
        await form.locator('input[name="condition"]').fill('records_in >');
        await form.locator('input[name="webhook_url"]').fill('http://127.0.0.1:9/hook');
        await form.getByRole('button', { name: 'Add rule' }).click();
        await w.page.locator('.notice-error').waitFor();
        await w.page.getByRole('button', { name: 'Cancel' }).click();
        await row.getByRole('button', { name: 'Delete' }).click();
        await expect.poll(() => row.count()).toBe(0);
        expect(w.problems.filter((p) => !p.includes('422'))).toEqual([]);
      });
    });

    describe('stop and start are remembered (issue 29)', () => {
      it('Stop tags the pipeline "kept stopped" (it stays stopped across restarts); Start removes the tag', async () => {
        const yaml = `version: "1"\npipeline:\n  name: hourly-pm\n  schedule: { type: cron, cron: "0 * * * *" }\n  source: { type: local, path: ${JSON.stringify(join(work, 'in'))}, file_pattern: "*.none" }\n  sinks:\n    - { type: local, path: ${JSON.stringify(join(work, 'pm'))} }\n`;
        expect((await fetch(`${base}/api/pipelines`, { method: 'POST', headers: { 'content-type': 'application/yaml' }, body: yaml })).status).toBe(201);
        const desired = async () => ((await (await fetch(`${base}/api/pipelines/hourly-pm`)).json()) as { desired: string }).desired;
        w.problems.length = 0; // the alerts test leaves its expected 422
        await w.page.goto(`${base}/ui/#/pipelines`);
        const row = w.page.locator('tr[data-pipeline="hourly-pm"]');
        await row.waitFor();
        await expect.poll(() => row.textContent(), { timeout: 10_000 }).toContain('scheduled');
        expect(await row.locator('.tag').count()).toBe(0);
        await row.getByRole('button', { name: 'Stop' }).click();
        await expect.poll(() => row.locator('.tag').textContent(), { timeout: 10_000 }).toBe('kept stopped');
        expect(await row.textContent()).toContain('stopped');
        expect(await desired()).toBe('stopped');
        await w.shot('pipelines-kept-stopped');
        await row.getByRole('button', { name: 'Start' }).click();
        await expect.poll(() => row.locator('.tag').count(), { timeout: 10_000 }).toBe(0);
        await expect.poll(() => row.textContent(), { timeout: 10_000 }).toContain('scheduled');
        expect(await desired()).toBe('running');
        expect(w.problems).toEqual([]);
      });
    });

    describe('every page', () => {
      it('loads with no console error and no CSP violation', async () => {
        const runs = (await (await fetch(`${base}/api/runs?pipeline=flow-one`)).json()) as { run_id: string }[];
        // A running stream, so that the cluster page has a placement to show.
        const stream = `version: "1"\npipeline:\n  name: alarms-in\n  schedule: { type: stream }\n  source: { type: webhook, path: alarms }\n  sinks:\n    - { type: local, path: ${JSON.stringify(join(work, 'alarms'))} }\n`;
        expect((await fetch(`${base}/api/pipelines`, { method: 'POST', headers: { 'content-type': 'application/yaml' }, body: stream })).status).toBe(201);
        expect(
          (await fetch(`${base}/webhooks/alarms`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"alarm":"LOS"}' })).status,
        ).toBe(202);
        // name, route, heading, and what shows once the page's data has arrived.
        const pages: [string, string, string, string][] = [
          ['pipelines', '#/pipelines', 'Pipelines', 'tr[data-pipeline="alarms-in"]'],
          ['pipeline-new', '#/pipelines/_new', 'New pipeline', '[data-testid="validation-state"]:text("valid")'],
          ['pipeline-edit', '#/pipelines/flow-one', 'flow-one', '[data-testid="validation-state"]:text("valid")'],
          ['runs-all', '#/runs?since=all', 'Runs', '[data-testid="chart-rate"] canvas'],
          ['run', `#/runs/${runs[0]!.run_id}`, 'Run', '[data-testid="run-facts"]'],
          ['alerts-all', '#/alerts', 'Alerts', '.empty'],
          ['versions-pick', '#/versions', 'Versions', '.link-list li'],
          ['versions', '#/versions/flow-one', 'Versions of flow-one', '.cm-mergeView'],
          ['cluster', '#/cluster', 'Cluster', '[data-testid="placements-table"] tbody tr'],
          ['plugins', '#/plugins', 'Plugins', '.plugin-list li'],
          ['plugin-sink-local', '#/plugins/sinks/local', 'sink local', '[data-testid="plugin-params"]'],
          ['not-found', '#/nowhere', 'Nothing here', 'a[href="#/pipelines"]'],
        ];
        for (const [name, hash, heading, ready] of pages) {
          w.problems.length = 0;
          // A fresh document each time (a hash change alone would keep the previous page's state).
          await w.page.goto('about:blank');
          await w.page.goto(`${base}/ui/${hash}`);
          await w.page.locator('h1', { hasText: heading }).first().waitFor();
          await w.page.locator(ready).first().waitFor();
          await w.shot(name);
          expect(w.problems, name).toEqual([]);
        }
      });
    });

    describe('signing in (SVC_API_KEY and SVC_AUTH_USERS)', () => {
      it('asks for a login, keeps the session token in sessionStorage only, and sends it as a bearer token', async () => {
        const guarded = await serve({ SVC_UI_DIR: await builtUi(), SVC_API_KEY: 'the-key', SVC_AUTH_USERS: 'ops:s3cret', SVC_AUTH_SECRET: 'ui-test-secret' });
        try {
          const g = await watchedPage(browser);
          await g.page.goto(`${guarded.url}/ui/#/pipelines`);
          const form = g.page.locator('form', { has: g.page.locator('input[name="username"]') });
          await form.waitFor();
          await g.shot('login');
          await form.locator('input[name="username"]').fill('ops');
          await form.locator('input[name="password"]').fill('wrong');
          await form.getByRole('button', { name: 'Sign in' }).click();
          await g.page.getByText('invalid username or password').waitFor();
          await form.locator('input[name="password"]').fill('s3cret');
          await form.getByRole('button', { name: 'Sign in' }).click();
          await g.page.getByText('No pipelines are registered yet.').waitFor();
          const stored = await g.page.evaluate('[JSON.stringify(sessionStorage), JSON.stringify(localStorage), document.cookie]');
          expect(JSON.parse((stored as string[])[0]!)['svc.credential']).toMatch(/"kind":"token"/);
          expect((stored as string[])[1]).toBe('{}');
          expect((stored as string[])[2]).toBe('');
          // A reload keeps the tab signed in.
          await g.page.reload();
          await g.page.getByText('No pipelines are registered yet.').waitFor();
          await g.page.getByText('ops').waitFor();
          // The only console errors are the 401s of the calls made before signing in, and the failed login.
          expect(g.problems.filter((p) => !/status of 401/.test(p))).toEqual([]);
          await g.page.context().close();
        } finally {
          await guarded.stop();
        }
      });
    });
  });
}
