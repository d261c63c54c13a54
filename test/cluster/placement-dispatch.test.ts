// A stream placement's slot run is saved before its worker is asked to start it: a manager killed
// between the two finds the run id in the database at its restart and adopts the run where it runs
// (cluster.test.ts kills the manager after the runs started; this checks the order itself). The
// workers here are HTTP servers that answer POST /agent/run as the agent does and, as the request
// arrives, read the placement rows the manager saved.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterMetrics } from '../../src/cluster/metrics.js';
import { SqlPlacementStore, type PersistedPlacement } from '../../src/cluster/placement-store.js';
import { StreamPlacements, type PlacementWorker } from '../../src/cluster/placements.js';
import { loadPipelineText } from '../../src/config/load.js';
import type { RunJob } from '../../src/pipelines/executor.js';
import { silentLogger } from '../../src/observability/log.js';
import { openStore, type SqlStore } from '../../src/store/index.js';

const YAML = [
  'version: "1"',
  'pipeline:',
  '  name: alarms',
  '  schedule: { type: stream }',
  '  source: { type: webhook, path: alarms }',
  '  serializer_in: { type: json }',
  '  serializer_out: { type: ndjson }',
  '  sinks:',
  '    - { type: local, path: /tmp/unused }',
  '',
].join('\n');

interface Agent {
  url: string;
  server: Server;
  /** For each POST /agent/run: its run id and the placement rows saved when it arrived. */
  asked: { run_id: string; saved: PersistedPlacement[] }[];
}

let store: SqlStore | undefined;
const agents: Agent[] = [];

afterEach(async () => {
  for (const a of agents.splice(0)) await new Promise((r) => a.server.close(r));
  await store?.close();
  store = undefined;
});

/** An agent that answers runs with `status` (202 takes it, 503 as a draining agent). */
async function agent(placements: SqlPlacementStore, status: 202 | 503): Promise<Agent> {
  const asked: Agent['asked'] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      const { run_id } = JSON.parse(body || '{}') as { run_id: string };
      if (req.url === '/agent/run') asked.push({ run_id, saved: await placements.list() });
      res.writeHead(req.url === '/agent/run' ? status : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(status === 202 ? { run_id, status: 'started' } : { detail: 'worker is shutting down and takes no new runs' }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const a = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, asked };
  agents.push(a);
  return a;
}

async function setup(statuses: (202 | 503)[]) {
  store = await openStore({ path: ':memory:' });
  const saved = new SqlPlacementStore(store.db);
  const workers: PlacementWorker[] = [];
  for (const [index, status] of statuses.entries()) workers.push({ id: `w${index}`, index, url: (await agent(saved, status)).url });
  const placements = new StreamPlacements({
    workers: { available: () => workers, pick: () => workers[0], healthy: () => true, noteDispatched: () => {} },
    store: saved,
    metrics: clusterMetrics(new Registry()),
    log: silentLogger,
    call: () => ({}),
    statsIntervalMs: 1000,
    singlePlacement: false,
    nodeId: 'manager',
  });
  const { config } = loadPipelineText(YAML);
  const started: string[] = [];
  const abort = new AbortController();
  const job: RunJob = {
    name: 'alarms',
    yaml: YAML,
    config: config!,
    runId: '6f1c2f0e-8a51-4c3e-9d7a-1b2c3d4e5f60',
    signal: abort.signal,
    log: silentLogger,
    started: async (node) => void started.push(node),
  };
  return { saved, placements, job, started, abort };
}

describe('stream placement dispatch', () => {
  it('saves each slot run before its worker is asked to start it, then the placement as started', async () => {
    const { saved, placements, job, started, abort } = await setup([202, 202]);
    const done = placements.execute(job);
    await expect.poll(() => started.length).toBe(1);
    const ids = [`${job.runId}-w0-0`, `${job.runId}-w1-0`];
    for (const [i, a] of agents.entries()) {
      expect(a.asked.map((x) => x.run_id)).toEqual([ids[i]]);
      // The row the restarted manager would read already names the run the worker was asked for.
      const row = a.asked[0]!.saved.find((p) => p.pipeline === 'alarms');
      expect(row?.placement_group_id).toBe(job.runId);
      expect(row?.slots.map((s) => s.current_run_id)).toContain(ids[i]);
    }
    await expect.poll(async () => (await saved.list())[0]?.slots.map((s) => s.current_run_id).sort()).toEqual(ids);
    // Stopped: the workers end their runs, and the row goes.
    abort.abort();
    for (const run_id of ids) placements.complete({ run_id, pipeline: 'alarms', status: 'success' } as never);
    expect((await done).status).toBe('success');
    await expect.poll(() => saved.list()).toEqual([]);
  });

  it('keeps only the slots a worker took, and removes the row when none did', async () => {
    const one = await setup([202, 503]);
    void one.placements.execute(one.job);
    await expect.poll(() => one.started.length).toBe(1);
    await expect.poll(async () => (await one.saved.list())[0]?.slots.map((s) => s.worker_id)).toEqual(['w0']);
    for (const a of agents.splice(0)) await new Promise((r) => a.server.close(r));
    await store!.close();

    const none = await setup([503, 503]);
    const record = await none.placements.execute(none.job);
    expect(record.status).toBe('failed');
    expect(record.error).toMatch(/no worker took the stream: w0: .*shutting down.*; w1: /);
    expect(agents.map((a) => a.asked.length)).toEqual([1, 1]);
    await expect.poll(() => none.saved.list()).toEqual([]);
    expect(none.started).toEqual([]);
  });
});
