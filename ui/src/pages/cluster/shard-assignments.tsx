// Sharded batch pipelines (issue 33): how many targets each worker polls, and where one device is
// polled: a search over every sharded pipeline's target -> worker list.
import { useEffect, useState } from 'preact/hooks';
import { daemon } from '../../api/daemon.js';
import type { ShardAssignment } from '../../api/types.js';
import { Notice } from '../../components/notice.js';
import { fmtInt } from '../../lib/format.js';
import { href } from '../../lib/router.js';
import { usePoll } from '../../lib/use-poll.js';

const REFRESH_MS = 5000;
/** Matches listed per pipeline. */
const LIMIT = 200;

export function ShardAssignments() {
  const sharded = usePoll(() => daemon.clusterShards(), REFRESH_MS);
  const [q, setQ] = useState('');
  const [found, setFound] = useState<{ q: string; hits: ShardAssignment[]; error?: string }>();
  const pipelines = sharded.data?.pipelines ?? [];
  // The names only: a poll that brings the same pipelines does not search again.
  const names = pipelines.map((p) => p.pipeline).join('\n');

  // A search runs a moment after the last keystroke, over every sharded pipeline.
  useEffect(() => {
    const text = q.trim();
    if (!text || !names) {
      setFound(undefined);
      return;
    }
    let live = true;
    const timer = setTimeout(() => {
      Promise.all(names.split('\n').map((name) => daemon.pipelineShards(name, text, LIMIT)))
        .then((hits) => live && setFound({ q: text, hits }))
        .catch((e: unknown) => live && setFound({ q: text, hits: [], error: String((e as Error).message ?? e) }));
    }, 250);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [q, names]);

  if (sharded.error) return <Notice tone="error">{sharded.error}</Notice>;
  return (
    <>
      <h2>Sharded polls</h2>
      {pipelines.length === 0 ? (
        <p class="muted">No batch pipeline is sharded (set workers: {'{count: all}'} on a snmp_poll or prometheus_scrape pipeline).</p>
      ) : (
        <>
          <table class="table" data-testid="shards-table">
            <thead>
              <tr>
                <th>Pipeline</th>
                <th class="num">Targets</th>
                <th>Targets per worker</th>
                <th>Run</th>
              </tr>
            </thead>
            <tbody>
              {pipelines.map((p) => (
                <tr key={p.pipeline}>
                  <td>
                    <a href={href(['pipelines', p.pipeline])}>{p.pipeline}</a>
                  </td>
                  <td class="num">{fmtInt(p.total)}</td>
                  <td>
                    {p.error && <span class="bad">{p.error}</span>}
                    {p.workers.map((w) => (
                      <span key={w.worker_id} class="badge badge-ok" title={`${w.shards} shard(s)`}>
                        {w.worker_id}: {fmtInt(w.targets)}
                      </span>
                    ))}
                  </td>
                  <td>
                    {p.run_id ? (
                      <a class="mono" href={href(['runs', p.run_id])}>
                        {p.run_id.slice(0, 8)}
                      </a>
                    ) : (
                      <span class="muted">planned</span>
                    )}
                    {p.running && <span class="badge badge-warn">running</span>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <form class="filters" aria-label="find a device" onSubmit={(e) => e.preventDefault()}>
            <label>
              Find a device
              <input
                type="search"
                data-testid="shard-search"
                placeholder="host, host:port, name or URL"
                value={q}
                onInput={(e) => setQ(e.currentTarget.value)}
              />
            </label>
          </form>
          {found?.error && <Notice tone="error">{found.error}</Notice>}
          {found && !found.error && (
            <table class="table" data-testid="shard-search-results">
              <thead>
                <tr>
                  <th>Target</th>
                  <th>Pipeline</th>
                  <th>Worker</th>
                  <th class="num">Shard</th>
                  <th>Status</th>
                </tr>
              </thead>
              <tbody>
                {found.hits.flatMap((a) =>
                  a.targets.map((t) => (
                    <tr key={`${a.pipeline}\n${t.target}`}>
                      <td class="mono">{t.target}</td>
                      <td>{a.pipeline}</td>
                      <td class="mono">{t.worker_id}</td>
                      <td class="num">{t.shard}</td>
                      <td>{t.status}</td>
                    </tr>
                  )),
                )}
                {found.hits.every((a) => a.targets.length === 0) && (
                  <tr>
                    <td colSpan={5} class="muted">
                      No target matches “{found.q}”.
                    </td>
                  </tr>
                )}
              </tbody>
            </table>
          )}
        </>
      )}
    </>
  );
}
