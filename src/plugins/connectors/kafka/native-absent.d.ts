// @confluentinc/kafka-javascript's names, untyped, for a checkout where that optional package is
// not installed (its native build did not run: issue 32, docs/connectors/kafka.md#engines).
// tsconfig.json's `paths` falls back to this file only then; wherever the package is installed,
// its own declarations are the ones checked. So `npm test` type-checks on both kinds of machine.
/* eslint-disable @typescript-eslint/no-explicit-any -- a stand-in for declarations that are not installed */
export type Producer = any;
export type KafkaConsumer = any;
export type Metadata = any;
export type LibrdKafkaError = any;
export type Message = any;
export type DeliveryReport = any;
export type TopicPartition = any;
export type TopicPartitionOffset = any;
export declare const Producer: any;
export declare const KafkaConsumer: any;
export declare const librdkafkaVersion: string;
export declare const CODES: any;
