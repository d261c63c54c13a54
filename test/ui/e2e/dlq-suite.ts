// (Run by test/ui/e2e.test.ts.) The dead-letter page (issue 17) in a real browser against a real
// `svc serve`: a pipeline whose records fail at the parse and transform stages, with a local DLQ;
// the page lists them, filters by stage and error text, inspects one (record and raw input as
// text), replays the transform-stage ones with an edit that fixes two of the three, and shows the
// replay run linked, the one that failed again with its error, and the two marked replayed. A
// pipeline without a DLQ shows the server's 409 detail; a larger DLQ pages.
import { mkdirSync, writeFileSync } from 'node:fs';
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

/** A device name that would run script if it were ever rendered as HTML. */
const HOSTILE = '<img src=x onerror="window.__pwned=1">core-1';

const INPUT = [
  { host: HOSTILE, octets: '10' }, // transform: a string + 1; int() fixes it
  { host: 'edge-2', octets: 5 },
  'not json at all', // parse
  { host: 'edge-3', octets: '7' }, // transform, fixed by int()
  { host: 'edge-4', octets: 'n/a' }, // transform, and int() fails on it again
].map((l) => (typeof l === 'string' ? l : JSON.stringify(l)));

function pipelineYaml(name: string, root: string, dlq = true, transforms: string[] = []) {
  return [
    'version: "1"',
    'pipeline:',
    `  name: ${name}`,
    '  schedule: { type: manual }',
    `  source: { type: local, path: ${JSON.stringify(join(root, 'in'))}, file_pattern: "*.ndjson" }`,
    '  serializer_in: { type: ndjson, strict: true }',
    `  on_error: ${dlq ? 'dlq' : 'continue'}`,
    '  transforms:',
    '    - { type: add_field, fields: { next: "coalesce(octets, 0) + 1" } }',
    ...transforms.map((t) => `    - ${t}`),
    `  sinks: [{ type: local, path: ${JSON.stringify(join(root, 'out'))}, filename_template: out.ndjson }]`,
    ...(dlq ? [`  dlq: { type: local, path: ${JSON.stringify(join(root, 'dlq'))}, filename_template: "dlq_{timestamp}.ndjson" }`] : []),
  ].join('\n');
}

async function api(method: string, path: string, body?: string): Promise<any> {
  const res = await fetch(`${daemon.url}${path}`, { method, headers: body ? { 'content-type': 'application/yaml' } : {}, body });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Registers a pipeline over `lines` and runs it once to the end. */
async function deadLetter(name: string, lines: string[], dlq = true, transforms: string[] = []) {
  const root = join(daemon.dir, name);
  mkdirSync(join(root, 'in'), { recursive: true });
  writeFileSync(join(root, 'in', 'a.ndjson'), lines.join('\n') + '\n');
  await api('POST', '/api/pipelines', pipelineYaml(name, root, dlq, transforms));
  const { run_id } = await api('POST', `/api/pipelines/${name}/run`);
  return until(async () => {
    const run = await api('GET', `/api/runs/${run_id}`);
    return run.status !== 'running' && run;
  }, 30_000);
}

/** Console errors the browser logs for the refusals these tests provoke on purpose. */
const expected = (p: string) => !/status of (409|422)/.test(p);

export function dlqSuite() {
  describe('the dead-letter page', () => {
    beforeAll(async () => {
      daemon = await serve({ SVC_UI_DIR: await builtUi() });
      browser = await launch();
      w = await watchedPage(browser);
      expect(await deadLetter('cells', INPUT)).toMatchObject({ status: 'success', records_in: 5, records_out: 1, dlq_count: 4 });
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      await daemon?.stop();
    });

    const rows = () => w.page.getByTestId('dlq-table').locator('tbody tr');

    it('is linked from the pipeline, lists the dead letters, filters them and inspects one as text', async () => {
      await w.page.goto(`${daemon.url}/ui/#/pipelines/cells`);
      await w.page.getByRole('link', { name: 'Dead letters' }).click();
      await w.page.waitForURL(/#\/pipelines\/cells\/dlq$/);
      await w.page.locator('h1', { hasText: 'Dead letters of cells' }).waitFor();
      await expect.poll(() => rows().count()).toBe(4);
      expect(await w.page.getByTestId('dlq-paging').textContent()).toContain('1–4 of 4');
      expect(await rows().evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-stage')).sort())).toEqual([
        'parse',
        'transform',
        'transform',
        'transform',
      ]);
      await w.shot('dlq-list');

      // The parse failure: its raw line, decoded as text.
      await w.page.locator('tr[data-stage="parse"]').getByRole('button').click();
      const envelope = w.page.getByTestId('dlq-envelope');
      await expect.poll(() => envelope.getByTestId('dlq-raw').textContent()).toBe('not json at all');
      expect(await envelope.textContent()).toContain('Raw input (text)');
      expect(await envelope.getByTestId('dlq-record').count()).toBe(0);

      // Filter by error text (any case) and by stage, both kept in the hash.
      await w.page.locator('input[name="error"]').fill('ADD_FIELD');
      await w.page.locator('input[name="error"]').press('Enter');
      await w.page.waitForURL(/#\/pipelines\/cells\/dlq\?error=ADD_FIELD$/);
      await expect.poll(() => rows().count()).toBe(3);
      await w.page.locator('select[name="stage"]').selectOption('parse');
      await w.page.waitForURL(/\?stage=parse&error=ADD_FIELD$/);
      await w.page.getByText('No dead letters match this filter.').waitFor();
      await w.page.goto(`${daemon.url}/ui/#/pipelines/cells/dlq?stage=transform`);
      await expect.poll(() => rows().count()).toBe(3);
      expect(await w.page.locator('input[name="error"]').inputValue()).toBe('');

      // The hostile device name is shown as text: no element made of it, no script run.
      await w.page.locator('tr[data-stage="transform"]').first().getByRole('button').click();
      const record = envelope.getByTestId('dlq-record');
      await expect.poll(async () => JSON.parse((await record.textContent()) ?? '{}')).toEqual({ host: HOSTILE, octets: '10' });
      expect(await envelope.getByTestId('dlq-error').textContent()).toMatch(/^transforms\[0\] \(add_field\)/);
      expect(await w.page.locator('img').count()).toBe(0);
      expect(await w.page.evaluate('window.__pwned')).toBeUndefined();
      await w.shot('dlq-inspect');
      expect(w.problems).toEqual([]);
    });

    it('replays the transform-stage ones with an edit, links the run, lists what failed again and marks the others replayed', async () => {
      await w.page.goto('about:blank');
      await w.page.goto(`${daemon.url}/ui/#/pipelines/cells/dlq?stage=transform`);
      await expect.poll(() => rows().count()).toBe(3);
      await w.page.getByRole('checkbox', { name: 'select all on this page' }).check();
      const replaySelected = w.page.getByRole('button', { name: 'Replay selected (3)' });
      await replaySelected.waitFor();

      // Edits the client refuses and edits the server refuses (422) are shown, and nothing is replayed.
      await w.page.getByText('Edit the records before replay').click();
      await w.page.locator('textarea[name="patch"]').fill('{"op": "replace"');
      await replaySelected.click();
      await w.page.locator('.dlq-replay .notice-error', { hasText: 'JSON patch:' }).waitFor();
      await w.page.locator('textarea[name="patch"]').fill('');
      await w.page.getByRole('textbox', { name: 'field 1' }).fill('octets');
      await w.page.getByRole('textbox', { name: 'expression 1' }).fill('int(octets');
      await replaySelected.click();
      await w.page.locator('.dlq-replay .notice-error', { hasText: /^set: / }).waitFor();
      expect((await api('GET', '/api/pipelines/cells/dlq?replayed=true')).length).toBe(0);

      await w.page.getByRole('textbox', { name: 'expression 1' }).fill('int(octets)');
      expect(await w.page.locator('.dlq-edit-details summary').textContent()).toBe('Edit the records before replay (1 field)');
      await replaySelected.click();
      const result = w.page.getByTestId('replay-result');
      await result.waitFor({ timeout: 30_000 });
      expect(await result.locator('.notice').textContent()).toMatch(
        /^Replay run [0-9a-f]{8} success: 3 selected, 2 replayed, 1 failed · records in 2, out 2, skipped 0/,
      );
      const failed = result.getByTestId('replay-failed').locator('li');
      await expect.poll(() => failed.count()).toBe(1);
      expect(await failed.textContent()).toMatch(/edit failed: .*int\(\): invalid literal for base 10: .*n\/a/);
      const runHref = await result.getByTestId('replay-run').getAttribute('href');
      expect(runHref).toMatch(/^#\/runs\/[0-9a-f-]{36}$/);

      // The listing is read again: two marked replayed, the one that failed again is not; the ticks are gone.
      await expect.poll(() => rows().locator('.badge', { hasText: 'replayed' }).count()).toBe(2);
      expect(await w.page.getByRole('button', { name: 'Replay selected (0)' }).isDisabled()).toBe(true);
      const unmarked = rows().filter({ hasNot: w.page.locator('.badge') });
      await unmarked.getByRole('button').click();
      await expect.poll(async () => JSON.parse((await w.page.getByTestId('dlq-record').textContent()) ?? '{}')).toEqual({ host: 'edge-4', octets: 'n/a' });
      await rows()
        .filter({ has: w.page.locator('.badge') })
        .first()
        .getByRole('button')
        .click();
      const replayedBy = w.page.getByTestId('dlq-envelope').locator('a[href^="#/runs/"]').last();
      expect(await replayedBy.getAttribute('href')).toBe(runHref);
      await w.shot('dlq-replayed');

      // "show replayed" off hides them; "all matching" leaves the marked ones out (not forced) and the one left fails again.
      await w.page.getByRole('checkbox', { name: 'show replayed' }).uncheck();
      await w.page.waitForURL(/replayed=hide/);
      await expect.poll(() => rows().count()).toBe(1);
      await w.page.getByRole('button', { name: 'Replay all matching (1)' }).click();
      await expect
        .poll(() => result.locator('.notice').textContent(), { timeout: 30_000 })
        .toBe('Nothing was replayed: 3 selected, 0 replayed, 1 failed, 2 replayed already (tick "Replay again" to force)');

      // The replay run's page: a run of the pipeline of its own.
      await w.page.goto(`${daemon.url}/ui/${runHref}`);
      await expect.poll(async () => (await w.page.locator('h1 .badge').textContent()) ?? '').toBe('success');
      expect(await w.page.getByTestId('run-errors').textContent()).toContain('replay of 2 dead letters (transform 2)');
      expect(w.problems.filter(expected)).toEqual([]);
    });

    it('marks a run with dead letters in the runs list and on its page, and links it to them (issue 29)', async () => {
      const runs = (await api('GET', '/api/runs?pipeline=cells')) as { run_id: string; dlq_count: number; errors: string[] }[];
      const dead = runs.find((r) => r.dlq_count === 4)!;
      // A clean run whose filter drops one record of three.
      const clean = await deadLetter(
        'tidy',
        [1, 2, 3].map((octets) => JSON.stringify({ host: 'edge-9', octets })),
        true,
        ['{ type: filter, expression: "octets != 2" }'],
      );
      expect(clean).toMatchObject({ status: 'success', records_in: 3, records_out: 2, records_filtered: 1, dlq_count: 0 });

      await w.page.goto('about:blank');
      await w.page.goto(`${daemon.url}/ui/#/runs`);
      const row = w.page.locator(`tr[data-run="${dead.run_id}"]`);
      const cleanRow = w.page.locator(`tr[data-run="${clean.run_id}"]`);
      await row.waitFor();
      // Not the green of a clean success: amber, and a second badge that links to the run's dead letters.
      expect(await row.locator('.badge').first().textContent()).toBe('success');
      expect(await row.locator('.badge').first().getAttribute('class')).toBe('badge badge-warn');
      const link = row.getByTestId('run-dead-letters');
      expect(await link.textContent()).toBe('4 dead letters');
      expect(await link.getAttribute('href')).toBe(`#/pipelines/cells/dlq?run=${dead.run_id}`);
      expect(await cleanRow.locator('.badge').count()).toBe(1);
      expect(await cleanRow.locator('.badge').getAttribute('class')).toBe('badge badge-ok');
      const headers = await w.page.getByTestId('runs-table').locator('thead th').allTextContents();
      const cell = async (tr: typeof row, column: string) => tr.locator('td').nth(headers.indexOf(column)).textContent();
      expect(await cell(cleanRow, 'Filtered')).toBe('1');
      expect(await cell(row, 'Filtered')).toBe('0');
      expect(await cell(row, 'DLQ')).toBe('4');
      await w.shot('runs-dead-letters');

      // The link opens the DLQ page filtered by that run.
      await link.click();
      await w.page.waitForURL(new RegExp(`#/pipelines/cells/dlq\\?run=${dead.run_id}$`));
      await expect.poll(() => rows().count()).toBe(4);
      expect(await w.page.getByTestId('dlq-run-filter').textContent()).toContain(dead.run_id.slice(0, 8));
      expect(await rows().evaluateAll((trs) => trs.map((tr) => tr.querySelector('a.mono')?.textContent))).toEqual(Array(4).fill(dead.run_id.slice(0, 8)));
      await w.shot('dlq-of-run');
      // "all runs" drops the run filter.
      await w.page.getByTestId('dlq-run-filter').getByRole('button', { name: 'all runs' }).click();
      await w.page.waitForURL(/#\/pipelines\/cells\/dlq$/);

      // The run's page: the same badges, its counters with filtered, and the way to its dead letters.
      await w.page.goto(`${daemon.url}/ui/#/runs/${dead.run_id}`);
      await expect.poll(() => w.page.getByTestId('run-records').textContent()).toBe('5 / 1 / 0 / 4');
      expect(await w.page.locator('h1 .badge').first().getAttribute('class')).toBe('badge badge-warn');
      expect(await w.page.locator('h1').getByTestId('run-dead-letters').textContent()).toBe('4 dead letters');
      expect(await w.page.getByRole('link', { name: 'Dead letters of this run' }).getAttribute('href')).toBe(`#/pipelines/cells/dlq?run=${dead.run_id}`);
      expect(await w.page.getByTestId('run-facts').getByRole('link', { name: '4 dead letters' }).getAttribute('href')).toBe(
        `#/pipelines/cells/dlq?run=${dead.run_id}`,
      );
      await w.shot('run-dead-letters');
      // A clean run's page has no such badge or button.
      await w.page.goto(`${daemon.url}/ui/#/runs/${clean.run_id}`);
      await expect.poll(() => w.page.getByTestId('run-records').textContent()).toBe('3 / 2 / 1 / 0');
      expect(await w.page.locator('h1 .badge').count()).toBe(1);
      expect(await w.page.getByRole('link', { name: 'Dead letters of this run' }).count()).toBe(0);
      expect(w.problems.filter(expected)).toEqual([]);
    });

    it("shows the server's 409 detail for a pipeline without a DLQ, and pages a larger DLQ", async () => {
      await deadLetter('no-dlq', ['{"host": "a", "octets": 1}'], false);
      await w.page.goto('about:blank');
      await w.page.goto(`${daemon.url}/ui/#/pipelines/no-dlq/dlq`);
      const unreadable = w.page.getByTestId('dlq-unreadable');
      await expect.poll(() => unreadable.textContent()).toMatch(/cannot be listed:.*no dlq sink/);
      await w.shot('dlq-unreadable');

      expect(
        await deadLetter(
          'many',
          Array.from({ length: 60 }, (_, i) => `bad line ${i}`),
        ),
      ).toMatchObject({ dlq_count: 60 });
      await w.page.goto(`${daemon.url}/ui/#/pipelines/many/dlq`);
      await expect.poll(() => rows().count()).toBe(50);
      const paging = w.page.getByTestId('dlq-paging');
      expect(await paging.textContent()).toContain('1–50 of 60');
      await w.page.getByRole('checkbox', { name: 'select all on this page' }).check();
      await w.page.getByRole('button', { name: 'Replay selected (50)' }).waitFor();
      await w.page.getByRole('button', { name: 'Next' }).click();
      await w.page.waitForURL(/page=2$/);
      await expect.poll(() => paging.textContent()).toContain('51–60 of 60 · 50 selected');
      expect(await rows().count()).toBe(10);
      expect(await w.page.getByRole('button', { name: 'Next' }).isDisabled()).toBe(true);
      await w.shot('dlq-paged');
      expect(w.problems.filter(expected)).toEqual([]);
    });
  });
}
