// Authentication and rate limiting of the HTTP API (spec doc 2 sections 5 and 8), as Fastify
// onRequest hooks. Call installAuth on the root instance before routes are registered.
//
// Rules, in order, for each request:
//  1. Rate limit (when a limiter is given or SVC_RATE_LIMIT > 0): per client IP (request.ip, so
//     the app's trustProxy decides what the IP is) on /api/* except the probes /api/health and
//     /api/ready -> 429 with Retry-After (seconds). Counted before authentication, so key guessing
//     and password guessing at /api/auth/login are limited too.
//  2. API key (when SVC_API_KEY is set): protected /api/* paths (all but /api/health, /api/ready,
//     /api/auth/login and the internal surfaces) need `X-API-Key: <key>` (constant-time compare) or
//     a valid session token `Authorization: Bearer <token>` from POST /api/auth/login -> else 401.
//     The key is never read from the query string.
//  3. Internal surfaces (/api/internal/*, /agent/* except /agent/health) follow
//     SVC_INTERNAL_AUTH_MODE: off passes; warn logs a missing or invalid key at WARNING and serves;
//     enforce answers 401. Without SVC_API_KEY they always pass. Session tokens do not count here.
//  Every other path (/, /metrics, /docs, /ui, /webhooks/..., ...) is not checked here.
//
// The path is classified twice, from the request URL (percent-decoded, duplicate slashes and dot
// segments resolved, case folded) and from the matched route pattern, and the stricter reading
// applies, so encodings the router accepts cannot slip a protected route past the checks.
import { posix } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HttpError, sendHttpError, type HttpErrorCode } from '../core/http-errors.js';
import type { Logger } from '../observability/log.js';
import type { Settings } from '../settings.js';
import { safeEqual } from './compare.js';
import { SlidingWindowLimiter } from './rate-limit.js';
import { bearerToken, verifyToken } from './tokens.js';

/** Exact paths that never need a key (spec doc 2 section 5.2). */
export const EXEMPT_PATHS: ReadonlySet<string> = new Set([
  '/api/health',
  '/api/ready',
  '/agent/health',
  '/metrics',
  '/',
  '/api/auth/login',
  '/favicon.ico',
  '/docs',
  '/redoc',
  '/openapi.json',
]);
/** Path prefixes that never need a key (spec section 5.2, plus everything under /docs/). */
export const EXEMPT_PREFIXES: readonly string[] = ['/webhooks/', '/ui', '/docs/'];
/** Probes: exempt from the key and from the rate limit, so orchestrator probes never fail. */
export const PROBE_PATHS: ReadonlySet<string> = new Set(['/api/health', '/api/ready']);

export type Surface = 'exempt' | 'api' | 'internal' | 'other';

export interface PathClass {
  surface: Surface;
  /** Counted by the rate limiter. */
  limited: boolean;
}

/** `url` (path and query) -> the path as the router would see it, case folded, for classification. */
export function canonicalPath(url: string): string {
  let path = url;
  const cut = path.search(/[?#]/);
  if (cut >= 0) path = path.slice(0, cut);
  try {
    path = decodeURIComponent(path);
  } catch {
    // not decodable: the router refuses it too; classify the raw text
  }
  path = posix.normalize(`/${path}`.replace(/\/{2,}/g, '/'));
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  return path.toLowerCase();
}

const under = (path: string, prefix: string) => path === prefix || path.startsWith(`${prefix}/`);

/** What a canonical path is: exempt, protected API, internal machine surface, or other. */
export function classifyPath(path: string): PathClass {
  const limited = under(path, '/api') && !PROBE_PATHS.has(path);
  if (EXEMPT_PATHS.has(path) || EXEMPT_PREFIXES.some((p) => path.startsWith(p))) return { surface: 'exempt', limited };
  if (under(path, '/api/internal') || under(path, '/agent')) return { surface: 'internal', limited };
  if (under(path, '/api')) return { surface: 'api', limited };
  return { surface: 'other', limited };
}

export interface InstallAuthOptions {
  settings: Settings;
  log: Logger;
  /** Rate limiter to use; default: one built from SVC_RATE_LIMIT / SVC_RATE_LIMIT_WINDOW when the limit is > 0. */
  limiter?: SlidingWindowLimiter;
}

export type InternalAuthMode = 'off' | 'warn' | 'enforce';

type KeyCheck = 'ok' | 'missing' | 'invalid';

/** Query parameters people try for keys; only used to explain why the key was not seen. */
const QUERY_KEY_NAMES = ['api_key', 'apikey', 'key', 'x-api-key', 'x_api_key'];

/** Installs the rate-limit and authentication hook; returns the limiter in use (if any). */
export function installAuth(app: FastifyInstance, opts: InstallAuthOptions): { limiter: SlidingWindowLimiter | undefined } {
  const { settings, log } = opts;
  const apiKey = settings.API_KEY;
  // Widened on purpose: Settings types INTERNAL_AUTH_MODE from its default ('warn') only.
  const mode: InternalAuthMode = settings.INTERNAL_AUTH_MODE;
  const limiter = opts.limiter ?? (settings.RATE_LIMIT > 0 ? new SlidingWindowLimiter(settings.RATE_LIMIT, settings.RATE_LIMIT_WINDOW) : undefined);

  if (settings.invalidInternalAuthMode !== undefined) {
    log.warn(
      { variable: 'SVC_INTERNAL_AUTH_MODE', value: settings.invalidInternalAuthMode },
      `SVC_INTERNAL_AUTH_MODE=${JSON.stringify(settings.invalidInternalAuthMode)} is not one of off, warn, enforce: treating it as warn`,
    );
  }
  if (mode === 'enforce' && !apiKey) {
    log.warn('SVC_INTERNAL_AUTH_MODE=enforce has no effect while SVC_API_KEY is empty: internal endpoints are not protected');
  }

  const checkKey = (request: FastifyRequest): KeyCheck => {
    const given = request.headers['x-api-key'];
    if (given === undefined || given === '') return 'missing';
    return typeof given === 'string' && safeEqual(given, apiKey) ? 'ok' : 'invalid';
  };

  const keyInQuery = (request: FastifyRequest): boolean => {
    const q = request.query;
    if (typeof q !== 'object' || q === null) return false;
    return Object.keys(q).some((k) => QUERY_KEY_NAMES.includes(k.toLowerCase()));
  };

  // A browser cannot set headers on a WebSocket: its session token may come as `?token=` on the
  // upgrade request (a short-lived session token, never the key; the tap, /api/pipelines/{name}/tap).
  const socketToken = (request: FastifyRequest): string | undefined => {
    if (request.headers.upgrade?.toLowerCase() !== 'websocket') return undefined;
    const t = (request.query as { token?: unknown } | undefined)?.token;
    return typeof t === 'string' && t !== '' ? t : undefined;
  };

  const refuse = (reply: FastifyReply, code: HttpErrorCode, detail: string, headers: Record<string, string> = {}) =>
    sendHttpError(reply, new HttpError(code, detail, headers));

  app.addHook('onRequest', async (request, reply) => {
    const views = [classifyPath(canonicalPath(request.url))];
    const pattern = request.routeOptions.url;
    if (pattern) views.push(classifyPath(canonicalPath(pattern)));

    if (limiter && views.some((v) => v.limited)) {
      const r = limiter.hit(request.ip);
      if (!r.allowed) {
        return refuse(
          reply,
          'HTTP_RATE_LIMITED',
          `rate limit exceeded: at most ${limiter.max} requests per ${limiter.windowMs / 1000} seconds per client (SVC_RATE_LIMIT, SVC_RATE_LIMIT_WINDOW); retry after ${r.retryAfterSeconds} seconds`,
          { 'retry-after': String(r.retryAfterSeconds) },
        );
      }
    }

    if (apiKey && views.some((v) => v.surface === 'api')) {
      const key = checkKey(request);
      if (key !== 'ok') {
        const token = bearerToken(request.headers.authorization) ?? socketToken(request);
        const user = token === undefined ? undefined : verifyToken(token, settings.AUTH_SECRET);
        if (user === undefined) {
          let detail: string;
          if (key === 'invalid') detail = 'invalid X-API-Key header: it does not match the key configured in SVC_API_KEY';
          else if (token !== undefined) detail = 'invalid or expired session token: log in again with POST /api/auth/login, or send the X-API-Key header';
          else if (keyInQuery(request)) detail = 'the API key is not accepted as a query parameter: send it in the X-API-Key header';
          else
            detail =
              'missing X-API-Key header: send the key configured in SVC_API_KEY, or log in with POST /api/auth/login and send Authorization: Bearer <token>';
          return refuse(reply, 'HTTP_API_KEY_INVALID', detail);
        }
      }
    }

    if (apiKey && mode !== 'off' && views.some((v) => v.surface === 'internal')) {
      const key = checkKey(request);
      if (key !== 'ok') {
        if (mode === 'enforce') {
          return refuse(
            reply,
            'HTTP_API_KEY_INVALID',
            key === 'missing'
              ? 'missing X-API-Key header: internal endpoints need the key configured in SVC_API_KEY (session tokens are not accepted here)'
              : 'invalid X-API-Key header: it does not match the key configured in SVC_API_KEY',
          );
        }
        log.warn(
          { method: request.method, path: request.url.split('?')[0], ip: request.ip, reason: key },
          `internal request with ${key === 'missing' ? 'no' : 'an invalid'} X-API-Key header served because SVC_INTERNAL_AUTH_MODE=warn (set enforce to refuse it)`,
        );
      }
    }
  });

  return { limiter };
}
