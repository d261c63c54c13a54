// Runs a test case through the real engine (runPipeline: chunking, serializer_in, transforms, sink
// conditions and chains, serializer_out, DLQ envelopes, run record) with two substitutions made in
// a registry of its own: the source yields the case's input, and every sink (the DLQ's too) keeps
// what it is handed in memory instead of talking to its peer. Each poll is one run; the polls of a
// case share transform state through the same TransformStateIO a daemon's runs use.
import { deserialize, serialize } from 'node:v8';
import { Type } from '@sinclair/typebox';
import type { Registry } from '../config/load.js';
import type { PipelineConfig } from '../config/pipeline-schema.js';
import type { Envelope } from '../engine/dlq.js';
import type { RunRecord } from '../engine/run-record.js';
import { sinkLabel } from '../engine/plan.js';
import { runPipeline, type TransformStateIO } from '../engine/runner.js';
import { silentLogger } from '../observability/log.js';
import { registry as defaultRegistry } from '../plugins/registry.js';
import { defineSerializer, type AnyPlugin, type Encoder, type Rec, type SinkPlugin, type Source, type SourcePlugin } from '../plugins/types.js';
import type { TestCase, TestPoll } from './load.js';

/** What one sink was handed during a poll (or a whole case). */
export interface SinkCapture {
  label: string;
  records: Rec[];
  /** The bytes a file sink would hold: head, the batches with separators, tail (one file per poll). */
  bytes: Buffer;
}

export interface PollResult {
  sinks: SinkCapture[];
  dlq: Envelope[];
  run: RunRecord;
}

/** serializer_in of polls given as records: each message is one structured-cloned record. */
const RECORDS_SERIALIZER = '__svc_test_records';

const recordsSerializer = defineSerializer({
  key: RECORDS_SERIALIZER,
  summary: 'svc test: records handed over as they are.',
  direction: 'in',
  config: Type.Object({}),
  examples: [],
  decoder: () => ({
    framing: { kind: 'whole' },
    decode({ data }, out) {
      out.record(deserialize(data) as Rec);
    },
  }),
});

/** Collects the batches one sink is handed. */
class CaptureSink {
  readonly records: Rec[] = [];
  private readonly parts: Buffer[] = [];
  private head?: Buffer;

  constructor(
    readonly label: string,
    private readonly encoder: Encoder,
  ) {}

  async write(batch: { payload: Buffer; head: string | Uint8Array; records?: Rec[] }) {
    // Copies: the engine may reuse what it handed over once write() resolved.
    for (const r of batch.records ?? []) this.records.push(structuredClone(r));
    // A records sink (kafka, sql...) is handed no encoded payload; `bytes` still shows the records
    // as its serializer_out writes them, as a file sink would.
    const encode = batch.payload.length === 0 && !!batch.records?.length;
    if (this.head === undefined) this.head = Buffer.from(encode ? this.encoder.head(batch.records!) : batch.head);
    else if (!this.encoder.whole) this.parts.push(Buffer.from(this.encoder.separator));
    this.parts.push(Buffer.from(encode ? this.encoder.body(batch.records!) : batch.payload));
  }

  capture(): SinkCapture {
    const file = this.head === undefined ? [] : [this.head, ...this.parts, ...(this.encoder.whole ? [] : [Buffer.from(this.encoder.tail)])];
    return { label: this.label, records: this.records, bytes: Buffer.concat(file) };
  }
}

/**
 * The default registry with the pipeline's source replaced by `input` and every sink by a capture.
 * The replacements keep the real plugins' schemas (secrets are still masked in messages) and `accepts`.
 */
function harnessRegistry(base: Registry, sourceType: string, input: Source, sinks: Map<string, CaptureSink>): Registry {
  const source = new Map<string, AnyPlugin>(base.source);
  source.set(sourceType, { ...(base.source.get(sourceType) as SourcePlugin), create: () => input });
  const sink = new Map<string, AnyPlugin>();
  for (const [key, p] of base.sink) {
    const capture: SinkPlugin['create'] = (_c, ctx) => {
      const s = new CaptureSink(ctx.component ?? key, ctx.encoder);
      sinks.set(s.label, s);
      return s;
    };
    sink.set(key, { ...(p as SinkPlugin), create: capture });
  }
  const serializer = new Map<string, AnyPlugin>(base.serializer);
  serializer.set(RECORDS_SERIALIZER, recordsSerializer);
  return { source, sink, serializer, transform: base.transform };
}

/** A source of exactly one unit: the poll's input. */
function inputSource(poll: TestPoll): Source {
  const { input, meta } = poll;
  const parts: Buffer[] = input.kind === 'records' ? input.records.map((r) => serialize(r)) : input.kind === 'messages' ? input.messages : [input.data];
  const unit = {
    meta: { ...meta },
    size: input.kind === 'bytes' ? input.data.length : undefined,
    messages: input.kind !== 'bytes',
    async *read() {
      yield* parts;
    },
  };
  return {
    async *units() {
      yield unit;
    },
  };
}

/** Transform state kept in memory between the polls of a case, starting from the case's `state`. */
function memoryState(initial: Record<string, unknown> | undefined): TransformStateIO {
  let body: Record<string, unknown> | null = initial ? structuredClone(initial) : null;
  return {
    load: async () => body,
    save: async (s) => {
      body = structuredClone(s);
    },
  };
}

export async function runPoll(
  config: PipelineConfig,
  poll: TestPoll,
  state: TransformStateIO,
  opts: { registry?: Registry; runId?: string } = {},
): Promise<PollResult> {
  const captures = new Map<string, CaptureSink>();
  const reg = harnessRegistry(opts.registry ?? defaultRegistry, config.source.type, inputSource(poll), captures);
  // Inline (worker threads build plans from the default registry); records bypass serializer_in.
  const cfg: PipelineConfig = { ...config, thread_workers: 1, ...(poll.input.kind === 'records' ? { serializer_in: { type: RECORDS_SERIALIZER } } : {}) };
  const run = await runPipeline(cfg, { registry: reg, state, log: silentLogger, runId: opts.runId });
  const sinks = config.sinks.map((s, i) => {
    const label = sinkLabel(s, i);
    return captures.get(label)?.capture() ?? { label, records: [], bytes: Buffer.alloc(0) };
  });
  const dlq = config.dlq ? ((captures.get(sinkLabel(config.dlq, 'dlq'))?.records ?? []) as unknown as Envelope[]) : [];
  return { sinks, dlq, run };
}

/** Every poll of a case, in order, sharing transform state. */
export async function runCase(config: PipelineConfig, c: TestCase, opts: { registry?: Registry } = {}): Promise<PollResult[]> {
  const state = memoryState(c.state);
  const out: PollResult[] = [];
  for (let i = 0; i < c.polls.length; i++) out.push(await runPoll(config, c.polls[i]!, state, { ...opts, runId: `svc-test-${i + 1}` }));
  return out;
}

/** The outputs of several polls taken together (what a case-level `expect` checks). */
export function combine(polls: PollResult[]): Omit<PollResult, 'run'> & { runs: RunRecord[] } {
  const sinks = polls[0]!.sinks.map((s, i) => ({
    label: s.label,
    records: polls.flatMap((p) => p.sinks[i]!.records),
    bytes: Buffer.concat(polls.map((p) => p.sinks[i]!.bytes)),
  }));
  return { sinks, dlq: polls.flatMap((p) => p.dlq), runs: polls.map((p) => p.run) };
}
