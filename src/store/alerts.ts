// Alert rules per pipeline, the persisted cooldowns (last confirmed delivery per rule) and each
// rule's delivery history (its last ALERT_HISTORY_LIMIT deliveries).
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { AlertDeliveriesTable, AlertRulesTable, Schema } from './schema.js';
import type { AlertDelivery, AlertDeliveryToStore, AlertRule, AlertStore, DbEngine } from './types.js';
import { fits, isUniqueViolation, iso, MAX_NAME, MAX_RUN_ID, num } from './util.js';

/** Deliveries kept per rule: older ones are deleted when a new one is recorded. */
export const ALERT_HISTORY_LIMIT = 20;
/** Longest error or detail kept (characters); the rest is cut with `...`. */
const MAX_TEXT = 2000;

const cut = (s: string | null | undefined): string | null => (s == null ? null : s.length > MAX_TEXT ? `${s.slice(0, MAX_TEXT - 3)}...` : s);

/** update() renaming a rule onto a name that another rule of the pipeline has. */
export class DuplicateAlertRuleError extends Error {
  constructor(
    readonly pipeline: string,
    readonly rule: string,
  ) {
    super(`alert rule "${rule}" already exists for pipeline "${pipeline}"`);
    this.name = 'DuplicateAlertRuleError';
  }
}

function toRule(r: Selectable<AlertRulesTable>): AlertRule {
  return {
    name: r.name,
    condition: r.condition,
    action: r.action === 'email' ? 'email' : 'webhook',
    webhook_url: r.webhook_url ?? null,
    email_to: r.email_to ?? null,
    subject: r.subject ?? null,
    cooldown_seconds: num(r.cooldown_seconds),
  };
}

function toDelivery(r: Selectable<AlertDeliveriesTable>): AlertDelivery {
  return {
    at: r.attempted_at,
    run_id: r.run_id ?? null,
    channel: r.channel === 'email' ? 'email' : 'webhook',
    target: r.target,
    outcome: r.outcome === 'delivered' ? 'delivered' : 'failed',
    detail: r.detail ?? null,
    error: r.error ?? null,
    attempt: num(r.attempt),
  };
}

function columns(rule: AlertRule) {
  return {
    name: fits(rule.name, MAX_NAME, 'alert rule name'),
    condition: rule.condition,
    action: rule.action,
    webhook_url: rule.webhook_url ?? null,
    email_to: rule.email_to ?? null,
    subject: rule.subject ?? null,
    cooldown_seconds: Math.trunc(rule.cooldown_seconds),
  };
}

export class SqlAlertStore implements AlertStore {
  constructor(
    private readonly db: Kysely<Schema>,
    private readonly engine: DbEngine,
    /** Deliveries kept per rule. */
    private readonly historyLimit = ALERT_HISTORY_LIMIT,
  ) {}

  /** In the order they were added. */
  async list(pipeline: string): Promise<AlertRule[]> {
    const rows = await this.db.selectFrom('alert_rules').selectAll().where('pipeline', '=', pipeline).orderBy('id').execute();
    return rows.map(toRule);
  }

  async add(pipeline: string, rule: AlertRule): Promise<boolean> {
    try {
      await this.db
        .insertInto('alert_rules')
        .values({ pipeline: fits(pipeline, MAX_NAME, 'pipeline'), ...columns(rule) })
        .execute();
      return true;
    } catch (err) {
      if (isUniqueViolation(err)) return false;
      throw err;
    }
  }

  /** A different `rule.name` renames the rule (its cooldown moves with it); throws DuplicateAlertRuleError when taken. */
  update(pipeline: string, name: string, rule: AlertRule): Promise<boolean> {
    return this.db
      .transaction()
      .execute(async (trx) => {
        const r = await trx.updateTable('alert_rules').set(columns(rule)).where('pipeline', '=', pipeline).where('name', '=', name).executeTakeFirst();
        if (num(r.numUpdatedRows) === 0) return false;
        if (rule.name !== name) {
          await trx.deleteFrom('alert_cooldowns').where('pipeline', '=', pipeline).where('rule', '=', rule.name).execute();
          await trx.updateTable('alert_cooldowns').set({ rule: rule.name }).where('pipeline', '=', pipeline).where('rule', '=', name).execute();
          // The history moves with the rule (one left behind by an older name is dropped).
          await trx.deleteFrom('alert_deliveries').where('pipeline', '=', pipeline).where('rule', '=', rule.name).execute();
          await trx.updateTable('alert_deliveries').set({ rule: rule.name }).where('pipeline', '=', pipeline).where('rule', '=', name).execute();
        }
        return true;
      })
      .catch((err: unknown) => {
        if (isUniqueViolation(err)) throw new DuplicateAlertRuleError(pipeline, rule.name);
        throw err;
      });
  }

  remove(pipeline: string, name: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('alert_cooldowns').where('pipeline', '=', pipeline).where('rule', '=', name).execute();
      await trx.deleteFrom('alert_deliveries').where('pipeline', '=', pipeline).where('rule', '=', name).execute();
      const r = await trx.deleteFrom('alert_rules').where('pipeline', '=', pipeline).where('name', '=', name).executeTakeFirst();
      return num(r.numDeletedRows) > 0;
    });
  }

  async removeAll(pipeline: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('alert_cooldowns').where('pipeline', '=', pipeline).execute();
      await trx.deleteFrom('alert_deliveries').where('pipeline', '=', pipeline).execute();
      await trx.deleteFrom('alert_rules').where('pipeline', '=', pipeline).execute();
    });
  }

  async lastFired(pipeline: string, rule: string): Promise<string | undefined> {
    const r = await this.db.selectFrom('alert_cooldowns').select('fired_at').where('pipeline', '=', pipeline).where('rule', '=', rule).executeTakeFirst();
    return r?.fired_at;
  }

  async setFired(pipeline: string, rule: string, at: string): Promise<void> {
    const fired_at = iso(at, 'fired_at');
    const q = this.db
      .insertInto('alert_cooldowns')
      .values({ pipeline: fits(pipeline, MAX_NAME, 'pipeline'), rule: fits(rule, MAX_NAME, 'alert rule name'), fired_at });
    await (this.engine === 'mysql'
      ? q.onDuplicateKeyUpdate({ fired_at })
      : q.onConflict((oc) => oc.columns(['pipeline', 'rule']).doUpdateSet({ fired_at }))
    ).execute();
  }

  /**
   * The attempt is 1 after a delivered one (or for the rule's first), else the previous attempt + 1.
   * One transaction: the attempt read, the insert and the trim. The evaluator records one rule's
   * deliveries one after the other (runs of a pipeline are evaluated in order).
   */
  async recordDelivery(pipeline: string, rule: string, d: AlertDeliveryToStore): Promise<AlertDelivery> {
    const row = {
      pipeline: fits(pipeline, MAX_NAME, 'pipeline'),
      rule: fits(rule, MAX_NAME, 'alert rule name'),
      attempted_at: iso(d.at, 'delivery time'),
      run_id: d.run_id === null ? null : fits(d.run_id, MAX_RUN_ID, 'run_id'),
      channel: d.channel,
      target: cut(d.target) ?? '',
      outcome: d.outcome,
      detail: cut(d.detail),
      error: cut(d.error),
    };
    return this.db.transaction().execute(async (trx) => {
      const prev = await this.newest(trx, pipeline, rule);
      const attempt = prev && prev.outcome !== 'delivered' ? num(prev.attempt) + 1 : 1;
      await trx
        .insertInto('alert_deliveries')
        .values({ ...row, attempt })
        .execute();
      // The newest row beyond the limit: it and everything older go.
      const oldest = await trx
        .selectFrom('alert_deliveries')
        .select('id')
        .where('pipeline', '=', pipeline)
        .where('rule', '=', rule)
        .orderBy('id', 'desc')
        .limit(1)
        .offset(this.historyLimit)
        .executeTakeFirst();
      if (oldest) await trx.deleteFrom('alert_deliveries').where('pipeline', '=', pipeline).where('rule', '=', rule).where('id', '<=', oldest.id).execute();
      return toDelivery({ id: 0, ...row, attempt });
    });
  }

  private newest(trx: Transaction<Schema>, pipeline: string, rule: string) {
    return trx
      .selectFrom('alert_deliveries')
      .select(['outcome', 'attempt'])
      .where('pipeline', '=', pipeline)
      .where('rule', '=', rule)
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
  }

  async deliveries(pipeline: string, rule?: string): Promise<Map<string, AlertDelivery[]>> {
    let q = this.db.selectFrom('alert_deliveries').selectAll().where('pipeline', '=', pipeline);
    if (rule !== undefined) q = q.where('rule', '=', rule);
    const rows = await q.orderBy('rule').orderBy('id', 'desc').execute();
    const out = new Map<string, AlertDelivery[]>();
    for (const r of rows) {
      let list = out.get(r.rule);
      if (!list) out.set(r.rule, (list = []));
      // A smaller limit than when the rows were written: show only as many.
      if (list.length < this.historyLimit) list.push(toDelivery(r));
    }
    return out;
  }
}
