// A loopback TCP proxy in the test process: connectors reach a peer through it, and a test cuts
// their connections at a chosen moment (all at once, or once a number of bytes went to the client:
// a download cut mid-file) while the peer itself keeps running.
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Cuts every open connection. */
  dropAll(): void;
  /**
   * Cuts every open connection once `bytes` more bytes went from the peer to the clients (`down`: a
   * download cut mid-file) or from the clients to the peer (`up`: an upload cut mid-file).
   */
  dropAfter(bytes: number, direction?: 'down' | 'up'): void;
  close(): Promise<void>;
}

export async function tcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let armed: { left: number; direction: 'down' | 'up' } | undefined;
  const dropAll = () => {
    for (const [a, b] of pairs) {
      a.destroy();
      b.destroy();
    }
    pairs.clear();
  };
  const server: Server = createServer((client) => {
    const upstream = connect({ host: targetHost, port: targetPort });
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    const forward = (from: Socket, to: Socket, direction: 'down' | 'up') =>
      from.on('data', (chunk: Buffer) => {
        if (armed?.direction === direction) {
          armed.left -= chunk.length;
          if (armed.left <= 0) {
            armed = undefined;
            // What was already sent arrives; the rest never does.
            to.write(chunk, () => dropAll());
            return;
          }
        }
        if (!to.write(chunk)) {
          from.pause();
          to.once('drain', () => from.resume());
        }
      });
    forward(upstream, client, 'down');
    forward(client, upstream, 'up');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    dropAll,
    dropAfter(bytes, direction = 'down') {
      armed = { left: bytes, direction };
    },
    async close() {
      dropAll();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
