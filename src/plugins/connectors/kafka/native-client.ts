// The librdkafka engine's side of the kafka connector: the configuration handed to librdkafka
// (brokers, security, the user's librdkafka_options), its log and error events routed to the
// component's logger, and the reachability check. librdkafka owns the broker connections (it
// reconnects on its own with its backoff); what the runtime needs to know, it is told here.
import { access } from 'node:fs/promises';
import type { Producer, KafkaConsumer, LibrdKafkaError, Metadata } from '@confluentinc/kafka-javascript';
import type { Logger } from '../../../observability/log.js';
import { rdkafka } from './engine.js';

/** The security fields (client.ts: the schema), as this module reads them. */
export interface Security {
  security_protocol: 'PLAINTEXT' | 'SASL_PLAINTEXT' | 'SASL_SSL' | 'SSL';
  sasl_mechanism?: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512';
  sasl_username?: string;
  sasl_password?: string;
  ssl_cafile?: string;
}

export type Rdkafka = Awaited<ReturnType<typeof rdkafka>>;
export type NativeConfig = Record<string, string | number | boolean>;

/** Seconds before an unanswered TCP/TLS connect to one broker fails (as the kafkajs engine). */
const CONNECT_TIMEOUT_MS = 5_000;

/**
 * librdkafka properties that svc sets itself for its guarantees: a librdkafka_options entry may not
 * change them (lint). Callbacks cannot be passed from YAML at all.
 */
export const OWNED_PROPERTIES = new Set([
  'bootstrap.servers',
  'metadata.broker.list',
  'group.id',
  'enable.auto.commit',
  'enable.auto.offset.store',
  'dr_cb',
  'dr_msg_cb',
  'delivery.report.only.error',
  'event_cb',
  'rebalance_cb',
  'offset_commit_cb',
]);

export interface NativeOptions {
  brokers: string[];
  clientId: string;
  /** The user's extra properties (librdkafka_options), applied last. */
  extra?: Record<string, string>;
}

/**
 * What both roles hand librdkafka: brokers, security (SASL and TLS as doc 3 names them), the
 * event callback (logs and errors come as events, not on stderr), and the user's extra properties.
 * Exported so that tests can check what reaches librdkafka where the mock cluster cannot (SASL).
 */
export function nativeConfig(c: Security, o: NativeOptions): NativeConfig {
  const conf: NativeConfig = {
    'bootstrap.servers': o.brokers.join(','),
    'client.id': o.clientId,
    'socket.connection.setup.timeout.ms': CONNECT_TIMEOUT_MS,
    'socket.keepalive.enable': true,
    // Warnings and above, as events: routed to the component's logger (onLog below).
    event_cb: true,
    log_level: 4,
    'security.protocol': c.security_protocol.toLowerCase(),
  };
  if (c.security_protocol === 'SASL_PLAINTEXT' || c.security_protocol === 'SASL_SSL') {
    conf['sasl.mechanisms'] = c.sasl_mechanism!;
    conf['sasl.username'] = c.sasl_username!;
    conf['sasl.password'] = c.sasl_password!;
  }
  if (c.security_protocol === 'SSL' || c.security_protocol === 'SASL_SSL') {
    // Without ssl_cafile the system's CA store is trusted (librdkafka looks for it: `probe`).
    conf['ssl.ca.location'] = c.ssl_cafile ?? 'probe';
    conf['enable.ssl.certificate.verification'] = true;
    conf['ssl.endpoint.identification.algorithm'] = 'https';
  }
  for (const [k, v] of Object.entries(o.extra ?? {})) conf[k] = v;
  return conf;
}

/** Fails as the kafkajs engine does when the CA file cannot be read (librdkafka's own message names no path). */
export async function checkCaFile(c: Security) {
  if (!c.ssl_cafile || (c.security_protocol !== 'SSL' && c.security_protocol !== 'SASL_SSL')) return;
  try {
    await access(c.ssl_cafile);
  } catch (e) {
    throw new Error(`cannot read ssl_cafile ${c.ssl_cafile}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
  }
}

/** librdkafka's facilities of connection attempts: debug, since the runtime logs each state change once. */
const CONNECTION_FACILITIES = new Set(['FAIL', 'BROKERFAIL', 'CONNECT', 'REQTMOUT', 'DISCONNECT']);

/** Routes a client's log and error events to the component's logger, masked. */
export function routeEvents(client: Producer | KafkaConsumer, log: Logger, redact: (s: string) => string) {
  (client as Producer).on('event.log', (e: { severity: number; fac: string; message: string }) => {
    const fields = { connector: 'kafka', librdkafka: e.fac };
    if (CONNECTION_FACILITIES.has(e.fac) || e.severity > 4) log.debug(fields, `kafka: ${redact(e.message)}`);
    else log.warn(fields, `kafka: ${redact(e.message)}`);
  });
}

/**
 * The error event that says every broker is gone: the connection is lost for the runtime. Errors
 * from librdkafka's event callback reach JavaScript without their code (-1), so the text decides.
 */
export const allBrokersDown = (e: { code?: number; message?: string }) => e.code === -187 || /all broker connections are down/i.test(e.message ?? '');

/** A librdkafka error as one line, with a hint when the security settings are the likely reason. */
export function explainNative(e: unknown, c?: Security): string {
  const msg = (e as { message?: string } | undefined)?.message ?? String(e);
  const sasl = c && (c.security_protocol === 'SASL_PLAINTEXT' || c.security_protocol === 'SASL_SSL');
  const tls = c && (c.security_protocol === 'SSL' || c.security_protocol === 'SASL_SSL');
  if (sasl && /SASL Handshake not supported|UNSUPPORTED_SASL|Unsupported SASL/i.test(msg))
    return `${msg}: the listener offers no SASL handshake; is security_protocol ${c.security_protocol} right for this port?`;
  if (sasl && /SASL authentication error|Authentication failed|SASL_AUTHENTICATION/i.test(msg)) return `SASL authentication failed: ${msg}`;
  if (tls && /SSL handshake failed|state SSL_HANDSHAKE/i.test(msg) && !/certificate/i.test(msg))
    return `${msg}: the TLS handshake failed; is this a TLS listener (security_protocol ${c.security_protocol})?`;
  return msg;
}

/**
 * Connects a native client (on failure, the caller must not disconnect it: it closes itself). librdkafka would retry brokers that refuse, or fail TLS or SASL,
 * forever; a connect here fails, with the reason, at the first TLS or SASL error or once every
 * bootstrap broker has failed (one broker of several down is not a failure), or after `timeoutMs`.
 * The runtime then retries with its own policy.
 */
const SECURITY_ERROR = /SASL|SSL|TLS|authenticat|certificate|handshake/i;
/** A FAIL log line: `[thrd:<broker>]: <broker>: <reason> (after 0ms in state X)`; the state stays (SSL_HANDSHAKE says TLS). */
const FAIL_LINE = /^\[thrd:([^\]]+)\]: (?:\S+: )?(.*)$/;

export function connectNative(client: Producer | KafkaConsumer, timeoutMs: number, c?: Security & { brokers?: string[] }): Promise<Metadata> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const failed = new Set<string>();
    const done = (err?: Error, md?: Metadata) => {
      if (settled) return;
      settled = true;
      (client as Producer).removeListener('event.log', onLog);
      if (err) reject(err);
      else resolve(md!);
    };
    // Before the client is connected librdkafka's errors reach JavaScript only as log lines (FAIL).
    const onLog = (e: { severity: number; fac: string; message: string }) => {
      if (e.fac !== 'FAIL' || e.severity > 4) return;
      const m = FAIL_LINE.exec(e.message);
      const reason = m?.[2] ?? e.message;
      const broker = m?.[1] ?? e.message;
      // Only the bootstrap brokers count: one learnt from the metadata (`host:port/<id>`) failing
      // means the bootstrap answered, and whether the metadata request beat that failure is a race.
      if (!broker.endsWith('/bootstrap')) return;
      failed.add(broker);
      if (SECURITY_ERROR.test(reason) || failed.size >= (c?.brokers?.length ?? 1)) done(new Error(explainNative({ message: reason }, c)));
    };
    (client as Producer).on('event.log', onLog);
    client.connect({ timeout: timeoutMs }, (err: LibrdKafkaError | null | undefined, metadata: Metadata) => {
      // A client that connects after this connect gave up is closed here; one whose connect failed closes itself.
      if (settled && !err) void disconnectNative(client, 10_000);
      if (err) done(new Error(explainNative(err, c), { cause: err }));
      else done(undefined, metadata);
    });
  });
}

/** Disconnects a native client, at most `ms` (a stop must not hang on a broker that is gone). */
export function disconnectNative(client: Producer | KafkaConsumer, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    try {
      client.disconnect(() => {
        clearTimeout(timer);
        resolve();
      });
    } catch {
      clearTimeout(timer);
      resolve();
    }
  });
}

/**
 * The reachability check with librdkafka: a producer connects (TCP, TLS, SASL, metadata from the
 * bootstrap brokers) and reads the cluster's metadata; returns the broker count.
 */
export async function checkClusterNative(c: Security & { brokers: string[]; librdkafka_options?: Record<string, string> }, log: Logger): Promise<number> {
  await checkCaFile(c);
  const K = await rdkafka();
  const p = new K.Producer(nativeConfig(c, { brokers: c.brokers, clientId: 'svc-connector-test', extra: c.librdkafka_options }));
  routeEvents(p, log, (s) => s);
  let md: Metadata;
  try {
    md = await connectNative(p, 8_000, c);
  } catch (e) {
    throw new Error(`cannot connect to the brokers ${c.brokers.join(', ')}: ${(e as Error).message}`, { cause: e });
  }
  await disconnectNative(p, 5_000);
  return md.brokers.length;
}
