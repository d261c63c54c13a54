// Lifecycle and state machine (spec doc 2 section 3): manual runs, conflicts, interval schedules
// without overlapping runs, stop/start, disabled pipelines, cron, failing runs, streams, draining
// stop; versions and rollback.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { quiet, until } from '../helpers/wait.js';
import { expectError, finishedRun, ISO, localYaml, readNdjson, register, SLOW, webhookYaml, workArea } from './_helpers.js';

type Run = { run_id: string; status: string; started_at: string; finished_at: string | null };

const runsOf = async (d: TestDaemon, name: string): Promise<Run[]> => (await d.call('GET', `/api/runs?pipeline=${name}&limit=1000`)).body;
const statusOf = async (d: TestDaemon, name: string): Promise<string> => (await d.call('GET', `/api/pipelines/${name}`)).body.status;

describe('manual pipelines', () => {
  it('registered stopped; POST run -> 202 triggered with a run id; the run is recorded with its counters', async () => {
    const d = await testDaemon();
    const w = workArea(5);
    const created = await register(d, localYaml('man', w));
    expect(created.status).toBe('stopped');
    const t = await d.call('POST', '/api/pipelines/man/run');
    expect(t.status).toBe(202);
    expect(Object.keys(t.body).sort()).toEqual(['name', 'run_id', 'status']);
    expect(t.body).toMatchObject({ name: 'man', status: 'triggered' });
    expect(typeof t.body.run_id).toBe('string');
    const run = await finishedRun(d, t.body.run_id);
    expect(run).toMatchObject({
      run_id: t.body.run_id,
      pipeline: 'man',
      node_id: 'test-node',
      status: 'success',
      records_in: 5,
      records_out: 5,
      records_skipped: 0,
      dlq_count: 0,
      error: null,
    });
    expect(run.bytes_in).toBeGreaterThan(0);
    expect(run.bytes_out).toBeGreaterThan(0);
    expect(run.started_at).toMatch(ISO);
    expect(run.finished_at).toMatch(ISO);
    const listed = await runsOf(d, 'man');
    expect(listed.map((r) => r.run_id)).toEqual([t.body.run_id]);
    expect(readNdjson(w.outFile)).toHaveLength(5);
    // After a manual run the pipeline is stopped again (nothing scheduled).
    await until(async () => (await statusOf(d, 'man')) === 'stopped');
  });

  it('a run while a run is in progress is 409; a run of a stream is 400; a run of an unknown pipeline is 404', async () => {
    const d = await testDaemon();
    const w = workArea(6);
    await register(d, localYaml('busy', { ...w, extra: SLOW }));
    const t = await d.call('POST', '/api/pipelines/busy/run');
    expect(t.status).toBe(202);
    expect(await statusOf(d, 'busy')).toBe('running');
    const again = await d.call('POST', '/api/pipelines/busy/run');
    expect(expectError(again, 409)).toContain(t.body.run_id);
    await finishedRun(d, t.body.run_id);

    await register(d, webhookYaml('str', { path: 'str', outDir: w.outDir }));
    expect(expectError(await d.call('POST', '/api/pipelines/str/run'), 400)).toContain('stream');
    expectError(await d.call('POST', '/api/pipelines/none/run'), 404);
    expectError(await d.call('POST', '/api/pipelines/busy/run?flush=maybe'), 422);
    const flush = await d.call('POST', '/api/pipelines/busy/run?flush=true');
    expect(flush.status).toBe(202);
    expect(flush.body.status).toBe('triggered');
    await d.call('POST', '/api/pipelines/busy/stop');
    expectError(await d.call('POST', '/api/pipelines/none/start'), 404);
    expectError(await d.call('POST', '/api/pipelines/none/stop'), 404);
  });

  it('stop during a manual run drains it: the run is aborted (also when stopped before it read anything)', async () => {
    const d = await testDaemon();
    const w = workArea(20);
    await register(d, localYaml('cut', { ...w, extra: SLOW }));
    // Stopped at once: the source sees the stop before its first file.
    const early = await d.call('POST', '/api/pipelines/cut/run');
    expect((await d.call('POST', '/api/pipelines/cut/stop')).body).toEqual({ name: 'cut', status: 'stopped' });
    const first = await finishedRun(d, early.body.run_id);
    expect(first).toMatchObject({ status: 'aborted', error: expect.stringContaining('stopped') });
    // Stopped mid-file: what is in flight is written, the rest is left.
    const mid = await d.call('POST', '/api/pipelines/cut/run');
    await until(() => readNdjson(w.outFile).length >= 3);
    await d.call('POST', '/api/pipelines/cut/stop');
    const run = await finishedRun(d, mid.body.run_id);
    expect(run).toMatchObject({ status: 'aborted', error: expect.stringContaining('stopped') });
    expect(run.records_out).toBeGreaterThanOrEqual(3);
    expect(run.records_out).toBeLessThan(20);
    // On a busy machine the first run may have read its first file before the stop reached it.
    expect(readNdjson(w.outFile)).toHaveLength(first.records_out + run.records_out);
  });

  it('a failing run (source path missing) puts the pipeline in error and records a failed run with its error', async () => {
    const d = await testDaemon();
    const w = workArea();
    const missing = join(w.root, 'does-not-exist');
    await register(d, localYaml('fails', { ...w, inDir: missing }));
    const t = await d.call('POST', '/api/pipelines/fails/run');
    expect(t.status).toBe(202);
    const run = await finishedRun(d, t.body.run_id);
    expect(run.status).toBe('failed');
    expect(run.error).toContain('does not exist');
    await until(async () => (await statusOf(d, 'fails')) === 'error');
    const p = (await d.call('GET', '/api/pipelines/fails')).body;
    expect(p.error).toContain('does not exist');
    const summary = (await d.call('GET', '/api/pipelines')).body[0];
    expect(summary).toMatchObject({ name: 'fails', status: 'error', last_run_status: 'failed' });
  });
});

describe('scheduled pipelines', () => {
  it('interval pipelines are scheduled and run about every second', async () => {
    const d = await testDaemon();
    const w = workArea(2);
    const created = await register(d, localYaml('tick', { ...w, schedule: '{ type: interval, interval_seconds: 1 }' }));
    expect(created.status).toBe('scheduled');
    const runs = await until(async () => {
      const r = (await runsOf(d, 'tick')).filter((x) => x.status === 'success');
      return r.length >= 3 ? r : undefined;
    }, 8000);
    const starts = runs.map((r) => Date.parse(r.started_at)).sort((a, b) => a - b);
    const gaps = starts.slice(1).map((s, i) => s - starts[i]!);
    for (const gap of gaps) {
      expect(gap).toBeGreaterThan(700);
      expect(gap).toBeLessThan(2100); // one tick, or two if a loaded machine made a run outlast a tick
    }
    expect(Math.min(...gaps)).toBeLessThan(1500);
    expect(['scheduled', 'running']).toContain(await statusOf(d, 'tick'));
  });

  it('runs of a slow interval pipeline never overlap; stop ends the runs, start schedules again', async () => {
    const d = await testDaemon();
    const w = workArea(5); // 5 writes at 2/s with a burst of 2: about 1.5 s per run
    await register(d, localYaml('slow-tick', { ...w, schedule: '{ type: interval, interval_seconds: 1 }', extra: SLOW }));
    const runs = await until(async () => {
      const r = (await runsOf(d, 'slow-tick')).filter((x) => x.status === 'success');
      return r.length >= 2 ? r : undefined;
    }, 15_000);
    for (const r of runs) expect(Date.parse(r.finished_at!) - Date.parse(r.started_at)).toBeGreaterThan(1000);
    const all = (await runsOf(d, 'slow-tick')).filter((r) => r.finished_at);
    const spans = all.map((r) => [Date.parse(r.started_at), Date.parse(r.finished_at!)] as const).sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < spans.length; i++) expect(spans[i]![0], 'a run started before the previous one finished').toBeGreaterThanOrEqual(spans[i - 1]![1]);
    // At most one run is ever `running`.
    expect((await runsOf(d, 'slow-tick')).filter((r) => r.status === 'running').length).toBeLessThanOrEqual(1);

    const stop = await d.call('POST', '/api/pipelines/slow-tick/stop');
    expect(stop.status).toBe(200);
    expect(stop.body).toEqual({ name: 'slow-tick', status: 'stopped' });
    expect(await statusOf(d, 'slow-tick')).toBe('stopped');
    const after = await runsOf(d, 'slow-tick');
    expect(after.filter((r) => r.status === 'running')).toEqual([]); // the stop drained the active run
    await quiet(1600);
    expect((await runsOf(d, 'slow-tick')).length).toBe(after.length);
    expect(await statusOf(d, 'slow-tick')).toBe('stopped');

    const start = await d.call('POST', '/api/pipelines/slow-tick/start');
    expect(start.status).toBe(200);
    expect(start.body).toEqual({ name: 'slow-tick', status: 'scheduled' });
    await until(async () => (await runsOf(d, 'slow-tick')).length > after.length, 5000);
    await d.call('POST', '/api/pipelines/slow-tick/stop');
  });

  it('enabled: false registers without scheduling; start schedules it', async () => {
    const d = await testDaemon();
    const w = workArea(1);
    const created = await register(d, localYaml('off', { ...w, schedule: '{ type: interval, interval_seconds: 1 }', enabled: false }));
    expect(created).toMatchObject({ enabled: false, status: 'stopped' });
    await quiet(1300);
    expect(await runsOf(d, 'off')).toEqual([]);
    expect(await statusOf(d, 'off')).toBe('stopped');
    const start = await d.call('POST', '/api/pipelines/off/start');
    expect(start.body.status).toBe('scheduled');
    await until(async () => (await runsOf(d, 'off')).length > 0, 5000);
    await d.call('POST', '/api/pipelines/off/stop');
  });

  it('a cron pipeline is scheduled and its next run is listed in the daemon status', async () => {
    const d = await testDaemon();
    const w = workArea(1);
    const created = await register(d, localYaml('nightly', { ...w, schedule: '{ type: cron, cron: "30 2 * * *" }' }));
    expect(created.status).toBe('scheduled');
    const s = await d.call('GET', '/api/daemon/status');
    const next = s.body.next_runs.find((n: { pipeline: string }) => n.pipeline === 'nightly');
    expect(next).toBeDefined();
    expect(next.next_run).toMatch(ISO);
    const at = new Date(next.next_run);
    expect(at.getTime()).toBeGreaterThan(Date.now());
    expect(at.getTime()).toBeLessThanOrEqual(Date.now() + 24 * 3600_000);
    expect(at.getMinutes()).toBe(30);
    // Stopped: no next run.
    await d.call('POST', '/api/pipelines/nightly/stop');
    const s2 = await d.call('GET', '/api/daemon/status');
    expect(s2.body.next_runs.find((n: { pipeline: string }) => n.pipeline === 'nightly')).toBeUndefined();
  });
});

describe('streams', () => {
  it('a webhook stream runs as soon as it is registered; stop and start', async () => {
    const d = await testDaemon();
    const w = workArea();
    const created = await register(d, webhookYaml('live', { path: 'live', outDir: w.outDir }));
    expect(created.status).toBe('running');
    const s = await d.call('GET', '/api/daemon/status');
    expect(s.body.active_streams.map((x: { pipeline: string }) => x.pipeline)).toEqual(['live']);
    const stop = await d.call('POST', '/api/pipelines/live/stop');
    expect(stop.body).toEqual({ name: 'live', status: 'stopped' });
    expectError(await d.call('POST', '/webhooks/live', { body: { a: 1 } }), 404);
    const start = await d.call('POST', '/api/pipelines/live/start');
    expect(start.body.status).toBe('running');
    expect((await d.call('POST', '/webhooks/live', { body: { a: 2 } })).status).toBe(202);
    await until(() => readNdjson(w.outFile).length === 1);
  });

  it('GET /api/pipelines/{name}/placement: a single-slot view of a running stream, 404 otherwise', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, webhookYaml('placed', { path: 'placed', outDir: w.outDir }));
    await register(d, localYaml('batchy', w));
    expect((await d.call('POST', '/webhooks/placed', { body: { a: 1 } })).status).toBe(202);
    await until(() => readNdjson(w.outFile).length === 1);
    const view = await until(async () => {
      const r = await d.call('GET', '/api/pipelines/placed/placement');
      return r.status === 200 && r.body.records_in === 1 ? r.body : undefined;
    });
    expect(view).toMatchObject({ pipeline_name: 'placed', status: 'running', slot_count: 1, active_slots: 1, records_out: 1 });
    expect(view.started_at).toMatch(ISO);
    expect(view.slots).toHaveLength(1);
    expect(view.slots[0]).toMatchObject({ worker_index: 0, status: 'running', restart_count: 0, current_run_id: expect.any(String) });
    expect(view.slots[0].stats).toMatchObject({ schedule_type: 'stream', records_in: 1, stale: false });
    expectError(await d.call('GET', '/api/pipelines/batchy/placement'), 404);
    expectError(await d.call('GET', '/api/pipelines/ghost/placement'), 404);
    await d.call('POST', '/api/pipelines/placed/stop');
    expectError(await d.call('GET', '/api/pipelines/placed/placement'), 404);
  });

  it('PUT restarts a stream with its new config (a new webhook path)', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, webhookYaml('moving', { path: 'old', outDir: w.outDir }));
    const r = await d.call('PUT', '/api/pipelines/moving', { yaml: webhookYaml('moving', { path: 'new', outDir: w.outDir }) });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'running', version: 2 });
    expectError(await d.call('POST', '/webhooks/old', { body: { a: 1 } }), 404);
    expect((await d.call('POST', '/webhooks/new', { body: { a: 2 } })).status).toBe(202);
    await until(() => readNdjson(w.outFile).length === 1);
    expect(readNdjson(w.outFile)).toEqual([{ a: 2 }]);
  });

  it('stop drains: every accepted webhook body reaches the sink', async () => {
    const d = await testDaemon();
    const w = workArea();
    // Slow sink so that bodies are still queued when the stop arrives.
    await register(d, webhookYaml('drain', { path: 'drain', outDir: w.outDir, extra: ['rate_limit_rps: 5'] }));
    const accepted: number[] = [];
    for (let i = 0; i < 15; i++) {
      const r = await d.call('POST', '/webhooks/drain', { body: { n: i } });
      if (r.status === 202) accepted.push(i);
      else expect(r.status).toBe(503);
    }
    expect(accepted.length).toBeGreaterThan(0);
    expect(readNdjson(w.outFile).length).toBeLessThan(accepted.length); // still in flight
    const stop = await d.call('POST', '/api/pipelines/drain/stop');
    expect(stop.body).toEqual({ name: 'drain', status: 'stopped' });
    const written = readNdjson(w.outFile).map((r) => r.n);
    expect(written.sort((a, b) => Number(a) - Number(b))).toEqual(accepted);
  });
});

describe('versions and rollback', () => {
  it('lists versions newest first with one active; rollback restores the old config', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, localYaml('ver', { ...w, description: 'first' }));
    expect((await d.call('PUT', '/api/pipelines/ver', { yaml: localYaml('ver', { ...w, description: 'second' }) })).status).toBe(200);
    expect((await d.call('PUT', '/api/pipelines/ver', { yaml: localYaml('ver', { ...w, description: 'third' }) })).status).toBe(200);

    const v = await d.call('GET', '/api/pipelines/ver/versions');
    expect(v.status).toBe(200);
    expect(v.body.map((x: { version: number }) => x.version)).toEqual([3, 2, 1]);
    for (const x of v.body) {
      expect(Object.keys(x).sort()).toEqual(['created_at', 'id', 'is_active', 'name', 'version']);
      expect(Number.isInteger(x.id)).toBe(true);
      expect(x.name).toBe('ver');
      expect(x.created_at).toMatch(ISO);
      expect([0, 1]).toContain(x.is_active);
    }
    expect(v.body.filter((x: { is_active: number }) => x.is_active === 1).map((x: { version: number }) => x.version)).toEqual([3]);

    const rb = await d.call('POST', '/api/pipelines/ver/rollback?version=1');
    expect(rb.status).toBe(200);
    expect(rb.body).toEqual({ name: 'ver', status: 'stopped', rolled_back_to_version: 1 });
    const g = await d.call('GET', '/api/pipelines/ver');
    expect(g.body).toMatchObject({ description: 'first', version: 1 });
    expect(g.body.yaml).toContain('first');
    const v2 = await d.call('GET', '/api/pipelines/ver/versions');
    expect(v2.body.filter((x: { is_active: number }) => x.is_active === 1).map((x: { version: number }) => x.version)).toEqual([1]);
  });

  it('rollback of an interval pipeline restarts its schedule', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, localYaml('ver-int', { ...w, schedule: '{ type: interval, interval_seconds: 3600 }', description: 'a' }));
    await d.call('PUT', '/api/pipelines/ver-int', {
      yaml: localYaml('ver-int', { ...w, schedule: '{ type: interval, interval_seconds: 3600 }', description: 'b' }),
    });
    const rb = await d.call('POST', '/api/pipelines/ver-int/rollback?version=1');
    expect(rb.body.status).toBe('stopped');
    expect(await statusOf(d, 'ver-int')).toBe('scheduled');
  });

  it('rollback errors: missing version 404, no version 422, unknown pipeline 404', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, localYaml('ver2', w));
    expect(expectError(await d.call('POST', '/api/pipelines/ver2/rollback?version=7'), 404)).toContain('7');
    expectError(await d.call('POST', '/api/pipelines/ver2/rollback'), 422);
    expectError(await d.call('POST', '/api/pipelines/ver2/rollback?version=abc'), 422);
    expectError(await d.call('POST', '/api/pipelines/ghost/rollback?version=1'), 404);
    expectError(await d.call('GET', '/api/pipelines/ghost/versions'), 404);
  });
});
