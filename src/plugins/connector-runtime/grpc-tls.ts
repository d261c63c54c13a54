// gRPC over TLS with grpc-js on Node 26: what every connector's gRPC client needs (type-only
// import: grpc-js itself is loaded by the connector, on first use).
import { isIP } from 'node:net';
import type { ChannelCredentials } from '@grpc/grpc-js';

/**
 * TLS credentials that send the server name (SNI) only when it is a host name. grpc-js sets the
 * target's host (or grpc.ssl_target_name_override) as tls.connect's servername whatever it is, and
 * Node 26 refuses an IP address there (ERR_INVALID_ARG_VALUE; SNI is for host names, RFC 6066 3),
 * so a target given by address could not connect. Without servername, Node checks the certificate
 * against the connection's host, the IP address, as before (and against the name override when
 * set, gnmi's tls_server_name, through grpc-js's own checkServerIdentity). The one place that reaches into grpc-js: the secure
 * connector's connectionOptions, read when it connects. Used by every connector that speaks gRPC
 * over TLS (gnmi, the otlp sink).
 */
export function serverNameOnlyForHostNames(creds: ChannelCredentials): ChannelCredentials {
  const create = creds._createSecureConnector.bind(creds);
  creds._createSecureConnector = (...args) => {
    const connector = create(...args);
    const options = (connector as { connectionOptions?: { servername?: string } }).connectionOptions;
    if (options?.servername !== undefined && isIP(options.servername) !== 0) delete options.servername;
    return connector;
  };
  return creds;
}
