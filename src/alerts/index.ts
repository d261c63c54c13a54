// The alerting module: rule validation (REST API), condition variables, evaluation after a batch
// run, webhook and email delivery. User reference: docs/alerts.md.
export { conditionVariables, VARIABLE_NAMES, type ConditionVariables } from './variables.js';
export {
  AlertRuleSchema,
  parseAlertRule,
  validateAlertRule,
  parseRecipients,
  RULE_NAME_PATTERN,
  MAX_RECIPIENTS,
  MAX_COOLDOWN_SECONDS,
  type AlertRuleBody,
  type ParsedAlertRule,
} from './rules.js';
export {
  deliverWebhook,
  deliverEmail,
  redactUrl,
  urlSecrets,
  WEBHOOK_TIMEOUT_MS,
  EMAIL_TIMEOUT_MS,
  type DeliveryResult,
  type EmailMessage,
  type EmailOptions,
  type SmtpSettings,
} from './deliver.js';
export { alertPayload, emailSubject, emailText, MAIL_MAX_ERRORS, type AlertPayload } from './message.js';
export { AlertEvaluator, type AlertEvaluatorOptions, type AlertOutcome, type Deliverers, type FiredAlert } from './evaluator.js';
