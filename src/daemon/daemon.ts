// `svc serve`: the always-on daemon, standalone or manager (a worker is src/cluster/worker.ts).
// Settings are read once; the store is opened and migrated; runs a previous process left
// unfinished are recorded as aborted; pipelines come back from the store and SVC_PIPELINE_DIR; the
// API listens; SIGTERM drains. A manager runs the same lifecycle with runs dispatched to workers.
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../api/app.js';
import { AlertEvaluator } from '../alerts/evaluator.js';
import { WebhookHub } from '../plugins/connector-runtime/webhook-hub.js';
import { createLogger, type Logger } from '../observability/log.js';
import { listeningOn, listeningText } from '../observability/listening.js';
import { Metrics } from '../observability/metrics.js';
import { startTracing } from '../observability/tracing.js';
import { MibStore } from '../mib/store.js';
import { decodeWatchOptions, mibSourceWatch } from '../engine/decode-watch.js';
import { loadSettings, type Settings } from '../settings.js';
import { openStore } from '../store/index.js';
import type { Store } from '../store/types.js';
import { PipelineManager } from '../pipelines/pipeline-manager.js';
import { connectorMetrics, pluginEngines } from '../plugins/registry.js';
import { watchPipelines } from './watch.js';
import { daemonStateDir, lockDaemonState } from './state-lock.js';
import { startRunRetention } from './retention.js';
import { startManagerCluster } from '../cluster/manager.js';
import { Leadership } from '../cluster/leadership.js';

export interface Daemon {
  settings: Settings;
  app: FastifyInstance;
  manager: PipelineManager;
  store: Store;
  /** The MIB store; `svc serve` hands it to the console too. */
  mibs: MibStore;
  log: Logger;
  /** Base URL the API listens on (port resolved when SVC_PORT is 0). */
  url: string;
  /** Graceful shutdown: stop the API, drain runs (SVC_SHUTDOWN_TIMEOUT_SECONDS), close the store. */
  stop(): Promise<void>;
  /** Resolves when the daemon has stopped (after stop() or POST /api/daemon/stop). */
  stopped: Promise<void>;
  /** With deferReady: every part of the start is done, /api/ready may answer 200. */
  startComplete(): void;
}

export interface StartDaemonOptions {
  settings?: Settings;
  log?: Logger;
  onLostLeadership?: (reason: string) => void;
  /**
   * Called at the named points of the start (`before-pipelines`, `before-listen`); throws to abandon the
   * start when a stop signal arrived (src/cli/stop-signals.ts). Whatever had started is stopped, as
   * by stop(), before the error is rethrown.
   */
  checkpoint?: (point: string) => Promise<void>;
  /**
   * /api/ready answers 503 ("starting") until the Daemon's startComplete() is called: `svc serve`
   * starts the console after the daemon, and a ready probe must mean both answer.
   */
  deferReady?: boolean;
}

export async function startDaemon(opts: StartDaemonOptions = {}): Promise<Daemon> {
  const settings = opts.settings ?? loadSettings();
  const log = opts.log ?? createLogger({ level: settings.LOG_LEVEL, format: settings.LOG_FORMAT });
  checkTls(settings); // before anything is opened: a bad certificate stops the start at once
  const stateLock = lockDaemonState(settings); // one daemon per SQLite file and state directory (issue 17)
  const store = await openStore({ url: settings.DB_URL, path: settings.DB_PATH, log });
  const interrupted = await store.runs.abortInterrupted(settings.NODE_ID, 'interrupted: the daemon stopped before the run finished');
  if (interrupted) log.warn({ runs: interrupted }, 'runs left unfinished by the previous process recorded as aborted');

  const tracing = startTracing(settings, log);
  const metrics = new Metrics({ connectorMetrics: connectorMetrics() });
  const webhooks = new WebhookHub();
  const alerts = new AlertEvaluator({ store: store.alerts, settings, log });
  // Webhook spools live here; beside the SQLite file by default, so one directory holds a node's state.
  const stateDir = daemonStateDir(settings);
  const leadership =
    settings.MODE === 'manager'
      ? new Leadership({
          db: store.db,
          engine: store.engine,
          nodeId: settings.NODE_ID,
          ttlMs: settings.LEADER_LEASE_SECONDS * 1000,
          log,
          // Stepping down is leaving: the orchestrator starts the process again, as a standby.
          onLost: opts.onLostLeadership ?? (() => process.exit(3)),
        })
      : undefined;
  const cluster = leadership ? startManagerCluster({ settings, metrics, log, store, leadership }) : undefined;
  const manager = new PipelineManager({
    store,
    settings,
    log,
    metrics,
    webhooks,
    stateDir,
    alerts,
    tracer: tracing.tracer,
    executor: cluster?.executor,
    admission: cluster?.admission,
    onConfig: cluster?.onConfig,
    claimFires: cluster !== undefined,
    adoption: cluster?.adoption,
  });
  cluster?.attach(manager);
  const mibs = await MibStore.fromSettings(settings, log, mibSourceWatch(decodeWatchOptions(stateDir, settings)));
  /** Schedules and streams start here: at once, or (an elected manager) once this one leads. */
  const becomeActive = async () => {
    // The first health poll before anything is scheduled: runs due at start find the healthy workers.
    await cluster?.start();
    await manager.restore();
    if (settings.RELOAD_ON_START) {
      const r = await manager.loadDirectory(settings.PIPELINE_DIR);
      log.info({ dir: settings.PIPELINE_DIR, loaded: r.reloaded, errors: r.errors }, 'pipeline directory loaded');
    }
    await cluster?.startQueue();
  };
  // Stops whatever has started so far: the start may be abandoned at a checkpoint.
  let stopping: Promise<void> | undefined;
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((r) => (resolveStopped = r));
  let unwatch = () => {};
  let app: FastifyInstance | undefined;
  let retention: { stop(): Promise<void> } | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      log.info({ timeout_s: settings.SHUTDOWN_TIMEOUT_SECONDS }, 'shutting down: draining runs');
      unwatch();
      await retention?.stop();
      leadership?.stop();
      await manager.shutdown(settings.SHUTDOWN_TIMEOUT_SECONDS * 1000);
      await cluster?.stop();
      await app?.close();
      await tracing.shutdown();
      await store.close();
      stateLock.release();
      log.info('stopped');
      resolveStopped();
    })());
  const checkpoint = async (point: string) => {
    try {
      await opts.checkpoint?.(point);
    } catch (e) {
      await stop();
      throw e;
    }
  };

  await checkpoint('before-pipelines');
  if (!leadership?.elected) await becomeActive();
  await checkpoint('before-listen');

  let starting = opts.deferReady === true;
  app = await buildApp({
    settings,
    store,
    manager,
    metrics,
    webhooks,
    log,
    startedAt: new Date(),
    shutdown: () => void stop(),
    shuttingDown: () => stopping !== undefined,
    starting: () => starting,
    mibs,
    tracer: tracing.tracer,
    cluster,
  });
  let address: string;
  try {
    address = await app.listen({ host: settings.HOST, port: settings.PORT });
  } catch (e) {
    // Nothing may stay open when the start fails (port in use, address not available).
    await manager.shutdown(0);
    await cluster?.stop();
    await store.close().catch(() => {});
    stateLock.release();
    throw new Error(`cannot listen on ${settings.HOST}:${settings.PORT}: ${(e as Error).message}`, { cause: e });
  }
  retention = startRunRetention({ runs: store.runs, settings, log, active: () => leadership?.isLeader() ?? true });
  if (leadership?.elected) {
    log.info({ holder: leadership.holder }, 'standby manager: waiting for the leader lease');
    void leadership
      .start()
      .then(becomeActive)
      .catch((e: unknown) => log.error({ err: (e as Error).message }, 'could not take over as the leader'));
  }
  if (settings.WATCH_PIPELINES) unwatch = watchPipelines(settings.PIPELINE_DIR, manager, log);
  const bound = listeningOn(app.server, !!(settings.TLS_CERTFILE && settings.TLS_KEYFILE));
  log.info(
    { listen: bound.listen, url: bound.url, db: store.engine, state_dir: stateDir, pipelines: manager.list().length },
    `svc daemon listening on ${listeningText(bound)}`,
  );
  if (bound.every_interface && !settings.API_KEY) log.warn({ listen: bound.listen }, openApiWarning(bound.listen));
  // The client each connector with a choice runs on (kafka: librdkafka, or the slower kafkajs and how to get the other).
  for (const [key, e] of Object.entries(pluginEngines())) {
    if (e.native) log.info({ connector: key, engine: e.name }, `${key}: engine ${e.note}`);
    else log.warn({ connector: key, engine: e.name }, `${key}: engine ${e.note}`);
  }
  return { settings, app, manager, store, mibs, log, url: address, stop, stopped, startComplete: () => (starting = false) };
}

/** The WARNING of an API on every interface that asks no key: what it means and how to restrict it. */
export function openApiWarning(listen: string): string {
  return (
    `the API listens on every interface (${listen}) and SVC_API_KEY is not set: anyone who can reach this machine can read, change and run its pipelines. ` +
    'To restrict it, set SVC_HOST=127.0.0.1 (this machine only) or set SVC_API_KEY (then /api/* needs the X-API-Key header)'
  );
}

/**
 * SVC_TLS_CERTFILE / SVC_TLS_KEYFILE: both or neither; both readable; a certificate and key that
 * belong together. Anything else is one clear line naming the variable (never a silent plain-HTTP
 * fallback, never a raw ENOENT).
 */
function checkTls(settings: Settings) {
  const { TLS_CERTFILE: certFile, TLS_KEYFILE: keyFile } = settings;
  if (!certFile && !keyFile) return;
  if (!certFile || !keyFile) {
    const [set, unset] = certFile ? ['SVC_TLS_CERTFILE', 'SVC_TLS_KEYFILE'] : ['SVC_TLS_KEYFILE', 'SVC_TLS_CERTFILE'];
    throw new Error(`${set} is set but ${unset} is empty: set both to serve HTTPS, or neither for plain HTTP`);
  }
  const read = (name: string, file: string) => {
    try {
      return readFileSync(file);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      const why = err.code === 'ENOENT' ? 'no such file' : err.code === 'EACCES' ? 'permission denied' : err.message;
      throw new Error(`${name}: cannot read ${file}: ${why}`, { cause: e });
    }
  };
  const cert = read('SVC_TLS_CERTFILE', certFile);
  const key = read('SVC_TLS_KEYFILE', keyFile);
  try {
    createSecureContext({ cert, key });
  } catch (e) {
    throw new Error(`SVC_TLS_CERTFILE / SVC_TLS_KEYFILE: cannot use ${certFile} with ${keyFile}: ${(e as Error).message}`, { cause: e });
  }
}
