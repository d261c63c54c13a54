// What the mqtt source and sink share: the broker fields (host, port, credentials, TLS with a CA,
// protocol version), the socket to the broker, topic checks, and errors that say what to fix.
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { Type } from '@sinclair/typebox';
import { secret } from '../../../core/secrets.js';
import type { LintIssue } from '../../types.js';

export const DEFAULT_PORT = 1883;
/** Milliseconds before an unanswered connect (TCP, TLS, CONNACK) fails. */
export const CONNECT_TIMEOUT_MS = 10_000;
/** Keepalive announced in CONNECT; a broker silent for twice this long is taken as gone. */
export const KEEPALIVE_S = 30;

export const brokerFields = {
  host: Type.String({ minLength: 1, description: 'Broker host name or IP address.' }),
  port: Type.Integer({ minimum: 1, maximum: 65535, default: DEFAULT_PORT, description: 'Broker port (1883 plain, usually 8883 with TLS).' }),
  username: Type.Optional(Type.String({ description: 'User name; none: connect anonymously.' })),
  password: secret('Password of `username`; masked in every message.'),
  tls: Type.Boolean({
    default: false,
    description: 'Connect with TLS; the broker certificate is verified against `tls_ca_certs` (or the system CAs) and the host name.',
  }),
  tls_ca_certs: Type.Optional(
    Type.String({
      minLength: 1,
      description: 'PEM file with the CA certificate(s) that signed the broker certificate (with `tls: true`); none: the system CAs.',
    }),
  ),
  protocol_version: Type.Union([Type.Literal(5), Type.Literal(4)], {
    default: 5,
    description: 'MQTT 5 (default; reason codes, receive maximum) or 4 (MQTT 3.1.1, for brokers without MQTT 5).',
  }),
};

export interface BrokerConfig {
  host: string;
  port: number;
  username?: string;
  password?: string;
  tls: boolean;
  tls_ca_certs?: string;
  protocol_version: 4 | 5;
}

export const brokerAddress = (c: Pick<BrokerConfig, 'host' | 'port'>) => (isIP(c.host) === 6 ? `[${c.host}]:${c.port}` : `${c.host}:${c.port}`);

/** TLS options of node:tls for this config (the CA file read at connect, never in create()). */
export async function tlsOptions(c: BrokerConfig): Promise<{ ca?: Buffer; servername?: string; rejectUnauthorized: true }> {
  let ca: Buffer | undefined;
  if (c.tls_ca_certs) {
    try {
      ca = await readFile(c.tls_ca_certs);
    } catch (e) {
      throw new Error(`cannot read tls_ca_certs '${c.tls_ca_certs}': ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
    }
  }
  return { ca, servername: isIP(c.host) ? undefined : c.host, rejectUnauthorized: true };
}

/** Lint shared by source and sink. */
export function lintBroker(c: BrokerConfig): LintIssue[] {
  const issues: LintIssue[] = [];
  if (c.tls_ca_certs && !c.tls) issues.push({ path: 'tls_ca_certs', message: 'applies with tls: true only' });
  if (c.password !== undefined && c.username === undefined && c.protocol_version === 4)
    issues.push({ path: 'password', message: 'MQTT 3.1.1 sends a password only with a username' });
  return issues;
}

/** Why a topic filter (subscription) is malformed, or undefined. `+` takes a whole level, `#` only the last. */
export function topicFilterProblem(filter: string): string | undefined {
  const levels = filter.split('/');
  for (let i = 0; i < levels.length; i++) {
    const l = levels[i]!;
    if (l.includes('#') && (l !== '#' || i !== levels.length - 1)) return "'#' must be a whole level and the last one (a/#)";
    if (l.includes('+') && l !== '+') return "'+' must be a whole level (a/+/c)";
  }
  return undefined;
}

/** Why a topic name (publish) is unusable, or undefined. */
export const topicNameProblem = (topic: string): string | undefined =>
  /[+#]/.test(topic) ? "a topic to publish to may not contain the wildcards '+' or '#'" : undefined;

// CONNACK return codes of MQTT 3.1.1 and reason codes of MQTT 5, worded for the user.
const CONNACK_V4: Record<number, string> = {
  1: 'unacceptable protocol version (set protocol_version: 4? the broker speaks an older MQTT)',
  2: 'client identifier rejected',
  3: 'server unavailable',
  4: 'bad user name or password',
  5: 'not authorized',
};
const REASON_V5: Record<number, string> = {
  0x80: 'unspecified error',
  0x81: 'malformed packet',
  0x82: 'protocol error',
  0x83: 'implementation specific error',
  0x84: 'unsupported protocol version (set protocol_version: 4)',
  0x85: 'client identifier not valid',
  0x86: 'bad user name or password',
  0x87: 'not authorized',
  0x88: 'server unavailable',
  0x89: 'server busy',
  0x8a: 'banned',
  0x8c: 'bad authentication method',
  0x8d: 'keep alive timeout',
  0x8e: 'session taken over by another client with the same client id',
  0x8f: 'topic filter invalid',
  0x90: 'topic name invalid',
  0x93: 'receive maximum exceeded',
  0x95: 'packet too large',
  0x97: 'quota exceeded',
  0x99: 'payload format invalid',
  0x9a: 'retain not supported',
  0x9b: 'QoS not supported',
  0x9c: 'use another server',
  0x9d: 'server moved',
  0x9f: 'connection rate exceeded',
  0xa2: 'wildcard subscriptions not supported',
};

export function reasonText(code: number, version: 4 | 5): string {
  const t = version === 5 ? REASON_V5[code] : CONNACK_V4[code];
  return t ? `${t} (code ${code})` : `code ${code}`;
}

/** A CONNACK that refused the connection, with what to check. */
export function connackRefusal(code: number, version: 4 | 5): Error {
  const auth = version === 5 ? code === 0x86 || code === 0x87 : code === 4 || code === 5;
  return new Error(
    `the broker refused the connection: ${reasonText(code, version)}${auth ? ': check username and password (and the ACL for this client id)' : ''}`,
  );
}

/** An error of the socket or the TLS handshake, said in terms of the config. */
export function describeSocketError(e: Error & { code?: string | number }, c: BrokerConfig): Error {
  const at = brokerAddress(c);
  if (typeof e.code === 'number') return new Error(`${at}: ${reasonText(e.code, c.protocol_version)}`, { cause: e });
  const code = e.code ?? '';
  if (code === 'ECONNREFUSED') return new Error(`cannot connect to ${at}: connection refused (is the broker running, is the port right?)`, { cause: e });
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new Error(`cannot resolve host '${c.host}'`, { cause: e });
  if (code === 'ETIMEDOUT' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return new Error(`cannot reach ${at}: ${code}`, { cause: e });
  if (/CERT|SELF_SIGNED|UNABLE_TO|ERR_TLS|ERR_SSL|HOSTNAME|ALTNAME/.test(code) || /certificate|ssl|tls/i.test(e.message)) {
    const hint = /HOSTNAME|ALTNAME/.test(code)
      ? 'the certificate does not name this host'
      : c.tls_ca_certs
        ? `is ${c.tls_ca_certs} the CA that signed the broker certificate?`
        : 'set tls_ca_certs to the CA that signed the broker certificate';
    return new Error(`TLS with ${at} failed: ${e.message} (${hint})`, { cause: e });
  }
  return new Error(`${at}: ${e.message}`, { cause: e });
}

/** The connection closed before the broker answered CONNECT. */
export const closedBeforeConnack = (c: BrokerConfig) =>
  new Error(`${brokerAddress(c)} closed the connection before answering CONNECT${c.tls ? '' : ' (a TLS listener? then set tls: true)'}`);

/** A reset or close before CONNACK: said as closedBeforeConnack (a plain client at a TLS port, a broker refusing the client). */
export const isEarlyClose = (e: Error & { code?: string | number }) => e.code === 'ECONNRESET' || e.code === 'EPIPE' || /closed$/.test(e.message);

/** Client ids: `svc-<pipeline>` (persistent sessions) and a unique one for clean sessions. */
export const pipelineClientId = (pipeline: string) => `svc-${pipeline}`;
export const uniqueClientId = (base: string) => `${base}-${Math.random().toString(36).slice(2, 10)}`;
