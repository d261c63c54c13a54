// The librdkafka engine's side of the kafka connector: the configuration handed to librdkafka
// (brokers, security, the user's librdkafka_options), its log and error events routed to the
// component's logger, and the reachability check. librdkafka owns the broker connections (it
// reconnects on its own with its backoff); what the runtime needs to know, it is told here.
import { access } from 'node:fs/promises';
import type { LibrdKafkaError, Producer, KafkaConsumer, Metadata } from '@confluentinc/kafka-javascript';
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

/** A librdkafka error as one line: its message and code name, with a hint for the security settings. */
export function explainNative(e: unknown, c?: Security): string {
  const err = e as Partial<LibrdKafkaError> & { message?: string };
  const msg = err?.message ?? String(e);
  if (c && (c.security_protocol === 'SASL_PLAINTEXT' || c.security_protocol === 'SASL_SSL') && /SASL|authenticat/i.test(msg))
    return `SASL authentication failed: ${msg}`;
  if (c && (c.security_protocol === 'SSL' || c.security_protocol === 'SASL_SSL') && /SSL|certificate|handshake/i.test(msg)) {
    return `${msg}: the TLS handshake failed; is this a TLS listener (security_protocol ${c.security_protocol})?`;
  }
  return msg;
}

/** Connects a native client; rejects with librdkafka's reason (bounded by `timeoutMs`). */
export function connectNative<T extends Producer | KafkaConsumer>(client: T, timeoutMs: number): Promise<Metadata> {
  return new Promise((resolve, reject) => {
    client.connect({ timeout: timeoutMs }, (err, metadata) => (err ? reject(err as unknown as Error) : resolve(metadata)));
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
  const errors: string[] = [];
  const p = new K.Producer(nativeConfig(c, { brokers: c.brokers, clientId: 'svc-connector-test', extra: c.librdkafka_options }));
  routeEvents(p, log, (s) => s);
  // The connect's own error is a timeout; the broker's reason (refused, TLS, SASL) comes as events.
  p.on('event.error', (e) => errors.push(explainNative(e, c)));
  try {
    const md = await connectNative(p, 8_000);
    return md.brokers.length;
  } catch (e) {
    const why = errors.find((m) => !/all broker connections are down/i.test(m)) ?? errors[0] ?? explainNative(e, c);
    throw new Error(`cannot connect to the brokers ${c.brokers.join(', ')}: ${why}`, { cause: e });
  } finally {
    await disconnectNative(p, 5_000);
  }
}
