// Sink `kafka`: one message per record (encoded with the sink's serializer_out), keyed by the
// record's key_field value so that equal keys land on the same partition (murmur2, as the Java
// client, on both engines). With the default acks all, a write resolves only when every partition
// leader has the messages acknowledged by all in-sync replicas. The engine (engine.ts) is chosen at
// the first write: librdkafka (native-sink.ts) or kafkajs (below).
import type { Message as KafkaMessage, Producer } from 'kafkajs';
import { WriteError } from '../../../core/errors.js';
import { Connection } from '../../connector-runtime/connection.js';
import { once } from '../../connector-runtime/lazy.js';
import type { Encoder, PluginContext, Sink } from '../../types.js';
import { defineSink } from '../../types.js';
import { checkCluster, explain, kafkaClient, kafkajs, lintEngine, lintSecurity, nativeOptions, within } from './client.js';
import { kafkaDlqReader } from './dlq-reader.js';
import { chooseEngine, engineInfo } from './engine.js';
import { nativeSink } from './native-sink.js';
import { messageKey, sinkConfig as config, type SinkConfig } from './sink-config.js';

const MAX_REQUEST_BYTES = 1 << 20;

export { messageKey };

/** The kafkajs engine's sink: requests of at most about 1 MiB, sent one after another. */
function kafkajsSink(c: SinkConfig, ctx: PluginContext & { encoder: Encoder }): Sink {
  if (c.compression !== 'none' && c.compression !== 'gzip')
    throw new WriteError(`kafka: compression ${c.compression} needs the librdkafka engine (kafkajs has gzip only)`, false);
  const acks = c.acks === 'all' ? -1 : c.acks;
  const link = new Connection<Producer>(
    ctx,
    'kafka',
    async (lost) => {
      const kafka = await kafkaClient(c, { clientId: `svc-${ctx.pipeline}`, log: ctx.log, redact: ctx.redact, onBroken: lost });
      const { Partitioners } = await kafkajs();
      const producer = kafka.producer({
        createPartitioner: Partitioners.DefaultPartitioner,
        idempotent: c.enable_idempotence,
        ...(c.enable_idempotence ? { maxInFlightRequests: 1 } : {}),
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
      const { CompressionTypes } = await kafkajs();
      const compression = c.compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None;
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
          for (const messages of requests) await p.send({ topic: c.topic, acks, compression, messages });
        } catch (e) {
          throw new Error(explain(e), { cause: e });
        }
      });
      return { bytes: total };
    },
    close: () => link.end(),
  };
}

export default defineSink({
  key: 'kafka',
  summary: 'Publish each record as one Kafka message, keyed for partitioning, acknowledged by all in-sync replicas.',
  accepts: 'records',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a source unit is acknowledged only when every message written from it has its acknowledgement from all in-sync replicas (acks all, the default); what failed is written again, so a broker failure mid-batch can publish some messages twice. With acks 1 or 0 it is weaker (see acks).',
  },
  config,
  lint: (c) => [
    ...lintSecurity(c),
    ...lintEngine(c),
    ...(c.enable_idempotence && c.acks !== 'all' ? [{ path: 'acks', message: 'enable_idempotence needs acks all' }] : []),
  ],
  examples: [
    {
      title: 'Keyed by cell, so one cell stays on one partition',
      yaml: 'type: kafka\nbrokers: [kafka-1:9092, kafka-2:9092]\ntopic: pm.cells\nkey_field: cell_id',
    },
    {
      title: 'TLS with a private CA',
      yaml: 'type: kafka\nbrokers: [kafka.example.net:9093]\ntopic: alarms\nsecurity_protocol: SSL\nssl_cafile: /etc/svc/kafka-ca.pem\nretry_count: 3',
    },
    {
      title: 'Compressed, idempotent, with a shorter message timeout handed to librdkafka',
      yaml: 'type: kafka\nbrokers: [kafka-1:9092, kafka-2:9092]\ntopic: pm.counters\ncompression: zstd\nlinger_ms: 20\nenable_idempotence: true\nlibrdkafka_options:\n  message.timeout.ms: 60000',
    },
  ],
  async test(c, { log }) {
    await checkCluster(c, log);
  },
  dlqReader: kafkaDlqReader,
  engine: engineInfo,
  create(c, ctx) {
    // The engine is chosen at the first write (create() does no I/O); the sink it gives is kept.
    const sink = once(async () => {
      const o = { ...c, librdkafka_options: nativeOptions(c.librdkafka_options) };
      return (await chooseEngine(c.engine, ctx.log)) === 'librdkafka' ? nativeSink(o, ctx) : kafkajsSink(c, ctx);
    });
    let used = false;
    return {
      async write(batch) {
        used = true;
        return (await sink()).write(batch);
      },
      // Kafka on librdkafka resolves write() once produce() has the batch and waits for the
      // delivery reports here (deferred delivery: docs/development.md); kafkajs has nothing to wait for.
      async flush() {
        if (used) return (await sink()).flush?.();
      },
      async close() {
        if (used) await (await sink()).close?.();
      },
    };
  },
});
