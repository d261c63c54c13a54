// A pipeline's page: its graph with the live figures of each stage (polled), then two tabs: the
// YAML in the editor (completion and hover from the plugin schemas, the server's dry-run
// diagnostics inline as you type: the server stays the authority; a connector test, save, run) and
// the Live tab (the tap). The editor chunk is fetched when this page opens.
import { useEffect, useRef, useState } from 'preact/hooks';
import { daemon, type ConnectorTest, type DryRunDiagnostic, type PipelineState, type PluginSchemas } from '../../api/daemon.js';
import type { YamlEditor } from '../../editor/yaml-editor.js';
import { Notice } from '../../components/notice.js';
import { PageHeader } from '../../components/page-header.js';
import { StatusBadge } from '../../components/status-badge.js';
import { cspNonce } from '../../lib/csp.js';
import { request } from '../../lib/http.js';
import { href, navigate } from '../../lib/router.js';
import { usePoll } from '../../lib/use-poll.js';
import { PipelineGraph } from './pipeline-graph.js';
import { PipelineTap } from './pipeline-tap.js';
import { STARTER_PIPELINE } from './starter.js';

const VALIDATE_DELAY_MS = 500;
/** The graph's figures are refreshed this often while the pipeline runs (the engine's own are per delivered chunk)... */
const LIVE_MS = 2000;
/** ...and this often while it does not, to notice that it started. */
const IDLE_MS = 5000;

let schemasOnce: Promise<PluginSchemas | undefined> | undefined;
/** The plugin schemas, fetched once per page load; the editor still works (without completion) if they fail. */
const loadSchemas = () => (schemasOnce ??= daemon.schemas().catch(() => undefined));

interface Template {
  name: string;
  description: string;
  yaml: string;
}

function pipelineName(yaml: string): string | undefined {
  const m = /^ {2}name:\s*["']?([A-Za-z0-9][A-Za-z0-9_.-]*)["']?\s*$/m.exec(yaml);
  return m?.[1];
}

function ConnectorResults({ result }: { result: { source: ConnectorTest; sinks: ConnectorTest[] } }) {
  const rows = [
    { label: `source (${result.source.type ?? '?'})`, r: result.source },
    ...result.sinks.map((r, i) => ({ label: `sinks[${i}] (${r.type ?? '?'})`, r })),
  ];
  return (
    <ul class="checks" data-testid="connector-results">
      {rows.map(({ label, r }) => (
        <li key={label} class={r.ok ? 'ok' : 'bad'}>
          <strong>{label}</strong> {r.ok ? `reachable${r.latency_ms !== null ? ` in ${r.latency_ms} ms` : ''}` : r.error}
        </li>
      ))}
    </ul>
  );
}

/** The tabs under the graph: the YAML editor (kept mounted, so unsaved text survives a look at the Live tab) and the tap. */
type Tab = 'yaml' | 'live';

export function PipelineEditorPage({ name, template, tab = 'yaml', stage }: { name?: string; template?: string; tab?: Tab; stage?: string }) {
  const host = useRef<HTMLDivElement>(null);
  const editor = useRef<YamlEditor | undefined>(undefined);
  const [state, setState] = useState<PipelineState>();
  const [text, setText] = useState<string>();
  const [saved, setSaved] = useState<string>();
  const [diagnostics, setDiagnostics] = useState<DryRunDiagnostic[]>();
  const [validating, setValidating] = useState(false);
  const [connectors, setConnectors] = useState<{ source: ConnectorTest; sinks: ConnectorTest[] }>();
  const [templates, setTemplates] = useState<Template[]>([]);
  const [notice, setNotice] = useState<{ tone: 'error' | 'ok' | 'info'; text: string; link?: [string, string] }>();
  const [busy, setBusy] = useState<string>();
  const isNew = name === undefined;
  const [polledRunning, setPolledRunning] = useState(false);
  const polled = usePoll(async () => (isNew ? undefined : daemon.pipeline(name)), isNew ? 0 : polledRunning ? LIVE_MS : IDLE_MS, [name]);
  const current = polled.data ?? state;
  const nowRunning = !!current?.live;
  useEffect(() => setPolledRunning(nowRunning), [nowRunning]);

  // Load the pipeline (or the starter), the schemas and the editor chunk, then mount the editor.
  useEffect(() => {
    let cancelled = false;
    (async () => {
      try {
        const [initial, schemas, mod] = await Promise.all([
          isNew ? Promise.resolve(undefined) : daemon.pipeline(name),
          loadSchemas(),
          import('../../editor/yaml-editor.js'),
        ]);
        let doc = initial?.yaml ?? STARTER_PIPELINE;
        if (isNew) {
          const list = await request<Template[]>('/api/templates').catch(() => [] as Template[]);
          if (cancelled) return;
          setTemplates(list);
          doc = list.find((t) => t.name === template)?.yaml ?? doc;
        }
        if (cancelled || !host.current) return;
        setState(initial);
        setSaved(initial?.yaml);
        setText(doc);
        editor.current = mod.createYamlEditor(host.current, { doc, nonce: cspNonce(), schemas, onChange: setText });
      } catch (e) {
        if (!cancelled) setNotice({ tone: 'error', text: (e as Error).message });
      }
    })();
    return () => {
      cancelled = true;
      editor.current?.destroy();
      editor.current = undefined;
    };
  }, [name, template, isNew]);

  // Validate on the server a moment after typing stops; only the latest answer is shown.
  useEffect(() => {
    if (text === undefined) return;
    let stale = false;
    const timer = setTimeout(async () => {
      setValidating(true);
      try {
        const r = await daemon.dryRun(text);
        if (stale) return;
        setDiagnostics(r.diagnostics);
        editor.current?.showDiagnostics(r.diagnostics);
      } catch (e) {
        if (!stale) setNotice({ tone: 'error', text: `validation failed: ${(e as Error).message}` });
      } finally {
        if (!stale) setValidating(false);
      }
    }, VALIDATE_DELAY_MS);
    return () => {
      stale = true;
      clearTimeout(timer);
    };
  }, [text]);

  const run = async (what: string, f: () => Promise<void>) => {
    setBusy(what);
    setNotice(undefined);
    try {
      await f();
    } catch (e) {
      setNotice({ tone: 'error', text: (e as Error).message });
    } finally {
      setBusy(undefined);
    }
  };

  const save = () =>
    run('save', async () => {
      const yaml = editor.current!.text();
      const r = isNew ? await daemon.create(yaml) : await daemon.update(name, yaml);
      setState(r);
      setSaved(yaml);
      void polled.refresh();
      setNotice({ tone: 'ok', text: `saved: ${r.name} version ${r.version}` });
      if (isNew) navigate(href(['pipelines', r.name]));
    });

  const runNow = () =>
    run('run', async () => {
      const r = await daemon.run(name!);
      setNotice({
        tone: 'ok',
        text: `run ${r.status}`,
        link: r.run_id ? [href(['runs', r.run_id]), 'open the run'] : [href(['runs'], { pipeline: name }), 'see the runs'],
      });
    });

  const testConnectors = () =>
    run('test', async () => {
      setConnectors(undefined);
      setConnectors(await daemon.testConnectors(editor.current!.text()));
    });

  const errors = diagnostics?.filter((d) => d.severity === 'error') ?? [];
  const dirty = text !== undefined && text !== saved;
  const title = isNew ? 'New pipeline' : name;
  const stream = state?.schedule_type === 'stream';

  return (
    <section class="editor-page">
      <PageHeader
        title={
          <>
            {title} {current && <StatusBadge status={current.status} />}
          </>
        }
        subtitle={
          isNew
            ? 'Write the pipeline; it is checked by the server as you type. Ctrl-Space completes keys and plugin types.'
            : `Version ${state?.version ?? '…'}${state?.origin === 'file' ? ` · from ${state.file}` : ''}${dirty ? ' · unsaved changes' : ''}`
        }
      >
        <button
          type="button"
          onClick={testConnectors}
          disabled={!!busy || errors.length > 0}
          title="connect to the source and sinks once, without reading or writing"
        >
          Test connectors
        </button>
        <button type="button" class="primary" onClick={save} disabled={!!busy || !dirty || errors.length > 0}>
          {isNew ? 'Create' : 'Save'}
        </button>
        {!isNew && (
          <button
            type="button"
            onClick={runNow}
            disabled={!!busy || dirty || stream}
            title={stream ? 'a stream runs continuously' : dirty ? 'save first' : 'one immediate batch run'}
          >
            Run now
          </button>
        )}
        {!isNew && (
          <>
            <a class="button" href={href(['runs'], { pipeline: name })}>
              Runs
            </a>
            <a class="button" href={href(['versions', name])}>
              Versions
            </a>
            <a class="button" href={href(['alerts', name])}>
              Alerts
            </a>
            <a class="button" href={href(['pipelines', name, 'dlq'])}>
              Dead letters
            </a>
          </>
        )}
      </PageHeader>
      {notice && (
        <Notice tone={notice.tone} onClose={() => setNotice(undefined)}>
          {notice.text}
          {notice.link && (
            <>
              {' · '}
              <a href={notice.link[0]}>{notice.link[1]}</a>
            </>
          )}
        </Notice>
      )}
      {isNew && templates.length > 0 && (
        <label class="inline">
          Start from a template{' '}
          <select value={template ?? ''} onChange={(e) => navigate(href(['pipelines', '_new'], { template: e.currentTarget.value }))}>
            <option value="">(blank starter)</option>
            {templates.map((t) => (
              <option key={t.name} value={t.name} title={t.description}>
                {t.name}
              </option>
            ))}
          </select>
        </label>
      )}
      {!isNew && current?.config && <PipelineGraph name={name} config={current.config} live={current.live} status={current.status} />}
      {!isNew && (
        <nav class="tabs" aria-label="pipeline views">
          <a href={href(['pipelines', name])} class={tab === 'yaml' ? 'active' : ''} aria-current={tab === 'yaml' ? 'page' : undefined}>
            YAML
          </a>
          <a
            href={href(['pipelines', name], { tab: 'live', stage })}
            class={tab === 'live' ? 'active' : ''}
            aria-current={tab === 'live' ? 'page' : undefined}
            data-testid="tab-live"
          >
            Live records
          </a>
        </nav>
      )}
      {!isNew && tab === 'live' && current?.config && <PipelineTap name={name} config={current.config} stage={stage} />}
      <div class={tab === 'live' && !isNew ? 'editor-layout hidden' : 'editor-layout'}>
        <div class="editor-host" ref={host} data-testid="yaml-editor" />
        <aside class="editor-side">
          <h2>
            Problems{' '}
            <span class="muted small" data-testid="validation-state">
              {validating || diagnostics === undefined ? 'checking…' : errors.length ? `${errors.length} error${errors.length > 1 ? 's' : ''}` : 'valid'}
            </span>
          </h2>
          {diagnostics !== undefined && diagnostics.length === 0 && (
            <p class="ok">The server accepts this pipeline{pipelineName(text ?? '') ? ` (${pipelineName(text ?? '')})` : ''}.</p>
          )}
          <ul class="problems" data-testid="problems">
            {diagnostics?.map((d, i) => (
              <li key={i} class={d.severity}>
                <button type="button" class="link" onClick={() => d.line && editor.current?.goTo(d.line, d.column)} disabled={!d.line}>
                  {d.line ? `${d.line}:${d.column ?? 1}` : '–'}
                </button>{' '}
                <span>
                  {d.path && <code>{d.path}</code>} {d.message}
                </span>
              </li>
            ))}
          </ul>
          {connectors && (
            <>
              <h2>Connector test</h2>
              <ConnectorResults result={connectors} />
            </>
          )}
        </aside>
      </div>
    </section>
  );
}
