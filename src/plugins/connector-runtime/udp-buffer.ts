// UDP listeners (syslog, flow) ask the kernel for a receive buffer that absorbs bursts; Linux may
// grant less (net.core.rmem_max). Said once at the start, with the fix, rather than discovered
// as drops under load.
import type { Socket } from 'node:dgram';
import type { Logger } from '../../observability/log.js';

/** Warns when `socket` got a smaller receive buffer than `asked` bytes. */
export function warnIfRecvBufferCapped(socket: Socket, asked: number, connector: string, log: Logger) {
  // Linux reports twice the size it granted (its bookkeeping overhead); less than asked means rmem_max capped it.
  const got = process.platform === 'linux' ? Math.floor(socket.getRecvBufferSize() / 2) : socket.getRecvBufferSize();
  if (got >= asked) return;
  log.warn(
    { connector, buffer_size: asked, granted: got },
    `${connector}: the kernel granted a UDP receive buffer of ${got} bytes instead of buffer_size ${asked} (capped by net.core.rmem_max); raise it (sysctl -w net.core.rmem_max=${asked}) to absorb larger bursts`,
  );
}
