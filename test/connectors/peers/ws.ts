// Peer fixture for the websocket connector: a real `ws` 8 server inside the test process on a
// loopback port of its own. Like a real endpoint it authenticates the opening handshake (the
// Authorization header, 401 otherwise, so extra_headers must reach it), serves only paths of the form
// /<channel> (404 otherwise), and records how each connection ended (close code, or cut). The source
// side sends messages to the connections on /<channel>; the sink side collects what arrives there.
import type { IncomingMessage } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Collector, Peer, PeerFixture, Rec } from '../conformance.js';

export interface WsPeerOptions {
  /** `Authorization: Bearer <token>` required at the handshake; unset: no check. */
  token?: string;
  /** PEM certificate and key: serve wss:// (an https server underneath). */
  tls?: { cert: string; key: string };
}

export interface Received {
  body: Buffer;
  binary: boolean;
}

export interface WsPeer {
  /** Base URL without a trailing slash: `ws://127.0.0.1:PORT`. */
  url: string;
  port: number;
  /** Open server-side connections on /<channel>. */
  clients(channel: string): WebSocket[];
  /** Sends each body as one message to every connection on /<channel> (text frames unless `binary`). */
  send(channel: string, bodies: Buffer[], binary?: boolean): Promise<void>;
  /** Messages received on /<channel>, in order. */
  received(channel: string): Received[];
  /** Handshakes, accepted or refused: path, headers and the HTTP status given. */
  handshakes: { path: string; headers: IncomingMessage['headers']; status: number }[];
  /** How connections on /<channel> ended: the close code (1000 = clean handshake) or 'cut'. */
  closes(channel: string): (number | 'cut')[];
  /** Cuts every connection (TCP reset, no close handshake). */
  dropAll(): void;
  /** The next connection on /<channel> is cut after it received `n` messages. */
  cutAfter(channel: string, n: number): void;
  close(): Promise<void>;
}

export async function startWsPeer(opts: WsPeerOptions = {}): Promise<WsPeer> {
  const byChannel = new Map<string, Set<WebSocket>>();
  const received = new Map<string, Received[]>();
  const closes = new Map<string, (number | 'cut')[]>();
  const handshakes: WsPeer['handshakes'] = [];
  const cuts = new Map<string, number>();
  const channelOf = (url: string | undefined) => decodeURIComponent(new URL(url ?? '/', 'ws://peer').pathname.slice(1));

  let https: HttpsServer | undefined;
  if (opts.tls) {
    https = createHttpsServer({ cert: opts.tls.cert, key: opts.tls.key });
    await new Promise<void>((resolve) => https!.listen(0, '127.0.0.1', resolve));
  }
  const wss = new WebSocketServer({
    ...(https ? { server: https } : { host: '127.0.0.1', port: 0 }),
    verifyClient: ({ req }, cb) => {
      const path = new URL(req.url ?? '/', 'ws://peer').pathname;
      let status = 101;
      if (opts.token !== undefined && req.headers.authorization !== `Bearer ${opts.token}`) status = 401;
      else if (!/^\/[\w.-]+$/.test(path)) status = 404;
      handshakes.push({ path, headers: req.headers, status });
      if (status === 101) cb(true);
      else cb(false, status, status === 401 ? 'Unauthorized' : 'Not Found', status === 401 ? { 'WWW-Authenticate': 'Bearer realm="peer"' } : {});
    },
  });
  if (!https) {
    await new Promise<void>((resolve, reject) => {
      wss.once('listening', resolve);
      wss.once('error', reject);
    });
  }
  wss.on('connection', (ws, req) => {
    const ch = channelOf(req.url);
    const set = byChannel.get(ch) ?? new Set();
    set.add(ws);
    byChannel.set(ch, set);
    const cutAt = cuts.get(ch);
    cuts.delete(ch);
    let got = 0;
    ws.on('message', (data, isBinary) => {
      const list = received.get(ch) ?? [];
      list.push({ body: Buffer.isBuffer(data) ? data : Buffer.concat(data as Buffer[]), binary: isBinary });
      received.set(ch, list);
      if (++got === cutAt) ws.terminate();
    });
    let code: number | undefined;
    ws.on('close', (c) => {
      code = c;
      set.delete(ws);
      const list = closes.get(ch) ?? [];
      // 1006: no close frame came (the other side vanished); a handshake gives the code it sent.
      list.push(code === 1006 ? 'cut' : code);
      closes.set(ch, list);
    });
    ws.on('error', () => {});
  });
  const port = ((https ?? wss).address() as AddressInfo).port;

  return {
    url: `${https ? 'wss' : 'ws'}://127.0.0.1:${port}`,
    port,
    handshakes,
    clients: (ch) => [...(byChannel.get(ch) ?? [])],
    async send(ch, bodies, binary = false) {
      const targets = [...(byChannel.get(ch) ?? [])];
      if (targets.length === 0) throw new Error(`no client is connected on /${ch}`);
      await Promise.all(
        targets.flatMap((ws) => bodies.map((b) => new Promise<void>((resolve, reject) => ws.send(b, { binary }, (e) => (e ? reject(e) : resolve()))))),
      );
    },
    received: (ch) => received.get(ch) ?? [],
    closes: (ch) => closes.get(ch) ?? [],
    dropAll() {
      for (const c of wss.clients) c.terminate();
    },
    cutAfter(ch, n) {
      cuts.set(ch, n);
    },
    async close() {
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      if (https) await new Promise<void>((resolve) => https!.close(() => resolve()));
    },
  };
}

const TOKEN = 'right-token';
const auth = { Authorization: `Bearer ${TOKEN}` };

export const wsPeer: PeerFixture = {
  type: 'websocket',
  badConfig: { role: 'source', set: { url: 'http://127.0.0.1/x' }, path: 'url' },
  async start(): Promise<Peer> {
    const peer = await startWsPeer({ token: TOKEN });
    return {
      source: {
        config: (ch) => ({ type: 'websocket', url: `${peer.url}/${ch}`, extra_headers: auth }),
        async publish(ch, bodies) {
          await peer.send(ch, bodies);
        },
      },
      sink: {
        config: (ch) => ({ type: 'websocket', url: `${peer.url}/${ch}`, extra_headers: auth }),
        async collect(ch): Promise<Collector> {
          return { records: () => peer.received(ch).map((m) => JSON.parse(m.body.toString('utf8')) as Rec), close: async () => {} };
        },
      },
      wrongPort: (cfg) => ({ ...cfg, url: String(cfg.url).replace(/:\d+\//, ':1/') }),
      wrongCredentials: (cfg) => ({ ...cfg, extra_headers: { Authorization: 'Bearer wrong-token' } }),
      async disrupt() {
        peer.dropAll();
      },
      stop: () => peer.close(),
    };
  },
};
