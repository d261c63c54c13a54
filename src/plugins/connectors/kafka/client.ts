// What the kafka source and sink share: the broker list, the security fields (SASL and TLS) with
// their cross-field lint, the engine fields, the reachability check, and the kafkajs client factory
// (the fallback engine, engine.ts). kafkajs's own reconnect loops are kept short: the connector
// runtime owns reconnects, and every broker socket that breaks is reported to it.
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import tls from 'node:tls';
import { Type, type Static, type TObject } from '@sinclair/typebox';
import type { ISocketFactory, Kafka, KafkaConfig, LogEntry, SASLOptions } from 'kafkajs';
import type { Logger } from '../../../observability/log.js';
import { secret } from '../../../core/secrets.js';
import { once } from '../../connector-runtime/lazy.js';
import type { LintIssue } from '../../types.js';
import { chooseEngine, ENGINES, type EngineChoice } from './engine.js';
import { checkClusterNative, OWNED_PROPERTIES } from './native-client.js';

export const brokersField = Type.Array(Type.String({ pattern: '^\\S+:[0-9]{1,5}$', description: 'A bootstrap broker, host:port.' }), {
  minItems: 1,
  description: 'Bootstrap brokers, host:port each; the client learns the rest of the cluster from them.',
  examples: [['kafka-1:9092', 'kafka-2:9092']],
});

/** Kafka's own rule for topic names. */
export const TOPIC_PATTERN = '^[a-zA-Z0-9._-]{1,249}$';

export const SECURITY_PROTOCOLS = ['PLAINTEXT', 'SASL_PLAINTEXT', 'SASL_SSL', 'SSL'] as const;
export const SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;

export const securityFields = {
  security_protocol: Type.Union(
    SECURITY_PROTOCOLS.map((p) => Type.Literal(p)),
    { default: 'PLAINTEXT', description: 'PLAINTEXT; SASL_PLAINTEXT (SASL, no TLS); SASL_SSL (SASL over TLS); SSL (TLS, no SASL).' },
  ),
  sasl_mechanism: Type.Optional(
    Type.Union(
      SASL_MECHANISMS.map((m) => Type.Literal(m)),
      { description: 'SASL mechanism; required with SASL_PLAINTEXT and SASL_SSL.' },
    ),
  ),
  sasl_username: Type.Optional(Type.String({ minLength: 1, description: 'SASL user name; required with SASL_PLAINTEXT and SASL_SSL.' })),
  sasl_password: secret('SASL password; required with SASL_PLAINTEXT and SASL_SSL.'),
  ssl_cafile: Type.Optional(
    Type.String({
      minLength: 1,
      description: "PEM file of the CA(s) that signed the brokers' certificates (SSL, SASL_SSL); without it the system CAs are trusted.",
    }),
  ),
};

export type Security = Static<TObject<typeof securityFields>>;

export const engineFields = {
  engine: Type.Union(
    ENGINES.map((e) => Type.Literal(e)),
    {
      default: 'auto',
      description:
        'The Kafka client: librdkafka (native, @confluentinc/kafka-javascript), kafkajs (pure JavaScript, several times slower), or auto: librdkafka when it is installed, else kafkajs (the log says which).',
    },
  ),
  librdkafka_options: Type.Optional(
    Type.Record(Type.String({ pattern: '^[a-z][a-z0-9_.]*$' }), Type.Union([Type.String(), Type.Number(), Type.Boolean()]), {
      description:
        'Extra librdkafka properties (its CONFIGURATION.md), applied after svc\'s own, e.g. {"socket.keepalive.enable": true, "message.timeout.ms": 60000}. Values under names that say they are secrets (password, secret, token) are masked. Ignored by the kafkajs engine.',
    }),
  ),
};

export interface EngineConfig {
  engine: EngineChoice;
  librdkafka_options?: Record<string, string | number | boolean>;
}

/** Cross-field rules of the engine fields: properties svc owns, and options the chosen engine would ignore. */
export function lintEngine(c: EngineConfig): LintIssue[] {
  const issues: LintIssue[] = [];
  for (const k of Object.keys(c.librdkafka_options ?? {})) {
    if (OWNED_PROPERTIES.has(k) || k.endsWith('_cb'))
      issues.push({ path: `librdkafka_options.${k}`, message: 'set by svc itself (its delivery guarantee depends on it); use the matching field instead' });
  }
  if (c.engine === 'kafkajs' && c.librdkafka_options)
    issues.push({ path: 'librdkafka_options', message: 'only used with engine librdkafka or auto (it is kafkajs)' });
  return issues;
}

/** librdkafka_options as librdkafka takes them: strings. */
export const nativeOptions = (o: EngineConfig['librdkafka_options']) => (o ? Object.fromEntries(Object.entries(o).map(([k, v]) => [k, String(v)])) : undefined);

const SASL = new Set(['SASL_PLAINTEXT', 'SASL_SSL']);
const TLS = new Set(['SSL', 'SASL_SSL']);

/** Cross-field rules of the security fields: what a protocol needs, and what it would ignore. */
export function lintSecurity(c: Security): LintIssue[] {
  const issues: LintIssue[] = [];
  const p = c.security_protocol;
  if (SASL.has(p)) {
    for (const f of ['sasl_mechanism', 'sasl_username', 'sasl_password'] as const) {
      if (c[f] === undefined) issues.push({ path: f, message: `required with security_protocol ${p}` });
    }
  } else {
    for (const f of ['sasl_mechanism', 'sasl_username', 'sasl_password'] as const) {
      if (c[f] !== undefined) issues.push({ path: f, message: `only used with security_protocol SASL_PLAINTEXT or SASL_SSL (it is ${p})` });
    }
  }
  if (c.ssl_cafile !== undefined && !TLS.has(p)) issues.push({ path: 'ssl_cafile', message: `only used with security_protocol SSL or SASL_SSL (it is ${p})` });
  return issues;
}

/** Seconds before an unanswered TCP/TLS connect to one broker fails. */
const CONNECT_TIMEOUT_MS = 5_000;

export interface ClientOptions {
  clientId: string;
  log: Logger;
  redact?: (text: string) => string;
  /**
   * Called once when a broker connection breaks under the client (a socket error: reset, abort,
   * keepalive timeout). A clean close by the broker is not reported: brokers close idle
   * connections (connections.max.idle.ms), which kafkajs reopens on the next request; a close
   * under a request in flight fails that request, and the consumer crashes or the write fails.
   */
  onBroken?: (err: Error) => void;
}

/**
 * kafkajs logs at WARN and above, routed to the component's logger at warn; its per-attempt
 * connection errors go to debug, since the runtime logs each state change of the connection once.
 */
const CONNECTION_NAMESPACES = new Set(['Connection', 'BrokerPool']);
function logCreator(log: Logger, redact: (s: string) => string) {
  return () =>
    ({ namespace, log: entry }: LogEntry) => {
      const { message, timestamp: _t, logger: _l, ...rest } = entry as LogEntry['log'] & { logger?: string };
      const fields: Record<string, unknown> = { connector: 'kafka', kafkajs: namespace };
      for (const k of ['broker', 'error', 'groupId', 'topic', 'partition'] as const)
        if (rest[k] !== undefined) fields[k] = typeof rest[k] === 'string' ? redact(rest[k] as string) : rest[k];
      if (CONNECTION_NAMESPACES.has(namespace)) log.debug(fields, `kafka: ${redact(message)}`);
      else log.warn(fields, `kafka: ${redact(message)}`);
    };
}

/**
 * kafkajs's default socket factory, watched: a socket that errors after it was connected is a lost
 * connection for the runtime. kafkajs itself would quietly reconnect on the next request; the
 * runtime wants to know, count and log it, and to reconnect with its own policy.
 */
function watchedSockets(opts: ClientOptions): ISocketFactory {
  return ({ host, port, ssl, onConnect }) => {
    let connected = false;
    let ours = false;
    const connectedNow = () => {
      connected = true;
      onConnect();
    };
    const socket: net.Socket = ssl
      ? tls.connect({ host, port, ...(net.isIP(host) ? {} : { servername: host }), ...ssl }, connectedNow)
      : net.connect({ host, port }, connectedNow);
    socket.setKeepAlive(true, 60_000);
    const end = socket.end.bind(socket) as (...a: unknown[]) => net.Socket;
    socket.end = ((...a: unknown[]) => {
      ours = true;
      return end(...a);
    }) as net.Socket['end'];
    const broken = (err: Error) => {
      if (!connected || ours || !opts.onBroken) return;
      ours = true;
      opts.onBroken(err);
    };
    socket.on('error', (e: Error) => broken(new Error(`connection to broker ${host}:${port} failed: ${e.message}`)));
    return socket;
  };
}

export const kafkajs = once(() => import('kafkajs'));

/** The kafkajs client for one source or sink (no I/O until a producer, consumer or admin connects). */
export async function kafkaClient(c: Security & { brokers: string[] }, opts: ClientOptions): Promise<Kafka> {
  const { Kafka, logLevel } = await kafkajs();
  const config: KafkaConfig = {
    clientId: opts.clientId,
    brokers: c.brokers,
    connectionTimeout: CONNECT_TIMEOUT_MS,
    // The runtime reconnects (with its backoff and state reporting): kafkajs gives up at once.
    retry: { retries: 0 },
    logLevel: logLevel.WARN,
    logCreator: logCreator(opts.log, opts.redact ?? ((s) => s)),
    socketFactory: watchedSockets(opts),
  };
  if (TLS.has(c.security_protocol)) {
    let ca: string | undefined;
    if (c.ssl_cafile) {
      try {
        ca = await readFile(c.ssl_cafile, 'utf8');
      } catch (e) {
        throw new Error(`cannot read ssl_cafile ${c.ssl_cafile}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
      }
    }
    config.ssl = ca ? { ca: [ca] } : true;
  }
  if (SASL.has(c.security_protocol)) {
    config.sasl = {
      mechanism: c.sasl_mechanism!.toLowerCase(),
      username: c.sasl_username!,
      password: c.sasl_password!,
    } as SASLOptions;
  }
  return new Kafka(config);
}

/**
 * The innermost message of a kafkajs error chain (KafkaJSNumberOfRetriesExceeded wraps the real
 * cause), with a hint when the security settings are the likely reason.
 */
export function explain(e: unknown, c?: Security): string {
  let err = e as { message?: string; cause?: unknown; name?: string; type?: string } | undefined;
  const seen = new Set<unknown>();
  while (
    err &&
    typeof err === 'object' &&
    err.cause &&
    !seen.has(err.cause) &&
    (err.name === 'KafkaJSNumberOfRetriesExceeded' || err.name === 'KafkaJSNonRetriableError')
  ) {
    seen.add(err.cause);
    err = err.cause as typeof err;
  }
  const msg = err?.message ?? String(e);
  if (err?.name === 'KafkaJSSASLAuthenticationError') return `SASL authentication failed: ${msg}`;
  if (c && SASL.has(c.security_protocol) && (err?.name === 'KafkaJSServerDoesNotSupportApiKey' || err?.type === 'UNSUPPORTED_VERSION')) {
    return `${msg}: the listener offers no SASL handshake; is security_protocol ${c.security_protocol} right for this port?`;
  }
  if (c && TLS.has(c.security_protocol) && /ECONNRESET|wrong version number|Connection timeout|socket disconnected before secure/i.test(msg)) {
    return `${msg}: the TLS handshake failed; is this a TLS listener (security_protocol ${c.security_protocol})?`;
  }
  return msg;
}

/**
 * The reachability check both roles share: connect to a bootstrap broker (TCP, TLS, ApiVersions,
 * SASL), then read the cluster metadata from one of the brokers it advertises (a client talks to
 * those, so advertised listeners that cannot be reached fail here); returns the broker count.
 */
export async function checkCluster(c: Security & EngineConfig & { brokers: string[] }, log: Logger): Promise<number> {
  if ((await chooseEngine(c.engine ?? 'auto', log)) === 'librdkafka')
    return checkClusterNative({ ...c, librdkafka_options: nativeOptions(c.librdkafka_options) }, log);
  const kafka = await kafkaClient(c, { clientId: 'svc-connector-test', log });
  const admin = kafka.admin({ retry: { retries: 0 } });
  try {
    try {
      await admin.connect();
    } catch (e) {
      throw new Error(`cannot connect to the brokers ${c.brokers.join(', ')}: ${explain(e, c)}`, { cause: e });
    }
    try {
      return (await admin.describeCluster()).brokers.length;
    } catch (e) {
      throw new Error(
        `the bootstrap broker answered, but the brokers it advertises cannot be used (check their advertised listeners and security_protocol): ${explain(e, c)}`,
        { cause: e },
      );
    }
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

/** Resolves `p`, or rejects after `ms` (a close that must not hang a stop). */
export async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} took more than ${ms / 1000} s`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
