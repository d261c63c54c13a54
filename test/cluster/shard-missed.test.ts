// A shard missed for lack of time (issue 33), with a manager and workers as real processes on
// PostgreSQL: an interval pipeline whose shards outlast its interval (each shard has silent agents
// to wait for, one at a time), and a worker killed with kill -9 once the cycle's time is over. Its
// shard is not sent to the others (the next cycle is due): it is `missed`, its targets named in its
// row and in the run's error, and no live worker polls them in that cycle.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/wait.js';
import { startCluster, type Cluster } from './processes.js';
import { Fleet } from '../../src/snmp/fleet.js';
import { silentAgents, type SilentAgents } from '../connectors/peers/snmp-poll.js';

const AGENTS = 150;
const SILENT = 45;
const INTERVAL_S = 4;

describe('a shard missed for lack of time', () => {
  let c: Cluster;
  let fleet: Fleet;
  let silent: SilentAgents;
  /** When each fleet agent was polled (ms since the epoch), by agent index. */
  const polledAt: number[][] = Array.from({ length: AGENTS }, () => []);
  const agentOf = new Map<string, number>();

  beforeAll(async () => {
    fleet = new Fleet({ agents: AGENTS, onActivity: (i, e) => e.request === 'get' && polledAt[i]!.push(Date.now()) });
    await fleet.start();
    silent = await silentAgents(SILENT);
    // Health polls every second: a worker killed is down within about 2 s.
    c = await startCluster(3, {
      manager: { SVC_WORKER_HEALTH_INTERVAL: '1', SVC_SHARD_LEASE_SECONDS: '60' },
      root: mkdtempSync(join(tmpdir(), 'svc-shard-missed-')),
    });
    const ids = fleet.targets().map((t) => `${t.host}:${t.port}`);
    ids.forEach((id, i) => agentOf.set(id, i));
    const targetsFile = join(c.root, 'fleet.txt');
    writeFileSync(targetsFile, [...ids, ...silent.ports.map((p) => `127.0.0.1:${p}`)].join('\n') + '\n');
    await c.startManager();
    for (const i of [0, 1, 2]) await c.startWorker(i);
    await until(
      async () => (await c.call('GET', '/api/cluster/nodes')).body?.workers?.filter((w: { ok: boolean }) => w.ok).length === 3,
      60_000,
      '3 healthy workers',
      200,
    );
    const yaml = [
      'version: "1"',
      'pipeline:',
      '  name: fleet-tight',
      `  schedule: { type: interval, interval_seconds: ${INTERVAL_S} }`,
      '  workers: { count: all }',
      '  source:',
      '    type: snmp_poll',
      `    targets_file: ${targetsFile}`,
      '    oids: [1.3.6.1.2.1.1.5.0]',
      '    resolve_oids: false',
      // One target at a time, a silent one taking its whole 1 s timeout: about 15 s per shard.
      '    timeout: 1',
      '    retries: 0',
      '    max_concurrency: 1',
      '  sinks:',
      '    - type: local',
      `      path: ${join(c.root, 'out')}`,
      '',
    ].join('\n');
    const r = await c.call('POST', '/api/pipelines', yaml);
    expect(r.status, r.text).toBe(201);
  }, 240_000);

  afterAll(async () => {
    await c?.stop();
    await fleet?.stop();
    await silent?.close();
    if (c) rmSync(c.root, { recursive: true, force: true });
  }, 60_000);

  it('a worker killed after the cycle’s time: its shard is missed, every target of it named, none polled by another worker', async () => {
    const started = await c.call('POST', '/api/pipelines/fleet-tight/run');
    expect(started.status, started.text).toBe(202);
    const runId = started.body.run_id as string;
    const shards = await until(
      async () => {
        const r = await c.call('GET', `/api/runs/${runId}?targets=true`);
        return r.body?.shards?.length === 3 ? r.body : undefined;
      },
      60_000,
      'the shards to be dispatched',
      100,
    );
    // The cycle ends one interval after the run's start; the victim's shard still runs then.
    await until(() => Date.now() > Date.parse(shards.started_at) + INTERVAL_S * 1000 + 300, 30_000, 'the cycle to be over', 50);
    const victim = (await c.call('GET', `/api/runs/${runId}?targets=true`)).body.shards.find(
      (s: { worker_id: string }) => s.worker_id === c.workers[1]!.agentUrl,
    );
    expect(victim.status).toBe('running');
    await c.kill(c.workers[1]!.proc);

    const rec = await until(
      async () => {
        const r = await c.call('GET', `/api/runs/${runId}?targets=true`);
        return r.body?.status && r.body.status !== 'running' ? r.body : undefined;
      },
      120_000,
      'the run to end',
      250,
    );
    const end = Date.parse(rec.finished_at);
    // Not re-dispatched: the same three shards, the victim's missed with every one of its targets.
    expect(rec.shards).toHaveLength(3);
    const missed = rec.shards.find((s: { shard_index: number }) => s.shard_index === victim.shard_index);
    expect(missed.status).toBe('missed');
    expect(missed.error).toContain('no time left in the cycle');
    expect([...missed.missed].sort()).toEqual([...victim.targets].sort());
    for (const s of rec.shards) if (s !== missed) expect(s).toMatchObject({ status: 'success', missed: [] });
    // The run says so, naming the first 20 targets.
    expect(rec.status).toBe('failed');
    expect(rec.error).toContain(`${victim.targets.length} target(s) missed in this cycle: `);
    for (const t of missed.missed.slice(0, 20)) expect(rec.error).toContain(t);
    // In this cycle (polls up to the run's end): every fleet agent of a live shard polled once, and
    // the victim's at most once (by the victim, before it died), never by a live worker.
    const inCycle = (id: string) => polledAt[agentOf.get(id)!]!.filter((t) => t <= end).length;
    const live = rec.shards.filter((s: unknown) => s !== missed).flatMap((s: { targets: string[] }) => s.targets);
    expect(live.filter((t: string) => agentOf.has(t) && inCycle(t) !== 1)).toEqual([]);
    expect(victim.targets.filter((t: string) => agentOf.has(t) && inCycle(t) > 1)).toEqual([]);
    // The shard ended missed, not run: a worker that polled part of it counts none of its records.
    expect(missed.records_in).toBe(0);
  }, 300_000);
}, 600_000);
