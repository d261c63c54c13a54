// Live counters in manager mode (issue 29, item 1): a stream placed on two workers shows the sums
// of its slots as its run's counters in GET /api/runs, /api/pipelines and /api/stats while it
// runs (workers report every min(SVC_STATS_INTERVAL, 2) s: here the default 30 s interval, so the
// 2 s of live counters), and the final record equals the sink's lines.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../helpers/wait.js';
import { readNdjson } from '../api/_helpers.js';
import { tempDir } from '../helpers/fs.js';
import { startCluster, type Cluster } from './processes.js';

const written = (dir: string) => {
  try {
    return readdirSync(dir)
      .filter((f) => f.endsWith('.ndjson'))
      .flatMap((f) => readNdjson(join(dir, f)));
  } catch {
    return [];
  }
};

async function postAcked(url: string, seq: number) {
  const post = () =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ seq }) }).then(
      (r) => r.status === 202,
      () => false,
    );
  await until(post, 15_000, `record ${seq} to be acknowledged`, 100);
}

describe('live counters in manager mode', () => {
  let c: Cluster | undefined;
  afterEach(async () => {
    await c?.stop();
    c = undefined;
  });

  it("a stream's run shows the sums over its slots while it runs, at most 5 s old", async () => {
    c = await startCluster(2);
    await c.startWorker(0);
    await c.startWorker(1);
    await c.startManager();
    const out = tempDir('svc-live-cluster-');
    const r = await c.call(
      'POST',
      '/api/pipelines',
      [
        'version: "1"',
        'pipeline:',
        '  name: live-sums',
        '  schedule: { type: stream }',
        '  source: { type: webhook, path: live-sums }',
        '  serializer_in: { type: json }',
        '  serializer_out: { type: ndjson }',
        '  sinks:',
        `    - { type: local, path: ${JSON.stringify(out)}, filename_template: "{run_id}.ndjson" }`,
        '',
      ].join('\n'),
    );
    expect(r.status, r.text).toBe(201);
    await until(async () => (await c!.call('GET', '/api/pipelines/live-sums/placement')).body?.slot_count === 2, 20_000, 'two slots', 200);
    const groupId = (await c.call('GET', '/api/pipelines/live-sums')).body.active_run_id as string;

    for (let i = 0; i < 10; i++) await postAcked(`${c.workers[i % 2]!.ingressUrl}/webhooks/live-sums`, i);
    await until(() => written(out).length === 10, 10_000, 'the sink to hold 10');
    const t0 = Date.now();
    const run = await until(
      async () => {
        const b = (await c!.call('GET', `/api/runs/${groupId}`)).body;
        return b.status === 'running' && b.records_in === 10 && b.records_out === 10 && b;
      },
      5000 + 2500,
      'the running run to show the sums of both slots',
      100,
    );
    expect(Date.now() - t0).toBeLessThanOrEqual(7500);
    expect(run.live).toMatchObject({ run_id: groupId });
    const listed = (await c.call('GET', '/api/pipelines')).body.find((p: { name: string }) => p.name === 'live-sums');
    expect(listed.live).toMatchObject({ run_id: groupId, records_in: 10, records_out: 10 });
    expect((await c.call('GET', '/api/stats')).body.find((s: { pipeline: string }) => s.pipeline === 'live-sums')).toMatchObject({
      records_in: 10,
      records_out: 10,
      running: 1,
    });

    expect((await c.call('POST', '/api/pipelines/live-sums/stop')).status).toBe(200);
    const final = await until(async () => {
      const b = (await c!.call('GET', `/api/runs/${groupId}`)).body;
      return b.status !== 'running' && b;
    }, 20_000);
    expect(final).toMatchObject({ status: 'success', records_in: 10, records_out: written(out).length });
    expect(final.live).toBeUndefined();
  }, 90_000);
});
