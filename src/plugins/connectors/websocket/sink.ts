// Sink `websocket`: for each batch, connect, send one message per record (serializer_out's one
// record encoding: a text frame for JSON, NDJSON, CSV, XML and text output that is valid UTF-8, a
// binary frame otherwise), wait until every frame was written, and close with the close handshake.
// The server answering the close proves its WebSocket layer read every frame before it (TCP keeps
// them in order); WebSocket has no acknowledgement beyond that. A failure anywhere in the batch is
// a retryable WriteError: the runtime sends the whole batch again on a new connection.
import { isUtf8 } from 'node:buffer';
import { Type } from '@sinclair/typebox';
import type WebSocket from 'ws';
import { errorMessage, WriteError } from '../../../core/errors.js';
import { PeerPresence } from '../../connector-runtime/presence.js';
import type { Rec } from '../../types.js';
import { defineSink } from '../../types.js';
import { closeSocket, displayUrl, extraHeadersField, openSocket, urlField } from './client.js';

const config = Type.Object(
  {
    url: urlField,
    extra_headers: extraHeadersField,
  },
  { additionalProperties: false },
);

/** Encoders whose output is text: sent as text frames when the bytes are valid UTF-8. */
const TEXT_EXTENSIONS = new Set(['json', 'ndjson', 'csv', 'xml', 'txt']);

/** Sends every record and resolves when all frames were written to the socket (in order). */
/** Sends every record as one message; resolves with the bytes sent once all were handed to the socket. */
function sendAll(ws: WebSocket, records: Rec[], encode: (r: Rec) => Buffer, text: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    let pending = records.length;
    let failed = false;
    let bytes = 0;
    if (pending === 0) return resolve(0);
    const done = (err?: Error) => {
      if (failed) return;
      if (err) {
        failed = true;
        return reject(err);
      }
      if (--pending === 0) resolve(bytes);
    };
    for (const r of records) {
      const body = encode(r);
      bytes += body.length;
      ws.send(body, { binary: !(text && isUtf8(body)) }, done);
      if (failed) return;
    }
  });
}

export default defineSink({
  key: 'websocket',
  summary: 'Send each record as one WebSocket message; one connection per batch (connect, send, close).',
  accepts: 'records',
  delivery: {
    guarantee: 'at-most-once',
    why: "WebSocket has no acknowledgement: a batch counts as written once the server answered the close handshake after its messages, which proves the server's WebSocket layer read them, not that its application kept them. A batch that fails midway is sent again whole on a new connection (retry_count), so the server may see some messages twice.",
  },
  config,
  examples: [
    {
      title: 'JSON messages to a dashboard feed',
      yaml: 'type: websocket\nurl: wss://dash.example.net/ingest\nextra_headers:\n  Authorization: Bearer ${DASH_TOKEN:-change-me}\nretry_count: 3',
    },
    { title: 'Plain ws on the local network', yaml: 'type: websocket\nurl: ws://10.1.2.3:8080/pm' },
  ],
  async test(c, { signal }) {
    const ws = await openSocket(c.url, c.extra_headers, signal);
    await closeSocket(ws);
  },
  create(c, ctx) {
    const presence = new PeerPresence(ctx, 'websocket');
    const where = displayUrl(c.url);
    const text = TEXT_EXTENSIONS.has(ctx.encoder.extension);
    const encode = (r: Rec) => ctx.encoder.one(r);
    const failed = (e: unknown, cause?: unknown) => {
      const message = errorMessage(e).startsWith(where) ? errorMessage(e) : `${where}: ${errorMessage(e)}`;
      presence.lost(message);
      return new WriteError(`websocket: ${message}`, true, { cause: cause ?? e });
    };
    return {
      async write(batch) {
        const records = batch.records ?? [];
        if (records.length === 0) return;
        presence.connecting();
        let ws: WebSocket;
        try {
          ws = await openSocket(c.url, c.extra_headers, ctx.signal);
        } catch (e) {
          throw failed(e);
        }
        presence.answered();
        // The server closing or the socket failing before our close handshake fails the batch.
        let onEnd: (err: Error) => void = () => {};
        const ended = new Promise<never>((_, reject) => (onEnd = reject));
        ended.catch(() => {});
        ws.on('error', (e) => onEnd(e));
        ws.once('close', (code: number, reason: Buffer) =>
          onEnd(new Error(`the server closed the connection mid-batch (code ${code}${reason.length ? `: ${reason.toString('utf8')}` : ''})`)),
        );
        try {
          const bytes = await Promise.race([sendAll(ws, records, encode, text), ended]);
          ws.removeAllListeners('close');
          await Promise.race([closeSocket(ws), ended]);
          return { bytes };
        } catch (e) {
          ws.terminate();
          throw failed(e);
        }
      },
    };
  },
});
