import { describe, expect, it } from 'vitest';
import { conditionVariables, VARIABLE_NAMES } from '../../src/alerts/variables.js';
import { compile, truthy } from '../../src/expr/index.js';
import type { RunRecord } from '../../src/engine/run-record.js';

const run = (over: Partial<RunRecord> = {}): RunRecord => ({
  run_id: 'r1',
  pipeline: 'p',
  node_id: 'n1',
  status: 'success',
  started_at: '2024-05-01T12:00:00.000Z',
  finished_at: '2024-05-01T12:00:12.500Z',
  records_in: 100,
  records_out: 90,
  records_filtered: 0,
  records_skipped: 10,
  bytes_in: 1000,
  bytes_out: 900,
  dlq_count: 0,
  error: null,
  errors: [],
  ...over,
});

describe('conditionVariables', () => {
  it('computes every variable of the spec', () => {
    expect(conditionVariables(run())).toEqual({
      records_in: 100,
      records_out: 90,
      records_skipped: 10,
      error_rate: 0.1,
      status: 'success',
      failed: false,
      duration_seconds: 12.5,
    });
    expect(Object.keys(conditionVariables(run())).sort()).toEqual([...VARIABLE_NAMES].sort());
  });

  it('error_rate is 0 when the run read no records', () => {
    const v = conditionVariables(run({ records_in: 0, records_out: 0, records_skipped: 0 }));
    expect(v.error_rate).toBe(0);
    expect(Number.isNaN(v.error_rate)).toBe(false);
    // Skips without input (noted skips) still do not divide by zero.
    expect(conditionVariables(run({ records_in: 0, records_skipped: 3 })).error_rate).toBe(0);
  });

  it('error_rate is a float, 1 when everything was skipped', () => {
    expect(conditionVariables(run({ records_in: 3, records_skipped: 1 })).error_rate).toBeCloseTo(1 / 3, 12);
    expect(conditionVariables(run({ records_in: 7, records_skipped: 7 })).error_rate).toBe(1);
  });

  it('failed follows status', () => {
    expect(conditionVariables(run({ status: 'failed' }))).toMatchObject({ status: 'failed', failed: true });
    expect(conditionVariables(run({ status: 'aborted' }))).toMatchObject({ status: 'aborted', failed: false });
  });

  it('duration_seconds is fractional, across days and time zones', () => {
    expect(conditionVariables(run({ started_at: '2024-05-01T12:00:00Z', finished_at: '2024-05-01T12:00:00.001Z' })).duration_seconds).toBe(0.001);
    expect(conditionVariables(run({ started_at: '2024-05-01T23:59:00+02:00', finished_at: '2024-05-01T22:00:30Z' })).duration_seconds).toBe(90);
    expect(conditionVariables(run({ finished_at: '2024-05-01T12:00:00.000Z' })).duration_seconds).toBe(0);
  });

  it('duration_seconds is 0, never NaN or negative, for unreadable or reversed timestamps', () => {
    expect(conditionVariables(run({ finished_at: 'garbage' })).duration_seconds).toBe(0);
    expect(conditionVariables(run({ finished_at: '2024-05-01T11:59:00Z' })).duration_seconds).toBe(0);
  });

  it('a condition can read every variable', () => {
    const cond = compile(
      "records_in == 100 and records_out == 90 and records_skipped == 10 and error_rate > 0.05 and status == 'failed' and failed and duration_seconds >= 12.5",
    );
    expect(truthy(cond({ ...conditionVariables(run({ status: 'failed' })) }))).toBe(true);
    expect(truthy(cond({ ...conditionVariables(run()) }))).toBe(false);
  });
});
