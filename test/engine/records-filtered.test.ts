// records_filtered (issue 29): the records a run drops on purpose are counted, exactly, on one thread
// and with worker threads: records_in = records_out + records_filtered + records_skipped for a flow
// that gives at most one record for each; the records a holding transform takes in are not drops.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runPipeline } from '../../src/engine/runner.js';
import { sharedExecutor, type ChunkExecutor } from '../../src/engine/executor.js';
import { buildPlan } from '../../src/engine/plan.js';
import { continueChunk, processChunk } from '../../src/engine/process-chunk.js';
import { registry } from '../../src/plugins/registry.js';
import { capture, testRegistry } from '../helpers/plugins.js';
import { pipeline } from '../helpers/pipeline.js';
import { tempDir } from '../helpers/fs.js';
import { pace, until } from '../helpers/wait.js';

const run = (yaml: string, opts: Parameters<typeof runPipeline>[1] = {}) => runPipeline(pipeline(yaml), { registry: testRegistry, ...opts });

function input(lines: string[]) {
  const dir = tempDir();
  writeFileSync(join(dir, 'in.ndjson'), lines.join('\n') + '\n');
  return dir;
}

const rows = (n: number, f: (i: number) => object = (i) => ({ i })) => Array.from({ length: n }, (_, i) => JSON.stringify(f(i)));

const yamlOf = (src: string, body: string) => `
version: "1"
pipeline:
  name: filtered
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(src)} }
  serializer_in: { type: ndjson }
  serializer_out: { type: ndjson }
${body}
`;

/** The sum every record of a one-for-one flow lands in exactly once. */
const balanced = (r: { records_in: number; records_out: number; records_filtered: number; records_skipped: number }) =>
  r.records_out + r.records_filtered + r.records_skipped;

describe('records_filtered', () => {
  // i = 0..199; the filter drops the 29 multiples of 7 (the issue's interfaces-up: 200 in, 171 out).
  const filterYaml = (src: string, threads: number) =>
    yamlOf(
      src,
      `  thread_workers: ${threads}
  transforms:
    - { type: filter, expression: "i % 7 != 0" }
  sinks:
    - { type: memory, id: out }`,
    );

  for (const threads of [1, 2]) {
    it(`counts the records a filter drops: 200 in, 171 out, 29 filtered (thread_workers ${threads})`, async () => {
      const out = capture('out');
      const rec = await run(filterYaml(input(rows(200)), threads), { chunkBytes: 256 });
      expect(rec).toMatchObject({ status: 'success', records_in: 200, records_out: 171, records_filtered: 29, records_skipped: 0, dlq_count: 0 });
      expect(out.text.trim().split('\n')).toHaveLength(171);
      expect(balanced(rec)).toBe(rec.records_in);
    });
  }

  it('is exact when worker threads process the chunks: the workers count, the runner adds up', async () => {
    // A batch the memory sink gets without its records was processed by a worker thread (records
    // stay there unless a sink takes records). The writes are slowed only until the first such
    // batch, so that the worker has loaded before the input runs out.
    let fromWorker = 0;
    let inline = 0;
    const out = capture('out', {
      onWrite: async (b) => {
        if (b.records) inline++;
        else fromWorker++;
        if (fromWorker === 0) await pace(25);
      },
    });
    const n = 50_000;
    const rec = await run(filterYaml(input(rows(n)), 2), { chunkBytes: 2048 });
    const dropped = Math.ceil(n / 7);
    expect(fromWorker).toBeGreaterThan(0);
    expect(inline).toBeGreaterThan(0);
    expect(rec).toMatchObject({ status: 'success', records_in: n, records_out: n - dropped, records_filtered: dropped, records_skipped: 0 });
    expect(out.text.trim().split('\n')).toHaveLength(n - dropped);
  });

  for (const threads of [1, 2]) {
    it(`counts parse and transform failures as skipped, drops in the chain and at the sinks as filtered; the DLQ holds the failures (thread_workers ${threads})`, async () => {
      const a = capture('a');
      const b = capture('b');
      const dead = capture('dead');
      // 20 good lines, one that is not JSON, one whose i does not cast.
      const lines = [...rows(20), '{"i":1', '{"i":"x"}'];
      const rec = await run(
        yamlOf(
          input(lines),
          `  thread_workers: ${threads}
  on_error: dlq
  transforms:
    - { type: cast, fields: { i: int } }
    - { type: filter, expression: "i % 2 == 0" }
  sinks:
    - { type: memory, id: a, condition: "i < 10" }
    - { type: memory, id: b, condition: "i >= 12", transforms: [{ type: filter, expression: "i != 14" }] }
  dlq: { type: memory, id: dead }`,
        ),
        { chunkBytes: 64 },
      );
      // The filter drops 10 odd values; of the 10 even ones, sink a takes 0..8, sink b 12, 16, 18
      // (its own filter drops 14), and 10 and 14 go to no sink: 12 filtered.
      expect(
        a.text
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l).i),
      ).toEqual([0, 2, 4, 6, 8]);
      expect(
        b.text
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l).i),
      ).toEqual([12, 16, 18]);
      expect(rec).toMatchObject({ status: 'success', records_in: 22, records_out: 8, records_filtered: 12, records_skipped: 2, dlq_count: 2 });
      expect(dead.text.trim().split('\n')).toHaveLength(2);
      expect(balanced(rec)).toBe(rec.records_in);
    });
  }

  it('counts what deduplicate and limit drop, run on the main thread after the workers (thread_workers 2)', async () => {
    capture('out');
    // 300 records, keys 0..99 three times each: the filter drops key 0 (3 records), deduplicate the
    // repeats (198), limit lets 50 of the 99 through.
    const rec = await run(
      yamlOf(
        input(rows(300, (i) => ({ k: i % 100 }))),
        `  thread_workers: 2
  transforms:
    - { type: filter, expression: "k != 0" }
    - { type: deduplicate, fields: [k] }
    - { type: limit, count: 50 }
  sinks:
    - { type: memory, id: out }`,
      ),
      { chunkBytes: 200 },
    );
    expect(rec).toMatchObject({ status: 'success', records_in: 300, records_out: 50, records_filtered: 250, records_skipped: 0 });
    expect(balanced(rec)).toBe(rec.records_in);
  });

  it('does not count the records a holding transform takes in: they come out folded at the drain', async () => {
    const out = capture('out');
    const rec = await run(
      yamlOf(
        input(rows(30, (i) => ({ g: i % 3, i }))),
        `  transforms:
    - { type: filter, expression: "i >= 3" }
    - { type: aggregate, scope: run, group_by: [g], aggregations: [{ function: count }] }
  sinks:
    - { type: memory, id: out }`,
      ),
    );
    expect(
      out.text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual([
      { g: 0, count: 9 },
      { g: 1, count: 9 },
      { g: 2, count: 9 },
    ]);
    // 3 dropped by the filter; the 27 the aggregate took in are neither filtered nor skipped.
    expect(rec).toMatchObject({ status: 'success', records_in: 30, records_out: 3, records_filtered: 3, records_skipped: 0 });
  });

  it('a sink-level holding transform takes the records its condition let in: they are not filtered', async () => {
    const agg = capture('agg');
    const rec = await run(
      yamlOf(
        input(rows(10, (i) => ({ g: i % 2, i }))),
        `  sinks:
    - { type: memory, id: agg, condition: "i < 8", transforms: [{ type: aggregate, group_by: [g], aggregations: [{ function: count }] }] }`,
      ),
    );
    expect(
      agg.text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual([
      { g: 0, count: 4 },
      { g: 1, count: 4 },
    ]);
    // 8 and 9 match no condition: filtered; the 8 aggregated are not.
    expect(rec).toMatchObject({ records_in: 10, records_out: 2, records_filtered: 2, records_skipped: 0 });
  });
});

describe('a chunk result counts its drops (process-chunk)', () => {
  let ex: ChunkExecutor | undefined;
  afterEach(async () => {
    await ex?.close();
    ex = undefined;
  });

  const configOf = (transforms: string[]) =>
    pipeline(`
version: "1"
pipeline:
  name: chunked
  schedule: { type: manual }
  thread_workers: 2
  source: { type: local, path: /nonexistent }
  serializer_in: { type: ndjson }
  transforms:
${transforms.map((t) => `    - ${t}`).join('\n')}
  serializer_out: { type: ndjson }
  sinks: [{ type: local, path: /nonexistent }]
`);
  const filter = '{ type: filter, expression: "i % 2 == 0" }';
  const chunk = (from: number, n: number) => ({
    data: Buffer.from(Array.from({ length: n }, (_, k) => JSON.stringify({ i: from + k, k: (from + k) % 4 })).join('\n') + '\n'),
    firstLine: 1,
    meta: {},
  });

  it('a worker thread counts the drops of the chunks it processes, and they cross the thread with the result', async () => {
    const config = configOf([filter]);
    ex = sharedExecutor(buildPlan(config, { registry }), config, 2);
    // A result without the records (the sink does not take records) comes from the worker.
    const fromWorker = await until(async () => {
      const o = await ex!.run(chunk(100, 10));
      return o.sinks[0]!.records === undefined ? o : undefined;
    }, 30_000);
    expect(fromWorker).toMatchObject({ recordsIn: 10, filtered: 5 });
    expect(fromWorker.sinks[0]!.count).toBe(5);
  });

  it('a chain split at its first holding transform: the part before counts its drops, the main thread adds the rest', async () => {
    const config = configOf([filter, '{ type: deduplicate, fields: [k] }']);
    // Whole: 10 records, the filter drops the 5 odd ones, deduplicate 3 of the 5 even ones (k is 0 or 2).
    const whole = processChunk(buildPlan(config, { registry }), chunk(0, 10), { keepRecords: true });
    expect(whole).toMatchObject({ recordsIn: 10, filtered: 8 });
    expect(whole.sinks[0]!.count).toBe(2);
    // Split as a worker thread does it (stopAt: the plan's mainFrom), then the main thread's part.
    const plan = buildPlan(config, { registry });
    expect(plan.mainFrom).toBe(1);
    const first = processChunk(plan, chunk(0, 10), { keepRecords: false, stopAt: plan.mainFrom });
    expect(first).toMatchObject({ recordsIn: 10, filtered: 5 });
    expect(first.rest).toHaveLength(5);
    const done = continueChunk(plan, first, {});
    expect(done.filtered).toBe(8);
    expect(done.sinks[0]!.count).toBe(2);
  });
});
