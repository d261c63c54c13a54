// Spec doc 2 "Transform state": GET/PUT /api/internal/transform-state/{pipeline} (and .../shard,
// the state of a shard of a sharded run, issue 33), flush runs, state that survives a daemon
// restart and is discarded when the stateful transforms change, SVC_STATEFUL_TRANSFORMS=0 and the
// svc_transform_* metrics.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { expectError, finishedRun, localYaml, register, workArea } from './_helpers.js';
import type { SqlRunShardStore } from '../../src/store/run-shards.js';

const WINDOW = (seconds = 60) =>
  `transforms: [{ type: window_aggregate, time_field: ts, window_seconds: ${seconds}, group_by: [h], aggregations: [{ function: sum, field: v }] }]`;
const KEY = 'transforms[0].window_aggregate';

function area() {
  const w = workArea(0);
  let n = 0;
  const input = (records: object[]) => writeFileSync(join(w.inDir, `f${n++}.ndjson`), records.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const output = (): Record<string, unknown>[] =>
    readFileSync(w.outFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { ...w, input, output };
}

async function run(d: TestDaemon, name: string, query = '') {
  const t = await d.call('POST', `/api/pipelines/${name}/run${query}`);
  expect(t.status, t.text).toBe(202);
  const r = await finishedRun(d, t.body.run_id);
  expect(r.status, JSON.stringify(r)).toBe('success');
  return r;
}

const yaml = (w: ReturnType<typeof area>, seconds = 60) =>
  localYaml('win', { inDir: w.inDir, outDir: w.outDir, extra: [WINDOW(seconds)] }).replace(
    'file_pattern: "*.ndjson" }',
    'file_pattern: "*.ndjson", delete_after_read: true }',
  );

describe('transform state (daemon)', () => {
  it('a run stores open windows; GET shows them with the config hash; state survives a restart; flush emits partials and clears', async () => {
    const w = area();
    let d = await testDaemon();
    await register(d, yaml(w));
    w.input([
      { h: 'x', ts: 1, v: 1 },
      { h: 'x', ts: 61, v: 2 },
    ]);
    await run(d, 'win');
    expect(w.output()).toEqual([{ window_start: '1970-01-01T00:00:00.000Z', window_end: '1970-01-01T00:01:00.000Z', h: 'x', v_sum: 1, window_complete: true }]);
    const got = await d.call('GET', '/api/internal/transform-state/win');
    expect(got.status).toBe(200);
    expect(Object.keys(got.body)).toEqual(['pipeline', 'state', 'config_sha256']);
    expect(got.body.pipeline).toBe('win');
    expect(got.body.config_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(got.body.state[KEY].windows).toEqual([{ key: '"x"', start: 60000, group: ['x'], accs: [{ n: 1, s: 2 }] }]);

    const metrics = (await d.call('GET', '/metrics')).text;
    expect(metrics).toMatch(/svc_transform_windows_emitted_total\{pipeline="win"\} 1/);
    expect(metrics).toMatch(/svc_transform_state_io_total\{pipeline="win"\} 2/); // one load, one save

    // Restart on the same database: the open window continues.
    await d.stop();
    d = await testDaemon({}, { dir: d.dir });
    expect((await d.call('GET', '/api/internal/transform-state/win')).body.state).toEqual(got.body.state);
    w.input([
      { h: 'x', ts: 70, v: 3 },
      { h: 'y', ts: 80, v: 1 },
    ]);
    await run(d, 'win');
    expect(w.output()).toHaveLength(1); // [60,120) is still open

    const flushed = await run(d, 'win', '?flush=true');
    expect(flushed.records_out).toBe(2);
    expect(w.output().slice(1)).toEqual([
      { window_start: '1970-01-01T00:01:00.000Z', window_end: '1970-01-01T00:02:00.000Z', h: 'x', v_sum: 5, window_complete: false },
      { window_start: '1970-01-01T00:01:00.000Z', window_end: '1970-01-01T00:02:00.000Z', h: 'y', v_sum: 1, window_complete: false },
    ]);
    expect((await d.call('GET', '/api/internal/transform-state/win')).body.state[KEY].windows).toEqual([]);
  });

  it('a config change of the stateful transform discards the state; DELETE of the pipeline purges it', async () => {
    const w = area();
    const d = await testDaemon();
    await register(d, yaml(w));
    w.input([{ h: 'x', ts: 1, v: 1 }]);
    await run(d, 'win');
    const before = (await d.call('GET', '/api/internal/transform-state/win')).body;
    expect(before.state[KEY].windows).toHaveLength(1);

    const put = await d.call('PUT', '/api/pipelines/win', { yaml: yaml(w, 120) });
    expect(put.status, put.text).toBe(200);
    const after = (await d.call('GET', '/api/internal/transform-state/win')).body;
    expect(after.config_sha256).not.toBe(before.config_sha256);
    expect(after.state).toEqual({});
    // The next run starts from nothing: the old 1 is not in the flushed window.
    w.input([{ h: 'x', ts: 5, v: 10 }]);
    await run(d, 'win', '?flush=true');
    expect(w.output()).toEqual([
      { window_start: '1970-01-01T00:00:00.000Z', window_end: '1970-01-01T00:02:00.000Z', h: 'x', v_sum: 10, window_complete: false },
    ]);

    w.input([{ h: 'x', ts: 5, v: 10 }]);
    await run(d, 'win');
    expect(await d.store.transformState.get('win')).not.toBeNull();
    expect((await d.call('DELETE', '/api/pipelines/win')).status).toBe(204);
    expect(await d.store.transformState.get('win')).toBeNull();
  });

  it('PUT replaces the state (GET shape or bare), refuses unknown instances and unusable bodies, 404 for unknown pipelines', async () => {
    const w = area();
    const d = await testDaemon();
    await register(d, yaml(w));
    const state = { [KEY]: { newest: 100000, closed_before: 100000, windows: [{ key: '"z"', start: 120000, group: ['z'], accs: [{ n: 1, s: 7 }] }] } };
    const put = await d.call('PUT', '/api/internal/transform-state/win', { body: { state } });
    expect(put.status, put.text).toBe(200);
    expect(put.body.state).toEqual(state);
    expect((await d.call('GET', '/api/internal/transform-state/win')).body.state).toEqual(state);
    expect((await d.call('PUT', '/api/internal/transform-state/win', { body: state })).status).toBe(200);

    // The run picks it up: a late record for a window before closed_before is dropped, z's window flushes.
    w.input([{ h: 'z', ts: 10, v: 1 }]);
    await run(d, 'win', '?flush=true');
    expect(w.output()).toEqual([
      { window_start: '1970-01-01T00:02:00.000Z', window_end: '1970-01-01T00:03:00.000Z', h: 'z', v_sum: 7, window_complete: false },
    ]);
    expect((await d.call('GET', '/metrics')).text).toMatch(/svc_transform_window_late_dropped_total\{pipeline="win"\} 1/);

    expect(expectError(await d.call('PUT', '/api/internal/transform-state/win', { body: { state: { 'transforms[3].counter_delta': {} } } }), 400)).toBe(
      "'transforms[3].counter_delta' is not a stateful transform of pipeline 'win' (its instances: transforms[0].window_aggregate)",
    );
    expect(expectError(await d.call('PUT', '/api/internal/transform-state/win', { body: { state: { [KEY]: { windows: 'no' } } } }), 400)).toBe(
      'state of transforms[0].window_aggregate is not usable: window_aggregate state must have a windows list',
    );
    expectError(await d.call('GET', '/api/internal/transform-state/nope'), 404);
    expectError(await d.call('PUT', '/api/internal/transform-state/nope', { body: {} }), 404);
  });

  it('413 over SVC_STATE_MAX_BYTES', async () => {
    const w = area();
    const d = await testDaemon({ SVC_STATE_MAX_BYTES: '300' });
    await register(d, yaml(w));
    const big = { state: { [KEY]: { windows: [], pad: 'x'.repeat(400) } } };
    expect(expectError(await d.call('PUT', '/api/internal/transform-state/win', { body: big }), 413)).toBe(
      'request body is larger than the limit of 300 bytes',
    );
  });

  it('SVC_STATEFUL_TRANSFORMS=0: the endpoints answer 404 and pipelines using stateful transforms fail validation', async () => {
    const w = area();
    const d = await testDaemon({ SVC_STATEFUL_TRANSFORMS: '0' });
    const res = await d.call('POST', '/api/pipelines', { yaml: yaml(w) });
    expect(expectError(res, 400)).toContain("'window_aggregate' is disabled on this node (SVC_STATEFUL_TRANSFORMS=0)");
    const dry = await d.call('POST', '/api/pipelines/dry-run', { yaml: yaml(w) });
    expect(dry.status).toBe(200);
    expect(dry.body.valid).toBe(false);
    expect(expectError(await d.call('GET', '/api/internal/transform-state/win'), 404)).toBe(
      'stateful transforms are disabled on this node (SVC_STATEFUL_TRANSFORMS=0)',
    );
    expectError(await d.call('PUT', '/api/internal/transform-state/win', { body: {} }), 404);
  });
});

describe('transform state of a shard (sharded runs, issue 33)', () => {
  const CD = 'transforms[0].counter_delta';
  const sharded = [
    'version: "1"',
    'pipeline:',
    '  name: fleet',
    '  schedule: { type: manual }',
    '  workers: { count: all }',
    '  source: { type: snmp_poll, targets: [{ host: 127.0.0.1, name: t1 }, { host: 127.0.0.1, name: t2 }, { host: 127.0.0.1, name: t3 }], oids: [1.3.6.1.2.1.1.3.0] }',
    '  transforms: [{ type: counter_delta, key_fields: [_target], counters: [c] }]',
    '  sinks: [{ type: local, path: /tmp/svc-unused }]',
    '',
  ].join('\n');
  const series = (tg?: string) => ({ t: 1000, v: { c: 5 }, ...(tg ? { tg } : {}) });

  it('a shard reads and writes only its own targets, while it runs, under the current config', async () => {
    const d = await testDaemon();
    try {
      await register(d, sharded);
      const row = { run_id: 'r1', pipeline: 'fleet', worker_id: 'w1', epoch: 1, started_at: new Date().toISOString() };
      // The concrete store: the Store interface exposes only the reads the API makes.
      const shards = d.store.runShards as SqlRunShardStore;
      await shards.insert({ ...row, shard_index: 0, targets: ['t1', 't2'] });
      await shards.insert({ ...row, shard_index: 1, worker_id: 'w2', targets: ['t3'] });
      const as = (runId: string) => ({ 'x-svc-run-id': runId });
      const path = '/api/internal/transform-state/fleet/shard';

      const empty = await d.call('GET', path, { headers: as('r1-s0') });
      expect(empty.status, empty.text).toBe(200);
      expect(empty.body.state).toEqual({});
      const hash = empty.body.config_sha256 as string;

      // Another config's state is not kept.
      const stale = await d.call('PUT', path, { headers: as('r1-s0'), body: { pipeline: 'fleet', state: { [CD]: {} }, config_sha256: 'f'.repeat(64) } });
      expect(stale.status).toBe(409);
      expect(stale.body.detail).toMatch(/changed its stateful transforms/);

      // t1 and t2 are this shard's; t3 is shard 1's, and a series with no target cannot be placed.
      const state = { [CD]: { a: series('t1'), b: series('t2'), c: series('t3'), d: series() } };
      const put = await d.call('PUT', path, { headers: as('r1-s0'), body: { pipeline: 'fleet', state, config_sha256: hash } });
      expect(put.status, put.text).toBe(200);
      expect(put.body).toEqual({ pipeline: 'fleet', targets: 2, unplaced: 2 });
      expect((await d.call('GET', path, { headers: as('r1-s0') })).body.state).toEqual({ [CD]: { a: series('t1'), b: series('t2') } });
      expect((await d.call('GET', path, { headers: as('r1-s1') })).body.state).toEqual({});

      // A shard that ended (or was given up) can write no more; an unknown shard, or none named, is not found.
      await shards.finish('r1', 0, { status: 'lost', finished_at: new Date().toISOString() });
      const late = await d.call('PUT', path, { headers: as('r1-s0'), body: { pipeline: 'fleet', state: { [CD]: {} }, config_sha256: hash } });
      expect(late.status).toBe(409);
      expect(late.body.detail).toMatch(/superseded \(its shard is lost\)/);
      expect((await d.call('GET', path, { headers: as('r1-s7') })).status).toBe(404);
      expect((await d.call('GET', path)).status).toBe(404);
      expect((await d.call('GET', path, { headers: as('r1-s1') })).status).toBe(200);
    } finally {
      await d.stop();
    }
  });
});
