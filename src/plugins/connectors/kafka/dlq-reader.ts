// Reads back a DLQ written by the `kafka` sink, bounded: each partition of the topic from its low
// to its high watermark as they were when the read began (what arrives later waits for the next
// read). kafkajs has no manual partition assignment, so a consumer of a group of its own, unique to
// this read, reads from the beginning and commits nothing; the group is deleted afterwards.
import { randomUUID } from 'node:crypto';
import type { Consumer, Kafka } from 'kafkajs';
import type { DlqItem, DlqReader, DlqReaderContext } from '../../types.js';
import { explain, kafkaClient, within, type Security } from './client.js';

/** Messages fetched ahead of the caller at most (then the fetch loop waits). */
const AHEAD = 1000;

export function kafkaDlqReader(c: Security & { brokers: string[]; topic: string }, ctx: DlqReaderContext): DlqReader {
  let kafka: Kafka | undefined;
  let consumer: Consumer | undefined;
  const groupId = `svc-dlq-reader-${randomUUID()}`;
  let closed = false;
  let release = () => {};
  return {
    async *read(): AsyncIterable<DlqItem> {
      kafka = await kafkaClient(c, { clientId: `svc-${ctx.pipeline}-dlq-reader`, log: ctx.log });
      const admin = kafka.admin({ retry: { retries: 2 } });
      let ends: Map<number, bigint>;
      try {
        await admin.connect();
        const offsets = await admin.fetchTopicOffsets(c.topic);
        ends = new Map(offsets.filter((o) => BigInt(o.high) > BigInt(o.low)).map((o) => [o.partition, BigInt(o.high)]));
      } catch (e) {
        throw new Error(`cannot read the end offsets of topic ${c.topic}: ${explain(e, c)}`, { cause: e });
      } finally {
        await admin.disconnect().catch(() => {});
      }
      if (ends.size === 0) return;

      const queue: DlqItem[] = [];
      let failure: Error | undefined;
      let wake = () => {};
      let drained = () => {};
      const notify = () => wake();
      ctx.signal.addEventListener('abort', notify, { once: true });
      consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 200, retry: { retries: 2, restartOnFailure: async () => false } });
      consumer.on(consumer.events.CRASH, (e) => {
        failure = new Error(explain(e.payload.error, c));
        notify();
      });
      await consumer.connect();
      await consumer.subscribe({ topics: [c.topic], fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch, heartbeat }) => {
          const end = ends.get(batch.partition);
          if (end === undefined) return;
          for (const m of batch.messages) {
            const offset = BigInt(m.offset);
            if (offset >= end) break;
            queue.push({ location: `${c.topic}/${batch.partition}/${m.offset}`, payload: m.value ?? Buffer.alloc(0) });
            if (offset === end - 1n) ends.delete(batch.partition);
          }
          notify();
          while (queue.length >= AHEAD && !closed) {
            await new Promise<void>((r) => (drained = release = r));
            await heartbeat();
          }
        },
      });
      for (;;) {
        while (queue.length) {
          yield queue.shift()!;
          if (queue.length < AHEAD) drained();
        }
        if (failure) throw failure;
        if (ends.size === 0) return;
        if (ctx.signal.aborted) throw new Error(`reading topic ${c.topic} stopped before its end offsets`);
        await new Promise<void>((r) => (wake = r));
      }
    },
    async close() {
      closed = true;
      release(); // a fetch loop waiting for the caller: it is not coming back
      if (consumer) await within(consumer.disconnect(), 10_000, 'disconnecting the DLQ reader').catch(() => {});
      if (!kafka || !consumer) return;
      // The read's own group: nothing committed, nothing left to keep.
      const admin = kafka.admin({ retry: { retries: 0 } });
      await admin
        .connect()
        .then(() => admin.deleteGroups([groupId]))
        .catch(() => {})
        .finally(() => admin.disconnect().catch(() => {}));
    },
  };
}
