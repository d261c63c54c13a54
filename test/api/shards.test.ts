// A sharded batch pipeline on a standalone daemon (issue 33): one shard, here. Its run polls every
// target and has no shards; GET /api/pipelines/{name}/shards lists every target on this node and
// finds one; GET /api/cluster/shards lists the pipeline; a pipeline that is not sharded is a 404.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/wait.js';
import { testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { Fleet } from '../../src/snmp/fleet.js';
import { tempDir } from '../helpers/fs.js';

describe('a sharded pipeline, standalone', () => {
  let d: TestDaemon;
  let fleet: Fleet;
  const call = async (method: string, path: string, body?: string) => {
    const res = await fetch(`${d.url}${path}`, { method, headers: body ? { 'content-type': 'application/yaml' } : {}, body });
    return { status: res.status, body: (await res.json().catch(() => undefined)) as any };
  };

  beforeAll(async () => {
    fleet = new Fleet({ agents: 12 });
    await fleet.start();
    d = await testDaemon();
  });
  afterAll(async () => {
    await d?.stop();
    await fleet?.stop();
  });

  it('runs as one shard, and says where each target is polled', async () => {
    const targets = fleet.targets().map((t) => `{ host: ${t.host}, port: ${t.port} }`);
    const yaml = `version: "1"\npipeline:\n  name: fleet\n  schedule: { type: manual }\n  workers: { count: all }\n  source:\n    type: snmp_poll\n    targets: [${targets.join(', ')}]\n    oids: [1.3.6.1.2.1.1.5.0]\n    resolve_oids: false\n  sinks:\n    - { type: local, path: ${JSON.stringify(tempDir('svc-shards-out-'))} }\n`;
    expect((await call('POST', '/api/pipelines', yaml)).status).toBe(201);
    const runId = (await call('POST', '/api/pipelines/fleet/run')).body.run_id as string;
    const run = await until(
      async () => {
        const r = await call('GET', `/api/runs/${runId}`);
        return r.body?.status && r.body.status !== 'running' ? r.body : undefined;
      },
      60_000,
      'the run to end',
    );
    expect(run).toMatchObject({ status: 'success', records_in: 12, node_id: 'test-node' });
    expect(run.shards).toBeUndefined();

    const all = await call('GET', '/api/pipelines/fleet/shards');
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ pipeline: 'fleet', total: 12, workers: [{ worker_id: 'test-node', shards: 1, targets: 12 }] });
    expect(all.body.targets).toHaveLength(12);
    const port = String(fleet.targets()[3]!.port);
    const one = await call('GET', `/api/pipelines/fleet/shards?q=${port}&limit=5`);
    expect(one.body.targets).toEqual([{ target: `127.0.0.1:${port}`, worker_id: 'test-node', shard: 0, status: 'planned' }]);
    expect((await call('GET', '/api/cluster/shards')).body.pipelines).toEqual([
      { pipeline: 'fleet', run_id: null, running: false, total: 12, workers: [{ worker_id: 'test-node', shards: 1, targets: 12 }] },
    ]);

    const plain = yaml.replace('  workers: { count: all }\n', '').replace('name: fleet', 'name: plain');
    expect((await call('POST', '/api/pipelines', plain)).status).toBe(201);
    const r = await call('GET', '/api/pipelines/plain/shards');
    expect(r.status).toBe(404);
    expect(r.body.detail).toMatch(/not a sharded batch pipeline/);
  });
});
