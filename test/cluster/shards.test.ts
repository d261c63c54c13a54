// Sharded batch runs (issue 33) with a manager and workers as real processes on PostgreSQL, polling
// a fleet of 3,000 simulated SNMP agents (src/snmp/fleet.ts) in this process: every target polled
// once per cycle, balanced shards, a worker killed mid-cycle, a worker added, the manager restarted
// during a run, and the same records as a standalone run. Each agent counts the requests it gets.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/wait.js';
import { readNdjson } from '../api/_helpers.js';
import { startCluster, type Cluster } from './processes.js';
import { Fleet } from '../../src/snmp/fleet.js';
import { runPipeline } from '../../src/engine/runner.js';
import { loadPipelineText } from '../../src/config/load.js';

const AGENTS = 3000;
const SYS_NAME = '1.3.6.1.2.1.1.5.0';

/** The json serializer writes one array per chunk: its records. */
const flat = (lines: unknown[]) => lines.flatMap((l) => (Array.isArray(l) ? l : [l])) as Record<string, unknown>[];

const finished = async (c: Cluster, runId: string, ms = 240_000) =>
  until(
    async () => {
      const r = await c.call('GET', `/api/runs/${runId}`).catch(() => undefined);
      return r?.status === 200 && r.body.status !== 'running' ? r.body : undefined;
    },
    ms,
    `run ${runId} to finish`,
    250,
  );

describe('a fleet poll sharded over the workers', () => {
  let c: Cluster;
  let fleet: Fleet;
  /** Requests each agent got, by agent index. */
  let polls: number[] = new Array(AGENTS).fill(0);
  let ids: string[] = [];
  const idOf = new Map<string, number>();
  let outDir: string;
  let targetsFile: string;

  const yaml = (name: string, concurrency: number) =>
    [
      'version: "1"',
      'pipeline:',
      `  name: ${name}`,
      '  schedule: { type: manual }',
      '  workers: { count: all }',
      '  source:',
      '    type: snmp_poll',
      `    targets_file: ${targetsFile}`,
      `    oids: [${SYS_NAME}]`,
      '    resolve_oids: false',
      '    timeout: 10',
      '    retries: 0',
      '    target_timeout_seconds: 30',
      `    max_concurrency: ${concurrency}`,
      '  sinks:',
      '    - type: local',
      `      path: ${join(outDir, name)}`,
      '      filename_template: "{run_id}_{part}.ndjson"',
      '',
    ].join('\n');

  /** The records of one sharded run (every shard's files), by `_target`. */
  const recordsOf = (name: string, runId: string) => {
    const dir = join(outDir, name);
    const files = readdirSync(dir).filter((f) => f.startsWith(`${runId}-s`) && f.endsWith('.ndjson'));
    return files.flatMap((f) => flat(readNdjson(join(dir, f))));
  };
  const resetPolls = () => (polls = new Array(AGENTS).fill(0));
  const run = async (name: string) => {
    const r = await c.call('POST', `/api/pipelines/${name}/run`);
    expect(r.status, r.text).toBe(202);
    return r.body.run_id as string;
  };
  const healthy = (n: number) =>
    until(
      async () => {
        const r = await c.call('GET', '/api/cluster/nodes');
        return r.status === 200 && r.body.workers.filter((w: { ok: boolean }) => w.ok).length === n;
      },
      60_000,
      `${n} healthy workers`,
      200,
    );

  beforeAll(async () => {
    fleet = new Fleet({ agents: AGENTS, onActivity: (i, e) => e.request === 'get' && polls[i]!++ });
    await fleet.start();
    c = await startCluster(4, { manager: { SVC_SHARD_LEASE_SECONDS: '30' }, root: mkdtempSync(join(tmpdir(), 'svc-shards-')) });
    outDir = join(c.root, 'out');
    targetsFile = join(c.root, 'fleet.txt');
    ids = fleet.targets().map((t) => `${t.host}:${t.port}`);
    ids.forEach((id, i) => idOf.set(id, i));
    writeFileSync(targetsFile, ids.join('\n') + '\n');
    await c.startManager();
    for (const i of [0, 1, 2]) await c.startWorker(i);
    await healthy(3);
  }, 240_000);

  afterAll(async () => {
    await c?.stop();
    await fleet?.stop();
    if (c) rmSync(c.root, { recursive: true, force: true });
  }, 60_000);

  it('polls each of 3,000 targets exactly once per cycle, in 3 shards balanced within 10 %, and says where each target is polled', async () => {
    expect((await c.call('POST', '/api/pipelines', yaml('fleet', 50))).status).toBe(201);
    expect((await c.call('POST', '/api/pipelines', yaml('fleet-slow', 1))).status).toBe(201);
    resetPolls();
    const runId = await run('fleet');
    const rec = await finished(c, runId);
    expect(rec.status, rec.error).toBe('success');
    expect(polls.filter((n) => n !== 1)).toEqual([]);
    expect(rec.records_in).toBe(AGENTS);
    expect(rec.shards).toHaveLength(3);
    const sizes = rec.shards.map((s: { target_count: number }) => s.target_count);
    for (const n of sizes) expect(Math.abs(n - AGENTS / 3) / (AGENTS / 3)).toBeLessThan(0.1);
    expect(new Set(rec.shards.map((s: { worker_id: string }) => s.worker_id)).size).toBe(3);
    for (const s of rec.shards) expect(s).toMatchObject({ status: 'success', records_in: s.target_count, errors: 0 });
    // Each worker's own /metrics has the connector's figures of the polls it made.
    for (const s of rec.shards as { worker_id: string; target_count: number }[]) {
      const text = await (await fetch(`${s.worker_id}/metrics`)).text();
      const counts = text.split('\n').filter((l) => l.startsWith('svc_snmp_poll_seconds_count{pipeline="fleet",'));
      expect(counts.reduce((n, l) => n + Number(l.split(' ').pop()), 0)).toBe(s.target_count);
    }
    // Shards are never runs of their own in the history.
    const history = await c.call('GET', '/api/runs?pipeline=fleet');
    expect(history.body.runs ?? history.body).toHaveLength(1);
    // Where is a device polled?
    const where = await c.call('GET', `/api/pipelines/fleet/shards?q=${encodeURIComponent(ids[42]!)}`);
    expect(where.status, where.text).toBe(200);
    expect(where.body.total).toBe(AGENTS);
    expect(where.body.targets).toHaveLength(1);
    expect(rec.shards[0].targets).toBeUndefined(); // listed on request only
    const listed = (await c.call('GET', `/api/runs/${runId}?targets=true`)).body;
    const owner = listed.shards.find((s: { targets: string[] }) => s.targets.includes(ids[42]!));
    expect(where.body.targets[0]).toMatchObject({ target: ids[42], worker_id: owner.worker_id });
    // Records: one per agent, each from the shard that owns it.
    const records = recordsOf('fleet', runId);
    expect(records).toHaveLength(AGENTS);
    expect(new Set(records.map((r) => r._target)).size).toBe(AGENTS);
  }, 300_000);

  it('gives the same records as a standalone run of the same pipeline (as multisets)', async () => {
    const config = loadPipelineText(yaml('fleet', 50)).config!;
    const standalone: Record<string, unknown>[] = [];
    const alone = await runPipeline({ ...config, sinks: [{ ...config.sinks[0]!, path: join(outDir, 'standalone') }] }, { runId: 'standalone' });
    expect(alone.status, alone.error ?? '').toBe('success');
    for (const f of readdirSync(join(outDir, 'standalone'))) standalone.push(...flat(readNdjson(join(outDir, 'standalone', f))));
    const runs = (await c.call('GET', '/api/runs?pipeline=fleet')).body;
    const sharded = recordsOf('fleet', (runs.runs ?? runs)[0].run_id);
    const key = (r: Record<string, unknown>) => JSON.stringify({ ...r, _polled_at: undefined });
    expect(sharded.map(key).sort()).toEqual(standalone.map(key).sort());
  }, 300_000);

  it('a worker killed with kill -9 mid-cycle: every target is polled or reported missed by name; the next cycle is complete, none twice', async () => {
    resetPolls();
    const runId = await run('fleet-slow');
    // Slow shards (one target at a time), so that the kill lands mid-cycle.
    const rows = await until(
      async () => {
        const r = await c.call('GET', `/api/runs/${runId}?targets=true`);
        return r.body?.shards?.length === 3 ? r.body.shards : undefined;
      },
      60_000,
      'the shards to be dispatched',
      100,
    );
    const victim = rows.find((s: { worker_id: string }) => s.worker_id === c.workers[1]!.agentUrl);
    expect(victim).toBeDefined();
    await until(() => victim.targets.some((t: string) => polls[idOf.get(t)!]! > 0), 60_000, "the victim's shard to poll", 50);
    await c.kill(c.workers[1]!.proc);
    const rec = await finished(c, runId);
    const missed = new Set<string>(rec.shards.flatMap((s: { missed: string[] }) => s.missed));
    const unpolled = ids.filter((id) => polls[idOf.get(id)!] === 0 && !missed.has(id));
    expect(unpolled).toEqual([]);
    // The victim's shard is lost and its targets went to the others (a manual run's cycle has time left).
    expect(rec.shards.find((s: { shard_index: number }) => s.shard_index === victim.shard_index).status).toMatch(/lost|missed/);
    if (!missed.size) expect(rec.status, rec.error).toBe('success');
    else expect(rec.error).toContain('missed');

    await until(
      async () => (await c.call('GET', '/api/cluster/nodes')).body.workers.filter((w: { ok: boolean }) => !w.ok).length === 2,
      30_000,
      'the killed worker to be down',
      200,
    );
    resetPolls();
    const next = await finished(c, await run('fleet-slow'));
    expect(next.status, next.error).toBe('success');
    expect(polls.filter((n) => n !== 1)).toEqual([]);
    expect(next.shards.map((s: { worker_id: string }) => s.worker_id).sort()).toEqual([c.workers[0]!.agentUrl, c.workers[2]!.agentUrl].sort());
  }, 400_000);

  it('a worker added takes about 1/N of the targets, all moved to it', async () => {
    // The plan on the two live workers (w1 was killed), from a run on them.
    expect((await finished(c, await run('fleet'))).status).toBe('success');
    const before = new Map<string, string>();
    for (const t of (await c.call('GET', '/api/pipelines/fleet/shards?limit=100000')).body.targets) before.set(t.target, t.worker_id);
    await c.startWorker(3);
    await healthy(3);
    resetPolls();
    const rec = await finished(c, await run('fleet'));
    expect(rec.status, rec.error).toBe('success');
    expect(polls.filter((n) => n !== 1)).toEqual([]);
    const after = (await c.call('GET', '/api/pipelines/fleet/shards?limit=100000')).body;
    expect(after.total).toBe(AGENTS);
    const moved = after.targets.filter((t: { target: string; worker_id: string }) => before.get(t.target) !== t.worker_id);
    // Before: w0, w2 (w1 was killed); after: w0, w2, w3. About a third moves, all of it to w3.
    expect(moved.length / AGENTS).toBeGreaterThan(0.25);
    expect(moved.length / AGENTS).toBeLessThan(0.42);
    expect(moved.every((t: { worker_id: string }) => t.worker_id === c.workers[3]!.agentUrl)).toBe(true);
  }, 300_000);

  it('the manager restarted during a sharded run: the run is adopted and its outcome stored once', async () => {
    resetPolls();
    const runId = await run('fleet-slow');
    await until(async () => (await c.call('GET', `/api/runs/${runId}`)).body?.shards?.length === 3, 60_000, 'the shards to be dispatched', 100);
    await until(() => polls.some((n) => n > 0), 60_000, 'the shards to poll', 50);
    await c.kill(c.manager);
    await c.startManager();
    const rec = await finished(c, runId);
    expect(rec.status, rec.error).toBe('success');
    expect(rec.records_in).toBe(AGENTS);
    expect(polls.filter((n) => n !== 1)).toEqual([]);
    const stored = await c.db.exec(`select count(*)::int as n from runs where run_id like $1`, [`${runId}%`]);
    expect(stored[0]!.n).toBe(1);
    const shards = await c.db.exec(`select status from run_shards where run_id = $1 order by shard_index`, [runId]);
    expect(shards.map((r) => r.status)).toEqual(['success', 'success', 'success']);
  }, 400_000);
}, 1_800_000);
