// The cluster view (spec doc 2): nodes and stream placements. A manager's placements are its
// placement groups (src/cluster/placements.ts); standalone has no workers, and its placements are
// the single-slot views of the running streams.
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps.js';

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
}
