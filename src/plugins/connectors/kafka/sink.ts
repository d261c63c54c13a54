// Sink `kafka`: one message per record (encoded with the sink's serializer_out), keyed by the
// record's key_field value so that equal keys land on the same partition (kafkajs's default
// partitioner, murmur2 like the Java client). A write resolves only when every partition leader
// has the messages acknowledged by all in-sync replicas (acks -1); the runtime retries a failed
// write whole, with a new producer when the connection broke.
import { Type } from '@sinclair/typebox';
import type { Message as KafkaMessage, Producer } from 'kafkajs';
import { Connection } from '../../connector-runtime/connection.js';
import type { Rec } from '../../types.js';
import { defineSink } from '../../types.js';
import { brokersField, checkCluster, explain, kafkaClient, kafkajs, lintSecurity, securityFields, TOPIC_PATTERN, within } from './client.js';
import { kafkaDlqReader } from './dlq-reader.js';

const config = Type.Object(
  {
    brokers: brokersField,
    topic: Type.String({ pattern: TOPIC_PATTERN, description: 'Topic to publish to.' }),
    key_field: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'Record field whose value (stringified; objects as JSON) is the message key: equal keys go to the same partition. Records without it get no key (spread over the partitions).',
      }),
    ),
    ...securityFields,
  },
  { additionalProperties: false },
);

const MAX_REQUEST_BYTES = 1 << 20;

/** The message key of a record: its key_field value as text, or null when absent. */
export function messageKey(r: Rec, field: string | undefined): string | null {
  if (!field) return null;
  const v = r[field];
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

export default defineSink({
  key: 'kafka',
  summary: 'Publish each record as one Kafka message, keyed for partitioning, acknowledged by all in-sync replicas.',
  accepts: 'records',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a batch counts as written only when every partition leader acknowledged its messages from all in-sync replicas (acks -1); a failed batch is retried whole, so a broker failure mid-batch can publish some messages twice.',
  },
  config,
  lint: (c) => lintSecurity(c),
  examples: [
    {
      title: 'Keyed by cell, so one cell stays on one partition',
      yaml: 'type: kafka\nbrokers: [kafka-1:9092, kafka-2:9092]\ntopic: pm.cells\nkey_field: cell_id',
    },
    {
      title: 'TLS with a private CA',
      yaml: 'type: kafka\nbrokers: [kafka.example.net:9093]\ntopic: alarms\nsecurity_protocol: SSL\nssl_cafile: /etc/svc/kafka-ca.pem\nretry_count: 3',
    },
  ],
  async test(c, { log }) {
    await checkCluster(c, log);
  },
  dlqReader: kafkaDlqReader,
  create(c, ctx) {
    const link = new Connection<Producer>(
      ctx,
      'kafka',
      async (lost) => {
        const kafka = await kafkaClient(c, { clientId: `svc-${ctx.pipeline}`, log: ctx.log, redact: ctx.redact, onBroken: lost });
        const { Partitioners } = await kafkajs();
        const producer = kafka.producer({
          createPartitioner: Partitioners.DefaultPartitioner,
          // Passing errors (a leader moving, a topic being created) get two quick retries; the
          // runtime's retry_count covers the rest.
          retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1000 },
        });
        try {
          await producer.connect();
        } catch (e) {
          await producer.disconnect().catch(() => {});
          throw new Error(`cannot reach the brokers ${c.brokers.join(', ')}: ${explain(e, c)}`, { cause: e });
        }
        return producer;
      },
      async (p) => {
        await within(p.disconnect(), 10_000, 'disconnecting the producer').catch(() => {});
      },
    );
    return {
      async write(batch) {
        const records = batch.records!;
        if (records.length === 0) return;
        // Requests of at most about 1 MiB, under the brokers' default message.max.bytes per partition batch.
        const requests: KafkaMessage[][] = [[]];
        let bytes = 0;
        let total = 0;
        for (const r of records) {
          const value = ctx.encoder.one(r);
          if (bytes > 0 && bytes + value.length > MAX_REQUEST_BYTES) {
            requests.push([]);
            bytes = 0;
          }
          requests.at(-1)!.push({ key: messageKey(r, c.key_field), value });
          bytes += value.length;
          total += value.length;
        }
        await link.use(async (p) => {
          try {
            for (const messages of requests) await p.send({ topic: c.topic, acks: -1, messages });
          } catch (e) {
            throw new Error(explain(e), { cause: e });
          }
        });
        return { bytes: total };
      },
      close: () => link.end(),
    };
  },
});
