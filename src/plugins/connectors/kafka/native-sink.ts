// The kafka sink on librdkafka: a unit's records are handed to produce() one after another (librdkafka
// batches, compresses and retries them itself), and the write waits once for the unit's delivery
// reports. A message the broker refuses for good (too large, invalid) is returned as rejected, with
// librdkafka's error, and goes to the DLQ; one that failed for a passing reason (a timeout, a broker
// gone) is returned to be written again; when every message failed, the producer is dropped and the
// runtime retries the write whole.
import type { DeliveryReport, LibrdKafkaError, Producer } from '@confluentinc/kafka-javascript';
import { Connection } from '../../connector-runtime/connection.js';
import type { Encoder, PluginContext, Sink, WriteResult } from '../../types.js';
import { messageKey, type SinkConfig } from './sink-config.js';
import { rdkafka } from './engine.js';
import { allBrokersDown, checkCaFile, connectNative, disconnectNative, explainNative, nativeConfig, routeEvents } from './native-client.js';

/** librdkafka's codes for a message refused for good: dead-lettered, never retried. */
const REFUSED = new Set([
  2, // INVALID_MSG (corrupt)
  4, // INVALID_MSG_SIZE
  10, // MSG_SIZE_TOO_LARGE
  18, // RECORD_LIST_TOO_LARGE
  87, // INVALID_RECORD
]);
const QUEUE_FULL = -184;

/** Messages per unit are numbered within the opaque value: unit id * SLOT + index. */
const SLOT = 2 ** 24;

interface Pending {
  left: number;
  failed: { index: number; err: LibrdKafkaError }[];
  done: () => void;
  abort: (err: Error) => void;
}

/** A producer with the delivery reports of its units in flight. */
class UnitProducer {
  private readonly units = new Map<number, Pending>();
  private next = 1;
  /** Woken by any delivery report: a produce() that found the queue full tries again. */
  private drained: (() => void)[] = [];
  closed?: Error;

  constructor(readonly p: Producer) {
    p.on('delivery-report', (err: LibrdKafkaError | null | undefined, report: DeliveryReport) => {
      const id = Math.floor((report.opaque as number) / SLOT);
      const u = this.units.get(id);
      if (u) {
        if (err) u.failed.push({ index: (report.opaque as number) % SLOT, err });
        if (--u.left === 0) {
          this.units.delete(id);
          u.done();
        }
      }
      if (this.drained.length) for (const w of this.drained.splice(0)) w();
    });
  }

  /** Produces every message and resolves when each has its delivery report: the failed ones. */
  async send(topic: string, messages: { key: string | null; value: Buffer }[]): Promise<Pending['failed']> {
    if (messages.length >= SLOT) throw new Error(`a unit of ${messages.length} messages is above ${SLOT}`);
    const id = this.next++;
    let done!: () => void;
    let abort!: (err: Error) => void;
    const finished = new Promise<void>((resolve, reject) => ((done = resolve), (abort = reject)));
    const u: Pending = { left: messages.length, failed: [], done, abort };
    this.units.set(id, u);
    for (let i = 0; i < messages.length; ) {
      if (this.closed) throw this.closed;
      const m = messages[i]!;
      try {
        this.p.produce(topic, null, m.value, m.key, null, id * SLOT + i);
        i++;
      } catch (e) {
        const err = e as LibrdKafkaError;
        if (err.code === QUEUE_FULL) {
          // librdkafka's queue is full: wait for a delivery report (or a moment), then go on.
          await new Promise<void>((r) => {
            const t = setTimeout(r, 100);
            this.drained.push(() => (clearTimeout(t), r()));
          });
          continue;
        }
        if (!REFUSED.has(err.code)) {
          this.units.delete(id);
          throw e;
        }
        // Refused before it left (larger than message.max.bytes): no report will come.
        u.failed.push({ index: i, err });
        i++;
        if (--u.left === 0) {
          this.units.delete(id);
          u.done();
        }
      }
    }
    // Sent now rather than after linger.ms: the write waits for this unit's reports anyway.
    this.p.flush(0);
    await finished;
    return u.failed;
  }

  /** Fails the units in flight (their reports will not come): the runtime writes them again. */
  fail(err: Error) {
    this.closed = err;
    for (const u of this.units.values()) u.abort(err);
    this.units.clear();
  }
}

export function nativeSink(
  c: Omit<SinkConfig, 'librdkafka_options'> & { librdkafka_options?: Record<string, string> },
  ctx: PluginContext & { encoder: Encoder },
): Sink {
  const redact = ctx.redact ?? ((s: string) => s);
  const link = new Connection<UnitProducer>(
    ctx,
    'kafka',
    async (lost) => {
      await checkCaFile(c);
      const K = await rdkafka();
      const conf = nativeConfig(c, { brokers: c.brokers, clientId: `svc-${ctx.pipeline}`, extra: c.librdkafka_options });
      Object.assign(conf, {
        dr_cb: true,
        // Equal keys on the partition the Java client and kafkajs pick (librdkafka's own default is CRC32).
        partitioner: 'murmur2_random',
        // Messages without a key spread over the partitions one by one, as with kafkajs (librdkafka
        // would stick to one partition per batch).
        'sticky.partitioning.linger.ms': 0,
        acks: String(c.acks),
        'compression.codec': c.compression,
        'linger.ms': c.linger_ms,
        'enable.idempotence': c.enable_idempotence,
        ...c.librdkafka_options,
      });
      const p = new K.Producer(conf);
      routeEvents(p, ctx.log, redact);
      const up = new UnitProducer(p);
      p.on('event.error', (e: LibrdKafkaError) => {
        // Every broker is gone: the runtime reports the loss and opens a new producer on the next write.
        if (allBrokersDown(e)) lost(new Error(explainNative(e, c)));
      });
      try {
        await connectNative(p, 10_000, c);
      } catch (e) {
        throw new Error(`cannot reach the brokers ${c.brokers.join(', ')}: ${(e as Error).message}`, { cause: e });
      }
      // Delivery reports are served from librdkafka's background thread, not from a JS timer.
      p.setPollInBackground(true);
      return up;
    },
    async (up) => {
      // A closed producer sends no more reports: its units in flight are written again.
      up.fail(new Error('the producer was closed'));
      await disconnectNative(up.p, 10_000);
    },
  );
  return {
    async write(batch): Promise<WriteResult | void> {
      const records = batch.records!;
      if (records.length === 0) return;
      let bytes = 0;
      const messages = records.map((r) => {
        const value = ctx.encoder.one(r);
        bytes += value.length;
        return { key: messageKey(r, c.key_field), value };
      });
      const failed = await link.use(async (up) => {
        const f = await up.send(c.topic, messages);
        // Nothing landed: the brokers are gone, not the data; the runtime retries with a new producer.
        if (f.length === messages.length && !f.every((x) => REFUSED.has(x.err.code))) throw new Error(explainNative(f[0]!.err, c));
        return f;
      });
      if (failed.length === 0) return { bytes };
      const rejected: NonNullable<WriteResult['rejected']> = [];
      const retry: NonNullable<WriteResult['retry']> = [];
      for (const f of failed) {
        const reason = `kafka: ${redact(explainNative(f.err, c))}`;
        if (REFUSED.has(f.err.code)) rejected.push({ index: f.index, reason });
        else retry.push({ index: f.index, reason });
      }
      return { bytes, rejected, retry };
    },
    close: () => link.end(),
  };
}
