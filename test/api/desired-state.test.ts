// Desired state (issue 29, item 4): start and stop are remembered in the database. A stopped
// pipeline stays stopped across daemon restarts (graceful and kill -9) until someone starts it; the
// YAML's `enabled` is only the state a new pipeline starts in (a PUT does not change the remembered
// state). The manager's side (kill -9, a standby taking over) is test/cluster/desired-state.test.ts.
import { join } from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/observability/log.js';
import { openStore } from '../../src/store/index.js';
import { serveChild, testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/fs.js';
import { quiet, until } from '../helpers/wait.js';
import { localYaml, readNdjson, register, webhookYaml, workArea } from './_helpers.js';

const runsOf = async (d: TestDaemon, name: string): Promise<{ run_id: string; status: string }[]> =>
  (await d.call('GET', `/api/runs?pipeline=${name}&limit=1000`)).body;
const stateOf = async (d: TestDaemon, name: string) => (await d.call('GET', `/api/pipelines/${name}`)).body;
const listed = async (d: TestDaemon) => Object.fromEntries(((await d.call('GET', '/api/pipelines')).body as { name: string }[]).map((p) => [p.name, p]));

describe('a stopped pipeline stays stopped across daemon restarts', () => {
  it('a stopped stream and a stopped interval pipeline come back stopped; start after the restart runs them, and that is remembered too', async () => {
    const d1 = await testDaemon();
    const w = workArea(1);
    const streamOut = join(w.root, 'stream-out');
    await register(d1, webhookYaml('alarms', { path: 'alarms', outDir: streamOut }));
    await register(d1, localYaml('tick', { ...w, schedule: '{ type: interval, interval_seconds: 1 }' }));
    await register(d1, webhookYaml('kept', { path: 'kept', outDir: join(w.root, 'kept-out') }));
    await until(async () => (await stateOf(d1, 'alarms')).status === 'running');
    await until(async () => (await runsOf(d1, 'tick')).length > 0, 5000);
    expect((await listed(d1)).alarms).toMatchObject({ status: 'running', desired: 'running' });

    const stopped = await d1.call('POST', '/api/pipelines/alarms/stop');
    expect(stopped.status).toBe(200);
    expect(stopped.body).toEqual({ name: 'alarms', status: 'stopped' });
    expect((await d1.call('POST', '/api/pipelines/tick/stop')).status).toBe(200);
    const l1 = await listed(d1);
    expect(l1.alarms).toMatchObject({ status: 'stopped', desired: 'stopped', enabled: true });
    expect(l1.tick).toMatchObject({ status: 'stopped', desired: 'stopped', enabled: true });
    expect(l1.kept).toMatchObject({ status: 'running', desired: 'running' });
    await d1.stop();

    const d2 = await testDaemon({}, { dir: d1.dir });
    const tickRuns = (await runsOf(d2, 'tick')).length;
    expect(await stateOf(d2, 'alarms')).toMatchObject({ status: 'stopped', desired: 'stopped', active_run_id: null });
    expect(await stateOf(d2, 'tick')).toMatchObject({ status: 'stopped', desired: 'stopped', active_run_id: null });
    // The stream that was not stopped runs again; the stopped one serves nothing and starts no run.
    expect(await stateOf(d2, 'kept')).toMatchObject({ status: 'running', desired: 'running' });
    expect((await d2.call('POST', '/webhooks/alarms', { body: { n: 1 } })).status).toBe(404);
    expect((await d2.call('GET', '/api/daemon/status')).body.next_runs.map((n: { pipeline: string }) => n.pipeline)).not.toContain('tick');
    await quiet(1500); // more than the interval: a fire would have made a run
    expect(await runsOf(d2, 'tick')).toHaveLength(tickRuns);
    expect((await runsOf(d2, 'alarms')).filter((r) => r.status === 'running')).toEqual([]);

    // Started after the restart: they run, and the start is what the next restart remembers.
    const start = await d2.call('POST', '/api/pipelines/alarms/start');
    expect(start.status).toBe(200);
    expect(start.body).toEqual({ name: 'alarms', status: 'running' });
    expect((await d2.call('POST', '/api/pipelines/tick/start')).body).toEqual({ name: 'tick', status: 'scheduled' });
    expect((await d2.call('POST', '/webhooks/alarms', { body: { n: 2 } })).status).toBe(202);
    await until(() => readNdjson(join(streamOut, 'out.ndjson')).length === 1);
    await until(async () => (await runsOf(d2, 'tick')).length > tickRuns, 5000);
    expect((await listed(d2)).tick).toMatchObject({ desired: 'running' });
    await d2.stop();

    const d3 = await testDaemon({}, { dir: d1.dir });
    expect(await stateOf(d3, 'alarms')).toMatchObject({ status: 'running', desired: 'running' });
    expect(await stateOf(d3, 'tick')).toMatchObject({ status: 'scheduled', desired: 'running' });
    expect((await d3.call('POST', '/webhooks/alarms', { body: { n: 3 } })).status).toBe(202);
    await until(() => readNdjson(join(streamOut, 'out.ndjson')).length === 2);
  });

  it('a stop answered 200 holds after kill -9: the next daemon does not start the stream', async () => {
    const dir = tempDir('svc-desired-kill-');
    const db = join(dir, 'svc.db');
    const env = { SVC_DB_PATH: db, SVC_PIPELINE_DIR: join(dir, 'pipelines'), SVC_STATE_DIR: join(dir, 'state') };
    const { url, child, exited } = await serveChild(env);
    const api = async (method: string, path: string, body?: string) => {
      const res = await fetch(url + path, { method, body, headers: body ? { 'content-type': 'application/yaml' } : {} });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    };
    const out = join(dir, 'out');
    expect((await api('POST', '/api/pipelines', webhookYaml('mqtt-alarms', { path: 'm', outDir: out }))).status).toBe(201);
    await until(async () => (await api('GET', '/api/pipelines/mqtt-alarms')).body.status === 'running');
    expect((await api('POST', '/api/pipelines/mqtt-alarms/stop')).status).toBe(200);
    child.kill('SIGKILL');
    expect(await exited).toEqual({ code: null, signal: 'SIGKILL' });

    const d = await testDaemon(env, { dir });
    expect(await stateOf(d, 'mqtt-alarms')).toMatchObject({ status: 'stopped', desired: 'stopped', active_run_id: null });
    expect((await d.call('POST', '/webhooks/m', { body: { n: 1 } })).status).toBe(404);
    expect((await d.call('POST', '/api/pipelines/mqtt-alarms/start')).body.status).toBe('running');
    expect((await d.call('POST', '/webhooks/m', { body: { n: 1 } })).status).toBe(202);
    await until(() => readNdjson(join(out, 'out.ndjson')).length === 1);
  });
});

describe('`enabled` is the state a new pipeline starts in', () => {
  it('enabled: false registers stopped and stays so across a restart and a PUT with enabled: true; start, then a PUT with enabled: false keeps it running', async () => {
    const d1 = await testDaemon();
    const w = workArea(0);
    const yaml = (enabled: boolean, description: string) =>
      webhookYaml('off', { path: 'off', outDir: w.outDir }).replace('  schedule:', `  enabled: ${enabled}\n  description: ${description}\n  schedule:`);
    const created = await register(d1, yaml(false, 'v1'));
    expect(created).toMatchObject({ enabled: false, status: 'stopped', desired: 'stopped' });
    expect((await d1.call('POST', '/webhooks/off', { body: {} })).status).toBe(404);
    await d1.stop();

    const d2 = await testDaemon({}, { dir: d1.dir });
    expect(await stateOf(d2, 'off')).toMatchObject({ status: 'stopped', desired: 'stopped' });
    // A new version with enabled: true does not start what is stopped.
    const put = await d2.call('PUT', '/api/pipelines/off', { yaml: yaml(true, 'v2') });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({ version: 2, enabled: true, status: 'stopped', desired: 'stopped' });
    expect((await d2.call('POST', '/webhooks/off', { body: {} })).status).toBe(404);

    expect((await d2.call('POST', '/api/pipelines/off/start')).body).toEqual({ name: 'off', status: 'running' });
    // A new version with enabled: false does not stop what runs: restarted with the new config.
    const put2 = await d2.call('PUT', '/api/pipelines/off', { yaml: yaml(false, 'v3') });
    expect(put2.body).toMatchObject({ version: 3, enabled: false, desired: 'running' });
    await until(async () => (await stateOf(d2, 'off')).status === 'running');
    expect((await d2.call('POST', '/webhooks/off', { body: { n: 1 } })).status).toBe(202);
    await until(() => readNdjson(w.outFile).length === 1);
    // A rollback keeps it too.
    expect((await d2.call('POST', '/api/pipelines/off/rollback?version=1')).status).toBe(200);
    await until(async () => (await stateOf(d2, 'off')).status === 'running');
    expect(await stateOf(d2, 'off')).toMatchObject({ version: 1, enabled: false, desired: 'running' });
    await d2.stop();

    const d3 = await testDaemon({}, { dir: d1.dir });
    expect(await stateOf(d3, 'off')).toMatchObject({ version: 1, status: 'running', desired: 'running' });
    // Deleted and registered again, it is a new pipeline: its `enabled` decides again.
    expect((await d3.call('DELETE', '/api/pipelines/off')).status).toBe(204);
    expect(await register(d3, yaml(false, 'again'))).toMatchObject({ version: 1, status: 'stopped', desired: 'stopped' });
  });

  it('a pipeline saved before desired states were remembered takes its YAML `enabled` once, at the first start', async () => {
    const d1 = await testDaemon();
    const w = workArea(0);
    await register(d1, localYaml('legacy-on', { ...w, schedule: '{ type: interval, interval_seconds: 3600 }' }));
    await register(d1, localYaml('legacy-off', { ...w, schedule: '{ type: interval, interval_seconds: 3600 }', enabled: false }));
    await d1.stop();
    // As a database migrated from before 0007 has them: no desired state.
    const store = await openStore({ path: join(d1.dir, 'svc.db'), log: silentLogger });
    await sql`update pipelines set desired = null`.execute(store.db);
    expect((await store.pipelines.list()).map((p) => p.desired)).toEqual([null, null]);
    await store.close();

    const d2 = await testDaemon({}, { dir: d1.dir });
    expect(await stateOf(d2, 'legacy-on')).toMatchObject({ status: 'scheduled', desired: 'running' });
    expect(await stateOf(d2, 'legacy-off')).toMatchObject({ status: 'stopped', desired: 'stopped' });
    expect((await d2.store.pipelines.list()).map((p) => [p.name, p.desired])).toEqual([
      ['legacy-off', 'stopped'],
      ['legacy-on', 'running'],
    ]);
  });
});
