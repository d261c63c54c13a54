// What the influxdb source and sink share: the server fields, the HTTP client (the transport of
// @influxdata/influxdb-client 1.35, which speaks the v2 API: `Authorization: Token`, /api/v2/write,
// /api/v2/query), and errors in words a user can act on. The sink's `api: v1` reaches InfluxDB 1.x
// through the same transport on its own /write endpoint.
import http from 'node:http';
import https from 'node:https';
import { Type } from '@sinclair/typebox';
import type { HttpError, InfluxDB } from '@influxdata/influxdb-client';
import { errorMessage } from '../../../core/errors.js';
import { lazyModule } from '../../connector-runtime/lazy.js';

export const influxSdk = lazyModule(() => import('@influxdata/influxdb-client'));

/** An HTTP answer other than 2xx (the library's HttpError). */
export const isHttpError = (e: unknown): e is HttpError => influxSdk.loaded !== undefined && e instanceof influxSdk.loaded.HttpError;

/** Seconds one request may stay silent before it fails. */
export const TIMEOUT_S = 30;

export const serverFields = {
  url: Type.String({ minLength: 1, pattern: '^https?://', description: 'Base URL of the server (`http://influxdb.internal:8086`), without /api/v2.' }),
  token: Type.String({
    writeOnly: true,
    minLength: 1,
    description: "API token (`Authorization: Token ...`). With the sink's api: v1, `username:password` of an InfluxDB 1.x user.",
  }),
  org: Type.String({ minLength: 1, description: 'Organization name (or ID). InfluxDB 1.x ignores it.' }),
};

export interface ServerConfig {
  url: string;
  token: string;
  org: string;
}

/** `http://host:8086`: where requests go (the URL without credentials, query or trailing slash). */
export function target(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
  } catch {
    return url;
  }
}

/** A client with a keep-alive pool of its own (closed by close()). */
export class InfluxHttp {
  private constructor(
    readonly db: InfluxDB,
    private readonly agent: http.Agent,
  ) {}

  /** Loads the library and builds the client; no I/O until the first request. */
  static async open(url: string, auth: { token: string } | { basic: string }): Promise<InfluxHttp> {
    const { InfluxDB } = await influxSdk();
    const agent = url.startsWith('https:') ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
    const db = new InfluxDB({
      url,
      timeout: TIMEOUT_S * 1000,
      ...('token' in auth ? { token: auth.token } : { headers: { authorization: `Basic ${Buffer.from(auth.basic).toString('base64')}` } }),
      transportOptions: { agent },
    });
    return new InfluxHttp(db, agent);
  }

  /** One request; resolves with the status and headers of a 2xx answer, rejects with HttpError or a network error. */
  async send(path: string, body: string, method: 'GET' | 'POST', headers: Record<string, string> = {}, signal?: AbortSignal) {
    let status = 0;
    let respHeaders: Record<string, unknown> = {};
    const result = await this.db.transport.request(path, body, { method, headers, signal }, (h, s) => {
      status = s ?? 0;
      respHeaders = h as Record<string, unknown>;
    });
    return { status, headers: respHeaders, result };
  }

  close() {
    this.agent.destroy();
  }
}

/** The server's version from an answer's headers (`X-Influxdb-Version`), when it sent one. */
export function versionOf(headers: Record<string, unknown> | undefined): string | undefined {
  const v = headers?.['x-influxdb-version'];
  return typeof v === 'string' ? v : undefined;
}

/** An InfluxDB 1.x that predates the v2-compatible API (1.8). */
export function isOld1x(version: string | undefined): boolean {
  const m = /^v?1\.(\d+)/.exec(version ?? '');
  return m !== null && Number(m[1]) < 8;
}

/** The server's message in an HTTP error: JSON `message` (2.x) or `error` (1.x), else the body or X-Influxdb-Error. */
export function serverMessage(e: HttpError): string {
  const j = e.json as { message?: unknown; error?: unknown } | undefined;
  const m =
    typeof j?.message === 'string'
      ? j.message
      : typeof j?.error === 'string'
        ? j.error
        : (e.body ?? '').trim() || String(e.headers?.['x-influxdb-error'] ?? '') || e.statusMessage || '';
  return m.replace(/\s+$/, '');
}

/** One line for an error message: no line breaks, at most `max` characters. */
export const oneLine = (s: string, max = 300) => {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max)}...` : t;
};

/** A failure without an HTTP answer, in words a user can act on. */
export function networkError(e: unknown, where: string): string {
  const err = e as { code?: string; name?: string };
  if (err.name === 'RequestTimedOutError') return `${where}: no answer for ${TIMEOUT_S} s (timeout)`;
  if (err.code === 'ECONNREFUSED') return `${where}: connection refused (nothing listens there)`;
  if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') return `${where}: host not found (${err.code})`;
  if (err.code && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|EPROTO/.test(err.code))
    return `${where}: TLS failed (${err.code}): the server certificate is not trusted, or the port does not speak TLS`;
  const msg = errorMessage(e);
  return `${where}: ${msg}${err.code && !msg.includes(err.code) ? ` (${err.code})` : ''}`;
}

export type { HttpError };
