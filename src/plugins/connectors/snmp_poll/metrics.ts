// snmp_poll's own metrics (docs/observability.md): time to poll each target, and its failures by
// reason. The runtime registers them with a `pipeline` label first.
import type { MetricDeclaration } from '../../types.js';

export const snmpPollMetrics = [
  {
    name: 'svc_snmp_poll_seconds',
    help: 'Time snmp_poll took to poll one target (all its requests), per target.',
    kind: 'histogram',
    labels: ['target'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  },
  {
    name: 'svc_snmp_poll_errors_total',
    help: 'Targets snmp_poll could not poll, per target and reason (timeout, unreachable, refused, deadline, error).',
    kind: 'counter',
    labels: ['target', 'reason'],
  },
] as const satisfies readonly MetricDeclaration[];
