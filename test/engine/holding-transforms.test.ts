// Transforms that hold records (aggregate, sort) or must see every record in order on one thread
// (limit, deduplicate) inside the real engine: drain points, threads, sink-level chains, validation.
import { describe, expect, it } from 'vitest';
import { loadPipelineText } from '../../src/config/load.js';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { runPipeline } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import type { Rec } from '../../src/plugins/types.js';
import { testRegistry, withUnitsSource } from '../helpers/plugins.js';
import { runFiles } from '../plugins/transforms/_harness.js';

/** Twelve files of 40..62 records each (sizes differ, so unit boundaries fall anywhere in the chunks). */
const files: Record<string, Rec[]> = {};
for (let f = 0; f < 12; f++) {
  files[`f${String(f).padStart(2, '0')}.ndjson`] = Array.from({ length: 40 + 2 * f }, (_, i) => ({
    f,
    i,
    cell: `c${(i * 7 + f) % 5}`,
    v: (i * 13 + f * 3) % 17,
    dup: (i + f) % 23,
  }));
}
const total = Object.values(files).reduce((n, rs) => n + rs.length, 0);

const perFile = '{ type: aggregate, group_by: [f], aggregations: [{ function: count }, { function: min, field: i }, { function: max, field: i }] }';
const expectedPerFile = Object.values(files).map((rs) => ({ f: rs[0]!.f, count: rs.length, i_min: 0, i_max: rs.length - 1 }));

describe('holding transforms in the engine', () => {
  const chains: [string, string[]][] = [
    [
      'filter, deduplicate, aggregate (run), sort (run)',
      [
        '{ type: filter, expression: v != 3 }',
        '{ type: deduplicate, fields: [dup, cell] }',
        '{ type: aggregate, scope: run, group_by: [cell], aggregations: [{ function: count }, { function: sum, field: v }, { function: percentile, field: v, percentile: 50 }] }',
        '{ type: sort, scope: run, by: [{ field: count, order: desc }, { field: cell }] }',
      ],
    ],
    ['sort (run), limit', ['{ type: sort, scope: run, by: [{ field: v }, { field: f, order: desc }] }', '{ type: limit, count: 30, offset: 100 }']],
    [
      'deduplicate, limit (run), cast after them',
      ['{ type: deduplicate, fields: [dup] }', '{ type: limit, count: 15, offset: 3 }', '{ type: cast, fields: { v: string } }'],
    ],
  ];
  for (const [name, chain] of chains) {
    it(`thread_workers 2 gives the same output as 1, many chunks: ${name}`, async () => {
      const one = await runFiles(files, chain, { chunkBytes: 700 });
      const two = await runFiles(files, chain, { chunkBytes: 700, extra: '  thread_workers: 2' });
      expect(one.record).toMatchObject({ status: 'success', records_in: total, errors: [] });
      expect(one.out.length).toBeGreaterThan(0);
      expect(two.out).toEqual(one.out);
      expect(two.record).toMatchObject({ status: 'success', records_in: total, records_out: one.out.length, records_skipped: 0, errors: [] });
      expect(one.record.records_out).toBe(one.out.length);
    });
  }

  it('records handed on at a drain are counted in records_out (not records_in)', async () => {
    const { record, out } = await runFiles(files, '{ type: aggregate, scope: run, group_by: [cell], aggregations: [{ function: count }] }');
    expect(out).toHaveLength(5);
    expect(out.reduce((n, r) => n + (r.count as number), 0)).toBe(total);
    expect(record).toMatchObject({ status: 'success', records_in: total, records_out: 5, records_skipped: 0, dlq_count: 0, errors: [] });
  });

  it('scope unit with thread_workers 2: one result set per input file', async () => {
    const { out, record } = await runFiles(files, perFile, { chunkBytes: 500, extra: '  thread_workers: 2' });
    expect(out).toEqual(expectedPerFile);
    expect(record).toMatchObject({ records_out: 12 });
  });

  it('a flush run drains scope run transforms at the end too', async () => {
    const { out } = await runFiles(files, '{ type: aggregate, scope: run, aggregations: [{ function: count }] }', { flush: true });
    expect(out).toEqual([{ count: total }]);
  });

  it('a sink-level aggregate (thread_workers 2): per file results for that sink; the other sink gets every record', async () => {
    const { out, dirs, record } = await runFiles(files, '{ type: filter, expression: i < 10 }', {
      extra: '  thread_workers: 2',
      chunkBytes: 600,
      sinks: [
        '    - { type: local, path: __OUT__, filename_template: out.ndjson, transforms: [{ type: aggregate, group_by: [f], aggregations: [{ function: count }, { function: sum, field: i }] }] }',
        '    - { type: local, path: __OUT__, filename_template: raw.ndjson }',
      ].join('\n'),
    });
    expect(out).toEqual(Object.values(files).map((rs) => ({ f: rs[0]!.f, count: 10, i_sum: 45 })));
    const { readNdjson } = await import('../plugins/transforms/_harness.js');
    expect(readNdjson(`${dirs.out}/raw.ndjson`)).toHaveLength(120);
    // Both sinks' records count: 120 raw records and 12 results.
    expect(record).toMatchObject({ status: 'success', records_in: total, records_out: 132, records_skipped: 0, errors: [] });
  });

  it('a transform after a holding one fails on a drained record: stage transform in the DLQ, counted as skipped', async () => {
    const { record, out, dlq } = await runFiles(
      { 'a.ndjson': [{ g: 'x' }, { g: 'y' }, { g: 'x' }] },
      ['{ type: aggregate, scope: run, group_by: [g], aggregations: [{ function: count }] }', "{ type: jmespath, expression: 'count > `1` && @ || g' }"],
      { onError: 'dlq', dlq: true },
    );
    expect(out).toEqual([{ g: 'x', count: 2 }]);
    expect(dlq).toEqual([
      expect.objectContaining({
        _stage: 'transform',
        _error: 'transforms[1] (jmespath): result "y" is not an object (set target to keep other results in a field)',
        record: { g: 'y', count: 1 },
      }),
    ]);
    expect(record).toMatchObject({ status: 'success', records_in: 3, records_out: 1, records_skipped: 1, dlq_count: 1 });
  });

  it('scope run, the sink refuses the results, on_error dlq: they are dead-lettered with stage sink and the files are finalized', async () => {
    const { capture } = await import('../helpers/plugins.js');
    capture('run-dlq', { failFirst: -1 });
    const { record, dlq, left, done } = await runFiles(
      { 'a.ndjson': [{ g: 1 }], 'b.ndjson': [{ g: 2 }, { g: 1 }] },
      '{ type: aggregate, scope: run, group_by: [g], aggregations: [{ function: count }] }',
      { registry: testRegistry, onError: 'dlq', dlq: true, source: 'move_after_read: __DONE__', sinks: '    - { type: memory, id: run-dlq }' },
    );
    expect(dlq.map((d) => [d._stage, d.record])).toEqual([
      ['sink', { g: 1, count: 2 }],
      ['sink', { g: 2, count: 1 }],
    ]);
    expect(record).toMatchObject({ status: 'success', records_in: 3, records_out: 0, dlq_count: 2 });
    expect(left()).toEqual([]);
    expect(done()).toEqual(['a.ndjson', 'b.ndjson']);
  });

  it('validation: scope run with a stream schedule is refused', () => {
    const yaml = `
version: "1"
pipeline:
  name: s
  schedule: { type: stream }
  source: { type: counter, acked: x }
  serializer_in: { type: ndjson }
  transforms:
    - { type: sort, by: [{ field: n }], scope: run }
    - { type: aggregate, aggregations: [{ function: count }] }
  sinks:
    - { type: memory, id: out }
`;
    const r = loadPipelineText(yaml, { env: {}, registry: testRegistry });
    expect(r.config).toBeUndefined();
    expect(r.diagnostics.map((d) => formatDiagnostic(d))).toEqual([
      "pipeline.transforms[0].scope: scope 'run' holds records until a run ends, which a stream never does; use scope 'unit' or window_aggregate (line 9) [CFG_INVALID_OPTION]",
    ]);
  });

  it('validation: scope run in sink-level transforms is refused', () => {
    const yaml = `
version: "1"
pipeline:
  name: s
  schedule: { type: manual }
  source: { type: local, path: /in }
  serializer_in: { type: ndjson }
  sinks:
    - { type: memory, id: out, transforms: [{ type: aggregate, scope: run, aggregations: [{ function: count }] }] }
`;
    const r = loadPipelineText(yaml, { env: {}, registry: testRegistry });
    expect(r.config).toBeUndefined();
    expect(r.diagnostics.map((d) => formatDiagnostic(d))).toEqual([
      "pipeline.sinks[0].transforms[0].scope: scope 'run' is for pipeline-level transforms; a sink-level transform drains at the end of each unit (line 9) [CFG_INVALID_OPTION]",
    ]);
  });
});

// ---- regressions: engine bugs found while testing these transforms ------------------------------

describe('holding transforms in the engine: unit boundaries with thread_workers 1', () => {
  // Inline, the whole chain once ran when the read loop submitted a chunk while finishUnit (drain
  // 'unit') ran later on the delivery chain: the next file's first chunk could reach the aggregate
  // before the previous file was drained, merging the results of consecutive files (timing-
  // dependent; many small one-chunk files showed it).
  const small: Record<string, Rec[]> = {};
  for (let f = 0; f < 20; f++) small[`s${String(f).padStart(2, '0')}.ndjson`] = Array.from({ length: 3 + f }, (_, i) => ({ f, i }));
  it('aggregate scope unit: one result set per input file', async () => {
    const { out } = await runFiles(small, '{ type: aggregate, aggregations: [{ function: count }, { function: min, field: f }, { function: max, field: f }] }');
    expect(out).toEqual(Object.values(small).map((rs) => ({ count: rs.length, f_min: rs[0]!.f, f_max: rs[0]!.f })));
  });

  it('limit scope unit: the first records of each file', async () => {
    const { out } = await runFiles(small, '{ type: limit, count: 2, scope: unit }');
    expect(out.map((r) => [r.f, r.i])).toEqual(
      Object.values(small).flatMap((rs) => [
        [rs[0]!.f, 0],
        [rs[0]!.f, 1],
      ]),
    );
  });

  it('sort scope unit: each file sorted on its own', async () => {
    const { out } = await runFiles(small, '{ type: sort, by: [{ field: i, order: desc }] }');
    expect(out.map((r) => [r.f, r.i])).toEqual(Object.values(small).flatMap((rs) => [...rs].reverse().map((r) => [r.f, r.i])));
  });

  it('sink-level aggregate: per file results', async () => {
    const { out } = await runFiles(small, '{ type: filter, expression: i < 2 }', {
      sinks:
        '    - { type: local, path: __OUT__, filename_template: out.ndjson, transforms: [{ type: aggregate, aggregations: [{ function: count }, { function: min, field: f }] }] }',
    });
    expect(out).toEqual(Object.values(small).map((rs) => ({ count: 2, f_min: rs[0]!.f })));
  });
});

describe('holding transforms in the engine: a unit whose read fails half-way', () => {
  // What the aggregate held from a partial unit once stayed and came out with the next unit's
  // results, while the partial unit stays in place and is read again by the next run (counted twice).
  const registry = withUnitsSource('breaking', 'Test source: unit a fails after its first chunk, unit b is whole.', async function* () {
    yield {
      meta: { source_filename: 'a' },
      async *read() {
        yield Buffer.from('{"u":"a","v":1}\n{"u":"a","v":2}\n');
        throw new Error('connection reset');
      },
    };
    yield {
      meta: { source_filename: 'b' },
      async *read() {
        yield Buffer.from('{"u":"b","v":10}\n');
      },
    };
  });

  it('its held records are not merged into the next unit', async () => {
    const yaml = `
version: "1"
pipeline:
  name: p
  schedule: { type: manual }
  source: { type: breaking }
  serializer_in: { type: ndjson }
  transforms:
    - { type: aggregate, aggregations: [{ function: count }, { function: sum, field: v }] }
  thread_workers: 2
  sinks:
    - { type: memory, id: partial }
`;
    const { capture } = await import('../helpers/plugins.js');
    const cap = capture('partial');
    const r = loadPipelineText(yaml, { env: {}, registry });
    const record = await runPipeline(r.config!, { registry, log: silentLogger, chunkBytes: 16 });
    expect(record.errors).toEqual([
      'a: read failed: connection reset',
      expect.stringMatching(/^a: read only in part; \d+ results of the records held from it dropped \(the unit stays for the next run\)$/),
    ]);
    expect(
      cap.text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Rec),
    ).toEqual([{ count: 1, v_sum: 10 }]);
  });
});
