// Reverse proxy to the external schema registry (SVC_SCHEMA_REGISTRY_URL), used by
// /api/schemas/registry/{path}. The request's method, path, query, body and end-to-end headers are
// forwarded; the registry's basic-auth credentials are added here, so clients (the UI) never hold
// them. The daemon's own credentials (X-API-Key, an svc session token) are not passed on.
import type { IncomingHttpHeaders } from 'node:http';

/** How long one forwarded exchange (connect, headers and body) may take before it counts as unreachable. */
export const REGISTRY_TIMEOUT_MS = 30_000;

export interface RegistryTarget {
  /** Base URL without credentials and without a trailing slash. */
  base: string;
  /** `Basic ...` from SVC_SCHEMA_REGISTRY_USERNAME/PASSWORD, or from user:password in the URL. */
  authorization?: string;
}

/** The registry is configured wrongly (503, like an unset URL). */
export class RegistryConfigError extends Error {
  override name = 'RegistryConfigError';
}

/** The forwarded path is refused (400). */
export class RegistryPathError extends Error {
  override name = 'RegistryPathError';
}

/** The registry could not be reached or did not answer in time (502). */
export class RegistryUnreachableError extends Error {
  override name = 'RegistryUnreachableError';
}

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** The registry to forward to, or undefined when SVC_SCHEMA_REGISTRY_URL is empty. */
export function registryTarget(url: string, username = '', password = ''): RegistryTarget | undefined {
  if (!url.trim()) return undefined;
  let u: URL;
  try {
    u = new URL(url.trim());
  } catch {
    throw new RegistryConfigError(`SVC_SCHEMA_REGISTRY_URL '${url}' is not a valid URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new RegistryConfigError(`SVC_SCHEMA_REGISTRY_URL '${url}' must be an http:// or https:// URL`);
  // fetch refuses URLs with credentials; user:password in the URL becomes the basic-auth header,
  // unless the dedicated variables are set (they win).
  const fromUrl = u.username ? basic(decodeURIComponent(u.username), decodeURIComponent(u.password)) : undefined;
  u.username = '';
  u.password = '';
  u.search = '';
  u.hash = '';
  const authorization = username ? basic(username, password) : fromUrl;
  return { base: u.href.replace(/\/+$/, ''), ...(authorization ? { authorization } : {}) };
}

/**
 * The upstream URL for a raw path (as received, still percent-encoded, '' or starting with '/')
 * and raw query ('' or starting with '?'). Dot segments are refused, also encoded ones, so the
 * proxy cannot climb above a base URL that has a path.
 */
export function upstreamUrl(target: RegistryTarget, rawPath: string, rawQuery: string): string {
  for (const seg of rawPath.split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(seg);
    } catch {
      throw new RegistryPathError(`registry path segment '${seg}' is not valid percent-encoding`);
    }
    if (decoded === '..' || decoded === '.' || decoded.includes('\\'))
      throw new RegistryPathError(`registry path '${rawPath}' has a '${decoded}' segment: path traversal is refused`);
  }
  return target.base + rawPath + rawQuery;
}

/** Request headers that belong to one connection, or are the daemon's own credentials. */
const NOT_FORWARDED = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'expect',
  'accept-encoding', // fetch negotiates and decodes compression itself
  'x-api-key',
]);

/** Response headers relayed to the client besides the status and body. */
const RELAYED = ['content-type', 'location', 'retry-after'];

export interface ProxyRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body?: Buffer;
  /** Drop the client's Authorization header (it authenticated the request to svc itself). */
  dropClientAuthorization?: boolean;
}

export interface ProxyResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** The headers sent upstream. */
export function forwardedHeaders(target: RegistryTarget, req: ProxyRequest): Headers {
  const out = new Headers();
  const perConnection = new Set(
    String(req.headers.connection ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );
  for (const [name, value] of Object.entries(req.headers)) {
    const n = name.toLowerCase();
    if (value === undefined || NOT_FORWARDED.has(n) || perConnection.has(n)) continue;
    if (n === 'authorization' && (target.authorization || req.dropClientAuthorization)) continue;
    for (const v of Array.isArray(value) ? value : [value]) out.append(n, v);
  }
  if (target.authorization) out.set('authorization', target.authorization);
  return out;
}

/** One exchange with the registry; throws RegistryUnreachableError when there is no answer. */
export async function forward(target: RegistryTarget, req: ProxyRequest, timeoutMs = REGISTRY_TIMEOUT_MS): Promise<ProxyResponse> {
  const withBody = req.method !== 'GET' && req.method !== 'HEAD' && req.body !== undefined && req.body.length > 0;
  try {
    const res = await fetch(req.url, {
      method: req.method,
      headers: forwardedHeaders(target, req),
      ...(withBody ? { body: req.body } : {}),
      // 3xx are relayed, not followed: a redirect to another host must not receive the credentials.
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = Buffer.from(await res.arrayBuffer());
    const headers: Record<string, string> = {};
    for (const h of RELAYED) {
      const v = res.headers.get(h);
      if (v !== null) headers[h] = v;
    }
    return { status: res.status, headers, body };
  } catch (e) {
    throw new RegistryUnreachableError(`schema registry ${new URL(req.url).origin} is unreachable: ${reason(e, timeoutMs)}`);
  }
}

function reason(e: unknown, timeoutMs: number): string {
  const err = e as Error & { cause?: { code?: string; message?: string } };
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return `no answer within ${timeoutMs / 1000} seconds`;
  const cause = err.cause;
  if (cause?.code) return cause.message?.includes(cause.code) ? cause.message : `${cause.code}${cause.message ? ` (${cause.message})` : ''}`;
  return cause?.message ?? err.message;
}
