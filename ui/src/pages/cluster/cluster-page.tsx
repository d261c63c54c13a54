// Cluster: worker nodes with health and active runs, sharded polls (where each device is polled),
// and stream placements with their slots,
// rates and stale or degraded state. A standalone daemon says so, and still lists its streams.
import { daemon } from '../../api/daemon.js';
import { Notice } from '../../components/notice.js';
import { PageHeader } from '../../components/page-header.js';
import { StatusBadge } from '../../components/status-badge.js';
import { fmtAgo, fmtInt } from '../../lib/format.js';
import { href } from '../../lib/router.js';
import { usePoll } from '../../lib/use-poll.js';
import { ShardAssignments } from './shard-assignments.js';

const REFRESH_MS = 5000;

export function ClusterPage() {
  const nodes = usePoll(() => daemon.clusterNodes(), REFRESH_MS);
  const streams = usePoll(() => daemon.clusterStreams(), REFRESH_MS);
  const standalone = nodes.data?.mode === 'standalone';
  return (
    <section>
      <PageHeader title="Cluster" subtitle={`Nodes, sharded polls and stream placements, refreshed every ${REFRESH_MS / 1000} s.`} />
      {(nodes.error || streams.error) && <Notice tone="error">{nodes.error ?? streams.error}</Notice>}
      {standalone && (
        <Notice tone="info">
          This daemon runs standalone (SVC_MODE=standalone): it schedules and executes every pipeline itself, with no workers. Its running streams are shown
          below as single-slot placements.
        </Notice>
      )}
      {nodes.data && !standalone && (
        <>
          <h2>Workers ({nodes.data.workers.length})</h2>
          <table class="table" data-testid="workers-table">
            <thead>
              <tr>
                <th>Worker</th>
                <th>Health</th>
                <th class="num">Active runs</th>
                <th>Running</th>
                <th>Assigned</th>
              </tr>
            </thead>
            <tbody>
              {nodes.data.workers.map((w) => (
                <tr key={w.url}>
                  <td class="mono">{w.url}</td>
                  <td>{w.ok ? <span class="badge badge-ok">healthy</span> : <span class="badge badge-bad">down</span>}</td>
                  <td class="num">{w.active_runs}</td>
                  <td>{w.running_pipelines.join(', ') || '–'}</td>
                  <td>{w.assigned_pipelines.join(', ') || '–'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      <ShardAssignments />
      <h2>Stream placements</h2>
      {streams.data && streams.data.streams.length === 0 ? (
        <p class="muted">No stream is running.</p>
      ) : (
        <table class="table" data-testid="placements-table">
          <thead>
            <tr>
              <th>Pipeline</th>
              <th>Status</th>
              <th>Slots</th>
              <th class="num">In/s</th>
              <th class="num">Out/s</th>
              <th class="num">Records in</th>
              <th class="num">Errors</th>
              <th class="num">DLQ</th>
              <th>Started</th>
            </tr>
          </thead>
          <tbody>
            {(streams.data?.streams ?? []).map((s) => (
              <tr key={s.pipeline_name}>
                <td>
                  <a href={href(['pipelines', s.pipeline_name])}>{s.pipeline_name}</a>
                </td>
                <td>
                  <StatusBadge status={s.status} />
                </td>
                <td>
                  {s.active_slots}/{s.slot_count}{' '}
                  {s.slots.map((slot) => (
                    <span
                      key={slot.worker_index}
                      class={`badge ${slot.status === 'stale' ? 'badge-warn' : 'badge-ok'}`}
                      title={`${slot.worker_id} · restarts ${slot.restart_count}`}
                    >
                      {slot.worker_id}: {slot.status}
                    </span>
                  ))}
                </td>
                <td class="num">{s.records_in_per_sec.toFixed(1)}</td>
                <td class="num">{s.records_out_per_sec.toFixed(1)}</td>
                <td class="num">{fmtInt(s.records_in)}</td>
                <td class={`num${s.error_count ? ' bad' : ''}`}>{fmtInt(s.error_count)}</td>
                <td class="num">{fmtInt(s.dlq_count)}</td>
                <td>{fmtAgo(s.started_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
