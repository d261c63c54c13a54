// The kafka source on librdkafka: a KafkaConsumer in a consumer group, read by a loop of consume()
// calls that never stops while the session lives (librdkafka serves the group's rebalances and
// events from it, and a consumer that stops polling leaves the group). Offsets are committed by
// svc after delivery (enable.auto.commit false), one commit in flight at a time; backpressure
// stops the reading, and when it lasts pauses the assigned partitions (librdkafka stops fetching
// them) until resume();
// svc_kafka_consumer_lag comes from librdkafka's statistics (hi_offset - committed offset).
// With enable_auto_commit true librdkafka commits what it handed over (at-most-once).
import type { KafkaConsumer, LibrdKafkaError, Message as RdMessage, TopicPartition, TopicPartitionOffset } from '@confluentinc/kafka-javascript';
import type { Session, SessionHandlers } from '../../connector-runtime/stream-source.js';
import type { PluginContext } from '../../types.js';
import { within } from './client.js';
import { rdkafka } from './engine.js';
import { allBrokersDown, checkCaFile, connectNative as connectClient, disconnectNative, explainNative, nativeConfig, routeEvents } from './native-client.js';
import type { KafkaMessage, SourceConfig } from './source-config.js';

type Config = Omit<SourceConfig, 'librdkafka_options'> & { librdkafka_options?: Record<string, string> };

const ASSIGN = -175;
const REVOKE = -174;
/** Commit errors that mean the partitions moved to another member: it reads them again (duplicates, never loss). */
const MOVED = new Set([22, 25, 27, -168]);
/** How long one consume() call waits for the first message (the loop's pace when idle). */
const CONSUME_WAIT_MS = 100;
/** librdkafka's prefetch per consumer, bounded (its default is 64 MiB): what a flood can hold in memory before the pause acts. */
const PREFETCH_KBYTES = 16_384;
/** How long a backpressure lasts before the assigned partitions are paused. */
const PAUSE_PARTITIONS_AFTER_MS = 1000;

const key = (topic: string, partition: number) => `${topic}\u0000${partition}`;

function promised<T>(f: (cb: (err: LibrdKafkaError | null | undefined, v: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => f((err, v) => (err ? reject(err as unknown as Error) : resolve(v))));
}

/**
 * Where the group would start (auto_offset_reset) on the partitions of `topics` it has no committed
 * offset for: each partition's high or low watermark, read before the join so the consumer starts
 * there or later (as the kafkajs engine; docs/connectors/kafka.md). Topics not there yet are skipped.
 */
async function resetPositions(consumer: KafkaConsumer, topics: string[], reset: 'latest' | 'earliest'): Promise<TopicPartitionOffset[]> {
  const out: TopicPartitionOffset[] = [];
  for (const topic of topics) {
    let parts: TopicPartition[];
    try {
      const md = await promised<{ topics: { name: string; partitions: { id: number }[] }[] }>((cb) => consumer.getMetadata({ topic, timeout: 5000 }, cb));
      parts = (md.topics.find((t) => t.name === topic)?.partitions ?? []).map((p) => ({ topic, partition: p.id }));
    } catch {
      continue;
    }
    if (parts.length === 0) continue;
    const committed = await promised<TopicPartitionOffset[]>((cb) => consumer.committed(parts, 5000, cb));
    for (const p of committed) {
      if (p.offset >= 0) continue;
      const w = await promised<{ lowOffset: number; highOffset: number }>((cb) => consumer.queryWatermarkOffsets(topic, p.partition, 5000, cb));
      out.push({ topic, partition: p.partition, offset: reset === 'latest' ? w.highOffset : w.lowOffset });
    }
  }
  return out;
}

/**
 * The lag of each assigned partition at the session's start (high watermark less the committed
 * offset), so that what arrived while the source was stopped shows at once; librdkafka's statistics
 * take over from there.
 */
async function reportStartLag(consumer: KafkaConsumer, parts: TopicPartition[], ctx: PluginContext) {
  if (!ctx.telemetry?.consumerLag || parts.length === 0) return;
  const committed = await promised<TopicPartitionOffset[]>((cb) => consumer.committed(parts, 5000, cb)).catch(() => []);
  for (const p of committed) {
    const w = await promised<{ lowOffset: number; highOffset: number }>((cb) => consumer.queryWatermarkOffsets(p.topic, p.partition, 5000, cb)).catch(
      () => undefined,
    );
    if (w) ctx.telemetry.consumerLag(p.topic, p.partition, Math.max(0, w.highOffset - (p.offset >= 0 ? p.offset : w.lowOffset)));
  }
}

export async function connectNative(
  c: Config,
  ctx: PluginContext,
  topics: string[],
  groupId: string,
  { push, lost }: SessionHandlers<KafkaMessage>,
): Promise<Session<KafkaMessage>> {
  const atMostOnce = c.enable_auto_commit;
  const redact = ctx.redact ?? ((s: string) => s);
  await checkCaFile(c);
  const K = await rdkafka();
  let closing = false;
  const broken = (err: Error) => {
    if (!closing) lost(err);
  };

  /** Backpressure from the runtime, and whether it lasted long enough to pause the partitions. */
  let paused = false;
  let partitionsPaused = false;
  let wakeUp = () => {};
  let assignment: TopicPartition[] = [];
  /**
   * Where to start on the partitions the group has no offset for (resetPositions, read before the
   * join), by topic and partition: assigned explicitly. Left to librdkafka, `latest` would be
   * resolved only when the fetcher asks the broker, after the assignment: messages sent in between
   * (the source already said it is connected) would be skipped. Cleared once committed.
   */
  const startAt = new Map<string, number>();
  let joined!: () => void;
  const join = new Promise<void>((r) => (joined = r));
  /** Acknowledged offsets not yet committed, and the commit under way. */
  let pending = new Map<string, TopicPartitionOffset>();
  let committing: Promise<void> | undefined;
  let commitDone: ((err: LibrdKafkaError | undefined) => void) | undefined;

  const conf = nativeConfig(c, { brokers: c.brokers, clientId: `svc-${ctx.pipeline}` });
  Object.assign(conf, {
    'group.id': groupId,
    'enable.auto.commit': atMostOnce,
    'enable.auto.offset.store': atMostOnce,
    'session.timeout.ms': c.session_timeout_ms,
    'heartbeat.interval.ms': Math.min(3000, Math.floor(c.session_timeout_ms / 3)),
    // As the kafkajs engine: a source may start before its topic exists.
    'allow.auto.create.topics': true,
    'queued.max.messages.kbytes': PREFETCH_KBYTES,
    'statistics.interval.ms': 1000,
    offset_commit_cb: (err: LibrdKafkaError | undefined) => {
      const done = commitDone;
      commitDone = undefined;
      done?.(err ?? undefined);
    },
    rebalance_cb(this: KafkaConsumer, err: LibrdKafkaError, parts: TopicPartition[]) {
      try {
        if (err.code === ASSIGN) {
          this.assign(
            parts.map((p) => {
              const offset = startAt.get(key(p.topic, p.partition));
              return offset === undefined ? p : { ...p, offset };
            }),
          );
          assignment = parts;
          if (partitionsPaused && parts.length) this.pause(parts);
          ctx.log.debug({ connector: 'kafka', group: groupId, assignment: parts }, `kafka: joined group ${groupId}`);
          joined();
        } else if (err.code === REVOKE) {
          // What was acknowledged is committed before the partitions go to another member, so it
          // reads on from there: only the units still in flight here are read again (duplicates).
          const todo = [...pending.values()];
          pending = new Map();
          if (todo.length) {
            try {
              this.commitSync(todo);
            } catch (e) {
              ctx.log.debug({ connector: 'kafka', err: explainNative(e) }, 'kafka: commit before a rebalance failed');
            }
          }
          this.unassign();
          assignment = [];
        } else broken(new Error(`consumer group rebalance failed: ${explainNative(err)}`));
      } catch (e) {
        broken(new Error(`consumer group rebalance failed: ${(e as Error).message}`));
      }
    },
    ...c.librdkafka_options,
  });
  // auto.offset.reset is a topic property: in the global configuration the binding ignores it.
  const consumer = new K.KafkaConsumer(conf, { 'auto.offset.reset': c.auto_offset_reset });
  routeEvents(consumer, ctx.log, redact);
  consumer.on('event.error', (e: LibrdKafkaError) => {
    if (allBrokersDown(e) || e.isFatal) broken(new Error(explainNative(e, c)));
  });
  consumer.on('event.stats', (ev: { message: string }) => {
    // Lag per assigned partition: its high watermark less the group's committed offset.
    const stats = JSON.parse(ev.message) as { topics?: Record<string, { partitions: Record<string, { consumer_lag: number; fetch_state: string }> }> };
    for (const [topic, t] of Object.entries(stats.topics ?? {})) {
      for (const [p, s] of Object.entries(t.partitions)) {
        const partition = Number(p);
        if (partition < 0 || s.consumer_lag < 0 || s.fetch_state === 'none') continue;
        ctx.telemetry?.consumerLag?.(topic, partition, s.consumer_lag);
      }
    }
  });

  const commitPending = async (rethrow = false) => {
    while (pending.size) {
      const todo = [...pending.values()];
      pending = new Map();
      const err = await new Promise<LibrdKafkaError | undefined>((resolve) => {
        commitDone = resolve;
        try {
          consumer.commit(todo);
        } catch (e) {
          commitDone = undefined;
          resolve(e as LibrdKafkaError);
        }
      });
      if (!err || MOVED.has(err.code)) continue;
      // Not committed: the session ends and the group reads these messages again.
      pending.clear();
      const e = new Error(`offset commit failed: ${explainNative(err)}`);
      if (rethrow) throw e;
      broken(e);
      return;
    }
  };

  const metas = new Map<string, { topic: string; partition: number }>();
  let looping: Promise<void> = Promise.resolve();
  const loop = async () => {
    while (!closing) {
      if (paused && !partitionsPaused) {
        // A short backpressure only stops the reading here (librdkafka's prefetch fills up to its
        // bound and waits). One that lasts pauses the partitions, so that the loop can go on
        // polling (the group, max.poll.interval.ms) without taking messages; pausing at once would
        // throw librdkafka's prefetch away at every pause, a fetch round trip each time.
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((r) => {
          wakeUp = r;
          timer = setTimeout(r, PAUSE_PARTITIONS_AFTER_MS);
        });
        clearTimeout(timer);
        if (paused && !closing && !partitionsPaused) {
          partitionsPaused = true;
          if (assignment.length) consumer.pause(assignment);
        }
        continue;
      }
      const msgs = await new Promise<RdMessage[]>((resolve) =>
        consumer.consume(partitionsPaused ? 1 : c.max_poll_records, (err: LibrdKafkaError | null | undefined, m: RdMessage[]) => {
          // Errors here are per partition (a topic not there yet) or passing: the event handler above judges the connection.
          if (err) ctx.log.debug({ connector: 'kafka', err: explainNative(err) }, 'kafka: consume');
          // An error with nothing read (a client being closed) waits a moment rather than spinning.
          if (err && !m?.length) setTimeout(() => resolve([]), CONSUME_WAIT_MS);
          else resolve(m ?? []);
        }),
      );
      for (const m of msgs) {
        const k = key(m.topic, m.partition);
        let meta = metas.get(k);
        if (!meta) metas.set(k, (meta = { topic: m.topic, partition: m.partition }));
        push({ body: m.value ?? Buffer.alloc(0), meta, topic: m.topic, partition: m.partition, offset: String(m.offset) });
      }
    }
  };

  let starts: TopicPartitionOffset[] = [];
  let connected = false;
  try {
    await connectClient(consumer, 10_000, c);
    connected = true;
    consumer.setDefaultConsumeTimeout(CONSUME_WAIT_MS);
    if (!atMostOnce) starts = await resetPositions(consumer, topics, c.auto_offset_reset);
    for (const st of starts) startAt.set(key(st.topic, st.partition), st.offset);
    consumer.subscribe(topics);
    looping = loop();
    // Resolves once the group assigned this member its partitions (none is an answer too).
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      join,
      new Promise<never>(
        (_, reject) =>
          (timer = setTimeout(
            () => reject(new Error(`no answer from the group coordinator within ${c.session_timeout_ms + 30_000} ms`)),
            c.session_timeout_ms + 30_000,
          )),
      ),
    ]).finally(() => clearTimeout(timer));
    // auto_offset_reset, made durable (as the kafkajs engine): the group's first position on each
    // partition it never committed is committed now, so a reconnect never applies `latest` twice.
    // Only where the group still has no offset: another member may have committed since they were read.
    const mine = new Set(assignment.map((p) => key(p.topic, p.partition)));
    const candidates = starts.filter((st) => mine.has(key(st.topic, st.partition)) && !pending.has(key(st.topic, st.partition)));
    if (candidates.length) {
      const asked = candidates.map(({ topic, partition }) => ({ topic, partition }));
      const now = await promised<TopicPartitionOffset[]>((cb) => consumer.committed(asked, 5000, cb));
      // No committed offset comes back as no `offset` at all (or a negative one).
      const unset = new Set(now.filter((p) => !(p.offset >= 0)).map((p) => key(p.topic, p.partition)));
      for (const st of candidates) if (unset.has(key(st.topic, st.partition))) pending.set(key(st.topic, st.partition), st);
    }
    await commitPending(true);
    // From here the group's committed offsets say where each partition starts (a later rebalance too).
    startAt.clear();
    await reportStartLag(consumer, assignment, ctx);
  } catch (e) {
    closing = true;
    wakeUp();
    await looping;
    // A client whose connect failed closes itself.
    if (connected) await disconnectNative(consumer, 10_000);
    throw new Error(`cannot consume ${topics.join(', ')} from ${c.brokers.join(', ')}: ${(e as Error).message}`, { cause: e });
  }

  return {
    pause() {
      paused = true;
    },
    resume() {
      if (!paused) return;
      paused = false;
      if (partitionsPaused) {
        partitionsPaused = false;
        if (assignment.length) consumer.resume(assignment);
      }
      wakeUp();
    },
    async ack(batch) {
      // Per topic and partition: offset+1 of the batch's last (highest) message. Commits go out one
      // at a time; acknowledgements that arrive meanwhile share the next one.
      // A partition that moved to another member is not committed here: that member may be further on already.
      const mine = new Set(assignment.map((p) => key(p.topic, p.partition)));
      const seen = new Set<string>();
      for (let i = batch.length - 1; i >= 0; i--) {
        const m = batch[i]!;
        const k = key(m.topic, m.partition);
        if (seen.has(k) || !mine.has(k)) continue;
        seen.add(k);
        const o = Number(m.offset) + 1;
        const cur = pending.get(k);
        if (!cur || o > cur.offset) pending.set(k, { topic: m.topic, partition: m.partition, offset: o });
      }
      committing ??= commitPending().finally(() => (committing = undefined));
    },
    async close() {
      // What was acknowledged is committed before the group is left (a clean stop redelivers nothing).
      const last = (async () => {
        if (committing) await committing;
        if (pending.size) await commitPending();
      })();
      await within(last, 10_000, 'the last offset commit').catch((e: Error) =>
        ctx.log.warn({ connector: 'kafka', err: e.message }, 'kafka: offsets not committed at the stop'),
      );
      closing = true;
      wakeUp();
      await looping;
      await disconnectNative(consumer, 15_000);
    },
  };
}
