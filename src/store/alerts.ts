// Alert rules per pipeline and the persisted cooldowns (last confirmed delivery per rule).
import type { Kysely, Selectable } from 'kysely';
import type { AlertRulesTable, Schema } from './schema.js';
import type { AlertRule, AlertStore, DbEngine } from './types.js';
import { fits, isUniqueViolation, iso, MAX_NAME, num } from './util.js';

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
      const r = await trx.deleteFrom('alert_rules').where('pipeline', '=', pipeline).where('name', '=', name).executeTakeFirst();
      return num(r.numDeletedRows) > 0;
    });
  }

  async removeAll(pipeline: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('alert_cooldowns').where('pipeline', '=', pipeline).execute();
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
}
