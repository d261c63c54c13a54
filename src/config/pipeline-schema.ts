// The pipeline definition of spec doc 3 ("Pipeline definition", "Sink common fields") as TypeBox
// schemas. Component objects (source, sinks, serializers, transforms) are checked against their
// plugin's own schema by validate.ts; here they are only "an object with a type".
import { Type, type Static } from '@sinclair/typebox';

const lit = <T extends string>(...values: T[]) => Type.Union(values.map((v) => Type.Literal(v)));

/** Any component: `type` plus the plugin's parameters. */
export const Component = Type.Object({ type: Type.String({ minLength: 1, description: 'Registered plugin key.' }) }, { additionalProperties: true });

/** Fields every sink takes on top of its own parameters; the runtime implements them. */
export const SinkCommon = Type.Object({
  type: Type.String({ minLength: 1, description: 'Registered sink key.' }),
  retry_count: Type.Integer({ minimum: 0, default: 0, description: 'Retries after a failed write.' }),
  retry_delay_seconds: Type.Number({ minimum: 0, default: 1.0, description: 'Delay before the first retry; doubles each attempt.' }),
  circuit_breaker_threshold: Type.Optional(
    Type.Integer({ minimum: 1, description: 'After this many consecutive failed writes the sink is skipped for 60 seconds.' }),
  ),
  condition: Type.Optional(Type.String({ minLength: 1, description: 'Expression; only matching records are written to this sink.' })),
  transforms: Type.Array(Component, { default: [], description: 'Per-sink transform chain, applied before serialization.' }),
  serializer_out: Type.Optional({ ...Component, description: 'Per-sink output serializer; default: the pipeline serializer_out.' }),
});
export const SINK_COMMON_KEYS = Object.keys(SinkCommon.properties);

export const Schedule = Type.Object(
  {
    type: lit('interval', 'cron', 'manual', 'stream'),
    interval_seconds: Type.Optional(Type.Integer({ minimum: 1, description: 'For `interval`: seconds between runs.' })),
    cron: Type.Optional(Type.String({ minLength: 1, description: 'For `cron`: a 5-field cron expression.' })),
  },
  { additionalProperties: false },
);

export const Pipeline = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$', description: 'Unique pipeline name.' }),
    description: Type.Optional(Type.String()),
    enabled: Type.Boolean({
      default: true,
      description:
        "The state a new pipeline starts in: false registers it stopped (not scheduled, not streaming). Afterwards start and stop decide, remembered across restarts; a new version's enabled does not change them (docs/daemon.md).",
    }),
    schedule: Schedule,
    source: Component,
    serializer_in: Type.Object({ type: Type.String({ minLength: 1 }) }, { additionalProperties: true, default: { type: 'json' } }),
    transforms: Type.Array(Component, { default: [] }),
    serializer_out: Type.Object({ type: Type.String({ minLength: 1 }) }, { additionalProperties: true, default: { type: 'json' } }),
    sinks: Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true }), { minItems: 1 }),
    on_error: Type.Union([Type.Literal('continue'), Type.Literal('abort'), Type.Literal('retry'), Type.Literal('dlq')], { default: 'continue' }),
    batch_size: Type.Optional(Type.Integer({ minimum: 1, description: 'Stop after N records per run.' })),
    record_chunk_size: Type.Optional(Type.Integer({ minimum: 1, description: 'Decode in windows of at most N records.' })),
    thread_workers: Type.Integer({ minimum: 1, maximum: 64, default: 1 }),
    skip_processed: Type.Boolean({ default: false }),
    parallel_sinks: Type.Boolean({ default: false }),
    post_batch_cleanup: Type.Boolean({ default: true }),
    rate_limit_rps: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    dlq: Type.Optional(Type.Object({ type: Type.String() }, { additionalProperties: true })),
    kubernetes: Type.Optional(
      Type.Object(
        {
          enabled: Type.Boolean({ default: false }),
          service_type: Type.Union([Type.Literal('NodePort'), Type.Literal('LoadBalancer')], { default: 'NodePort' }),
          node_port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
          service_name: Type.Optional(Type.String({ minLength: 1 })),
        },
        { additionalProperties: false },
      ),
    ),
    workers: Type.Optional(
      Type.Object(
        {
          count: Type.Union([Type.Literal('all'), Type.Integer({ minimum: 1 })]),
          list: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
        },
        { additionalProperties: false },
      ),
    ),
    state_persist_interval_s: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
  },
  { additionalProperties: false },
);

export const Definition = Type.Object(
  { version: Type.Literal('1'), pipeline: Type.Object({}, { additionalProperties: true }) },
  { additionalProperties: false },
);

export interface ComponentConfig {
  type: string;
  [param: string]: unknown;
}
export type SinkConfig = Static<typeof SinkCommon> & {
  transforms: ComponentConfig[];
  serializer_out?: ComponentConfig;
  [param: string]: unknown;
};
export type PipelineConfig = Omit<Static<typeof Pipeline>, 'source' | 'serializer_in' | 'serializer_out' | 'transforms' | 'sinks' | 'dlq'> & {
  source: ComponentConfig;
  serializer_in: ComponentConfig;
  serializer_out: ComponentConfig;
  transforms: ComponentConfig[];
  sinks: SinkConfig[];
  dlq?: SinkConfig;
};
