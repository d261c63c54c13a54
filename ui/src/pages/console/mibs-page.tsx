// The MIB catalog: upload with per-file diagnostics; the loaded modules as trees and a search;
// the selected node's detail (breadcrumb, "walk from here"); the stored sources with download and
// delete; export. The selection lives in the hash (#/mibs?module=IF-MIB&node=1.3.6.1.2.1.2.2), so a
// link to a node can be shared.
import { useEffect, useState } from 'preact/hooks';
import { consoleApi, type MibModule, type MibSearchHit, type MibStatus, type MibTreeNode } from '../../api/console.js';
import { Notice } from '../../components/notice.js';
import { PageHeader } from '../../components/page-header.js';
import { onConsoleMessage } from '../../lib/console-socket.js';
import { downloadText } from '../../lib/download.js';
import { fmtTime } from '../../lib/format.js';
import { href, navigate } from '../../lib/router.js';
import { MibNode } from './mib-node.js';
import { MibSources } from './mib-sources.js';
import { MibUpload } from './mib-upload.js';

const EXPORT_TYPES = ['catalog', 'summary', 'modules', 'objects', 'notifications'];

export function MibsPage({ query }: { query: URLSearchParams }) {
  const module = query.get('module') ?? undefined;
  const node = query.get('node') ?? undefined;
  const q = query.get('q') ?? '';
  const [status, setStatus] = useState<MibStatus>();
  const [modules, setModules] = useState<MibModule[]>();
  const [error, setError] = useState<string>();
  const [version, setVersion] = useState(0);
  const reload = () => setVersion((v) => v + 1);

  useEffect(() => {
    Promise.all([consoleApi.mibStatus(), consoleApi.mibModules()])
      .then(([st, m]) => {
        setStatus(st);
        setModules(m.modules);
      })
      .catch((e: Error) => setError(e.message));
  }, [version]);
  // Another tab or the daemon changed the store: the `mibs` message says so.
  useEffect(() => onConsoleMessage((m) => m.type === 'mibs' && reload()), []);

  const link = (patch: Record<string, string | undefined>) => href(['mibs'], { module, node, q: q || undefined, ...patch });
  const nodeLink = (oid: string) => link({ node: oid });

  return (
    <section>
      <PageHeader
        title="MIB catalog"
        subtitle={status ? `${status.mibs.length} active modules, ${status.errors.length} failed; compiled ${fmtTime(status.compiled_at)}.` : 'Loading…'}
      >
        <MibExport module={module} />
      </PageHeader>
      {error && <Notice tone="error">{error}</Notice>}
      <h2>Upload</h2>
      <MibUpload onChanged={reload} />
      <h2>Browse</h2>
      <div class="mib-browser">
        <div class="mib-nav">
          <form
            role="search"
            aria-label="search MIB nodes"
            onSubmit={(e) => {
              e.preventDefault();
              const v = (e.currentTarget.elements.namedItem('q') as HTMLInputElement).value.trim();
              navigate(link({ q: v || undefined }));
            }}
          >
            <input type="search" name="q" class="wide-input" placeholder="Search names, descriptions, OIDs" value={q} key={q} />
          </form>
          {q ? (
            <SearchResults q={q} nodeLink={nodeLink} selected={node} clear={link({ q: undefined })} version={version} />
          ) : module ? (
            <ModuleTree module={module} nodeLink={nodeLink} selected={node} back={link({ module: undefined })} version={version} />
          ) : (
            <ul class="plain-list mib-modules" data-testid="mib-modules">
              {(modules ?? []).map((m) => (
                <li key={m.module}>
                  <a class="mono" href={link({ module: m.module })}>
                    {m.module}
                  </a>{' '}
                  <span class="muted small">{m.source_group ?? 'built in'}</span>
                </li>
              ))}
              {modules?.length === 0 && <li class="muted">No modules loaded.</li>}
            </ul>
          )}
        </div>
        <div class="mib-detail">
          {node ? <MibNode oid={node} link={nodeLink} /> : <p class="muted">Choose a module, or search, then a node to see its detail.</p>}
        </div>
      </div>
      <h2>Sources</h2>
      {status && <MibSources rows={status.source_inventory} onChanged={reload} />}
    </section>
  );
}

function SearchResults({
  q,
  nodeLink,
  selected,
  clear,
  version,
}: {
  q: string;
  nodeLink: (oid: string) => string;
  selected?: string;
  clear: string;
  version: number;
}) {
  const [hits, setHits] = useState<MibSearchHit[]>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    setHits(undefined);
    setError(undefined);
    consoleApi
      .mibSearch(q)
      .then((r) => setHits(r.results))
      .catch((e: Error) => setError(e.message));
  }, [q, version]);
  return (
    <div data-testid="mib-search-results">
      <p class="muted small">
        {hits ? `${hits.length}${hits.length === 100 ? '+' : ''} ${hits.length === 1 ? 'match' : 'matches'} for “${q}”` : 'Searching…'} ·{' '}
        <a href={clear}>clear</a>
      </p>
      {error && <Notice tone="error">{error}</Notice>}
      <ul class="plain-list">
        {(hits ?? []).map((h) => (
          <li key={`${h.module}::${h.name}`} class={selected === h.oid ? 'selected' : ''}>
            <a class="mono" href={nodeLink(h.oid)}>
              {h.module}::{h.name}
            </a>
            <div class="muted small">
              {h.oid} · {h.kind}
              {h.type ? ` · ${h.type}` : ''}
              {h.match === 'description' ? ' · in description' : ''}
            </div>
          </li>
        ))}
      </ul>
    </div>
  );
}

function ModuleTree({
  module,
  nodeLink,
  selected,
  back,
  version,
}: {
  module: string;
  nodeLink: (oid: string) => string;
  selected?: string;
  back: string;
  version: number;
}) {
  const [tree, setTree] = useState<MibTreeNode[]>();
  const [error, setError] = useState<string>();
  const [open, setOpen] = useState<Set<string>>(new Set());
  useEffect(() => {
    setTree(undefined);
    setError(undefined);
    consoleApi
      .mibModuleTree(module)
      .then((r) => {
        setTree(r.tree);
        // The first two levels open.
        setOpen(new Set(r.tree.flatMap((n) => [n.oid, ...(n.children ?? []).map((c) => c.oid)])));
      })
      .catch((e: Error) => setError(e.message));
  }, [module, version]);
  const toggle = (oid: string) => {
    const next = new Set(open);
    if (!next.delete(oid)) next.add(oid);
    setOpen(next);
  };
  const render = (n: MibTreeNode) => {
    const kids = n.children ?? [];
    const isOpen = open.has(n.oid);
    return (
      <li key={n.oid}>
        <div class={`tree-row${selected === n.oid ? ' selected' : ''}`}>
          {kids.length > 0 ? (
            <button
              type="button"
              class="tree-toggle"
              aria-expanded={isOpen}
              aria-label={`${isOpen ? 'collapse' : 'expand'} ${n.name ?? n.oid}`}
              onClick={() => toggle(n.oid)}
            >
              {isOpen ? '▾' : '▸'}
            </button>
          ) : (
            <span class="tree-toggle" />
          )}
          <a class="mono" href={nodeLink(n.oid)}>
            {n.name ?? n.oid.split('.').pop()}
          </a>
          {n.kind && <span class="muted small"> {n.kind}</span>}
        </div>
        {isOpen && kids.length > 0 && <ul class="tree">{kids.map(render)}</ul>}
      </li>
    );
  };
  return (
    <div data-testid="mib-tree">
      <p class="muted small">
        <a href={back}>All modules</a> › <span class="mono">{module}</span>
      </p>
      {error && <Notice tone="error">{error}</Notice>}
      {!tree && !error && <p class="muted">Loading…</p>}
      {tree && <ul class="tree root">{tree.map(render)}</ul>}
    </div>
  );
}

function MibExport({ module }: { module?: string }) {
  const [format, setFormat] = useState<'json' | 'csv'>('csv');
  const [type, setType] = useState('objects');
  const [error, setError] = useState<string>();
  const run = async () => {
    setError(undefined);
    try {
      const modules = module ? [module] : [];
      const r = await consoleApi.mibExport(format, type, modules);
      const base = `mib-${type}${module ? `-${module}` : ''}`;
      if (format === 'csv') downloadText(`${base}.csv`, r as string);
      else
        downloadText(
          ((r as { metadata?: { filename?: string } }).metadata?.filename ?? `${base}.json`).replace(/\.csv$/, '.json'),
          JSON.stringify(r, null, 2),
          'application/json',
        );
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <div class="export-controls" role="group" aria-label="export">
      <select aria-label="export type" value={type} onChange={(e) => setType(e.currentTarget.value)}>
        {EXPORT_TYPES.map((t) => (
          <option key={t} value={t}>
            {t}
          </option>
        ))}
      </select>
      <select aria-label="export format" value={format} onChange={(e) => setFormat(e.currentTarget.value as 'json' | 'csv')}>
        <option value="csv">CSV</option>
        <option value="json">JSON</option>
      </select>
      <button type="button" onClick={run} title={module ? `export ${module}` : 'export every active module'}>
        Export{module ? ` ${module}` : ''}
      </button>
      {error && <span class="bad small">{error}</span>}
    </div>
  );
}
