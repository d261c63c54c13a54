// Versions of a pipeline: the list (newest first, the active one marked), a side-by-side diff of any
// two, and rollback to any older one. Without a pipeline in the route: pick one.
import { useEffect, useRef, useState } from 'preact/hooks';
import { daemon, type PipelineVersion } from '../../api/daemon.js';
import type { YamlDiff } from '../../editor/yaml-diff.js';
import { Notice } from '../../components/notice.js';
import { PageHeader } from '../../components/page-header.js';
import { cspNonce } from '../../lib/csp.js';
import { fmtTime } from '../../lib/format.js';
import { href, navigate } from '../../lib/router.js';
import { usePoll } from '../../lib/use-poll.js';

function PipelinePicker() {
  const { data, error } = usePoll(() => daemon.pipelines(), 0);
  return (
    <section>
      <PageHeader title="Versions" subtitle="Every save of a pipeline is a version. Pick a pipeline to compare its versions or roll back." />
      {error && <Notice tone="error">{error}</Notice>}
      <ul class="link-list">
        {(data ?? []).map((p) => (
          <li key={p.name}>
            <a href={href(['versions', p.name])}>{p.name}</a>
          </li>
        ))}
      </ul>
      {data && data.length === 0 && <p class="muted">No pipelines yet.</p>}
    </section>
  );
}

/** Default comparison: the version before the active one against the active one. */
function defaults(versions: PipelineVersion[]): [number, number] | undefined {
  if (versions.length < 2) return undefined;
  const active = versions.find((v) => v.is_active)?.version ?? versions[0]!.version;
  const older = versions.find((v) => v.version < active)?.version ?? versions.find((v) => v.version !== active)!.version;
  return [Math.min(older, active), Math.max(older, active)];
}

function Diff({ name, a, b }: { name: string; a: number; b: number }) {
  const host = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<string>();
  useEffect(() => {
    let diff: YamlDiff | undefined;
    let cancelled = false;
    Promise.all([daemon.version(name, a), daemon.version(name, b), import('../../editor/yaml-diff.js')])
      .then(([va, vb, mod]) => {
        if (cancelled || !host.current) return;
        host.current.replaceChildren();
        diff = mod.createYamlDiff(host.current, { a: va.yaml, b: vb.yaml, nonce: cspNonce() });
      })
      .catch((e: Error) => !cancelled && setError(e.message));
    return () => {
      cancelled = true;
      diff?.destroy();
    };
  }, [name, a, b]);
  return (
    <>
      {error && <Notice tone="error">{error}</Notice>}
      <div class="diff-host" ref={host} data-testid="version-diff" />
    </>
  );
}

function PipelineVersions({ name, query }: { name: string; query: URLSearchParams }) {
  const { data: versions, error, refresh } = usePoll(() => daemon.versions(name), 0, [name]);
  const [notice, setNotice] = useState<{ tone: 'ok' | 'error'; text: string }>();
  const pair = versions && defaults(versions);
  const a = Number(query.get('a')) || pair?.[0];
  const b = Number(query.get('b')) || pair?.[1];
  const choose = (side: 'a' | 'b', v: number) => navigate(href(['versions', name], { a: String(side === 'a' ? v : a), b: String(side === 'b' ? v : b) }));

  const rollback = async (version: number) => {
    if (!confirm(`Roll '${name}' back to version ${version}? It is stopped, reloaded with that version, and restarted unless it was stopped.`)) return;
    try {
      const r = await daemon.rollback(name, version);
      setNotice({ tone: 'ok', text: `rolled back to version ${r.rolled_back_to_version}` });
    } catch (e) {
      setNotice({ tone: 'error', text: (e as Error).message });
    }
    await refresh();
  };

  return (
    <section>
      <PageHeader title={`Versions of ${name}`} subtitle="Newest first. Compare any two; roll back to any one.">
        <a class="button" href={href(['pipelines', name])}>
          Open pipeline
        </a>
      </PageHeader>
      {(error || notice) && <Notice tone={notice?.tone ?? 'error'}>{notice?.text ?? error}</Notice>}
      {versions && (
        <table class="table" data-testid="versions-table">
          <thead>
            <tr>
              <th>Version</th>
              <th>Saved</th>
              <th>State</th>
              <th>Compare</th>
              <th aria-label="actions" />
            </tr>
          </thead>
          <tbody>
            {versions.map((v) => (
              <tr key={v.version} data-version={v.version}>
                <td>version {v.version}</td>
                <td>{fmtTime(v.created_at)}</td>
                <td>{v.is_active ? <span class="badge badge-ok">active</span> : ''}</td>
                <td class="compare">
                  <label class="inline">
                    <input type="radio" name="side-a" checked={a === v.version} onChange={() => choose('a', v.version)} /> A
                  </label>
                  <label class="inline">
                    <input type="radio" name="side-b" checked={b === v.version} onChange={() => choose('b', v.version)} /> B
                  </label>
                </td>
                <td class="row-actions">
                  <button type="button" disabled={!!v.is_active} onClick={() => rollback(v.version)}>
                    Roll back to this
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {versions && versions.length < 2 && <p class="muted">Only one version so far: save a change to have something to compare.</p>}
      {a && b && (
        <>
          <h2>
            Version {a} (A) ↔ version {b} (B)
          </h2>
          <Diff name={name} a={a} b={b} />
        </>
      )}
    </section>
  );
}

export function VersionsPage({ name, query }: { name?: string; query: URLSearchParams }) {
  return name ? <PipelineVersions name={name} query={query} /> : <PipelinePicker />;
}
