// `svc serve`: the always-on daemon in standalone mode. Settings are read once; the store is opened
// and migrated; runs a previous process left unfinished are recorded as aborted; pipelines come
// back from the store and SVC_PIPELINE_DIR; the API listens; SIGTERM drains.
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../api/app.js';
import { AlertEvaluator } from '../alerts/evaluator.js';
import { WebhookHub } from '../engine/webhook-hub.js';
import { createLogger, type Logger } from '../observability/log.js';
import { Metrics } from '../observability/metrics.js';
import { startTracing } from '../observability/tracing.js';
import { loadSettings, type Settings } from '../settings.js';
import { openStore } from '../store/index.js';
import type { Store } from '../store/types.js';
import { PipelineManager } from './pipeline-manager.js';
import { watchPipelines } from './watch.js';

export interface Daemon {
  settings: Settings;
  app: FastifyInstance;
  manager: PipelineManager;
  store: Store;
  log: Logger;
  /** Base URL the API listens on (port resolved when SVC_PORT is 0). */
  url: string;
  /** Graceful shutdown: stop the API, drain runs (SVC_SHUTDOWN_TIMEOUT_SECONDS), close the store. */
  stop(): Promise<void>;
  /** Resolves when the daemon has stopped (after stop() or POST /api/daemon/stop). */
  stopped: Promise<void>;
}

export async function startDaemon(opts: { settings?: Settings; log?: Logger } = {}): Promise<Daemon> {
  const settings = opts.settings ?? loadSettings();
  const log = opts.log ?? createLogger({ level: settings.LOG_LEVEL, format: settings.LOG_FORMAT });
  if (settings.MODE !== 'standalone') log.warn({ mode: settings.MODE }, 'this release runs standalone only; SVC_MODE is ignored');
  const store = await openStore({ url: settings.DB_URL, path: settings.DB_PATH, log });
  const interrupted = await store.runs.abortInterrupted(settings.NODE_ID, 'interrupted: the daemon stopped before the run finished');
  if (interrupted) log.warn({ runs: interrupted }, 'runs left unfinished by the previous process recorded as aborted');

  const tracing = startTracing(settings, log);
  const metrics = new Metrics();
  const webhooks = new WebhookHub();
  const alerts = new AlertEvaluator({ store: store.alerts, settings, log });
  const manager = new PipelineManager({ store, settings, log, metrics, webhooks, alerts, tracer: tracing.tracer });
  await manager.restore();
  if (settings.RELOAD_ON_START) {
    const r = await manager.loadDirectory(settings.PIPELINE_DIR);
    log.info({ dir: settings.PIPELINE_DIR, loaded: r.reloaded, errors: r.errors }, 'pipeline directory loaded');
  }

  let stopping: Promise<void> | undefined;
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((r) => (resolveStopped = r));
  let unwatch = () => {};
  const stop = () =>
    (stopping ??= (async () => {
      log.info({ timeout_s: settings.SHUTDOWN_TIMEOUT_SECONDS }, 'shutting down: draining runs');
      unwatch();
      await manager.shutdown(settings.SHUTDOWN_TIMEOUT_SECONDS * 1000);
      await app.close();
      await tracing.shutdown();
      await store.close();
      log.info('stopped');
      resolveStopped();
    })());

  const app = await buildApp({
    settings,
    store,
    manager,
    metrics,
    webhooks,
    log,
    startedAt: new Date(),
    shutdown: () => void stop(),
    shuttingDown: () => stopping !== undefined,
    tracer: tracing.tracer,
  });
  const address = await app.listen({ host: settings.HOST, port: settings.PORT });
  if (settings.WATCH_PIPELINES) unwatch = watchPipelines(settings.PIPELINE_DIR, manager, log);
  log.info({ url: address, db: store.engine, pipelines: manager.list().length }, 'svc daemon listening');
  return { settings, app, manager, store, log, url: address, stop, stopped };
}
