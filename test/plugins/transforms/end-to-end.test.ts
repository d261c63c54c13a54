// Each transform through the real engine: NDJSON file -> local source -> transform -> local sink.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runTransform } from './_harness.js';

describe('transforms end to end (local -> transform -> local)', () => {
  it('rename', async () => {
    const { record, out } = await runTransform(
      [{ ifIndex: 1, ifInOctets: 10, in_octets: 'old' }, { ifIndex: 2 }],
      '    - { type: rename, fields: { ifInOctets: in_octets, ifIndex: index } }',
    );
    expect(record).toMatchObject({ status: 'success', records_in: 2, records_out: 2, records_skipped: 0, errors: [] });
    expect(out).toEqual([{ index: 1, in_octets: 10 }, { index: 2 }]);
    expect(Object.keys(out[0]!)).toEqual(['index', 'in_octets']);
  });

  it('drop', async () => {
    const { record, out } = await runTransform([{ a: 1, ifAlias: 'x', b: 2 }, { a: 3 }], '    - { type: drop, fields: [ifAlias, b] }');
    expect(record).toMatchObject({ status: 'success', records_in: 2, records_out: 2, records_skipped: 0 });
    expect(out).toEqual([{ a: 1 }, { a: 3 }]);
  });

  it('add_field, and a failing expression as a record error', async () => {
    const { record, out } = await runTransform(
      [{ x: 1 }, { x: 'abc' }, { x: 2.5 }],
      `    - type: add_field
      fields:
        site: "'paris-1'"
        y: x + 1
        z: y * 2
        k: 7
        on: true
        none: null`,
    );
    expect(out).toEqual([
      { x: 1, site: 'paris-1', y: 2, z: 4, k: 7, on: true, none: null },
      { x: 2.5, site: 'paris-1', y: 3.5, z: 7, k: 7, on: true, none: null },
    ]);
    expect(record).toMatchObject({ status: 'success', records_in: 3, records_out: 2, records_skipped: 1, dlq_count: 0 });
    expect(record.errors).toHaveLength(1);
    expect(record.errors[0]).toMatch(/^transform error in in\.ndjson: transforms\[0\] \(add_field\): unsupported operand types for \+: 'string' and 'number'/);
  });

  it('filter: dropped records are neither errors nor skipped', async () => {
    const { record, out } = await runTransform(
      [{ s: 1, n: 'a' }, { s: 2, n: 'b' }, { n: 'c' }, { s: 1, n: 'd' }],
      '    - { type: filter, expression: s == 1 }',
    );
    expect(out).toEqual([
      { s: 1, n: 'a' },
      { s: 1, n: 'd' },
    ]);
    expect(record).toMatchObject({ status: 'success', records_in: 4, records_out: 2, records_skipped: 0, errors: [] });
  });

  it('filter: nothing passes -> a note, no errors counted', async () => {
    const { record, out } = await runTransform([{ s: 2 }], '    - { type: filter, expression: s == 1 }');
    expect(out).toEqual([]);
    expect(record).toMatchObject({ status: 'success', records_in: 1, records_out: 0, records_skipped: 0 });
    expect(record.errors).toEqual(['no sink wrote the batch of 1 records from in.ndjson: no record passed the transforms']);
  });

  it('cast', async () => {
    const { record, out } = await runTransform(
      [{ i: '12', f: '2.5', b: 'on', s: 5 }, { i: ' 7 ', f: 3, b: 'no', s: { a: 1 } }, { i: '0x1F', f: '1e3', b: '1', s: true }, { i: 12.9 }],
      '    - { type: cast, fields: { i: int, f: float, b: bool, s: string } }',
    );
    expect(record).toMatchObject({ status: 'success', records_in: 4, records_out: 4, records_skipped: 0, errors: [] });
    expect(out).toEqual([{ i: 12, f: 2.5, b: true, s: '5' }, { i: 7, f: 3, b: false, s: '{"a":1}' }, { i: 31, f: 1000, b: true, s: 'true' }, { i: 12 }]);
  });

  it('cast failure under on_error continue: counted in records_skipped with a message (rule 6)', async () => {
    const { record, out, dirs } = await runTransform([{ i: '1' }, { i: 'x' }, { i: 'y' }, { i: '4' }], '    - { type: cast, fields: { i: int } }');
    expect(out).toEqual([{ i: 1 }, { i: 4 }]);
    expect(record).toMatchObject({ status: 'success', records_in: 4, records_out: 2, records_skipped: 2, dlq_count: 0, error: null });
    expect(record.errors).toEqual([
      `transform error in in.ndjson: transforms[0] (cast): cast: field 'i' value "x" is not a valid int`,
      `transform error in in.ndjson: transforms[0] (cast): cast: field 'i' value "y" is not a valid int`,
    ]);
    // Dropped by policy: the input is still finalized (here: nothing to move, it stays readable).
    expect(existsSync(join(dirs.input, 'in.ndjson'))).toBe(true);
  });

  it('cast failure under on_error dlq: the record goes to the DLQ with _stage transform', async () => {
    const { record, out, dlq } = await runTransform([{ i: '1' }, { i: 'x', keep: 'me' }, { i: '3' }], '    - { type: cast, fields: { i: int } }', {
      onError: 'dlq',
      dlq: true,
    });
    expect(out).toEqual([{ i: 1 }, { i: 3 }]);
    expect(record).toMatchObject({ status: 'success', records_in: 3, records_out: 2, records_skipped: 1, dlq_count: 1 });
    expect(record.errors).toEqual([`transform error in in.ndjson: transforms[0] (cast): cast: field 'i' value "x" is not a valid int`]);
    expect(dlq).toHaveLength(1);
    const env = dlq[0]!;
    expect(Object.keys(env).sort()).toEqual(['_error', '_pipeline', '_run_id', '_stage', '_timestamp', 'raw', 'record']);
    expect(env).toMatchObject({
      _stage: 'transform',
      _pipeline: 'e2e',
      _run_id: record.run_id,
      _error: `transforms[0] (cast): cast: field 'i' value "x" is not a valid int`,
      record: { i: 'x', keep: 'me' },
      raw: null,
    });
    expect(new Date(env._timestamp as string).toISOString()).toBe(env._timestamp);
  });

  it('cast failure on worker threads (thread_workers: 2): same counts, same DLQ envelope', async () => {
    const rows = Array.from({ length: 50 }, (_, i) => ({ i: i === 17 ? 'bad' : String(i) }));
    const { record, out, dlq } = await runTransform(rows, '    - { type: cast, fields: { i: int } }', {
      extra: '  thread_workers: 2',
      onError: 'dlq',
      dlq: true,
    });
    expect(record).toMatchObject({ status: 'success', records_in: 50, records_out: 49, records_skipped: 1, dlq_count: 1 });
    expect(out.map((r) => r.i)).toEqual(rows.map((_, i) => i).filter((i) => i !== 17));
    expect(dlq).toEqual([expect.objectContaining({ _stage: 'transform', record: { i: 'bad' }, raw: null })]);
  });

  it('cast failure under on_error abort ends the run aborted', async () => {
    const { record } = await runTransform([{ i: '1' }, { i: 'x' }], '    - { type: cast, fields: { i: int } }', { onError: 'abort' });
    expect(record.status).toBe('aborted');
    expect(record.error).toContain(`cast: field 'i' value "x" is not a valid int`);
  });

  it('cast with on_failure null and keep: no record errors', async () => {
    const rows = [
      { i: 'x', f: 'y' },
      { i: '2', f: '2.5' },
    ];
    const n = await runTransform(rows, '    - { type: cast, fields: { i: int, f: float }, on_failure: "null" }');
    expect(n.out).toEqual([
      { i: null, f: null },
      { i: 2, f: 2.5 },
    ]);
    expect(n.record).toMatchObject({ records_out: 2, records_skipped: 0, errors: [] });
    const k = await runTransform(rows, '    - { type: cast, fields: { i: int, f: float }, on_failure: keep }');
    expect(k.out).toEqual([
      { i: 'x', f: 'y' },
      { i: 2, f: 2.5 },
    ]);
    expect(k.record).toMatchObject({ records_out: 2, records_skipped: 0, errors: [] });
  });

  it('value_map', async () => {
    const { record, out } = await runTransform(
      [{ ifOperStatus: 1 }, { ifOperStatus: '2' }, { ifOperStatus: 7 }, { other: 1 }],
      `    - type: value_map
      field: ifOperStatus
      target: oper_status
      mapping: {'1': up, '2': down}
      default: unknown
    - { type: value_map, field: ifOperStatus, mapping: { '1': 100 } }`,
    );
    expect(record).toMatchObject({ status: 'success', records_in: 4, records_out: 4, records_skipped: 0 });
    expect(out).toEqual([
      { ifOperStatus: 100, oper_status: 'up' },
      { ifOperStatus: '2', oper_status: 'down' },
      { ifOperStatus: 7, oper_status: 'unknown' },
      { other: 1 },
    ]);
  });

  it('a chain of all six transforms', async () => {
    const { record, out } = await runTransform(
      [
        { ifIndex: '1', ifOperStatus: '1', ifInOctets: '1000000', ifAlias: 'x' },
        { ifIndex: '2', ifOperStatus: '2', ifInOctets: '5', ifAlias: 'y' },
      ],
      `    - { type: cast, fields: { ifIndex: int, ifOperStatus: int, ifInOctets: int } }
    - { type: filter, expression: ifOperStatus == 1 }
    - { type: rename, fields: { ifInOctets: in_octets } }
    - { type: add_field, fields: { in_mbps: in_octets * 8 / 1000000 } }
    - { type: value_map, field: ifOperStatus, mapping: { '1': up } }
    - { type: drop, fields: [ifAlias] }`,
    );
    expect(record).toMatchObject({ status: 'success', records_in: 2, records_out: 1, records_skipped: 0 });
    expect(out).toEqual([{ ifIndex: 1, ifOperStatus: 'up', in_octets: 1000000, in_mbps: 8 }]);
  });
});
