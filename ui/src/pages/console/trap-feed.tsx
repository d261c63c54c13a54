// The received notifications, live: pushed `trap` messages batched per animation frame, newest
// first, at most MAX_ROWS rendered. Paused, new ones are held and counted ("Paused (N new)") until
// resumed. Everything in a trap comes from the sender: text only.
import { useEffect, useRef, useState } from 'preact/hooks';
import { consoleApi, type TrapEvent, type TrapVarBind } from '../../api/console.js';
import { Notice } from '../../components/notice.js';
import { onConsoleMessage } from '../../lib/console-socket.js';
import { fmtTime } from '../../lib/format.js';

export const MAX_ROWS = 500;

/** A varbind's value as read: enum label, DISPLAY-HINT form, set bits, or the value itself. */
export function varbindValue(v: TrapVarBind): string {
  if (v.label !== undefined) return typeof v.value === 'number' ? `${v.label}(${v.value})` : v.label;
  if (v.display !== undefined) return v.display;
  if (v.bits) return `{${v.bits.join(', ')}}`;
  const text = v.value === null ? 'null' : String(v.value);
  return v.encoding === 'hex' ? `0x${text}` : text;
}

const trapText = (t: TrapEvent) =>
  [t.trap_name, t.trap_oid, t.source, t.version, t.kind, t.community, t.user, ...t.varbinds.flatMap((v) => [v.name, v.oid, v.type, varbindValue(v)])]
    .filter(Boolean)
    .join('\n')
    .toLowerCase();

export function TrapFeed() {
  const [events, setEvents] = useState<TrapEvent[]>([]);
  const [error, setError] = useState<string>();
  const [paused, setPaused] = useState(false);
  const [held, setHeld] = useState(0);
  const [filter, setFilter] = useState('');
  const pending = useRef<TrapEvent[]>([]);
  const heldEvents = useRef<TrapEvent[]>([]);
  const pausedRef = useRef(false);
  const frame = useRef<number>(0);

  useEffect(() => {
    consoleApi
      .trapEvents(MAX_ROWS)
      .then((r) => setEvents((live) => merge(live, r.traps)))
      .catch((e: Error) => setError(e.message));
    const off = onConsoleMessage((m) => {
      if (m.type !== 'trap') return;
      pending.current.push(m.data as TrapEvent);
      frame.current ||= requestAnimationFrame(() => {
        frame.current = 0;
        const batch = pending.current.splice(0).reverse();
        if (pausedRef.current) {
          heldEvents.current = merge(batch, heldEvents.current);
          setHeld(heldEvents.current.length);
        } else setEvents((old) => merge(batch, old));
      });
    });
    return () => {
      off();
      cancelAnimationFrame(frame.current);
    };
  }, []);

  const pause = () => {
    pausedRef.current = true;
    setPaused(true);
  };
  const resume = () => {
    pausedRef.current = false;
    const h = heldEvents.current;
    heldEvents.current = [];
    setHeld(0);
    setPaused(false);
    setEvents((old) => merge(h, old));
  };
  const clear = async () => {
    try {
      await consoleApi.clearTrapEvents();
      heldEvents.current = [];
      setHeld(0);
      setEvents([]);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  const needle = filter.trim().toLowerCase();
  const shown = needle ? events.filter((t) => trapText(t).includes(needle)) : events;
  return (
    <div>
      <div class="section-head">
        <h2>Received</h2>
        <div class="actions">
          <input
            type="search"
            name="filter"
            aria-label="filter traps"
            placeholder="Filter: name, OID, source, value"
            value={filter}
            onInput={(e) => setFilter(e.currentTarget.value)}
          />
          {paused ? (
            <>
              <span class="badge badge-warn" role="status" data-testid="feed-paused">
                Paused ({held} new)
              </span>
              <button type="button" onClick={resume}>
                Resume
              </button>
            </>
          ) : (
            <button type="button" onClick={pause}>
              Pause
            </button>
          )}
          <button type="button" onClick={clear}>
            Clear
          </button>
        </div>
      </div>
      {error && <Notice tone="error">{error}</Notice>}
      {events.length === 0 ? (
        <p class="muted">No traps received yet{paused ? ' (paused)' : ''}.</p>
      ) : (
        <>
          {needle && (
            <p class="muted small">
              {shown.length} of {events.length} match
            </p>
          )}
          <table class="table compact trap-table" data-testid="trap-feed">
            <thead>
              <tr>
                <th>Time</th>
                <th>Source</th>
                <th>Version</th>
                <th>Notification</th>
                <th>Varbinds</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((t) => (
                <tr key={t.id} data-trap-id={t.id}>
                  <td class="nowrap">{fmtTime(t.time)}</td>
                  <td class="mono">{t.source}</td>
                  <td>
                    v{t.version} {t.kind}
                    {t.community !== undefined && <div class="muted small mono">{t.community}</div>}
                    {t.user !== undefined && <div class="muted small mono">user {t.user}</div>}
                  </td>
                  <td>
                    <div class="mono">{t.trap_name ?? t.trap_oid}</div>
                    {t.trap_name && t.trap_name !== t.trap_oid && <div class="muted small mono">{t.trap_oid}</div>}
                  </td>
                  <td>
                    <ul class="varbinds">
                      {t.varbinds.map((v, i) => (
                        <li key={i}>
                          <span class="mono" title={v.oid}>
                            {v.name ?? v.oid}
                          </span>{' '}
                          <span class="muted small">{v.type}</span> <span class="mono">{varbindValue(v)}</span>
                        </li>
                      ))}
                    </ul>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {events.length >= MAX_ROWS && <p class="muted small">Showing the newest {MAX_ROWS}.</p>}
        </>
      )}
    </div>
  );
}

/** Newest first, no duplicates (a pushed trap may also be in the first GET), at most MAX_ROWS. */
function merge(newer: TrapEvent[], older: TrapEvent[]): TrapEvent[] {
  const seen = new Set<number>();
  const out: TrapEvent[] = [];
  for (const e of [...newer, ...older]) {
    if (seen.has(e.id)) continue;
    seen.add(e.id);
    out.push(e);
  }
  return out.sort((a, b) => b.id - a.id).slice(0, MAX_ROWS);
}
