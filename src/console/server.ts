// The operator console (spec doc 1): a second HTTP server on SVC_CONSOLE_PORT, started by
// `svc serve` beside the daemon and on its own by `svc console`. Errors are `{detail}` like the
// daemon's API; the OpenAPI document is at /docs. Decisions: docs/console.md.
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import websocket from '@fastify/websocket';
import { httpError, httpErrorHandler, noRouteHandler } from '../core/http-errors.js';
import { serveUi } from '../api/ui.js';
import type { Logger } from '../observability/log.js';
import { listeningOn, listeningText } from '../observability/listening.js';
import { promptClose } from '../util/prompt-close.js';
import type { Settings } from '../settings.js';
import { version } from '../version.js';
import { AppSettingsStore } from './app-settings.js';
import { ConsoleCredentials } from './credentials.js';
import type { ConsoleDeps } from './deps.js';
import type { ServiceContext } from './service-context.js';
import { ConsoleEvents } from './events.js';
import { MibStore } from '../mib/store.js';
import mibBrowseRoutes from './routes/mib-browse.js';
import mibRoutes from './routes/mibs.js';
import settingsRoutes from './routes/settings.js';
import simulatorRoutes from './routes/simulator.js';
import fleetRoutes from './routes/fleet.js';
import statsRoutes from './routes/stats.js';
import trapRoutes from './routes/traps.js';
import walkRoutes from './routes/walk.js';
import wsRoutes from './routes/ws.js';
import { Sessions, type Session } from './sessions.js';
import { SimulatorService } from './simulator.js';
import { ConsoleStats } from './stats.js';
import { TrapService } from './traps.js';
import { decodeWatchOptions, mibSourceWatch } from '../engine/decode-watch.js';

/** Paths served without a session: probes, metadata, login, the API documentation. */
export const CONSOLE_OPEN_PATHS: ReadonlySet<string> = new Set(['/api/meta', '/api/health', '/api/healthz/ui', '/api/settings/login', '/api/ws']);

/** Request bodies of the console API (MIB uploads have their own limit). */
export const CONSOLE_BODY_LIMIT = 1 << 20;

export interface Console {
  app: FastifyInstance;
  deps: ConsoleDeps;
  url: string;
  stop(): Promise<void>;
}

/** Where the console keeps its state: credentials, application settings, simulator overrides. */
export function consoleStateDir(settings: Settings): string {
  return join(settings.STATE_DIR || join(dirname(settings.DB_PATH), 'state'), 'console');
}

/**
 * Starts the console. `mibs` is the daemon's MIB store under `svc serve` (one store for both
 * servers); `svc console` opens its own.
 */
export async function startConsole(settings: Settings, log: Logger, opts: { mibs?: MibStore } = {}): Promise<Console> {
  const dir = consoleStateDir(settings);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const clog = log.child({ component: 'console' });
  const sessionsByReq = new WeakMap<FastifyRequest, Session>();
  const events = new ConsoleEvents();
  const mibs = opts.mibs ?? (await MibStore.fromSettings(settings, clog, mibSourceWatch(decodeWatchOptions(dir, settings))));
  const ctx: ServiceContext = {
    settings,
    dir,
    log: clog,
    appSettings: await AppSettingsStore.open(dir),
    stats: new ConsoleStats(),
    events,
    mibs,
    publishStatus: () => events.publish('status', { simulator: simulator.status(), traps: traps.status() }),
  };
  const simulator = await SimulatorService.open(ctx);
  const traps = await TrapService.open(ctx);
  const unwatchMibs = mibs.onChange(() => events.publish('mibs', mibs.summary()));
  const deps: ConsoleDeps = {
    ...ctx,
    credentials: await ConsoleCredentials.open(dir, settings.AUTH_USERS, clog),
    sessions: new Sessions(),
    simulator,
    traps,
    session: (req) => sessionsByReq.get(req),
    fullState: () => ({ simulator: simulator.status(), traps: traps.status(), stats: ctx.stats.snapshot(), mibs: mibs.summary() }),
  };
  const app = await buildConsoleApp(deps, sessionsByReq);
  const close = async () => {
    unwatchMibs();
    await app.close();
    await simulator.close();
    await traps.close();
  };
  try {
    const address = await app.listen({ host: settings.HOST, port: settings.CONSOLE_PORT });
    const bound = listeningOn(app.server, false);
    clog.info({ listen: bound.listen, url: bound.url }, `svc console listening on ${listeningText(bound)}`);
    return { app, deps, url: address.replace('0.0.0.0', '127.0.0.1'), stop: close };
  } catch (e) {
    await close();
    throw e;
  }
}

export async function buildConsoleApp(deps: ConsoleDeps, sessionsByReq: WeakMap<FastifyRequest, Session>): Promise<FastifyInstance> {
  const app = Fastify({
    bodyLimit: CONSOLE_BODY_LIMIT,
    // OIDs in paths (/api/mibs/browse/node/{oid}) may be longer than the default 100 characters.
    routerOptions: { maxParamLength: 2048 },
    ajv: { customOptions: { allErrors: true, coerceTypes: true, useDefaults: true, removeAdditional: false } },
  }) as unknown as FastifyInstance;
  // A stop does not wait for a browser's idle keep-alive connections (src/util/prompt-close.ts).
  const connections = promptClose(app.server);
  app.addHook('preClose', async () => connections.begin());

  app.setErrorHandler(httpErrorHandler({ log: deps.log, logMessage: 'console request failed' }));
  // An empty body sent as application/json (clients that always set the header, e.g. on
  // POST /api/simulator/stop) is no body, not a 400; routes that need a body still say so (422).
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => (body === '' ? done(null, null) : json(req, body as string, done)));
  app.setNotFoundHandler(noRouteHandler);

  // Every /api route but the open ones needs X-Auth-Token (the WebSocket checks its token itself).
  // Decided by the matched route pattern, not the raw URL: the router decodes `/%61pi/...` to an
  // /api route that a check of the raw text would let through. No match: the 404 handler answers.
  app.addHook('onRequest', async (req) => {
    const route = req.routeOptions.url;
    if (route === undefined || !route.startsWith('/api/') || CONSOLE_OPEN_PATHS.has(route)) return;
    const s = deps.sessions.check(req.headers['x-auth-token'] as string | undefined);
    if (!s) throw httpError('HTTP_SESSION_INVALID', 'missing, expired or unknown X-Auth-Token: log in with POST /api/settings/login');
    sessionsByReq.set(req, s);
  });

  await app.register(swagger, {
    openapi: {
      info: {
        title: 'svc operator console',
        version,
        description:
          'SNMP simulator, walker, trap tools and MIB catalog (spec doc 1). Authenticate with X-Auth-Token (POST /api/settings/login). ' +
          'Live events: WebSocket GET /api/ws?token=<session token>, messages {type, data, timestamp} of type full_state, status, stats, mibs, trap, simulator_log; send "ping" for a pong. See docs/console.md.',
      },
      components: { securitySchemes: { token: { type: 'apiKey', in: 'header', name: 'X-Auth-Token' } } },
      security: [{ token: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  await app.register(websocket, { options: { maxPayload: 64 * 1024 } });

  const tags = ['meta'];
  app.get('/api/meta', { schema: { tags, summary: 'Product name and version (unauthenticated)' } }, async () => ({ name: 'svc-console', version }));
  app.get('/api/health', { schema: { tags, summary: 'Liveness (unauthenticated)' } }, async () => ({ status: 'ok' }));
  // The operator shell is the web UI at /ui/ (docs/ui.md); `ui` says whether this console serves it.
  const shell = deps.settings.UI_DIR && existsSync(join(deps.settings.UI_DIR, 'index.html')) ? '/ui/' : 'api-only';
  app.get(
    '/api/healthz/ui',
    { schema: { tags, summary: 'Operator shell probe (unauthenticated): ui is /ui/ when the web UI is served, else api-only' } },
    async () => ({ status: 'ok', ui: shell }),
  );
  await serveUi(app, { dir: deps.settings.UI_DIR, log: deps.log });
  for (const routes of [settingsRoutes, statsRoutes, wsRoutes, simulatorRoutes, fleetRoutes, walkRoutes, trapRoutes, mibRoutes, mibBrowseRoutes])
    await app.register(async (scope) => routes(scope, deps));
  await app.ready();
  return app;
}
