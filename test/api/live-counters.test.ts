// Live counters (issue 29, item 1): a running run's counters are visible while it runs, at most 5 s
// old, in GET /api/runs, /api/runs/{id}, /api/pipelines, /api/pipelines/{name}, /api/stats, the
// store's row, `svc runs` and `svc pipelines`; the final figures equal what the sink holds.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { svc } from '../helpers/cli.js';
import { testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { until } from '../helpers/wait.js';
import { finishedRun, localYaml, readNdjson, register, SLOW, webhookYaml, workArea } from './_helpers.js';

/** The bound of the issue (5 s) plus a margin for a loaded machine. */
const FRESH_MS = 5000 + 2500;

async function post(d: TestDaemon, path: string, bodies: string[]) {
  for (const b of bodies) expect((await d.call('POST', `/webhooks/${path}`, { body: b, headers: { 'content-type': 'application/json' } })).status).toBe(202);
}

/** Waits until `check` holds and says how long after `since` it did. */
async function visibleWithin<T>(since: number, check: () => Promise<T | undefined | false>, what: string): Promise<{ value: T; ms: number }> {
  const value = await until(check, FRESH_MS, what, 100);
  return { value, ms: Date.now() - since };
}

describe('live counters of a running stream', () => {
  it('show in runs, pipelines, stats and the store while it runs; the final record equals the sink', { timeout: 60_000 }, async () => {
    const d = await testDaemon();
    const w = workArea(0);
    const dlqDir = join(w.outDir, 'dlq');
    await register(
      d,
      webhookYaml('live-hook', {
        path: 'live',
        outDir: w.outDir,
        extra: ['on_error: dlq', `dlq: { type: local, path: ${JSON.stringify(dlqDir)}, filename_template: dlq.ndjson }`],
      }),
    );
    await d.call('POST', '/api/pipelines/live-hook/start');
    const runId: string = await until(async () => (await d.call('GET', '/api/pipelines/live-hook')).body.active_run_id, 10_000, 'the stream to start');

    // 7 records: visible within 5 s everywhere, without stopping the stream.
    let t0 = Date.now();
    await post(
      d,
      'live',
      Array.from({ length: 7 }, (_, i) => JSON.stringify({ n: i })),
    );
    const run = await visibleWithin(
      t0,
      async () => {
        const r = (await d.call('GET', '/api/runs?pipeline=live-hook')).body[0];
        return r?.status === 'running' && r.records_in === 7 && r.records_out === 7 && r;
      },
      'GET /api/runs to show 7 in, 7 out',
    );
    expect(run.ms).toBeLessThanOrEqual(FRESH_MS);
    expect(run.value).toMatchObject({ run_id: runId, status: 'running', finished_at: null, records_skipped: 0, dlq_count: 0 });
    expect(run.value.bytes_in).toBeGreaterThan(0);
    expect(run.value.bytes_out).toBeGreaterThan(0);
    expect(run.value.live).toMatchObject({ run_id: runId });
    expect(Date.now() - Date.parse(run.value.live.updated_at)).toBeLessThan(FRESH_MS);
    expect(run.value.live.records_in_per_sec).toBeGreaterThan(0);

    const one = (await d.call('GET', `/api/runs/${runId}`)).body;
    expect(one).toMatchObject({ status: 'running', records_in: 7, records_out: 7 });
    const list = (await d.call('GET', '/api/pipelines')).body.find((p: { name: string }) => p.name === 'live-hook');
    expect(list.live).toMatchObject({ run_id: runId, records_in: 7, records_out: 7, records_skipped: 0, dlq_count: 0, errors: [] });
    expect((await d.call('GET', '/api/pipelines/live-hook')).body.live).toMatchObject({ run_id: runId, records_in: 7, records_out: 7 });
    const stats = (await d.call('GET', '/api/stats')).body.find((s: { pipeline: string }) => s.pipeline === 'live-hook');
    expect(stats).toMatchObject({ records_in: 7, records_out: 7, running: 1, run_count: 0 });
    const csv = (await d.call('GET', `/api/runs?pipeline=live-hook&format=csv`)).text;
    expect(csv.split('\n')[1]).toContain(`${runId},live-hook,test-node,running`);

    // The run's row in the store follows within a few seconds (a crash keeps recent figures).
    await until(async () => (await d.store.runs.get(runId))?.records_in === 7, FRESH_MS + 2000, 'the stored row to hold 7', 200);

    // 5 more, one of them not JSON: dead-lettered; the counts move on while it runs.
    t0 = Date.now();
    await post(d, 'live', ['{"n": 7}', '{"n": 8}', '{"n": 9,', '{"n": 10}', '{"n": 11}']);
    const more = await visibleWithin(
      t0,
      async () => {
        const r = (await d.call('GET', `/api/runs/${runId}`)).body;
        return r.status === 'running' && r.records_in === 12 && r.dlq_count === 1 && r;
      },
      'the run to show 12 in, 1 dead-lettered',
    );
    expect(more.ms).toBeLessThanOrEqual(FRESH_MS);
    expect(more.value).toMatchObject({ records_out: 11, records_skipped: 1 });
    expect(more.value.errors.join('\n')).toMatch(/parse error/);
    const live = (await d.call('GET', '/api/pipelines/live-hook')).body.live;
    expect(live).toMatchObject({ records_in: 12, records_out: 11, records_skipped: 1, dlq_count: 1 });
    expect(live.errors).toEqual(more.value.errors);

    // Stop: the final record is exact and equals the sink's lines; no live figures any more.
    await d.call('POST', '/api/pipelines/live-hook/stop');
    const final = await finishedRun(d, runId);
    const lines = readNdjson(w.outFile);
    expect(lines).toHaveLength(11);
    expect(final).toMatchObject({ status: 'success', records_in: 12, records_out: lines.length, records_skipped: 1, dlq_count: 1 });
    expect(final.live).toBeUndefined();
    expect(readNdjson(join(dlqDir, 'dlq.ndjson'))).toHaveLength(1);
    expect((await d.call('GET', '/api/pipelines/live-hook')).body.live).toBeNull();
    expect((await d.store.runs.get(runId))?.records_out).toBe(11);
  });

  it('a batch run shows its progress before it ends', { timeout: 60_000 }, async () => {
    const d = await testDaemon();
    // 14 records at 2 writes per second, one record per write: about 6 s.
    const w = workArea(14);
    await register(d, localYaml('slow-batch', { ...w, extra: SLOW }));
    const runId: string = (await d.call('POST', '/api/pipelines/slow-batch/run')).body.run_id;
    const midway = await until(
      async () => {
        const r = (await d.call('GET', `/api/runs/${runId}`)).body;
        return r.status === 'running' && r.records_out >= 3 && r.records_out < 14 && r;
      },
      FRESH_MS + 3000,
      'the running batch to show records out',
      100,
    );
    expect(midway.live.records_out_per_sec).toBeGreaterThan(0);
    const final = await finishedRun(d, runId, 30_000);
    expect(final).toMatchObject({ status: 'success', records_in: 14, records_out: 14 });
    expect(readNdjson(w.outFile)).toHaveLength(14);
  });

  it('svc runs and svc pipelines show the live counts', { timeout: 60_000 }, async () => {
    const d = await testDaemon();
    const w = workArea(0);
    await register(d, webhookYaml('cli-hook', { path: 'cli', outDir: w.outDir }));
    await d.call('POST', '/api/pipelines/cli-hook/start');
    await until(async () => (await d.call('GET', '/api/pipelines/cli-hook')).body.active_run_id, 10_000, 'the stream to start');
    await post(
      d,
      'cli',
      Array.from({ length: 9 }, (_, i) => JSON.stringify({ n: i })),
    );
    await until(async () => (await d.call('GET', '/api/pipelines/cli-hook')).body.live?.records_out === 9, FRESH_MS, 'the pipeline to show 9 out', 100);
    const env = { SVC_API_URL: d.url };
    const runs = await svc(['runs', '--pipeline', 'cli-hook'], env);
    expect(runs.code).toBe(0);
    const [head, row] = runs.stdout.split('\n');
    expect(head).toMatch(/^RUN_ID\s+PIPELINE\s+STATUS\s+STARTED_AT\s+RECORDS_IN\s+RECORDS_OUT/);
    expect(row).toMatch(/\scli-hook\s+running\s+\S+\s+9\s+9\s+0\s+0\s/);
    const pipelines = await svc(['pipelines'], env);
    expect(pipelines.code).toBe(0);
    const [phead, prow] = pipelines.stdout.split('\n');
    expect(phead).toMatch(/^NAME\s+ENABLED\s+STATUS\s+DESIRED\s+SCHEDULE_TYPE\s+RECORDS_IN\s+RECORDS_OUT\s+IN_PER_S\s+OUT_PER_S\s+LAST_RUN/);
    expect(prow).toMatch(/^cli-hook\s+true\s+running\s+running\s+stream\s+9\s+9\s+[\d.]+\s+[\d.]+\s/);
    const json = JSON.parse((await svc(['pipelines', '--json'], env)).stdout);
    expect(json[0].live).toMatchObject({ records_in: 9, records_out: 9 });
  });

  it('SVC_LIVE_COUNTERS=0 (the benchmark switch): a running run shows 0 until it ends, then the exact figures', { timeout: 60_000 }, async () => {
    const d = await testDaemon({ SVC_LIVE_COUNTERS: '0' });
    const w = workArea(0);
    await register(d, webhookYaml('off-hook', { path: 'off', outDir: w.outDir }));
    await d.call('POST', '/api/pipelines/off-hook/start');
    const runId: string = await until(async () => (await d.call('GET', '/api/pipelines/off-hook')).body.active_run_id, 10_000, 'the stream to start');
    await post(
      d,
      'off',
      Array.from({ length: 4 }, (_, i) => JSON.stringify({ n: i })),
    );
    await until(() => readNdjson(w.outFile).length === 4, 10_000, 'the sink to hold 4 records');
    const r = (await d.call('GET', `/api/runs/${runId}`)).body;
    expect(r).toMatchObject({ status: 'running', records_in: 0, records_out: 0 });
    expect(r.live).toBeUndefined();
    expect((await d.call('GET', '/api/pipelines/off-hook')).body.live).toBeNull();
    await d.call('POST', '/api/pipelines/off-hook/stop');
    expect(await finishedRun(d, runId)).toMatchObject({ status: 'success', records_in: 4, records_out: 4 });
  });
});
