// The condition variables of an alert rule (spec doc 2, "Alert rule"), computed from a finished
// run record. These are the only names an alert condition can read.
import type { RunRecord, RunStatus } from '../engine/run-record.js';

export interface ConditionVariables {
  records_in: number;
  /** Records written to at least one sink. */
  records_out: number;
  records_skipped: number;
  /** records_skipped / records_in; 0 when the run read no records. */
  error_rate: number;
  status: RunStatus;
  /** status === 'failed'. */
  failed: boolean;
  /** finished_at - started_at in seconds (with fractions); 0 when a timestamp is unreadable. */
  duration_seconds: number;
}

/** The variable names, in documentation order (validation checks conditions against them). */
export const VARIABLE_NAMES: readonly (keyof ConditionVariables)[] = [
  'records_in',
  'records_out',
  'records_skipped',
  'error_rate',
  'status',
  'failed',
  'duration_seconds',
];

const count = (n: unknown): number => (typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : 0);

export function conditionVariables(run: RunRecord): ConditionVariables {
  const records_in = count(run.records_in);
  const records_skipped = count(run.records_skipped);
  const started = Date.parse(run.started_at);
  const finished = Date.parse(run.finished_at);
  const duration = (finished - started) / 1000;
  return {
    records_in,
    records_out: count(run.records_out),
    records_skipped,
    error_rate: records_in > 0 ? records_skipped / records_in : 0,
    status: run.status,
    failed: run.status === 'failed',
    // A clock step backwards or a missing timestamp must not produce NaN or a negative duration.
    duration_seconds: Number.isFinite(duration) && duration > 0 ? duration : 0,
  };
}
