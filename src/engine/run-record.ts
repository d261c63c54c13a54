// The run record of spec doc 2 and the counting rules that fill it.
import type { RunRecord } from '../store/types.js';

// The record's shape is the store's (src/store/types.ts): kept where it is kept.
export type { RunRecord, RunStatus } from '../store/types.js';

/** The counts of a run record, taken from anything that has them (counters, a progress report, sums). */
export function runCounts(
  c: Pick<RunRecord, 'records_in' | 'records_out' | 'records_skipped' | 'bytes_in' | 'bytes_out' | 'dlq_count'> & { records_filtered?: number },
) {
  const { records_in, records_out, records_skipped, bytes_in, bytes_out, dlq_count } = c;
  return { records_in, records_out, records_filtered: c.records_filtered ?? 0, records_skipped, bytes_in, bytes_out, dlq_count };
}

/** At most this many distinct messages are kept per run; the rest are counted in one last line. */
/** The record of a run that produced nothing (failed before its first record, never ran, only began): every count 0. */
export function emptyRunRecord(run: Pick<RunRecord, 'run_id' | 'pipeline' | 'node_id' | 'status' | 'started_at' | 'finished_at' | 'error'>): RunRecord {
  return { ...run, records_in: 0, records_out: 0, records_filtered: 0, records_skipped: 0, bytes_in: 0, bytes_out: 0, dlq_count: 0, errors: [] };
}

export const MAX_MESSAGES = 100;

export class RunCounters {
  records_in = 0;
  records_out = 0;
  /** Records dropped on purpose: a transform gave none for them, or no sink took them (process-chunk.ts). */
  records_filtered = 0;
  records_skipped = 0;
  bytes_in = 0;
  bytes_out = 0;
  dlq_count = 0;
  private readonly messages = new Map<string, number>();
  private dropped = 0;
  /** errors() as last built; a note clears it, so a progress report per chunk builds it only after new messages. */
  private listed?: string[];
  /** Masks secrets in every message (connector errors can quote a URL or a password). */
  constructor(private readonly redact: (text: string) => string = (t) => t) {}

  /** Rule 6, recorded error: a message and a skipped record. */
  recordError(message: string, records = 1) {
    this.records_skipped += records;
    this.note(message);
  }

  /** Rule 6, noted skip: a message only. */
  note(message: string) {
    this.listed = undefined;
    message = this.redact(message);
    const n = this.messages.get(message);
    if (n !== undefined) this.messages.set(message, n + 1);
    else if (this.messages.size < MAX_MESSAGES) this.messages.set(message, 1);
    else this.dropped++;
  }

  errors(): string[] {
    if (this.listed) return [...this.listed];
    const out = [...this.messages].map(([m, n]) => (n > 1 ? `${m} (x${n})` : m));
    if (this.dropped) out.push(`${this.dropped} more messages not shown`);
    this.listed = out;
    return [...out];
  }

  /** errors() shared, not copied: for progress reports, which only read it. */
  errorsView(): readonly string[] {
    if (!this.listed) this.errors();
    return this.listed!;
  }
}
