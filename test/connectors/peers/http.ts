// Peer fixture for the rest connector: a real node:http (or https) server inside the test process,
// on a loopback port of its own, that checks what a real API checks: the credentials of the
// configured auth scheme on every request (401 with WWW-Authenticate), the method (405 with Allow),
// the path (404 for a collection that does not exist), the Content-Type of a write (415) and that
// its body parses (400). A collection `/<channel>` serves its records with offset/limit or
// page/limit (per_page) paging and stores what is POSTed, PUT or PATCHed to it.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Collector, Peer, PeerFixture, Rec } from '../conformance.js';
import { pace } from '../../helpers/wait.js';

export type HttpAuth =
  | { type: 'none' }
  | { type: 'basic'; username: string; password: string }
  | { type: 'bearer'; token: string }
  | { type: 'apikey'; header: string; key: string };

export interface HttpPeerOptions {
  auth?: HttpAuth;
  /** PEM certificate and key: serve https. */
  tls?: { cert: string; key: string };
  /** Largest page the server hands out whatever limit asks (real APIs cap it). */
  maxPageSize?: number;
}

/** How a collection answers a read. */
export interface ServeOptions {
  /** `wrapped` (default): `{data: {items: [...]}, meta: {total}}`; `array`: the bare list. */
  shape?: 'wrapped' | 'array';
  /** Ignore the paging parameters and always answer the first `maxPageSize` records (a misconfigured API). */
  ignorePaging?: boolean;
  /** Answer reads with POST too (a query endpoint that takes its query in the body). */
  postQuery?: boolean;
  /** A raw body instead of records (any format), served with this content type. */
  raw?: { body: string; contentType: string };
}

export interface LoggedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
  status: number;
}

export interface HttpPeer {
  /** Base URL without a trailing slash: `http://127.0.0.1:PORT`. */
  url: string;
  port: number;
  /** Makes `/<channel>` a collection holding `records` (added to any already there). */
  serve(channel: string, records: Rec[], opts?: ServeOptions): void;
  /** Records written to `/<channel>`, in arrival order. */
  received(channel: string): Rec[];
  /** Every request, in order. */
  requests: LoggedRequest[];
  /** The next requests to `/<channel>` are answered with these statuses (one each), storing nothing; 0 answers normally. */
  failNext(channel: string, statuses: number[]): void;
  /** Answers on `/<channel>` wait this long first (the next `times` requests; default all). */
  delay(channel: string, ms: number, times?: number): void;
  /** Cuts every connection, refuses new ones for `downMs`, then listens on the same port again. */
  restart(downMs: number): Promise<void>;
  close(): Promise<void>;
}

interface Collection {
  records: Rec[];
  opts: ServeOptions;
}

const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json', ...headers });
  res.end(text);
};

function authorized(auth: HttpAuth, headers: IncomingMessage['headers']): boolean {
  switch (auth.type) {
    case 'none':
      return true;
    case 'basic':
      return headers.authorization === `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
    case 'bearer':
      return headers.authorization === `Bearer ${auth.token}`;
    case 'apikey':
      return headers[auth.header.toLowerCase()] === auth.key;
  }
}

/** Parses a write body by its Content-Type, as an ingest API would. */
function parseBody(contentType: string, body: string): Rec[] | { status: number; error: string } {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  try {
    if (type === 'application/json') {
      const v = JSON.parse(body) as unknown;
      return (Array.isArray(v) ? v : [v]) as Rec[];
    }
    if (type === 'application/x-ndjson')
      return body
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as Rec);
  } catch (e) {
    return { status: 400, error: `body is not valid ${type}: ${(e as Error).message}` };
  }
  return { status: 415, error: `unsupported content type '${contentType}'; send application/json or application/x-ndjson` };
}

export async function startHttpPeer(opts: HttpPeerOptions = {}): Promise<HttpPeer> {
  const auth = opts.auth ?? { type: 'none' };
  const maxPage = opts.maxPageSize ?? 1000;
  const collections = new Map<string, Collection>();
  const received = new Map<string, Rec[]>();
  const failures = new Map<string, number[]>();
  const delays = new Map<string, { ms: number; left: number }>();
  const requests: LoggedRequest[] = [];

  const read = (res: ServerResponse, c: Collection, query: URLSearchParams) => {
    if (c.opts.raw) return send(res, 200, c.opts.raw.body, { 'content-type': c.opts.raw.contentType });
    const size = Math.min(Number(query.get('limit') ?? query.get('per_page') ?? maxPage), maxPage);
    let from = 0;
    if (!c.opts.ignorePaging) {
      if (query.has('offset')) from = Number(query.get('offset'));
      else if (query.has('page')) from = (Number(query.get('page')) - 1) * size;
    }
    if (!Number.isInteger(from) || from < 0 || !Number.isInteger(size) || size < 1)
      return send(res, 400, { error: 'offset, page and limit must be positive integers' });
    const items = c.records.slice(from, from + size);
    send(res, 200, c.opts.shape === 'array' ? items : { data: { items }, meta: { total: c.records.length, offset: from } });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const ch of req) chunks.push(ch as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const u = new URL(req.url ?? '/', 'http://peer');
    const channel = decodeURIComponent(u.pathname.slice(1));
    const entry: LoggedRequest = { method: req.method ?? '', path: u.pathname, query: u.searchParams, headers: req.headers, body, status: 0 };
    requests.push(entry);
    const answer = (status: number, b: unknown, headers?: Record<string, string>) => {
      entry.status = status;
      send(res, status, b, headers);
    };
    const wait = delays.get(channel);
    if (wait && wait.left > 0) {
      wait.left--;
      await pace(wait.ms); // answers slowly on purpose
    }
    if (!authorized(auth, req.headers)) {
      const scheme = auth.type === 'basic' ? 'Basic realm="peer"' : auth.type === 'bearer' ? 'Bearer realm="peer"' : 'ApiKey';
      return answer(401, { error: 'unauthorized' }, { 'www-authenticate': scheme });
    }
    const planned = failures.get(channel);
    const injected = planned?.shift();
    if (injected) return answer(injected, { error: 'injected failure' });
    const allow = 'GET, POST, PUT, PATCH, OPTIONS';
    const c = collections.get(channel);
    switch (req.method) {
      case 'OPTIONS':
        entry.status = 204;
        res.writeHead(204, { allow });
        return res.end();
      case 'GET':
        if (!c) return answer(404, { error: `no collection '${channel}'` });
        entry.status = 200;
        return read(res, c, u.searchParams);
      case 'POST':
      case 'PUT':
      case 'PATCH': {
        if (req.method === 'POST' && c?.opts.postQuery) {
          entry.status = 200;
          return read(res, c, u.searchParams);
        }
        const parsed = parseBody(req.headers['content-type'] ?? '', body);
        if (!Array.isArray(parsed)) return answer(parsed.status, { error: parsed.error });
        const list = received.get(channel) ?? [];
        list.push(...parsed);
        received.set(channel, list);
        return answer(req.method === 'POST' ? 201 : 200, { stored: parsed.length });
      }
      default:
        return answer(405, { error: `method ${req.method} not allowed` }, { allow });
    }
  };

  const { port, restart, close: closeServer } = await loopbackServer(opts.tls, handle, (res, e) => send(res, 500, { error: e.message }));

  return {
    url: `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    requests,
    serve(channel, records, o = {}) {
      const c = collections.get(channel) ?? { records: [], opts: o };
      c.records.push(...records);
      c.opts = { ...c.opts, ...o };
      collections.set(channel, c);
    },
    received: (channel) => received.get(channel) ?? [],
    failNext(channel, statuses) {
      failures.set(channel, [...(failures.get(channel) ?? []), ...statuses]);
    },
    delay(channel, ms, times = Infinity) {
      delays.set(channel, { ms, left: times });
    },
    restart,
    close: closeServer,
  };
}

/**
 * A node:http (or https, with `tls`) server on a free loopback port, running `handle` for each
 * request (`fail` answers when it throws, unless headers went out already). restart(downMs): cuts
 * every connection, refuses new ones for `downMs`, then listens on the same port again.
 */
export async function loopbackServer(
  tls: { cert: string; key: string } | undefined,
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<unknown>,
  fail: (res: ServerResponse, e: Error) => void,
) {
  const server: Server = tls ? createHttpsServer({ cert: tls.cert, key: tls.key }) : createHttpServer();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((e: Error) => {
      if (!res.headersSent) fail(res, e);
    });
  });
  server.on('clientError', (_e, socket) => socket.destroy());
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const port = (server.address() as AddressInfo).port;
  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return {
    port,
    close,
    async restart(downMs: number) {
      await close();
      await pace(downMs); // the peer is down this long
      await listen(port);
    },
  };
}

/** A self-signed certificate for 127.0.0.1 made with openssl (key and cert PEM). */
export async function selfSignedCert(dir: string): Promise<{ cert: string; key: string }> {
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  await promisify(execFile)(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { timeout: 30_000 },
  );
  return { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') };
}

const TOKEN = 'right-token';

export const httpPeer: PeerFixture = {
  type: 'rest',
  badConfig: { role: 'source', set: { auth_type: 'digest' }, path: 'auth_type' },
  async start(): Promise<Peer> {
    const peer = await startHttpPeer({ auth: { type: 'bearer', token: TOKEN } });
    return {
      source: {
        config: (ch) => ({
          type: 'rest',
          url: `${peer.url}/${ch}`,
          auth_type: 'bearer',
          token: TOKEN,
          response_path: 'data.items',
          paginate: true,
          page_size: 100,
          total_path: 'meta.total',
        }),
        prepare: async (ch) => peer.serve(ch, []),
        async publish(ch, bodies) {
          peer.serve(
            ch,
            bodies.map((b) => JSON.parse(b.toString('utf8')) as Rec),
          );
        },
      },
      sink: {
        config: (ch) => ({ type: 'rest', url: `${peer.url}/${ch}`, auth_type: 'bearer', token: TOKEN }),
        async collect(ch): Promise<Collector> {
          return { records: () => peer.received(ch), close: async () => {} };
        },
      },
      wrongPort: (cfg) => ({ ...cfg, url: String(cfg.url).replace(/:\d+\//, ':1/') }),
      wrongCredentials: (cfg) => ({ ...cfg, token: 'wrong-token' }),
      disrupt: () => peer.restart(1000),
      stop: () => peer.close(),
    };
  },
};
