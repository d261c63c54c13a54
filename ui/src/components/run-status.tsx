// A run's status and its dead letters: a run that dead-lettered records does not wear the green of a
// clean success (its status badge turns amber), and a second badge links to those dead letters (the
// pipeline's DLQ page filtered by the run).
import type { RunRecord } from '../api/types.js';
import { fmtInt } from '../lib/format.js';
import { href } from '../lib/router.js';
import { StatusBadge } from './status-badge.js';

type RunRef = Pick<RunRecord, 'pipeline' | 'run_id'>;

/** The DLQ page listing what `run` dead-lettered. */
export const deadLettersHref = (run: RunRef) => href(['pipelines', run.pipeline, 'dlq'], { run: run.run_id });

export const deadLetters = (n: number) => `${fmtInt(n)} dead letter${n === 1 ? '' : 's'}`;

export function RunStatus({ run }: { run: RunRef & Pick<RunRecord, 'status' | 'dlq_count'> }) {
  const n = run.dlq_count;
  if (!n) return <StatusBadge status={run.status} />;
  return (
    <span class="run-status">
      <StatusBadge status={run.status} tone={run.status === 'success' ? 'warn' : undefined} title={`${run.status}, with ${deadLetters(n)}`} />
      <a class="badge badge-dlq" href={deadLettersHref(run)} data-testid="run-dead-letters" title="the dead letters of this run">
        {deadLetters(n)}
      </a>
    </span>
  );
}
