// The runtime of every message-stream source (kafka, mqtt, amqp, nats, redis, websocket): a
// connector only speaks its protocol (connect, push messages, pause, resume, acknowledge); this
// module owns what they share.
//
// - Units: the messages waiting at each read (at most `maxBatch`) become one unit per distinct
//   metadata (topic, subject...), each message decoded on its own.
// - Acknowledgement after delivery: a unit's messages are acknowledged (offset commit, AMQP ack,
//   MQTT PUBACK, LREM, stream ID) only in its done(true), which the runner calls in order, after
//   every record was written or dead-lettered and the sinks flushed.
// - A unit that was not delivered ends the session without acknowledging it or anything after it,
//   so the peer delivers them again after the reconnect (at-least-once; duplicates possible).
// - Backpressure: above `highWater` queued messages the session is paused (consumer paused, socket
//   not read); below half of it, resumed. The runner takes a unit only when it has room (rule 3),
//   so memory stays bounded by highWater plus the runner's in-flight chunks.
// - Reconnect: a failed connect or a lost session is retried with the shared policy; each state
//   change is logged once and counted; a stream that exhausts its attempts fails for good.
import { errorMessage } from '../../core/errors.js';
import type { PluginContext, Rec, Source, SourceMeta, SourceUnit } from '../types.js';
import { connectionReporter, waitToReconnect, type ReconnectPolicy } from './reconnect.js';

export interface Message {
  /** The message as received: decoded by serializer_in, or, with `record`, only counted (bytes_in). */
  body: Buffer;
  /**
   * The message already parsed by the connector into a plain JSON object (syslog, gNMI): handed on
   * without a JSON round trip when every message of a unit has one (SourceUnit.records).
   */
  record?: Rec;
  /** The connector could not decode the message: it goes to the DLQ at stage parse with this reason and `body`. */
  error?: string;
  /**
   * Metadata of this message (topic, subject...). A unit holds messages with equal metadata, so
   * keep values that change with every message (offsets, ids) out of it; share one object between
   * messages alike (the cheap case).
   */
  meta?: SourceMeta;
}

export interface SessionHandlers<M extends Message> {
  /** One message received. */
  push(m: M): void;
  /** The connection broke (call once; later calls are ignored). */
  lost(err: Error): void;
  signal: AbortSignal;
}

export interface Session<M extends Message> {
  /** Stop taking messages from the peer (pause the consumer, stop reading the socket). */
  pause(): void;
  resume(): void;
  /** Acknowledge a delivered batch; batches come in the order they were pushed. */
  ack?(batch: M[]): Promise<void>;
  /** Close; what was not acknowledged stays with the peer. */
  close(): Promise<void>;
}

export interface StreamConnector<M extends Message> {
  type: string;
  /** Connects and starts consuming; resolves once the session is established. */
  connect(h: SessionHandlers<M>): Promise<Session<M>>;
  reconnect: ReconnectPolicy;
  /** Most messages in one unit. */
  maxBatch?: number;
  /** Queued messages above which the session is paused. */
  highWater?: number;
  /** false (at-most-once): nothing is acknowledged, an undelivered unit does not reconnect. */
  acknowledges: boolean;
}

export const DEFAULT_MAX_BATCH = 1000;

/**
 * The messages of one batch grouped by metadata, each group in arrival order. A unit carries one
 * metadata object for all its records (inject_meta, templates), so a wildcard subscription that
 * mixes topics becomes one unit per topic: no record is labelled with another's topic. Brokers
 * order messages per topic (or partition) only, which the groups keep.
 */
function byMeta<M extends Message>(batch: M[]): M[][] {
  const first = batch[0]!.meta;
  if (batch.every((m) => m.meta === first)) return [batch]; // the usual case: one shared object
  // Connectors share one metadata object per peer batch (a Kafka partition's fetch): the key of
  // each distinct object is made once, not once per message.
  const keys = new Map<Message['meta'], string>();
  const groups = new Map<string, M[]>();
  for (const m of batch) {
    let key = keys.get(m.meta);
    if (key === undefined) keys.set(m.meta, (key = m.meta ? JSON.stringify(m.meta) : ''));
    const g = groups.get(key);
    if (g) g.push(m);
    else groups.set(key, [m]);
  }
  return [...groups.values()];
}

/**
 * Under a steady flow, a unit waits up to this long for more messages (until maxBatch) before it is
 * handed on; the first message after a quiet spell goes at once. Without it a fast runner took a
 * unit of a few messages each time (syslog at 130,000 msg/s: 5.5 a unit), and every unit costs a
 * sink write and a flush. A Kafka producer's linger.ms (5 by default in librdkafka) is the same idea.
 */
const LINGER_MS = 2;

export function streamSource<M extends Message>(ctx: PluginContext, connector: StreamConnector<M>): Source {
  const report = connectionReporter(ctx, connector.type);
  const maxBatch = connector.maxBatch ?? DEFAULT_MAX_BATCH;
  const highWater = Math.max(connector.highWater ?? 2 * maxBatch, 1);
  /** Bumped whenever a session ends: acknowledgements of older units are dropped (the peer redelivers). */
  let generation = 0;
  let current: Session<M> | undefined;
  /** Set by an undelivered unit: the session must end without acknowledging anything more. */
  let refused: Error | undefined;
  let wake: (() => void) | undefined;

  /**
   * The units of one batch: one per metadata group. The batch is acknowledged whole, in the order
   * it came, once its last unit is done and all of them were delivered.
   */
  const unitsOf = (batch: M[], session: Session<M>, gen: number): SourceUnit[] => {
    const groups = byMeta(batch);
    let left = groups.length;
    let allDelivered = true;
    return groups.map((all) => {
      const bad = all.some((m) => m.error !== undefined) ? all.filter((m) => m.error !== undefined) : undefined;
      const msgs = bad ? all.filter((m) => m.error === undefined) : all;
      const records = msgs.every((m) => m.record) ? msgs.map((m) => m.record!) : undefined;
      return {
        meta: { ...all[0]!.meta, messages: all.length },
        size: all.reduce((n, m) => n + m.body.length, 0),
        messages: true,
        records,
        // Raw messages only: a unit that mixes parsed and raw ones goes through read() instead.
        bodies: msgs.some((m) => m.record) ? undefined : msgs.map((m) => m.body),
        undecodable: bad?.map((m) => ({ raw: m.body, why: m.error! })),
        async *read() {
          for (const m of msgs) yield m.record ? Buffer.from(JSON.stringify(m.record)) : m.body;
        },
        async done(delivered) {
          allDelivered &&= delivered;
          if (--left > 0) return;
          if (!connector.acknowledges) {
            if (!allDelivered)
              ctx.log.warn(
                { connector: connector.type, messages: batch.length },
                `${connector.type}: messages not delivered; this source cannot ask for them again (at-most-once)`,
              );
            return;
          }
          if (gen !== generation || refused) return;
          if (allDelivered) return session.ack?.(batch);
          refused = new Error(`${batch.length} messages were not delivered; reconnecting so that ${connector.type} delivers them again`);
          wake?.();
        },
      };
    });
  };

  return {
    async *units(signal) {
      let failures = 0;
      /** Waits before attempt `n`; false when stopped meanwhile; throws (state failed) when giving up. */
      const retry = async (n: number, reason: string) => {
        try {
          return await waitToReconnect(connector.reconnect, n, reason, signal, connector.type);
        } catch (gaveUp) {
          report('failed', reason);
          throw gaveUp;
        }
      };
      const onAbort = () => wake?.();
      /** When the last unit was handed on, and whether the next one is waiting to fill (LINGER_MS): then a message wakes the loop only once the unit would be full. */
      let handedOn = -Infinity;
      let lingering = false;
      signal.addEventListener('abort', onAbort);
      try {
        while (!signal.aborted) {
          const gen = generation;
          const queue: M[] = [];
          let lost: Error | undefined;
          let paused = false;
          let session: Session<M> | undefined;
          report('connecting');
          try {
            session = await connector.connect({
              push(m) {
                if (gen !== generation) return;
                queue.push(m);
                if (!paused && queue.length >= highWater && session) {
                  paused = true;
                  session.pause();
                }
                if (!lingering || queue.length >= maxBatch) wake?.();
              },
              lost(err) {
                if (gen !== generation) return;
                lost ??= err;
                wake?.();
              },
              signal,
            });
          } catch (e) {
            failures++;
            report('disconnected', errorMessage(e));
            if (!(await retry(failures, errorMessage(e)))) break;
            continue;
          }
          current = session;
          failures = 0;
          refused = undefined;
          report('connected');
          // Messages that arrived before connect() resolved may already be past the mark.
          if (queue.length >= highWater) {
            paused = true;
            session.pause();
          }
          for (;;) {
            if (signal.aborted && !paused) {
              paused = true;
              session.pause();
            }
            // What an acknowledging peer sent on a lost session comes again; an at-most-once one's
            // messages already received are handed on first (they exist nowhere else).
            if (refused || (lost && (connector.acknowledges || queue.length === 0))) break;
            if (queue.length) {
              const since = performance.now() - handedOn;
              if (queue.length < maxBatch && since < LINGER_MS && !signal.aborted && !lost && !refused) {
                lingering = true;
                let timer: NodeJS.Timeout | undefined;
                await new Promise<void>((r) => {
                  wake = r;
                  timer = setTimeout(r, LINGER_MS - since);
                });
                clearTimeout(timer);
                wake = undefined;
                lingering = false;
                continue; // stopped, lost or refused meanwhile: the checks above
              }
              const batch = queue.splice(0, maxBatch);
              if (paused && !signal.aborted && queue.length < highWater / 2) {
                paused = false;
                session.resume();
              }
              handedOn = performance.now();
              yield* unitsOf(batch, session, gen);
              continue;
            }
            if (signal.aborted) break;
            await new Promise<void>((r) => (wake = r));
            wake = undefined;
          }
          if (!lost && !refused) break; // stopped: the session stays open for the last acknowledgements (close())
          generation++;
          current = undefined;
          report('disconnected', errorMessage(lost ?? refused));
          await session.close().catch(() => {});
          if (!(await retry(1, errorMessage(lost ?? refused)))) break;
        }
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    },
    async close() {
      generation++;
      const s = current;
      current = undefined;
      await s?.close();
    },
  };
}
