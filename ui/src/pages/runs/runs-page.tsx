// Run history: filter by pipeline, status and time; charts of records/s and duration over time;
// the table links every run to its detail, and a run with dead letters to them; CSV export of the
// filtered runs (the server's CSV). A running run's counts are live (the API lays them over the record) with its records/s.
import { useEffect, useState } from 'preact/hooks';
import type { ComponentType } from 'preact';
import { daemon, type RunRecord } from '../../api/daemon.js';
import { Notice } from '../../components/notice.js';
import { PageHeader } from '../../components/page-header.js';
import { RunStatus } from '../../components/run-status.js';
import { SelectField } from '../../components/select-field.js';
import { downloadText } from '../../lib/download.js';
import { durationSeconds, fmtInt, fmtRate, fmtSeconds, fmtTime } from '../../lib/format.js';
import { href, navigate } from '../../lib/router.js';
import { usePoll } from '../../lib/use-poll.js';
import { filterOf, RUN_LIMIT, SINCE_OPTIONS, STATUS_OPTIONS, viewOf, type RunView } from './run-filter.js';

const REFRESH_MS = 5000;

type ChartsComponent = ComponentType<{ runs: RunRecord[]; from?: number; to: number }>;

export function RunsPage({ query }: { query: URLSearchParams }) {
  const view = viewOf(query);
  const key = `${view.pipeline}|${view.status}|${view.since}`;
  const runs = usePoll(() => daemon.runs(filterOf(view)), REFRESH_MS, [key]);
  const filter = filterOf(view);
  const names = usePoll(() => daemon.pipelines().then((ps) => ps.map((p) => p.name).sort()), 0);
  const [Charts, setCharts] = useState<ChartsComponent>();
  const [error, setError] = useState<string>();

  useEffect(() => {
    // uPlot is its own chunk: the runs table shows before the charts have loaded.
    void import('./run-charts.js').then((m) => setCharts(() => m.RunCharts));
  }, []);

  const setView = (change: Partial<RunView>) => {
    const next = { ...view, ...change };
    navigate(href(['runs'], { pipeline: next.pipeline, status: next.status, since: next.since === '24h' ? undefined : next.since }));
  };

  const exportCsv = async () => {
    setError(undefined);
    try {
      const csv = await daemon.runsCsv({ ...filterOf(view), limit: 10000 });
      downloadText(`runs${view.pipeline ? `-${view.pipeline}` : ''}-${new Date().toISOString().slice(0, 19).replace(/:/g, '')}.csv`, csv);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  const list = runs.data ?? [];
  return (
    <section>
      <PageHeader title="Runs" subtitle={`Newest first, at most ${RUN_LIMIT}; refreshed every ${REFRESH_MS / 1000} s.`}>
        <button type="button" onClick={exportCsv}>
          Export CSV
        </button>
      </PageHeader>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="filter runs">
        <SelectField
          label="Pipeline"
          name="pipeline"
          value={view.pipeline}
          any="all pipelines"
          options={(names.data ?? []).concat(view.pipeline && !(names.data ?? []).includes(view.pipeline) ? [view.pipeline] : [])}
          onChange={(pipeline) => setView({ pipeline })}
        />
        <SelectField label="Status" name="status" value={view.status} any="any status" options={STATUS_OPTIONS} onChange={(status) => setView({ status })} />
        <SelectField label="Time" name="since" value={view.since} options={SINCE_OPTIONS} onChange={(since) => setView({ since })} />
      </form>
      {(runs.error || error) && <Notice tone="error">{runs.error ?? error}</Notice>}
      {Charts && list.length > 0 && <Charts runs={list} from={filter.from_dt ? Date.parse(filter.from_dt) / 1000 : undefined} to={Date.now() / 1000} />}
      {runs.loading && !runs.data ? (
        <p class="muted">Loading…</p>
      ) : list.length === 0 ? (
        <div class="empty">
          <p>No runs match this filter.</p>
        </div>
      ) : (
        <table class="table" data-testid="runs-table">
          <thead>
            <tr>
              <th>Started</th>
              <th>Pipeline</th>
              <th>Status</th>
              <th class="num">Duration</th>
              <th class="num">In</th>
              <th class="num">Out</th>
              <th class="num" title="dropped on purpose: by a transform (filter, limit, ...) or no sink condition">
                Filtered
              </th>
              <th class="num">Skipped</th>
              <th class="num">DLQ</th>
              <th class="num">Messages</th>
              <th>Run</th>
            </tr>
          </thead>
          <tbody>
            {list.map((r) => (
              <tr key={r.run_id} data-run={r.run_id}>
                <td>{fmtTime(r.started_at)}</td>
                <td>
                  <a href={href(['pipelines', r.pipeline])}>{r.pipeline}</a>
                </td>
                <td>
                  <RunStatus run={r} />
                </td>
                <td class="num">{fmtSeconds(durationSeconds(r.started_at, r.finished_at ?? (r.live ? new Date().toISOString() : null)))}</td>
                <td class="num" data-testid="run-in">
                  {fmtInt(r.records_in)}
                  {r.live && <div class="muted small live-rate">{fmtRate(r.live.records_in_per_sec)}</div>}
                </td>
                <td class="num" data-testid="run-out">
                  {fmtInt(r.records_out)}
                  {r.live && <div class="muted small live-rate">{fmtRate(r.live.records_out_per_sec)}</div>}
                </td>
                <td class="num">{fmtInt(r.records_filtered ?? 0)}</td>
                <td class={`num${r.records_skipped ? ' bad' : ''}`}>{fmtInt(r.records_skipped)}</td>
                <td class="num">{fmtInt(r.dlq_count)}</td>
                <td class="num">{fmtInt(r.errors.length + (r.error ? 1 : 0))}</td>
                <td>
                  <a href={href(['runs', r.run_id])} class="mono">
                    {r.run_id.slice(0, 8)}
                  </a>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
