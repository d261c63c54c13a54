// `svc serve` with SVC_MODE=worker: the engine plus the agent, with no store and no scheduler.
// The agent (SVC_WORKER_PORT) takes runs from the manager, keyed by run_id, so a repeated
// /agent/run never starts a second run; the ingress (SVC_WORKER_INGRESS_PORT) serves
// /webhooks/{path} for the webhook and remote-write streams placed here. Progress goes to the
// manager every SVC_STATS_INTERVAL; the final stats and the run-complete go through the outbox on
// the worker's volume. SIGTERM drains: new runs get 503, runs finish within
// SVC_SHUTDOWN_TIMEOUT_SECONDS or are stopped (aborted) at the deadline, then the outcomes are sent.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import websocket from '@fastify/websocket';
import { Type } from '@sinclair/typebox';
import webhookRoutes from '../engine/webhook-routes.js';
import { TapHub } from '../engine/tap.js';
import { hubFeed, tapRoute } from '../engine/tap-routes.js';
import { installAuth } from '../auth/guard.js';
import { httpError, httpErrorHandler, noRouteHandler, sendHttpError } from '../core/http-errors.js';
import { loadPipelineText } from '../config/load.js';
import { formatDiagnostic } from '../config/diagnostics.js';
import type { PipelineConfig } from '../config/pipeline-schema.js';
import { LocalExecutor } from '../pipelines/executor.js';
import { FileProcessedFiles, processedFilesPath } from '../plugins/connector-runtime/processed-files.js';
import { decodeWatchOptions } from '../engine/decode-watch.js';
import { emptyRunRecord, type RunRecord } from '../engine/run-record.js';
import type { RunProgress } from '../engine/runner.js';
import { fileStateIO, stateConfigHash, stateFilePath, statefulTransforms } from '../engine/transform-state.js';
import { WebhookHub } from '../plugins/connector-runtime/webhook-hub.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../observability/log.js';
import { Metrics } from '../observability/metrics.js';
import { connectorMetrics } from '../plugins/registry.js';
import { listeningOn, listeningText } from '../observability/listening.js';
import { promptClose } from '../util/prompt-close.js';
import type { Settings } from '../settings.js';
import { EPOCH_HEADER, ManagerLink, managerProcessedFiles, managerSender, managerShardStateIO, managerStateIO } from './internal-http.js';
import { Outbox } from './outbox.js';
import { storeMibs } from '../mib/resolver.js';
import { syncedMibsFirst, syncFromManager } from './sync.js';
import type { ShardAssignment, ShardRef } from './protocol.js';

/**
 * How often a worker reports each run's progress: every SVC_STATS_INTERVAL, and at least every 2 s
 * while live counters are on (issue 29: the manager's figures are at most 5 s old). More reports do
 * not change when a slot is stale (3 x SVC_STATS_INTERVAL without one).
 */
export const statsReportMs = (s: Pick<Settings, 'STATS_INTERVAL' | 'LIVE_COUNTERS'>) =>
  (s.LIVE_COUNTERS ? Math.min(s.STATS_INTERVAL, 2) : s.STATS_INTERVAL) * 1000;

/**
 * Whether a run reads files the manager holds: a `schema_file`, or an SNMP connector (MIBs). Only
 * those sync at run start (before the pipeline is checked, since the check opens the schema files),
 * so a run that needs neither costs no round trips. Read off the YAML text: at worst one sync too many.
 */
export const needsManagerFiles = (yaml: string) => /\bschema_file\b|\bsnmp_\w+/.test(yaml);

export interface WorkerRun {
  runId: string;
  pipeline: string;
  scheduleType: string;
  config: PipelineConfig;
  configSha256: string;
  startedAt: Date;
  stop: AbortController;
  done: Promise<RunRecord>;
  progress?: RunProgress;
  /** A shard of a sharded batch run (issue 33): its run, its number, and its lease. */
  shard?: ShardRef & { leaseMs: number };
  /** When a progress report last reached the manager (a shard that cannot report for its lease stops). */
  reportedAt: number;
}

export interface Worker {
  agentUrl: string;
  ingressUrl: string;
  /** Drains (503 for new runs, runs finish or are stopped at the deadline), sends outcomes, closes. */
  stop(): Promise<void>;
  stopped: Promise<void>;
  log: Logger;
}

/** How many finished run ids the agent remembers, so a late repeat of /agent/run starts nothing. */
const REMEMBERED_RUNS = 10_000;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export async function startWorker(opts: { settings: Settings; log: Logger; onFatal?: (why: string) => void }): Promise<Worker> {
  const { settings, log } = opts;
  const dataDir = settings.DATA_DIR;
  // A relative schema_file resolves under SVC_SCHEMA_DIR: on a worker, by default, the copy synced
  // from the manager. Set before any run starts its worker threads (they copy the environment).
  process.env.SVC_SCHEMA_DIR ??= join(dataDir, 'schemas');
  const stateDir = settings.STATE_DIR || join(dataDir, 'state');
  const workerId = settings.WORKER_ID;
  const call = { apiKey: settings.API_KEY || undefined };
  const manager = new ManagerLink(settings.MANAGER_URL, call);
  const outbox = new Outbox(join(dataDir, 'outbox'), managerSender(manager, log), log);
  if (!settings.MANAGER_URL) log.warn('SVC_MANAGER_URL is empty: run outcomes wait in the outbox until a manager URL is set');
  await outbox.open();

  const webhooks = new WebhookHub();
  // What the connectors of this worker's runs report (SNMP poll times, flow sequence gaps, Kafka lag,
  // connection states), scraped from the worker's own GET /metrics: the manager's /metrics has
  // the run figures it is sent, not these.
  const metrics = new Metrics({ connectorMetrics: connectorMetrics() });
  const executor = new LocalExecutor({
    nodeId: workerId,
    webhooks,
    stateDir,
    decodeWatch: decodeWatchOptions(stateDir, settings),
    mibs: syncedMibsFirst(
      storeMibs(() => settings),
      join(dataDir, 'mibs'),
    ),
    processed: (name) => {
      const local = new FileProcessedFiles(processedFilesPath(name, stateDir));
      return manager.configured ? managerProcessedFiles(manager, name, local, (path, body) => outbox.push({ path, body })) : local;
    },
    state: (config, runLog, runId, shard) => {
      if (!statefulTransforms(config).length) return undefined;
      const hash = stateConfigHash(config);
      if (!manager.configured) return fileStateIO(stateFilePath(config.name, stateDir), hash, runLog);
      // A shard keeps the state of its own targets only, by target, in the manager's database.
      return shard ? managerShardStateIO(manager, config.name, hash, runId, runLog) : managerStateIO(manager, config.name, hash, runId, runLog);
    },
  });

  const runs = new Map<string, WorkerRun>();
  // Each pipeline's taps (GET /agent/pipelines/{name}/tap, what a manager relays): they outlive runs,
  // so a tap waits while a slot's run is started again; a hub goes once no run and no tap uses it.
  const taps = new Map<string, TapHub>();
  const tapHub = (name: string) => {
    let hub = taps.get(name);
    if (!hub) taps.set(name, (hub = new TapHub()));
    return hub;
  };
  const runsOf = (name: string) => [...runs.values()].filter((r) => r.pipeline === name);
  const forgetTaps = (name: string) => {
    if (!taps.get(name)?.active && runsOf(name).length === 0) taps.delete(name);
  };
  const finished = new Map<string, string>(); // run_id -> status, oldest first
  let draining = false;
  let highestEpoch = -1;
  let ingressUp = false;
  let agentUp = false;

  const statsBody = (r: WorkerRun, isFinal: boolean, record?: RunRecord) => {
    const p = record ?? r.progress;
    const uptime = Math.max(0.001, (Date.now() - r.startedAt.getTime()) / 1000);
    const n = (k: keyof RunProgress & keyof RunRecord) => Number(p?.[k] ?? 0);
    return {
      run_id: r.runId,
      pipeline: r.pipeline,
      worker_id: workerId,
      schedule_type: r.scheduleType,
      timestamp: new Date().toISOString(),
      uptime_seconds: uptime,
      records_in: n('records_in'),
      records_out: n('records_out'),
      records_filtered: n('records_filtered'),
      records_skipped: n('records_skipped'),
      dlq_count: n('dlq_count'),
      error_count: n('records_skipped'),
      bytes_in: n('bytes_in'),
      bytes_out: n('bytes_out'),
      errors_last_window: (record?.errors ?? p?.errors ?? []).slice(-20),
      is_final: isFinal,
      ...(r.shard ? { shard: { run_id: r.shard.run_id, index: r.shard.index } } : {}),
      // Per-stage figures (issue 29; an addition to doc 2's body): the manager sums them over a placement's slots.
      ...(r.progress?.stages ? { stages: r.progress.stages } : {}),
    };
  };

  const startRun = (runId: string, config: PipelineConfig, yaml: string, flush: boolean, shard?: ShardAssignment): WorkerRun => {
    const stop = new AbortController();
    const runLog = log.child({ pipeline: config.name, run_id: runId });
    const run: WorkerRun = {
      runId,
      pipeline: config.name,
      scheduleType: config.schedule.type,
      config,
      configSha256: sha256(yaml),
      startedAt: new Date(),
      stop,
      done: undefined as unknown as Promise<RunRecord>,
      reportedAt: Date.now(),
      ...(shard ? { shard: { run_id: shard.run_id, index: shard.index, leaseMs: shard.lease_seconds * 1000 } } : {}),
    };
    run.done = executor
      .execute({
        name: config.name,
        yaml,
        config,
        runId,
        signal: stop.signal,
        flush,
        log: runLog,
        started: async () => runLog.info('run started'),
        onProgress: (pr) => (run.progress = pr),
        tap: tapHub(config.name),
        telemetry: metrics.telemetry(config.name),
        ...(shard ? { shard: { index: shard.index, targets: new Set(shard.targets) } } : {}),
      })
      .catch((e: unknown): RunRecord => {
        const now = new Date().toISOString();
        return emptyRunRecord({
          run_id: runId,
          pipeline: config.name,
          node_id: workerId,
          status: 'failed',
          started_at: run.startedAt.toISOString(),
          finished_at: now,
          error: errorMessage(e),
        });
      })
      .then(async (record) => {
        runLog.info({ status: record.status, records_in: record.records_in, records_out: record.records_out }, 'run finished');
        // Final stats first, then the outcome (doc 2); both survive a crash from here on.
        await outbox.push({ path: '/api/internal/pipeline-stats', body: statsBody(run, true, record) });
        await outbox.push({
          path: '/api/internal/run-complete',
          body: {
            ...record,
            worker_id: workerId,
            config_sha256: run.configSha256,
            ...(run.shard ? { shard: { run_id: run.shard.run_id, index: run.shard.index } } : {}),
          },
        });
        runs.delete(runId);
        forgetTaps(config.name);
        finished.set(runId, record.status);
        if (finished.size > REMEMBERED_RUNS) finished.delete(finished.keys().next().value!);
        return record;
      });
    runs.set(runId, run);
    return run;
  };

  // Periodic stats of every active run (not through the outbox: the next report replaces a lost one).
  const statsTimer = setInterval(() => {
    if (!manager.configured) return;
    for (const r of runs.values()) {
      // Fencing from this side: a shard that could not report for its lease may be polled elsewhere by now.
      if (r.shard && !r.stop.signal.aborted && Date.now() - r.reportedAt > r.shard.leaseMs) {
        log.warn(
          { pipeline: r.pipeline, run_id: r.runId },
          'no progress report reached the manager within the shard lease (SVC_SHARD_LEASE_SECONDS); stopping the shard',
        );
        r.stop.abort();
        continue;
      }
      void manager.call('POST', '/api/internal/pipeline-stats', statsBody(r, false)).then(
        (res) => {
          if (res.status >= 200 && res.status < 300) r.reportedAt = Date.now();
          // 409: the manager placed this stream elsewhere (a superseded slot) and tells it to stop.
          if (res.status === 409 && !r.stop.signal.aborted) {
            log.warn({ pipeline: r.pipeline, run_id: r.runId }, 'the manager superseded this run; stopping it');
            r.stop.abort();
          }
        },
        (e: unknown) => log.debug({ err: errorMessage(e) }, 'stats report not delivered'),
      );
    }
  }, statsReportMs(settings));
  statsTimer.unref();

  const agent = Fastify({ bodyLimit: 4 << 20 }) as unknown as FastifyInstance;
  const agentConnections = promptClose(agent.server);
  agent.addHook('preClose', async () => agentConnections.begin());
  // The tap's WebSocket; a client sends nothing but pings.
  await agent.register(websocket, { options: { maxPayload: 4096 } });
  installAuth(agent, { settings, log });
  agent.setErrorHandler(httpErrorHandler({ plain: true }));
  agent.setNotFoundHandler(noRouteHandler);
  // Fencing: a call from a manager with a lower epoch than one already seen comes from a superseded leader.
  agent.addHook('onRequest', async (req, reply) => {
    const raw = req.headers[EPOCH_HEADER];
    if (raw === undefined || req.url === '/agent/health') return;
    const epoch = Number(raw);
    if (!Number.isInteger(epoch) || epoch < 0) return sendHttpError(reply, httpError('HTTP_EPOCH_INVALID', EPOCH_HEADER));
    if (epoch < highestEpoch) return sendHttpError(reply, httpError('HTTP_EPOCH_SUPERSEDED', epoch, highestEpoch));
    highestEpoch = epoch;
  });

  // 503 when a part is dead (a liveness probe restarts the pod). A draining worker is alive and
  // finishing its runs (ok), and says `draining`, so the manager sends it nothing new.
  agent.get('/agent/health', async (_req, reply) =>
    reply.code(agentUp && ingressUp ? 200 : 503).send({
      ok: agentUp && ingressUp,
      worker_id: workerId,
      active_runs: runs.size,
      running_pipelines: [...new Set([...runs.values()].map((r) => r.pipeline))].sort(),
      ingress_up: ingressUp,
      draining,
    }),
  );

  agent.get('/metrics', async (_req, reply) => reply.type('text/plain; version=0.0.4; charset=utf-8').send(await metrics.registry.metrics()));

  agent.get('/agent/status', async () => ({
    worker_id: workerId,
    draining,
    runs: [...runs.values()].map((r) => ({ ...statsBody(r, false), config_sha256: r.configSha256, started_at: r.startedAt.toISOString() })),
    outbox_pending: await outbox.pending(),
  }));

  // The same tap as the API's (query, frames), on this worker's runs: what the manager relays.
  // The stage is checked against the run's config when the pipeline runs here.
  tapRoute(agent, {
    path: '/agent/pipelines/:name/tap',
    tags: ['agent'],
    config: (name) => runsOf(name)[0]?.config,
    running: (name) => runsOf(name).length > 0,
    feed: (name) => {
      const feed = hubFeed(tapHub(name));
      return {
        attach: (opts, out) => {
          const detach = feed.attach(opts, out);
          return () => {
            detach();
            forgetTaps(name);
          };
        },
      };
    },
  });

  const RunBody = Type.Object({
    run_id: Type.String({ minLength: 1, maxLength: 200 }),
    yaml: Type.String({ minLength: 1 }),
    flush: Type.Optional(Type.Boolean()),
    // A shard of a sharded batch run (issue 33): the targets this run owns, and its lease.
    shard: Type.Optional(
      Type.Object({
        run_id: Type.String({ minLength: 1, maxLength: 200 }),
        index: Type.Integer({ minimum: 0 }),
        targets: Type.Array(Type.String()),
        lease_seconds: Type.Integer({ minimum: 1 }),
      }),
    ),
  });
  agent.post('/agent/run', { schema: { body: RunBody } }, async (req, reply) => {
    const body = req.body as { run_id: string; yaml: string; flush?: boolean; shard?: ShardAssignment };
    const existing = runs.get(body.run_id);
    if (existing) return reply.code(200).send({ run_id: body.run_id, status: 'running', worker_id: workerId, config_sha256: existing.configSha256 });
    if (finished.has(body.run_id))
      return reply.code(200).send({ run_id: body.run_id, status: 'finished', outcome: finished.get(body.run_id), worker_id: workerId });
    if (draining) return sendHttpError(reply, httpError('HTTP_WORKER_UNAVAILABLE', `worker ${workerId} is shutting down and takes no new runs`));
    if (manager.configured && needsManagerFiles(body.yaml)) {
      try {
        const r = await syncFromManager({ managerUrl: manager.url, dataDir, apiKey: call.apiKey, log });
        if (r.changed) log.info({ run_id: body.run_id, changed: r.changed }, 'schemas and MIBs synced from the manager');
      } catch (e) {
        return sendHttpError(reply, httpError('HTTP_WORKER_UNAVAILABLE', `worker ${workerId}: ${errorMessage(e)}`));
      }
    }
    // Expanded here, with this worker's environment and SVC_CONFIG_ENV_ALLOW: the manager sends the YAML as written.
    const loaded = loadPipelineText(body.yaml, { statefulTransforms: settings.STATEFUL_TRANSFORMS, envAllow: settings.CONFIG_ENV_ALLOW });
    if (!loaded.config) {
      const errs = loaded.diagnostics.filter((d) => d.severity === 'error').map((d) => formatDiagnostic(d));
      return sendHttpError(reply, httpError('HTTP_PIPELINE_INVALID', `invalid pipeline: ${errs.join('; ')}`));
    }
    const config = loaded.config;
    // Shards of one run may share a worker (a dead worker's targets re-dispatched here); any other run is one too many.
    const busy = [...runs.values()].find((r) => r.pipeline === config.name && !(body.shard && r.shard?.run_id === body.shard.run_id));
    if (busy) return sendHttpError(reply, httpError('HTTP_PIPELINE_CONFLICT', `pipeline '${config.name}' already runs here as ${busy.runId}`));
    const run = startRun(body.run_id, config, body.yaml, body.flush ?? false, body.shard);
    return reply.code(202).send({ run_id: run.runId, status: 'started', worker_id: workerId, config_sha256: run.configSha256 });
  });

  const StopBody = Type.Object({ run_id: Type.Optional(Type.String()), pipeline: Type.Optional(Type.String()) });
  agent.post('/agent/stop', { schema: { body: StopBody } }, async (req, reply) => {
    const { run_id, pipeline } = req.body as { run_id?: string; pipeline?: string };
    if (!run_id && !pipeline) return sendHttpError(reply, httpError('HTTP_INVALID', 'send run_id or pipeline'));
    const hit = [...runs.values()].filter((r) => (run_id ? r.runId === run_id : r.pipeline === pipeline));
    if (hit.length === 0) {
      if (run_id && finished.has(run_id)) return { stopped: [], finished: [run_id] };
      return sendHttpError(
        reply,
        httpError('HTTP_RUN_NOT_ACTIVE', `no active run ${run_id ? `'${run_id}'` : `of pipeline '${pipeline}'`} on worker ${workerId}`),
      );
    }
    for (const r of hit) r.stop.abort();
    return { stopped: hit.map((r) => r.runId) };
  });

  const ingress = Fastify({ bodyLimit: settings.WEBHOOK_MAX_BODY_BYTES }) as unknown as FastifyInstance;
  const ingressConnections = promptClose(ingress.server);
  ingress.addHook('preClose', async () => ingressConnections.begin());
  ingress.setErrorHandler(httpErrorHandler({ log, logMessage: 'ingress request failed', bodyLimit: () => settings.WEBHOOK_MAX_BODY_BYTES }));
  ingress.setNotFoundHandler(noRouteHandler);
  await ingress.register(async (scope) => webhookRoutes(scope, { settings, webhooks }));

  let stopping: Promise<void> | undefined;
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((r) => (resolveStopped = r));

  // Either part closing outside a shutdown ends the process, so that the orchestrator restarts it.
  const watch = (name: string, app: FastifyInstance) =>
    app.server.on('close', () => {
      if (name === 'ingress') ingressUp = false;
      else agentUp = false;
      if (!stopping) opts.onFatal?.(`worker ${name} closed unexpectedly`);
    });

  const agentUrl = await agent.listen({ host: settings.HOST, port: settings.WORKER_PORT }).catch((e: Error) => {
    throw new Error(`cannot listen on ${settings.HOST}:${settings.WORKER_PORT} (SVC_WORKER_PORT): ${e.message}`);
  });
  const ingressUrl = await ingress.listen({ host: settings.HOST, port: settings.WORKER_INGRESS_PORT }).catch(async (e: Error) => {
    await agent.close();
    throw new Error(`cannot listen on ${settings.HOST}:${settings.WORKER_INGRESS_PORT} (SVC_WORKER_INGRESS_PORT): ${e.message}`);
  });
  agentUp = true;
  ingressUp = true;
  watch('agent', agent);
  watch('ingress', ingress);

  const stop = () =>
    (stopping ??= (async () => {
      draining = true;
      const deadline = settings.SHUTDOWN_TIMEOUT_SECONDS * 1000;
      log.info({ runs: runs.size, timeout_s: settings.SHUTDOWN_TIMEOUT_SECONDS }, 'worker draining: no new runs');
      // Streams never end by themselves: they are told to stop now. Batch runs get until the deadline.
      for (const r of runs.values()) if (r.scheduleType === 'stream') r.stop.abort();
      const all = () => Promise.all([...runs.values()].map((r) => r.done));
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([all().then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), deadline)))]);
      clearTimeout(timer);
      if (timedOut) {
        log.warn({ runs: [...runs.keys()] }, `runs did not finish within ${settings.SHUTDOWN_TIMEOUT_SECONDS} s; stopping them (recorded as aborted)`);
        for (const r of runs.values()) r.stop.abort();
        await Promise.race([all(), new Promise((r) => setTimeout(r, 10_000))]);
      }
      clearInterval(statsTimer);
      for (const hub of taps.values()) hub.close(`worker ${workerId} is shutting down`);
      const sent = await outbox.flush(5000);
      if (!sent)
        log.warn({ pending: await outbox.pending() }, 'manager not reachable: outcomes stay in the outbox and are sent by the next start on this volume');
      outbox.close();
      await ingress.close();
      await agent.close();
      log.info('worker stopped');
      resolveStopped();
    })());

  const [a, i] = [listeningOn(agent.server, false), listeningOn(ingress.server, false)];
  log.info(
    { agent: a.url, agent_listen: a.listen, ingress: i.url, ingress_listen: i.listen, worker_id: workerId, manager: settings.MANAGER_URL || null },
    `svc worker listening: agent on ${listeningText(a)}, ingress on ${listeningText(i)}`,
  );
  return { agentUrl, ingressUrl, stop, stopped, log };
}
