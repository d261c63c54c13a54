// GET /api/ws?token=<session token>: the live event channel (spec doc 1 section 6). A client gets
// `full_state` on connect, then every hub event and a `stats` push every stats_push_interval_s;
// `ping` (text or {"type":"ping"}) is answered with {"type":"pong"}. Without a valid token the
// socket is closed with code 4401.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type {} from '@fastify/websocket';
import type { WebSocket } from 'ws';
import type { ConsoleDeps } from '../deps.js';
import { eventText } from '../events.js';

export const WS_UNAUTHORIZED = 4401;

export default async function wsRoutes(app: FastifyInstance, deps: ConsoleDeps) {
  app.get(
    '/api/ws',
    { websocket: true, schema: { tags: ['events'], summary: 'WebSocket: full_state, status, stats, mibs, trap, simulator_log (token query parameter)' } },
    (socket: WebSocket, req: FastifyRequest<{ Querystring: { token?: string } }>) => {
      const token = req.query.token;
      if (!deps.sessions.check(token)) {
        socket.close(WS_UNAUTHORIZED, 'unauthorized: log in (POST /api/settings/login) and connect with ?token=<token>');
        return;
      }
      // A session that expired or was logged out ends its socket at the next message.
      const send = (text: string) => {
        if (socket.readyState !== socket.OPEN) return;
        if (!deps.sessions.check(token)) return socket.close(WS_UNAUTHORIZED, 'session ended');
        socket.send(text);
      };
      send(eventText('full_state', deps.fullState()));
      const unsubscribe = deps.events.subscribe(send);
      // Checked every second against the current stats_push_interval_s, so a changed interval
      // applies to open sockets within a second.
      let lastStats = Date.now();
      const timer = setInterval(() => {
        if (Date.now() - lastStats < deps.appSettings.get().stats_push_interval_s * 1000 - 50) return;
        lastStats = Date.now();
        send(eventText('stats', deps.stats.snapshot()));
      }, 1000);
      socket.on('message', (raw) => {
        const text = raw.toString();
        let type = text.trim();
        try {
          type = (JSON.parse(text) as { type?: string }).type ?? type;
        } catch {
          /* plain text */
        }
        if (type === 'ping') send(eventText('pong'));
      });
      socket.on('close', () => {
        clearInterval(timer);
        unsubscribe();
      });
    },
  );
}
