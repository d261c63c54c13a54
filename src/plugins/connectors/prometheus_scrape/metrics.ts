// prometheus_scrape's own metrics (docs/observability.md): time to scrape each target, and its
// failures by reason. The runtime registers them with a `pipeline` label first.
import type { MetricDeclaration } from '../../types.js';

export const promScrapeMetrics = [
  {
    name: 'svc_prometheus_scrape_seconds',
    help: 'Time prometheus_scrape took to scrape one target (request, body and parsing), per target.',
    kind: 'histogram',
    labels: ['target'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  },
  {
    name: 'svc_prometheus_scrape_errors_total',
    help: 'Targets prometheus_scrape could not scrape, per target and reason (timeout, unreachable, status, too_large, parse, error).',
    kind: 'counter',
    labels: ['target', 'reason'],
  },
] as const satisfies readonly MetricDeclaration[];
