// counter_delta and window_aggregate in a sharded batch run (issue 33), with a manager and workers as real processes on
// PostgreSQL polling simulated SNMP agents (src/snmp/fleet.ts) in this process. Each shard keeps the
// state of its own targets in the manager's database, by target (transform_state_targets): a target
// that moves to another worker (a worker added, a worker gone) carries its last sample with it, so
// its next delta is the true one against the previous cycle, never a spurious one against a value
// of long ago and never a lost first sample. window_aggregate grouped by _target likewise: a
// target's open window goes with it, and is handed on whole once.
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/wait.js';
import { readNdjson } from '../api/_helpers.js';
import { startCluster, type Cluster } from './processes.js';
import { Fleet } from '../../src/snmp/fleet.js';

const AGENTS = 600;
/** ifInOctets.3: a 100 Mbit/s port's Counter32 (laps 2^32 in about 15 minutes; port 1's, 10 Gbit/s, in seconds). */
const IN_OCTETS = '1.3.6.1.2.1.2.2.1.10.3';
const TWO32 = 2 ** 32;

type Rec = Record<string, unknown>;
const flat = (lines: unknown[]) => lines.flatMap((l) => (Array.isArray(l) ? l : [l])) as Rec[];

describe('counter_delta and window_aggregate state follow the targets of a sharded run', () => {
  let c: Cluster;
  let fleet: Fleet;
  let outDir: string;

  const finished = async (runId: string) =>
    until(
      async () => {
        const r = await c.call('GET', `/api/runs/${runId}`).catch(() => undefined);
        return r?.status === 200 && r.body.status !== 'running' ? r.body : undefined;
      },
      240_000,
      `run ${runId} to finish`,
      250,
    );
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
  /** A run of a pipeline to its end: its record and the records its shards wrote. */
  const runOf = async (name: string, query = '') => {
    const r = await c.call('POST', `/api/pipelines/${name}/run${query}`);
    expect(r.status, r.text).toBe(202);
    const runId = r.body.run_id as string;
    const rec = await finished(runId);
    expect(rec.status, rec.error).toBe('success');
    const dir = join(outDir, name);
    // A run of window_aggregate that closes no window writes nothing (no directory yet).
    const records = (existsSync(dir) ? readdirSync(dir) : []).filter((f) => f.startsWith(`${runId}-s`)).flatMap((f) => flat(readNdjson(join(dir, f))));
    return { rec, records };
  };
  /** One cycle: its run record, the counter value and delta of each target, and the worker that polled it (and a cycle of fleet-windows). */
  const cycle = async () => {
    await runOf('fleet-windows');
    const { rec, records } = await runOf('fleet-deltas');
    const value = new Map<string, { v: number; delta?: number }>();
    for (const x of records) value.set(x._target as string, { v: Number(x[IN_OCTETS]), delta: x[`${IN_OCTETS}_delta`] as number | undefined });
    const where = new Map<string, string>();
    for (const t of (await c.call('GET', '/api/pipelines/fleet-deltas/shards?limit=100000')).body.targets) where.set(t.target, t.worker_id);
    return { rec, records, value, where };
  };
  /** Every target has the delta of its counter since the previous cycle (a Counter32: modulo 2^32). */
  const expectTrueDeltas = (prev: Map<string, { v: number }>, now: Map<string, { v: number; delta?: number }>) => {
    const wrong: string[] = [];
    for (const [t, { v, delta }] of now) {
      const want = (v - prev.get(t)!.v + TWO32) % TWO32;
      if (delta !== want) wrong.push(`${t}: delta ${delta} for ${prev.get(t)!.v} -> ${v} (want ${want})`);
    }
    expect(wrong.slice(0, 10)).toEqual([]);
  };

  beforeAll(async () => {
    // fastShare 0: no counter laps 2^32 more than once between two cycles.
    fleet = new Fleet({ agents: AGENTS, fastShare: 0 });
    await fleet.start();
    c = await startCluster(3, { root: mkdtempSync(join(tmpdir(), 'svc-shard-state-')) });
    outDir = join(c.root, 'out');
    const targetsFile = join(c.root, 'fleet.txt');
    writeFileSync(
      targetsFile,
      fleet
        .targets()
        .map((t) => `${t.host}:${t.port}`)
        .join('\n') + '\n',
    );
    await c.startManager();
    for (const i of [0, 1]) await c.startWorker(i);
    await healthy(2);
    const yaml = [
      'version: "1"',
      'pipeline:',
      '  name: fleet-deltas',
      '  schedule: { type: manual }',
      '  workers: { count: all }',
      '  source:',
      '    type: snmp_poll',
      `    targets_file: ${targetsFile}`,
      `    oids: [${IN_OCTETS}]`,
      '    resolve_oids: false',
      '    timeout: 10',
      '    retries: 0',
      '    max_concurrency: 50',
      '  transforms:',
      '    - type: counter_delta',
      '      key_fields: [_target]',
      `      counters: ["${IN_OCTETS}"]`,
      '      width: 32',
      '      emit_first: true',
      '  sinks:',
      '    - type: local',
      `      path: ${join(outDir, 'fleet-deltas')}`,
      '      filename_template: "{run_id}_{part}.ndjson"',
      '',
    ].join('\n');
    const r = await c.call('POST', '/api/pipelines', yaml);
    expect(r.status, r.text).toBe(201);
    // A window per target far longer than the test (aligned to the epoch: 1e9 s holds 2001 to 2033).
    const windows = yaml
      .replace('name: fleet-deltas', 'name: fleet-windows')
      .replace(join(outDir, 'fleet-deltas'), join(outDir, 'fleet-windows'))
      .replace(
        / {2}transforms:\n[\s\S]*? {2}sinks:/,
        '  transforms:\n    - type: window_aggregate\n      time_field: _polled_at\n      window_seconds: 1000000000\n      group_by: [_target]\n      aggregations: [{ function: count }]\n  sinks:',
      );
    const w = await c.call('POST', '/api/pipelines', windows);
    expect(w.status, w.text).toBe(201);
  }, 240_000);

  afterAll(async () => {
    await c?.stop();
    await fleet?.stop();
    if (c) rmSync(c.root, { recursive: true, force: true });
  }, 60_000);

  it('a worker added and gone: about 1/N of the targets move, each moved target gets its true delta (no spurious one, no first sample again), and its open window goes with it', async () => {
    // Cycle 1 on two workers: every target's first sample (emit_first), stored by target.
    const first = await cycle();
    expect(first.records).toHaveLength(AGENTS);
    expect([...first.value.values()].filter((x) => x.delta !== undefined)).toEqual([]);
    const rows = await c.db.exec(
      `select count(*)::int as n, count(distinct target)::int as targets from transform_state_targets where pipeline = 'fleet-deltas'`,
    );
    expect(rows[0]).toEqual({ n: AGENTS, targets: AGENTS });
    // The pipeline's state, as an operator reads it: every target's series, joined.
    const whole = await c.call('GET', '/api/internal/transform-state/fleet-deltas');
    expect(whole.status, whole.text).toBe(200);
    const series = Object.values(whole.body.state['transforms[0].counter_delta'] ?? {}) as { tg: string }[];
    expect(series).toHaveLength(AGENTS);
    expect(new Set(series.map((x) => x.tg))).toEqual(new Set(first.value.keys()));

    await c.startWorker(2);
    await healthy(3);
    const second = await cycle();
    expect(second.rec.shards).toHaveLength(3);
    const moved = [...second.where].filter(([t, w]) => first.where.get(t) !== w).map(([t]) => t);
    expect(moved.length / AGENTS).toBeGreaterThan(0.2);
    expect(moved.length / AGENTS).toBeLessThan(0.45);
    expect(moved.every((t) => second.where.get(t) === c.workers[2]!.agentUrl)).toBe(true);
    // Every target, moved or not, has exactly the delta since cycle 1.
    expectTrueDeltas(first.value, second.value);

    // The added worker goes: its targets go back, with the state it wrote for them.
    await c.kill(c.workers[2]!.proc);
    await healthy(2);
    const third = await cycle();
    expect(third.rec.shards).toHaveLength(2);
    expect(moved.every((t) => third.where.get(t) === first.where.get(t))).toBe(true);
    expect(third.records).toHaveLength(AGENTS);
    expectTrueDeltas(second.value, third.value);

    // Fencing: a shard that has ended (or was given up) can no longer write its targets' state.
    const stateRows = async () => (await c.db.exec(`select target, state_json from transform_state_targets order by target`)).map((r) => JSON.stringify(r));
    const before = await stateRows();
    const late = await c.call(
      'PUT',
      '/api/internal/transform-state/fleet-deltas/shard',
      { pipeline: 'fleet-deltas', state: { 'transforms[0].counter_delta': {} }, config_sha256: 'x' },
      { 'x-svc-run-id': `${third.rec.run_id}-s0` },
    );
    expect(late.status, late.text).toBe(409);
    expect(late.body.detail).toMatch(/superseded \(its shard is success\)/);
    // A caller that names no shard is told so.
    expect((await c.call('GET', '/api/internal/transform-state/fleet-deltas/shard')).status).toBe(404);
    expect(await stateRows()).toEqual(before);

    // window_aggregate grouped by _target ran beside it, a cycle each time: a flush run hands on
    // each target's one open window, holding the records of all four cycles wherever they were polled.
    const flushed = await runOf('fleet-windows', '?flush=true');
    expect(flushed.records).toHaveLength(AGENTS);
    const counts = new Map(flushed.records.map((x) => [x._target as string, x.count]));
    expect(counts.size).toBe(AGENTS);
    expect([...counts].filter(([, n]) => n !== 4).slice(0, 10)).toEqual([]);
    expect(flushed.records.every((x) => x.window_complete === false)).toBe(true);
  }, 600_000);
}, 900_000);
