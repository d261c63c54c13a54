// A stream placement's stage figures (issue 29, item 2): the manager adds up the `stages` of its
// slots' stats reports into the run's progress (live.stages), keeps those of a slot's run that
// ended, and shows none while its workers send none (a worker of an earlier release). The workers
// are HTTP servers that take every POST /agent/run.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterMetrics } from '../../src/cluster/metrics.js';
import { SqlPlacementStore } from '../../src/cluster/placement-store.js';
import { StreamPlacements, type PlacementWorker } from '../../src/cluster/placements.js';
import type { RunComplete, StatsReport } from '../../src/cluster/protocol.js';
import { loadPipelineText } from '../../src/config/load.js';
import { emptyStages, type StageFigures } from '../../src/engine/stage-figures.js';
import type { RunProgress } from '../../src/engine/runner.js';
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
  '  transforms:',
  "    - { type: filter, expression: 'n != 3' }",
  '  sinks:',
  '    - { type: local, path: /tmp/unused }',
  '',
].join('\n');
const GROUP = '0b7e4a52-3c1d-4f6e-8a9b-2c3d4e5f6a70';
const config = loadPipelineText(YAML).config!;

let store: SqlStore | undefined;
const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  await store?.close();
  store = undefined;
});

async function agent(): Promise<string> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      res.writeHead(req.url === '/agent/run' ? 202 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ run_id: (JSON.parse(body || '{}') as { run_id?: string }).run_id, status: 'started' }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A stream placed on two workers; what its run's progress said last. */
async function placed() {
  store = await openStore({ path: ':memory:' });
  const workers: PlacementWorker[] = [];
  for (const index of [0, 1]) workers.push({ id: `w${index}`, index, url: await agent() });
  const placements = new StreamPlacements({
    workers: { available: () => workers, pick: () => workers[0], healthy: () => true, noteDispatched: () => {} },
    store: new SqlPlacementStore(store.db),
    metrics: clusterMetrics(new Registry()),
    log: silentLogger,
    call: () => ({}),
    statsIntervalMs: 60_000,
    singlePlacement: false,
    nodeId: 'manager',
  });
  const progress: RunProgress[] = [];
  const abort = new AbortController();
  let started = false;
  const job: RunJob = {
    name: 'alarms',
    yaml: YAML,
    config,
    runId: GROUP,
    signal: abort.signal,
    log: silentLogger,
    started: async () => void (started = true),
    onProgress: (p) => progress.push(structuredClone(p)),
  };
  const done = placements.execute(job);
  await expect.poll(() => started).toBe(true);
  const last = () => progress.at(-1);
  return { placements, last, abort, done };
}

/** Figures as a worker's runner counts them: `n` records in, one of them filtered out, the rest written. */
function figures(n: number, circuit: 'open' | 'closed' = 'closed'): StageFigures {
  const s = emptyStages(config);
  s.source.records = n;
  s.source.bytes = 10 * n;
  s.transforms[0] = { ...s.transforms[0]!, in: n, out: n - 1 };
  s.sinks[0] = { ...s.sinks[0]!, matched: n - 1, written: n - 1, writes: 1, circuit };
  return s;
}

const report = (run_id: string, n: number, stages?: StageFigures, is_final = false): StatsReport => ({
  run_id,
  pipeline: 'alarms',
  records_in: n,
  records_out: n - 1,
  records_filtered: 1,
  records_skipped: 0,
  dlq_count: 0,
  bytes_in: 10 * n,
  bytes_out: 0,
  is_final,
  ...(stages ? { stages } : {}),
});

/** A slot run's run-complete. */
const completion = (run_id: string, n: number): RunComplete => {
  const { is_final: _f, stages: _s, ...counts } = report(run_id, n);
  return { ...counts, records_filtered: 1, node_id: run_id.slice(-4), status: 'success', started_at: '', finished_at: '', error: null, errors: [] };
};

describe("a placement's stage figures", () => {
  it('are the sums over its slots, and those of a slot run that ended stay counted', async () => {
    const { placements, last, abort, done } = await placed();
    expect(placements.stats(report(`${GROUP}-w0-0`, 5, figures(5, 'open')))).toBe(true);
    expect(placements.stats(report(`${GROUP}-w1-0`, 7, figures(7)))).toBe(true);
    expect(last()).toMatchObject({ records_in: 12, records_out: 10 });
    const s = last()!.stages!;
    expect(s.source).toMatchObject({ records: 12, bytes: 120, parse_errors: 0 });
    expect(s.transforms[0]).toMatchObject({ label: 'transforms[0] (filter)', in: 12, out: 10 });
    expect(s.sinks[0]).toMatchObject({ matched: 10, written: 10, writes: 2, circuit: 'open' });

    // w0's run ends (its final report first, then its run-complete): its figures stay in the sums,
    // and its breaker, gone with it, no longer counts as open.
    placements.stats(report(`${GROUP}-w0-0`, 6, figures(6, 'open'), true));
    placements.complete(completion(`${GROUP}-w0-0`, 6));
    placements.stats(report(`${GROUP}-w1-0`, 8, figures(8)));
    expect(last()!.stages!.source.records).toBe(14);
    expect(last()!.stages!.sinks[0]).toMatchObject({ written: 12, circuit: 'closed' });

    abort.abort();
    placements.complete(completion(`${GROUP}-w1-0`, 8));
    expect((await done).records_in).toBe(14);
  });

  it('are absent while the workers send none (an earlier release), and the counters still add up', async () => {
    const { placements, last, abort, done } = await placed();
    placements.stats(report(`${GROUP}-w0-0`, 5));
    placements.stats(report(`${GROUP}-w1-0`, 7));
    expect(last()).toMatchObject({ records_in: 12, records_out: 10 });
    expect(last()!.stages).toBeUndefined();
    abort.abort();
    for (const w of [0, 1]) placements.complete(completion(`${GROUP}-w${w}-0`, 1));
    await done;
  });
});
