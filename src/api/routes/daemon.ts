// Probes, metadata and the daemon itself: health, ready, meta, plugins, stats, templates, metrics,
// daemon status and stop.
import type { FastifyInstance } from 'fastify';
import { pluginKeys } from '../../plugins/registry.js';
import { buildTime, version } from '../../version.js';
import type { ApiDeps } from '../deps.js';
import { loadTemplates } from '../../pipelines/templates.js';
import { statsWithLive } from '../../pipelines/pipeline-manager.js';

export function humanDuration(seconds: number): string {
  const d = Math.floor(seconds / 86400);
  const h = Math.floor((seconds % 86400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = Math.floor(seconds % 60);
  return [d && `${d}d`, (d || h) && `${h}h`, (d || h || m) && `${m}m`, `${s}s`].filter(Boolean).join(' ');
}

export default async function daemonRoutes(app: FastifyInstance, deps: ApiDeps) {
  const { store, manager, settings } = deps;
  const uptime = () => (Date.now() - deps.startedAt.getTime()) / 1000;

  app.get('/api/health', { schema: { tags: ['probes'], summary: 'Liveness' } }, async () => ({ status: 'ok' }));

  app.get('/api/ready', { schema: { tags: ['probes'], summary: 'Readiness: 503 when the database or the scheduler is unavailable' } }, async (_req, reply) => {
    let db = 'ok';
    try {
      await store.ping();
    } catch (e) {
      db = `unavailable: ${(e as Error).message}`;
    }
    // A standby manager runs no scheduler and is not ready, so the Service reaches only the leader.
    const scheduler = deps.shuttingDown?.()
      ? 'stopping'
      : deps.starting?.()
        ? 'starting'
        : deps.cluster && !deps.cluster.leader().ready
          ? 'standby'
          : 'running';
    const body = {
      status: db === 'ok' && scheduler === 'running' ? 'ready' : 'not ready',
      db,
      db_engine: store.engine,
      db_path: store.path,
      scheduler,
      cluster: deps.cluster ? clusterSummary(deps.cluster.nodes()) : 'standalone',
      pipelines_loaded: manager.list().length,
      uptime: humanDuration(uptime()),
    };
    return reply.code(body.status === 'ready' ? 200 : 503).send(body);
  });

  app.get('/api/meta', { schema: { tags: ['daemon'] } }, async () => ({
    version,
    build_time: buildTime,
    // The spec's field name; this runtime is Node.js, so it carries the Node.js version.
    python_version: process.version,
    runtime: `node ${process.version}`,
  }));

  app.get('/api/plugins', { schema: { tags: ['daemon'], summary: 'Registered plugin keys by category' } }, async () => pluginKeys());

  app.get(
    '/api/stats',
    { schema: { tags: ['runs'], summary: 'Per-pipeline totals over the last hour, running runs included with their live counts' } },
    async () => statsWithLive(await store.runs.stats(new Date(Date.now() - 3600_000).toISOString()), manager.liveRuns()),
  );

  app.get('/api/templates', { schema: { tags: ['pipelines'], summary: 'Bundled pipeline templates' } }, async () => loadTemplates(settings.TEMPLATES_DIR));

  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) =>
    reply.type('text/plain; version=0.0.4; charset=utf-8').send(await deps.metrics.registry.metrics()),
  );

  app.get('/api/daemon/status', { schema: { tags: ['daemon'] } }, async () => {
    const pipelines = manager.list();
    const count = (s: string) => pipelines.filter((p) => p.status === s).length;
    return {
      status: deps.shuttingDown?.() ? 'stopping' : 'running',
      mode: settings.MODE,
      node_id: settings.NODE_ID,
      version,
      uptime_seconds: Math.round(uptime()),
      scheduler: { pipelines: pipelines.length, running: count('running'), scheduled: count('scheduled'), stopped: count('stopped'), error: count('error') },
      active_streams: pipelines.filter((p) => p.config.schedule.type === 'stream' && p.active).map((p) => ({ pipeline: p.name, run_id: p.active!.runId })),
      active_runs: pipelines.filter((p) => p.config.schedule.type !== 'stream' && p.active).map((p) => ({ pipeline: p.name, run_id: p.active!.runId })),
      next_runs: manager.nextRuns(),
    };
  });

  app.post('/api/daemon/stop', { schema: { tags: ['daemon'], summary: 'Graceful shutdown (drains runs)' } }, async (_req, reply) => {
    setImmediate(() => deps.shutdown());
    return reply.code(202).send({ status: 'stopping', drain_timeout_seconds: settings.SHUTDOWN_TIMEOUT_SECONDS });
  });
}

/** `manager · N/M workers` (spec doc 2 readiness): healthy of known workers. */
export function clusterSummary(nodes: { ok: boolean }[]): string {
  return `manager · ${nodes.filter((n) => n.ok).length}/${nodes.length} workers`;
}
