// The one wording of a listener that cannot bind (every listening source: syslog, flow, otlp), by
// the socket's error code, saying what to do; and the brief bind a listening source's test() makes
// to prove its port is free and allowed.
import { createServer } from 'node:net';
import { SourceError } from '../../core/errors.js';

/**
 * The error of a failed bind of `host` at `at` (`udp 0.0.0.0:514`, `tcp 127.0.0.1:4318 (HTTP)`);
 * `others` names what else usually holds such a port (`another syslog daemon such as rsyslogd, or
 * another pipeline`).
 */
export function listenError(e: unknown, host: string, at: string, others: string): SourceError {
  // The socket's code, on the error or on the one it wraps (snmp/udp.ts's bindUdp).
  const code = (e as NodeJS.ErrnoException).code ?? ((e as { cause?: unknown }).cause as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'EADDRINUSE':
      return new SourceError(`cannot listen on ${at}: the port is already in use (${others}); stop it or choose another port`);
    case 'EACCES':
    case 'EPERM':
      return new SourceError(
        `cannot listen on ${at}: ports below 1024 need privileges; run svc with CAP_NET_BIND_SERVICE (setcap cap_net_bind_service=+ep "$(command -v node)") or listen on a port >= 1024 and point the senders (or a port forward) at it`,
      );
    case 'EADDRNOTAVAIL':
      return new SourceError(`cannot listen on ${at}: ${host} is not an address of this machine; use 0.0.0.0 (every interface) or one of its addresses`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new SourceError(`cannot listen on ${at}: the host name ${host} does not resolve; use an IP address`);
    default:
      return new SourceError(`cannot listen on ${at}: ${(e as Error).message}`);
  }
}

/** Binds a TCP port on `host` and releases it at once; rejects with the socket's error. */
export async function probeTcpListen(host: string, port: number): Promise<void> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, () => resolve());
  });
  await new Promise<void>((r) => probe.close(() => r()));
}
