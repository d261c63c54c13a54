// Source `kafka` (stream): a consumer group member reading one or more topics. With
// enable_auto_commit false (the default) the offsets of a unit (one poll batch, at most
// max_poll_records messages) are committed only after every record from it was written or
// dead-lettered: offset+1 of its last message per topic and partition (at-least-once). A unit that
// was not delivered ends the session uncommitted, so the group reads it again after the reconnect.
// The group's start position on partitions it never committed (auto_offset_reset) is committed
// at the join, so a reconnect never applies `latest` twice. With enable_auto_commit true kafkajs
// commits each fetched batch as soon as it is queued (at-most-once). docs/connectors/kafka.md.
import type { Consumer, Kafka } from 'kafkajs';
import type { Logger } from '../../../observability/log.js';
import { streamSource, type Session, type SessionHandlers } from '../../connector-runtime/stream-source.js';
import { defineSource, type PluginContext } from '../../types.js';
import { checkCluster, explain, kafkaClient, lintEngine, lintSecurity, nativeOptions, within } from './client.js';
import { chooseEngine, engineInfo } from './engine.js';
import { guardKafkajsFetch } from './kafkajs-guard.js';
import { kafkaMetrics, lagReporter } from './metrics.js';
import { connectNative } from './native-source.js';
import { sourceConfig as config, type KafkaMessage, type SourceConfig } from './source-config.js';

/** Partition lag state: the last high watermark seen and the next offset the group will read. */
interface Lag {
  hw: bigint;
  next: bigint;
}

/**
 * Where the group would start (auto_offset_reset) on the partitions of `topics` it has no
 * committed offset for: each partition's high watermark (latest) or low watermark (earliest),
 * read before the group join, so the consumer starts there or later. A topic that does not exist
 * yet is skipped (it has nothing to skip over).
 */
async function resetPositions(kafka: Kafka, groupId: string, topics: string[], reset: 'latest' | 'earliest', log: Logger) {
  const admin = kafka.admin({ retry: { retries: 0 } });
  const out: { topic: string; partition: number; offset: bigint }[] = [];
  try {
    await admin.connect();
    for (const topic of topics) {
      // The watermarks first: this also loads the cluster metadata the group lookup needs.
      let marks: Awaited<ReturnType<typeof admin.fetchTopicOffsets>>;
      try {
        marks = await admin.fetchTopicOffsets(topic);
      } catch (e) {
        log.debug({ connector: 'kafka', topic, err: explain(e) }, 'kafka: no start positions for this topic yet');
        continue;
      }
      const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
      const missing = new Set(committed!.partitions.filter((p) => Number(p.offset) < 0).map((p) => p.partition));
      for (const m of marks) if (missing.has(m.partition)) out.push({ topic, partition: m.partition, offset: BigInt(reset === 'latest' ? m.high : m.low) });
    }
  } finally {
    await admin.disconnect().catch(() => {});
  }
  return out;
}

async function connectKafkajs(
  c: SourceConfig,
  ctx: PluginContext,
  topics: string[],
  groupId: string,
  { push, lost }: SessionHandlers<KafkaMessage>,
): Promise<Session<KafkaMessage>> {
  const atMostOnce = c.enable_auto_commit;
  let closing = false;
  const broken = (err: Error) => {
    if (!closing) lost(err);
  };
  guardKafkajsFetch();
  const kafka = await kafkaClient(c, { clientId: `svc-${ctx.pipeline}`, log: ctx.log, redact: ctx.redact, onBroken: broken });
  const heartbeatMs = Math.min(3000, Math.floor(c.session_timeout_ms / 3));
  const consumer: Consumer = kafka.consumer({
    groupId,
    sessionTimeout: c.session_timeout_ms,
    heartbeatInterval: heartbeatMs,
    // The longest a fetch waits for data before it returns empty.
    maxWaitTimeInMs: 500,
    // A couple of quick retries for passing errors; then the runtime reconnects.
    retry: { retries: 2, initialRetryTime: 200, maxRetryTime: 2000, restartOnFailure: async () => false },
  });
  let crashed: Error | undefined;
  consumer.on(consumer.events.CRASH, (e) => {
    crashed = new Error(explain(e.payload.error));
    broken(crashed);
  });
  // kafkajs disconnects only when told to (close() below) or when it crashed: CRASH, which
  // follows its DISCONNECT, carries the reason, so DISCONNECT itself is not a loss here.
  let assignment: Record<string, number[]> = {};
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    assignment = e.payload.memberAssignment;
    ctx.log.debug({ connector: 'kafka', group: groupId, assignment }, `kafka: joined group ${groupId}`);
  });

  // Backpressure: while paused, eachBatch does not return, so kafkajs fetches nothing more
  // (its fetch loop waits for the handler); it keeps the group membership alive with
  // heartbeats meanwhile. (kafkajs's own pause() drops fetched data and, with every
  // partition paused, sleeps maxWaitTime between polls: a tenth of the throughput here.)
  let paused = false;
  let resumed: Promise<void> = Promise.resolve();
  let wakeUp = () => {};

  const lags = new Map<string, Lag>();
  const report = (topic: string, partition: number, l: Lag) => {
    const lag = l.hw - l.next;
    lagReporter(ctx.telemetry)?.(topic, partition, Number(lag > 0n ? lag : 0n));
  };

  /** Acknowledged offsets not yet committed, and the commit under way. */
  let pending = new Map<string, { topic: string; partition: number; offset: bigint }>();
  let committing: Promise<void> | undefined;
  const commitPending = async (rethrow = false) => {
    while (pending.size) {
      const todo = pending;
      pending = new Map();
      try {
        await consumer.commitOffsets([...todo.values()].map((n) => ({ topic: n.topic, partition: n.partition, offset: n.offset.toString() })));
      } catch (e) {
        // Not committed: the session ends and the group reads these messages again.
        pending.clear();
        const err = new Error(`offset commit failed: ${explain(e)}`);
        if (rethrow) throw err;
        broken(err);
        return;
      }
      for (const [key, n] of todo) {
        const l = lags.get(key);
        if (!l || n.offset < l.next) continue; // a start position behind what was already fetched
        l.next = n.offset;
        report(n.topic, n.partition, l);
      }
    }
  };

  let starts: Awaited<ReturnType<typeof resetPositions>> = [];
  try {
    await consumer.connect();
    await consumer.subscribe({ topics, fromBeginning: c.auto_offset_reset === 'earliest' });
    if (!atMostOnce) starts = await resetPositions(kafka, groupId, topics, c.auto_offset_reset, ctx.log);
    await consumer.run({
      autoCommit: atMostOnce,
      eachBatchAutoResolve: atMostOnce,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning }) => {
        if (closing || batch.messages.length === 0) return;
        const { topic, partition } = batch;
        const batchMeta = { topic, partition };
        for (const m of batch.messages) {
          push({
            body: m.value ?? Buffer.alloc(0),
            // One object per batch: a unit holds messages of equal metadata (the runtime), so no per-message values here.
            meta: batchMeta,
            topic,
            partition,
            offset: m.offset,
          });
        }
        // Moves only the fetch position; the commit waits for delivery (ack below).
        if (!atMostOnce) resolveOffset(batch.lastOffset());
        const key = `${topic}\u0000${partition}`;
        let l = lags.get(key);
        if (!l) lags.set(key, (l = { hw: 0n, next: BigInt(batch.firstOffset()!) }));
        l.hw = BigInt(batch.highWatermark);
        if (atMostOnce) l.next = BigInt(batch.lastOffset()) + 1n;
        report(topic, partition, l);
        while (paused && !closing && isRunning()) {
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([resumed, new Promise<void>((r) => (timer = setTimeout(r, heartbeatMs)))]);
          clearTimeout(timer);
          if (paused && !closing) await heartbeat(); // a rebalance throws here: kafkajs rejoins
        }
      },
    });
  } catch (e) {
    closing = true;
    await within(consumer.disconnect(), 10_000, 'disconnecting').catch(() => {});
    throw new Error(`cannot consume ${topics.join(', ')} from ${c.brokers.join(', ')}: ${explain(e, c)}`, { cause: e });
  }
  // run() resolves after the group join; a join that failed has crashed the consumer already.
  if (crashed) {
    closing = true;
    await within(consumer.disconnect(), 10_000, 'disconnecting').catch(() => {});
    throw new Error(`cannot join consumer group '${groupId}': ${crashed.message}`);
  }
  // auto_offset_reset, made durable: the group's first position on each partition it never
  // committed is committed now. A session lost before its first commit (a broken
  // connection, a batch a sink refused) then resumes there: `latest` is not applied a second
  // time, which would skip what arrived in between.
  for (const st of starts) {
    const key = `${st.topic}\u0000${st.partition}`;
    if (assignment[st.topic]?.includes(st.partition) && !pending.has(key)) pending.set(key, st);
  }
  try {
    await commitPending(true);
  } catch (e) {
    closing = true;
    await within(consumer.disconnect(), 10_000, 'disconnecting').catch(() => {});
    throw new Error(`cannot commit the start positions of group '${groupId}': ${(e as Error).message}`, { cause: e });
  }

  const session: Session<KafkaMessage> = {
    pause() {
      if (paused) return;
      paused = true;
      resumed = new Promise<void>((r) => (wakeUp = r));
    },
    resume() {
      paused = false;
      wakeUp();
    },
    async ack(batch) {
      // Per topic and partition: offset+1 of the batch's last (highest) message. Commits go
      // out one at a time; acknowledgements that arrive meanwhile share the next one.
      // A partition's messages arrive in offset order: its last one in the batch is its highest.
      const seen = new Set<string>();
      for (let i = batch.length - 1; i >= 0; i--) {
        const m = batch[i]!;
        const key = `${m.topic}\u0000${m.partition}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const o = BigInt(m.offset) + 1n;
        const cur = pending.get(key);
        if (!cur || o > cur.offset) pending.set(key, { topic: m.topic, partition: m.partition, offset: o });
      }
      committing ??= commitPending().finally(() => (committing = undefined));
    },
    async close() {
      closing = true;
      wakeUp();
      // What was acknowledged is committed before the group is left (a clean stop redelivers nothing).
      if (committing) await within(committing, 10_000, 'the last offset commit').catch(() => {});
      await within(consumer.disconnect(), 15_000, 'leaving the consumer group').catch((e: Error) =>
        ctx.log.warn({ connector: 'kafka', err: e.message }, 'kafka: consumer did not close cleanly'),
      );
    },
  };
  return session;
}

export default defineSource({
  key: 'kafka',
  summary: 'Consume Kafka topics as a consumer group, committing offsets after delivery.',
  mode: 'stream',
  delivery: {
    guarantee: 'at-least-once',
    why: 'offsets are committed per poll batch only after every record from it was written or dead-lettered, so an offset never moves past a record a sink refused; a lost session or an undelivered batch is read again from the last commit (duplicates possible). With `enable_auto_commit: true` it is at-most-once.',
  },
  config,
  lint: (c) => [...lintSecurity(c), ...lintEngine(c)],
  examples: [
    {
      title: 'One topic from the beginning, own consumer group',
      yaml: 'type: kafka\nbrokers: [kafka-1:9092, kafka-2:9092]\ntopic: pm.counters\ngroup_id: svc-pm\nauto_offset_reset: earliest',
    },
    {
      title: 'Several topics over SASL_SSL (SCRAM)',
      yaml: 'type: kafka\nbrokers: [kafka.example.net:9093]\ntopic: [alarms.ran, alarms.core]\nsecurity_protocol: SASL_SSL\nsasl_mechanism: SCRAM-SHA-512\nsasl_username: svc\nsasl_password: ${KAFKA_PASSWORD:-change-me}\nssl_cafile: /etc/svc/kafka-ca.pem\nmax_poll_records: 1000',
    },
  ],
  async test(c, { log }) {
    await checkCluster(c, log);
  },
  engine: engineInfo,
  metrics: kafkaMetrics,
  create(c, ctx) {
    const topics = [...new Set(Array.isArray(c.topic) ? c.topic : [c.topic])];
    const groupId = c.group_id ?? ctx.pipeline;
    const atMostOnce = c.enable_auto_commit;
    return streamSource<KafkaMessage>(ctx, {
      type: 'kafka',
      reconnect: c,
      acknowledges: !atMostOnce,
      maxBatch: c.max_poll_records,
      highWater: 2 * c.max_poll_records,
      async connect(h) {
        return (await chooseEngine(c.engine, ctx.log)) === 'librdkafka'
          ? connectNative({ ...c, librdkafka_options: nativeOptions(c.librdkafka_options) }, ctx, topics, groupId, h)
          : connectKafkajs(c, ctx, topics, groupId, h);
      },
    });
  },
});
