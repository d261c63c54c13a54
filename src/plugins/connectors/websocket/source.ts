// Source `websocket` (stream): every text or binary message the server sends is one message (one
// body for serializer_in). WebSocket has no acknowledgement, so this is at-most-once: what was
// received but not yet written when the run stops or the connection drops is gone. Backpressure
// stops reading the socket (ws pause/resume), so a slow sink slows the server through TCP.
// A connection that goes silent is found by a ping every 30 s (no pong by the next ping: lost).
import { Type } from '@sinclair/typebox';
import type WebSocket from 'ws';
import { errorMessage } from '../../../core/errors.js';
import { reconnectFields } from '../../connector-runtime/reconnect.js';
import { streamSource, type Message, type Session } from '../../connector-runtime/stream-source.js';
import { defineSource } from '../../types.js';
import { closeSocket, displayUrl, extraHeadersField, openSocket, urlField } from './client.js';

/** Milliseconds between pings; a ping unanswered by the next one means the connection is dead. */
export const PING_INTERVAL_MS = 30_000;

const config = Type.Object(
  {
    url: urlField,
    reconnect: Type.Boolean({
      default: true,
      description:
        'Connect again after the connection is lost or cannot be opened; false: the first loss (or a failed first connect) ends the stream with an error.',
    }),
    reconnect_delay: Type.Number({
      minimum: 0,
      default: 5,
      description: 'Seconds before the first reconnect attempt; doubles with each failed attempt in a row, up to 60 s.',
    }),
    extra_headers: extraHeadersField,
    max_reconnect_attempts: reconnectFields().max_reconnect_attempts,
  },
  { additionalProperties: false },
);

export default defineSource({
  key: 'websocket',
  summary: 'Receive messages from a WebSocket server (ws:// or wss://), one body per text or binary message.',
  mode: 'stream',
  delivery: {
    guarantee: 'at-most-once',
    why: 'WebSocket has no acknowledgement and a server does not send a message twice: messages received but not yet written when the connection drops or the run stops are lost, and nothing sent while disconnected is recovered.',
  },
  config,
  examples: [
    {
      title: 'Alarm feed with a bearer token',
      yaml: 'type: websocket\nurl: wss://nms.example.net/ws/alarms\nextra_headers:\n  Authorization: Bearer ${NMS_TOKEN:-change-me}',
    },
    { title: 'Fail the stream on the first disconnect', yaml: 'type: websocket\nurl: ws://10.0.0.7:9000/events\nreconnect: false' },
    {
      title: 'Reconnect after 1 s, give up after 10 failed attempts',
      yaml: 'type: websocket\nurl: ws://collector:8080/stream\nreconnect_delay: 1\nmax_reconnect_attempts: 10',
    },
  ],
  async test(c, { signal }) {
    const ws = await openSocket(c.url, c.extra_headers, signal);
    await closeSocket(ws).catch(() => {});
  },
  create(c, ctx) {
    const where = displayUrl(c.url);
    return streamSource(ctx, {
      type: 'websocket',
      reconnect: { reconnect_delay_seconds: c.reconnect_delay, max_reconnect_attempts: c.max_reconnect_attempts, disabled: !c.reconnect },
      acknowledges: false,
      async connect({ push, lost, signal }) {
        const meta = { url: where };
        let pinger: NodeJS.Timeout | undefined;
        const onLost = (err: Error) => {
          clearInterval(pinger);
          lost(err);
        };
        // Handlers go on in the `open` event itself: a message right behind the handshake is not missed.
        const attach = (ws: WebSocket) => {
          let alive = true;
          pinger = setInterval(() => {
            if (!alive) {
              ws.terminate();
              return onLost(new Error(`${where}: no answer to a ping within ${PING_INTERVAL_MS / 1000} s`));
            }
            alive = false;
            ws.ping();
          }, PING_INTERVAL_MS);
          pinger.unref();
          ws.on('pong', () => (alive = true));
          ws.on('message', (data: WebSocket.RawData, isBinary: boolean) => {
            alive = true;
            const body = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
            push({ body, meta: { ...meta, binary: isBinary } });
          });
          ws.on('error', (e) => onLost(new Error(`${where}: ${errorMessage(e)}`)));
          ws.on('close', (code: number, reason: Buffer) => {
            const why = reason.length ? `: ${reason.toString('utf8')}` : '';
            onLost(new Error(`${where}: connection closed (code ${code}${why})`));
          });
        };
        const ws = await openSocket(c.url, c.extra_headers, signal, attach);
        const session: Session<Message> = {
          pause: () => ws.pause(),
          resume: () => ws.resume(),
          async close() {
            clearInterval(pinger);
            ws.removeAllListeners('close');
            ws.removeAllListeners('message');
            ws.resume(); // a stopped stream is paused; the server's close frame must still be read
            await closeSocket(ws).catch(() => {});
          },
        };
        return session;
      },
    });
  },
});
