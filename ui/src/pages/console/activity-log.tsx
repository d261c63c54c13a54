// The simulator's activity log, live: the newest entries first, pushed over the WebSocket and
// batched per animation frame; at most MAX_ROWS are rendered. Entries hold community strings and
// OIDs sent by devices: text only.
import { useEffect, useRef, useState } from 'preact/hooks';
import { consoleApi, type ActivityEntry } from '../../api/console.js';
import { Notice } from '../../components/notice.js';
import { onConsoleMessage } from '../../lib/console-socket.js';
import { fmtTime } from '../../lib/format.js';

const MAX_ROWS = 200;

export function ActivityLog() {
  const [entries, setEntries] = useState<ActivityEntry[]>([]);
  const [error, setError] = useState<string>();
  const pending = useRef<ActivityEntry[]>([]);
  const frame = useRef<number>(0);

  useEffect(() => {
    consoleApi
      .logs(MAX_ROWS)
      .then((r) => setEntries((live) => merge(live, r.entries)))
      .catch((e: Error) => setError(e.message));
    const off = onConsoleMessage((m) => {
      if (m.type !== 'simulator_log') return;
      pending.current.push(m.data as ActivityEntry);
      frame.current ||= requestAnimationFrame(() => {
        frame.current = 0;
        const batch = pending.current.splice(0).reverse();
        setEntries((old) => merge(batch, old));
      });
    });
    return () => {
      off();
      cancelAnimationFrame(frame.current);
    };
  }, []);

  const clear = async () => {
    try {
      await consoleApi.clearLogs();
      setEntries([]);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  return (
    <div>
      <div class="section-head">
        <h2>Activity</h2>
        <button type="button" onClick={clear}>
          Clear log
        </button>
      </div>
      {error && <Notice tone="error">{error}</Notice>}
      {entries.length === 0 ? (
        <p class="muted">No requests yet.</p>
      ) : (
        <table class="table compact" data-testid="activity">
          <thead>
            <tr>
              <th>Time</th>
              <th>Source</th>
              <th>Version</th>
              <th>Principal</th>
              <th>Request</th>
              <th>OIDs</th>
              <th>Error</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((e) => (
              <tr key={e.id} class={e.error ? 'bad-row' : ''}>
                <td>{fmtTime(e.time)}</td>
                <td class="mono">{e.source}</td>
                <td>{e.version}</td>
                <td class="mono">{e.principal ?? ''}</td>
                <td>{e.request}</td>
                <td class="mono small">
                  {e.oids.slice(0, 3).join(' ')}
                  {e.oids.length > 3 ? ` +${e.oids.length - 3}` : ''}
                </td>
                <td class="bad">
                  {e.error ?? ''}
                  {e.skipped ? ` (${e.skipped} more not shown)` : ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

/** Newest first, no duplicates (a pushed entry may also be in the first GET), at most MAX_ROWS. */
function merge(newer: ActivityEntry[], older: ActivityEntry[]): ActivityEntry[] {
  const seen = new Set<number>();
  const out: ActivityEntry[] = [];
  for (const e of [...newer, ...older]) {
    if (seen.has(e.id)) continue;
    seen.add(e.id);
    out.push(e);
  }
  return out.sort((a, b) => b.id - a.id).slice(0, MAX_ROWS);
}
