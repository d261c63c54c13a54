// Create or edit one alert rule. The server checks the condition and the fields (422 {detail});
// the form only shapes the body.
import { useState } from 'preact/hooks';
import type { AlertRule } from '../../api/daemon.js';

export const CONDITION_HELP =
  'An expression over records_in, records_out, records_skipped, error_rate, status, failed, duration_seconds, e.g. failed or error_rate > 0.05';

export const EMPTY_RULE: AlertRule = { name: '', condition: '', action: 'webhook', webhook_url: '', email_to: '', subject: '', cooldown_seconds: 300 };

/** The body the API takes: only the fields of the chosen action, no last_fired. */
export function ruleBody(r: AlertRule): AlertRule {
  const base = { name: r.name.trim(), condition: r.condition.trim(), action: r.action, cooldown_seconds: Number(r.cooldown_seconds) || 0 };
  return r.action === 'webhook'
    ? { ...base, webhook_url: r.webhook_url?.trim() ?? '' }
    : { ...base, email_to: r.email_to?.trim() ?? '', subject: r.subject?.trim() || null };
}

export function AlertForm({
  initial,
  pipelines,
  pipeline,
  onSave,
  onCancel,
}: {
  initial: AlertRule;
  pipelines: string[];
  pipeline: string;
  onSave(pipeline: string, rule: AlertRule): Promise<void>;
  onCancel(): void;
}) {
  const [rule, setRule] = useState<AlertRule>(initial);
  const [target, setTarget] = useState(pipeline);
  const [busy, setBusy] = useState(false);
  const set = (patch: Partial<AlertRule>) => setRule({ ...rule, ...patch });
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      await onSave(target, ruleBody(rule));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card form-grid" onSubmit={submit} aria-label="alert rule">
      <label>
        Pipeline
        <select name="pipeline" value={target} onChange={(e) => setTarget(e.currentTarget.value)} disabled={!!initial.name} required>
          <option value="">choose…</option>
          {pipelines.map((p) => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
      </label>
      <label>
        Rule name
        <input name="name" value={rule.name} onInput={(e) => set({ name: e.currentTarget.value })} required />
      </label>
      <label class="wide">
        Condition
        <input name="condition" value={rule.condition} placeholder="failed" onInput={(e) => set({ condition: e.currentTarget.value })} required />
        <span class="hint">{CONDITION_HELP}</span>
      </label>
      <label>
        Action
        <select name="action" value={rule.action} onChange={(e) => set({ action: e.currentTarget.value as AlertRule['action'] })}>
          <option value="webhook">webhook</option>
          <option value="email">email</option>
        </select>
      </label>
      {rule.action === 'webhook' ? (
        <label class="wide">
          Webhook URL
          <input
            name="webhook_url"
            type="url"
            value={rule.webhook_url ?? ''}
            placeholder="https://hooks.example/svc"
            onInput={(e) => set({ webhook_url: e.currentTarget.value })}
            required
          />
        </label>
      ) : (
        <>
          <label>
            Email to
            <input
              name="email_to"
              value={rule.email_to ?? ''}
              placeholder="noc@example.com"
              onInput={(e) => set({ email_to: e.currentTarget.value })}
              required
            />
          </label>
          <label>
            Subject
            <input name="subject" value={rule.subject ?? ''} onInput={(e) => set({ subject: e.currentTarget.value })} />
          </label>
        </>
      )}
      <label>
        Cooldown (seconds)
        <input
          name="cooldown_seconds"
          type="number"
          min="0"
          value={rule.cooldown_seconds}
          onInput={(e) => set({ cooldown_seconds: Number(e.currentTarget.value) })}
        />
      </label>
      <div class="form-actions wide">
        <button type="submit" class="primary" disabled={busy || !target}>
          {initial.name ? 'Save rule' : 'Add rule'}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
