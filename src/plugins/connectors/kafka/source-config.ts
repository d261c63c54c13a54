// The kafka source's parameters and message, shared by its two engines (source.ts: kafkajs and the
// plugin; native-source.ts: librdkafka).
import { Type, type Static } from '@sinclair/typebox';
import { reconnectFields } from '../../connector-runtime/reconnect.js';
import type { Message } from '../../connector-runtime/stream-source.js';
import { brokersField, engineFields, securityFields, TOPIC_PATTERN } from './client.js';

const topicName = Type.String({ pattern: TOPIC_PATTERN, description: 'A topic name.' });

export const sourceConfig = Type.Object(
  {
    brokers: brokersField,
    topic: Type.Union([topicName, Type.Array(topicName, { minItems: 1 })], {
      description: 'Topic to consume, or a list of topics (one consumer group reads them all).',
    }),
    group_id: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'Consumer group; the default is the pipeline name. Members of one group share the partitions; committed offsets belong to the group.',
      }),
    ),
    auto_offset_reset: Type.Union([Type.Literal('latest'), Type.Literal('earliest')], {
      default: 'latest',
      description: 'Where a group without a committed offset starts: latest (only new messages) or earliest (from the start of each partition).',
    }),
    enable_auto_commit: Type.Boolean({
      default: false,
      description:
        'false: offsets are committed per poll batch after its records were delivered (at-least-once). true: offsets are committed as soon as messages are fetched, before delivery (at-most-once).',
    }),
    max_poll_records: Type.Integer({
      minimum: 1,
      maximum: 100_000,
      default: 500,
      description: 'Most messages in one unit (one commit); the consumer pauses once twice as many wait to be processed.',
    }),
    session_timeout_ms: Type.Integer({
      minimum: 1000,
      maximum: 3_600_000,
      default: 30_000,
      description: "Milliseconds without a heartbeat before the group coordinator drops this member (the broker's group.min/max.session.timeout.ms bound it).",
    }),
    ...securityFields,
    ...engineFields,
    ...reconnectFields(5),
  },
  { additionalProperties: false },
);

export interface KafkaMessage extends Message {
  topic: string;
  partition: number;
  offset: string;
}

export type SourceConfig = Static<typeof sourceConfig>;
