// Source `syslog` (stream): listens for syslog messages over UDP (RFC 5426, one message per
// datagram) or TCP (RFC 6587: octet counting or LF framing, detected per connection), parses
// RFC 5424 and RFC 3164 (parse.ts) and hands each message on as one record (to serializer_in json
// as it is, to any other as JSON bytes). Syslog has no acknowledgement: at-most-once. Built on streamSource(): units of up to 1,000
// messages, the shared queue and metrics; above HIGH_WATER queued messages the session is paused:
// TCP connections stop being read (the senders' windows fill and they wait), UDP datagrams cannot
// be held back and are dropped, counted and logged (rate-limited).
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, isIPv6, type Server, type Socket } from 'node:net';
import { Type, type Static } from '@sinclair/typebox';
import { SourceError } from '../../../core/errors.js';
import { listenError } from '../../connector-runtime/listen.js';
import { rateLimitedWarn } from '../../connector-runtime/rate-limited-warn.js';
import { reconnectFields } from '../../connector-runtime/reconnect.js';
import { warnIfRecvBufferCapped } from '../../connector-runtime/udp-buffer.js';
import { streamSource, type Message, type Session } from '../../connector-runtime/stream-source.js';
import { defineSource, type LintIssue, type PluginContext, type Rec } from '../../types.js';
import { Framer } from './framing.js';
import { parseSyslog } from './parse.js';

/** Most messages in one unit. */
const MAX_BATCH = 1000;
/** Queued messages above which TCP connections stop being read and UDP datagrams are dropped. */
export const HIGH_WATER = 20_000;
const config = Type.Object(
  {
    host: Type.String({
      default: '0.0.0.0',
      minLength: 1,
      description: 'Address to listen on: 0.0.0.0 (every IPv4 interface), :: (IPv6 and IPv4), or one address of this machine.',
    }),
    port: Type.Integer({
      minimum: 1,
      maximum: 65535,
      default: 514,
      description:
        'Port to listen on. Ports below 1024 need privileges (root or CAP_NET_BIND_SERVICE); a port >= 1024 with the senders pointed at it avoids that.',
    }),
    protocol: Type.Union([Type.Literal('udp'), Type.Literal('tcp')], {
      default: 'udp',
      description:
        'udp: one message per datagram (RFC 5426); a datagram cannot be held back, so under backpressure it is dropped and counted. tcp: octet counting or LF framing (RFC 6587), detected per connection; backpressure stops reading the connections.',
    }),
    buffer_size: Type.Integer({
      minimum: 1024,
      default: 65535,
      description:
        'UDP: the socket receive buffer in bytes (SO_RCVBUF), which absorbs bursts while the pipeline is busy; the kernel caps it at net.core.rmem_max (a warning says so). TCP: unused (the kernel sizes TCP buffers itself).',
    }),
    encoding: Type.String({
      default: 'utf-8',
      minLength: 1,
      description: 'Character encoding of the messages (a WHATWG encoding label: utf-8, latin1, windows-1252, shift_jis...). Invalid bytes become U+FFFD.',
    }),
    max_message_size: Type.Integer({
      minimum: 64,
      default: 65535,
      description:
        'Longest message in bytes; a longer one is cut to this size (its rest skipped up to the next frame) and a warning is logged. Applies to TCP frames and UDP datagrams.',
    }),
    max_connections: Type.Integer({
      minimum: 1,
      default: 64,
      description: 'TCP: most connections at once; further ones are closed on accept and logged (rate-limited).',
    }),
    ...reconnectFields(),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

/** How a listen address is written in messages: `udp 0.0.0.0:514`, `tcp [::1]:6514`. */
const where = (c: Pick<Config, 'protocol' | 'host' | 'port'>) => `${c.protocol} ${isIPv6(c.host) ? `[${c.host}]` : c.host}:${c.port}`;

/** The error of a failed bind, saying what to do. */
export const bindError = (e: unknown, c: Pick<Config, 'protocol' | 'host' | 'port'>): SourceError =>
  listenError(e, c.host, where(c), 'another syslog daemon such as rsyslogd, or another pipeline');

const udpType = (host: string) => (isIPv6(host) ? 'udp6' : 'udp4');

function bindUdp(c: Config, onMessage?: (msg: Buffer, rinfo: { address: string; port: number; family: string }) => void): Promise<UdpSocket> {
  return new Promise((resolve, reject) => {
    const s = createSocket({ type: udpType(c.host), recvBufferSize: c.buffer_size });
    const fail = (e: Error) => {
      s.close();
      reject(bindError(e, c));
    };
    s.once('error', fail);
    if (onMessage) s.on('message', onMessage);
    s.bind({ address: c.host, port: c.port, exclusive: true }, () => {
      s.off('error', fail);
      resolve(s);
    });
  });
}

function listenTcp(c: Config, server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    const fail = (e: Error) => {
      server.close();
      reject(bindError(e, c));
    };
    server.once('error', fail);
    server.listen({ host: c.host, port: c.port, exclusive: true }, () => {
      server.off('error', fail);
      resolve();
    });
  });
}

/** `address:port`, IPv6 in brackets. */
const peerOf = (address: string | undefined, port: number | undefined) => (address && isIPv6(address) ? `[${address}]:${port}` : `${address}:${port}`);

/** The decoder of the configured encoding (UTF-8 through Buffer, the fast path). */
function decoderOf(encoding: string): (b: Buffer) => string {
  if (/^utf-?8$/i.test(encoding.trim())) return (b) => b.toString('utf8');
  const td = new TextDecoder(encoding.trim());
  return (b) => td.decode(b);
}

/**
 * The message of a frame or datagram: trailing LF, CR and NUL removed (rsyslog's RFC 5424
 * forwarding template ends with LF, inside an octet-counted frame too); for a UDP datagram also a
 * stray RFC 6587 length prefix (`logger --octet-count --udp`).
 */
export function messageText(text: string, udp = true): string {
  let end = text.length;
  while (end > 0) {
    const ch = text.charCodeAt(end - 1);
    if (ch !== 10 && ch !== 13 && ch !== 0) break;
    end--;
  }
  if (end < text.length) text = text.slice(0, end);
  if (!udp) return text;
  const c0 = text.charCodeAt(0);
  if (c0 >= 49 && c0 <= 57) {
    const m = /^([1-9]\d{0,8}) </.exec(text);
    if (m && Number(m[1]) === Buffer.byteLength(text) - m[1]!.length - 1) return text.slice(m[1]!.length + 1);
  }
  return text;
}

/** What a running listener has counted (tests and logs). */
export interface SyslogStats {
  received: number;
  dropped: number;
  truncated: number;
  refused_connections: number;
}

function lint(c: Config): LintIssue[] {
  try {
    new TextDecoder(c.encoding.trim());
    return [];
  } catch {
    return [{ path: 'encoding', message: `unknown encoding '${c.encoding}': use a WHATWG encoding label such as utf-8, latin1 or windows-1252` }];
  }
}

/** The listener of one session: UDP socket or TCP server, pushing one JSON message per syslog message. */
async function listen(c: Config, ctx: PluginContext, push: (m: Message) => void, lost: (e: Error) => void, stats: SyslogStats): Promise<Session<Message>> {
  const decode = decoderOf(c.encoding);
  const log = ctx.log;
  const truncations = rateLimitedWarn(log, (n) => `syslog: ${n} message(s) longer than max_message_size (${c.max_message_size} bytes) were truncated`);
  const emit = (raw: Buffer, peer: string, truncated: boolean) => {
    if (truncated) {
      stats.truncated++;
      truncations.add(1, { connector: 'syslog', peer, max_message_size: c.max_message_size });
    }
    const text = messageText(decode(raw), c.protocol === 'udp');
    if (!text) return;
    stats.received++;
    // The record itself goes on (no JSON round trip with serializer_in json); the bytes count as bytes_in.
    push({ body: raw, record: parseSyslog(text, { peer, protocol: c.protocol }) as unknown as Rec });
  };

  if (c.protocol === 'udp') {
    let dropping = false;
    const drops = rateLimitedWarn(
      log,
      (n) =>
        `syslog: the pipeline is behind; ${n} UDP datagram(s) dropped while its queue was full (UDP senders cannot be slowed down: the sinks are slower than the senders)`,
    );
    const socket = await bindUdp(c, (msg, rinfo) => {
      if (dropping) {
        if (ctx.signal.aborted) return; // stopping: not a loss to report
        stats.dropped++;
        ctx.telemetry?.dropped?.('queue_full', 1);
        drops.add(1, { connector: 'syslog', listen: where(c), queued: HIGH_WATER });
        return;
      }
      emit(
        msg.length > c.max_message_size ? msg.subarray(0, c.max_message_size) : msg,
        rinfo.family === 'IPv6' ? `[${rinfo.address}]:${rinfo.port}` : `${rinfo.address}:${rinfo.port}`,
        msg.length > c.max_message_size,
      );
    });
    socket.on('error', (e) => lost(e));
    warnIfRecvBufferCapped(socket, c.buffer_size, 'syslog', log);
    return {
      pause() {
        dropping = true;
      },
      resume() {
        dropping = false;
      },
      async close() {
        drops.stop();
        truncations.stop();
        await new Promise<void>((r) => socket.close(() => r()));
      },
    };
  }

  // TCP
  const sockets = new Set<Socket>();
  let paused = false;
  const refusals = rateLimitedWarn(log, (n) => `syslog: ${n} TCP connection(s) refused: max_connections (${c.max_connections}) reached`);
  const fallbacks = rateLimitedWarn(
    log,
    (n) => `syslog: ${n} octet-counted TCP connection(s) sent a frame without a length prefix; read as LF-framed from there`,
  );
  const losses = rateLimitedWarn(log, (n) => `syslog: ${n} TCP connection(s) closed in the middle of an octet-counted frame; its partial message is dropped`);
  const server = createServer({ noDelay: true });
  server.maxConnections = c.max_connections;
  server.on('drop', (d) => {
    stats.refused_connections++;
    refusals.add(1, { connector: 'syslog', peer: peerOf(d?.remoteAddress, d?.remotePort), max_connections: c.max_connections });
  });
  server.on('connection', (socket) => {
    const peer = peerOf(socket.remoteAddress, socket.remotePort);
    sockets.add(socket);
    if (paused) socket.pause();
    const framer = new Framer({
      maxSize: c.max_message_size,
      onMessage: (m, truncated) => emit(m, peer, truncated),
      onFallback: (detail) => fallbacks.add(1, { connector: 'syslog', peer, detail }),
    });
    let ended = false;
    const finish = () => {
      if (ended) return;
      ended = true;
      if (framer.end() > 0) losses.add(1, { connector: 'syslog', peer });
    };
    socket.on('data', (chunk: Buffer) => framer.push(chunk));
    socket.on('end', () => {
      finish(); // what the sender wrote before closing is handed on
      socket.end();
    });
    socket.on('error', (e) => log.debug({ connector: 'syslog', peer, err: e.message }, 'syslog: TCP connection error'));
    socket.on('close', () => {
      finish();
      sockets.delete(socket);
    });
  });
  await listenTcp(c, server);
  server.on('error', (e) => lost(e));
  return {
    pause() {
      paused = true;
      for (const s of sockets) s.pause();
    },
    resume() {
      paused = false;
      for (const s of sockets) s.resume();
    },
    async close() {
      const closed = new Promise<void>((r) => server.close(() => r()));
      for (const s of sockets) s.destroy();
      await closed;
      for (const w of [refusals, fallbacks, losses, truncations]) w.stop();
    },
  };
}

export default defineSource({
  key: 'syslog',
  summary: 'Receive syslog over UDP or TCP (RFC 5424 and RFC 3164; octet counting or LF framing), one JSON record per message.',
  mode: 'stream',
  delivery: {
    guarantee: 'at-most-once',
    why: 'syslog has no acknowledgement: a sender never learns whether a message was received. UDP datagrams that arrive while the pipeline is behind (or the kernel buffer is full) are dropped and counted; TCP messages the kernel accepted are handed on, but those in flight when svc stops or fails are lost and no sender sends them again.',
  },
  config,
  lint,
  resources: (c) => [{ kind: 'listen', protocol: c.protocol, host: c.host, port: c.port, name: 'syslog' }],
  examples: [
    { title: 'UDP on the standard port, every interface', yaml: 'type: syslog\nport: 514' },
    {
      title: 'TCP (octet-counted or LF-framed) on an unprivileged port',
      yaml: 'type: syslog\nhost: 0.0.0.0\nport: 6514\nprotocol: tcp\nmax_connections: 256\nmax_message_size: 131072',
    },
    { title: 'UDP with a large receive buffer for bursts, Latin-1 devices', yaml: 'type: syslog\nport: 1514\nbuffer_size: 8388608\nencoding: latin1' },
  ],
  async test(c) {
    // Binds briefly and releases: proves the address and port are free and allowed.
    if (c.protocol === 'udp') {
      const s = await bindUdp(c);
      await new Promise<void>((r) => s.close(() => r()));
    } else {
      const server = createServer();
      await listenTcp(c, server);
      await new Promise<void>((r) => server.close(() => r()));
    }
  },
  create(c, ctx) {
    const stats: SyslogStats = { received: 0, dropped: 0, truncated: 0, refused_connections: 0 };
    const source = streamSource<Message>(ctx, {
      type: 'syslog',
      reconnect: c,
      acknowledges: false,
      maxBatch: MAX_BATCH,
      highWater: HIGH_WATER,
      connect: ({ push, lost }) => listen(c, ctx, push, lost, stats),
    });
    return Object.assign(source, { stats });
  },
});
