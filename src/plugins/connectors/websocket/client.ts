// What the websocket source and sink share: the url and extra_headers fields and the opening
// handshake (ws 8), with the server's refusal (a 401 at the upgrade) and network failures told in
// words a user can act on. The library never reconnects by itself; the runtime owns reconnects.
import { STATUS_CODES } from 'node:http';
import { Type } from '@sinclair/typebox';
import type WebSocket from 'ws';
import { errorMessage } from '../../../core/errors.js';
import { once } from '../../connector-runtime/lazy.js';

const wsLib = once(async () => (await import('ws')).default);

export const urlField = Type.String({
  minLength: 1,
  pattern: '^wss?://',
  description: 'ws:// or wss:// URL of the WebSocket endpoint (path and query included).',
});

export const extraHeadersField = Type.Record(Type.String(), Type.String(), {
  default: {},
  description:
    'Headers of the opening handshake (HTTP upgrade request): Authorization, cookies, API keys. Values of secret-looking names are masked in messages.',
});

/** Milliseconds the opening handshake (TCP, TLS, HTTP upgrade) may take. */
export const HANDSHAKE_TIMEOUT_MS = 10_000;

/** The URL for messages: no credentials, no query string (it may carry a key). */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return url;
  }
}

/**
 * Opens a WebSocket; resolves once the server accepted the upgrade. Rejects with the server's HTTP
 * answer when it refused (`401 Unauthorized`) or the network failure. `onOpen` runs synchronously
 * in the `open` event, before any message can be emitted: attach message and close handlers there.
 */
export async function openSocket(url: string, headers: Record<string, string>, signal?: AbortSignal, onOpen?: (ws: WebSocket) => void): Promise<WebSocket> {
  const WebSocketClass = await wsLib();
  return new Promise((resolve, reject) => {
    const where = displayUrl(url);
    let ws: WebSocket;
    try {
      ws = new WebSocketClass(url, { headers, handshakeTimeout: HANDSHAKE_TIMEOUT_MS, followRedirects: false });
    } catch (e) {
      reject(new Error(`${where}: ${errorMessage(e)}`));
      return;
    }
    let settled = false;
    const fail = (message: string) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      ws.removeAllListeners();
      ws.on('error', () => {});
      ws.terminate();
      reject(new Error(message));
    };
    const onAbort = () => fail(`${where}: stopped while connecting`);
    signal?.addEventListener('abort', onAbort, { once: true });
    ws.once('unexpected-response', (_req, res) => {
      const status = res.statusCode ?? 0;
      const hint = status === 401 || status === 403 ? ' (check the credentials in extra_headers)' : '';
      res.resume();
      fail(`${where}: the server refused the WebSocket upgrade with ${status} ${STATUS_CODES[status] ?? ''}`.trimEnd() + hint);
    });
    ws.once('error', (e: Error & { code?: string }) => {
      const code = e.code;
      if (code === 'ECONNREFUSED') return fail(`${where}: connection refused (nothing listens there)`);
      if (/Opening handshake has timed out/.test(e.message))
        return fail(`${where}: no answer to the opening handshake within ${HANDSHAKE_TIMEOUT_MS / 1000} s`);
      if (code && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) return fail(`${where}: the server certificate is not trusted (${code})`);
      fail(`${where}: ${e.message}${code && !e.message.includes(code) ? ` (${code})` : ''}`);
    });
    ws.once('open', () => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      ws.removeAllListeners('unexpected-response');
      ws.removeAllListeners('error');
      onOpen?.(ws);
      resolve(ws);
    });
  });
}

/**
 * Closes with the close handshake (code 1000) and resolves when the server answered it. Rejects when
 * the connection ended without the server's close frame (code 1006: cut) or after `ms` without an
 * answer (the socket is then cut).
 */
export function closeSocket(ws: WebSocket, ms = HANDSHAKE_TIMEOUT_MS): Promise<void> {
  if (ws.readyState === ws.CLOSED) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`the server did not answer the close handshake within ${ms / 1000} s`));
    }, ms);
    ws.once('close', (code: number) => {
      clearTimeout(timer);
      if (code === 1006) reject(new Error('the connection was cut before the close handshake completed (code 1006)'));
      else resolve();
    });
    ws.on('error', () => {});
    ws.close(1000);
  });
}

/**
 * The config with its schema defaults filled in: test() may be handed a config that was not loaded
 * through the pipeline schema (the conformance suite passes the fixture's raw object).
 */
