// Sink `mqtt`: publishes each record as one message (mqtt.js) with the configured QoS and retain
// flag. A write resolves once the broker acknowledged every message (PUBACK for QoS 1, PUBCOMP for
// QoS 2) or, with QoS 0, once the socket took them. mqtt.js does not reconnect on its own here: the
// connection is dropped when it breaks and opened again by the runtime's retry.
import { randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { IConnackPacket, MqttClient } from 'mqtt';
import { Connection } from '../../connector-runtime/connection.js';
import { once } from '../../connector-runtime/lazy.js';
import { WriteError } from '../../../core/errors.js';
import { defineSink, type LintIssue } from '../../types.js';
import {
  brokerAddress,
  brokerFields,
  closedBeforeConnack,
  connackRefusal,
  CONNECT_TIMEOUT_MS,
  describeSocketError,
  isEarlyClose,
  KEEPALIVE_S,
  lintBroker,
  pipelineClientId,
  reasonText,
  tlsOptions,
  topicNameProblem,
  type BrokerConfig,
} from './client.js';

const config = Type.Object(
  {
    host: brokerFields.host,
    port: brokerFields.port,
    topic: Type.String({ minLength: 1, description: 'Topic to publish every message to (no wildcards).' }),
    qos: Type.Union([Type.Literal(0), Type.Literal(1), Type.Literal(2)], {
      default: 0,
      description: '0: at most once (a write ends when the socket took the messages); 1 and 2: a write ends when the broker acknowledged every message.',
    }),
    username: brokerFields.username,
    password: brokerFields.password,
    tls: brokerFields.tls,
    tls_ca_certs: brokerFields.tls_ca_certs,
    retain: Type.Boolean({
      default: false,
      description: 'Publish retained messages: the broker keeps the last one of the topic and hands it to every later subscriber.',
    }),
    protocol_version: brokerFields.protocol_version,
  },
  { additionalProperties: false },
);

interface Link {
  client: MqttClient;
  /** Rejects when the connection breaks: pending publishes never complete then. */
  broken: Promise<never>;
  /** Publishes not yet completed (acknowledged; QoS 0: written), at most the broker's Receive Maximum and MAX_PENDING. */
  window: Window;
}

/**
 * Most publishes in progress at once. mqtt.js waits for the socket to drain with one listener per
 * publish: thousands at once only queue in memory (and trip Node's listener-leak warning).
 */
const MAX_PENDING = 500;

/**
 * The broker's Receive Maximum, kept by us: mqtt.js 5.16 does not limit what it sends by it, and
 * Mosquitto answers QoS 2 publishes beyond it (20 by default) with "quota exceeded".
 */
class Window {
  private used = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly size: number) {}
  /** Takes a place if one is free (no await on the hot path). */
  tryTake(): boolean {
    if (this.used >= this.size) return false;
    this.used++;
    return true;
  }
  /** Waits for a place, handed over by give(). */
  take(): Promise<void> {
    return new Promise<void>((r) => this.waiting.push(r));
  }
  give() {
    const next = this.waiting.shift();
    if (next) next();
    else this.used--;
  }
}

const mqttjs = once(async () => (await import('mqtt')).default);

/** Connects with mqtt.js (no auto reconnect) and waits for CONNACK; errors say what to fix. */
async function connectClient(c: BrokerConfig, clientId: string, signal?: AbortSignal): Promise<{ client: MqttClient; receiveMaximum: number }> {
  const tlsOpts = c.tls ? await tlsOptions(c) : undefined;
  const mqtt = await mqttjs();
  const client = mqtt.connect({
    host: c.host,
    port: c.port,
    protocol: c.tls ? 'mqtts' : 'mqtt',
    ...(tlsOpts ?? {}),
    protocolVersion: c.protocol_version,
    clientId,
    clean: true,
    username: c.username,
    password: c.password,
    keepalive: KEEPALIVE_S,
    reconnectPeriod: 0,
    connectTimeout: CONNECT_TIMEOUT_MS,
  });
  try {
    const connack = await new Promise<IConnackPacket>((resolve, reject) => {
      client.once('connect', resolve);
      client.once('error', (e: Error & { code?: string | number }) => {
        if (typeof e.code === 'number') reject(connackRefusal(e.code, c.protocol_version));
        else reject(isEarlyClose(e) ? closedBeforeConnack(c) : describeSocketError(e, c));
      });
      client.once('close', () => reject(closedBeforeConnack(c)));
      if (signal?.aborted) reject(new Error('connect aborted'));
      signal?.addEventListener('abort', () => reject(new Error('connect aborted')), { once: true });
    });
    return { client, receiveMaximum: connack.properties?.receiveMaximum ?? 65535 };
  } catch (e) {
    client.end(true);
    throw e;
  }
}

/** DISCONNECT and a graceful end (what QoS 0 left in the socket goes out); forced after 2 s. */
async function endClient(client: MqttClient) {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([client.endAsync(false).catch(() => {}), new Promise((r) => (timer = setTimeout(r, 2000)))]);
  clearTimeout(timer);
  if (!client.disconnected) await client.endAsync(true).catch(() => {});
}

/** MQTT 5 PUBACK/PUBREC reason codes that the same message would get again: not authorized, topic name or payload format invalid. */
const FINAL_REFUSALS = new Set([0x87, 0x90, 0x99]);

/**
 * A publish failure in the user's terms. A refusal by the broker (an MQTT 5 reason code) leaves
 * the connection usable; a final one (not authorized...) is not retried.
 */
function publishError(e: Error & { code?: string | number }, c: BrokerConfig & { topic: string }): Error {
  if (typeof e.code === 'number') {
    const msg = `the broker refused a message on '${c.topic}': ${reasonText(e.code, c.protocol_version)}`;
    return FINAL_REFUSALS.has(e.code) ? new WriteError(`mqtt: ${msg}`, false, { cause: e }) : new RefusedError(msg, { cause: e });
  }
  return new Error(`publishing to ${brokerAddress(c)} failed: ${e.message}`, { cause: e });
}

/** The broker refused a message but the connection is fine (retried without reconnecting). */
class RefusedError extends Error {}

export default defineSink({
  key: 'mqtt',
  summary: 'Publish each record as one MQTT message (QoS 0/1/2, retain, TLS).',
  accepts: 'records',
  delivery: {
    guarantee: 'at-least-once',
    why: 'with qos 1 or 2 a write counts only once the broker acknowledged every message (PUBACK or PUBCOMP); a write that fails part-way is retried whole, so some messages may be published twice. With qos 0 (the default) it is at-most-once: the broker does not acknowledge, and messages in flight when a connection breaks are lost.',
  },
  config,
  lint(c) {
    const issues: LintIssue[] = lintBroker(c);
    const bad = topicNameProblem(c.topic);
    if (bad) issues.push({ path: 'topic', message: bad });
    return issues;
  },
  examples: [
    {
      title: 'Alarms with QoS 1',
      yaml: 'type: mqtt\nhost: broker.example.net\ntopic: svc/alarms\nqos: 1\nusername: svc\npassword: ${MQTT_PASSWORD:-change-me}',
    },
    {
      title: 'Last state per topic, retained, over TLS',
      yaml: 'type: mqtt\nhost: broker.example.net\nport: 8883\ntopic: svc/site-42/state\nqos: 1\nretain: true\ntls: true\ntls_ca_certs: /etc/svc/mqtt-ca.pem',
    },
  ],
  async test(c, { signal }) {
    const { client } = await connectClient(c, `svc-test-${randomBytes(4).toString('hex')}`, signal);
    await endClient(client);
  },
  create(c, ctx) {
    const base = `${pipelineClientId(ctx.pipeline)}-sink`;
    const link = new Connection<Link>(
      ctx,
      'mqtt',
      async (lost) => {
        // A clean session under a unique id: two sinks (or workers) of one pipeline never take each other over.
        const { client, receiveMaximum } = await connectClient(c, `${base}-${randomBytes(4).toString('hex')}`);
        let fail!: (e: Error) => void;
        const broken = new Promise<never>((_, reject) => (fail = reject));
        broken.catch(() => {});
        const onBreak = (e: Error) => {
          fail(e);
          lost(e);
        };
        client.on('error', (e) => onBreak(describeSocketError(e, c)));
        client.on('close', () => onBreak(new Error(`connection to ${brokerAddress(c)} closed`)));
        return { client, broken, window: new Window(Math.min(receiveMaximum, MAX_PENDING)) };
      },
      ({ client }) => endClient(client),
    );
    const opts = { qos: c.qos as 0 | 1 | 2, retain: c.retain };
    return {
      async write(batch) {
        const bytes = await link.use(
          async ({ client, broken, window }) => {
            const acks: Promise<void>[] = [];
            let sent = 0;
            let failed: Error | undefined;
            for (const r of batch.records!) {
              if (!window.tryTake()) await Promise.race([window.take(), broken]);
              if (failed) {
                window.give();
                break; // the batch is retried whole: publishing the rest now would only add duplicates
              }
              const value = ctx.encoder.one(r);
              sent += value.length;
              const ack = client.publishAsync(c.topic, value, opts).then(
                () => window.give(),
                (e: Error) => {
                  window.give();
                  throw (failed ??= publishError(e, c));
                },
              );
              ack.catch(() => {}); // handled by Promise.all below; it may reject while the loop still runs
              acks.push(ack);
            }
            await Promise.race([Promise.all(acks), broken]);
            return sent;
          },
          (e) => !(e instanceof RefusedError),
        );
        return { bytes };
      },
      close: () => link.end(),
    };
  },
});
