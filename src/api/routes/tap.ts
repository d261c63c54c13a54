// GET /api/pipelines/{name}/tap: a WebSocket of live records at one stage of a pipeline (issue 29;
// the route, its query and frames: src/engine/tap-routes.ts). Authentication is the API's
// (X-API-Key or a session token; a browser, which cannot set headers on a WebSocket, sends its
// session token as `?token=`). The records come from the runs of this process or, in manager mode,
// from the workers that hold the pipeline's slots, relayed (ApiDeps.cluster, src/cluster/tap-relay.ts).
import type { FastifyInstance } from 'fastify';
import { hubFeed, tapRoute } from '../../engine/tap-routes.js';
import type { ApiDeps } from '../deps.js';

export default async function tapRoutes(app: FastifyInstance, deps: ApiDeps) {
  const { manager, cluster } = deps;
  tapRoute(app, {
    path: '/api/pipelines/:name/tap',
    tags: ['pipelines'],
    config: (name) => manager.get(name).config,
    running: (name) => manager.has(name) && manager.get(name).active !== undefined,
    feed: (name) => cluster?.tapFeed(name) ?? hubFeed(manager.tapHub(name)),
  });
}
