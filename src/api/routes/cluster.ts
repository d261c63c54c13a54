// The cluster view (spec doc 2): nodes and stream placements. A manager's placements are its
// placement groups (src/cluster/placements.ts); standalone has no workers, and its placements are
// the single-slot views of the running streams.
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps.js';
import { registry } from '../../plugins/registry.js';
import type { SourcePlugin } from '../../plugins/types.js';
import { errorMessage } from '../../core/errors.js';

export default async function clusterRoutes(app: FastifyInstance, deps: ApiDeps) {
  const tags = ['cluster'];
  const { manager } = deps;

  app.get('/api/cluster/nodes', { schema: { tags, summary: 'Worker nodes with health and active runs; mode standalone has none' } }, async () =>
    deps.cluster ? { mode: 'manager', workers: deps.cluster.nodes() } : { mode: 'standalone', workers: [] },
  );

  app.get(
    '/api/cluster/streams',
    { schema: { tags, summary: 'Placements of the running streams (a single-slot view each in standalone mode)' } },
    async () => ({
      streams: deps.cluster
        ? deps.cluster.streams()
        : manager
            .list()
            .map((p) => manager.placement(p.name))
            .filter((v) => v !== undefined),
    }),
  );
  // Sharded batch pipelines (issue 33) and how many targets each worker polls; a device is found with GET /api/pipelines/{name}/shards?q=.
  app.get(
    '/api/cluster/shards',
    { schema: { tags, summary: 'Sharded batch pipelines (workers on a source that can split) and the targets each worker polls' } },
    async () => {
      const out = [];
      for (const p of manager.list()) {
        if (!p.config.workers || p.config.schedule.type === 'stream') continue;
        const plugin = registry.source.get(p.config.source.type) as SourcePlugin | undefined;
        if (!plugin?.shard) continue;
        try {
          if (deps.cluster) {
            const v = await deps.cluster.shards(p.config, undefined, 0);
            out.push({ pipeline: p.name, run_id: v.run_id ?? null, running: v.running, total: v.total, workers: v.workers });
          } else {
            const total = (await plugin.shard.targets(p.config.source as never)).length;
            out.push({
              pipeline: p.name,
              run_id: null,
              running: !!p.active,
              total,
              workers: [{ worker_id: deps.settings.NODE_ID, shards: 1, targets: total }],
            });
          }
        } catch (e) {
          out.push({ pipeline: p.name, run_id: null, running: false, total: 0, workers: [], error: errorMessage(e) });
        }
      }
      return { pipelines: out };
    },
  );
}
