// Aggregated counters: GET /api/stats/ and DELETE /api/stats/ (reset; pushed over the WebSocket).
import type { FastifyInstance } from 'fastify';
import type { ConsoleDeps } from '../deps.js';

export default async function statsRoutes(app: FastifyInstance, deps: ConsoleDeps) {
  const tags = ['stats'];
  app.get('/api/stats/', { schema: { tags, summary: 'Counters of the simulator, trap tools, walker and MIB catalog, since `since`' } }, async () =>
    deps.stats.snapshot(),
  );
  app.delete('/api/stats/', { schema: { tags, summary: 'Reset every counter' } }, async () => {
    deps.stats.reset();
    const s = deps.stats.snapshot();
    deps.events.publish('stats', s);
    return s;
  });
}
