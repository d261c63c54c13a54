import { afterEach, describe, expect, it } from 'vitest';
import { sharedExecutor, type ChunkExecutor } from '../../src/engine/executor.js';
import { buildPlan } from '../../src/engine/plan.js';
import { registry } from '../../src/plugins/registry.js';
import type { ChunkOutput } from '../../src/engine/process-chunk.js';
import { pipeline } from '../helpers/pipeline.js';
import { until } from '../helpers/wait.js';

const config = pipeline(`
version: "1"
pipeline:
  name: shared
  schedule: { type: manual }
  thread_workers: 2
  source: { type: local, path: /nonexistent }
  serializer_in: { type: ndjson }
  transforms:
    - { type: filter, expression: i % 2 == 0 }
  serializer_out: { type: ndjson }
  sinks: [{ type: local, path: /nonexistent }]
`);

const chunk = (from: number, n: number) => ({
  data: Buffer.from(Array.from({ length: n }, (_, k) => JSON.stringify({ i: from + k })).join('\n') + '\n'),
  firstLine: 1,
  meta: {},
});
const values = (o: ChunkOutput) =>
  Buffer.from(o.sinks[0]!.payload)
    .toString()
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { i: number }).i);

describe('sharedExecutor (thread_workers > 1)', () => {
  let ex: ChunkExecutor | undefined;
  afterEach(async () => {
    await ex?.close();
    ex = undefined;
  });

  it('processes on this thread until a worker has loaded, then hands chunks to free workers; every result is the same', async () => {
    const plan = buildPlan(config, { registry });
    ex = sharedExecutor(plan, config, 2);
    // The worker is still loading its modules: this chunk is processed here, records kept (DLQ).
    const first = await ex.run(chunk(0, 10));
    expect(first.sinks[0]!.records).toBeDefined();
    expect(values(first)).toEqual([0, 2, 4, 6, 8]);
    // Once the worker is up, a chunk submitted while it is free goes to it: its result carries
    // bytes only (the sink does not take records).
    const fromWorker = await until(async () => {
      const o = await ex!.run(chunk(100, 4));
      return o.sinks[0]!.records === undefined ? o : undefined;
    }, 30_000);
    expect(values(fromWorker)).toEqual([100, 102]);
    // Three at once: the worker takes two (one running, one waiting), the third is processed here.
    const outs = await Promise.all([ex.run(chunk(200, 6)), ex.run(chunk(300, 6)), ex.run(chunk(400, 6))]);
    expect(outs.map((o) => (o.sinks[0]!.records === undefined ? 'worker' : 'here'))).toEqual(['worker', 'worker', 'here']);
    expect(outs.map(values)).toEqual([
      [200, 202, 204],
      [300, 302, 304],
      [400, 402, 404],
    ]);
  });

  it('a worker that died is not counted: chunks are processed here until its replacement has loaded, then go to it', async () => {
    const plan = buildPlan(config, { registry });
    ex = sharedExecutor(plan, config, 2);
    const fromWorker = async () => {
      const o = await ex!.run(chunk(100, 4));
      return o.sinks[0]!.records === undefined ? o : undefined;
    };
    await until(fromWorker, 30_000);
    const [worker] = ex.threads!();
    const exited = new Promise((r) => worker!.once('exit', r));
    await worker!.terminate();
    await exited;
    // Its replacement is still loading: this chunk does not wait for it.
    const meanwhile = await ex.run(chunk(500, 4));
    expect(meanwhile.sinks[0]!.records).toBeDefined();
    expect(values(meanwhile)).toEqual([500, 502]);
    const again = await until(fromWorker, 30_000);
    expect(values(again)).toEqual([100, 102]);
    expect(ex.threads!()[0]).not.toBe(worker);
  });
});
