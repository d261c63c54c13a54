// The SNMP agent simulator: its state (live over the WebSocket), endpoint, communities and v3
// users; start, stop and restart; the custom OID overrides; the activity log, live.
import { useEffect, useState } from 'preact/hooks';
import { consoleApi, type SimulatorStart } from '../../api/console.js';
import { Notice } from '../../components/notice.js';
import { PageHeader } from '../../components/page-header.js';
import { simulatorStatus } from '../../lib/console-socket.js';
import { fmtInt, fmtSeconds } from '../../lib/format.js';
import { useAction } from '../../lib/use-action.js';
import { useServiceForm } from '../../lib/use-service-form.js';
import { ActivityLog } from './activity-log.js';
import { OverridesEditor } from './overrides-editor.js';
import { ServiceBadge } from './service-badge.js';

export function SimulatorPage() {
  const s = simulatorStatus.value;
  const { form, setForm, submitted } = useServiceForm({ port: '1161', community: 'public', host: '', write_community: '' }, s, (st, f) => ({
    ...f,
    port: String(st.port),
    community: st.community || f.community,
  }));
  const { busy, notice, setNotice, act } = useAction<typeof s>((st) => {
    if (st) simulatorStatus.value = st;
  });

  useEffect(() => {
    // The socket's full_state usually comes first; this covers a socket that is not up yet.
    if (!simulatorStatus.value)
      consoleApi
        .simulator()
        .then((st) => (simulatorStatus.value ??= st))
        .catch(() => undefined);
  }, []);
  // Uptime counts on between status pushes.
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);

  const start = (e: Event) => {
    e.preventDefault();
    const body: SimulatorStart = { port: Number(form.port), community: form.community };
    if (form.host.trim()) body.host = form.host.trim();
    if (form.write_community.trim()) body.write_community = form.write_community.trim();
    submitted();
    void act('simulator started', () => consoleApi.startSimulator(body));
  };

  const running = s?.state === 'running';
  return (
    <section>
      <PageHeader
        title={
          <>
            SNMP simulator <ServiceBadge state={s?.state} />
          </>
        }
        subtitle="A lab SNMP agent (v1, v2c, v3) serving a default device plus your overrides."
      >
        <button type="button" onClick={() => act('simulator stopped', () => consoleApi.stopSimulator())} disabled={busy || !running}>
          Stop
        </button>
        <button type="button" onClick={() => act('simulator restarted', () => consoleApi.restartSimulator())} disabled={busy}>
          Restart
        </button>
      </PageHeader>
      {notice && (
        <Notice tone={notice.tone} onClose={() => setNotice(undefined)}>
          {notice.text}
        </Notice>
      )}
      {s?.error && <Notice tone="error">{s.error}</Notice>}
      <div class="two-columns">
        <dl class="facts" data-testid="simulator-status">
          <dt>Endpoint</dt>
          <dd class="mono">{s ? `udp ${s.host}:${s.port}` : '…'}</dd>
          <dt>Community</dt>
          <dd class="mono">
            {s?.community ?? ''}
            {s?.writable ? ' (a write community is set)' : ''}
          </dd>
          <dt>Versions</dt>
          <dd>{s?.versions.join(', ')}</dd>
          <dt>v3 users</dt>
          <dd>
            {s?.v3_users.length ? s.v3_users.map((u) => `${u.username} (${u.auth_protocol ?? 'noAuth'}/${u.priv_protocol ?? 'noPriv'})`).join(', ') : 'none'}
          </dd>
          <dt>Engine ID</dt>
          <dd class="mono">{s?.engine_id ?? '–'}</dd>
          <dt>Uptime</dt>
          <dd>{s?.started_at ? fmtSeconds(Math.max(0, Math.round((now - Date.parse(s.started_at)) / 1000))) : '–'}</dd>
          <dt>OIDs served</dt>
          <dd>{s?.oids != null ? fmtInt(s.oids) : '–'}</dd>
          <dt>Overrides</dt>
          <dd>{s?.overrides ?? 0}</dd>
        </dl>
        <form class="card form-grid" onSubmit={start} aria-label="start simulator">
          <label>
            UDP port
            <input name="port" type="number" min="0" max="65535" value={form.port} onInput={(e) => setForm({ ...form, port: e.currentTarget.value })} />
          </label>
          <label>
            Community
            <input name="community" value={form.community} onInput={(e) => setForm({ ...form, community: e.currentTarget.value })} />
          </label>
          <label>
            Bind address (optional)
            <input name="host" value={form.host} placeholder="127.0.0.1" onInput={(e) => setForm({ ...form, host: e.currentTarget.value })} />
          </label>
          <label>
            Write community (optional)
            <input name="write_community" value={form.write_community} onInput={(e) => setForm({ ...form, write_community: e.currentTarget.value })} />
          </label>
          <div class="form-actions wide">
            <button type="submit" class="primary" disabled={busy || running}>
              Start
            </button>
          </div>
        </form>
      </div>
      <h2>Custom OID overrides</h2>
      <OverridesEditor />
      <ActivityLog />
    </section>
  );
}
