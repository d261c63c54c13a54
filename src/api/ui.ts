// The web UI (docs/ui.md): the built bundle of ui/ served at /ui by the daemon and by the console.
// index.html is rendered per response with a fresh CSP nonce and is never cached; the hashed files
// under assets/ never change under one name, so browsers may keep them for a year.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import fastifyStatic from '@fastify/static';
import { httpError, sendHttpError } from '../core/http-errors.js';
import type { Logger } from '../observability/log.js';
import { BUNDLED_UI_DIR } from '../settings.js';

/** What ui/vite.config.ts writes where a nonce belongs; replaced in every index.html response. */
export const NONCE_PLACEHOLDER = '__SVC_CSP_NONCE__';

/**
 * The policy of every /ui response. No 'unsafe-inline' anywhere: the only inline style element is
 * CodeMirror's, which carries the nonce (EditorView.cspNonce); connect-src 'self' also allows the
 * console's WebSocket on the same host and port.
 */
export function uiContentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'self' 'nonce-${nonce}'`,
    `style-src 'self' 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const IMMUTABLE = 'public, max-age=31536000, immutable';

function securityHeaders(reply: FastifyReply, nonce: string) {
  reply
    .header('content-security-policy', uiContentSecurityPolicy(nonce))
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY');
}

/**
 * Serves the UI found in `dir` at /ui/ (and redirects / and /ui there). An empty `dir` disables it;
 * a `dir` without index.html (the UI not built) answers 404 with what to do, and says so once in the log.
 */
export async function serveUi(app: FastifyInstance, opts: { dir: string; log: Logger }): Promise<void> {
  const { dir, log } = opts;
  if (!dir) return;
  const index = join(dir, 'index.html');
  if (!existsSync(index)) {
    // A source checkout that was never built is normal (info); a configured folder without a UI is a mistake (warn).
    const level = dir === BUNDLED_UI_DIR ? 'info' : 'warn';
    log[level](
      { ui_dir: dir },
      'web UI not served: no index.html in SVC_UI_DIR (build it with npm run build, or set SVC_UI_DIR to an empty string to disable it)',
    );
  }

  await app.register(async (scope) => {
    scope.addHook('onRequest', async (_req, reply) => securityHeaders(reply, randomBytes(16).toString('base64')));

    const sendIndex = async (reply: FastifyReply) => {
      let html: string;
      try {
        // Read per response: a rebuilt UI is picked up without a restart, and the file is small.
        html = await readFile(index, 'utf8');
      } catch {
        return sendHttpError(reply, httpError('HTTP_UI_NOT_BUILT', dir));
      }
      const nonce = randomBytes(16).toString('base64');
      securityHeaders(reply, nonce);
      return reply.header('cache-control', 'no-store').type('text/html; charset=utf-8').send(html.replaceAll(NONCE_PLACEHOLDER, nonce));
    };

    const hidden = { schema: { hide: true } };
    scope.get('/', hidden, async (_req, reply) => reply.redirect('/ui/'));
    scope.get('/ui', hidden, async (_req, reply) => reply.redirect('/ui/'));
    scope.get('/ui/', hidden, async (_req, reply) => sendIndex(reply));
    scope.get('/ui/index.html', hidden, async (_req, reply) => sendIndex(reply));

    if (existsSync(dir)) {
      await scope.register(fastifyStatic, {
        root: dir,
        prefix: '/ui/',
        index: false,
        // Cache headers are set here, per file, instead of by the plugin.
        cacheControl: false,
        setHeaders: (reply, path) => {
          reply.header('cache-control', /[\\/]assets[\\/]/.test(path.slice(dir.length - 1)) ? IMMUTABLE : 'no-cache');
        },
      });
    }
  });
}
