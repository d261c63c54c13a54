// The REST API (spec doc 2 section 4) as a Fastify app. Every error leaves as `{detail}` with the
// status of section 7: request validation 422, unknown routes 404, oversized bodies 413.
import { readFileSync } from 'node:fs';
import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { installAuth } from '../auth/guard.js';
import { traceRequests } from '../observability/tracing.js';
import { isDatabaseUnavailable } from '../store/index.js';
import type { ApiDeps } from './deps.js';
import { httpErrorHandler, httpErrorWith, noRouteHandler, sendHttpError } from '../core/http-errors.js';
import { SCHEMA_MAX_BYTES } from '../schemas/store.js';
import aiRoutes from './routes/ai.js';
import alertRoutes from './routes/alerts.js';
import authRoutes from './routes/auth.js';
import tapRoutes from './routes/tap.js';
import websocket from '@fastify/websocket';
import connectorRoutes from './routes/connectors.js';
import daemonRoutes from './routes/daemon.js';
import mibRoutes from './routes/mibs.js';
import pipelineRoutes from './routes/pipelines.js';
import runRoutes from './routes/runs.js';
import schemaRoutes from './routes/schemas.js';
import transformStateRoutes from './routes/transform-state.js';
import webhookRoutes from '../engine/webhook-routes.js';
import pluginRoutes from './routes/plugins.js';
import clusterRoutes from './routes/cluster.js';
import internalRoutes from './routes/internal.js';
import dlqRoutes from './routes/dlq.js';
import { serveUi } from './ui.js';
import { serveRedoc } from './redoc.js';
import { lazySchemaController } from './lazy-schema-compilers.js';
import { version } from '../version.js';
import { promptClose } from '../util/prompt-close.js';

/** Largest YAML or JSON body of the management API (webhooks have their own limit). */
export const API_BODY_LIMIT = 1 << 20;

export async function buildApp(deps: ApiDeps): Promise<FastifyInstance> {
  const { settings } = deps;
  const https = settings.TLS_CERTFILE && settings.TLS_KEYFILE ? { cert: readFileSync(settings.TLS_CERTFILE), key: readFileSync(settings.TLS_KEYFILE) } : null;
  const app = Fastify({
    bodyLimit: API_BODY_LIMIT,
    ...(https ? { https } : {}),
    // Validation errors list every problem, not the first only.
    ajv: { customOptions: { allErrors: true, coerceTypes: true, useDefaults: true, removeAdditional: false } },
    // Each route's schemas compiled on its first request, not all at start (issue 18).
    schemaController: lazySchemaController(),
    trustProxy: false,
  }) as unknown as FastifyInstance;
  // A stop does not wait for a browser's idle keep-alive connections (src/util/prompt-close.ts).
  const connections = promptClose(app.server);
  app.addHook('preClose', async () => connections.begin());
  traceRequests(app, deps.tracer);

  // Pipeline YAML arrives as text/plain or application/yaml.
  app.addContentTypeParser(['text/plain', 'application/yaml', 'application/x-yaml', 'text/yaml'], { parseAs: 'string' }, (_req, body, done) =>
    done(null, body),
  );

  const bodyLimitOf = (url: string) =>
    url.startsWith('/webhooks/')
      ? settings.WEBHOOK_MAX_BODY_BYTES
      : url.startsWith('/api/internal/transform-state/')
        ? settings.STATE_MAX_BYTES
        : /^\/api\/schemas\/registry([/?]|$)/.test(url)
          ? SCHEMA_MAX_BYTES
          : API_BODY_LIMIT;
  app.setErrorHandler(
    httpErrorHandler({
      log: deps.log,
      bodyLimit: bodyLimitOf,
      mediaTypeHint: (type) => `unsupported content type '${type}': send JSON, or pipeline YAML as text/plain or application/yaml`,
      unexpected(err, req, reply) {
        if (!isDatabaseUnavailable(err)) return false;
        // Connection-level failure (server down, connection dropped, file locked): the request was
        // not carried out and may be retried; not a bug of the request or of the daemon.
        const engine = deps.store.engine;
        const check =
          engine === 'sqlite'
            ? 'check that the SQLite file (SVC_DB_PATH) is readable and not locked by another process'
            : `check that the ${engine} server in SVC_DB_URL is running and accepts connections`;
        const reason = err.message || (err as { code?: string }).code || err.name;
        deps.log.warn({ err: reason, url: req.url }, 'database unavailable');
        sendHttpError(reply, httpErrorWith({ 'retry-after': '5' }, 'HTTP_DATABASE_UNAVAILABLE', reason, check));
        return true;
      },
    }),
  );
  app.setNotFoundHandler(noRouteHandler);

  await app.register(swagger, {
    openapi: {
      info: { title: 'svc pipeline engine API', version, description: 'Telecom data pipelines: registration, runs, alerts. Errors are {detail}.' },
      components: { securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' }, bearer: { type: 'http', scheme: 'bearer' } } },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  serveRedoc(app, { log: deps.log }); // /redoc with ReDoc served from the package, not a CDN (issue 17)

  // The tap's WebSocket (routes/tap.ts); a client sends nothing but pings.
  await app.register(websocket, { options: { maxPayload: 4096 } });
  installAuth(app, { settings, log: deps.log });
  if (deps.cluster) refuseOnStandby(app, deps.cluster);

  await serveUi(app, { dir: settings.UI_DIR, log: deps.log });
  for (const routes of [
    daemonRoutes,
    pluginRoutes,
    clusterRoutes,
    pipelineRoutes,
    tapRoutes,
    connectorRoutes,
    runRoutes,
    alertRoutes,
    authRoutes,
    webhookRoutes,
    schemaRoutes,
    transformStateRoutes,
    internalRoutes,
    mibRoutes,
    aiRoutes,
    dlqRoutes,
  ]) {
    await app.register(async (scope) => routes(scope, deps));
  }
  return app;
}

/**
 * A standby manager answers its probes and /metrics, and 503 to the rest of /api (and worker
 * callbacks, which retry): it has no pipelines loaded, and what it did would race the leader.
 */
function refuseOnStandby(app: FastifyInstance, cluster: NonNullable<ApiDeps['cluster']>) {
  app.addHook('onRequest', async (req, reply) => {
    const path = req.url.split('?')[0]!;
    if (!path.startsWith('/api/') || path === '/api/health' || path === '/api/ready') return;
    const l = cluster.leader();
    // Worker callbacks reach a new leader while it loads the pipelines (a stop it asks for then
    // waits for one); the rest of the API once it is ready.
    if (l.ready || (l.leader && path.startsWith('/api/internal/'))) return;
    const who = l.holder ? `the leader is ${l.holder} (epoch ${l.epoch})` : 'no leader is known yet';
    return sendHttpError(reply, httpErrorWith({ 'retry-after': '3' }, 'HTTP_STANDBY', who));
  });
}
