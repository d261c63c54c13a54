// Replaying dead letters: the edits applied first (`set` rows of field and expression, and/or an
// RFC 6902 JSON Patch), force, and the two selections (the ticked rows, or all that match the
// filters). The server checks the edits (422 {detail}) and answers when the replay run is over.
import { useState } from 'preact/hooks';
import { dlqApi, type DlqFilter, type ReplayAnswer, type ReplayRequest } from '../../api/dlq.js';
import { Notice } from '../../components/notice.js';
import { fmtInt } from '../../lib/format.js';
import { href } from '../../lib/router.js';
import { editsOf, type SetRow } from './replay-edits.js';

const plural = (n: number, one: string) => `${fmtInt(n)} ${one}${n === 1 ? '' : 's'}`;

function ReplayResult({ r }: { r: ReplayAnswer }) {
  const tone = r.failed.length > 0 || (r.status !== null && r.status !== 'success') ? 'error' : r.run_id === null ? 'info' : 'ok';
  return (
    <div data-testid="replay-result">
      <Notice tone={tone}>
        {r.run_id === null ? (
          'Nothing was replayed'
        ) : (
          <>
            Replay run{' '}
            <a href={href(['runs', r.run_id])} class="mono" data-testid="replay-run">
              {r.run_id.slice(0, 8)}
            </a>{' '}
            {r.status}
          </>
        )}
        {`: ${fmtInt(r.selected)} selected, ${fmtInt(r.replayed.length)} replayed, ${fmtInt(r.failed.length)} failed`}
        {r.already_replayed.length > 0 && `, ${fmtInt(r.already_replayed.length)} replayed already (tick "Replay again" to force)`}
        {r.unknown_ids.length > 0 && `, ${plural(r.unknown_ids.length, 'id')} no longer in the DLQ`}
        {r.run_id !== null && ` · records in ${fmtInt(r.records_in)}, out ${fmtInt(r.records_out)}, skipped ${fmtInt(r.records_skipped)}`}
      </Notice>
      {r.failed.length > 0 && (
        <ol class="messages" data-testid="replay-failed">
          {r.failed.map((f) => (
            <li key={f.id}>
              <span class="mono">{f.id.slice(0, 12)}</span> {f.error}
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}

export function ReplayPanel({
  name,
  selected,
  matching,
  filter,
  hideReplayed,
  onReplayed,
}: {
  name: string;
  /** Ids of the ticked rows. */
  selected: string[];
  /** Envelopes that match the filters (X-Total-Count). */
  matching: number;
  filter: DlqFilter;
  /** The listing hides replayed ones: "all matching" then means the unreplayed ones, never forced. */
  hideReplayed: boolean;
  onReplayed: () => void;
}) {
  const [rows, setRows] = useState<SetRow[]>([{ field: '', expr: '' }]);
  const [patchText, setPatchText] = useState('');
  const [force, setForce] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [result, setResult] = useState<ReplayAnswer>();

  const replay = async (which: 'selected' | 'matching') => {
    setError(undefined);
    setResult(undefined);
    const edits = editsOf(rows, patchText);
    if (typeof edits === 'string') return setError(edits);
    if (which === 'matching' && !confirm(`Replay all ${plural(matching, 'dead letter')} that match the filters?`)) return;
    const body: ReplayRequest = which === 'selected' ? { ids: selected, force, ...edits } : { ...filter, force: force && !hideReplayed, ...edits };
    setBusy(true);
    try {
      setResult(await dlqApi.replay(name, body));
      onReplayed();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const setRow = (i: number, change: Partial<SetRow>) => setRows(rows.map((r, j) => (j === i ? { ...r, ...change } : r)));
  const fields = rows.filter((r) => r.field.trim() !== '').length;
  const editing = [fields && plural(fields, 'field'), patchText.trim() && 'a JSON patch'].filter(Boolean).join(' and ');
  return (
    <div class="card dlq-replay" aria-label="replay" role="form">
      <div class="form-actions dlq-replay-actions">
        <button type="button" class="primary" disabled={busy || selected.length === 0} onClick={() => replay('selected')}>
          Replay selected ({fmtInt(selected.length)})
        </button>
        <button type="button" disabled={busy || matching === 0} onClick={() => replay('matching')}>
          Replay all matching ({fmtInt(matching)})
        </button>
        <label class="inline">
          <input type="checkbox" name="force" checked={force} onChange={(e) => setForce(e.currentTarget.checked)} /> Replay again the ones marked replayed
        </label>
        {busy && <span class="muted">Replaying… the answer comes when the replay run is over.</span>}
      </div>
      <details class="dlq-edit-details">
        <summary>
          Edit the records before replay <span class="muted">{editing ? `(${editing})` : '(none)'}</span>
        </summary>
        <div class="dlq-edits">
          <div>
            <p class="hint">
              Set fields: each expression is evaluated against the record (its fields by name, <code>record</code> for all of it) and its value replaces the
              field.
            </p>
            <table class="table compact" data-testid="set-rows">
              <thead>
                <tr>
                  <th>Field</th>
                  <th>Expression</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {rows.map((r, i) => (
                  <tr key={i}>
                    <td>
                      <input
                        name="set-field"
                        class="wide-input"
                        value={r.field}
                        placeholder="octets"
                        aria-label={`field ${i + 1}`}
                        onInput={(e) => setRow(i, { field: e.currentTarget.value })}
                      />
                    </td>
                    <td>
                      <input
                        name="set-expr"
                        class="wide-input mono"
                        value={r.expr}
                        placeholder="int(octets)"
                        aria-label={`expression ${i + 1}`}
                        onInput={(e) => setRow(i, { expr: e.currentTarget.value })}
                      />
                    </td>
                    <td class="row-actions">
                      <button
                        type="button"
                        class="link"
                        aria-label={`remove row ${i + 1}`}
                        onClick={() => setRows(rows.length > 1 ? rows.filter((_, j) => j !== i) : [{ field: '', expr: '' }])}
                      >
                        ×
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <button type="button" class="dlq-add" onClick={() => setRows([...rows, { field: '', expr: '' }])}>
              Add field
            </button>
          </div>
          <label>
            JSON Patch (RFC 6902), applied before the fields
            <textarea
              name="patch"
              class="mono"
              rows={5}
              spellcheck={false}
              placeholder='[{"op": "replace", "path": "/host", "value": "core-1"}]'
              value={patchText}
              onInput={(e) => setPatchText(e.currentTarget.value)}
            />
          </label>
        </div>
      </details>
      {error && (
        <Notice tone="error" onClose={() => setError(undefined)}>
          {error}
        </Notice>
      )}
      {result && <ReplayResult r={result} />}
    </div>
  );
}
