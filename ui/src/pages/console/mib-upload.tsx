// MIB upload: files into a source group, compiled at once; the answer per file: what compiled,
// and for what failed every diagnostic at its line and column and the imports that are missing.
import { useState } from 'preact/hooks';
import { consoleApi, type MibChange } from '../../api/console.js';
import { Notice } from '../../components/notice.js';

export function MibUpload({ onChanged }: { onChanged: () => void }) {
  const [group, setGroup] = useState('common');
  const [mode, setMode] = useState<'full' | 'partial'>('full');
  const [result, setResult] = useState<MibChange>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    const input = (e.currentTarget as HTMLFormElement).querySelector<HTMLInputElement>('input[type="file"]')!;
    if (!input.files?.length) return setError('choose one or more MIB files (.mib, .txt, .my)');
    const form = new FormData();
    for (const f of input.files) form.append('files[]', f, f.name);
    form.append('source_group', group.trim() || 'common');
    form.append('compile_mode', mode);
    setBusy(true);
    setError(undefined);
    setResult(undefined);
    try {
      setResult(await consoleApi.uploadMibs(form));
      input.value = '';
      onChanged();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const results = Object.entries(result?.results ?? {});
  return (
    <form class="card" onSubmit={submit} aria-label="upload MIBs">
      <div class="form-grid">
        <label class="wide">
          MIB files
          <input type="file" name="files" multiple accept=".mib,.txt,.my,text/plain" />
        </label>
        <label>
          Source group
          <input name="source_group" value={group} onInput={(e) => setGroup(e.currentTarget.value)} />
        </label>
        <label>
          Compile mode
          <select name="compile_mode" value={mode} onChange={(e) => setMode(e.currentTarget.value as 'full' | 'partial')}>
            <option value="full">full: a module with any error fails</option>
            <option value="partial">partial: keep what resolves</option>
          </select>
        </label>
        <div class="form-actions wide">
          <button type="submit" class="primary" disabled={busy}>
            {busy ? 'Uploading…' : 'Upload and compile'}
          </button>
        </div>
      </div>
      {error && <Notice tone="error">{error}</Notice>}
      {result && (
        <div data-testid="upload-result">
          <h3>Upload result</h3>
          {results.length === 0 && <p class="muted">No module found in {result.files.join(', ')}.</p>}
          <ul class="upload-results">
            {results.map(([module, text]) => (
              <li key={module} class={text === 'compiled' ? 'ok' : text.startsWith('failed') ? 'bad' : 'muted'}>
                <span class="mono">{module}</span>: {text.startsWith('failed') ? 'failed' : text}
              </li>
            ))}
          </ul>
          {result.failed.map((f) => (
            <div class="diagnostics" key={`${f.path}:${f.module ?? ''}`} data-testid="mib-diagnostics">
              <div>
                <strong class="mono">{f.module ?? '(no module header)'}</strong> <span class="muted mono">{f.path}</span>
              </div>
              {f.missing.length > 0 && (
                <div class="bad">
                  Missing imports: <span class="mono">{f.missing.join(', ')}</span> (upload them too, or fetch them)
                </div>
              )}
              {f.failedImports.length > 0 && (
                <div class="bad">
                  Imports that failed themselves: <span class="mono">{f.failedImports.join(', ')}</span>
                </div>
              )}
              <ul>
                {f.errors.map((d, i) => (
                  <li key={i} class={d.severity === 'error' ? 'bad' : 'warn-text'}>
                    <span class="mono">
                      {d.file}:{d.line}:{d.column}
                    </span>{' '}
                    {d.severity}: {d.message}
                    {d.token !== undefined && (
                      <>
                        {' '}
                        (at <code>{d.token}</code>)
                      </>
                    )}
                  </li>
                ))}
              </ul>
            </div>
          ))}
        </div>
      )}
    </form>
  );
}
