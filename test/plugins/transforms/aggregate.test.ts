import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { Rec } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/aggregate/index.js';
import { capture, testRegistry } from '../../helpers/plugins.js';
import { tempDir } from '../../helpers/fs.js';
import { pyJson } from '../serializers/helpers.js';
import { applyThenDrain, diagnostics, runFiles, runTransform, transformOf } from './_harness.js';

const { cfg, make, rc } = transformOf(plugin);
const agg = (c: object, records: Rec[], at: 'unit' | 'run' | 'flush' = 'unit') => applyThenDrain(make(c), records, at).out;

const ALL = [
  { function: 'count' },
  { function: 'count', field: 'v' },
  { function: 'sum', field: 'v' },
  { function: 'min', field: 'v' },
  { function: 'max', field: 'v' },
  { function: 'avg', field: 'v' },
  { function: 'first', field: 'v' },
  { function: 'last', field: 'v' },
  { function: 'count_distinct', field: 'v' },
  { function: 'percentile', field: 'v', percentile: 90 },
  { function: 'percentile', field: 'v', percentile: 7, as: 'p7' },
];

describe('transform aggregate: functions', () => {
  it('every function per group matches an independent Python computation (nulls and missing ignored, nearest-rank percentiles)', () => {
    // Python makes the records and the expected results (exact nearest rank with fractions).
    const { records, expected } = pyJson<{ records: Rec[]; expected: Rec[] }>(`
import json, random, math
from fractions import Fraction
random.seed(7)
records = []
for i in range(400):
    r = {'g': random.choice(['a', 'b', 'c', 'd']), 'i': i}
    k = random.random()
    if k < 0.1: r['v'] = None
    elif k < 0.2: pass
    elif k < 0.6: r['v'] = random.randint(-50, 1000)
    else: r['v'] = round(random.uniform(-10, 10), 2)
    records.append(r)
def rank(p, n):
    return max(1, math.ceil(Fraction(p) * n / 100))
groups = {}
for r in records:
    groups.setdefault(r['g'], []).append(r)
expected = []
for g, rs in groups.items():
    vs = [r['v'] for r in rs if r.get('v') is not None]
    xs = sorted(vs)
    s = 0
    for v in vs: s += v
    expected.append({'g': g, 'count': len(rs), 'v_count': len(vs), 'v_sum': s, 'v_min': min(vs), 'v_max': max(vs),
      'v_avg': s / len(vs), 'v_first': vs[0], 'v_last': vs[-1], 'v_count_distinct': len(set(vs)),
      'v_p90': xs[rank(90, len(xs)) - 1], 'p7': xs[rank(7, len(xs)) - 1]})
print(json.dumps({'records': records, 'expected': expected}))
`);
    const out = agg({ group_by: ['g'], aggregations: ALL }, records);
    expect(out).toEqual(expected);
    // Group fields first, then the aggregations in their order.
    expect(Object.keys(out[0]!)).toEqual(['g', 'count', 'v_count', 'v_sum', 'v_min', 'v_max', 'v_avg', 'v_first', 'v_last', 'v_count_distinct', 'v_p90', 'p7']);
  });

  it('percentile is nearest-rank: the smallest value with at least p% of the values at or below it', () => {
    // The classic example: 15, 20, 35, 40, 50.
    const rs = [50, 15, 40, 20, 35].map((v) => ({ v }));
    const p = (percentile: number) => agg({ aggregations: [{ function: 'percentile', field: 'v', percentile }] }, rs)[0]![`v_p${percentile}`];
    expect([0, 5, 20, 30, 40, 50, 100].map(p)).toEqual([15, 15, 15, 20, 20, 35, 50]);
    // p% of n must not be rounded up by floating point: 7% of 100 values is rank 7, 64.4% of 250 is rank 161.
    const hundred = Array.from({ length: 100 }, (_, i) => ({ v: i + 1 }));
    expect(agg({ aggregations: [{ function: 'percentile', field: 'v', percentile: 7 }] }, hundred)).toEqual([{ v_p7: 7 }]);
    const n250 = Array.from({ length: 250 }, (_, i) => ({ v: i + 1 }));
    expect(agg({ aggregations: [{ function: 'percentile', field: 'v', percentile: 64.4 }] }, n250)).toEqual([{ 'v_p64.4': 161 }]);
  });

  it('nearest rank for many p and n agrees with exact rational arithmetic (Python fractions)', () => {
    const cases = pyJson<[number, number, number][]>(`
import json, math
from fractions import Fraction
out = []
for n in [1, 2, 3, 7, 10, 100, 250, 375, 1000]:
    for q in range(0, 1001, 7):
        p = q / 10
        out.append([n, p, max(1, math.ceil(Fraction(str(p)) * n / 100))])
print(json.dumps(out))
`);
    for (const [n, p, rank] of cases) {
      const rs = Array.from({ length: n }, (_, i) => ({ v: n - i })); // reversed: the sort matters
      expect([n, p, agg({ aggregations: [{ function: 'percentile', field: 'v', percentile: p, as: 'x' }] }, rs)[0]!.x]).toEqual([n, p, rank]);
    }
  });

  it('count counts records; count with a field counts its non-null values', () => {
    const rs = [{ v: 1 }, { v: null }, {}, { v: 0 }, { v: '' }];
    expect(agg({ aggregations: [{ function: 'count' }, { function: 'count', field: 'v' }, { function: 'count', field: 'v', as: 'n' }] }, rs)).toEqual([
      { count: 5, v_count: 3, n: 3 },
    ]);
  });

  it('a group whose values are all null or missing: sum 0, counts 0, the others null', () => {
    const out = agg({ group_by: ['g'], aggregations: ALL }, [{ g: 1, v: null }, { g: 1 }]);
    expect(out).toEqual([
      { g: 1, count: 2, v_count: 0, v_sum: 0, v_min: null, v_max: null, v_avg: null, v_first: null, v_last: null, v_count_distinct: 0, v_p90: null, p7: null },
    ]);
  });

  it('numeric text counts as its number; first/last/count_distinct take any value', () => {
    const out = agg(
      {
        aggregations: [
          { function: 'sum', field: 'v' },
          { function: 'max', field: 'v' },
          { function: 'first', field: 's' },
          { function: 'last', field: 's' },
          { function: 'count_distinct', field: 's' },
        ],
      },
      [
        { v: '12', s: { a: 1 } },
        { v: ' 3.5 ', s: 'x' },
        { v: 1, s: { a: 1 } },
        { v: null, s: [1] },
      ],
    );
    expect(out).toEqual([{ v_sum: 16.5, v_max: 12, s_first: { a: 1 }, s_last: [1], s_count_distinct: 3 }]);
  });

  it('a non-numeric value is a recorded error (thrown) and the record is not half-counted', () => {
    const t = make({
      aggregations: [{ function: 'count' }, { function: 'sum', field: 'b' }, { function: 'sum', field: 'a' }, { function: 'last', field: 'a' }],
    });
    t.apply({ a: 1, b: 10 }, rc);
    expect(() => t.apply({ a: 2, b: 'ten' }, rc)).toThrow(`field 'b' value "ten" is not a number (sum)`);
    expect(() => t.apply({ a: {}, b: 1 }, rc)).toThrow(/field 'a' value \{\} is not a number/);
    expect(() => t.apply({ a: '', b: 1 }, rc)).toThrow(/field 'a' value "" is not a number/);
    t.apply({ a: 3, b: 20 }, rc);
    expect(t.drain!('unit')).toEqual([{ count: 2, b_sum: 30, a_sum: 4, a_last: 3 }]);
  });

  it('a failing record does not open a group', () => {
    const t = make({ group_by: ['g'], aggregations: [{ function: 'sum', field: 'v' }] });
    expect(() => t.apply({ g: 'new', v: 'x' }, rc)).toThrow(/not a number/);
    t.apply({ g: 'old', v: 1 }, rc);
    expect(t.drain!('unit')).toEqual([{ g: 'old', v_sum: 1 }]);
  });
});

describe('transform aggregate: groups', () => {
  it('groups come out in the order of their first record; several group_by fields; missing groups under null', () => {
    const rs = [
      { h: 'r2', i: 1, x: 1 },
      { h: 'r1', i: 1, x: 2 },
      { h: 'r2', i: 2, x: 3 },
      { h: 'r2', i: 1, x: 4 },
      { i: 1, x: 5 },
      { h: null, i: 1, x: 6 },
      { h: 'r1', i: '1', x: 7 },
    ];
    expect(agg({ group_by: ['h', 'i'], aggregations: [{ function: 'sum', field: 'x' }] }, rs)).toEqual([
      { h: 'r2', i: 1, x_sum: 5 },
      { h: 'r1', i: 1, x_sum: 2 },
      { h: 'r2', i: 2, x_sum: 3 },
      { h: null, i: 1, x_sum: 11 },
      { h: 'r1', i: '1', x_sum: 7 },
    ]);
  });

  it('without group_by (default []) all records form one group; no records, no output', () => {
    expect(cfg({ aggregations: [{ function: 'count' }] })).toMatchObject({ group_by: [], scope: 'unit', max_groups: 100000 });
    expect(agg({ aggregations: [{ function: 'count' }] }, [{ a: 1 }, { b: 2 }])).toEqual([{ count: 2 }]);
    expect(agg({ aggregations: [{ function: 'count' }] }, [])).toEqual([]);
    expect(agg({ group_by: ['g'], aggregations: [{ function: 'count' }] }, [])).toEqual([]);
  });

  it('apply holds every record (returns null); drain hands the results on once and starts again', () => {
    const t = make({ group_by: ['g'], aggregations: [{ function: 'count' }] });
    expect(t.apply({ g: 1 }, rc)).toBeNull();
    expect(t.drain!('unit')).toEqual([{ g: 1, count: 1 }]);
    expect(t.drain!('unit')).toEqual([]);
    t.apply({ g: 2 }, rc);
    expect(t.drain!('unit')).toEqual([{ g: 2, count: 1 }]);
  });

  it('max_groups: a record that would open one group too many is an error; existing groups go on', () => {
    const t = make({ group_by: ['g'], max_groups: 2, aggregations: [{ function: 'count' }] });
    t.apply({ g: 'a' }, rc);
    t.apply({ g: 'b' }, rc);
    expect(() => t.apply({ g: 'c' }, rc)).toThrow('more than max_groups (2) groups; raise max_groups or group by fewer fields');
    t.apply({ g: 'a' }, rc);
    expect(t.drain!('unit')).toEqual([
      { g: 'a', count: 2 },
      { g: 'b', count: 1 },
    ]);
    // The limit is per result set: after a drain there is room again.
    t.apply({ g: 'c' }, rc);
    expect(t.drain!('unit')).toEqual([{ g: 'c', count: 1 }]);
  });

  it('scope unit drains at every point; scope run only at the end of the run (or flush) and defers units', () => {
    const unit = make({ aggregations: [{ function: 'count' }] });
    expect(plugin.defersUnits!(cfg({ aggregations: [{ function: 'count' }] }))).toBe(false);
    unit.apply({}, rc);
    expect(unit.drain!('unit')).toEqual([{ count: 1 }]);
    unit.apply({}, rc);
    expect(unit.drain!('run')).toEqual([{ count: 1 }]);

    const run = make({ scope: 'run', aggregations: [{ function: 'count' }] });
    expect(plugin.defersUnits!(cfg({ scope: 'run', aggregations: [{ function: 'count' }] }))).toBe(true);
    run.apply({}, rc);
    expect(run.drain!('unit')).toEqual([]);
    run.apply({}, rc);
    expect(run.drain!('unit')).toEqual([]);
    expect(run.drain!('run')).toEqual([{ count: 2 }]);
    run.apply({}, rc);
    expect(run.drain!('flush')).toEqual([{ count: 1 }]);
  });
});

describe('transform aggregate: config', () => {
  it('schema: aggregations needed (one at least), known functions, percentile 0-100, max_groups >= 1, scope unit|run', () => {
    const ok = (c: object) => Value.Check(plugin.config, cfg(c));
    expect(ok({ aggregations: [{ function: 'count' }] })).toBe(true);
    expect(ok({})).toBe(false);
    expect(ok({ aggregations: [] })).toBe(false);
    expect(ok({ aggregations: [{ function: 'median', field: 'v' }] })).toBe(false);
    expect(ok({ aggregations: [{ function: 'percentile', field: 'v', percentile: 101 }] })).toBe(false);
    expect(ok({ aggregations: [{ function: 'count' }], max_groups: 0 })).toBe(false);
    expect(ok({ aggregations: [{ function: 'count' }], scope: 'file' })).toBe(false);
    expect(ok({ aggregations: [{ function: 'count', fields: 'v' }] })).toBe(false);
  });

  it('lint: a field for every function but count, percentile only with percentile, distinct output names', () => {
    const lint = (c: object) => plugin.lint!(cfg(c));
    expect(lint({ aggregations: [{ function: 'sum' }] })).toEqual([{ path: 'aggregations.0.field', message: 'sum needs a field' }]);
    expect(lint({ aggregations: [{ function: 'percentile', field: 'v' }] })).toEqual([
      { path: 'aggregations.0.percentile', message: 'percentile needs percentile: 0-100' },
    ]);
    expect(lint({ aggregations: [{ function: 'max', field: 'v', percentile: 5 }] })).toEqual([
      { path: 'aggregations.0.percentile', message: 'percentile is only for function percentile' },
    ]);
    expect(
      lint({
        aggregations: [
          { function: 'sum', field: 'v' },
          { function: 'sum', field: 'v' },
        ],
      }),
    ).toEqual([{ path: 'aggregations.1.as', message: "output field 'v_sum' is produced twice (or is a group_by field); set a distinct 'as'" }]);
    expect(lint({ group_by: ['count'], aggregations: [{ function: 'count' }] })).toHaveLength(1);
    expect(lint({ group_by: ['g'], aggregations: [{ function: 'count' }, { function: 'sum', field: 'v', as: 'total' }] })).toEqual([]);
  });

  it('lint problems are validation errors with the YAML path', () => {
    expect(diagnostics('{ type: aggregate, aggregations: [{ function: avg }] }')).toEqual([
      expect.stringMatching(/^pipeline\.transforms\[0\]\.aggregations\[0\]\.field: avg needs a field/),
    ]);
  });
});

describe('transform aggregate: in the engine', () => {
  const rows = [
    { cell: 'A', lat: 10 },
    { cell: 'B', lat: 30 },
    { cell: 'A', lat: 'slow' },
    { cell: 'A', lat: 20 },
  ];
  const t = '{ type: aggregate, group_by: [cell], aggregations: [{ function: count }, { function: avg, field: lat }] }';

  it('a non-numeric value under on_error dlq: the record is dead-lettered with stage transform, the rest aggregated', async () => {
    const { record, out, dlq } = await runTransform(rows, t, { onError: 'dlq', dlq: true });
    expect(out).toEqual([
      { cell: 'A', count: 2, lat_avg: 15 },
      { cell: 'B', count: 1, lat_avg: 30 },
    ]);
    expect(record).toMatchObject({ status: 'success', records_in: 4, records_out: 2, records_skipped: 1, dlq_count: 1 });
    expect(dlq).toEqual([
      expect.objectContaining({
        _stage: 'transform',
        _error: `transforms[0] (aggregate): field 'lat' value "slow" is not a number (avg)`,
        record: { cell: 'A', lat: 'slow' },
        raw: null,
      }),
    ]);
    expect(record.errors).toEqual([`transform error in in.ndjson: transforms[0] (aggregate): field 'lat' value "slow" is not a number (avg)`]);
  });

  it('transforms after aggregate see the results; records_out counts results, not inputs', async () => {
    const { record, out } = await runTransform(
      rows.filter((r) => r.lat !== 'slow'),
      [t, '{ type: filter, expression: count > 1 }'],
    );
    expect(out).toEqual([{ cell: 'A', count: 2, lat_avg: 15 }]);
    expect(record).toMatchObject({ status: 'success', records_in: 3, records_out: 1, records_skipped: 0, errors: [] });
  });

  const files = {
    'a.ndjson': [
      { cell: 'A', v: 1 },
      { cell: 'B', v: 2 },
    ],
    'b.ndjson': [{ cell: 'A', v: 3 }],
    'c.ndjson': [
      { cell: 'B', v: 4 },
      { cell: 'C', v: 5 },
    ],
  };
  const sum = (scope: string) => `{ type: aggregate, scope: ${scope}, group_by: [cell], aggregations: [{ function: sum, field: v }] }`;

  it('scope unit: one result set per input file', async () => {
    const { record, out, left, done } = await runFiles(files, sum('unit'), { source: 'move_after_read: __DONE__' });
    expect(out).toEqual([
      { cell: 'A', v_sum: 1 },
      { cell: 'B', v_sum: 2 },
      { cell: 'A', v_sum: 3 },
      { cell: 'B', v_sum: 4 },
      { cell: 'C', v_sum: 5 },
    ]);
    expect(record).toMatchObject({ status: 'success', records_in: 5, records_out: 5, errors: [] });
    expect(left()).toEqual([]);
    expect(done()).toEqual(['a.ndjson', 'b.ndjson', 'c.ndjson']);
  });

  it('scope run: one result set for the run; the input files are moved only after the results are written', async () => {
    const root = tempDir();
    const seen: string[][] = [];
    const cap = capture('agg-run', { onWrite: () => void seen.push(readdirSync(join(root, 'in')).sort()) });
    const { record, left, done } = await runFiles(files, sum('run'), {
      root,
      registry: testRegistry,
      source: 'move_after_read: __DONE__',
      sinks: '    - { type: memory, id: agg-run }',
    });
    expect(
      cap.text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Rec),
    ).toEqual([
      { cell: 'A', v_sum: 4 },
      { cell: 'B', v_sum: 6 },
      { cell: 'C', v_sum: 5 },
    ]);
    expect(cap.batches).toHaveLength(1);
    expect(seen).toEqual([['a.ndjson', 'b.ndjson', 'c.ndjson']]);
    expect(record).toMatchObject({ status: 'success', records_in: 5, records_out: 3, records_skipped: 0, errors: [] });
    expect(left()).toEqual([]);
    expect(done()).toEqual(['a.ndjson', 'b.ndjson', 'c.ndjson']);
  });

  it('scope run with delete_after_read: files deleted after the write; with thread_workers 2 the same result', async () => {
    const root = tempDir();
    const seen: string[][] = [];
    capture('agg-run-del', { onWrite: () => void seen.push(readdirSync(join(root, 'in')).sort()) });
    const { record, left } = await runFiles(files, sum('run'), {
      root,
      registry: testRegistry,
      extra: '  thread_workers: 2',
      source: 'delete_after_read: true',
      sinks: '    - { type: memory, id: agg-run-del }',
    });
    expect(seen).toEqual([['a.ndjson', 'b.ndjson', 'c.ndjson']]);
    expect(record).toMatchObject({ status: 'success', records_in: 5, records_out: 3 });
    expect(left()).toEqual([]);
  });

  it('scope run with a failing sink: every input file stays in place', async () => {
    const cap = capture('agg-run-fail', { failFirst: -1 });
    const { record, left, done } = await runFiles(files, sum('run'), {
      registry: testRegistry,
      source: 'move_after_read: __DONE__',
      sinks: '    - { type: memory, id: agg-run-fail }',
    });
    expect(cap.attempts.length).toBeGreaterThan(0);
    expect(cap.batches).toEqual([]);
    expect(left()).toEqual(['a.ndjson', 'b.ndjson', 'c.ndjson']);
    expect(done()).toEqual([]);
    expect(record.records_out).toBe(0);
    expect(record.errors.join('\n')).toMatch(/memory sink agg-run-fail refused the write/);
    expect(record.errors.join('\n')).toMatch(/a\.ndjson left in place/);
  });

  it('scope unit with a failing sink: the files stay in place too', async () => {
    capture('agg-unit-fail', { failFirst: -1 });
    const { left } = await runFiles(files, sum('unit'), {
      registry: testRegistry,
      source: 'move_after_read: __DONE__',
      sinks: '    - { type: memory, id: agg-unit-fail }',
    });
    expect(left()).toEqual(['a.ndjson', 'b.ndjson', 'c.ndjson']);
  });

  it('an empty input directory: nothing written, success', async () => {
    const root = tempDir();
    const { record, out } = await runFiles({}, sum('run'), { root });
    expect(out).toEqual([]);
    expect(record).toMatchObject({ status: 'success', records_in: 0, records_out: 0 });
    expect(existsSync(join(root, 'out', 'out.ndjson'))).toBe(false);
  });
});
