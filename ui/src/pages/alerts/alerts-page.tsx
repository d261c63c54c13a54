// Alerts: the rules of every pipeline (or of one, #/alerts/<pipeline>), when each last fired, and
// create, edit and delete. Rules are evaluated by the daemon after every batch run.
import { useState } from 'preact/hooks';
import { daemon, type AlertRule } from '../../api/daemon.js';
import { Notice } from '../../components/notice.js';
import { PageHeader } from '../../components/page-header.js';
import { fmtAgo, fmtTime } from '../../lib/format.js';
import { href, navigate } from '../../lib/router.js';
import { usePoll } from '../../lib/use-poll.js';
import { AlertForm, EMPTY_RULE } from './alert-form.js';

interface Row extends AlertRule {
  pipeline: string;
}

async function loadRules(only?: string): Promise<{ pipelines: string[]; rows: Row[] }> {
  const pipelines = (await daemon.pipelines()).map((p) => p.name).sort();
  const names = only ? [only] : pipelines;
  const lists = await Promise.all(names.map(async (p) => (await daemon.alerts(p)).map((r) => ({ ...r, pipeline: p }))));
  return { pipelines, rows: lists.flat() };
}

export function AlertsPage({ pipeline }: { pipeline?: string }) {
  const { data, error, refresh } = usePoll(() => loadRules(pipeline), 15_000, [pipeline ?? '']);
  const [editing, setEditing] = useState<{ pipeline: string; rule: AlertRule }>();
  const [notice, setNotice] = useState<{ tone: 'ok' | 'error'; text: string }>();

  const save = async (target: string, rule: AlertRule) => {
    setNotice(undefined);
    try {
      if (editing?.rule.name) await daemon.updateAlert(target, editing.rule.name, rule);
      else await daemon.addAlert(target, rule);
      setNotice({ tone: 'ok', text: `${target}: rule '${rule.name}' saved` });
      setEditing(undefined);
      await refresh();
    } catch (e) {
      setNotice({ tone: 'error', text: (e as Error).message });
    }
  };

  const remove = async (r: Row) => {
    if (!confirm(`Delete alert rule '${r.name}' of ${r.pipeline}?`)) return;
    try {
      await daemon.removeAlert(r.pipeline, r.name);
      setNotice({ tone: 'ok', text: `${r.pipeline}: rule '${r.name}' deleted` });
    } catch (e) {
      setNotice({ tone: 'error', text: (e as Error).message });
    }
    await refresh();
  };

  return (
    <section>
      <PageHeader title="Alerts" subtitle="Rules are checked after every batch run; a rule fires its webhook or email unless it is cooling down.">
        <select
          aria-label="pipeline"
          value={pipeline ?? ''}
          onChange={(e) => navigate(e.currentTarget.value ? href(['alerts', e.currentTarget.value]) : href(['alerts']))}
        >
          <option value="">all pipelines</option>
          {(data?.pipelines ?? []).map((p) => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
        <button type="button" class="primary" onClick={() => setEditing({ pipeline: pipeline ?? '', rule: EMPTY_RULE })} disabled={!data?.pipelines.length}>
          New rule
        </button>
      </PageHeader>
      {(error || notice) && (
        <Notice tone={notice?.tone ?? 'error'} onClose={notice ? () => setNotice(undefined) : undefined}>
          {notice?.text ?? error}
        </Notice>
      )}
      {editing && (
        <AlertForm
          key={`${editing.pipeline}/${editing.rule.name}`}
          initial={editing.rule}
          pipeline={editing.pipeline}
          pipelines={data?.pipelines ?? []}
          onSave={save}
          onCancel={() => setEditing(undefined)}
        />
      )}
      {data && data.rows.length === 0 ? (
        <div class="empty">
          <p>No alert rules{pipeline ? ` for ${pipeline}` : ''} yet.</p>
        </div>
      ) : (
        <table class="table" data-testid="alerts-table">
          <thead>
            <tr>
              <th>Pipeline</th>
              <th>Rule</th>
              <th>Condition</th>
              <th>Action</th>
              <th class="num">Cooldown</th>
              <th>Last fired</th>
              <th aria-label="actions" />
            </tr>
          </thead>
          <tbody>
            {(data?.rows ?? []).map((r) => (
              <tr key={`${r.pipeline}/${r.name}`} data-rule={r.name}>
                <td>
                  <a href={href(['pipelines', r.pipeline])}>{r.pipeline}</a>
                </td>
                <td>{r.name}</td>
                <td>
                  <code>{r.condition}</code>
                </td>
                <td>
                  {r.action}: <span class="mono">{r.action === 'webhook' ? r.webhook_url : r.email_to}</span>
                </td>
                <td class="num">{r.cooldown_seconds} s</td>
                <td title={fmtTime(r.last_fired)}>{r.last_fired ? fmtAgo(r.last_fired) : <span class="muted">never</span>}</td>
                <td class="row-actions">
                  <button type="button" onClick={() => setEditing({ pipeline: r.pipeline, rule: r })}>
                    Edit
                  </button>
                  <button type="button" class="danger" onClick={() => remove(r)}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
