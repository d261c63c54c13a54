// Records per second and duration of each run over time (uPlot). A separate chunk: the runs
// table does not wait for it.
import type { RunRecord } from '../../api/daemon.js';
import { TimeChart } from '../../components/time-chart.js';

/** One series per pipeline over a shared time axis (uPlot's data shape): null where a pipeline has no run at that time. */
export interface Series {
  /** Start times of the finished runs, Unix seconds, ascending, each once. */
  x: number[];
  /** Pipeline names, in the order of `rate` and `duration`. */
  pipelines: string[];
  /** Per pipeline: records in per second of its run started at x[i], or null. */
  rate: (number | null)[][];
  /** Per pipeline: duration in seconds of its run started at x[i], or null. */
  duration: (number | null)[][];
}

/** Finished runs, oldest first: x in Unix seconds, records in per second, duration in seconds; one series per pipeline. */
export function runSeries(runs: RunRecord[]): Series {
  const done = runs.filter((r) => r.finished_at).sort((a, b) => a.started_at.localeCompare(b.started_at));
  const x = [...new Set(done.map((r) => new Date(r.started_at).getTime() / 1000))].sort((a, b) => a - b);
  const at = new Map(x.map((t, i) => [t, i]));
  const pipelines = [...new Set(done.map((r) => r.pipeline))].sort();
  const index = new Map(pipelines.map((p, i) => [p, i]));
  const empty = () => pipelines.map(() => x.map((): number | null => null));
  const out: Series = { x, pipelines, rate: empty(), duration: empty() };
  for (const r of done) {
    const seconds = (new Date(r.finished_at!).getTime() - new Date(r.started_at).getTime()) / 1000;
    const i = at.get(new Date(r.started_at).getTime() / 1000)!;
    const p = index.get(r.pipeline)!;
    out.duration[p]![i] = seconds;
    out.rate[p]![i] = seconds > 0 ? r.records_in / seconds : null;
  }
  return out;
}

/**
 * The x range shown: zoomed to the runs, with 5% of their span on each side (at least a minute, so
 * one run or a burst of runs a second apart is not a single line at the edge). The page's time
 * filter chose the runs; it does not stretch the axis over the hours or days without any.
 */
export function timeWindow(x: number[]): [number, number] {
  const lo = Math.min(...x);
  const hi = Math.max(...x);
  const pad = Math.max((hi - lo) * 0.05, 60);
  return [lo - pad, hi + pad];
}

/** The runs the page's filter chose; the charts zoom to them (`from` and `to`, the filter's window, are not the axis). */
export function RunCharts({ runs }: { runs: RunRecord[]; from?: number; to: number }) {
  const s = runSeries(runs);
  if (s.x.length === 0) return null;
  const range = timeWindow(s.x);
  return (
    <div class="charts">
      <TimeChart title="Records in per second, per pipeline" unit="records/s" x={s.x} ys={s.rate} labels={s.pipelines} range={range} testId="chart-rate" />
      <TimeChart title="Run duration, per pipeline" unit="s" x={s.x} ys={s.duration} labels={s.pipelines} range={range} testId="chart-duration" />
    </div>
  );
}
