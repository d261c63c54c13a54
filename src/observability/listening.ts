// The address a server really listens on, for its start line: the bound address and port (port 0
// resolved), whether that is every interface, and a URL that reaches it from this machine. Fastify's
// listen() answers http://127.0.0.1:PORT for 0.0.0.0, which hides that every interface listens.
import type { AddressInfo } from 'node:net';

export interface Listening {
  /** The bound address and port: `0.0.0.0:8765`, `127.0.0.1:8765`, `[::]:8765`. */
  listen: string;
  /** The bound port (the real one when 0 was asked for). */
  port: number;
  /** True when the address is every interface (0.0.0.0 or ::). */
  every_interface: boolean;
  /** A URL that reaches the server from this machine. */
  url: string;
}

const EVERY = new Set(['0.0.0.0', '::']);

/** What `server` (a listening net/http/https server) is bound to; `https` picks the URL's scheme. */
export function listeningOn(server: { address(): AddressInfo | string | null }, https: boolean): Listening {
  const a = server.address();
  if (a === null || typeof a === 'string') return { listen: String(a), port: 0, every_interface: false, url: String(a) };
  const v6 = a.address.includes(':');
  const every = EVERY.has(a.address);
  const host = (addr: string) => (addr.includes(':') ? `[${addr}]` : addr);
  const local = every ? (v6 ? 'localhost' : '127.0.0.1') : host(a.address);
  return {
    listen: `${v6 ? `[${a.address}]` : a.address}:${a.port}`,
    port: a.port,
    every_interface: every,
    url: `${https ? 'https' : 'http'}://${local}:${a.port}`,
  };
}

/** For the start line: `0.0.0.0:8765 (every interface; from this machine http://127.0.0.1:8765)`, `127.0.0.1:8765 (http://127.0.0.1:8765)`. */
export function listeningText(l: Listening): string {
  return l.every_interface ? `${l.listen} (every interface; from this machine ${l.url})` : `${l.listen} (${l.url})`;
}
