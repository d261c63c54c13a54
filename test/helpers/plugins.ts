// Test-only plugins that implement the real contracts (used through a registry that extends the
// real one): a sink that keeps what it is given and fails or stalls on request, so the runtime's
// retries, breaker, rate limit, DLQ and ordering can be observed exactly.
import { Type } from '@sinclair/typebox';
import { WriteError } from '../../src/core/errors.js';
import { registry } from '../../src/plugins/registry.js';
import type { Registry } from '../../src/config/load.js';
import { defineSink, defineSource, defineTransform, type Rec, type SinkBatch, type SourceUnit } from '../../src/plugins/types.js';
import { pace } from './wait.js';

export interface Capture {
  /** Time (performance.now) of every write attempt, failed or not. */
  attempts: number[];
  /** Successful writes. */
  batches: SinkBatch[];
  /** Decoded payloads of successful writes, concatenated as text. */
  text: string;
  /** Called at the start of every attempt (tests look at the world from inside a write). */
  onWrite?: (b: SinkBatch) => void | Promise<void>;
  /** Writes that fail before any succeeds; -1 fails forever. */
  failFirst: number;
  delayMs: number;
  ends: number;
  closed: boolean;
  active: number;
  maxActive: number;
}

export const captures = new Map<string, Capture>();

export function capture(id: string, init: Partial<Capture> = {}): Capture {
  const c: Capture = { attempts: [], batches: [], text: '', failFirst: 0, delayMs: 0, ends: 0, closed: false, active: 0, maxActive: 0, ...init };
  captures.set(id, c);
  return c;
}

const memorySink = defineSink({
  key: 'memory',
  summary: 'Test sink: keeps batches in memory.',
  accepts: 'payload',
  delivery: { guarantee: 'at-least-once', why: 'test sink' },
  test: async () => {},
  config: Type.Object({ id: Type.String({ description: 'Capture id.' }) }, { additionalProperties: false }),
  examples: [],
  create(c) {
    return {
      async write(b: SinkBatch) {
        const cap = captures.get(c.id)!;
        cap.attempts.push(performance.now());
        cap.active++;
        cap.maxActive = Math.max(cap.maxActive, cap.active);
        try {
          await cap.onWrite?.(b);
          if (cap.delayMs) await pace(cap.delayMs);
          if (cap.failFirst === -1 || cap.attempts.length <= cap.failFirst) {
            throw new WriteError(`memory sink ${c.id} refused the write`);
          }
          cap.batches.push(b);
          cap.text += b.payload.toString('utf8');
        } finally {
          cap.active--;
        }
      },
      async endUnit() {
        captures.get(c.id)!.ends++;
      },
      async close() {
        captures.get(c.id)!.closed = true;
      },
    };
  },
});

/**
 * A records sink whose peer answers per record: a record with `refuse` is refused for good (its value
 * is the reason), one with `throttle` is refused for now while its count of attempts is below the value.
 * It reports 100 bytes sent per record that landed.
 */
const verdictSink = defineSink({
  key: 'verdict',
  summary: 'Test sink: answers per record (refused, throttled, landed).',
  accepts: 'records',
  delivery: { guarantee: 'at-least-once', why: 'test sink' },
  test: async () => {},
  config: Type.Object(
    {
      id: Type.String({ description: 'Capture id.' }),
      deferred: Type.Optional(
        Type.Boolean({ description: 'Deferred delivery: write() resolves at once; flush() lands the batches and names the refused records.' }),
      ),
    },
    { additionalProperties: false },
  ),
  examples: [],
  create(c) {
    const tries = new Map<unknown, number>();
    if (c.deferred) {
      // As kafka on librdkafka: the peer's verdicts come only when the runtime flushes. A record
      // with `undeliverable` makes the flush fail (the peer went away with the batch in flight).
      let pending: SinkBatch[] = [];
      return {
        async write(b: SinkBatch) {
          captures.get(c.id)!.attempts.push(performance.now());
          pending.push(b);
          return { bytes: 100 * b.count };
        },
        async flush() {
          const batches = pending;
          pending = [];
          if (batches.some((b) => b.records!.some((r) => r.undeliverable))) throw new Error('the peer went away with the batch in flight');
          const rejected: { batch: SinkBatch; index: number; reason: string }[] = [];
          for (const batch of batches) {
            const landed = batch.records!.filter((r, index) => {
              if (typeof r.refuse !== 'string') return true;
              rejected.push({ batch, index, reason: r.refuse });
              return false;
            });
            captures.get(c.id)!.batches.push({ ...batch, records: landed, count: landed.length });
          }
          return { rejected };
        },
      };
    }
    return {
      async write(b: SinkBatch) {
        const cap = captures.get(c.id)!;
        cap.attempts.push(performance.now());
        const rejected: { index: number; reason: string }[] = [];
        const retry: { index: number; reason: string }[] = [];
        const landed: Rec[] = [];
        b.records!.forEach((r, index) => {
          const n = (tries.get(r.id) ?? 0) + 1;
          tries.set(r.id, n);
          if (typeof r.refuse === 'string') rejected.push({ index, reason: r.refuse });
          else if (typeof r.throttle === 'number' && n <= r.throttle) retry.push({ index, reason: 'too many requests' });
          else landed.push(r);
        });
        cap.batches.push({ ...b, records: landed, count: landed.length });
        return { rejected, retry, bytes: 100 * landed.length };
      },
    };
  },
});

/** Stateful in name only: lets rule 4 be tested before counter_delta exists. */
const statefulTransform = defineTransform({
  key: 'remember',
  summary: 'Test transform flagged stateful.',
  stateful: true,
  config: Type.Object({}, { additionalProperties: false }),
  examples: [],
  create: () => ({ apply: (r: Rec) => r }),
});

/** A stream source: one NDJSON message per unit, numbered, as fast as it is taken, until stopped. */
const counterStream = defineSource({
  key: 'counter',
  summary: 'Test stream source: yields {"n": i} messages until stopped.',
  mode: 'stream',
  delivery: { guarantee: 'at-least-once', why: 'test source' },
  test: async () => {},
  config: Type.Object({ acked: Type.String({ description: 'Capture id that records acknowledged message numbers.' }) }, { additionalProperties: false }),
  examples: [],
  create(c) {
    return {
      async *units(signal: AbortSignal): AsyncGenerator<SourceUnit> {
        for (let n = 0; !signal.aborted; n++) {
          await new Promise((r) => setImmediate(r));
          yield {
            meta: { n },
            async *read() {
              yield Buffer.from(JSON.stringify({ n }) + '\n');
            },
            async done(delivered: boolean) {
              if (delivered) captures.get(c.acked)!.batches.push({ payload: Buffer.from(String(n)), head: '', count: 1, meta: { n } });
            },
          };
        }
      },
    };
  },
});

export const testRegistry: Registry = {
  ...registry,
  source: new Map([...registry.source, ['counter', counterStream]]),
  sink: new Map([...registry.sink, ['memory', memorySink], ['verdict', verdictSink]]),
  transform: new Map([...registry.transform, ['remember', statefulTransform]]),
};

/** testRegistry with one more batch source, `key`, whose run yields the units `units()` gives. */
export function withUnitsSource(key: string, summary: string, units: () => AsyncGenerator<SourceUnit>): Registry {
  const source = defineSource({
    key,
    summary,
    mode: 'batch',
    delivery: { guarantee: 'at-least-once', why: 'test source' },
    test: async () => {},
    config: Type.Object({}, { additionalProperties: false }),
    examples: [],
    create: () => ({ units }),
  });
  return { ...testRegistry, source: new Map([...testRegistry.source, [key, source]]) };
}
