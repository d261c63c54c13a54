// The shell: which server served the page (the pipeline daemon or the operator console), the
// navigation of that server's pages, the sign-in gate, and the page of the current hash route.
import { useEffect, useState } from 'preact/hooks';
import { connectConsole, disconnectConsole, socketState } from './lib/console-socket.js';
import { ApiFailure, request } from './lib/http.js';
import { route } from './lib/router.js';
import { credential, loginRequired, serverKind, setCredential } from './lib/session.js';
import { LoginPage } from './pages/login.js';
import { NotFound } from './pages/not-found.js';
import { AlertsPage } from './pages/alerts/alerts-page.js';
import { ClusterPage } from './pages/cluster/cluster-page.js';
import { MibsPage } from './pages/console/mibs-page.js';
import { SimulatorPage } from './pages/console/simulator-page.js';
import { StatsPage } from './pages/console/stats-page.js';
import { TrapsPage } from './pages/console/traps-page.js';
import { WalkerPage } from './pages/console/walker-page.js';
import { DlqPage } from './pages/dlq/dlq-page.js';
import { PipelineEditorPage } from './pages/pipelines/pipeline-editor-page.js';
import { PipelineList } from './pages/pipelines/pipeline-list.js';
import { PluginsPage } from './pages/plugins/plugins-page.js';
import { RunDetailPage } from './pages/runs/run-detail.js';
import { RunsPage } from './pages/runs/runs-page.js';
import { VersionsPage } from './pages/versions/versions-page.js';

const NAV = {
  daemon: [
    { id: 'pipelines', label: 'Pipelines' },
    { id: 'runs', label: 'Runs' },
    { id: 'alerts', label: 'Alerts' },
    { id: 'versions', label: 'Versions' },
    { id: 'cluster', label: 'Cluster' },
    { id: 'plugins', label: 'Plugins' },
  ],
  console: [
    { id: 'simulator', label: 'Simulator' },
    { id: 'walker', label: 'Walker' },
    { id: 'traps', label: 'Traps' },
    { id: 'mibs', label: 'MIBs' },
    { id: 'stats', label: 'Stats' },
  ],
};

function DaemonPage() {
  const { parts, query } = route.value;
  const [section, id] = parts;
  switch (section ?? 'pipelines') {
    case 'pipelines':
      if (id === undefined) return <PipelineList />;
      if (parts[2] === 'dlq') return <DlqPage name={id} query={query} />;
      return (
        <PipelineEditorPage
          name={id === '_new' ? undefined : id}
          template={query.get('template') ?? undefined}
          tab={query.get('tab') === 'live' ? 'live' : 'yaml'}
          stage={query.get('stage') ?? undefined}
        />
      );
    case 'runs':
      return id === undefined ? <RunsPage query={query} /> : <RunDetailPage runId={id} />;
    case 'alerts':
      return <AlertsPage pipeline={id} />;
    case 'versions':
      return <VersionsPage name={id} query={query} />;
    case 'cluster':
      return <ClusterPage />;
    case 'plugins':
      return <PluginsPage kind={id} keyName={parts[2]} />;
    default:
      return <NotFound />;
  }
}

function ConsolePage() {
  switch (route.value.parts[0] ?? 'simulator') {
    case 'simulator':
      return <SimulatorPage />;
    case 'walker':
      return <WalkerPage oid={route.value.query.get('oid') ?? undefined} />;
    case 'traps':
      return <TrapsPage />;
    case 'mibs':
      return <MibsPage query={route.value.query} />;
    case 'stats':
      return <StatsPage />;
    default:
      return <NotFound />;
  }
}

export function App() {
  const [meta, setMeta] = useState<{ version: string; name?: string }>();
  const [metaError, setMetaError] = useState<string>();
  const cred = credential.value;
  useEffect(() => {
    request<{ version: string; name?: string }>('/api/meta')
      .then((m) => {
        if (m.name === 'svc-console') {
          serverKind.value = 'console';
          // Every console page needs a session: ask at once instead of after a refused call.
          if (!credential.value) loginRequired.value = true;
        }
        setMeta(m);
      })
      .catch((e: ApiFailure) => {
        // Only the daemon guards /api/meta (the console's is open): sign in, then ask again.
        if (e.status === 401) setMeta((m) => m ?? { version: '' });
        else setMetaError(e.message);
      });
  }, [cred]);

  const onConsole = serverKind.value === 'console';
  const signedIn = credential.value !== null && !loginRequired.value;
  useEffect(() => {
    if (meta && onConsole && signedIn) connectConsole();
    return () => disconnectConsole();
  }, [meta, onConsole, signedIn]);

  if (metaError) return <div class="empty">The server did not answer: {metaError}</div>;
  if (!meta) return <p class="muted boot">Loading…</p>;
  if (loginRequired.value) return <LoginPage />;
  const kind = onConsole ? 'console' : 'daemon';
  const current = route.value.parts[0] ?? NAV[kind][0]!.id;
  const user = credential.value;
  const signOut = async () => {
    if (onConsole) await request('/api/settings/logout', { method: 'POST' }).catch(() => undefined);
    setCredential(null);
    location.reload();
  };
  return (
    <div class="shell">
      <nav class="sidebar" aria-label="main">
        <div class="brand">
          svc <span class="version">{meta.version}</span>
          <div class="server-kind">{onConsole ? 'operator console' : 'pipelines'}</div>
        </div>
        {NAV[kind].map((n) => (
          <a key={n.id} href={`#/${n.id}`} class={current === n.id ? 'active' : ''} aria-current={current === n.id ? 'page' : undefined}>
            {n.label}
          </a>
        ))}
        <div class="sidebar-foot">
          {onConsole && <span data-testid="socket-state">live: {socketState.value}</span>}
          {user && (
            <>
              <span>{user.username ?? 'API key'}</span>
              <button type="button" class="link" onClick={signOut}>
                sign out
              </button>
            </>
          )}
          <a href="/docs" target="_blank" rel="noopener noreferrer">
            API reference
          </a>
        </div>
      </nav>
      <main class="content">{onConsole ? <ConsolePage /> : <DaemonPage />}</main>
    </div>
  );
}
