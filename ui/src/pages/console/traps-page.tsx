// The trap tool: the receiver's control (port, community, resolve from MIBs; state live over the
// WebSocket), the live feed of received notifications and the send form.
import { useEffect } from 'preact/hooks';
import { consoleApi, type TrapsStart } from '../../api/console.js';
import { Notice } from '../../components/notice.js';
import { PageHeader } from '../../components/page-header.js';
import { trapsStatus } from '../../lib/console-socket.js';
import { fmtInt, fmtTime } from '../../lib/format.js';
import { useAction } from '../../lib/use-action.js';
import { useServiceForm } from '../../lib/use-service-form.js';
import { ServiceBadge } from './service-badge.js';
import { TrapFeed } from './trap-feed.js';
import { TrapSendForm } from './trap-send-form.js';

export function TrapsPage() {
  const s = trapsStatus.value;
  const { form, setForm, submitted } = useServiceForm({ port: '1162', community: '', resolve_mibs: true }, s, (st, f) => ({
    ...f,
    port: String(st.port),
    community: st.community ?? '',
    resolve_mibs: st.state === 'stopped' && !st.started_at ? f.resolve_mibs : st.resolve_mibs,
  }));
  const { busy, notice, setNotice, act } = useAction<typeof s>((st) => {
    if (st) trapsStatus.value = st;
  });

  useEffect(() => {
    // The socket's full_state usually comes first; this covers a socket that is not up yet.
    if (!trapsStatus.value)
      consoleApi
        .traps()
        .then((st) => (trapsStatus.value ??= st))
        .catch(() => undefined);
  }, []);
  const start = (e: Event) => {
    e.preventDefault();
    const body: TrapsStart = { port: Number(form.port), resolve_mibs: form.resolve_mibs };
    if (form.community.trim()) body.community = form.community.trim();
    submitted();
    void act('receiver started', () => consoleApi.startTraps(body));
  };

  const running = s?.state === 'running';
  return (
    <section>
      <PageHeader
        title={
          <>
            Traps <ServiceBadge state={s?.state} />
          </>
        }
        subtitle="Receive SNMP traps and informs (v1, v2c, v3) and send your own."
      >
        <button type="button" onClick={() => act('receiver stopped', () => consoleApi.stopTraps())} disabled={busy || !running}>
          Stop receiver
        </button>
      </PageHeader>
      {notice && (
        <Notice tone={notice.tone} onClose={() => setNotice(undefined)}>
          {notice.text}
        </Notice>
      )}
      {s?.error && <Notice tone="error">{s.error}</Notice>}
      <div class="two-columns">
        <dl class="facts" data-testid="receiver-status">
          <dt>Endpoint</dt>
          <dd class="mono">{s ? `udp ${s.host ?? '–'}:${s.port}` : '…'}</dd>
          <dt>Community</dt>
          <dd class="mono">{s ? (s.community ?? 'any') : ''}</dd>
          <dt>Names from MIBs</dt>
          <dd>{s ? (s.resolve_mibs ? 'yes' : 'no') : ''}</dd>
          <dt>v3 users</dt>
          <dd>{s?.v3_users ?? 0}</dd>
          <dt>Received</dt>
          <dd>
            {fmtInt(s?.received)}
            {s?.informs_acknowledged ? ` (${fmtInt(s.informs_acknowledged)} informs acknowledged)` : ''}
          </dd>
          <dt>Dropped</dt>
          <dd>
            {fmtInt(s?.dropped)}
            {s?.last_drop && (
              <span class="muted small">
                {' '}
                · last: {s.last_drop.reason} from {s.last_drop.source} at {fmtTime(s.last_drop.time)}
              </span>
            )}
          </dd>
          <dt>Kept</dt>
          <dd>{s ? `${fmtInt(s.events)} of ${fmtInt(s.event_limit)}` : ''}</dd>
        </dl>
        <form class="card form-grid" onSubmit={start} aria-label="start receiver">
          <label>
            UDP port
            <input name="port" type="number" min="0" max="65535" value={form.port} onInput={(e) => setForm({ ...form, port: e.currentTarget.value })} />
          </label>
          <label>
            Community (empty: any)
            <input name="community" value={form.community} onInput={(e) => setForm({ ...form, community: e.currentTarget.value })} />
          </label>
          <label class="inline wide">
            <input
              type="checkbox"
              name="resolve_mibs"
              checked={form.resolve_mibs}
              onChange={(e) => setForm({ ...form, resolve_mibs: e.currentTarget.checked })}
            />{' '}
            name notifications and varbinds from the loaded MIBs
          </label>
          <div class="form-actions wide">
            <button type="submit" class="primary" disabled={busy || running}>
              Start receiver
            </button>
          </div>
        </form>
      </div>
      <TrapFeed />
      <h2>Send a trap</h2>
      <TrapSendForm defaultPort={running ? s.port : 162} />
    </section>
  );
}
