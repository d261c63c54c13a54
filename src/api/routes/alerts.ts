// Alert rules of a pipeline: list, add, update, delete, and each rule's delivery history. Bodies
// are checked by the alerting module (422 with every problem); names are unique per pipeline (409).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { parseAlertRule } from '../../alerts/index.js';
import { DuplicateAlertRuleError } from '../../store/index.js';
import type { AlertDelivery, AlertRule } from '../../store/types.js';
import type { ApiDeps } from '../deps.js';
import { httpError } from '../../core/http-errors.js';

type RuleReq = FastifyRequest<{ Params: { name: string; rule_name?: string } }>;

function ruleOf(body: unknown): AlertRule {
  const r = parseAlertRule(body);
  if (!r.ok) throw httpError('HTTP_ALERT_RULE_INVALID', r.problems.join('; '));
  return r.rule;
}

/** What GET .../alerts adds to a rule from its history (docs/alerts.md, "Delivery history"). */
function deliveryView(history: AlertDelivery[]) {
  const last = history[0];
  const failing = last?.outcome === 'failed';
  return {
    delivery_status: !last ? 'never' : failing ? 'failing' : 'delivered',
    last_attempt: last?.at ?? null,
    last_delivery_error: failing ? last.error : null,
    consecutive_failures: failing ? last.attempt : 0,
    last_deliveries: history,
  };
}

export default async function alertRoutes(app: FastifyInstance, deps: ApiDeps) {
  const { manager, store } = deps;
  const tags = ['alerts'];
  const params = Type.Object({ name: Type.String({ minLength: 1 }) });
  const ruleParams = Type.Object({ name: Type.String({ minLength: 1 }), rule_name: Type.String({ minLength: 1 }) });

  app.get(
    '/api/pipelines/:name/alerts',
    {
      schema: {
        tags,
        params,
        summary:
          'Alert rules, each with last_fired (its last confirmed delivery, null: never) and its delivery history: delivery_status, last_attempt, last_delivery_error, consecutive_failures, last_deliveries',
      },
    },
    async (req: RuleReq) => {
      manager.get(req.params.name);
      const rules = await store.alerts.list(req.params.name);
      const history = await store.alerts.deliveries(req.params.name);
      return Promise.all(
        rules.map(async (r) => ({
          ...r,
          last_fired: (await store.alerts.lastFired(req.params.name, r.name)) ?? null,
          ...deliveryView(history.get(r.name) ?? []),
        })),
      );
    },
  );

  app.get(
    '/api/pipelines/:name/alerts/:rule_name/deliveries',
    { schema: { tags, params: ruleParams, summary: "An alert rule's last deliveries, newest first (time, channel, target, outcome, error, attempt)" } },
    async (req: RuleReq) => {
      manager.get(req.params.name);
      const rule = req.params.rule_name!;
      if (!(await store.alerts.list(req.params.name)).some((r) => r.name === rule)) throw httpError('HTTP_ALERT_RULE_NOT_FOUND', req.params.name, rule);
      return (await store.alerts.deliveries(req.params.name, rule)).get(rule) ?? [];
    },
  );

  app.post('/api/pipelines/:name/alerts', { schema: { tags, params, summary: 'Add an alert rule' } }, async (req: RuleReq, reply) => {
    manager.get(req.params.name);
    const rule = ruleOf(req.body);
    if (!(await store.alerts.add(req.params.name, rule)))
      throw httpError('HTTP_ALERT_RULE_EXISTS', `pipeline '${req.params.name}' already has an alert rule '${rule.name}'; use PUT to change it`);
    return reply.code(201).send(rule);
  });

  app.put('/api/pipelines/:name/alerts/:rule_name', { schema: { tags, params: ruleParams } }, async (req: RuleReq) => {
    manager.get(req.params.name);
    const rule = ruleOf(req.body);
    // A different body name renames the rule; onto a name another rule has, that is a conflict (409), not a 500.
    const updated = await store.alerts.update(req.params.name, req.params.rule_name!, rule).catch((e: unknown) => {
      if (e instanceof DuplicateAlertRuleError)
        throw httpError('HTTP_ALERT_RULE_EXISTS', `pipeline '${req.params.name}' already has an alert rule '${rule.name}'; choose another name`);
      throw e;
    });
    if (!updated) throw httpError('HTTP_ALERT_RULE_NOT_FOUND', req.params.name, req.params.rule_name);
    return rule;
  });

  app.delete('/api/pipelines/:name/alerts/:rule_name', { schema: { tags, params: ruleParams } }, async (req: RuleReq, reply) => {
    manager.get(req.params.name);
    if (!(await store.alerts.remove(req.params.name, req.params.rule_name!)))
      throw httpError('HTTP_ALERT_RULE_NOT_FOUND', req.params.name, req.params.rule_name);
    return reply.code(204).send();
  });
}
