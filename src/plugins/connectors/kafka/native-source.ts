// The kafka source on librdkafka: a KafkaConsumer in a consumer group, read by a loop of consume()
// calls that never stops while the session lives (librdkafka serves the group's rebalances and
// events from it, and a consumer that stops polling leaves the group). Offsets are committed by
// svc after delivery (enable.auto.commit false), one commit in flight at a time, each confirmed by
// librdkafka's commit callback; backpressure stops the reading, and when it lasts pauses the
// assigned partitions (librdkafka stops fetching them) until resume().
//
// Rebalances are handled asynchronously (librdkafka waits for assign()/unassign()): on an
// assignment the group's committed offsets are read (bounded: LOOKUP_ATTEMPTS of LOOKUP_TIMEOUT_MS,
// then the session fails with the reason and the runtime reconnects with its policy); a partition
// the group never committed starts where auto_offset_reset says (its low or high watermark), and
// that start is committed before the partition is assigned, so a consumer restarted before its
// first delivery does not apply `latest` a second time and skip what arrived in between. On a
// revocation what was acknowledged is committed before unassign().
// svc_kafka_consumer_lag comes from librdkafka's statistics (hi_offset - committed offset).
// With enable_auto_commit true librdkafka commits what it handed over (at-most-once).
import type { LibrdKafkaError, Message as RdMessage, TopicPartition, TopicPartitionOffset } from '@confluentinc/kafka-javascript';
import type { Session, SessionHandlers } from '../../connector-runtime/stream-source.js';
import type { PluginContext } from '../../types.js';
import { within } from './client.js';
import { rdkafka } from './engine.js';
import { lagReporter } from './metrics.js';
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
export const PREFETCH_KBYTES = 16_384;
/**
 * How long librdkafka postpones a partition's next fetch once its prefetch is at the bound above (its
 * default, 1000 ms, is meant for the default 64 MiB bound). A topic larger than the bound then drained
 * in bursts with pauses of a second between them: a bare consumer of the benchmark's topic read 79k
 * msg/s with the default and 120k-144k with 10 ms (docs/connectors/kafka.md, Benchmark).
 */
export const FETCH_QUEUE_BACKOFF_MS = 10;
/** How long a backpressure lasts before the assigned partitions are paused. */
const PAUSE_PARTITIONS_AFTER_MS = 1000;
/** One read of the group's committed offsets (or of a partition's watermarks) at an assignment. */
export const LOOKUP_TIMEOUT_MS = 10_000;
/** Reads of the committed offsets at one assignment before the session fails (backoff 1 s, 2 s between them). */
export const LOOKUP_ATTEMPTS = 3;
/** Watermark reads in flight at once (each holds a thread of libuv's pool of 4; consume() holds another). */
const WATERMARK_CONCURRENCY = 3;
/** An offset commit not confirmed by librdkafka's commit callback within this ends the session. */
const COMMIT_TIMEOUT_MS = 30_000;
/** How long a revocation waits for the commit of what was acknowledged before it gives the partitions up. */
const REVOKE_COMMIT_MS = 10_000;
/**
 * How long a revocation waits for the messages already handed to the runtime to be delivered and
 * acknowledged (as kafkajs waits for the batch in hand), so that the next owner reads again only
 * what could not be delivered in that time.
 */
const REVOKE_DRAIN_MS = 10_000;

const key = (topic: string, partition: number) => `${topic}\u0000${partition}`;
const EMPTY = Buffer.alloc(0);

function promised<T>(f: (cb: (err: LibrdKafkaError | null | undefined, v: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => f((err, v) => (err ? reject(err as unknown as Error) : resolve(v))));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `f` applied to every item, at most `n` at a time. */
async function pooled<T, R>(items: T[], n: number, f: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await f(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  return out;
}

/** Names partitions for a log line or an error: `topic[0,1,2]`. */
export function describeParts(parts: { topic: string; partition: number }[]): string {
  const by = new Map<string, number[]>();
  for (const p of parts) (by.get(p.topic) ?? by.set(p.topic, []).get(p.topic)!).push(p.partition);
  return [...by].map(([t, ps]) => `${t}[${ps.sort((a, b) => a - b).join(',')}]`).join(' ');
}

/**
 * The group's committed offsets of `parts` (an offset < 0: none), read at most `attempts` times of
 * `timeoutMs` each, with a warning and a growing pause between them; then an error that says what
 * could not be read. Never retried silently or forever: the caller ends the session with it, and
 * the runtime's reconnect policy (logged, counted, max_reconnect_attempts) takes over.
 */
export async function readCommitted(
  lookup: (parts: TopicPartition[], timeoutMs: number) => Promise<TopicPartitionOffset[]>,
  parts: TopicPartition[],
  log: PluginContext['log'],
  { timeoutMs = LOOKUP_TIMEOUT_MS, attempts = LOOKUP_ATTEMPTS, backoffMs = 1000, stopped = (): boolean => false } = {},
): Promise<TopicPartitionOffset[]> {
  let last: unknown;
  for (let i = 1; i <= attempts && !stopped(); i++) {
    try {
      // librdkafka's own timeout answers first; this bounds a call that never answers at all.
      return await within(lookup(parts, timeoutMs), timeoutMs + Math.min(5000, timeoutMs), 'reading the committed offsets');
    } catch (e) {
      last = e;
      if (i === attempts) break;
      const wait = backoffMs * 2 ** (i - 1);
      log.warn(
        { connector: 'kafka', attempt: i, attempts, err: explainNative(e) },
        `kafka: the committed offsets of ${parts.length} partitions were not read within ${timeoutMs / 1000} s (attempt ${i} of ${attempts}): ${explainNative(e)}; trying again in ${wait / 1000} s`,
      );
      await sleep(wait);
    }
  }
  throw new Error(
    `cannot read the group's committed offsets of ${parts.length} assigned partitions (${describeParts(parts)}): ${attempts} attempts of ${timeoutMs / 1000} s failed, the last with: ${explainNative(last)}`,
    { cause: last },
  );
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
  /** The first assignment handled (connect resolves) or failed (connect rejects). */
  let joinedOnce = false;
  let joined!: () => void;
  let joinFailed!: (e: Error) => void;
  const join = new Promise<void>((resolve, reject) => ((joined = resolve), (joinFailed = reject)));
  join.catch(() => {});
  const broken = (err: Error) => {
    if (!joinedOnce) joinFailed(err);
    else if (!closing) lost(err);
  };

  /** Backpressure from the runtime, and whether it lasted long enough to pause the partitions. */
  let paused = false;
  let partitionsPaused = false;
  let wakeUp = () => {};
  /** The partitions this member reads now: acknowledgements of others are not committed here. */
  let assignment: TopicPartition[] = [];
  let mine = new Set<string>();
  /** A revocation is waiting for the messages in hand: the loop hands on no more of these partitions. */
  let revoking = false;
  /** Per partition: offset+1 of the last message handed to the runtime, and of the last acknowledged. */
  const pushedTo = new Map<string, number>();
  const ackedTo = new Map<string, number>();
  /**
   * Acknowledged offsets whose commit the group refused because a rebalance had begun (the mock
   * refuses commits from then on; a broker may too): delivered by this member, so where it starts
   * if the partition comes back to it and the group's offset is behind (fewer duplicates).
   */
  const refusedInRebalance = new Map<string, TopicPartitionOffset>();
  /** Acknowledged offsets (and starts at an assignment) not yet committed. */
  let pending = new Map<string, TopicPartitionOffset>();
  /** Commits go out one at a time, in this chain; each waits for its commit callback. */
  let commitChain: Promise<void> = Promise.resolve();
  const commitWaiters: { done: (err: LibrdKafkaError | undefined) => void }[] = [];
  /** Rebalance events, handled one after another (each may wait for the broker). */
  let rebalancing: Promise<void> = Promise.resolve();
  /**
   * Native calls running on libuv's thread pool (committed offsets, watermarks). The client is
   * closed only once they returned (each is bounded by its librdkafka timeout): closing it under a
   * call in flight could hold a pool thread for good, and with it the process's file I/O.
   */
  let inflight = 0;
  const tracked = <T>(f: (cb: (err: LibrdKafkaError | null | undefined, v: T) => void) => void): Promise<T> => {
    inflight++;
    return promised(f).finally(() => inflight--);
  };
  /** Waits (bounded) until no native call is in flight, before the client is closed. */
  const settled = async () => {
    const t0 = Date.now();
    while (inflight > 0 && Date.now() - t0 < LOOKUP_TIMEOUT_MS + 5000) await sleep(20);
  };

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
    'fetch.queue.backoff.ms': FETCH_QUEUE_BACKOFF_MS,
    'statistics.interval.ms': 1000,
    // One callback per commit, in the order they were sent (one at a time here).
    offset_commit_cb: (err: LibrdKafkaError | undefined) => commitWaiters.shift()?.done(err ?? undefined),
    // Queued and handled asynchronously: librdkafka waits for assign()/unassign().
    rebalance_cb: (err: LibrdKafkaError, parts: TopicPartition[]) => {
      rebalancing = rebalancing
        .then(() => rebalance(err, parts))
        .catch((e: Error) => broken(new Error(`consumer group rebalance failed: ${e.message}`, { cause: e })));
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
        lagReporter(ctx.telemetry)?.(topic, partition, s.consumer_lag);
      }
    }
  });

  /** One commit of `offsets`, confirmed by the commit callback (bounded by COMMIT_TIMEOUT_MS). */
  const commitOnce = (offsets: TopicPartitionOffset[]) =>
    new Promise<LibrdKafkaError | undefined>((resolve) => {
      let settled = false;
      const timer = setTimeout(() => {
        settled = true;
        resolve(Object.assign(new Error(`no answer to the offset commit within ${COMMIT_TIMEOUT_MS / 1000} s`), { code: -185 }) as unknown as LibrdKafkaError);
      }, COMMIT_TIMEOUT_MS);
      // A callback that comes after the timeout is taken by this waiter still (not by the next commit's).
      const waiter = {
        done: (err: LibrdKafkaError | undefined) => {
          clearTimeout(timer);
          if (!settled) resolve(err);
          settled = true;
        },
      };
      commitWaiters.push(waiter);
      try {
        consumer.commit(offsets);
      } catch (e) {
        commitWaiters.splice(commitWaiters.indexOf(waiter), 1);
        waiter.done(e as LibrdKafkaError);
      }
    });

  /** Commits everything pending, in the chain; rejects when a commit fails for another reason than a moved partition. */
  const commitPending = (): Promise<void> => {
    const run = commitChain.then(async () => {
      while (pending.size) {
        const todo = [...pending.values()];
        pending = new Map();
        const err = await commitOnce(todo);
        if (!err) continue;
        if (MOVED.has(err.code)) {
          for (const t of todo) {
            const k = key(t.topic, t.partition);
            if (t.offset > (refusedInRebalance.get(k)?.offset ?? -1)) refusedInRebalance.set(k, t);
          }
          ctx.log.debug({ connector: 'kafka', err: explainNative(err) }, 'kafka: offsets not committed: the partitions moved to another member');
          continue;
        }
        // Not committed: the session ends and the group reads these messages again.
        pending.clear();
        throw new Error(`offset commit failed: ${explainNative(err)}`, { cause: err });
      }
    });
    commitChain = run.catch(() => {});
    return run;
  };
  let committing: Promise<void> | undefined;
  /** Commits acknowledgements in the background; a failure ends the session. */
  const commitSoon = () => {
    committing ??= commitPending()
      .catch((e: Error) => broken(e))
      .finally(() => {
        committing = undefined;
        if (pending.size && !closing) commitSoon();
      });
  };

  /** The watermarks of one partition, bounded. */
  const watermarks = (p: TopicPartition) =>
    within(
      tracked<{ lowOffset: number; highOffset: number }>((cb) => consumer.queryWatermarkOffsets(p.topic, p.partition, LOOKUP_TIMEOUT_MS, cb)),
      LOOKUP_TIMEOUT_MS + 5000,
      `reading the watermarks of ${p.topic}[${p.partition}]`,
    );

  /**
   * The group's committed offsets of `parts`: a partition the answer gives an error for (the
   * binding puts an Error in its place) fails the whole read, which is tried again: taking it for
   * "never committed" would move the group's offset back (duplicates) or, with latest, forward (loss).
   */
  const lookupCommitted = async (parts: TopicPartition[], ms: number) => {
    const got = await tracked<(TopicPartitionOffset | Error)[]>((cb) => consumer.committed(parts, ms, cb as never));
    const bad = got.filter((p): p is Error => p instanceof Error || typeof (p as TopicPartitionOffset).topic !== 'string');
    if (bad.length || got.length !== parts.length)
      throw new Error(`${bad.length || parts.length - got.length} of ${parts.length} partitions came back with an error: ${bad[0]?.message ?? 'missing'}`);
    return got as TopicPartitionOffset[];
  };

  /**
   * Partitions assigned: the group's committed offsets read; where it has none, the start decided
   * once (auto_offset_reset: the low or high watermark now) and committed; then assign() at those
   * offsets. The lag of each partition at this moment is reported first (what arrived while the
   * source was stopped shows at once; librdkafka's statistics take over from there).
   */
  const onAssign = async (parts: TopicPartition[]) => {
    if (closing || atMostOnce || parts.length === 0) {
      mine = new Set(parts.map((p) => key(p.topic, p.partition)));
      consumer.assign(parts);
      return parts;
    }
    const asked = parts.map(({ topic, partition }) => ({ topic, partition }));
    const committed = await readCommitted(lookupCommitted, asked, ctx.log, { stopped: () => closing });
    const at = new Map<string, number>();
    for (const p of committed) if (p.offset >= 0) at.set(key(p.topic, p.partition), p.offset);
    // What this member delivered before a rebalance refused its commit: it resumes after it (and commits it).
    for (const p of asked) {
      const k = key(p.topic, p.partition);
      const mineBefore = refusedInRebalance.get(k);
      if (mineBefore && mineBefore.offset > (at.get(k) ?? -1) && at.has(k)) {
        at.set(k, mineBefore.offset);
        if (!pending.has(k)) pending.set(k, mineBefore);
      }
    }
    refusedInRebalance.clear();
    const fresh = asked.filter((p) => !at.has(key(p.topic, p.partition)));
    const reportLag = lagReporter(ctx.telemetry);
    const lagToo = reportLag !== undefined;
    // Watermarks: needed for the fresh partitions' starts; for the others only for the start lag (best effort).
    const marks = await pooled(lagToo ? asked : fresh, WATERMARK_CONCURRENCY, async (p) => {
      const isFresh = !at.has(key(p.topic, p.partition));
      try {
        return await watermarks(p);
      } catch (e) {
        if (!isFresh) return undefined;
        throw new Error(`cannot read where ${p.topic}[${p.partition}] starts (auto_offset_reset ${c.auto_offset_reset}): ${explainNative(e)}`, { cause: e });
      }
    });
    const mark = new Map((lagToo ? asked : fresh).map((p, i) => [key(p.topic, p.partition), marks[i]]));
    if (fresh.length) {
      // auto_offset_reset, decided once: the watermark now, committed before anything is read.
      for (const p of fresh) {
        const w = mark.get(key(p.topic, p.partition))!;
        const st = { ...p, offset: c.auto_offset_reset === 'latest' ? w.highOffset : w.lowOffset };
        at.set(key(p.topic, p.partition), st.offset);
        if (!pending.has(key(p.topic, p.partition))) pending.set(key(p.topic, p.partition), st);
      }
      await commitPending();
      ctx.log.debug({ connector: 'kafka', group: groupId }, `kafka: ${describeParts(fresh)} start at auto_offset_reset ${c.auto_offset_reset} (committed)`);
    }
    if (pending.size) await commitPending();
    const assigned = asked.map((p) => ({ ...p, offset: at.get(key(p.topic, p.partition))! }));
    if (closing) return parts;
    if (lagToo)
      for (const p of assigned) {
        const w = mark.get(key(p.topic, p.partition));
        if (w) reportLag!(p.topic, p.partition, Math.max(0, w.highOffset - p.offset));
      }
    mine = new Set(asked.map((p) => key(p.topic, p.partition)));
    consumer.assign(assigned);
    return assigned;
  };

  const rebalance = async (err: LibrdKafkaError, parts: TopicPartition[]) => {
    if (err.code === ASSIGN) {
      const assigned = await onAssign(parts);
      assignment = parts.map(({ topic, partition }) => ({ topic, partition }));
      mine = new Set(assignment.map((p) => key(p.topic, p.partition)));
      if (partitionsPaused && assignment.length) consumer.pause(assignment);
      ctx.log.debug({ connector: 'kafka', group: groupId, assignment: assigned }, `kafka: joined group ${groupId}`);
      if (!joinedOnce) {
        joinedOnce = true;
        joined();
      }
    } else if (err.code === REVOKE) {
      // The messages handed on are delivered and acknowledged first (bounded), and what was
      // acknowledged is committed before the partitions go to another member, so it reads on from
      // there: only what could not be delivered in that time is read again (duplicates).
      revoking = true;
      if (!closing && !atMostOnce) {
        const t0 = Date.now();
        const inHand = () => [...mine].some((k) => (ackedTo.get(k) ?? -1) < (pushedTo.get(k) ?? -1));
        while (inHand() && !closing && Date.now() - t0 < REVOKE_DRAIN_MS) await sleep(20);
        if (inHand() && !closing)
          ctx.log.warn(
            { connector: 'kafka', group: groupId },
            `kafka: messages in hand not delivered within ${REVOKE_DRAIN_MS / 1000} s of a rebalance: the next owner reads them again`,
          );
      }
      assignment = [];
      mine = new Set();
      pushedTo.clear();
      ackedTo.clear();
      revoking = false;
      if (!closing && !atMostOnce) {
        await within(commitPending(), REVOKE_COMMIT_MS, 'the commit before a rebalance').catch((e: Error) =>
          ctx.log.warn({ connector: 'kafka', err: e.message }, 'kafka: acknowledged offsets not committed before a rebalance (they are read again)'),
        );
      }
      pending = new Map();
      consumer.unassign();
    } else throw new Error(explainNative(err));
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
      // A batch comes in runs of one partition's messages (librdkafka queues each fetched message
      // set whole): its key, ownership and metadata are looked up once per run, not per message.
      let topic = '';
      let partition = -1;
      let k = '';
      let take = false;
      let meta: { topic: string; partition: number } | undefined;
      for (let i = 0; i < msgs.length; i++) {
        const m = msgs[i]!;
        if (m.partition !== partition || m.topic !== topic) {
          if (take) pushedTo.set(k, msgs[i - 1]!.offset + 1);
          topic = m.topic;
          partition = m.partition;
          k = key(topic, partition);
          // Fetched before a revocation: the partition's next owner reads it (not handed on twice).
          take = !revoking && mine.has(k);
          meta = metas.get(k);
          if (!meta) metas.set(k, (meta = { topic, partition }));
        }
        if (take) push({ body: m.value ?? EMPTY, meta: meta!, topic, partition, offset: String(m.offset) });
      }
      if (take) pushedTo.set(k, msgs[msgs.length - 1]!.offset + 1);
    }
  };

  let connected = false;
  try {
    await connectClient(consumer, 10_000, c);
    connected = true;
    consumer.setDefaultConsumeTimeout(CONSUME_WAIT_MS);
    consumer.subscribe(topics);
    looping = loop();
    // Resolves once the group assigned this member its partitions (none is an answer too) and
    // their start offsets are committed.
    const limit = c.session_timeout_ms + 30_000 + LOOKUP_ATTEMPTS * (LOOKUP_TIMEOUT_MS + 5000);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      join,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no assignment from the group coordinator within ${limit} ms`)), limit))),
    ]).finally(() => clearTimeout(timer));
  } catch (e) {
    closing = true;
    wakeUp();
    await looping;
    await settled();
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
      // A partition's messages come in runs (see the loop): a key is made once per run.
      const seen = new Set<string>();
      let topic: string | undefined;
      let partition = -1;
      for (let i = batch.length - 1; i >= 0; i--) {
        const m = batch[i]!;
        if (m.partition === partition && m.topic === topic) continue;
        topic = m.topic;
        partition = m.partition;
        const k = key(topic, partition);
        if (seen.has(k) || !mine.has(k)) continue;
        seen.add(k);
        const o = Number(m.offset) + 1;
        if (o > (ackedTo.get(k) ?? -1)) ackedTo.set(k, o);
        const cur = pending.get(k);
        if (!cur || o > cur.offset) pending.set(k, { topic: m.topic, partition: m.partition, offset: o });
      }
      if (pending.size) commitSoon();
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
      await settled();
      await disconnectNative(consumer, 15_000);
    },
  };
}
