// What every route module is given. A route module default-exports
// `async function routes(app: FastifyInstance, deps: ApiDeps)` and registers its own paths.
import type { MibStore } from '../mib/store.js';
import type { Logger } from '../observability/log.js';
import type { Settings } from '../settings.js';
import type { Store } from '../store/types.js';
import type { PipelineManager } from '../pipelines/pipeline-manager.js';
import type { Metrics } from '../observability/metrics.js';
import type { WebhookHub } from '../plugins/connector-runtime/webhook-hub.js';
import type { Tracer } from '../observability/tracing.js';
import type { ClusterDeps } from '../cluster/manager.js';

export interface ApiDeps {
  settings: Settings;
  store: Store;
  manager: PipelineManager;
  metrics: Metrics;
  log: Logger;
  startedAt: Date;
  /** Asks the daemon to shut down gracefully (POST /api/daemon/stop). */
  shutdown(): void;
  /** The webhook hub of the running pipelines. */
  webhooks: WebhookHub;
  /** True once a shutdown has begun (readiness answers 503). */
  shuttingDown?(): boolean;
  /** True while the rest of the start (the console under `svc serve`) is still under way (readiness answers 503). */
  starting?(): boolean;
  /** The MIB store (shared with the console under `svc serve`). */
  mibs: MibStore;
  /** OpenTelemetry tracer; undefined when tracing is off (SVC_OTEL_ENDPOINT empty). */
  tracer?: Tracer;
  /** Manager mode (SVC_MODE=manager): the workers and the executor that dispatches to them. */
  cluster?: ClusterDeps;
}
