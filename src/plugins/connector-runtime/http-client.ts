// One HTTP client per component, for the connectors that speak plain HTTP (rest, ves, prometheus_rw's
// sink, prometheus_scrape), and the reading of a failed exchange into messages a user can act on.
// A caller that must bound what it takes (a scraped body) gives send() a maxBodyBytes. It uses
// undici 7's own `request` with an Agent of its own (not Node's global fetch): one code path whether verify_ssl is true or false
// (Node 20's fetch bundles undici 6; handing it an undici 7 Agent works today but mixes two versions
// of the dispatcher API), a connection pool the component closes at the end of its run, and no
// Response/stream objects per request.
import { readFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import type { Agent } from 'undici';
import { errorMessage } from '../../core/errors.js';
import { once } from './lazy.js';

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export interface HttpRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: Uint8Array | string;
  signal?: AbortSignal;
}

/** `GET https://host/path` for messages: no query string (it may carry keys), no credentials. */
export const describeTarget = (method: string, url: URL) => `${method} ${url.origin}${url.pathname}`;

export const statusText = (status: number) => `${status}${STATUS_CODES[status] ? ` ${STATUS_CODES[status]}` : ''}`;

/** The start of a response body for an error message: one line, at most `max` characters. */
export function excerpt(body: Buffer, max = 200): string {
  const t = body
    .subarray(0, max * 4)
    .toString('utf8')
    .replace(/\s+/g, ' ')
    .trim();
  return t.length > max ? `${t.slice(0, max)}...` : t;
}

const CERT_CODES = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|ERR_TLS/;

/** A failed exchange (no HTTP response) in words a user can act on. */
export function networkError(e: unknown, target: string, timeoutS: number): string {
  const err = e as { code?: string; name?: string; cause?: { code?: string; message?: string } };
  const code = err.code ?? err.cause?.code;
  if (err.name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return `${target}: no complete response within ${timeoutS} s (timeout)`;
  }
  if (code === 'ECONNREFUSED') return `${target}: connection refused (nothing listens there)`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `${target}: host not found (${code})`;
  if (code && CERT_CODES.test(code)) {
    return `${target}: the server certificate is not trusted (${code}); give the server a certificate from a trusted CA, or set verify_ssl: false to accept it anyway`;
  }
  const msg = errorMessage(e);
  const cause = err.cause?.message && !msg.includes(err.cause.message) ? `: ${err.cause.message}` : '';
  return `${target}: ${msg}${cause}${code && !msg.includes(code) ? ` (${code})` : ''}`;
}

const undici = once(() => import('undici'));

/** An answer whose body is larger than the caller takes (HttpClient.send's maxBodyBytes). */
/** `Retry-After` in ms: delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(h: HttpResponse['headers'], now = Date.now()): number | undefined {
  const v = h['retry-after'];
  const t = (Array.isArray(v) ? v[0] : v)?.trim();
  if (!t) return undefined;
  if (/^\d+$/.test(t)) return Number(t) * 1000;
  const d = Date.parse(t);
  return Number.isNaN(d) ? undefined : Math.max(0, d - now);
}

export class BodyTooLargeError extends Error {
  override name = 'BodyTooLargeError';
  constructor(readonly maxBytes: number) {
    super(`the response body is larger than ${maxBytes} bytes`);
  }
}

/** PEM files of a TLS client (paths): the CAs the server's certificate is checked against (instead of the system's), and a client certificate for mutual TLS. */
export interface TlsFiles {
  ca?: string;
  cert?: string;
  key?: string;
}

/** A TLS file that cannot be read: a configuration mistake, not a passing network failure (callers do not retry it). */
export class TlsFilesError extends Error {
  override name = 'TlsFilesError';
}

/** The PEM contents of `files`, read now (callers read them at their first connection: create() does no I/O). */
export function readTlsFiles(files: TlsFiles): { ca?: Buffer; cert?: Buffer; key?: Buffer } {
  const out: { ca?: Buffer; cert?: Buffer; key?: Buffer } = {};
  for (const k of ['ca', 'cert', 'key'] as const) {
    const path = files[k];
    if (path === undefined) continue;
    try {
      out[k] = readFileSync(path);
    } catch (e) {
      throw new TlsFilesError(`cannot read the TLS ${k === 'ca' ? 'CA' : k} file ${path}: ${errorMessage(e)}`);
    }
  }
  return out;
}

/** An HTTP client for one component: its own keep-alive pool, TLS policy and timeout. */
export class HttpClient {
  private agent?: Agent;

  constructor(private readonly opts: { verifySsl: boolean; timeoutS: number; tls?: TlsFiles }) {}

  private dispatcher(Agent: typeof import('undici').Agent): Agent {
    const ms = this.opts.timeoutS * 1000;
    // Read once, at the first request; a file that cannot be read throws TlsFilesError from send().
    this.agent ??= new Agent({
      connect: { timeout: ms, ...(this.opts.tls ? readTlsFiles(this.opts.tls) : {}), ...(this.opts.verifySsl ? {} : { rejectUnauthorized: false }) },
      headersTimeout: ms,
      bodyTimeout: ms,
    });
    return this.agent;
  }

  /**
   * One exchange, bounded by the timeout from connect to the last body byte; resolves with any HTTP
   * status (the caller judges it) and rejects only when there is no complete response.
   */
  async send(req: HttpRequest, opts: { maxBodyBytes?: number } = {}): Promise<HttpResponse> {
    const { Agent, request } = await undici();
    const limit = AbortSignal.timeout(this.opts.timeoutS * 1000);
    const signal = req.signal ? AbortSignal.any([req.signal, limit]) : limit;
    const res = await request(req.url, {
      method: req.method as 'GET',
      headers: req.headers,
      body: req.body,
      dispatcher: this.dispatcher(Agent),
      signal,
    });
    const max = opts.maxBodyBytes;
    if (max === undefined) return { status: res.statusCode, headers: res.headers, body: Buffer.from(await res.body.arrayBuffer()) };
    // Bounded: a body past `max` is cut off as it streams in, never held whole.
    const declared = Number(res.headers['content-length']);
    if (declared > max) {
      res.body.destroy();
      throw new BodyTooLargeError(max);
    }
    const parts: Buffer[] = [];
    let n = 0;
    for await (const part of res.body as AsyncIterable<Buffer>) {
      n += part.length;
      if (n > max) {
        res.body.destroy();
        throw new BodyTooLargeError(max);
      }
      parts.push(part);
    }
    return { status: res.statusCode, headers: res.headers, body: Buffer.concat(parts, n) };
  }

  async close() {
    const a = this.agent;
    this.agent = undefined;
    await a?.close().catch(() => {});
  }
}
