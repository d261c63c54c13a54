// Alerts: the rules of every pipeline (or of one, #/alerts/<pipeline>), when each last fired and
// how its deliveries went (a failing rule stands out with its last error; History lists its last
// deliveries), and create, edit and delete. Rules are evaluated by the daemon after every batch run.
import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { daemon, type AlertDelivery, type AlertRule } from '../../api/daemon.js';
import { Notice } from '../../components/notice.js';
import { PageHeader } from '../../components/page-header.js';
import { fmtAgo, fmtTime } from '../../lib/format.js';
import { href, navigate } from '../../lib/router.js';
import { usePoll } from '../../lib/use-poll.js';
import { AlertForm, EMPTY_RULE } from './alert-form.js';
import { redactUrl } from '../../../../src/util/redact-url.js';

interface Row extends AlertRule {
  pipeline: string;
}

async function loadRules(only?: string): Promise<{ pipelines: string[]; rows: Row[] }> {
  const pipelines = (await daemon.pipelines()).map((p) => p.name).sort();
  const names = only ? [only] : pipelines;
  const lists = await Promise.all(names.map(async (p) => (await daemon.alerts(p)).map((r) => ({ ...r, pipeline: p }))));
  return { pipelines, rows: lists.flat() };
}

/** A webhook URL as the table shows it: without user and password, secret query values as `***` (the edit form keeps them). */
const shownUrl = (url: string | null | undefined): string => (url ? redactUrl(url) : '');

/** The last delivery of a rule: when, and whether it went through. */
function LastFired({ r }: { r: Row }) {
  if (!r.last_attempt) return <span class="muted">never</span>;
  const failing = r.delivery_status === 'failing';
  return (
    <div class="last-fired">
      <span title={fmtTime(r.last_attempt)}>{fmtAgo(r.last_attempt)}</span>{' '}
      {failing ? (
        <span class="badge badge-bad" data-testid="delivery-failing">
          failing{(r.consecutive_failures ?? 0) > 1 ? ` ×${r.consecutive_failures}` : ''}
        </span>
      ) : (
        <span class="badge badge-ok">delivered</span>
      )}
      {failing && (
        <>
          <div class="delivery-error" data-testid="delivery-error">
            {r.last_delivery_error}
          </div>
          <div class="muted small" title={fmtTime(r.last_fired)}>
            last delivered: {r.last_fired ? fmtAgo(r.last_fired) : 'never'}
          </div>
        </>
      )}
    </div>
  );
}

function DeliveryHistory({ deliveries }: { deliveries: AlertDelivery[] }) {
  if (deliveries.length === 0) return <p class="muted">No deliveries yet: the rule has not fired.</p>;
  return (
    <table class="table compact" data-testid="delivery-history">
      <thead>
        <tr>
          <th>Time</th>
          <th>Outcome</th>
          <th class="num">Attempt</th>
          <th>Target</th>
          <th>Run</th>
          <th>Detail</th>
        </tr>
      </thead>
      <tbody>
        {deliveries.map((d, i) => (
          <tr key={`${d.at}/${i}`}>
            <td title={d.at}>{fmtTime(d.at)}</td>
            <td>
              <span class={`badge ${d.outcome === 'delivered' ? 'badge-ok' : 'badge-bad'}`}>{d.outcome}</span>
            </td>
            <td class="num">{d.attempt}</td>
            <td>
              {d.channel}: <span class="mono">{d.target}</span>
            </td>
            <td>
              {d.run_id ? (
                <a href={href(['runs', d.run_id])} class="mono">
                  {d.run_id.slice(0, 8)}
                </a>
              ) : (
                '–'
              )}
            </td>
            <td class={d.outcome === 'failed' ? 'delivery-error' : undefined}>{d.error ?? d.detail ?? ''}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function AlertsPage({ pipeline }: { pipeline?: string }) {
  const { data, error, refresh } = usePoll(() => loadRules(pipeline), 15_000, [pipeline ?? '']);
  const [editing, setEditing] = useState<{ pipeline: string; rule: AlertRule }>();
  const [notice, setNotice] = useState<{ tone: 'ok' | 'error'; text: string }>();
  const [history, setHistory] = useState<string>();
  const failing = (data?.rows ?? []).filter((r) => r.delivery_status === 'failing');

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
      {failing.length > 0 && (
        <p class="alerts-failing" data-testid="alerts-failing">
          {failing.length === 1
            ? `1 rule is failing to deliver: ${failing[0]!.pipeline}/${failing[0]!.name}`
            : `${failing.length} rules are failing to deliver`}
        </p>
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
            {(data?.rows ?? []).map((r) => {
              const key = `${r.pipeline}/${r.name}`;
              const failed = r.delivery_status === 'failing';
              return (
                <Fragment key={key}>
                  <tr data-rule={r.name} data-delivery={r.delivery_status ?? 'never'} class={failed ? 'row-failing' : undefined}>
                    <td>
                      <a href={href(['pipelines', r.pipeline])}>{r.pipeline}</a>
                    </td>
                    <td>{r.name}</td>
                    <td>
                      <code>{r.condition}</code>
                    </td>
                    <td>
                      {r.action}: <span class="mono">{r.action === 'webhook' ? shownUrl(r.webhook_url) : r.email_to}</span>
                    </td>
                    <td class="num">{r.cooldown_seconds} s</td>
                    <td>
                      <LastFired r={r} />
                    </td>
                    <td class="row-actions">
                      <button type="button" aria-expanded={history === key} onClick={() => setHistory(history === key ? undefined : key)}>
                        History
                      </button>
                      <button type="button" onClick={() => setEditing({ pipeline: r.pipeline, rule: r })}>
                        Edit
                      </button>
                      <button type="button" class="danger" onClick={() => remove(r)}>
                        Delete
                      </button>
                    </td>
                  </tr>
                  {history === key && (
                    <tr class="history-row">
                      <td colSpan={7}>
                        <DeliveryHistory deliveries={r.last_deliveries ?? []} />
                      </td>
                    </tr>
                  )}
                </Fragment>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}
