// Lines over time with uPlot: the Runs page's charts (one series per pipeline) and the console's
// Stats page. Imported only by chunks loaded on demand, so pages without charts do not load uPlot.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/** Distinct line colours, one per series (in turn when there are more series). */
const COLORS = ['#2563eb', '#9333ea', '#16a34a', '#ea580c', '#0891b2', '#db2777', '#65a30d', '#ca8a04', '#4f46e5', '#dc2626'];

export interface ChartProps {
  title: string;
  unit: string;
  x: number[];
  ys: (number | null)[][];
  labels: string[];
  range: [number, number];
  testId: string;
}

/** Lines over time (uPlot), one per `ys` entry, labelled in the legend; x in Unix seconds, shown over `range`. */
export function TimeChart({ title, unit, x, ys, labels, range, testId }: ChartProps) {
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
        series: [
          {},
          ...labels.map((label, i) => {
            const color = COLORS[i % COLORS.length]!;
            return {
              label,
              stroke: color,
              width: 1.5,
              points: { show: true, size: 5, fill: color },
              spanGaps: true,
              value: (_u: uPlot, v: number | null) => (v === null ? '–' : `${+v.toPrecision(4)} ${unit}`),
            };
          }),
        ],
        axes: [{}, { size: 60, label: unit }],
      },
      [x, ...ys],
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: width(), height: 180 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [x, ys, labels, lo, hi, unit]);
  return (
    <figure class="chart" data-testid={testId}>
      <figcaption>{title}</figcaption>
      <div ref={host} />
    </figure>
  );
}
