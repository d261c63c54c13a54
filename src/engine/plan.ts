// A pipeline config compiled once into plain functions: the decoder, the global transform chain and,
// per sink, its condition, transform chain and encoder. Built on the main thread and in each worker.
import { Value } from '@sinclair/typebox/value';
import type { ComponentConfig, PipelineConfig, SinkConfig } from '../config/pipeline-schema.js';
import type { Registry } from '../config/load.js';
import { compile, type CompiledExpr } from '../expr/index.js';
import type { Decoder, Encoder, ResolveContext, SerializerContext, SerializerPlugin, Transform, TransformContext, TransformPlugin } from '../plugins/types.js';
import { silentLogger, type Logger } from '../observability/log.js';
import { readSetting } from '../settings.js';

/**
 * A transform that knows how to name itself in messages (`transforms[2] (cast)`) and in stored
 * state (`transforms[2].counter_delta`).
 */
export type LabeledTransform = Transform & { label: string; key: string; defersUnits: boolean };

export interface SinkPlan {
  /** `sinks[0] (local)`: how messages and DLQ contexts name the sink. */
  label: string;
  condition?: CompiledExpr;
  chain: LabeledTransform[];
  encoder: Encoder;
  /** Also hand the records themselves to the sink (sinks that accept records). */
  wantsRecords: boolean;
  /** A transform of its chain holds records until drained (aggregate, sort). */
  holds: boolean;
}

export interface ChunkPlan {
  decoder: Decoder;
  /** Where the serializers took a relative schema_file (handed on to worker threads). */
  schemaDir?: string;
  chain: LabeledTransform[];
  sinks: SinkPlan[];
  /** Records must be copied before sink chains that change them in place (several sinks). */
  copyForSinks: boolean;
  /**
   * Where the main thread takes over from worker threads: the first global transform that holds
   * records (the chain's length when only sink chains hold); undefined when none holds.
   */
  mainFrom?: number;
  /** serializer_in is `json`: records a source parsed itself (SourceUnit.records) need no decoding. */
  decodesJson: boolean;
  /** The ceiling of each decode call (one message, chunk or split piece): see decodeBounded. */
  limits: DecodeLimits;
  /** Chunks count their stage figures (someone follows the run's progress: live counters, `svc run`). */
  countStages?: boolean;
}

export interface DecodeLimits {
  /** Records one input may give; an input of more bytes may give as many as it has bytes. */
  maxRecords: number;
  /** About this many bytes of records (as JSON) one input may give. */
  maxBytes: number;
}

/** The limits from SVC_DECODE_MAX_* (read where the plan is built: in worker threads too, from their environment). */
export const decodeLimits = (): DecodeLimits => ({
  maxRecords: readSetting('DECODE_MAX_RECORDS_PER_INPUT'),
  maxBytes: readSetting('DECODE_MAX_BYTES_PER_INPUT'),
});

function plugin<T>(reg: Registry, kind: keyof Registry, type: string): T {
  const p = reg[kind].get(type);
  if (!p) throw new Error(`unknown ${kind} '${type}'`);
  return p as T;
}

export function encoderFor(reg: Registry, c: ComponentConfig, ctx?: SerializerContext): Encoder {
  const p = plugin<SerializerPlugin>(reg, 'serializer', c.type);
  if (!p.encoder) throw new Error(`serializer '${c.type}' cannot write`);
  // Validated configs carry their defaults already; built-in fallbacks (the DLQ's ndjson) do not.
  return p.encoder(Value.Default(p.config, { ...c }) as never, ctx);
}

export function sinkLabel(cfg: SinkConfig, index: number | 'dlq') {
  return index === 'dlq' ? `dlq (${cfg.type})` : `sinks[${index}] (${cfg.type})`;
}

function chainOf(reg: Registry, list: ComponentConfig[], prefix: string, pipeline: string, log: Logger, count?: TransformContext['count']): LabeledTransform[] {
  return list.map((t, i) => {
    const p = plugin<TransformPlugin>(reg, 'transform', t.type);
    const tr = p.create(t as never, { pipeline, log, count });
    return Object.assign(tr, {
      label: `${prefix}transforms[${i}] (${t.type})`,
      key: `${prefix}transforms[${i}].${t.type}`,
      defersUnits: p.defersUnits?.(t as never) ?? false,
    });
  });
}

/** Which sinks take records as well as bytes (worker threads get this list instead of the registry). */
export function sinksWantingRecords(config: PipelineConfig, reg: Registry): boolean[] {
  return config.sinks.map((s) => plugin<{ accepts: string }>(reg, 'sink', s.type).accepts === 'records');
}

/**
 * The config with every serializer's asynchronous preparation done (schemas fetched from a registry);
 * the same object is handed to worker threads, so they need no network of their own. `given`: what
 * the process tells serializers (its schema registry and schema folder).
 */
export async function resolveSerializers(
  config: PipelineConfig,
  reg: Registry,
  signal: AbortSignal,
  given?: Pick<ResolveContext, 'schemaRegistry' | 'schemaDir'>,
): Promise<PipelineConfig> {
  const resolve = async <C extends ComponentConfig | undefined>(c: C, direction: 'in' | 'out'): Promise<C> => {
    if (!c) return c;
    const p = plugin<SerializerPlugin>(reg, 'serializer', c.type);
    return p.resolve ? ((await p.resolve(c as never, { ...given, signal, direction })) as C) : c;
  };
  const [serializer_in, serializer_out] = await Promise.all([resolve(config.serializer_in, 'in'), resolve(config.serializer_out, 'out')]);
  const sinks = await Promise.all(config.sinks.map(async (s) => ({ ...s, serializer_out: await resolve(s.serializer_out, 'out') })));
  return { ...config, serializer_in, serializer_out, sinks };
}

/**
 * `registry`: the full one, or a worker's (only the plan's serializers and transforms, with `wantsRecords`).
 * `schemaDir`: where serializers take a relative schema_file (SVC_SCHEMA_DIR); worker threads get the plan's.
 */
export function buildPlan(
  config: PipelineConfig,
  opts: {
    registry: Registry;
    log?: Logger;
    wantsRecords?: boolean[];
    count?: TransformContext['count'];
    limits?: DecodeLimits;
    schemaDir?: string;
    countStages?: boolean;
  },
): ChunkPlan {
  const reg = opts.registry;
  const log = opts.log ?? silentLogger;
  const ser = plugin<SerializerPlugin>(reg, 'serializer', config.serializer_in.type);
  if (!ser.decoder) throw new Error(`serializer '${ser.key}' cannot read`);
  const wants = opts.wantsRecords ?? sinksWantingRecords(config, reg);
  const sinks = config.sinks.map((s, i) => ({
    label: sinkLabel(s, i),
    condition: s.condition ? compile(s.condition) : undefined,
    chain: chainOf(reg, s.transforms, `sinks[${i}].`, config.name, log, opts.count),
    encoder: encoderFor(reg, s.serializer_out ?? config.serializer_out, { schemaDir: opts.schemaDir }),
    wantsRecords: wants[i]!,
  }));
  const chain = chainOf(reg, config.transforms, '', config.name, log, opts.count);
  // Transforms that hold records or need set-up run on the main thread, from the first one on.
  const first = chain.findIndex((t) => t.drain || t.open);
  const sinkPlans = sinks.map((s) => ({ ...s, holds: s.chain.some((t) => t.drain || t.open) }));
  return {
    decoder: ser.decoder(config.serializer_in as never, { schemaDir: opts.schemaDir }),
    schemaDir: opts.schemaDir,
    decodesJson: ser.key === 'json',
    limits: opts.limits ?? decodeLimits(),
    chain,
    sinks: sinkPlans,
    copyForSinks: sinks.length > 1 && sinks.some((s) => s.chain.length > 0),
    mainFrom: first !== -1 ? first : sinkPlans.some((s) => s.holds) ? chain.length : undefined,
    countStages: opts.countStages ?? false,
  };
}
