// The UDP side of the agent and the trap receiver: binding with errors a user can act on,
// start/stop, and their engine IDs.
import { randomBytes } from 'node:crypto';
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { SnmpInputError } from './values.js';

export const portError = (e: NodeJS.ErrnoException, port: number, host: string): Error => {
  const known =
    e.code === 'EADDRINUSE'
      ? new SnmpInputError(`UDP port ${port} on ${host} is already in use`, 409)
      : e.code === 'EACCES'
        ? new SnmpInputError(`UDP port ${port} is below 1024 and needs privilege (root or CAP_NET_BIND_SERVICE); use a port of 1024 or above`, 403)
        : e.code === 'EADDRNOTAVAIL'
          ? new SnmpInputError(`address ${host} is not local to this machine`, 400)
          : undefined;
  // The socket's error stays the cause: a listening source words it by its code (connector-runtime/listen.ts).
  return known ? Object.assign(known, { cause: e }) : e;
};

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

/**
 * An SNMP endpoint on a UDP socket (the agent, the trap receiver): start on host:port (0 picks a
 * free port, read back from `port`), stop, and the time it started (sysUpTime, engine time).
 */
export abstract class UdpService {
  protected socket: Socket | undefined;
  protected startedAt = Date.now();
  port = 0;

  constructor(
    private readonly where: () => { host?: string; port?: number },
    private readonly defaultPort: number,
    private readonly recvBufferSize: number,
  ) {}

  protected abstract onMessage(buf: Buffer, rinfo: RemoteInfo): void;

  /**
   * A datagram whose handling threw: the message is dropped and the service goes on (one packet
   * must never end the process). Subclasses log or count it.
   */
  protected onHandlerError(_e: unknown, _rinfo: RemoteInfo): void {}

  private handle(buf: Buffer, rinfo: RemoteInfo): void {
    try {
      this.onMessage(buf, rinfo);
    } catch (e) {
      try {
        this.onHandlerError(e, rinfo);
      } catch {
        // nothing more to do for this datagram
      }
    }
  }

  async start(): Promise<number> {
    if (this.socket) return this.port;
    const { host = '127.0.0.1', port = this.defaultPort } = this.where();
    const s = await bindUdp(host, port, this.recvBufferSize, (buf, rinfo) => this.handle(buf, rinfo));
    this.socket = s;
    this.port = s.address().port;
    this.startedAt = Date.now();
    return this.port;
  }

  async stop(): Promise<void> {
    const s = this.socket;
    this.socket = undefined;
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }

  get running(): boolean {
    return !!this.socket;
  }
}

/** RFC 3414 2.2.3: how far (seconds) an authenticated message's engine time may be from ours. */
export const TIME_WINDOW_S = 150;

/** RFC 3414 2.2.2: at 2147483647 boots the keys would have to change, so we stay below. */
export const MAX_ENGINE_BOOTS = 2147483646;

/** snmpEngineBoots (default 1). The caller keeps it and adds one per start (RFC 3414 2.2.2). */
export function engineBootsFrom(boots: number | undefined): number {
  const b = boots ?? 1;
  if (!Number.isInteger(b) || b < 0 || b > MAX_ENGINE_BOOTS) throw new SnmpInputError(`engine boots must be 0..${MAX_ENGINE_BOOTS}, got ${b}`);
  return b;
}

/** An engine ID from hex (an optional 0x), or a random one in net-snmp's enterprise format. */
export function engineIdFrom(hex: string | undefined): Buffer {
  const id = hex ? Buffer.from(hex.replace(/^0x/i, ''), 'hex') : Buffer.concat([Buffer.from('80001f8880', 'hex'), randomBytes(8)]);
  if (id.length < 5 || id.length > 32) throw new SnmpInputError('engine ID must be 5 to 32 bytes (hex)');
  return id;
}
