// Alert evaluation after a batch run (spec doc 2 section 6): every rule of the pipeline whose
// condition matches the run's variables fires its webhook or email action unless it is in
// cooldown. The cooldown starts only after a confirmed delivery and is read from and written to
// the store, so it survives restarts. One rule failing (bad condition, failed delivery, store
// error) never keeps the others from being evaluated; evaluate() itself never throws. Every
// delivery, confirmed or failed, is recorded in the rule's delivery history (secrets masked).
import type { ConnectionOptions } from 'node:tls';
import { redactor } from '../core/secrets.js';
import type { RunRecord } from '../engine/run-record.js';
import { compile, ExprError, truthy, type CompiledExpr } from '../expr/index.js';
import type { Logger } from '../observability/log.js';
import type { AlertRule, AlertStore } from '../store/types.js';
import {
  deliverEmail,
  deliverWebhook,
  EMAIL_TIMEOUT_MS,
  redactUrl,
  urlSecrets,
  WEBHOOK_TIMEOUT_MS,
  type DeliveryResult,
  type EmailMessage,
  type EmailOptions,
  type SmtpSettings,
} from './deliver.js';
import { alertPayload, emailSubject, emailText, type AlertPayload } from './message.js';
import { parseRecipients } from './rules.js';
import { conditionVariables, type ConditionVariables } from './variables.js';

export type AlertOutcome =
  /** Matched, delivered and confirmed; the cooldown starts now. */
  | 'fired'
  /** Matched, but the rule fired less than cooldown_seconds ago. */
  | 'cooldown'
  /** The condition is false for this run. */
  | 'no-match'
  /** The condition does not compile or failed on this run's variables (WARNING logged). */
  | 'condition-error'
  /** Matched, but the delivery was not confirmed; no cooldown (WARNING logged). */
  | 'delivery-failed'
  /** The cooldown state could not be read; the rule was not fired (WARNING logged). */
  | 'store-error';

/** What happened to one rule in one evaluation. */
export interface FiredAlert {
  pipeline: string;
  rule: string;
  action: AlertRule['action'];
  outcome: AlertOutcome;
  /** Why, for condition-error, delivery-failed and store-error; for fired, a cooldown that could not be saved. */
  reason?: string;
  /** fired: the delivery confirmation (e.g. `HTTP 200 OK`). */
  detail?: string;
  /** fired: when the rule matched (the payload's fired_at). */
  fired_at?: string;
  /** cooldown: when the rule may fire again (ISO 8601). */
  cooldown_until?: string;
  /** fired and delivery-failed: the attempt as the delivery history numbers it (absent when it could not be recorded). */
  attempt?: number;
}

export interface Deliverers {
  webhook(url: string, payload: AlertPayload, opts: { timeoutMs: number }): Promise<DeliveryResult>;
  email(settings: SmtpSettings, msg: EmailMessage, opts: EmailOptions): Promise<DeliveryResult>;
}

export interface AlertEvaluatorOptions {
  store: AlertStore;
  /** The SVC_SMTP_* settings (the whole Settings object fits). */
  settings: SmtpSettings;
  log: Logger;
  /** Clock in epoch milliseconds (tests). */
  now?: () => number;
  /** Replaces the real deliveries (tests). */
  deliver?: Partial<Deliverers>;
  /** Delivery limits; defaults 10 s (webhook) and 15 s (SMTP). */
  timeouts?: { webhookMs?: number; emailMs?: number };
  /** Extra TLS options for STARTTLS, e.g. `{ ca }` for a private CA. Certificates are always verified. */
  smtpTls?: ConnectionOptions;
}

/** Compiled conditions kept; the cache is emptied when it grows past this (rules edited many times). */
const CACHE_LIMIT = 1000;
/** Grace on top of a delivery's own timeout before a deliverer that ignores it is given up on. */
const DELIVERY_GRACE_MS = 1000;

type CacheEntry = { fn: CompiledExpr } | { error: string };

export class AlertEvaluator {
  private readonly store: AlertStore;
  private readonly settings: SmtpSettings;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly deliverers: Deliverers;
  private readonly webhookMs: number;
  private readonly emailMs: number;
  private readonly smtpTls?: ConnectionOptions;
  private readonly cache = new Map<string, CacheEntry>();
  /** Per pipeline, the tail of the evaluations in progress: one pipeline's runs are evaluated in order. */
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(opts: AlertEvaluatorOptions) {
    this.store = opts.store;
    this.settings = opts.settings;
    this.log = opts.log.child({ component: 'alerts' });
    this.now = opts.now ?? Date.now;
    this.deliverers = { webhook: opts.deliver?.webhook ?? deliverWebhook, email: opts.deliver?.email ?? deliverEmail };
    this.webhookMs = opts.timeouts?.webhookMs ?? WEBHOOK_TIMEOUT_MS;
    this.emailMs = opts.timeouts?.emailMs ?? EMAIL_TIMEOUT_MS;
    this.smtpTls = opts.smtpTls;
  }

  /**
   * Evaluates the pipeline's rules against a finished run and delivers the matching ones, all rules
   * concurrently. Resolves within about the longest delivery timeout (after any evaluation of the
   * same pipeline still in progress, so two quick runs cannot both pass one cooldown). Never rejects.
   */
  evaluate(pipeline: string, run: RunRecord): Promise<FiredAlert[]> {
    const prev = this.queues.get(pipeline) ?? Promise.resolve();
    const mine = prev.then(() => this.evaluateNow(pipeline, run));
    const tail = mine.catch(() => undefined);
    this.queues.set(pipeline, tail);
    void tail.then(() => {
      if (this.queues.get(pipeline) === tail) this.queues.delete(pipeline);
    });
    return mine;
  }

  /** The compiled condition, compiled once per distinct text; a compile error is cached too. */
  private condition(source: string): CacheEntry {
    let entry = this.cache.get(source);
    if (entry) return entry;
    try {
      entry = { fn: compile(source) };
    } catch (e) {
      entry = { error: e instanceof ExprError ? e.message : String(e) };
    }
    if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
    this.cache.set(source, entry);
    return entry;
  }

  private async evaluateNow(pipeline: string, run: RunRecord): Promise<FiredAlert[]> {
    let rules: AlertRule[];
    try {
      rules = await this.store.list(pipeline);
    } catch (e) {
      this.log.warn({ pipeline, run_id: run.run_id, err: String(e) }, 'alert rules could not be loaded; no alerts evaluated');
      return [];
    }
    if (rules.length === 0) return [];
    const variables = conditionVariables(run);
    return Promise.all(
      rules.map((rule) =>
        this.evaluateRule(pipeline, rule, run, variables).catch((e: unknown) => {
          // Not expected (every step catches its own errors); keeps one rule from rejecting the rest.
          const r: FiredAlert = { pipeline, rule: rule.name, action: rule.action, outcome: 'store-error', reason: String(e) };
          this.log.warn({ pipeline, run_id: run.run_id, rule: rule.name, err: String(e) }, 'alert rule failed');
          return r;
        }),
      ),
    );
  }

  private async evaluateRule(pipeline: string, rule: AlertRule, run: RunRecord, variables: ConditionVariables): Promise<FiredAlert> {
    const base = { pipeline, rule: rule.name, action: rule.action };
    const ctx = { pipeline, run_id: run.run_id, rule: rule.name, action: rule.action };

    const cond = this.condition(rule.condition);
    let matched: boolean;
    try {
      if ('error' in cond) throw new ExprError(cond.error);
      matched = truthy(cond.fn({ ...variables }));
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      this.log.warn({ ...ctx, condition: rule.condition, err: reason }, 'alert condition failed; rule not fired');
      return { ...base, outcome: 'condition-error', reason };
    }
    if (!matched) {
      this.log.debug(ctx, 'alert condition not met');
      return { ...base, outcome: 'no-match' };
    }

    let last: string | undefined;
    try {
      last = await this.store.lastFired(pipeline, rule.name);
    } catch (e) {
      const reason = `cooldown state unavailable: ${String(e)}`;
      this.log.warn({ ...ctx, err: String(e) }, 'alert cooldown state could not be read; rule not fired');
      return { ...base, outcome: 'store-error', reason };
    }
    const cooldownMs = Math.max(0, rule.cooldown_seconds || 0) * 1000;
    const now = this.now();
    if (last !== undefined && cooldownMs > 0) {
      const lastMs = Date.parse(last);
      if (Number.isNaN(lastMs)) {
        this.log.warn({ ...ctx, last_fired: last }, 'unreadable last-fired time ignored');
      } else if (now < lastMs + cooldownMs) {
        const until = new Date(lastMs + cooldownMs).toISOString();
        this.log.debug({ ...ctx, cooldown_until: until }, 'alert in cooldown');
        return { ...base, outcome: 'cooldown', cooldown_until: until };
      }
    }

    const firedAt = new Date(now).toISOString();
    const payload = alertPayload(pipeline, rule, run, variables, firedAt);
    const result = await this.deliver(rule, payload);
    // The cooldown runs from the confirmation, not from the match; the history has the same time.
    const doneAt = new Date(this.now()).toISOString();
    const redact = this.redactor(rule);
    const attempt = await this.record(pipeline, rule, run.run_id, doneAt, result, redact, ctx);
    if (!result.ok) {
      const reason = redact(result.reason);
      this.log.warn({ ...ctx, target: this.target(rule), err: reason, attempt }, 'alert delivery failed; cooldown not started');
      return { ...base, outcome: 'delivery-failed', reason, attempt };
    }

    const fired: FiredAlert = { ...base, outcome: 'fired', detail: result.detail, fired_at: firedAt, attempt };
    try {
      await this.store.setFired(pipeline, rule.name, doneAt);
    } catch (e) {
      fired.reason = `delivered, but the cooldown could not be saved: ${String(e)}`;
      this.log.error({ ...ctx, err: String(e) }, 'alert delivered but its cooldown could not be saved');
    }
    this.log.info({ ...ctx, target: this.target(rule), detail: result.detail }, 'alert fired');
    return fired;
  }

  /** Masks the rule's secrets (URL credentials, secret query values, the SMTP password) in a text. */
  private redactor(rule: AlertRule): (text: string) => string {
    const secrets = rule.action === 'webhook' ? urlSecrets(rule.webhook_url ?? '') : [];
    if (rule.action === 'email' && this.settings.SMTP_PASS) secrets.push(this.settings.SMTP_PASS);
    return redactor(secrets);
  }

  /** Adds the delivery to the rule's history; the attempt it was numbered, or undefined when it could not be written (WARNING). */
  private async record(
    pipeline: string,
    rule: AlertRule,
    runId: string,
    at: string,
    result: DeliveryResult,
    redact: (text: string) => string,
    ctx: Record<string, unknown>,
  ): Promise<number | undefined> {
    try {
      const d = await this.store.recordDelivery(pipeline, rule.name, {
        at,
        run_id: runId || null,
        channel: rule.action === 'email' ? 'email' : 'webhook',
        target: this.target(rule),
        outcome: result.ok ? 'delivered' : 'failed',
        detail: result.ok ? redact(result.detail) : null,
        error: result.ok ? null : redact(result.reason),
      });
      return d.attempt;
    } catch (e) {
      this.log.warn({ ...ctx, err: String(e) }, 'alert delivery could not be added to its history');
      return undefined;
    }
  }

  private target(rule: AlertRule): string {
    return rule.action === 'webhook' ? redactUrl(rule.webhook_url ?? '') : parseRecipients(rule.email_to).join(', ');
  }

  private async deliver(rule: AlertRule, payload: AlertPayload): Promise<DeliveryResult> {
    const timeoutMs = rule.action === 'webhook' ? this.webhookMs : this.emailMs;
    let attempt: Promise<DeliveryResult>;
    try {
      if (rule.action === 'webhook') {
        if (!rule.webhook_url) return { ok: false, reason: 'rule has no webhook_url' };
        attempt = this.deliverers.webhook(rule.webhook_url, payload, { timeoutMs });
      } else if (rule.action === 'email') {
        const to = parseRecipients(rule.email_to);
        if (to.length === 0) return { ok: false, reason: 'rule has no email_to' };
        const msg: EmailMessage = { to, subject: emailSubject(payload.pipeline, rule), text: emailText(payload) };
        attempt = this.deliverers.email(this.settings, msg, { timeoutMs, tls: this.smtpTls });
      } else {
        return { ok: false, reason: `unknown action ${JSON.stringify(rule.action)}` };
      }
    } catch (e) {
      return { ok: false, reason: e instanceof Error ? e.message : String(e) };
    }
    // The real deliverers keep their own timeouts; this only guards against one that does not.
    let timer: NodeJS.Timeout | undefined;
    const guard = new Promise<DeliveryResult>((resolve) => {
      timer = setTimeout(() => resolve({ ok: false, reason: `no answer within ${timeoutMs} ms` }), timeoutMs + DELIVERY_GRACE_MS);
    });
    try {
      return await Promise.race([attempt.catch((e: unknown): DeliveryResult => ({ ok: false, reason: e instanceof Error ? e.message : String(e) })), guard]);
    } finally {
      clearTimeout(timer);
    }
  }
}
