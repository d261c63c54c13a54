// Pipelines: every registered pipeline with its live status, schedule, last run and last-hour
// throughput (a running run's counts so far included), the records/s of what runs now, refreshed
// every few seconds; start, stop, run and delete on each row.
import { useState } from 'preact/hooks';
import { daemon, type PipelineSummary, type StatsRow } from '../../api/daemon.js';
import { Notice } from '../../components/notice.js';
import { PageHeader } from '../../components/page-header.js';
import { StatusBadge } from '../../components/status-badge.js';
import { fmtAgo, fmtInt, fmtPercent, fmtRate, fmtTime } from '../../lib/format.js';
import { href } from '../../lib/router.js';
import { usePoll } from '../../lib/use-poll.js';

const REFRESH_MS = 3000;

interface ListData {
  pipelines: PipelineSummary[];
  stats: Map<string, StatsRow>;
  nextRuns: Map<string, string>;
}

async function loadList(): Promise<ListData> {
  const [pipelines, stats, status] = await Promise.all([daemon.pipelines(), daemon.stats(), daemon.status()]);
  return {
    pipelines: [...pipelines].sort((a, b) => a.name.localeCompare(b.name)),
    stats: new Map(stats.map((s) => [s.pipeline, s])),
    nextRuns: new Map((status.next_runs ?? []).map((n) => [n.pipeline, n.next_run])),
  };
}

export function PipelineList() {
  const { data, error, loading, refresh } = usePoll(loadList, REFRESH_MS);
  const [busy, setBusy] = useState<string>();
  const [message, setMessage] = useState<{ tone: 'error' | 'ok'; text: string }>();

  const act = async (name: string, what: string, f: () => Promise<unknown>) => {
    setBusy(name);
    setMessage(undefined);
    try {
      await f();
      setMessage({ tone: 'ok', text: `${name}: ${what}` });
    } catch (e) {
      setMessage({ tone: 'error', text: `${name}: ${(e as Error).message}` });
    } finally {
      setBusy(undefined);
      await refresh();
    }
  };

  const remove = (name: string) => {
    if (confirm(`Delete pipeline '${name}'? It is stopped first; its run history stays.`)) void act(name, 'deleted', () => daemon.remove(name));
  };

  return (
    <section>
      <PageHeader
        title="Pipelines"
        subtitle={`Live status, refreshed every ${REFRESH_MS / 1000} s. Records and error rate cover the last hour, running runs included; records/s is what runs now.`}
      >
        <a class="button primary" href={href(['pipelines', '_new'])}>
          New pipeline
        </a>
      </PageHeader>
      {error && <Notice tone="error">{error}</Notice>}
      {message && (
        <Notice tone={message.tone} onClose={() => setMessage(undefined)}>
          {message.text}
        </Notice>
      )}
      {loading && !data ? (
        <p class="muted">Loading…</p>
      ) : data && data.pipelines.length === 0 ? (
        <div class="empty">
          <p>No pipelines are registered yet.</p>
          <a class="button primary" href={href(['pipelines', '_new'])}>
            Write the first one
          </a>
        </div>
      ) : (
        data && (
          <table class="table" data-testid="pipeline-table">
            <thead>
              <tr>
                <th>Name</th>
                <th>Status</th>
                <th>Schedule</th>
                <th>Last run</th>
                <th class="num">Records in</th>
                <th class="num">Records out</th>
                <th class="num" title="records per second in and out of the running run, over the last 10 s">
                  Records/s in · out
                </th>
                <th class="num">Error rate</th>
                <th class="num">Runs</th>
                <th aria-label="actions" />
              </tr>
            </thead>
            <tbody>
              {data.pipelines.map((p) => {
                const s = data.stats.get(p.name);
                const next = data.nextRuns.get(p.name);
                const stream = p.schedule_type === 'stream';
                const active = p.status === 'running' || p.status === 'scheduled' || p.status === 'queued';
                return (
                  <tr key={p.name} data-pipeline={p.name}>
                    <td>
                      <a href={href(['pipelines', p.name])}>{p.name}</a>
                      {(p.desired ? p.desired === 'stopped' : !p.enabled) && (
                        <span
                          class="tag"
                          title="Stopped (by Stop, or by enabled: false when it was created): it stays stopped across restarts until it is started"
                        >
                          kept stopped
                        </span>
                      )}
                    </td>
                    <td>
                      <StatusBadge status={p.status} />
                    </td>
                    <td>
                      {p.schedule_type}
                      {next && (
                        <div class="muted small" title={fmtTime(next)}>
                          next {fmtAgo(next)}
                        </div>
                      )}
                    </td>
                    <td>
                      {p.last_run ? (
                        <a href={href(['runs'], { pipeline: p.name })} title={fmtTime(p.last_run)}>
                          <StatusBadge status={p.last_run_status} /> {fmtAgo(p.last_run)}
                        </a>
                      ) : (
                        <span class="muted">never</span>
                      )}
                    </td>
                    <td class="num">{fmtInt(s?.records_in ?? 0)}</td>
                    <td class="num">{fmtInt(s?.records_out ?? 0)}</td>
                    <td class="num" data-testid="live-rate" title={p.live ? `last delivery ${fmtTime(p.live.updated_at)}` : undefined}>
                      {p.live ? (
                        <span class="live-rate">
                          <span class="live-dot" aria-hidden="true" /> {fmtRate(p.live.records_in_per_sec)} · {fmtRate(p.live.records_out_per_sec)}
                        </span>
                      ) : (
                        <span class="muted">–</span>
                      )}
                    </td>
                    <td class={`num${s && s.error_rate > 0 ? ' bad' : ''}`}>{s ? fmtPercent(s.error_rate) : '–'}</td>
                    <td class="num">{fmtInt(s?.run_count ?? 0)}</td>
                    <td class="row-actions">
                      <button type="button" disabled={busy === p.name || active} onClick={() => act(p.name, 'started', () => daemon.start(p.name))}>
                        Start
                      </button>
                      <button
                        type="button"
                        disabled={busy === p.name || (!active && p.status !== 'error')}
                        title="stops it, and it stays stopped across restarts until started"
                        onClick={() => act(p.name, 'stopped', () => daemon.stop(p.name))}
                      >
                        Stop
                      </button>
                      <button
                        type="button"
                        disabled={busy === p.name || stream}
                        title={stream ? 'a stream runs continuously: start it instead' : 'one immediate batch run'}
                        onClick={() => act(p.name, 'run triggered', () => daemon.run(p.name))}
                      >
                        Run
                      </button>
                      <button type="button" class="danger" disabled={busy === p.name} onClick={() => remove(p.name)}>
                        Delete
                      </button>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )
      )}
    </section>
  );
}
