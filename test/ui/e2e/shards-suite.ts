// (Run by test/ui/e2e.test.ts.) Sharded polls in a real browser (issue 33): a manager and two
// workers as real processes on PostgreSQL poll 60 simulated SNMP agents as one sharded run. The
// run's page lists its shards (worker, targets, records); the cluster page shows how many targets
// each worker polls, and finding a device there names the worker that polls it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/wait.js';
import { launch, watchedPage } from '../browser.js';
import { builtUi } from '../ui-build.js';
import { startCluster, type Cluster } from '../../cluster/processes.js';
import { Fleet } from '../../../src/snmp/fleet.js';

export function shardsSuite() {
  describe('sharded polls: run detail and the cluster page', () => {
    let browser: Browser;
    let c: Cluster;
    let fleet: Fleet;
    let root: string;

    beforeAll(async () => {
      fleet = new Fleet({ agents: 60 });
      await fleet.start();
      root = mkdtempSync(join(tmpdir(), 'svc-ui-shards-'));
      c = await startCluster(2, { manager: { SVC_UI_DIR: await builtUi() }, root });
      await c.startManager();
      await c.startWorker(0);
      await c.startWorker(1);
      await until(async () => (await c.call('GET', '/api/cluster/nodes')).body.workers.every((w: { ok: boolean }) => w.ok), 60_000, 'healthy workers');
      browser = await launch();
    }, 180_000);

    afterAll(async () => {
      await browser?.close();
      await c?.stop();
      await fleet?.stop();
      rmSync(root, { recursive: true, force: true });
    }, 60_000);

    it('shows the shards of a run, the targets per worker, and finds where a device is polled', async () => {
      const targets = join(root, 'fleet.txt');
      writeFileSync(
        targets,
        fleet
          .targets()
          .map((t) => `${t.host}:${t.port}`)
          .join('\n'),
      );
      const yaml = `version: "1"\npipeline:\n  name: fleet-poll\n  schedule: { type: manual }\n  workers: { count: all }\n  source:\n    type: snmp_poll\n    targets_file: ${targets}\n    oids: [1.3.6.1.2.1.1.5.0]\n    resolve_oids: false\n  sinks:\n    - { type: local, path: ${JSON.stringify(join(root, 'out'))} }\n`;
      expect((await c.call('POST', '/api/pipelines', yaml)).status).toBe(201);
      const runId = (await c.call('POST', '/api/pipelines/fleet-poll/run')).body.run_id as string;
      const run = await until(
        async () => {
          const r = await c.call('GET', `/api/runs/${runId}`);
          return r.body?.status === 'success' ? r.body : undefined;
        },
        120_000,
        'the sharded run to succeed',
        200,
      );
      expect(run.shards).toHaveLength(2);

      const w = await watchedPage(browser);
      await w.page.goto(`${c.managerUrl}/ui/#/runs/${runId}`);
      const rows = w.page.locator('[data-testid="run-shards"] tbody tr');
      await rows.first().waitFor();
      expect(await rows.count()).toBe(2);
      const text = (await w.page.locator('[data-testid="run-shards"]').textContent()) ?? '';
      for (const s of run.shards) expect(text).toContain(s.worker_id);
      await w.shot('run-shards');

      await w.page.goto('about:blank');
      await w.page.goto(`${c.managerUrl}/ui/#/cluster`);
      await w.page.locator('[data-testid="shards-table"] tbody tr').first().waitFor();
      expect(await w.page.locator('[data-testid="shards-table"]').textContent()).toContain('fleet-poll');
      const device = fleet.targets()[7]!;
      const id = `${device.host}:${device.port}`;
      const owner = (await c.call('GET', `/api/pipelines/fleet-poll/shards?q=${encodeURIComponent(id)}`)).body.targets[0].worker_id as string;
      await w.page.locator('[data-testid="shard-search"]').fill(String(device.port));
      const hit = w.page.locator('[data-testid="shard-search-results"] tbody tr', { hasText: id });
      await hit.waitFor();
      expect(await hit.textContent()).toContain(owner);
      await w.shot('cluster-shards');
      expect(w.problems).toEqual([]);
    });
  });
}
