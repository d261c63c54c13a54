// The kafka sink's parameters and message key, shared by its two engines (sink.ts: kafkajs and the
// plugin; native-sink.ts: librdkafka).
import { Type, type Static } from '@sinclair/typebox';
import type { Rec } from '../../types.js';
import { brokersField, engineFields, securityFields, TOPIC_PATTERN } from './client.js';

export const COMPRESSIONS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;

export const sinkConfig = Type.Object(
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
    acks: Type.Union([Type.Literal('all'), Type.Literal(1), Type.Literal(0)], {
      default: 'all',
      description:
        'Acknowledgement a message needs before it counts as written: all (every in-sync replica; at-least-once), 1 (the partition leader alone: lost if the leader fails before the replicas copied it), 0 (none: at-most-once).',
    }),
    enable_idempotence: Type.Boolean({
      default: false,
      description: "The idempotent producer: the broker drops the duplicates of librdkafka's own retries and keeps per-partition order (needs acks all).",
    }),
    compression: Type.Union(
      COMPRESSIONS.map((x) => Type.Literal(x)),
      { default: 'none', description: 'Compression of the message batches: none, gzip, snappy, lz4 or zstd (kafkajs: none or gzip only).' },
    ),
    linger_ms: Type.Integer({
      minimum: 0,
      maximum: 900_000,
      default: 5,
      description: 'Milliseconds librdkafka waits for more messages before it sends a batch (larger batches, more latency). Ignored by kafkajs.',
    }),
    ...securityFields,
    ...engineFields,
  },
  { additionalProperties: false },
);

export type SinkConfig = Static<typeof sinkConfig>;

/** The message key of a record: its key_field value as text, or null when absent. */
export function messageKey(r: Rec, field: string | undefined): string | null {
  if (!field) return null;
  const v = r[field];
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}
