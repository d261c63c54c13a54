// A prompt close of an HTTP(S) server. Node's server.close() closes keep-alive connections that sit
// idle after a request, but not two others, which then hold the stop for up to the server's
// timeouts: a connection a browser opened ahead and has sent nothing on yet (Chromium does this),
// and one whose request was in flight when the close began (its answer says keep-alive, so it stays
// open afterwards). promptClose tracks the connections; `begin()` (at the start of the close) ends
// the idle ones at once, has answers still to come say `Connection: close` and ends each connection
// once its last answer is sent, and after `graceMs` destroys what is left. Upgraded connections
// (WebSockets) are left to their owner.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';

interface Conn {
  socket: Socket;
  /** Answers not yet finished on this connection. */
  open: Set<ServerResponse>;
}

export interface PromptClose {
  /** Starts the close: idle connections end now, busy ones after their answers, all within graceMs. */
  begin(): void;
}

/** The socket was handed to an 'upgrade' listener (Node frees its HTTP parser): not ours to end. */
const upgraded = (s: Socket) => (s as Socket & { parser?: unknown }).parser == null;

export function promptClose(server: Server, graceMs = 5000): PromptClose {
  const conns = new Map<Socket, Conn>();
  let closing = false;
  const track = (socket: Socket) => {
    conns.set(socket, { socket, open: new Set() });
    socket.once('close', () => conns.delete(socket));
  };
  // An HTTPS server's requests arrive on the TLS socket, not on the TCP one of 'connection'.
  server.on(server instanceof TlsServer ? 'secureConnection' : 'connection', track);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const c = conns.get(req.socket);
    if (!c) return;
    c.open.add(res);
    if (closing && !res.headersSent) res.setHeader('connection', 'close');
    res.once('close', () => {
      c.open.delete(res);
      if (closing && c.open.size === 0) c.socket.end();
    });
  });
  return {
    begin() {
      if (closing) return;
      closing = true;
      for (const c of conns.values()) {
        if (c.open.size === 0) {
          if (!upgraded(c.socket)) c.socket.destroy();
          continue;
        }
        for (const res of c.open) if (!res.headersSent) res.setHeader('connection', 'close');
      }
      const t = setTimeout(() => {
        for (const c of conns.values()) if (c.open.size > 0) c.socket.destroy();
      }, graceMs);
      t.unref();
    },
  };
}
