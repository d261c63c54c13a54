// Binding a UDP socket for the agent and the trap receiver, with errors a user can act on.
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { SnmpInputError } from './values.js';

export const portError = (e: NodeJS.ErrnoException, port: number, host: string): Error =>
  e.code === 'EADDRINUSE'
    ? new SnmpInputError(`UDP port ${port} on ${host} is already in use`, 409)
    : e.code === 'EACCES'
      ? new SnmpInputError(`UDP port ${port} is below 1024 and needs privilege (root or CAP_NET_BIND_SERVICE); use a port of 1024 or above`, 403)
      : e.code === 'EADDRNOTAVAIL'
        ? new SnmpInputError(`address ${host} is not local to this machine`, 400)
        : e;

/** A socket bound to host:port (0: any free port) that hands each datagram to `onMessage`. */
export async function bindUdp(host: string, port: number, recvBufferSize: number, onMessage: (buf: Buffer, rinfo: RemoteInfo) => void): Promise<Socket> {
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new SnmpInputError(`port ${port} is not a UDP port (0-65535)`);
  const s = createSocket({ type: host.includes(':') ? 'udp6' : 'udp4', recvBufferSize });
  await new Promise<void>((resolve, reject) => {
    s.once('error', (e) => reject(portError(e, port, host)));
    s.bind(port, host, () => resolve());
  });
  // After the bind, errors of single datagrams (ICMP unreachable...) must not end the socket.
  s.removeAllListeners('error');
  s.on('error', () => undefined);
  s.on('message', onMessage);
  return s;
}
