// The kafka sink on librdkafka: a batch's records are handed to produce() one after another
// (librdkafka batches, compresses and retries them itself) and write() resolves then, without
// waiting for the broker; flush(), which the runtime calls before it acknowledges any source unit,
// waits until librdkafka has settled every message written before it (the runtime's
// deferred-delivery contract: docs/development.md). So the next batch's produce() overlaps the
// previous one's round trip to the brokers, and nothing is acknowledged before the brokers have it.
//
// Delivery reports come for failures only (librdkafka's delivery.report.only.error): one report per
// message, with an opaque to find its record, cost as much again as produce() itself (measured: a
// bare producer of this client on the mock cluster makes 49.5k msg/s with a report and opaque per
// message, 132.7k/s with failure reports only). Without a report per message, two things need care:
//
// - Knowing that a failure report will not come any more (the barrier, settle()). librdkafka's
//   flush() returns without error only once no message is left in its queues (curr_msgs is 0 and the
//   reply queue empty), and a failed message leaves curr_msgs only after its delivery report
//   callback has returned (rd_kafka_poll_cb, RD_KAFKA_OP_DR: dr_msg_cb, then rd_kafka_msg_destroy).
//   That callback is the client's C++ Delivery::dr_cb, which copies the report into a queue of its
//   DeliveryReportDispatcher and wakes the JS thread through a uv_async handle; the JS side is
//   handed at most 100 reports per wake-up, and the dispatcher wakes itself again while some are
//   left (src/callbacks.cc of @confluentinc/kafka-javascript 1.10.1). flush()'s own callback comes
//   through libuv's thread-pool completion, another uv_async handle, which libuv may run before the
//   dispatcher's in the same loop turn: so the reports may still be queued when flush()'s callback
//   runs. What is certain: from flush()'s callback on, while that queue is not empty a wake-up is
//   pending, and a pending uv_async runs in the poll phase of the next loop turn, handing at least
//   one report. settle() therefore waits, after flush(), for one whole loop turn (check phase to
//   check phase, setImmediate) in which no report came: the queue was empty at its poll phase, so
//   every failure report of the messages produced before the barrier has been handled.
// - Knowing which record a failure report is about. An opaque per message is out: the client keeps
//   it in a persistent handle released only when its report is dispatched, so with failure reports
//   only, every delivered message would leak one. The report of a failure carries the message's key
//   and (dr_msg_cb) a copy of its value; settle() matches them against the messages written since the
//   last barrier, in the order they were produced (librdkafka reports a partition's messages in
//   order). Two messages with the same key and value are the same bytes: the report goes to the
//   earlier one. This costs nothing while messages are delivered; a failure costs one pass over the
//   messages kept. A report that matches no message kept fails the flush (nothing acknowledged).
//
// A message the broker refuses for good (too large, invalid) is returned by flush() as rejected,
// with librdkafka's error, and goes to the DLQ; one that failed for a passing reason (a timeout, a
// broker gone) fails the flush, so the units stay unacknowledged and are read again; when every
// message produced since the last barrier failed, the producer is dropped and the next write opens
// another. The sink keeps what it wrote since the last barrier (to name a refused record): past
// RETAIN_MAX messages, write() starts a barrier, which bounds the memory held (and keeps records
// young for the GC); it does not wait for it, so the next write encodes its records meanwhile and
// waits only before its produce() (a barrier awaited in write() left the JavaScript thread idle
// for its round trip: 13-24% of the kafka-produce leg).
import type { DeliveryReport, LibrdKafkaError, Producer } from '@confluentinc/kafka-javascript';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '../../connector-runtime/connection.js';
import type { Encoder, FlushResult, PluginContext, Sink, SinkBatch, WriteResult } from '../../types.js';
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
const TIMED_OUT = -185;

/**
 * Messages written since the last barrier, at most (then write() starts one): they are kept, with
 * their records, until librdkafka has settled them, to name the record of a failure report. Few
 * enough that most records die in V8's young generation: at 100,000 every record outlived two
 * scavenges and was promoted, and the process spent about 2 us more CPU per record (kafka-produce,
 * 300,000 records: 9.9-11.5 us at 100,000, 7.4-9.0 us at 10,000); a barrier costs about one round
 * trip (librdkafka's flush() sends at once, without linger.ms).
 */
const RETAIN_MAX = 10_000;

/** One write's messages: values[i] (and keys[i], when key_field is set) is record i's. */
interface Messages {
  values: Buffer[];
  keys?: (string | null)[];
}

/** A failure report: librdkafka's error and the message's key and value as the report carries them. */
interface Failure {
  err: LibrdKafkaError;
  key: Buffer | null;
  value: Buffer | null;
}

/** A producer that reports failures only, and the barrier that makes them certain. */
class SettlingProducer {
  /** Failure reports handled since the last barrier. */
  private failures: Failure[] = [];
  /** Delivery reports handled, ever: settle() waits for a loop turn that adds none. */
  private handled = 0;
  /** Messages produced since the last barrier. */
  produced = 0;
  closed?: Error;

  constructor(readonly p: Producer) {
    p.on('delivery-report', (err: LibrdKafkaError | null | undefined, report: DeliveryReport) => {
      this.handled++;
      if (err) this.failures.push({ err, key: report.key ?? null, value: (report.value as Buffer | undefined) ?? null });
    });
  }

  /** Produces every message (waiting while librdkafka's queue is full); returns those librdkafka refused at once. */
  async produce(topic: string, { values, keys }: Messages): Promise<{ index: number; err: LibrdKafkaError }[]> {
    const refusedNow: { index: number; err: LibrdKafkaError }[] = [];
    for (let i = 0; i < values.length; ) {
      if (this.closed) throw this.closed;
      try {
        this.p.produce(topic, null, values[i]!, keys ? keys[i] : null);
        this.produced++;
        i++;
      } catch (e) {
        const err = e as LibrdKafkaError;
        if (err.code === QUEUE_FULL) {
          // librdkafka's queue is full (queue.buffering.max.messages/kbytes): its broker threads empty it.
          await sleep(1);
          continue;
        }
        if (!REFUSED.has(err.code)) throw e;
        // Refused before it left (larger than message.max.bytes): no report will come, and write() says so at once.
        refusedNow.push({ index: i, err });
        i++;
      }
    }
    return refusedNow;
  }

  /**
   * The barrier: resolves once every message produced before it is delivered or failed, with the
   * failure reports since the last barrier and how many messages it covers (see the top comment).
   */
  async settle(): Promise<{ failures: Failure[]; produced: number }> {
    for (;;) {
      if (this.closed) throw this.closed;
      // In slices: a flush() blocks one of libuv's pool threads while it waits.
      const err = await new Promise<LibrdKafkaError | null | undefined>((r) => this.p.flush(1000, r));
      if (!err) break;
      if (err.code !== TIMED_OUT) throw err;
    }
    await nextTurn();
    for (let seen = -1; seen !== this.handled; ) {
      seen = this.handled;
      await nextTurn();
    }
    // Closed meanwhile: what librdkafka dropped at the close may not all have been reported.
    if (this.closed) throw this.closed;
    const settled = { failures: this.failures, produced: this.produced };
    this.failures = [];
    this.produced = 0;
    return settled;
  }

  /** Fails the barriers to come (the reports of what is in flight will not come): the runtime writes those units again. */
  fail(err: Error) {
    this.closed = err;
  }
}

/** A write since the last barrier of its producer: the batch and the messages made of it. */
interface Kept {
  batch: SinkBatch;
  up: SettlingProducer;
  messages: Messages;
}

/**
 * Finds the message of each failure report among the writes kept (in the order produced; a message
 * is taken once). Returns the located failures and those no kept message matches.
 */
function locate(failures: Failure[], writes: Kept[]) {
  const found: { batch: SinkBatch; index: number; err: LibrdKafkaError }[] = [];
  const byLength = new Map<number, Failure[]>();
  for (const f of failures) {
    if (!f.value) continue;
    const same = byLength.get(f.value.length);
    if (same) same.push(f);
    else byLength.set(f.value.length, [f]);
  }
  const left = new Set(failures);
  for (const w of writes) {
    if (byLength.size === 0) break;
    const { values, keys } = w.messages;
    for (let i = 0; i < values.length; i++) {
      const value = values[i]!;
      const key = keys?.[i] ?? null;
      const same = byLength.get(value.length);
      if (!same) continue;
      const at = same.findIndex((f) => f.value!.equals(value) && (f.key === null ? key === null : key !== null && f.key.toString() === key));
      if (at < 0) continue;
      const [f] = same.splice(at, 1);
      if (same.length === 0) byLength.delete(value.length);
      left.delete(f!);
      found.push({ batch: w.batch, index: i, err: f!.err });
    }
  }
  return { found, unmatched: [...left] };
}

export function nativeSink(
  c: Omit<SinkConfig, 'librdkafka_options'> & { librdkafka_options?: Record<string, string> },
  ctx: PluginContext & { encoder: Encoder },
): Sink {
  const redact = ctx.redact ?? ((s: string) => s);
  const link = new Connection<SettlingProducer>(
    ctx,
    'kafka',
    async (lost) => {
      await checkCaFile(c);
      const K = await rdkafka();
      const conf = nativeConfig(c, { brokers: c.brokers, clientId: `svc-${ctx.pipeline}`, extra: c.librdkafka_options });
      Object.assign(conf, {
        dr_cb: true,
        // A failure report carries a copy of the message's value: locate() finds its record by it.
        dr_msg_cb: true,
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
        // Reports for failures only; settle() is the barrier that makes them certain (top comment).
        'delivery.report.only.error': true,
      });
      const p = new K.Producer(conf);
      routeEvents(p, ctx.log, redact);
      const up = new SettlingProducer(p);
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
      // A closed producer settles nothing more: its units in flight are written again.
      up.fail(new Error('the producer was closed'));
      await disconnectNative(up.p, 10_000);
    },
  );
  /** Writes since the last barrier of their producer, in the order produced. */
  let kept: Kept[] = [];
  /** What barriers taken in write() (RETAIN_MAX) found, for the next flush() to report. */
  let rejectedEarlier: NonNullable<FlushResult['rejected']> = [];
  let passingEarlier: Error | undefined;
  let keptMessages = 0;

  /** Settles every write kept: the refused records, and the first passing failure. */
  async function settleAll(): Promise<{ rejected: NonNullable<FlushResult['rejected']>; passing?: Error }> {
    const writes = kept;
    kept = [];
    keptMessages = 0;
    const rejected: NonNullable<FlushResult['rejected']> = [];
    let passing: Error | undefined;
    for (const up of new Set(writes.map((w) => w.up))) {
      let settled: Awaited<ReturnType<SettlingProducer['settle']>>;
      try {
        settled = await up.settle();
      } catch (e) {
        // The producer was closed with these in flight (its brokers were lost), or flush() failed: not settled.
        passing ??= e as Error;
        continue;
      }
      const { failures, produced } = settled;
      if (failures.length === 0) continue;
      const refused = failures.filter((f) => REFUSED.has(f.err.code));
      const transient = failures.filter((f) => !REFUSED.has(f.err.code));
      if (transient.length) passing ??= new Error(explainNative(transient[0]!.err, c));
      // Nothing landed: the brokers are gone, not the data; the next write opens a new producer.
      if (transient.length === produced) link.drop(up, new Error(explainNative(transient[0]!.err, c)));
      if (refused.length === 0) continue;
      const { found, unmatched } = locate(
        refused,
        writes.filter((w) => w.up === up),
      );
      for (const f of found) rejected.push({ batch: f.batch, index: f.index, reason: `kafka: ${redact(explainNative(f.err, c))}` });
      if (unmatched.length) passing ??= new Error(`a refused message matches no record written (${explainNative(unmatched[0]!.err, c)})`);
    }
    return { rejected, passing };
  }

  /**
   * A barrier write() started at RETAIN_MAX and did not wait for: the next write encodes its records
   * meanwhile and waits for it only before its produce() (librdkafka's flush() would wait for those
   * messages too), and flush() waits for it first.
   */
  let barrier: Promise<void> | undefined;
  const settleInBackground = () => {
    barrier = settleAll()
      .then(({ rejected, passing }) => {
        rejectedEarlier.push(...rejected);
        passingEarlier ??= passing;
      })
      .catch((e: Error) => {
        passingEarlier ??= e;
      })
      .finally(() => (barrier = undefined));
  };

  return {
    async write(batch): Promise<WriteResult | void> {
      const records = batch.records!;
      if (records.length === 0) return;
      let bytes = 0;
      // Arrays, not an object per message: what a write keeps until its barrier stays small for the GC.
      const values = new Array<Buffer>(records.length);
      for (let i = 0; i < records.length; i++) bytes += (values[i] = ctx.encoder.one(records[i]!)).length;
      const keyField = c.key_field;
      const messages: Messages = keyField === undefined ? { values } : { values, keys: records.map((r) => messageKey(r, keyField)) };
      if (barrier) await barrier;
      const { up, refusedNow } = await link.use(async (up) => ({ up, refusedNow: await up.produce(c.topic, messages) }));
      kept.push({ batch, up, messages });
      keptMessages += values.length;
      // Bounds what is kept: settled while the next write encodes, reported by the next flush().
      if (keptMessages >= RETAIN_MAX) settleInBackground();
      if (refusedNow.length === 0) return { bytes };
      return { bytes, rejected: refusedNow.map((f) => ({ index: f.index, reason: `kafka: ${redact(explainNative(f.err, c))}` })) };
    },
    async flush(): Promise<FlushResult | void> {
      if (barrier) await barrier;
      const settled = await settleAll();
      const rejected = [...rejectedEarlier, ...settled.rejected];
      const passing = passingEarlier ?? settled.passing;
      rejectedEarlier = [];
      passingEarlier = undefined;
      // Not delivered for a passing reason: the units stay unacknowledged and are read again.
      if (passing) throw new Error(`kafka: not delivered: ${redact(passing.message)}`);
      return rejected.length ? { rejected } : undefined;
    },
    close: () => link.end(),
  };
}
