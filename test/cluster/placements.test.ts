// Stream placements (issue 15, doc 2 "Stream placement"): push-HTTP streams on every healthy
// worker, one slot for other streams, slots restarted when they stop reporting, a stream moved when
// its worker is gone for good. Managers and workers are real processes on PostgreSQL; records carry
// sequence numbers and are counted at the sink.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { until } from '../helpers/wait.js';
import { readNdjson } from '../api/_helpers.js';
import { tempDir } from '../helpers/fs.js';
import { SHARED as REDIS } from '../connectors/peers/redis.js';
import { startCluster, type Cluster } from './processes.js';
import { netns, type Netns } from './netns.js';

/** Every record the sink wrote, over all its files (one per slot run). */
const written = (dir: string) => {
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.ndjson'));
  } catch {
    return [];
  }
  return files.flatMap((f) => readNdjson(join(dir, f)));
};

const webhookStream = (name: string, outDir: string) =>
  [
    'version: "1"',
    'pipeline:',
    `  name: ${name}`,
    '  schedule: { type: stream }',
    `  source: { type: webhook, path: ${name} }`,
    '  serializer_in: { type: json }',
    '  serializer_out: { type: ndjson }',
    '  sinks:',
    `    - { type: local, path: ${JSON.stringify(outDir)}, filename_template: "{run_id}.ndjson" }`,
    '',
  ].join('\n');

async function register(c: Cluster, yaml: string) {
  const r = await c.call('POST', '/api/pipelines', yaml);
  expect(r.status, r.text).toBe(201);
}

const placementOf = async (c: Cluster, name: string) => {
  const r = await c.call('GET', `/api/pipelines/${name}/placement`);
  return r.status === 200 ? r.body : undefined;
};

interface SlotView {
  worker_id: string;
  worker_index: number;
  current_run_id: string;
  run_id_prefix: string;
  status: string;
  restart_count: number;
  stats: { records_in: number; stale: boolean };
}

const metric = async (c: Cluster, line: RegExp) => {
  const text = (await c.call('GET', '/metrics')).text;
  const m = text.split('\n').find((l) => line.test(l));
  return m === undefined ? undefined : Number(m.split(' ').pop());
};

/** Posts `seq` until the ingress acknowledges it (202); what it never acknowledged may be lost. */
async function postUntilAcked(url: string, seq: number, deadline: number) {
  const post = () =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ seq }) }).then(
      (r) => r.status === 202,
      () => false,
    );
  await until(post, Math.max(0, deadline - Date.now()), `record ${seq} to be acknowledged`, 100);
}

describe('stream placements', () => {
  let c: Cluster | undefined;
  afterEach(async () => {
    await c?.stop();
    c = undefined;
  });
  // The manager reconciles every second, a slot is stale after 3 s without stats (workers report every second).
  const fast = { SVC_STATS_INTERVAL: '1' };

  it('a webhook stream runs on every healthy worker, gets a slot on a worker that joins, and counts what each ingress took', async () => {
    c = await startCluster(2, { manager: fast });
    await c.startWorker(0);
    await c.startManager();
    const out = tempDir('svc-placement-');
    await register(c, webhookStream('hooks', out));
    let view = await until(async () => {
      const v = await placementOf(c!, 'hooks');
      return v?.status === 'running' ? v : undefined;
    });
    const groupId = (await c.call('GET', '/api/pipelines/hooks')).body.active_run_id as string;
    expect(view).toMatchObject({ pipeline_name: 'hooks', placement_group_id: groupId, target_count: 'all', slot_count: 1, active_slots: 1 });
    expect(view.slots[0]).toMatchObject({
      worker_index: 0,
      worker_id: c.workers[0]!.agentUrl,
      run_id_prefix: `${groupId}-w0`,
      current_run_id: `${groupId}-w0-0`,
      restart_count: 0,
      status: 'running',
    });

    // A worker that joins gets its slot at the next reconciler pass.
    await c.startWorker(1);
    view = await until(async () => {
      const v = await placementOf(c!, 'hooks');
      return v?.slot_count === 2 && v.status === 'running' ? v : undefined;
    }, 15_000);
    expect((view.slots as SlotView[]).map((s) => [s.worker_id, s.current_run_id])).toEqual([
      [c.workers[0]!.agentUrl, `${groupId}-w0-0`],
      [c.workers[1]!.agentUrl, `${groupId}-w1-0`],
    ]);
    expect(await metric(c, /^svc_mgr_reconcile_action_total\{action="add_slot"\}/)).toBe(1);
    expect(await metric(c, /^svc_mgr_placement_status\{pipeline="hooks",status="running"\}/)).toBe(1);

    // A slot's run serves its path once its source is up (a sender retries until then).
    for (let i = 0; i < 10; i++) await postUntilAcked(`${c.workers[i % 2]!.ingressUrl}/webhooks/hooks`, i, Date.now() + 15_000);
    await until(() => written(out).length === 10);
    expect(
      written(out)
        .map((r) => r.seq)
        .sort((a, b) => Number(a) - Number(b)),
    ).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Each slot's stats: five records each, summed in the group.
    view = await until(async () => {
      const v = await placementOf(c!, 'hooks');
      return v?.records_in === 10 ? v : undefined;
    });
    expect((view.slots as SlotView[]).map((s) => s.stats.records_in)).toEqual([5, 5]);
    expect((await c.call('GET', '/api/cluster/streams')).body.streams.map((s: { pipeline_name: string }) => s.pipeline_name)).toEqual(['hooks']);
    const nodes = (await c.call('GET', '/api/cluster/nodes')).body.workers as { assigned_pipelines: string[] }[];
    expect(nodes.map((n) => n.assigned_pipelines)).toEqual([['hooks'], ['hooks']]);

    // Stopped: every slot run ends, and the stream is one run in the history with the sums.
    expect((await c.call('POST', '/api/pipelines/hooks/stop')).status).toBe(200);
    const run = await until(async () => {
      const r = await c!.call('GET', `/api/runs/${groupId}`);
      return r.status === 200 && r.body.status !== 'running' ? r.body : undefined;
    });
    expect(run).toMatchObject({ status: 'success', records_in: 10, records_out: 10 });
    expect((await c.call('GET', '/api/runs?pipeline=hooks')).body.map((r: { run_id: string }) => r.run_id)).toEqual([groupId]);
    expect((await c.call('GET', '/api/pipelines/hooks/placement')).status).toBe(404);
    expect((await c.call('GET', '/api/cluster/streams')).body.streams).toEqual([]);
  }, 60_000);

  it('a worker killed with kill -9 and restarted on its volume: its slot starts again there, and nothing its ingress acknowledged is lost', async () => {
    c = await startCluster(2, { manager: fast });
    await Promise.all([c.startWorker(0), c.startWorker(1)]);
    await c.startManager();
    const out = tempDir('svc-placement-');
    await register(c, webhookStream('events', out));
    await until(async () => (await placementOf(c!, 'events'))?.active_slots === 2);
    const url = `${c.workers[0]!.ingressUrl}/webhooks/events`;
    const deadline = Date.now() + 40_000;
    const total = 300;
    let killed: Promise<void> | undefined;
    for (let i = 0; i < total; i++) {
      await postUntilAcked(url, i, deadline);
      if (i === 100) {
        // Killed right after acknowledging record 100, and back on its volume a moment later.
        killed = c.kill(c.workers[0]!.proc).then(async () => {
          await c!.startWorker(0);
        });
        await killed;
      }
    }
    await killed;
    // The slot went stale, and the reconciler started it again on the same worker.
    const view = await until(async () => {
      const v = await placementOf(c!, 'events');
      const slot = (v?.slots as SlotView[] | undefined)?.find((s) => s.worker_id === c!.workers[0]!.agentUrl);
      return v?.status === 'running' && slot && slot.restart_count >= 1 ? v : undefined;
    }, 30_000);
    // Started again under a new run id (restarted in place, or dropped while the worker was away and added back).
    const slot = (view.slots as SlotView[]).find((s) => s.worker_id === c!.workers[0]!.agentUrl)!;
    expect(slot.current_run_id).toBe(`${slot.run_id_prefix}-${slot.restart_count}`);
    // Every acknowledged record arrives (at least once: a record delivered just before the kill may come twice).
    await until(() => new Set(written(out).map((r) => r.seq)).size === total, 30_000);
    const seen = new Set(written(out).map((r) => r.seq));
    for (let i = 0; i < total; i++) expect(seen.has(i), `record ${i}`).toBe(true);
    // Restarted in place after missing its stats, or (a worker away longer than four passes) dropped and added back.
    const restarts = (await metric(c, /^svc_mgr_reconcile_action_total\{action="restart_stale"\}/)) ?? 0;
    const added = (await metric(c, /^svc_mgr_reconcile_action_total\{action="add_slot"\}/)) ?? 0;
    expect(restarts + added).toBeGreaterThanOrEqual(1);
  }, 90_000);

  it("a one-slot stream whose worker is gone for good runs on another worker 40-60 s later at doc 2's timings; degraded meanwhile", async () => {
    // Doc 2's defaults: health polled every 10 s, stats every 30 s, reconciler every 10 s.
    c = await startCluster(2, { manager: { SVC_WORKER_HEALTH_INTERVAL: '10' }, worker: { SVC_STATS_INTERVAL: '30' } });
    await Promise.all([c.startWorker(0), c.startWorker(1)]);
    await c.startManager();
    const out = tempDir('svc-placement-');
    const key = `svc-placement-${randomUUID()}`;
    const redis = new Redis({ ...REDIS, lazyConnect: false });
    try {
      await register(
        c,
        [
          'version: "1"',
          'pipeline:',
          '  name: polled',
          '  schedule: { type: stream }',
          `  source: { type: redis, host: ${REDIS.host}, port: ${REDIS.port}, key: ${key}, mode: list }`,
          '  serializer_in: { type: json }',
          '  serializer_out: { type: ndjson }',
          '  sinks:',
          `    - { type: local, path: ${JSON.stringify(out)}, filename_template: "{run_id}.ndjson" }`,
          '',
        ].join('\n'),
      );
      const first = await until(async () => {
        const v = await placementOf(c!, 'polled');
        return v?.status === 'running' ? v : undefined;
      }, 30_000);
      expect(first).toMatchObject({ target_count: '1', slot_count: 1 });
      const from = (first.slots as SlotView[])[0]!;
      await redis.rpush(key, JSON.stringify({ seq: 0 }));
      await until(() => written(out).length === 1, 20_000);

      const gone = c.workers.findIndex((w) => w.agentUrl === from.worker_id);
      await c.kill(c.workers[gone]!.proc);
      const killedAt = Date.now();
      const degraded = await until(
        async () => {
          const v = await placementOf(c!, 'polled');
          return v?.status === 'degraded' ? v : undefined;
        },
        40_000,
        'the placement to be degraded',
        250,
      );
      expect((degraded.slots as SlotView[])[0]).toMatchObject({ worker_id: from.worker_id, status: 'stale' });
      expect((degraded.slots as SlotView[])[0]!.stats.stale).toBe(true);
      const moved = await until(
        async () => {
          const v = await placementOf(c!, 'polled');
          return v?.status === 'running' && (v.slots as SlotView[])[0]!.worker_id !== from.worker_id ? v : undefined;
        },
        75_000,
        'the slot to run on another worker',
        250,
      );
      const seconds = (Date.now() - killedAt) / 1000;
      // Down after two failed polls (10-20 s), then moved at the fourth pass over it (30-40 s more).
      expect(seconds).toBeGreaterThanOrEqual(38);
      expect(seconds).toBeLessThanOrEqual(62);
      expect((moved.slots as SlotView[])[0]!.restart_count).toBe(1);
      expect(await metric(c, /^svc_mgr_redispatch_total /)).toBe(1);
      // The stream goes on where it moved.
      // At least once: the item the killed worker had not acknowledged may come again.
      await redis.rpush(key, JSON.stringify({ seq: 1 }));
      await until(() => written(out).some((r) => r.seq === 1), 20_000);
      expect([...new Set(written(out).map((r) => r.seq))].sort()).toEqual([0, 1]);
    } finally {
      await redis.del(key, `${key}:processing:polled`);
      redis.disconnect();
    }
  }, 150_000);

  it('a worker cut off by taking its link down loses its slot, and when the link is back its old run is stopped (409) before the slot returns: never two runs', async () => {
    const ns: Netns | undefined = netns();
    if (!ns) {
      console.warn('[placements] `ip netns add` refused (no CAP_NET_ADMIN): the link-down case did not run');
      return;
    }
    try {
      c = await startCluster(2, { manager: fast }, { workers: { 1: { host: ns.nsIp, prefix: ns.prefix, managerHost: ns.hostIp } } });
      await Promise.all([c.startWorker(0), c.startWorker(1)]);
      await c.startManager();
      const out = tempDir('svc-placement-');
      await register(c, webhookStream('cut', out));
      await until(async () => (await placementOf(c!, 'cut'))?.active_slots === 2, 20_000);
      const cutOff = c.workers[1]!;
      for (let i = 0; i < 20; i++) await postUntilAcked(`${cutOff.ingressUrl}/webhooks/cut`, i, Date.now() + 15_000);
      await until(() => written(out).length === 20);
      const oldRun = ((await placementOf(c, 'cut')).slots as SlotView[]).find((s) => s.worker_id === cutOff.agentUrl)!.current_run_id;

      ns.down();
      // Down after two failed polls, dropped at the fourth pass; the stream runs on the other worker.
      const alone = await until(
        async () => {
          const v = await placementOf(c!, 'cut');
          return v?.slot_count === 1 && v.status === 'running' ? v : undefined;
        },
        30_000,
        'one running slot',
        250,
      );
      expect((alone.slots as SlotView[])[0]!.worker_id).toBe(c.workers[0]!.agentUrl);
      for (let i = 20; i < 30; i++) await postUntilAcked(`${c.workers[0]!.ingressUrl}/webhooks/cut`, i, Date.now() + 15_000);

      ns.up();
      // The cut-off run reports again, is told it is superseded, stops; then the worker gets a new slot run.
      const back = await until(
        async () => {
          const v = await placementOf(c!, 'cut');
          const slot = (v?.slots as SlotView[] | undefined)?.find((s) => s.worker_id === cutOff.agentUrl);
          return v?.status === 'running' && slot && slot.current_run_id !== oldRun ? v : undefined;
        },
        40_000,
        'a new run on the cut-off worker',
        250,
      );
      const slot = (back.slots as SlotView[]).find((s) => s.worker_id === cutOff.agentUrl)!;
      expect(slot.current_run_id).toMatch(new RegExp(`^${slot.run_id_prefix}-[1-9]\\d*$`));
      const runs = (await c.call('GET', `${cutOff.agentUrl}/agent/status`)).body.runs as { run_id: string; pipeline: string }[];
      expect(runs.filter((r) => r.pipeline === 'cut').map((r) => r.run_id)).toEqual([slot.current_run_id]);
      for (let i = 30; i < 40; i++) await postUntilAcked(`${cutOff.ingressUrl}/webhooks/cut`, i, Date.now() + 15_000);
      await until(() => new Set(written(out).map((r) => r.seq)).size === 40, 20_000);
    } finally {
      await c?.stop(); // its processes first, then their namespace
      c = undefined;
      ns.remove();
    }
  }, 120_000);
});
