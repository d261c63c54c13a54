// Manager and workers as real processes (issue 15): batch runs dispatched to the least-loaded
// healthy worker, outcomes stored once, worker drain on SIGTERM, a worker lost mid-run, the
// internal surfaces' key and epoch checks. The store is PostgreSQL. Serial: one cluster at a time.
import { createServer, type Server } from 'node:http';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { elapse, quiet, until } from '../helpers/wait.js';
import { localYaml, readNdjson, SLOW, workArea, writeInput } from '../api/_helpers.js';
import { startCluster, type Cluster, type Proc } from './processes.js';
import { fireRunId } from '../../src/pipelines/pipeline-manager.js';
import { FakeKubeApi } from './k8s-api-fake.js';
import { tempDir } from '../helpers/fs.js';
import { ACME } from '../mib/helpers.js';

const finished = async (c: Cluster, runId: string, ms = 30_000) =>
  until(
    async () => {
      const r = await c.call('GET', `/api/runs/${runId}`);
      return r.status === 200 && r.body.status !== 'running' ? r.body : undefined;
    },
    ms,
    'the run to finish',
    100,
  );

async function register(c: Cluster, yaml: string) {
  const r = await c.call('POST', '/api/pipelines', yaml);
  expect(r.status, r.text).toBe(201);
}

async function runNow(c: Cluster, name: string): Promise<string> {
  const r = await c.call('POST', `/api/pipelines/${name}/run`);
  expect(r.status, r.text).toBe(202);
  return r.body.run_id as string;
}

describe('manager and two workers', () => {
  let c: Cluster;
  beforeAll(async () => {
    c = await startCluster(2);
    await Promise.all([c.startWorker(0), c.startWorker(1)]);
    await c.startManager();
  }, 60_000);
  afterAll(async () => c?.stop());

  it('lists its workers, reports them in readiness, and runs a batch pipeline on one of them', async () => {
    const nodes = await until(async () => {
      const r = await c.call('GET', '/api/cluster/nodes');
      return r.body.workers?.every((w: { ok: boolean }) => w.ok) ? r.body : undefined;
    });
    expect(nodes.mode).toBe('manager');
    expect(nodes.workers.map((w: { url: string }) => w.url).sort()).toEqual(c.workers.map((w) => w.agentUrl).sort());
    expect((await c.call('GET', '/api/ready')).body.cluster).toBe('manager · 2/2 workers');

    const w = workArea(5);
    await register(c, localYaml('one', w));
    const run = await finished(c, await runNow(c, 'one'));
    expect(run).toMatchObject({ status: 'success', records_in: 5, records_out: 5, error: null });
    expect(['w0', 'w1']).toContain(run.node_id);
    expect(readNdjson(w.outFile).map((r) => r.i)).toEqual([0, 1, 2, 3, 4]);
    const metrics = (await c.call('GET', '/metrics')).text;
    expect(metrics).toMatch(/svc_mgr_dispatch_total\{result="accepted"\} [1-9]/);
    expect(metrics).toMatch(/svc_mgr_run_complete_received_total [1-9]/);
    expect(metrics).toContain('svc_mgr_worker_healthy 2');
    expect(metrics).toContain('svc_mgr_worker_total 2');
    // The worker's progress reached the manager's metrics too.
    expect(metrics).toMatch(/svc_records_out_total\{pipeline="one"\} 5/);

    // What a worker's filter drops reaches the manager's run record and metrics (issue 29).
    const f = workArea(7);
    await register(c, localYaml('one-filtered', { ...f, extra: ['transforms:', '  - { type: filter, expression: "i % 3 != 0" }'] }));
    const filtered = await finished(c, await runNow(c, 'one-filtered'));
    expect(filtered).toMatchObject({ status: 'success', records_in: 7, records_out: 4, records_filtered: 3, records_skipped: 0 });
    expect((await c.call('GET', '/metrics')).text).toMatch(/svc_records_filtered_total\{pipeline="one-filtered"\} 3/);
  });

  it('sends concurrent runs to the least-loaded worker, so two slow runs land on different workers', async () => {
    const a = workArea(8);
    const b = workArea(8);
    await register(c, localYaml('slow-a', { ...a, extra: SLOW }));
    await register(c, localYaml('slow-b', { ...b, extra: SLOW }));
    const ra = await runNow(c, 'slow-a');
    const rb = await runNow(c, 'slow-b');
    const nodes = await until(async () => {
      const r = await c.call('GET', '/api/cluster/nodes');
      const assigned = r.body.workers.flatMap((w: { assigned_pipelines: string[] }) => w.assigned_pipelines);
      return assigned.length === 2 ? r.body.workers : undefined;
    });
    expect(nodes.map((w: { assigned_pipelines: string[] }) => w.assigned_pipelines.length)).toEqual([1, 1]);
    const [x, y] = [await finished(c, ra), await finished(c, rb)];
    expect(x.status).toBe('success');
    expect(y.status).toBe('success');
    expect(x.node_id).not.toBe(y.node_id);
  });

  it('skip_processed is one memory for every worker: a file read on one worker is not read again on the other', async () => {
    const w = workArea(4);
    await register(c, localYaml('once', { ...w, extra: ['skip_processed: true'] }));
    const first = await finished(c, await runNow(c, 'once'));
    expect(first).toMatchObject({ status: 'success', records_in: 4 });
    // Runs go round the idle workers: within a few runs one lands on the other worker.
    const later: { node_id: string }[] = [];
    while (!later.some((r) => r.node_id !== first.node_id) && later.length < 4) later.push(await finished(c, await runNow(c, 'once')));
    expect(later.map((r) => r.node_id)).toContain(c.workers.map((x) => x.id).find((id) => id !== first.node_id));
    for (const r of later) expect(r).toMatchObject({ status: 'success', records_in: 0 });
    // A new file is read once, by whichever worker runs next.
    writeInput(w.inDir, 'b.ndjson', 2);
    expect(await finished(c, await runNow(c, 'once'))).toMatchObject({ status: 'success', records_in: 2 });
    expect(await finished(c, await runNow(c, 'once'))).toMatchObject({ status: 'success', records_in: 0 });
    expect(readNdjson(w.outFile)).toHaveLength(6);
  });

  it('never starts a run twice: a repeated /agent/run with the same run_id answers with the run it has', async () => {
    const w = workArea(6);
    const yaml = localYaml('twice', { ...w, extra: SLOW });
    // Registered but not run by the manager: a run of it that a worker reports is adopted, not stopped.
    await register(c, yaml);
    const worker = c.workers[0]!;
    const body = { run_id: 'fixed-run-id-1', yaml };
    const first = await c.call('POST', `${worker.agentUrl}/agent/run`, body);
    expect(first.status, first.text).toBe(202);
    const again = await c.call('POST', `${worker.agentUrl}/agent/run`, body);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ run_id: 'fixed-run-id-1', status: 'running' });
    const status = await c.call('GET', `${worker.agentUrl}/agent/status`);
    expect(status.body.runs.filter((r: { run_id: string }) => r.run_id === 'fixed-run-id-1')).toHaveLength(1);
    expect(status.body.runs[0].config_sha256).toMatch(/^[0-9a-f]{64}$/);
    // Its outcome reaches the manager (which did not dispatch it) and is stored once.
    const run = await finished(c, 'fixed-run-id-1');
    expect(run).toMatchObject({ status: 'success', records_out: 6, node_id: 'w0' });
    const late = await c.call('POST', `${worker.agentUrl}/agent/run`, body);
    expect(late.body).toMatchObject({ status: 'finished', outcome: 'success' });
    expect(readNdjson(w.outFile)).toHaveLength(6);
  });

  it('a worker syncs the schema files a run needs from the manager at run start', async () => {
    const avsc = JSON.stringify({
      type: 'record',
      name: 'Row',
      fields: [
        { name: 'i', type: 'long' },
        { name: 'host', type: 'string' },
      ],
    });
    const form = new FormData();
    form.append('file', new Blob([avsc]), 'row.avsc');
    const up = await fetch(`${c.managerUrl}/api/schemas/upload`, { method: 'POST', body: form });
    expect(up.status, await up.text()).toBe(201);
    const w = workArea(3);
    const yaml = (name: string, schema: string) =>
      [
        'version: "1"',
        'pipeline:',
        `  name: ${name}`,
        '  schedule: { type: manual }',
        `  source: { type: local, path: ${JSON.stringify(w.inDir)}, file_pattern: "*.ndjson", delete_after_read: false }`,
        '  serializer_in: { type: ndjson }',
        `  serializer_out: { type: avro, schema_file: ${schema} }`,
        '  sinks:',
        `    - { type: local, path: ${JSON.stringify(w.outDir)}, filename_template: "${name}.avro" }`,
        '',
      ].join('\n');
    await register(c, yaml('avro-out', 'row.avsc'));
    const run = await finished(c, await runNow(c, 'avro-out'));
    expect(run, JSON.stringify(run)).toMatchObject({ status: 'success', records_out: 3 });
    expect(readFileSync(join(w.outDir, 'avro-out.avro')).subarray(0, 4).toString('latin1')).toBe('Obj\x01');
    // A schema the manager does not have: no worker takes the run, and the failed run says why.
    writeFileSync(join(c.root, 'manager-schemas', 'gone.avsc'), avsc);
    await register(c, yaml('avro-gone', 'gone.avsc'));
    rmSync(join(c.root, 'manager-schemas', 'gone.avsc'));
    const bad = await finished(c, await runNow(c, 'avro-gone'));
    expect(bad.status).toBe('failed');
    expect(bad.error).toMatch(/no worker took it: .*gone\.avsc' not found/);
  });

  it('an SNMP pipeline on a worker resolves names with a MIB module uploaded to the manager', async () => {
    const yaml = (name: string, module: string) =>
      [
        'version: "1"',
        'pipeline:',
        `  name: ${name}`,
        '  schedule: { type: manual }',
        `  source: { type: snmp_poll, host: 127.0.0.1, port: ${c.workers[0]!.ingressPort}, oids: ["${module}::acmeTemp.0"], mib_modules: [${module}], timeout: 0.2, retries: 0 }`,
        '  sinks:',
        `    - { type: local, path: ${JSON.stringify(tempDir('svc-snmp-out-'))} }`,
        '',
      ].join('\n');
    // Not on the manager: the worker cannot load it either, and the run says so.
    await register(c, yaml('mib-missing', 'NOPE-MIB'));
    const missing = await finished(c, await runNow(c, 'mib-missing'));
    expect(JSON.stringify(missing)).toMatch(/NOPE-MIB/);
    const form = new FormData();
    form.append('file', new Blob([ACME]), 'ACME-MIB.mib');
    const up = await fetch(`${c.managerUrl}/api/mibs/upload`, { method: 'POST', body: form });
    expect(up.status, await up.text()).toBe(200);
    await register(c, yaml('mib-synced', 'ACME-MIB'));
    const run = await finished(c, await runNow(c, 'mib-synced'));
    // The module resolved on the worker: the run got as far as polling (nothing answers on that port).
    expect(JSON.stringify(run)).not.toMatch(/ACME-MIB/);
    expect(run.errors.join(' ')).toMatch(/nothing listens on udp|timeout/);
  });

  it('a stateful transform on a worker reads its state from the manager and writes it back after the run', async () => {
    const w = workArea(0);
    writeFileSync(join(w.inDir, 'a.ndjson'), JSON.stringify({ host: 'ne-1', octets: 100 }) + '\n');
    await register(c, localYaml('deltas', { ...w, extra: ['transforms:', '  - { type: counter_delta, key_fields: [host], counters: [octets], width: 64 }'] }));
    expect((await finished(c, await runNow(c, 'deltas'))).status).toBe('success');
    const state = await c.call('GET', '/api/internal/transform-state/deltas');
    expect(JSON.stringify(state.body.state)).toContain('ne-1');
    writeFileSync(join(w.inDir, 'b.ndjson'), JSON.stringify({ host: 'ne-1', octets: 150 }) + '\n');
    expect((await finished(c, await runNow(c, 'deltas'))).status).toBe('success');
    // The second run (on either worker) continued from the first one's state: a delta of 50.
    const last = readNdjson(w.outFile).at(-1)!;
    expect(Object.values(last)).toContain(50);
  });

  it('refuses a manager with a lower epoch than one it has seen (fencing)', async () => {
    const worker = c.workers[1]!;
    const yaml = localYaml('fenced', workArea(1));
    const ok = await c.call('POST', `${worker.agentUrl}/agent/stop`, { pipeline: 'none-such' }, { 'x-svc-epoch': '5' });
    expect(ok.status).toBe(404);
    const stale = await c.call('POST', `${worker.agentUrl}/agent/run`, { run_id: 'fenced-1', yaml }, { 'x-svc-epoch': '4' });
    expect(stale.status).toBe(409);
    expect(stale.body.detail).toMatch(/epoch 4 is lower than 5/);
  });

  it('answers bad agent requests with {detail}', async () => {
    const worker = c.workers[1]!;
    const bad = await c.call(
      'POST',
      `${worker.agentUrl}/agent/run`,
      { run_id: 'bad-1', yaml: 'version: "1"\npipeline: { name: x }\n' },
      { 'x-svc-epoch': '5' },
    );
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toMatch(/^invalid pipeline: /);
    const missing = await c.call('POST', `${worker.agentUrl}/agent/run`, { yaml: 'x' }, { 'x-svc-epoch': '5' });
    expect(missing.status).toBe(422);
    expect(Object.keys(missing.body)).toEqual(['detail']);
  });
});

describe('outcomes and failures', () => {
  let c: Cluster | undefined;
  let hook: Server | undefined;
  afterEach(async () => {
    await c?.stop();
    c = undefined;
    await new Promise((r) => (hook ? hook.close(r) : r(undefined)));
    hook = undefined;
  });

  it('stores a replayed run-complete once and fires its alert once, across a manager restart', async () => {
    let alerts = 0;
    hook = createServer((req, res) => {
      alerts++;
      req.resume();
      res.end('ok');
    });
    await new Promise<void>((r) => hook!.listen(0, '127.0.0.1', r));
    const hookUrl = `http://127.0.0.1:${(hook.address() as { port: number }).port}/alert`;
    c = await startCluster(1);
    await c.startWorker(0);
    await c.startManager();
    const w = workArea(3);
    await register(c, localYaml('alerted', w));
    const rule = await c.call('POST', '/api/pipelines/alerted/alerts', {
      name: 'any',
      condition: 'records_in > 0',
      action: 'webhook',
      webhook_url: hookUrl,
      cooldown_seconds: 0,
    });
    expect(rule.status, rule.text).toBeLessThan(300);
    await until(async () => (await c!.call('GET', '/api/cluster/nodes')).body.workers[0].ok);
    const runId = await runNow(c, 'alerted');
    const run = await finished(c, runId);
    expect(run.status).toBe('success');
    await until(() => alerts === 1);
    const { body } = await c.call('GET', `/api/runs/${runId}`);
    const complete = { ...body, worker_id: 'w0' };
    delete complete.pipeline_version;
    // Replayed to the same manager, then to a restarted one (which has no memory of the run).
    const replay = await c.call('POST', '/api/internal/run-complete', complete);
    expect(replay.status, replay.text).toBe(200);
    expect(replay.body).toEqual({ run_id: runId, stored: false });
    await c.kill(c.manager);
    await c.startManager();
    const again = await c.call('POST', '/api/internal/run-complete', { ...complete, records_out: 999 });
    expect(again.body).toEqual({ run_id: runId, stored: false });
    expect((await c.call('GET', `/api/runs/${runId}`)).body.records_out).toBe(3);
    expect((await c.call('GET', '/api/runs?pipeline=alerted')).body).toHaveLength(1);
    await quiet(500);
    expect(alerts).toBe(1);
  }, 60_000); // a manager or worker restart: slow when two test files share two cores

  it('a worker drains on SIGTERM: its batch run finishes, new runs are refused, the outcome reaches the manager', async () => {
    c = await startCluster(1);
    await c.startWorker(0, { SVC_SHUTDOWN_TIMEOUT_SECONDS: '60' });
    await c.startManager();
    const w = workArea(14); // about 6 s: the drain is still going when the next run is asked for
    await register(c, localYaml('drained', { ...w, extra: SLOW }));
    await until(async () => (await c!.call('GET', '/api/cluster/nodes')).body.workers[0].ok);
    const runId = await runNow(c, 'drained');
    const worker = c.workers[0]!;
    await until(async () => (await c!.call('GET', `${worker.agentUrl}/agent/status`)).body.runs.length === 1);
    worker.proc!.child.kill('SIGTERM');
    // Once the worker says it drains (alive, ok, draining), a new run is refused.
    const health = await until(
      async () => {
        const h = await c!.call('GET', `${worker.agentUrl}/agent/health`);
        return h.body.draining ? h : undefined;
      },
      5000,
      'the worker to report draining',
      20,
    );
    expect(health!.status).toBe(200);
    expect(health!.body).toMatchObject({ ok: true, draining: true, active_runs: 1 });
    const refused = await c.call('POST', `${worker.agentUrl}/agent/run`, { run_id: 'during-drain', yaml: localYaml('other', workArea(1)) });
    expect(refused.status).toBe(503);
    expect(refused.body.detail).toMatch(/shutting down/);
    expect((await worker.proc!.exited).code).toBe(0);
    const run = await finished(c, runId);
    expect(run).toMatchObject({ status: 'success', records_out: 14, node_id: 'w0' });
    expect(readNdjson(w.outFile)).toHaveLength(14);
  }, 60_000); // a manager or worker restart: slow when two test files share two cores

  /** A manager and one worker, and a slow run of pipeline `name` (`lines` records) in progress on it. */
  async function slowRunOnOneWorker(name: string, lines: number) {
    c = await startCluster(1);
    const cl = c;
    await cl.startWorker(0);
    await cl.startManager();
    const w = workArea(lines);
    await register(cl, localYaml(name, { ...w, extra: SLOW }));
    await until(async () => (await cl.call('GET', '/api/cluster/nodes')).body.workers[0].ok);
    const runId = await runNow(cl, name);
    await until(async () => (await cl.call('GET', `/api/runs/${runId}`)).body.status === 'running');
    return { c: cl, w, runId };
  }

  it('records a run failed when its worker dies (kill -9), and the worker returns healthy on its volume', async () => {
    const { c, w, runId } = await slowRunOnOneWorker('lost', 20);
    await c.kill(c.workers[0]!.proc);
    // Two failed polls at 1 s: down, and the run with it.
    const run = await finished(c, runId, 15_000);
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/worker .* went down during the run/);
    expect((await c.call('GET', '/api/ready')).body.cluster).toBe('manager · 0/1 workers');
    expect((await c.call('GET', '/api/pipelines/lost')).body.status).toBe('error');
    // Back on its volume: healthy again, and the input it did not finish is still there to run again.
    await c.startWorker(0);
    await until(async () => (await c!.call('GET', '/api/cluster/nodes')).body.workers[0].ok, 10_000);
    writeInput(w.inDir, 'b.ndjson', 1);
    const again = await finished(c, await runNow(c, 'lost'), 30_000);
    expect(again.status).toBe('success');
  }, 60_000);

  it("the manager's database connections are cut (pg_terminate_backend) during a run: it keeps leading, and the run's outcome is stored once", async () => {
    const { c, w, runId } = await slowRunOnOneWorker('cut', 8);
    const epoch = (await c.call('GET', '/api/ready')).body;
    await c.db.disrupt(); // every connection of the manager (its pool and the lease's) terminated
    const run = await finished(c, runId, 30_000);
    expect(run).toMatchObject({ status: 'success', records_out: 8 });
    expect(readNdjson(w.outFile)).toHaveLength(8);
    // Still the leader, on the same epoch (it renewed through new connections), and still serving.
    expect(c.manager!.child.exitCode).toBeNull();
    expect((await c.call('GET', '/api/ready')).body).toMatchObject({ status: epoch.status, cluster: epoch.cluster });
    const again = await finished(c, await runNow(c, 'cut'), 30_000);
    expect(again.status).toBe('success');
    expect((await c.call('GET', '/api/runs?pipeline=cut')).body).toHaveLength(2);
  }, 60_000);

  it('with SVC_INTERNAL_AUTH_MODE=enforce, agents and internal endpoints need the key, and a worker with it delivers', async () => {
    const key = { SVC_API_KEY: 'cluster-key-1', SVC_INTERNAL_AUTH_MODE: 'enforce' };
    c = await startCluster(1, { manager: key, worker: key });
    await c.startWorker(0);
    await c.startManager();
    const worker = c.workers[0]!;
    const anon = await c.call('POST', `${worker.agentUrl}/agent/run`, { run_id: 'x', yaml: 'x' });
    expect(anon.status).toBe(401);
    expect((await c.call('GET', `${worker.agentUrl}/agent/health`)).status).toBe(200);
    const cb = await c.call('POST', '/api/internal/pipeline-stats', {
      run_id: 'x',
      pipeline: 'x',
      records_in: 0,
      records_out: 0,
      records_skipped: 0,
      dlq_count: 0,
      bytes_in: 0,
      bytes_out: 0,
    });
    expect(cb.status).toBe(401);
    const w = workArea(2);
    const reg = await c.call('POST', '/api/pipelines', localYaml('keyed', w), { 'x-api-key': key.SVC_API_KEY });
    expect(reg.status, reg.text).toBe(201);
    await until(async () => (await c!.call('GET', '/api/cluster/nodes', undefined, { 'x-api-key': key.SVC_API_KEY })).body.workers[0].ok);
    const r = await c.call('POST', '/api/pipelines/keyed/run', undefined, { 'x-api-key': key.SVC_API_KEY });
    const run = await until(async () => {
      const x = await c!.call('GET', `/api/runs/${r.body.run_id}`, undefined, { 'x-api-key': key.SVC_API_KEY });
      return x.body.status === 'success' ? x.body : undefined;
    }, 20_000);
    expect(run.records_out).toBe(2);
  });
});

describe('the durable queue of manual runs', () => {
  let c: Cluster | undefined;
  afterEach(async () => {
    await c?.stop();
    c = undefined;
  });

  it('a run asked for with every worker down is queued, survives a manager restart, and runs exactly once when a worker returns', async () => {
    c = await startCluster(1, { manager: { SVC_STATS_INTERVAL: '1' } });
    await c.startManager();
    const w = workArea(4);
    await register(c, localYaml('queued', w));
    const q = await c.call('POST', '/api/pipelines/queued/run');
    expect(q.status, q.text).toBe(202);
    expect(q.body).toMatchObject({ name: 'queued', status: 'queued' });
    expect(Date.parse(q.body.expires_at) - Date.now()).toBeGreaterThan(800_000); // the default TTL, 900 s
    expect((await c.call('GET', '/api/pipelines/queued')).body.status).toBe('queued');
    const twice = await c.call('POST', '/api/pipelines/queued/run');
    expect(twice.status).toBe(409);
    expect(twice.body.detail).toMatch(/has a run queued/);

    await c.kill(c.manager);
    await c.startManager();
    expect((await c.call('GET', '/api/pipelines/queued')).body.status).toBe('queued');
    expect((await c.call('GET', '/metrics')).text).toContain('svc_mgr_queue_depth 1');

    await c.startWorker(0);
    const run = await finished(c, q.body.run_id);
    expect(run).toMatchObject({ status: 'success', records_out: 4, node_id: 'w0' });
    expect(readNdjson(w.outFile)).toHaveLength(4);
    await quiet(2500); // more drain ticks: nothing runs again
    expect((await c.call('GET', '/api/runs?pipeline=queued')).body).toHaveLength(1);
    const metrics = (await c.call('GET', '/metrics')).text;
    expect(metrics).toContain('svc_mgr_queue_dispatched_total 1');
    expect(metrics).toContain('svc_mgr_queue_depth 0');
  }, 60_000);

  it('a queued run whose wait expires across a manager restart is exactly one failed run, and the pipeline goes to error', async () => {
    c = await startCluster(1, { manager: { SVC_STATS_INTERVAL: '1', SVC_QUEUE_TTL_SECONDS: '3' } });
    await c.startManager();
    await register(c, localYaml('expiring', workArea(1)));
    const q = await c.call('POST', '/api/pipelines/expiring/run');
    expect(q.body.status).toBe('queued');
    await c.kill(c.manager);
    await elapse(3500); // expires while no manager runs
    await c.startManager();
    const run = await finished(c, q.body.run_id, 10_000);
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/queued run expired: no healthy worker took it within 3 s/);
    await until(async () => (await c!.call('GET', '/api/pipelines/expiring')).body.status === 'error');
    await quiet(2000);
    expect((await c.call('GET', '/api/runs?pipeline=expiring')).body).toHaveLength(1);
    expect((await c.call('GET', '/metrics')).text).toContain('svc_mgr_queue_expired_total 1');
  }, 60_000);

  it('with SVC_QUEUE_MANUAL_RUNS=0 a run with no healthy worker is refused at once (503)', async () => {
    c = await startCluster(1, { manager: { SVC_QUEUE_MANUAL_RUNS: '0' } });
    await c.startManager();
    await register(c, localYaml('fast-fail', workArea(1)));
    const r = await c.call('POST', '/api/pipelines/fast-fail/run');
    expect(r.status).toBe(503);
    expect(r.body.detail).toMatch(/no healthy worker can take the run/);
    expect((await c.call('GET', '/api/runs?pipeline=fast-fail')).body).toEqual([]);
  });
});

describe('per-pipeline Kubernetes Services, made by the manager', () => {
  let c: Cluster | undefined;
  let api: FakeKubeApi | undefined;
  afterEach(async () => {
    await c?.stop();
    await api?.close();
    c = undefined;
    api = undefined;
  });

  it('applies the Service of a pipeline with kubernetes.enabled, shows a refusal in the pipeline, deletes it with the pipeline and orphans at start', async () => {
    api = await FakeKubeApi.start({ token: 'k8s-token', namespaces: ['svc'] });
    // Someone else holds nodePort 30080: the second pipeline's Service is refused (422).
    api.put('svc', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'other' },
      spec: { type: 'NodePort', selector: { app: 'x' }, ports: [{ port: 80, nodePort: 30080 }] },
    });
    const kubeconfig = join(tempDir('svc-kube-'), 'config');
    writeFileSync(
      kubeconfig,
      `apiVersion: v1\nkind: Config\nclusters: [{name: fake, cluster: {server: "${api.url}", insecure-skip-tls-verify: true}}]\nusers: [{name: svc, user: {token: k8s-token}}]\ncontexts: [{name: fake, context: {cluster: fake, user: svc}}]\ncurrent-context: fake\n`,
    );
    c = await startCluster(1, { manager: { KUBECONFIG: kubeconfig, SVC_POD_NAMESPACE: 'svc' } });
    await c.startManager();
    const hook = (name: string, extra: string) =>
      [
        'version: "1"',
        'pipeline:',
        `  name: ${name}`,
        '  enabled: false',
        '  schedule: { type: stream }',
        `  source: { type: webhook, path: ${name} }`,
        '  serializer_in: { type: json }',
        `  kubernetes: { enabled: true${extra} }`,
        '  sinks:',
        `    - { type: local, path: ${JSON.stringify(tempDir('svc-k8s-out-'))} }`,
        '',
      ].join('\n');
    await register(c, hook('ves-in', ''));
    await register(c, hook('taken', ', node_port: 30080'));
    const names = () =>
      api!
        .services('svc')
        .map((s) => s.metadata.name)
        .sort();
    await until(() => names().includes('svc-ves-in'));
    const made = api.services('svc').find((s) => s.metadata.name === 'svc-ves-in')!;
    expect(made.spec.ports[0]).toMatchObject({ protocol: 'TCP', port: 8767 });
    expect(made.spec.selector).toEqual({ 'app.kubernetes.io/name': 'svc', 'app.kubernetes.io/component': 'worker' });
    // Shown once the manager has the API's answer (a moment after the fake stored the Service).
    expect(await until(async () => (await c!.call('GET', '/api/pipelines/ves-in')).body.kubernetes_service)).toEqual({ name: 'svc-ves-in' });
    const refused = await until(async () => (await c!.call('GET', '/api/pipelines/taken')).body.kubernetes_service?.error);
    expect(refused).toMatch(/nodePort 30080 is already allocated/);

    expect((await c.call('DELETE', '/api/pipelines/ves-in')).status).toBe(204);
    await until(() => !names().includes('svc-ves-in'));
    // An orphan left while no manager ran goes at the next start.
    await c.kill(c.manager);
    api.put(
      'svc',
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {
          name: 'svc-gone',
          labels: { 'app.kubernetes.io/managed-by': 'svc', 'svc.io/pipeline': 'gone' },
          annotations: { 'svc.io/pipeline-name': 'gone' },
        },
        spec: { type: 'NodePort', selector: { app: 'x' }, ports: [{ port: 80 }] },
      },
      'svc',
    );
    await c.startManager();
    await until(() => !names().includes('svc-gone'));
    expect(names()).toEqual(['other']);
  });
});

describe('several managers: one leader by a lease on PostgreSQL', () => {
  let c: Cluster | undefined;
  const extra: Proc[] = [];
  afterEach(async () => {
    for (const p of extra.splice(0)) {
      if (p.child.signalCode === 'SIGSTOP' || p.child.exitCode === null) p.child.kill('SIGCONT');
      await c?.kill(p);
    }
    await c?.stop();
    c = undefined;
  });
  /** A worker, a leader, and a second manager on the same database that stands by. */
  const leaderAndStandby = async () => {
    const cl = await startCluster(1);
    c = cl;
    await cl.startWorker(0);
    const first = await cl.startManager();
    const second = await cl.startManager({ SVC_NODE_ID: 'manager-b' }, { port: cl.standbyPort, standby: true });
    extra.push(second);
    return { cl, first, second };
  };

  it('a standby is not ready and serves no API; it takes over when the leader is killed', async () => {
    const { cl: c, first, second } = await leaderAndStandby();
    const ready = await c.call('GET', `${second.url}/api/ready`);
    expect(ready.status).toBe(503);
    expect(ready.body.scheduler).toBe('standby');
    const refused = await c.call('GET', `${second.url}/api/pipelines`);
    expect(refused.status).toBe(503);
    expect(refused.body.detail).toMatch(/^this manager is a standby: the leader is manager\/[0-9a-f]+ \(epoch 1\)/);
    expect((await c.call('GET', '/api/ready')).status).toBe(200);
    const w = workArea(2);
    await register(c, localYaml('ha', w));

    await c.kill(first);
    // The lease (5 s here) runs out; the standby takes it with the next epoch and loads the pipelines.
    await until(async () => (await c!.call('GET', `${second.url}/api/ready`)).status === 200, 15_000, 'the standby to lead (/api/ready 200)', 200);
    const r = await c.call('POST', `${second.url}/api/pipelines/ha/run`);
    expect(r.status, r.text).toBe(202);
    const run = await until(
      async () => {
        const x = await c!.call('GET', `${second.url}/api/runs/${r.body.run_id}`);
        return x.body?.status === 'success' ? x.body : undefined;
      },
      20_000,
      'the run on the new leader to succeed',
      100,
    );
    expect(run.node_id).toBe('w0');
  }, 60_000);

  it('a leader frozen (SIGSTOP) past its lease is replaced; resumed (SIGCONT), it steps down and its epoch is refused', async () => {
    const { cl: c, first, second } = await leaderAndStandby();
    await register(c, localYaml('frozen', workArea(2)));
    first.child.kill('SIGSTOP');
    await until(async () => (await c!.call('GET', `${second.url}/api/ready`)).status === 200, 15_000, 'the standby to lead (/api/ready 200)', 200);
    // The new leader dispatches with epoch 2: the worker learns it. Its run-complete may first go to
    // the frozen leader (first in SVC_MANAGER_URL, and the worker's current manager until a call to
    // the other succeeds): that connection is accepted by the kernel and never answered, so the
    // outbox waits out one 10-s call timeout before the new leader gets it.
    const r = await c.call('POST', `${second.url}/api/pipelines/frozen/run`);
    await until(
      async () => (await c!.call('GET', `${second.url}/api/runs/${r.body.run_id}`)).body?.status === 'success',
      40_000,
      'the run on the new leader to succeed',
      100,
    );
    first.child.kill('SIGCONT');
    // The old leader finds its lease gone by its own clock and leaves (the orchestrator restarts it as a standby).
    expect((await first.exited).code).toBe(3);
    expect(first.stderr() + '').not.toMatch(/TypeError|ReferenceError/);
    const stale = await c.call(
      'POST',
      `${c.workers[0]!.agentUrl}/agent/run`,
      { run_id: 'stale-1', yaml: localYaml('stale', workArea(1)) },
      { 'x-svc-epoch': '1' },
    );
    expect(stale.status).toBe(409);
    expect(stale.body.detail).toMatch(/epoch 1 is lower than 2/);
  }, 90_000);

  it('a scheduled pipeline fires through repeated failovers: at most one run per fire time, each run once', async () => {
    c = await startCluster(1);
    await c.startWorker(0);
    await c.startManager();
    const w = workArea(1);
    // Every 2 s (cron's finest is a minute; fires are claimed alike); the input file stays, so each
    // run appends one line: lines = runs.
    const yaml = localYaml('ticking', { ...w, schedule: '{ type: interval, interval_seconds: 2 }' }).replace(
      'file_pattern: "*.ndjson" }',
      'file_pattern: "*.ndjson", delete_after_read: false }',
    );
    await register(c, yaml);
    const standby = await c.startManager({ SVC_NODE_ID: 'manager-b' }, { port: c.standbyPort, standby: true });
    extra.push(standby);
    const managers = [c.manager!, standby];
    const urls = [c.managerUrl, standby.url];
    // Two failovers: kill the leader, let the other take over, start the killed one again as a standby.
    for (let round = 0; round < 2; round++) {
      await elapse(4000); // two fires under this leader
      const leader = (await c.call('GET', `${urls[0]}/api/ready`).catch(() => ({ status: 0 }))).status === 200 ? 0 : 1;
      await c.kill(managers[leader]);
      const other = 1 - leader;
      await until(async () => (await c!.call('GET', `${urls[other]}/api/ready`)).status === 200, 15_000, 'the other manager to lead (/api/ready 200)', 200);
      const port = Number(new URL(urls[leader]!).port);
      managers[leader] = await c.startManager({ SVC_NODE_ID: `manager-${round}-${leader}` }, { port, standby: true });
      extra.push(managers[leader]!);
    }
    await elapse(4000); // two fires after the last failover
    const leaderUrl = (await c.call('GET', `${urls[0]}/api/ready`)).status === 200 ? urls[0] : urls[1];
    const runs = (await c.call('GET', `${leaderUrl}/api/runs?pipeline=ticking&limit=1000`)).body as { run_id: string; status: string }[];
    const done = runs.filter((r) => r.status === 'success');
    expect(done.length).toBeGreaterThanOrEqual(5);
    // Every run is a fire of its own tick (deterministic ids cannot repeat); the sink saw each once.
    expect(new Set(runs.map((r) => r.run_id)).size).toBe(runs.length);
    await until(
      () => readNdjson(w.outFile).length === done.length + runs.filter((r) => r.status === 'running').length || readNdjson(w.outFile).length === done.length,
      5000,
    );
    const ticks = runs.map((r) => r.run_id);
    const fromTicks = new Set<string>();
    const start = Date.now() - 60_000;
    // A tick is its fire time rounded to the second: the last may be up to half a second ahead.
    for (let t = Math.floor(start / 1000) * 1000; t <= Date.now() + 1000; t += 1000) fromTicks.add(fireRunId('ticking', new Date(t)));
    expect(ticks.filter((id) => !fromTicks.has(id))).toEqual([]);
  }, 90_000);
});

describe('a manager restart with runs in progress on workers', () => {
  let c: Cluster | undefined;
  afterEach(async () => {
    await c?.stop();
    c = undefined;
  });

  const streamYaml = (name: string, outDir: string, description = '') =>
    [
      'version: "1"',
      'pipeline:',
      `  name: ${name}`,
      ...(description ? [`  description: ${description}`] : []),
      '  schedule: { type: stream }',
      `  source: { type: webhook, path: ${name} }`,
      '  serializer_in: { type: json }',
      '  serializer_out: { type: ndjson }',
      '  sinks:',
      `    - { type: local, path: ${JSON.stringify(outDir)}, filename_template: out.ndjson }`,
      '',
    ].join('\n');

  /** Where a stream runs now: [worker index, run id] of every run of it on the workers. */
  const placements = async (cl: Cluster, pipeline: string) => {
    const out: [number, string][] = [];
    for (const [i, w] of cl.workers.entries()) {
      const s = await cl.call('GET', `${w.agentUrl}/agent/status`);
      for (const r of s.body.runs as { pipeline: string; run_id: string }[]) if (r.pipeline === pipeline) out.push([i, r.run_id]);
    }
    return out;
  };

  it('a stream placed on two workers is adopted in place by the restarted manager (kill -9), not dispatched again', async () => {
    c = await startCluster(2);
    await Promise.all([c.startWorker(0), c.startWorker(1)]);
    await c.startManager();
    const w = workArea(0);
    await register(c, streamYaml('alarms', w.outDir));
    // A webhook stream has a slot on every worker: its runs are the placement group's slot runs.
    const before = (await until(async () => {
      const p = await placements(c!, 'alarms');
      return p.length === 2 ? p : undefined;
    })) as [number, string][];
    const groupId = (await c.call('GET', '/api/pipelines/alarms')).body.active_run_id as string;
    expect(before.map(([, r]) => r).sort()).toEqual([`${groupId}-w0-0`, `${groupId}-w1-0`]);
    const ingress = c.workers[0]!.ingressUrl;
    const post = async (i: number) => expect((await c!.call('POST', `${ingress}/webhooks/alarms`, { seq: i })).status).toBe(202);
    for (let i = 0; i < 5; i++) await post(i);

    await c.kill(c.manager);
    await c.startManager();
    const p = await c.call('GET', '/api/pipelines/alarms');
    expect(p.body).toMatchObject({ status: 'running', active_run_id: groupId });
    await quiet(2000); // health polls and stats reports go on
    expect(await placements(c, 'alarms')).toEqual(before);
    const view = (await c.call('GET', '/api/pipelines/alarms/placement')).body;
    expect(view).toMatchObject({ placement_group_id: groupId, target_count: 'all', slot_count: 2 });
    expect(view.slots.map((s: { restart_count: number }) => s.restart_count)).toEqual([0, 0]);
    for (let i = 5; i < 10; i++) await post(i);
    await until(() => readNdjson(join(w.outDir, 'out.ndjson')).length === 10);
    expect(readNdjson(join(w.outDir, 'out.ndjson')).map((r) => r.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Stopped through the restarted manager: the workers stop it, and its outcome is recorded once.
    expect((await c.call('POST', '/api/pipelines/alarms/stop')).status).toBe(200);
    await until(async () => (await placements(c!, 'alarms')).length === 0);
    const runs = (await c.call('GET', '/api/runs?pipeline=alarms')).body as { run_id: string; status: string }[];
    expect(runs.map((r) => r.run_id)).toEqual([groupId]);
    await until(async () => (await c!.call('GET', `/api/runs/${groupId}`)).body.status !== 'running');
  }, 60_000);

  it('a stream whose YAML changed while no manager ran is stopped on its worker and started again', async () => {
    c = await startCluster(1);
    await c.startWorker(0);
    const w = workArea(0);
    const file = join(c.root, 'pipelines', 'changing.yaml');
    writeFileSync(file, streamYaml('changing', w.outDir));
    await c.startManager();
    const [[, first]] = (await until(async () => {
      const p = await placements(c!, 'changing');
      return p.length === 1 ? p : undefined;
    })) as [number, string][];
    await c.kill(c.manager);
    writeFileSync(file, streamYaml('changing', w.outDir, 'v2'));
    await c.startManager();
    const now = (await until(async () => {
      const p = await placements(c!, 'changing');
      return p.length === 1 && p[0]![1] !== first ? p : undefined;
    })) as [number, string][];
    expect(now).toHaveLength(1);
    const groupId = (await c.call('GET', '/api/pipelines/changing')).body.active_run_id as string;
    expect(now[0]![1]).toBe(`${groupId}-w0-0`);
    expect(first.startsWith(groupId)).toBe(false);
  }, 60_000);
});
