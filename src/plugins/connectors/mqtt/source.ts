// Source `mqtt` (stream): subscribes to a topic filter (wildcards allowed) and yields each message
// as it comes. QoS 1 and 2: a persistent session under a fixed client id (default svc-<pipeline>),
// and each message acknowledged (PUBACK, PUBREC) only after every record from it was written or
// dead-lettered, so the broker delivers it again after a reconnect or a restart (at-least-once).
// QoS 0 has no acknowledgement in the protocol: at-most-once. The session is our own small
// subscriber on mqtt-packet (subscriber.ts says why not mqtt.js).
import { Type } from '@sinclair/typebox';
import { reconnectFields } from '../../connector-runtime/reconnect.js';
import { streamSource, type Message, type Session } from '../../connector-runtime/stream-source.js';
import { defineSource, type LintIssue } from '../../types.js';
import { brokerFields, lintBroker, pipelineClientId, topicFilterProblem, uniqueClientId } from './client.js';
import { Subscriber, type QoS } from './subscriber.js';

/** Most messages per unit; the MQTT 5 receive maximum is twice this (one unit delivered while the next arrives). */
const MAX_BATCH = 1000;
const RECEIVE_MAXIMUM = 2 * MAX_BATCH;

const qosField = Type.Union([Type.Literal(0), Type.Literal(1), Type.Literal(2)], {
  default: 0,
  description: '0: at most once (no acknowledgement); 1 and 2: acknowledged after delivery, in a persistent session (at-least-once).',
});

const config = Type.Object(
  {
    host: brokerFields.host,
    port: brokerFields.port,
    topic: Type.String({ minLength: 1, description: "Topic filter to subscribe to; '+' matches one level, '#' the rest (sensors/+/temp, alarms/#)." }),
    qos: qosField,
    client_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 65535,
        description: 'Client id. QoS 1/2: the persistent session is kept under it (default svc-<pipeline>); QoS 0: default svc-<pipeline>-<random>.',
      }),
    ),
    username: brokerFields.username,
    password: brokerFields.password,
    tls: brokerFields.tls,
    tls_ca_certs: brokerFields.tls_ca_certs,
    protocol_version: brokerFields.protocol_version,
    ...reconnectFields(),
  },
  { additionalProperties: false },
);

interface MqttMessage extends Message {
  qos: QoS;
  messageId?: number;
}

export default defineSource({
  key: 'mqtt',
  summary: 'Subscribe to an MQTT topic filter (wildcards, QoS 0/1/2, persistent sessions, TLS).',
  mode: 'stream',
  delivery: {
    guarantee: 'at-least-once',
    why: 'with qos 1 or 2, each message is acknowledged (PUBACK, PUBREC) only after every record from it was written or dead-lettered, in a persistent session under a fixed client id: after a lost connection, an undelivered batch or a broker restart (with broker persistence) the broker delivers the unacknowledged messages again (duplicates possible). With qos 0 (the default) it is at-most-once: the protocol has no acknowledgement, so messages in flight when the connection or the run ends are lost.',
  },
  config,
  lint(c) {
    const issues: LintIssue[] = lintBroker(c);
    const bad = topicFilterProblem(c.topic);
    if (bad) issues.push({ path: 'topic', message: bad });
    return issues;
  },
  examples: [
    {
      title: 'Alarms of every site, acknowledged after delivery',
      yaml: 'type: mqtt\nhost: broker.example.net\ntopic: sites/+/alarms/#\nqos: 1\nusername: svc\npassword: ${MQTT_PASSWORD:-change-me}',
    },
    {
      title: 'TLS with a private CA',
      yaml: 'type: mqtt\nhost: broker.example.net\nport: 8883\ntopic: telemetry/#\nqos: 2\nclient_id: svc-telemetry\ntls: true\ntls_ca_certs: /etc/svc/mqtt-ca.pem',
    },
  ],
  async test(c, { signal }) {
    // A clean session under a throwaway id: a running pipeline's session is neither taken over nor changed.
    const s = await Subscriber.open(
      { ...c, clientId: uniqueClientId(`${c.client_id ?? 'svc'}-test`), clean: true, qos: c.qos as QoS, receiveMaximum: 10, signal },
      { message() {}, lost() {} },
    );
    await s.close();
  },
  create(c, ctx) {
    const qos = c.qos as QoS;
    const persistent = qos > 0;
    const clientId = c.client_id ?? (persistent ? pipelineClientId(ctx.pipeline) : uniqueClientId(pipelineClientId(ctx.pipeline)));
    let last: { topic: string; qos: QoS; retain: boolean } | undefined;
    return streamSource<MqttMessage>(ctx, {
      type: 'mqtt',
      reconnect: c,
      acknowledges: persistent,
      maxBatch: MAX_BATCH,
      // The Receive Maximum bounds what the broker sends unacknowledged (Mosquitto 2.0.11: only
      // the first window); above this many queued messages the socket is no longer read.
      highWater: RECEIVE_MAXIMUM,
      async connect({ push, lost, signal }) {
        const sub = await Subscriber.open(
          { ...c, clientId, clean: !persistent, qos, receiveMaximum: RECEIVE_MAXIMUM, signal },
          {
            message(m) {
              // One meta object per run of messages alike (most are): no allocation per message.
              if (!last || last.topic !== m.topic || last.qos !== m.qos || last.retain !== m.retain) last = { topic: m.topic, qos: m.qos, retain: m.retain };
              push({ body: m.payload, meta: last, qos: m.qos, messageId: m.messageId });
            },
            lost,
            warn: (msg) => ctx.log.warn({ connector: 'mqtt', topic: c.topic }, `mqtt: ${msg}`),
          },
        );
        if (persistent)
          ctx.log.debug(
            { connector: 'mqtt', client_id: clientId, session_present: sub.sessionPresent },
            sub.sessionPresent ? 'mqtt: resumed the persistent session' : 'mqtt: new persistent session',
          );
        const session: Session<MqttMessage> = {
          // QoS 1/2 flow is bounded by acknowledgements; stopping the socket also holds QoS 0.
          pause: () => sub.pause(),
          resume: () => sub.resume(),
          async ack(batch) {
            sub.ack(batch);
          },
          close: () => sub.close(),
        };
        return session;
      },
    });
  },
});
