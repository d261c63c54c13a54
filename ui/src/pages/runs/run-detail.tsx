// One run: status, timings, counters, the fatal error and every per-record message, and the
// pipeline version it ran; a run with dead letters links to them. Messages are shown as text: they
// can quote record values.
import { daemon } from '../../api/daemon.js';
import { Notice } from '../../components/notice.js';
import { PageHeader } from '../../components/page-header.js';
import { deadLetters, deadLettersHref, RunStatus } from '../../components/run-status.js';
import { durationSeconds, fmtAgo, fmtInt, fmtRate, fmtSeconds, fmtTime } from '../../lib/format.js';
import { href } from '../../lib/router.js';
import { usePoll } from '../../lib/use-poll.js';

export function RunDetailPage({ runId }: { runId: string }) {
  // A run still in progress is refreshed until it finishes.
  const { data: r, error } = usePoll(() => daemon.runRecord(runId), 3000, [runId]);
  // A running run: its counters are live (taken at r.live.updated_at) and its duration is so far.
  const seconds = r ? durationSeconds(r.started_at, r.finished_at ?? (r.live ? new Date().toISOString() : null)) : null;
  return (
    <section>
      <PageHeader
        title={
          <>
            Run <span class="mono">{runId.slice(0, 8)}</span> {r && <RunStatus run={r} />}
          </>
        }
        subtitle={<span class="mono">{runId}</span>}
      >
        {r && (
          <>
            <a class="button" href={href(['runs'], { pipeline: r.pipeline })}>
              Runs of {r.pipeline}
            </a>
            <a class="button" href={href(['pipelines', r.pipeline])}>
              Open pipeline
            </a>
            {r.dlq_count > 0 && (
              <a class="button" href={deadLettersHref(r)}>
                Dead letters of this run
              </a>
            )}
          </>
        )}
      </PageHeader>
      {error && <Notice tone="error">{error}</Notice>}
      {r && (
        <>
          <dl class="facts" data-testid="run-facts">
            <dt>Pipeline</dt>
            <dd>
              <a href={href(['pipelines', r.pipeline])}>{r.pipeline}</a>
            </dd>
            {r.pipeline_version !== undefined && (
              <>
                <dt>Pipeline version</dt>
                <dd data-testid="run-version">
                  {r.pipeline_version === null ? (
                    'not recorded'
                  ) : (
                    <a href={href(['versions', r.pipeline], { b: String(r.pipeline_version) })}>version {r.pipeline_version}</a>
                  )}
                </dd>
              </>
            )}
            <dt>Node</dt>
            <dd>{r.node_id}</dd>
            <dt>Started</dt>
            <dd>{fmtTime(r.started_at)}</dd>
            <dt>Finished</dt>
            <dd>{r.finished_at ? fmtTime(r.finished_at) : 'still running'}</dd>
            <dt>{r.finished_at ? 'Duration' : 'Running for'}</dt>
            <dd>{fmtSeconds(seconds)}</dd>
            <dt>Records in / out / filtered / skipped</dt>
            <dd data-testid="run-records">
              {fmtInt(r.records_in)} / {fmtInt(r.records_out)} / {fmtInt(r.records_filtered ?? 0)} / {fmtInt(r.records_skipped)}
            </dd>
            <dt>Bytes in / out</dt>
            <dd>
              {fmtInt(r.bytes_in)} / {fmtInt(r.bytes_out)}
            </dd>
            <dt>Dead-lettered</dt>
            <dd>{r.dlq_count > 0 ? <a href={deadLettersHref(r)}>{deadLetters(r.dlq_count)}</a> : '0'}</dd>
            {r.live ? (
              <>
                <dt>Records/s in / out (last 10 s)</dt>
                <dd data-testid="run-live-rate">
                  <span class="live-rate">
                    <span class="live-dot" aria-hidden="true" /> {fmtRate(r.live.records_in_per_sec)} / {fmtRate(r.live.records_out_per_sec)}
                  </span>
                </dd>
                <dt>Last delivery</dt>
                <dd title={fmtTime(r.live.updated_at)}>{fmtAgo(r.live.updated_at)}</dd>
              </>
            ) : (
              <>
                <dt>Records/s</dt>
                <dd>{seconds ? (r.records_in / seconds).toFixed(1) : '–'}</dd>
              </>
            )}
          </dl>
          {r.error && (
            <>
              <h2>Fatal error</h2>
              <pre class="error-text" data-testid="run-error">
                {r.error}
              </pre>
            </>
          )}
          {r.shards && r.shards.length > 0 && (
            <>
              <h2>Shards ({r.shards.length})</h2>
              <table class="table" data-testid="run-shards">
                <thead>
                  <tr>
                    <th class="num">Shard</th>
                    <th>Worker</th>
                    <th>Status</th>
                    <th class="num">Targets</th>
                    <th class="num">Records in</th>
                    <th class="num">Records out</th>
                    <th class="num">Errors</th>
                    <th class="num">Duration</th>
                    <th>Missed / note</th>
                  </tr>
                </thead>
                <tbody>
                  {r.shards.map((s) => (
                    <tr key={s.shard_index}>
                      <td class="num">{s.shard_index}</td>
                      <td class="mono">{s.worker_id || '–'}</td>
                      <td>
                        <span
                          class={`badge ${s.status === 'success' ? 'badge-ok' : s.status === 'running' || s.status === 'lost' ? 'badge-warn' : 'badge-bad'}`}
                        >
                          {s.status}
                        </span>
                      </td>
                      <td class="num">{fmtInt(s.target_count)}</td>
                      <td class="num">{fmtInt(s.records_in)}</td>
                      <td class="num">{fmtInt(s.records_out)}</td>
                      <td class={`num${s.errors ? ' bad' : ''}`}>{fmtInt(s.errors)}</td>
                      <td class="num">{s.duration_ms === null ? '–' : fmtSeconds(s.duration_ms / 1000)}</td>
                      <td>
                        {s.missed.length > 0 && (
                          <span class="bad" title={s.missed.join('\n')}>
                            {fmtInt(s.missed.length)} missed: {s.missed.slice(0, 5).join(', ')}
                            {s.missed.length > 5 ? ', …' : ''}
                          </span>
                        )}
                        {s.missed.length === 0 && s.error && <span class="muted">{s.error}</span>}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
          <h2>Errors and skip reasons ({r.errors.length})</h2>
          {r.errors.length === 0 ? (
            <p class="muted">None.</p>
          ) : (
            <ol class="messages" data-testid="run-errors">
              {r.errors.map((m, i) => (
                <li key={i}>{m}</li>
              ))}
            </ol>
          )}
        </>
      )}
    </section>
  );
}
