// Live figures of running runs (issue 29). The runner reports its counters after each delivered
// chunk (in manager mode: the workers' reports, summed over a placement's slots) and LiveRun keeps
// the latest report: one assignment, no work per record. A timer of the supervisor samples it each
// second for the rates and the metrics, and writes it to the run's row every LIVE_PERSIST_MS (a
// crash keeps recent figures). The API lays the figures over the stored `running` record.
import type { RunProgress } from '../engine/runner.js';
import { copyStages, stageCounts, stageRates } from '../engine/stage-figures.js';
import type { LiveStages } from '../engine/stage-types.js';

export type { LiveStages } from '../engine/stage-types.js';
import type { StatsRow, StoredRun } from '../store/types.js';

/** How often the supervisor samples a running run (rates, metrics). */
export const LIVE_TICK_MS = 1000;
/** How often a running run's counters are written to its row in the store (when they changed). */
export const LIVE_PERSIST_MS = 5000;
/** Rates are taken over this last stretch of samples. */
export const RATE_WINDOW_MS = 10_000;

/** The counters of a run record that are live while it runs. */
type CounterName = 'records_in' | 'records_out' | 'records_filtered' | 'records_skipped' | 'dlq_count' | 'bytes_in' | 'bytes_out';

/** What a running run adds to its record and to its pipeline's summary (`live`). */
export interface LiveFigures {
  run_id: string;
  started_at: string;
  /** When the counters were last reported by the run (ISO 8601). */
  updated_at: string;
  records_in_per_sec: number;
  records_out_per_sec: number;
}

export type LiveCounts = Record<CounterName, number> & { errors: string[] };

export class LiveRun {
  /** The latest report, as the runner made it (undefined until the first chunk is delivered). */
  progress?: RunProgress;
  /** When the latest report came (epoch ms). */
  at: number;
  readonly startedAt = Date.now();
  private readonly samples: { t: number; in: number; out: number; stages?: number[] }[] = [];

  constructor(
    readonly runId: string,
    readonly pipeline: string,
  ) {
    this.at = this.startedAt;
  }

  /** The runner's report: per delivered chunk, so nothing here but assignments. */
  update(p: RunProgress) {
    this.progress = p;
    this.at = Date.now();
  }

  /** Called by the timer: one sample for the rates. */
  sample(now = Date.now()) {
    const p = this.progress;
    this.samples.push({ t: now, in: p?.records_in ?? 0, out: p?.records_out ?? 0, stages: p?.stages && stageCounts(p.stages) });
    // Keep one sample at or before the window's start, so the window is always covered.
    while (this.samples.length > 2 && this.samples[1]!.t <= now - RATE_WINDOW_MS) this.samples.shift();
  }

  counts(): LiveCounts {
    const p = this.progress;
    return {
      records_in: p?.records_in ?? 0,
      records_out: p?.records_out ?? 0,
      records_filtered: p?.records_filtered ?? 0,
      records_skipped: p?.records_skipped ?? 0,
      dlq_count: p?.dlq_count ?? 0,
      bytes_in: p?.bytes_in ?? 0,
      bytes_out: p?.bytes_out ?? 0,
      errors: p?.errors ? [...p.errors] : [],
    };
  }

  /** What is written to the run's row: `errors` only when the reports carry them (a worker's do not). */
  stored() {
    const { errors, ...c } = this.counts();
    return this.progress?.errors ? { ...c, errors } : c;
  }

  /** Records per second in and out over the last RATE_WINDOW_MS (since the start while it is younger). */
  rates(now = Date.now()): { records_in_per_sec: number; records_out_per_sec: number } {
    const c = this.counts();
    const first = this.samples[0] ?? { t: this.startedAt, in: 0, out: 0 };
    const from = this.samples.length > 0 && now - this.startedAt > RATE_WINDOW_MS ? first : { t: this.startedAt, in: 0, out: 0 };
    const secs = (now - from.t) / 1000;
    if (secs <= 0.05) return { records_in_per_sec: 0, records_out_per_sec: 0 };
    const r = (n: number) => Math.round((Math.max(0, n) / secs) * 10) / 10;
    return { records_in_per_sec: r(c.records_in - from.in), records_out_per_sec: r(c.records_out - from.out) };
  }

  /** The stages' figures with their rates over the same window as rates(); undefined before the first report. */
  stages(now = Date.now()): LiveStages | undefined {
    const figures = this.progress?.stages;
    if (!figures) return undefined;
    const s = copyStages(figures);
    const first = this.samples[0];
    const windowed = first !== undefined && now - this.startedAt > RATE_WINDOW_MS;
    const from = windowed ? first.t : this.startedAt;
    const before = windowed ? first.stages : undefined;
    const r = stageRates(s, stageCounts(s), before, (now - from) / 1000);
    return {
      source: { ...s.source, per_sec: r.source },
      transforms: s.transforms.map((t, i) => ({ ...t, per_sec: r.transforms[i]! })),
      sinks: s.sinks.map((k, i) => ({ ...k, per_sec: r.sinks[i]! })),
      dlq: s.dlq && { ...s.dlq, per_sec: r.dlq },
    };
  }

  figures(now = Date.now()): LiveFigures {
    return {
      run_id: this.runId,
      started_at: new Date(this.startedAt).toISOString(),
      updated_at: new Date(this.at).toISOString(),
      ...this.rates(now),
    };
  }
}

/**
 * A stored run with the live figures laid over it: while the store says `running` and this
 * process runs it, the counters (and any other numeric field the report has and the record has)
 * and `errors` are the live ones, and `live` says when they were taken and the rates.
 */
export function withLive<T extends StoredRun>(run: T, live: LiveRun | undefined): T & { live?: LiveFigures } {
  if (run.status !== 'running' || !live || live.runId !== run.run_id) return run;
  const out: Record<string, unknown> = { ...run };
  const p = live.progress as unknown as Record<string, unknown> | undefined;
  if (p) {
    // Every counter the report carries that the record has too (a counter added to both is live with no change here).
    for (const [k, v] of Object.entries(p)) if (typeof v === 'number' && typeof out[k] === 'number') out[k] = Math.max(v, out[k] as number);
    if (p.errors) out.errors = [...(p.errors as string[])];
  }
  out.live = live.figures();
  return out as T & { live: LiveFigures };
}

/** The pipeline summary's `live`: the active run's counters, rates, times and stages; null when no run is active here. */
export function pipelineLive(live: LiveRun | undefined): (LiveFigures & LiveCounts & { stages?: LiveStages }) | null {
  if (!live) return null;
  const stages = live.stages();
  return { ...live.figures(), ...live.counts(), ...(stages ? { stages } : {}) };
}

/**
 * GET /api/stats with running runs: their counts so far are added to their pipeline's row (a row
 * is made for a pipeline whose only run is still running); `run_count` and `avg_duration_seconds`
 * stay over finished runs. A row with running runs also has `running` and the two rates; the
 * others keep the spec's fields only.
 */
export function statsWithLive(rows: StatsRow[], lives: LiveRun[]) {
  type Row = StatsRow & { running?: number; records_in_per_sec?: number; records_out_per_sec?: number };
  const out = new Map<string, Row>(rows.map((r) => [r.pipeline, { ...r }]));
  for (const l of lives) {
    const row: Row = out.get(l.pipeline) ?? { pipeline: l.pipeline, records_in: 0, records_out: 0, error_rate: 0, avg_duration_seconds: 0, run_count: 0 };
    const c = l.counts();
    const skipped = row.error_rate * row.records_in + c.records_skipped;
    row.records_in += c.records_in;
    row.records_out += c.records_out;
    row.error_rate = row.records_in > 0 ? skipped / row.records_in : 0;
    const rates = l.rates();
    row.running = (row.running ?? 0) + 1;
    row.records_in_per_sec = (row.records_in_per_sec ?? 0) + rates.records_in_per_sec;
    row.records_out_per_sec = (row.records_out_per_sec ?? 0) + rates.records_out_per_sec;
    out.set(l.pipeline, row);
  }
  return [...out.values()].sort((a, b) => (a.pipeline < b.pipeline ? -1 : a.pipeline > b.pipeline ? 1 : 0));
}
