// The console's counters (live over the WebSocket): simulator requests, traps, walks, MIB uploads.
import { Fragment, type ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { consoleApi } from '../../api/console.js';
import { Notice } from '../../components/notice.js';
import { PageHeader } from '../../components/page-header.js';
import { liveStats, statsHistory, type StatsSample } from '../../lib/console-socket.js';
import { fmtAgo, fmtInt, fmtTime } from '../../lib/format.js';

type ChartsComponent = ComponentType<{ history: StatsSample[] }>;

export function StatsPage() {
  const s = liveStats.value;
  const [error, setError] = useState<string>();
  const [Charts, setCharts] = useState<ChartsComponent>();
  useEffect(() => {
    // uPlot is its own chunk: the counters show before the charts have loaded.
    void import('./stats-charts.js').then((m) => setCharts(() => m.StatsCharts));
  }, []);
  useEffect(() => {
    // Fresh counters on arrival; the socket pushes new ones every few seconds after that.
    consoleApi
      .stats()
      .then((st) => (liveStats.value = st))
      .catch((e: Error) => setError(e.message));
  }, []);
  const reset = async () => {
    if (!confirm('Reset every counter to zero?')) return;
    try {
      liveStats.value = await consoleApi.resetStats();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const groups: [string, Record<string, number | null>][] = s
    ? [
        ['Simulator', s.simulator],
        ['Traps', s.traps],
        ['Walker', s.walker],
        ['MIBs', s.mibs],
      ]
    : [];
  return (
    <section>
      <PageHeader title="Stats" subtitle={s ? `Counted since ${fmtTime(s.since)} (${fmtAgo(s.since)}); pushed live.` : 'Loading…'}>
        <button type="button" class="danger" onClick={reset}>
          Reset counters
        </button>
      </PageHeader>
      {error && <Notice tone="error">{error}</Notice>}
      {Charts && <Charts history={statsHistory.value} />}
      <div class="stat-cards" data-testid="stats">
        {groups.map(([title, values]) => (
          <div class="card" key={title}>
            <h2>{title}</h2>
            <dl class="facts plain">
              {Object.entries(values).map(([k, v]) => (
                <Fragment key={k}>
                  <dt>{k.replace(/_/g, ' ')}</dt>
                  <dd class="num">{v === null ? '–' : fmtInt(v)}</dd>
                </Fragment>
              ))}
            </dl>
          </div>
        ))}
      </div>
    </section>
  );
}
