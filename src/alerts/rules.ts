// Validation of an alert rule as the REST API receives it (POST/PUT /api/pipelines/{name}/alerts).
// `AlertRuleSchema` describes the body (OpenAPI docs); `parseAlertRule` checks it, including the
// cross-field rules a JSON schema does not express well (webhook_url for webhook, email_to for
// email, the condition compiling), and returns either the rule to store or the problems for a 422.
// User reference: docs/alerts.md.
import { Kind, Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import { describeValue, suggest, typeOf } from '../config/schema-errors.js';
import { compile, ExprError } from '../expr/index.js';
import type { AlertRule } from '../store/types.js';
import { VARIABLE_NAMES } from './variables.js';

/** Rule names appear in URLs (/alerts/{rule_name}): letters, digits, `_`, `.`, `-`. */
export const RULE_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]*$';
const NAME_RE = new RegExp(RULE_NAME_PATTERN);
/** Most recipients one rule may mail. */
export const MAX_RECIPIENTS = 50;
/** Longest cooldown: fits a signed 32-bit column in every database backend. */
export const MAX_COOLDOWN_SECONDS = 2_147_483_647;

const nullableString = (opts: { maxLength: number; description: string }) =>
  Type.Optional(Type.Union([Type.String({ maxLength: opts.maxLength }), Type.Null()], { description: opts.description }));

export const AlertRuleSchema = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 128,
      description: 'Unique within the pipeline: letters, digits, `_`, `.` and `-`, starting with a letter or digit.',
    }),
    condition: Type.String({ minLength: 1, maxLength: 4096, description: 'Expression over the condition variables (docs/alerts.md).' }),
    action: Type.Union([Type.Literal('webhook'), Type.Literal('email')], { description: '`webhook` or `email`.' }),
    webhook_url: nullableString({ maxLength: 2048, description: 'For `webhook`: http:// or https:// URL that receives a JSON POST.' }),
    email_to: nullableString({ maxLength: 4096, description: 'For `email`: comma-separated recipient addresses.' }),
    subject: nullableString({ maxLength: 255, description: 'For `email`: subject line; default `[svc] <pipeline>: <rule>`.' }),
    cooldown_seconds: Type.Integer({
      minimum: 0,
      maximum: MAX_COOLDOWN_SECONDS,
      default: 0,
      description: 'Seconds after a confirmed delivery during which the rule does not fire again; 0: no cooldown.',
    }),
  },
  { additionalProperties: false },
);
export type AlertRuleBody = Static<typeof AlertRuleSchema>;

export type ParsedAlertRule = { ok: true; rule: AlertRule } | { ok: false; problems: string[] };

// A pragmatic address check (no display names, no quoted local parts): local@domain.
const LOCAL_RE = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const LABEL_RE = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/** Why `address` is not a plain `local@domain` address, or undefined when it is. */
export function addressProblem(address: string): string | undefined {
  if (address.length > 254) return 'is longer than 254 characters';
  const at = address.lastIndexOf('@');
  if (at <= 0 || at === address.length - 1) return 'is not of the form name@domain';
  const local = address.slice(0, at);
  const domain = address.slice(at + 1);
  if (local.length > 64 || !LOCAL_RE.test(local)) return 'has an invalid part before @';
  if (domain.length > 253 || !domain.split('.').every((l) => LABEL_RE.test(l))) return 'has an invalid domain';
  return undefined;
}

/** The recipients of a comma-separated `email_to`, trimmed, empty items dropped. */
export function parseRecipients(emailTo: string | null | undefined): string[] {
  return (emailTo ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Why `url` cannot be a webhook target, or undefined when it can. */
export function webhookUrlProblem(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `is not a valid URL: ${JSON.stringify(url.length > 60 ? url.slice(0, 57) + '...' : url)}`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `must be an http:// or https:// URL, got ${u.protocol.slice(0, -1)}://`;
  if (!u.hostname) return 'has no host';
  return undefined;
}

/** Problems of the condition: does not compile, or reads names that are not condition variables. */
export function conditionProblems(condition: string): string[] {
  let fields: string[];
  try {
    fields = compile(condition).fields;
  } catch (e) {
    return [`condition: ${e instanceof ExprError ? e.message : String(e)}`];
  }
  const known = VARIABLE_NAMES as readonly string[];
  // '$' stands for a name picked at run time ($[...]): it cannot be checked here.
  const unknown = [...new Set(fields.filter((f) => f !== '$' && !known.includes(f)))];
  return unknown.map((f) => {
    const hint = suggest(f, known);
    return `condition: unknown variable '${f}'${hint ? ` (did you mean '${hint}'?)` : ''}; the variables are ${known.join(', ')}`;
  });
}

const FIELDS = Object.keys(AlertRuleSchema.properties);

/** A TypeBox value error as a short message (`expected integer, got 1.5`). */
function describeError(e: ValueError): string {
  const got = describeValue(e.value);
  const schema = e.schema as TSchema;
  switch (e.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return 'is required';
    case ValueErrorType.Union: {
      // A nullable string that is a string: report what is wrong with the string.
      const member = typeof e.value === 'string' ? (schema.anyOf as TSchema[]).find((m) => m[Kind] === 'String') : undefined;
      const inner = member ? Value.Errors(member, e.value).First() : undefined;
      if (inner) return describeError(inner);
      const t = typeOf(schema);
      return t.startsWith('one of ') ? `must be ${t}, got ${got}` : `expected ${t}, got ${got}`;
    }
    case ValueErrorType.StringMinLength:
      return 'must not be empty';
    case ValueErrorType.StringMaxLength:
      return `is longer than ${schema.maxLength} characters`;
    case ValueErrorType.IntegerMinimum:
      return `must be at least ${schema.minimum}, got ${got}`;
    case ValueErrorType.IntegerMaximum:
      return `must be at most ${schema.maximum}, got ${got}`;
    case ValueErrorType.Integer:
    case ValueErrorType.String:
    case ValueErrorType.Number:
      return `expected ${typeOf(schema)}, got ${got}`;
    default:
      return `${e.message.charAt(0).toLowerCase()}${e.message.slice(1)}, got ${got}`;
  }
}

/**
 * Schema problems, one per field, as `field: message`. JSON bodies are typed already, so unlike the
 * YAML config nothing is converted: 1.5 stays a non-integer and 42 is not a condition.
 */
function schemaProblems(body: object): { value: Record<string, unknown>; problems: string[]; bad: Set<string> } {
  const value = Value.Default(AlertRuleSchema, Value.Clone(body)) as Record<string, unknown>;
  const problems: string[] = [];
  const bad = new Set<string>();
  for (const e of Value.Errors(AlertRuleSchema, value)) {
    const field = e.path.split('/')[1]?.replace(/~1/g, '/').replace(/~0/g, '~') ?? '';
    if (bad.has(field)) continue;
    let message: string;
    if (e.type === ValueErrorType.ObjectAdditionalProperties) {
      const hint = suggest(field, FIELDS);
      message = `unknown key '${field}'${hint ? ` (did you mean '${hint}'?)` : ''}`;
    } else {
      message = describeError(e);
    }
    bad.add(field);
    problems.push(`${field || 'body'}: ${message}`);
  }
  return { value, problems, bad };
}

const isBlank = (s: string | null | undefined) => s === undefined || s === null || s.trim() === '';

/**
 * Checks a request body. On success returns the rule to store, with defaults applied and the
 * fields of the other action set to null (a webhook rule keeps no email_to or subject).
 */
export function parseAlertRule(body: unknown): ParsedAlertRule {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return { ok: false, problems: ['body: expected a JSON object with the alert rule fields'] };
  }
  const { value, problems, bad } = schemaProblems(body);
  const v = value as Partial<AlertRuleBody>;

  if (!bad.has('name') && typeof v.name === 'string' && !NAME_RE.test(v.name)) {
    problems.push(`name: ${JSON.stringify(v.name)} may only contain letters, digits, '_', '.' and '-', and must start with a letter or digit`);
  }
  if (!bad.has('condition') && typeof v.condition === 'string') problems.push(...conditionProblems(v.condition));

  if (v.action === 'webhook' && !bad.has('webhook_url')) {
    if (isBlank(v.webhook_url)) problems.push('webhook_url: is required for action webhook');
    else {
      const p = webhookUrlProblem(v.webhook_url!.trim());
      if (p) problems.push(`webhook_url: ${p}`);
    }
  }
  if (v.action === 'email' && !bad.has('email_to')) {
    const to = parseRecipients(v.email_to);
    if (to.length === 0) problems.push('email_to: is required for action email (comma-separated addresses)');
    if (to.length > MAX_RECIPIENTS) problems.push(`email_to: at most ${MAX_RECIPIENTS} recipients, got ${to.length}`);
    for (const a of to) {
      const p = addressProblem(a);
      if (p) problems.push(`email_to: ${JSON.stringify(a)} ${p}`);
    }
  }
  // eslint-disable-next-line no-control-regex -- control characters are what this check refuses
  if (v.action === 'email' && !bad.has('subject') && typeof v.subject === 'string' && /[\u0000-\u001f\u007f]/.test(v.subject)) {
    problems.push('subject: must be a single line without control characters');
  }
  if (problems.length > 0) return { ok: false, problems };

  const rule: AlertRule = {
    name: v.name!,
    condition: v.condition!,
    action: v.action!,
    webhook_url: v.action === 'webhook' ? v.webhook_url!.trim() : null,
    email_to: v.action === 'email' ? parseRecipients(v.email_to).join(', ') : null,
    subject: v.action === 'email' && !isBlank(v.subject) ? v.subject! : null,
    cooldown_seconds: v.cooldown_seconds ?? 0,
  };
  return { ok: true, rule };
}

/** The problems of a request body (empty when it is a valid rule), each naming its field. */
export function validateAlertRule(body: unknown): string[] {
  const r = parseAlertRule(body);
  return r.ok ? [] : r.problems;
}
