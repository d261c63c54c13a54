// Restarts (spec doc 2 sections 1, 3, 4): pipelines, versions, alert rules and run history live in
// the database and come back; a pipeline file wins over an API pipeline of the same name; a run
// cut short by kill -9 is recorded as aborted by the next daemon, never lost.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { serveChild, testDaemon } from '../helpers/daemon.js';
import { until } from '../helpers/wait.js';
import { tempDir } from '../helpers/fs.js';
import { finishedRun, localYaml, readNdjson, register, SLOW, webhookYaml, workArea } from './_helpers.js';

describe('daemon restart', () => {
  it('API pipelines, their versions, alert rules and run history survive a stop and start', async () => {
    const d1 = await testDaemon();
    const w = workArea(3);
    await register(d1, localYaml('keep-manual', { ...w, description: 'v1' }));
    expect((await d1.call('PUT', '/api/pipelines/keep-manual', { yaml: localYaml('keep-manual', { ...w, description: 'v2' }) })).status).toBe(200);
    await register(d1, localYaml('keep-interval', { ...w, schedule: '{ type: interval, interval_seconds: 3600 }' }));
    await register(d1, localYaml('keep-off', { ...w, schedule: '{ type: interval, interval_seconds: 3600 }', enabled: false }));
    await register(d1, webhookYaml('keep-stream', { path: 'keep', outDir: join(w.root, 'stream-out') }));
    const alert = { name: 'r1', condition: 'failed', action: 'webhook', webhook_url: 'http://127.0.0.1:9/x', cooldown_seconds: 5 };
    expect((await d1.call('POST', '/api/pipelines/keep-manual/alerts', { body: alert })).status).toBe(201);
    const t = await d1.call('POST', '/api/pipelines/keep-manual/run');
    const run = await finishedRun(d1, t.body.run_id);
    const before = (await d1.call('GET', '/api/pipelines')).body;
    const versions = (await d1.call('GET', '/api/pipelines/keep-manual/versions')).body;
    const rules = (await d1.call('GET', '/api/pipelines/keep-manual/alerts')).body;
    expect(rules).toEqual([expect.objectContaining(alert)]);
    await d1.stop();

    const d2 = await testDaemon({}, { dir: d1.dir });
    const after = (await d2.call('GET', '/api/pipelines')).body;
    // The same summaries (a stream starts a new run at each start, so its last run is a new one).
    const notStream = (l: { name: string }[]) => l.filter((p) => p.name !== 'keep-stream');
    expect(notStream(after)).toEqual(notStream(before));
    expect(after.map((p: { name: string }) => p.name)).toEqual(before.map((p: { name: string }) => p.name));
    const byName = Object.fromEntries(after.map((p: { name: string }) => [p.name, p]));
    expect(byName['keep-manual']).toMatchObject({ status: 'stopped', last_run_status: 'success' });
    expect(byName['keep-interval'].status).toBe('scheduled');
    expect(byName['keep-off'].status).toBe('stopped');
    expect(byName['keep-stream'].status).toBe('running');
    expect((await d2.call('GET', '/api/pipelines/keep-manual')).body).toMatchObject({ description: 'v2', version: 2, origin: 'api' });
    expect((await d2.call('GET', '/api/pipelines/keep-manual/versions')).body).toEqual(versions);
    expect((await d2.call('GET', '/api/pipelines/keep-manual/alerts')).body).toEqual(rules);
    expect((await d2.call('GET', `/api/runs/${run.run_id}`)).body).toEqual(run);
    expect((await d2.call('GET', '/api/runs?pipeline=keep-manual')).body).toEqual([run]);
    // The stream's run of the first daemon ended when it stopped; the second daemon started a new one.
    const streamRuns = (await d2.call('GET', '/api/runs?pipeline=keep-stream')).body;
    expect(streamRuns.map((r: { status: string }) => r.status)).toEqual(['running', 'success']);
    expect((await d2.call('GET', '/api/ready')).body.pipelines_loaded).toBe(4);
    // The stream serves its webhook path again.
    expect((await d2.call('POST', '/webhooks/keep', { body: { again: true } })).status).toBe(202);
    await until(() => readNdjson(join(w.root, 'stream-out', 'out.ndjson')).length === 1);
    // And the rollback history still works.
    expect((await d2.call('POST', '/api/pipelines/keep-manual/rollback?version=1')).status).toBe(200);
    expect((await d2.call('GET', '/api/pipelines/keep-manual')).body.description).toBe('v1');
  });

  it('a pipeline file wins over an API pipeline of the same name', async () => {
    const d1 = await testDaemon();
    const w = workArea(1);
    await register(d1, localYaml('both', { ...w, description: 'from the API' }));
    await register(d1, localYaml('api-only', w));
    await d1.stop();
    const file = join(d1.dir, 'pipelines', 'both.yaml');
    writeFileSync(file, localYaml('both', { ...w, description: 'from the file' }));

    const d2 = await testDaemon({}, { dir: d1.dir });
    const both = (await d2.call('GET', '/api/pipelines/both')).body;
    expect(both).toMatchObject({ description: 'from the file', origin: 'file', file, version: 2 });
    expect((await d2.call('GET', '/api/pipelines/api-only')).body.origin).toBe('api');
    // Still the file after another restart (the file is unchanged: no new version).
    await d2.stop();
    const d3 = await testDaemon({}, { dir: d1.dir });
    expect((await d3.call('GET', '/api/pipelines/both')).body).toMatchObject({ description: 'from the file', origin: 'file', version: 2 });
    // The API cannot register the name over the file; a reload keeps the file.
    expect((await d3.call('POST', '/api/pipelines', { yaml: localYaml('both', { ...w, description: 'API again' }) })).status).toBe(409);
    writeFileSync(file, localYaml('both', { ...w, description: 'file edited' }));
    const reload = await d3.call('POST', '/api/pipelines/reload');
    expect(reload.status).toBe(200);
    expect(reload.body).toMatchObject({ reloaded: 1, total: 2 });
    expect((await d3.call('GET', '/api/pipelines/both')).body).toMatchObject({ description: 'file edited', origin: 'file', version: 3 });
  });

  it('a file dropped into the directory replaces a running API pipeline on reload', async () => {
    const d = await testDaemon();
    const w = workArea(1);
    await register(d, localYaml('swap', { ...w, description: 'api' }));
    writeFileSync(join(d.dir, 'pipelines', 'swap.yml'), localYaml('swap', { ...w, description: 'file' }));
    const r = await d.call('POST', '/api/pipelines/reload');
    expect(r.body).toMatchObject({ reloaded: 1, total: 1 });
    expect((await d.call('GET', '/api/pipelines/swap')).body).toMatchObject({ description: 'file', origin: 'file' });
  });

  it('kill -9 mid-run: the next daemon records the interrupted run as aborted', async () => {
    const dir = tempDir('svc-kill-');
    const db = join(dir, 'svc.db');
    const pipelines = join(dir, 'pipelines');
    const { url, child, exited } = await serveChild({ SVC_DB_PATH: db, SVC_PIPELINE_DIR: pipelines });
    const api = async (method: string, path: string, body?: string) => {
      const res = await fetch(url + path, { method, body, headers: body ? { 'content-type': 'application/yaml' } : {} });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    };

    const w = workArea(40); // 40 writes at 2/s: about 19 s if left alone
    const created = await api('POST', '/api/pipelines', localYaml('killed', { ...w, extra: SLOW }));
    expect(created.status).toBe(201);
    const t = await api('POST', '/api/pipelines/killed/run');
    expect(t.status).toBe(202);
    const runId: string = t.body.run_id;
    const running = await until(async () => {
      const r = await api('GET', '/api/runs?pipeline=killed');
      return r.body.length === 1 && r.body[0].status === 'running' ? r.body[0] : undefined;
    });
    expect(running).toMatchObject({ run_id: runId, status: 'running', finished_at: null });
    // Mid-run: some records written, not all.
    await until(() => readNdjson(w.outFile).length >= 3);
    child.kill('SIGKILL');
    expect(await exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(readNdjson(w.outFile).length).toBeLessThan(40);

    const d = await testDaemon({ SVC_DB_PATH: db });
    const run = (await d.call('GET', `/api/runs/${runId}`)).body;
    expect(run).toMatchObject({ run_id: runId, pipeline: 'killed', node_id: 'test-node', status: 'aborted' });
    expect(run.error).toMatch(/interrupted/);
    expect(Date.parse(run.finished_at)).toBeGreaterThanOrEqual(Date.parse(run.started_at));
    expect((await d.call('GET', '/api/runs?status=aborted')).body.map((r: { run_id: string }) => r.run_id)).toEqual([runId]);
    expect((await d.call('GET', '/api/runs?status=running')).body).toEqual([]);
    // The pipeline came back from the database, not running, and can run again.
    expect((await d.call('GET', '/api/pipelines/killed')).body).toMatchObject({ status: 'stopped', last_run_status: 'aborted' });
    const written = readNdjson(w.outFile).length;
    const again = await d.call('POST', '/api/pipelines/killed/run');
    expect(again.status).toBe(202);
    await until(() => readNdjson(w.outFile).length > written);
    await d.call('POST', '/api/pipelines/killed/stop');
    expect((await d.call('GET', `/api/runs/${again.body.run_id}`)).body.status).toBe('aborted');
  });
});
