// What an alert says: the JSON body of the webhook POST and the subject and plain-text body of the
// alert mail. Both carry the same facts (rule, pipeline, condition, variables, run).
// Examples: docs/alerts.md.
import type { RunRecord } from '../engine/run-record.js';
import type { AlertRule } from '../store/types.js';
import { VARIABLE_NAMES, type ConditionVariables } from './variables.js';

/** Body of the webhook POST (Content-Type application/json). */
export interface AlertPayload {
  /** Rule name. */
  alert: string;
  pipeline: string;
  /** The rule's condition, as written. */
  condition: string;
  action: AlertRule['action'];
  /** ISO 8601 UTC, when the rule matched. */
  fired_at: string;
  cooldown_seconds: number;
  /** The condition variables the rule was evaluated against. */
  variables: ConditionVariables;
  /** The whole run record (as GET /api/runs/{run_id} returns it). */
  run: RunRecord;
}

export function alertPayload(pipeline: string, rule: AlertRule, run: RunRecord, variables: ConditionVariables, firedAt: string): AlertPayload {
  return {
    alert: rule.name,
    pipeline,
    condition: rule.condition,
    action: rule.action,
    fired_at: firedAt,
    cooldown_seconds: rule.cooldown_seconds,
    variables,
    run,
  };
}

/** Per-record error lines quoted in a mail; the rest are counted. */
export const MAIL_MAX_ERRORS = 10;
/** Longest quoted error line in a mail. */
const MAIL_MAX_LINE = 500;

const oneLine = (s: string, max = MAIL_MAX_LINE) => {
  const flat = s.replace(/\r\n|[\r\n]/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 3)}...` : flat;
};

/** The rule's subject, or `[svc] <pipeline>: <rule>`; always one line. */
export function emailSubject(pipeline: string, rule: AlertRule): string {
  const s = rule.subject && rule.subject.trim() !== '' ? rule.subject : `[svc] ${pipeline}: ${rule.name}`;
  return oneLine(s, 255);
}

const fmt = (v: unknown) => (typeof v === 'number' && !Number.isInteger(v) ? String(Number(v.toFixed(6))) : String(v));

/** The plain-text body of the alert mail. */
export function emailText(p: AlertPayload): string {
  const pad = (label: string, width: number) => `${label}:`.padEnd(width + 2);
  const lines: string[] = [
    `Alert '${p.alert}' fired for pipeline '${p.pipeline}'.`,
    '',
    `${pad('Condition', 9)}${oneLine(p.condition)}`,
    `${pad('Fired at', 9)}${p.fired_at}`,
    `${pad('Cooldown', 9)}${p.cooldown_seconds > 0 ? `${p.cooldown_seconds} s` : 'none'}`,
    '',
    'Variables',
  ];
  const width = Math.max(...VARIABLE_NAMES.map((n) => n.length));
  for (const n of VARIABLE_NAMES) lines.push(`  ${pad(n, width)}${fmt(p.variables[n])}`);
  const r = p.run;
  lines.push('', 'Run');
  const runFields: [string, unknown][] = [
    ['run_id', r.run_id],
    ['node_id', r.node_id],
    ['status', r.status],
    ['started_at', r.started_at],
    ['finished_at', r.finished_at],
    ['bytes_in', r.bytes_in],
    ['bytes_out', r.bytes_out],
    ['dlq_count', r.dlq_count],
  ];
  const rw = Math.max(...runFields.map(([k]) => k.length));
  for (const [k, v] of runFields) lines.push(`  ${pad(k, rw)}${fmt(v)}`);
  if (r.error) lines.push('', `Run error: ${oneLine(r.error)}`);
  const errors = Array.isArray(r.errors) ? r.errors : [];
  if (errors.length > 0) {
    const shown = errors.slice(0, MAIL_MAX_ERRORS);
    lines.push('', errors.length > shown.length ? `Errors (first ${shown.length} of ${errors.length}):` : `Errors (${errors.length}):`);
    for (const e of shown) lines.push(`  - ${oneLine(e)}`);
  }
  lines.push('', '-- ', 'Sent by svc alerting. Details: GET /api/runs/' + encodeURIComponent(r.run_id));
  return lines.join('\n') + '\n';
}
