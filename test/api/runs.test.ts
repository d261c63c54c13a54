// Run history and live stats (spec doc 2 sections 2 and 4): filters, pagination, CSV, one run,
// validation errors; per-pipeline stats over the last hour.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { expectError, finishedRun, localYaml, register, RUN_FIELDS, workArea } from './_helpers.js';

type Run = Record<string, any>;

/** Runs `name` once and waits for its record. */
async function runOnce(d: TestDaemon, name: string): Promise<Run> {
  const t = await d.call('POST', `/api/pipelines/${name}/run`);
  expect(t.status, t.text).toBe(202);
  return finishedRun(d, t.body.run_id);
}

describe('GET /api/runs', () => {
  // The daemon is made per test (the harness stops it after each), so each test builds its history.
  let d: TestDaemon;
  let okRuns: Run[];
  let failedRun: Run;

  async function history() {
    d = await testDaemon();
    const w = workArea(3);
    await register(d, localYaml('ok', w));
    await register(d, localYaml('bad', { ...w, inDir: join(w.root, 'missing') }));
    okRuns = [];
    for (let i = 0; i < 5; i++) okRuns.push(await runOnce(d, 'ok'));
    failedRun = await runOnce(d, 'bad');
  }

  it('lists every run newest first with the run record fields; unknown filters answer 422', async () => {
    await history();
    const r = await d.call('GET', '/api/runs');
    expect(r.status).toBe(200);
    expect(r.body).toHaveLength(6);
    for (const run of r.body) expect(Object.keys(run).sort()).toEqual([...RUN_FIELDS].sort());
    // Every run names the pipeline version it ran (each pipeline was registered once: version 1).
    for (const run of r.body) expect(run.pipeline_version).toBe(1);
    const starts = r.body.map((x: Run) => Date.parse(x.started_at));
    expect([...starts].sort((a, b) => b - a)).toEqual(starts);
    expect(r.body[0].run_id).toBe(failedRun.run_id);
    expect(okRuns.every((x) => x.status === 'success' && x.records_in === 3 && x.records_out === 3)).toBe(true);
    expect(failedRun).toMatchObject({ status: 'failed', records_in: 0 });
    expect(typeof failedRun.error).toBe('string');
    expectError(await d.call('GET', '/api/runs?bogus=1'), 422);
  });

  it('filters by pipeline, status and from_dt', async () => {
    await history();
    const ok = await d.call('GET', '/api/runs?pipeline=ok');
    expect(ok.body.map((x: Run) => x.run_id).sort()).toEqual(okRuns.map((x) => x.run_id).sort());
    const failed = await d.call('GET', '/api/runs?status=failed');
    expect(failed.body.map((x: Run) => x.run_id)).toEqual([failedRun.run_id]);
    const success = await d.call('GET', '/api/runs?status=success&pipeline=bad');
    expect(success.body).toEqual([]);
    expect((await d.call('GET', '/api/runs?pipeline=nobody')).body).toEqual([]);
    // from_dt: a lower bound on started_at (inclusive).
    const third = okRuns[2]!;
    const from = await d.call('GET', `/api/runs?pipeline=ok&from_dt=${encodeURIComponent(third.started_at)}`);
    expect(from.status).toBe(200);
    expect(from.body.map((x: Run) => x.run_id).sort()).toEqual(
      okRuns
        .slice(2)
        .map((x) => x.run_id)
        .sort(),
    );
    const future = await d.call('GET', `/api/runs?from_dt=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`);
    expect(future.body).toEqual([]);
    expectError(await d.call('GET', '/api/runs?from_dt=yesterday'), 422);
    expectError(await d.call('GET', '/api/runs?status=exploded'), 422);
  });

  it('paginates with limit and offset without overlaps or gaps', async () => {
    await history();
    const all = (await d.call('GET', '/api/runs')).body.map((x: Run) => x.run_id);
    const pages: string[] = [];
    for (let offset = 0; offset < 8; offset += 2) {
      const p = await d.call('GET', `/api/runs?limit=2&offset=${offset}`);
      expect(p.status).toBe(200);
      expect(p.body.length).toBeLessThanOrEqual(2);
      pages.push(...p.body.map((x: Run) => x.run_id));
    }
    expect(pages).toEqual(all);
    expect(new Set(pages).size).toBe(6);
    expect((await d.call('GET', '/api/runs?limit=1')).body).toHaveLength(1);
    expect((await d.call('GET', '/api/runs?offset=100')).body).toEqual([]);
  });

  it('bad limit or offset is 422', async () => {
    d = await testDaemon();
    for (const qs of ['limit=0', 'limit=-1', 'limit=abc', 'limit=1.5', 'offset=-1', 'offset=x']) {
      expectError(await d.call('GET', `/api/runs?${qs}`), 422);
    }
  });

  it('format=csv is text/csv with a header row of the run record columns', async () => {
    await history();
    const r = await d.call('GET', '/api/runs?format=csv&pipeline=ok');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/csv/);
    const rows = parse(r.text) as string[][];
    expect(rows[0]).toEqual(RUN_FIELDS);
    expect(rows).toHaveLength(1 + okRuns.length);
    const byId = new Map(rows.slice(1).map((row) => [row[0], Object.fromEntries(RUN_FIELDS.map((c, i) => [c, row[i]]))]));
    for (const run of okRuns) {
      const row = byId.get(run.run_id)!;
      expect(row).toMatchObject({ pipeline: 'ok', status: 'success', records_in: '3', records_out: '3', started_at: run.started_at });
      expect(JSON.parse(row.errors!)).toEqual(run.errors);
    }
    const empty = await d.call('GET', '/api/runs?format=csv&pipeline=nobody');
    expect(parse(empty.text)).toEqual([RUN_FIELDS]);
    expectError(await d.call('GET', '/api/runs?format=xml'), 422);
  });

  it('GET /api/runs/{id} gives one run; an unknown id is 404', async () => {
    await history();
    const r = await d.call('GET', `/api/runs/${okRuns[0]!.run_id}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual(okRuns[0]);
    expect(expectError(await d.call('GET', '/api/runs/not-a-run'), 404)).toContain('not-a-run');
  });
});

describe('GET /api/stats', () => {
  it('one row per pipeline over the last hour', async () => {
    const d = await testDaemon();
    const w = workArea(4);
    await register(d, localYaml('st-ok', w));
    await register(d, localYaml('st-bad', { ...w, inDir: join(w.root, 'missing') }));
    await register(d, localYaml('st-idle', w));
    const runs = [await runOnce(d, 'st-ok'), await runOnce(d, 'st-ok'), await runOnce(d, 'st-bad')];
    const r = await d.call('GET', '/api/stats');
    expect(r.status).toBe(200);
    expect(r.body.map((x: Run) => x.pipeline)).toEqual(['st-bad', 'st-ok']);
    for (const row of r.body)
      expect(Object.keys(row).sort()).toEqual(['avg_duration_seconds', 'error_rate', 'pipeline', 'records_in', 'records_out', 'run_count']);
    const ok = r.body.find((x: Run) => x.pipeline === 'st-ok');
    expect(ok).toMatchObject({ records_in: 8, records_out: 8, error_rate: 0, run_count: 2 });
    const dur = (x: Run) => (Date.parse(x.finished_at) - Date.parse(x.started_at)) / 1000;
    expect(ok.avg_duration_seconds).toBeCloseTo((dur(runs[0]!) + dur(runs[1]!)) / 2, 2);
    expect(r.body.find((x: Run) => x.pipeline === 'st-bad')).toMatchObject({ records_in: 0, records_out: 0, error_rate: 0, run_count: 1 });
  });

  it('runs finished more than an hour ago are left out; the default page size is 100', async () => {
    const d = await testDaemon();
    const w = workArea(2);
    await register(d, localYaml('st-old', w));
    const at = (msAgo: number) => new Date(Date.now() - msAgo).toISOString();
    const old = {
      pipeline: 'st-old',
      node_id: 'test-node',
      status: 'success' as const,
      records_filtered: 0,
      records_skipped: 0,
      bytes_in: 1,
      bytes_out: 1,
      dlq_count: 0,
      error: null,
      errors: [],
    };
    // 104 runs two hours ago, one run of 10 records 30 minutes ago (written straight to the store).
    for (let i = 0; i < 104; i++) {
      await d.store.runs.finish({
        ...old,
        run_id: `old-${String(i).padStart(3, '0')}`,
        started_at: at(7_200_000 + 1000 * i),
        finished_at: at(7_190_000 + 1000 * i),
        records_in: 100,
        records_out: 100,
      });
    }
    await d.store.runs.finish({ ...old, run_id: 'recent', started_at: at(1_800_000 + 4000), finished_at: at(1_800_000), records_in: 10, records_out: 9 });
    await runOnce(d, 'st-old');
    const row = (await d.call('GET', '/api/stats')).body.find((x: Run) => x.pipeline === 'st-old');
    expect(row).toMatchObject({ records_in: 12, records_out: 11, run_count: 2 });
    const page = await d.call('GET', '/api/runs');
    expect(page.body).toHaveLength(100);
    expect((await d.call('GET', '/api/runs?limit=1000')).body).toHaveLength(106);
    const lastHour = await d.call('GET', `/api/runs?from_dt=${encodeURIComponent(at(3_600_000))}`);
    expect(lastHour.body).toHaveLength(2);
    expect(lastHour.body[1].run_id).toBe('recent');
  });

  it('error_rate is records_skipped / records_in', async () => {
    const d = await testDaemon();
    const w = workArea(0);
    // Two good records and two that fail the cast: 2 skipped of 4.
    writeFileSync(join(w.inDir, 'a.ndjson'), '{"v":"1"}\n{"v":"x"}\n{"v":"2"}\n{"v":"y"}\n');
    const yaml = localYaml('st-err', { ...w, extra: ['transforms:', '  - { type: cast, fields: { v: int } }'] });
    await register(d, yaml);
    const run = await runOnce(d, 'st-err');
    expect(run).toMatchObject({ status: 'success', records_in: 4, records_out: 2, records_skipped: 2 });
    const row = (await d.call('GET', '/api/stats')).body.find((x: Run) => x.pipeline === 'st-err');
    expect(row.records_in).toBe(4);
    expect(row).toMatchObject({ records_in: 4, records_out: 2, run_count: 1 });
    expect(row.error_rate).toBeCloseTo(0.5, 6);
  });
});
