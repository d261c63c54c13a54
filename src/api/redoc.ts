// ReDoc offline (issue 17): /redoc renders /openapi.json with ReDoc's standalone bundle served by the
// daemon itself, never a CDN, so the page works on an isolated network and tells no third party
// who reads it. The bundle (MIT, its licence beside it) comes from the build output, dist/redoc/
// (npm run build copies it there: redoc is a devDependency, too heavy for the package), or in a
// source checkout from node_modules/redoc. It is served under /docs/, which needs no key like
// /redoc itself (spec doc 2 section 5.2), with a URL that changes with its content, so browsers
// may keep it for a year.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { httpError, sendHttpError } from '../core/http-errors.js';
import type { Logger } from '../observability/log.js';

export const REDOC_SCRIPT_PATH = '/docs/redoc.standalone.js';
const BUNDLE = 'redoc.standalone.js';
/** webpack's extracted licence comments; the bundle's first line points to it by this name. */
const LICENSE = `${BUNDLE}.LICENSE.txt`;
const IMMUTABLE = 'public, max-age=31536000, immutable';

/** The folder holding the bundle: dist/redoc beside dist/api, else the redoc package's bundles/. */
function findRedocBundle(): string | undefined {
  const built = fileURLToPath(new URL('../redoc/', import.meta.url));
  if (existsSync(join(built, BUNDLE))) return built;
  try {
    const dir = join(dirname(createRequire(import.meta.url).resolve('redoc/package.json')), 'bundles');
    return existsSync(join(dir, BUNDLE)) ? dir : undefined;
  } catch {
    return undefined;
  }
}

/** Read once per process (1 MB): its hash versions the URL the page refers to. */
let loaded: { dir: string; js: Buffer; version: string } | undefined;
function load(dir: string) {
  if (loaded?.dir !== dir) {
    const js = readFileSync(join(dir, BUNDLE));
    loaded = { dir, js, version: createHash('sha256').update(js).digest('hex').slice(0, 16) };
  }
  return loaded;
}

/**
 * The page's policy: nothing from another origin. The bundle itself asks for one image, Redocly's
 * logo on cdn.redoc.ly (hidden when it fails to load): blocked here, so reading the page offline
 * makes no request and online tells no third party. ReDoc's styled-components write inline styles,
 * and its search index runs in a worker made from a blob.
 */
const REDOC_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const page = (version: string) => `<!doctype html><html><head><title>svc API</title><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><redoc spec-url="/openapi.json"></redoc>
<script src="${REDOC_SCRIPT_PATH}?v=${version}"></script></body></html>`;

export function serveRedoc(app: FastifyInstance, opts: { log: Logger }) {
  const dir = findRedocBundle();
  const hidden = { schema: { hide: true } };
  const missing = `ReDoc is not installed: no ${BUNDLE} in dist/redoc or node_modules/redoc/bundles (npm run build copies it); the Swagger UI at /docs shows the same API`;
  if (!dir) opts.log.info('/redoc not served: ' + missing);
  app.get('/redoc', hidden, async (_req, reply) => {
    if (!dir) return sendHttpError(reply, httpError('HTTP_REDOC_MISSING', missing));
    // The page is tiny and names the bundle's current version: never cached.
    return reply
      .header('cache-control', 'no-cache')
      .header('content-security-policy', REDOC_CSP)
      .type('text/html; charset=utf-8')
      .send(page(load(dir).version));
  });
  app.get(REDOC_SCRIPT_PATH, hidden, async (_req, reply) => {
    if (!dir) return sendHttpError(reply, httpError('HTTP_REDOC_MISSING', missing));
    return reply.header('cache-control', IMMUTABLE).type('text/javascript; charset=utf-8').send(load(dir).js);
  });
  app.get(`/docs/${LICENSE}`, hidden, async (_req, reply) => {
    if (!dir || !existsSync(join(dir, LICENSE))) return sendHttpError(reply, httpError('HTTP_REDOC_MISSING', `no ${LICENSE} beside the ReDoc bundle`));
    return reply.type('text/plain; charset=utf-8').send(readFileSync(join(dir, LICENSE)));
  });
}
