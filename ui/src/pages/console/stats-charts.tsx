// The Stats page's charts: the console's counters as rates over time, from the samples the live
// channel brought since the console was opened (lib/console-socket.ts statsHistory). A separate
// chunk with uPlot: the counters show before the charts have loaded.
import type { StatsSample } from '../../lib/console-socket.js';
import { TimeChart } from '../../components/time-chart.js';

type Counter = (s: StatsSample['stats']) => number;

interface ChartSpec {
  title: string;
  unit: string;
  testId: string;
  series: [string, Counter][];
}

const CHARTS: ChartSpec[] = [
  {
    title: 'Simulator requests per second',
    unit: '/s',
    testId: 'chart-simulator',
    series: [
      ['get', (s) => s.simulator.get],
      ['getnext', (s) => s.simulator.getnext],
      ['getbulk', (s) => s.simulator.getbulk],
      ['set', (s) => s.simulator.set],
      ['errors', (s) => s.simulator.errors],
    ],
  },
  {
    title: 'Traps per second',
    unit: '/s',
    testId: 'chart-traps',
    series: [
      ['received', (s) => s.traps.received],
      ['sent', (s) => s.traps.sent],
      ['dropped', (s) => s.traps.dropped],
      ['send errors', (s) => s.traps.send_errors],
    ],
  },
  {
    title: 'Walker: OIDs per second',
    unit: '/s',
    testId: 'chart-walker',
    series: [
      ['oids', (s) => s.walker.oids],
      ['errors', (s) => s.walker.errors],
    ],
  },
];

/** Per sample after the first: (counter now − counter before) / seconds between them; x in Unix seconds. */
export function rates(history: StatsSample[], pick: Counter): { x: number[]; y: (number | null)[] } {
  const x: number[] = [];
  const y: (number | null)[] = [];
  for (let i = 1; i < history.length; i++) {
    const [a, b] = [history[i - 1]!, history[i]!];
    const dt = b.t - a.t;
    x.push(b.t);
    y.push(dt > 0 ? Math.max(0, pick(b.stats) - pick(a.stats)) / dt : null);
  }
  return { x, y };
}

export function StatsCharts({ history }: { history: StatsSample[] }) {
  if (history.length < 2)
    return (
      <p class="muted" data-testid="stats-charts-waiting">
        The charts start with the second sample of the counters (pushed every few seconds).
      </p>
    );
  const span = history[history.length - 1]!.t - history[0]!.t;
  const range: [number, number] = [history[0]!.t, history[0]!.t + Math.max(span, 60)];
  return (
    <div class="charts" data-testid="stats-charts">
      {CHARTS.map((c) => {
        const series = c.series.map(([label, pick]) => [label, rates(history, pick)] as const);
        return (
          <TimeChart
            key={c.testId}
            title={c.title}
            unit={c.unit}
            x={series[0]![1].x}
            ys={series.map(([, r]) => r.y)}
            labels={series.map(([l]) => l)}
            range={range}
            testId={c.testId}
          />
        );
      })}
    </div>
  );
}
