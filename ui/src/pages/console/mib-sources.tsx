// The stored MIB sources (one row per module of each file): status, the first problem of a failed
// one, download, and delete for uploaded files (bundled sources are read-only).
import { useState } from 'preact/hooks';
import { consoleApi, type MibSourceRow } from '../../api/console.js';
import { Notice } from '../../components/notice.js';
import { downloadText } from '../../lib/download.js';
import { fmtInt, fmtTime } from '../../lib/format.js';

const TONE = { active: 'ok', shadowed: 'warn', failed: 'bad' } as const;

export function MibSources({ rows, onChanged }: { rows: MibSourceRow[]; onChanged: () => void }) {
  const [showBundled, setShowBundled] = useState(false);
  const [notice, setNotice] = useState<{ tone: 'ok' | 'error'; text: string }>();
  const bundled = rows.filter((r) => r.bundled).length;
  const shown = showBundled ? rows : rows.filter((r) => !r.bundled);

  const download = async (r: MibSourceRow) => {
    try {
      downloadText(r.file, await consoleApi.mibDownload(r.path), 'text/plain;charset=utf-8');
    } catch (e) {
      setNotice({ tone: 'error', text: (e as Error).message });
    }
  };
  const remove = async (r: MibSourceRow) => {
    if (!confirm(`Delete ${r.path}? The modules it defines are unloaded.`)) return;
    try {
      await consoleApi.mibDelete(r.path);
      setNotice({ tone: 'ok', text: `${r.path} deleted` });
      onChanged();
    } catch (e) {
      setNotice({ tone: 'error', text: (e as Error).message });
    }
  };

  return (
    <div>
      {notice && (
        <Notice tone={notice.tone} onClose={() => setNotice(undefined)}>
          {notice.text}
        </Notice>
      )}
      {bundled > 0 && (
        <label class="inline">
          <input type="checkbox" checked={showBundled} onChange={(e) => setShowBundled(e.currentTarget.checked)} /> show the {fmtInt(bundled)} bundled sources
        </label>
      )}
      {shown.length === 0 ? (
        <p class="muted">No uploaded sources.</p>
      ) : (
        <table class="table compact" data-testid="mib-sources">
          <thead>
            <tr>
              <th>File</th>
              <th>Module</th>
              <th>Status</th>
              <th class="num">Size</th>
              <th>Modified</th>
              <th aria-label="actions" />
            </tr>
          </thead>
          <tbody>
            {shown.map((r) => {
              const first = r.errors?.[0];
              return (
                <tr key={`${r.path}:${r.module ?? ''}`} class={r.status === 'failed' ? 'bad-row' : ''}>
                  <td class="mono">{r.path}</td>
                  <td class="mono">{r.module ?? '–'}</td>
                  <td>
                    <span class={`badge badge-${TONE[r.status]}`}>{r.status}</span>
                    {r.shadowed_by && <div class="muted small">by {r.shadowed_by.path}</div>}
                    {r.missing && r.missing.length > 0 && <div class="bad small">missing {r.missing.join(', ')}</div>}
                    {first && (
                      <div class="bad small">
                        line {first.line}:{first.column} {first.message}
                      </div>
                    )}
                  </td>
                  <td class="num">{fmtInt(r.size_bytes)}</td>
                  <td>{fmtTime(r.modified)}</td>
                  <td class="row-actions">
                    <button type="button" onClick={() => download(r)}>
                      Download
                    </button>
                    {!r.bundled && (
                      <button type="button" class="danger" onClick={() => remove(r)}>
                        Delete
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </div>
  );
}
