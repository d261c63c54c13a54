// Records per second and duration of each run over time (uPlot). A separate chunk: the runs
// table does not wait for it.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { RunRecord } from '../../api/daemon.js';

interface Series {
  x: number[];
  rate: (number | null)[];
  duration: (number | null)[];
}

/** Finished runs, oldest first: x in Unix seconds, records in per second, duration in seconds. */
export function runSeries(runs: RunRecord[]): Series {
  const done = runs.filter((r) => r.finished_at).sort((a, b) => a.started_at.localeCompare(b.started_at));
  const out: Series = { x: [], rate: [], duration: [] };
  for (const r of done) {
    const seconds = (new Date(r.finished_at!).getTime() - new Date(r.started_at).getTime()) / 1000;
    out.x.push(new Date(r.started_at).getTime() / 1000);
    out.duration.push(seconds);
    out.rate.push(seconds > 0 ? r.records_in / seconds : null);
  }
  return out;
}

/** The x range shown: the filter's window, or around the runs when there is none (at least an hour, so one run is not stretched over years). */
export function timeWindow(x: number[], from: number | undefined, to: number): [number, number] {
  if (from !== undefined) return [from, to];
  const lo = Math.min(...x);
  const hi = Math.max(...x);
  const pad = Math.max((hi - lo) * 0.05, 1800);
  return [lo - pad, hi + pad];
}

interface ChartProps {
  title: string;
  label: string;
  x: number[];
  y: (number | null)[];
  range: [number, number];
  color: string;
  testId: string;
}

function TimeChart({ title, label, x, y, range, color, testId }: ChartProps) {
  const host = useRef<HTMLDivElement>(null);
  const [lo, hi] = range;
  useEffect(() => {
    const el = host.current!;
    const width = () => Math.max(el.clientWidth, 240);
    const plot = new uPlot(
      {
        width: width(),
        height: 180,
        legend: { show: true },
        cursor: { drag: { x: true, y: false } },
        scales: { x: { time: true, range: () => [lo, hi] }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
        series: [{}, { label, stroke: color, fill: `${color}22`, width: 1.5, points: { show: true, size: 5 }, spanGaps: true }],
        axes: [{}, { size: 60 }],
      },
      [x, y],
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: width(), height: 180 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [x, y, lo, hi, label, color]);
  return (
    <figure class="chart" data-testid={testId}>
      <figcaption>{title}</figcaption>
      <div ref={host} />
    </figure>
  );
}

/** `from` and `to` in Unix seconds: the time filter of the page (`from` undefined: all time). */
export function RunCharts({ runs, from, to }: { runs: RunRecord[]; from?: number; to: number }) {
  const s = runSeries(runs);
  if (s.x.length === 0) return null;
  const range = timeWindow(s.x, from, to);
  return (
    <div class="charts">
      <TimeChart title="Records in per second" label="records/s" x={s.x} y={s.rate} range={range} color="#2563eb" testId="chart-rate" />
      <TimeChart title="Run duration (seconds)" label="seconds" x={s.x} y={s.duration} range={range} color="#9333ea" testId="chart-duration" />
    </div>
  );
}
