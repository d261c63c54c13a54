// Desired state in manager mode (issue 29, item 4): a stream stopped through the manager stays
// stopped when the manager is killed (kill -9) and another takes over, or it is restarted; a stop
// the database recorded before the manager could tell the worker is carried out by the next
// manager (the slot run is stopped on the worker, not adopted). The store is PostgreSQL.
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { quiet, until } from '../helpers/wait.js';
import { readNdjson, webhookYaml, workArea } from '../api/_helpers.js';
import { startCluster, type Cluster, type Proc } from './processes.js';

describe('a stopped stream stays stopped across manager restarts', () => {
  let c: Cluster | undefined;
  const extra: Proc[] = [];
  afterEach(async () => {
    for (const p of extra.splice(0)) await c?.kill(p);
    await c?.stop();
    c = undefined;
  });

  /** [worker index, run id] of every run of `pipeline` on the workers. */
  const onWorkers = async (cl: Cluster, pipeline: string) => {
    const out: [number, string][] = [];
    for (const [i, w] of cl.workers.entries()) {
      const s = await cl.call('GET', `${w.agentUrl}/agent/status`);
      for (const r of s.body.runs as { pipeline: string; run_id: string }[]) if (r.pipeline === pipeline) out.push([i, r.run_id]);
    }
    return out;
  };
  const register = async (cl: Cluster, yaml: string, base = '') => {
    const r = await cl.call('POST', `${base}/api/pipelines`, yaml);
    expect(r.status, r.text).toBe(201);
  };

  it('stopped through the leader: the standby that takes over after kill -9 keeps it stopped, and the other stream runs on; start runs it again', async () => {
    const cl = await startCluster(1);
    c = cl;
    await cl.startWorker(0);
    await cl.startManager();
    const standby = await cl.startManager({ SVC_NODE_ID: 'manager-b' }, { port: cl.standbyPort, standby: true });
    extra.push(standby);
    const w = workArea(0);
    const heldOut = join(w.root, 'held');
    await register(cl, webhookYaml('held', { path: 'held', outDir: heldOut }));
    await register(cl, webhookYaml('kept', { path: 'kept', outDir: join(w.root, 'kept') }));
    await until(async () => (await onWorkers(cl, 'held')).length === 1 && (await onWorkers(cl, 'kept')).length === 1, 20_000);
    const kept = await onWorkers(cl, 'kept');

    const stop = await cl.call('POST', '/api/pipelines/held/stop');
    expect(stop.status, stop.text).toBe(200);
    expect(stop.body).toEqual({ name: 'held', status: 'stopped' });
    await until(async () => (await onWorkers(cl, 'held')).length === 0, 20_000);

    await cl.kill(cl.manager);
    await until(async () => (await cl.call('GET', `${standby.url}/api/ready`)).status === 200, 20_000, 'the standby to lead (/api/ready 200)', 200);
    const held = await cl.call('GET', `${standby.url}/api/pipelines/held`);
    expect(held.body).toMatchObject({ status: 'stopped', desired: 'stopped', active_run_id: null });
    expect((await cl.call('GET', `${standby.url}/api/pipelines/kept`)).body).toMatchObject({ status: 'running', desired: 'running' });
    await quiet(2000); // health polls and the first reconciler passes of the new leader
    expect(await onWorkers(cl, 'held')).toEqual([]);
    expect(await onWorkers(cl, 'kept')).toEqual(kept); // adopted in place, not started again
    expect((await cl.call('POST', `${cl.workers[0]!.ingressUrl}/webhooks/held`, { n: 0 })).status).toBe(404);

    const start = await cl.call('POST', `${standby.url}/api/pipelines/held/start`);
    expect(start.status, start.text).toBe(200);
    await until(async () => (await onWorkers(cl, 'held')).length === 1, 20_000);
    await until(async () => (await cl.call('POST', `${cl.workers[0]!.ingressUrl}/webhooks/held`, { n: 1 })).status === 202, 10_000);
    await until(() => readNdjson(join(heldOut, 'out.ndjson')).length >= 1);
  }, 90_000);

  it('a stop recorded just before the manager was killed (the worker not told yet): the restarted manager stops the slot run instead of adopting it', async () => {
    const cl = await startCluster(1);
    c = cl;
    await cl.startWorker(0);
    await cl.startManager();
    const w = workArea(0);
    await register(cl, webhookYaml('orphan', { path: 'orphan', outDir: w.outDir }));
    const [[, runId]] = (await until(async () => {
      const p = await onWorkers(cl, 'orphan');
      return p.length === 1 ? p : undefined;
    }, 20_000)) as [number, string][];
    await cl.kill(cl.manager);
    // What POST .../stop writes first; the manager died before it told the worker.
    await cl.db.exec(`UPDATE pipelines SET desired = 'stopped' WHERE name = 'orphan'`);
    expect(await onWorkers(cl, 'orphan')).toEqual([[0, runId]]);

    await cl.startManager();
    expect((await cl.call('GET', '/api/pipelines/orphan')).body).toMatchObject({ status: 'stopped', desired: 'stopped', active_run_id: null });
    await until(async () => (await onWorkers(cl, 'orphan')).length === 0, 20_000, 'the slot run to be stopped on the worker');
    await quiet(2000); // a reconciler pass must not place it again
    expect(await onWorkers(cl, 'orphan')).toEqual([]);
  }, 90_000);
});
