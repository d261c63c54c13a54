// One run of a pipeline (execution rules 1-6 of spec doc 3): source units are cut into chunks,
// processed inline or on worker threads (at most 2 x thread_workers in flight), and delivered to the
// sinks strictly in order. A unit is finalized (moved, deleted, marked processed) only once every
// record from it has been written, dropped on purpose, or dead-lettered.
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import type { PipelineConfig, SinkConfig } from '../config/pipeline-schema.js';
import type { Registry } from '../config/load.js';
import { expansionOf } from '../config/interpolate.js';
import { errorMessage } from '../core/errors.js';
import { storeMibs, type MibResolver } from '../mib/resolver.js';
import { maskedLogger, silentLogger, type Logger } from '../observability/log.js';
import { componentMetrics, type RunTelemetry } from '../observability/metrics.js';
import { registry as defaultRegistry } from '../plugins/registry.js';
import { loadSettings, readSetting } from '../settings.js';
import type {
  DrainPoint,
  FlushResult,
  Framing,
  MetricDeclaration,
  PluginContext,
  ProcessedFiles,
  Rec,
  SinkBatch,
  SinkPlugin,
  Source,
  SourcePlugin,
  SourceUnit,
  TransformEvent,
} from '../plugins/types.js';
import { GaveUpError } from '../plugins/connector-runtime/reconnect.js';
import { redactor, secretsOf } from '../core/secrets.js';
import { bodyChunksOf, chunksOf, messageChunksOf, recordChunksOf, type Chunk, type ChunkOptions } from './chunker.js';
import { DeadLetterQueue, type Envelope, type SinkSlot, type Stage } from './dlq.js';
import { inlineExecutor, sharedExecutor, type ChunkExecutor } from './executor.js';
import { DecodeWatch, forget, quarantineReason, readSuspects, SuspectMatcher, type DecodeWatchOptions, type Suspect } from './decode-watch.js';
import { buildPlan, encoderFor, resolveSerializers, sinkLabel, type ChunkPlan, type LabeledTransform } from './plan.js';
import { continueChunk, drainChunk, processChunk, type ChunkInput, type ChunkOutput, type StageError } from './process-chunk.js';

import { MemoryProcessedFiles } from '../plugins/connector-runtime/processed-files.js';
import { CircuitBreaker, guardedRecordsWrite, TokenBucket } from './reliability.js';
import { RunCounters, runCounts, type RunRecord, type RunStatus } from './run-record.js';
import { emptyStages, type StageFigures } from './stage-figures.js';
import type { TapHub } from './tap.js';

export interface RunProgress {
  units: number;
  records_in: number;
  records_out: number;
  /** Records dropped on purpose (a transform gave none for them, or no sink took them). */
  records_filtered: number;
  records_skipped: number;
  dlq_count: number;
  bytes_in: number;
  bytes_out: number;
  /** The run's messages so far (the run record's `errors`; the same array until a new message comes). */
  errors?: readonly string[];
  /** Name and size of the unit being read, when the source knows them. */
  unit?: string;
  unit_size?: number;
  /** Per-stage figures (the runner's own object, updated in place: copy it to keep a snapshot). */
  stages?: StageFigures;
}

export interface RunOptions {
  runId?: string;
  nodeId?: string;
  log?: Logger;
  /** Graceful stop: read nothing more, deliver what is in flight, leave unfinished units in place. */
  signal?: AbortSignal;
  processed?: ProcessedFiles;
  registry?: Registry;
  /** Circuit breakers by sink label; pass the same map to every run of a pipeline so they persist. */
  breakers?: Map<string, CircuitBreaker>;
  onProgress?: (p: RunProgress) => void;
  /** Seconds from a chunk being read to its delivery (the svc_chunk_duration_seconds histogram). */
  onChunkDelivered?: (seconds: number) => void;
  /** Chunks in flight after each submit (rule 3; the svc_stream_queue_depth gauge). */
  onQueueDepth?: (depth: number) => void;
  /** The poison-input watch (issue 28): where suspects are noted, and its thresholds. */
  decodeWatch?: DecodeWatchOptions;
  /** Daemon services handed to plugins (the webhook hub). */
  services?: PluginContext['services'];
  /** The MIBs SNMP connectors resolve names with (default: this process's MIB store, from the settings). */
  mibs?: MibResolver;
  /** Where serializers take a relative schema_file (default: SVC_SCHEMA_DIR). */
  schemaDir?: string;
  /** Bytes per chunk (default 512 KiB). */
  chunkBytes?: number;
  /** A flush run (`POST .../run?flush=true`): holding transforms drain at 'flush' instead of 'run'. */
  flush?: boolean;
  /** Durable state of stateful transforms: loaded at start, saved after a successful run. */
  state?: TransformStateIO;
  /** Events of stateful transforms (the svc_transform_* counters). */
  onTransformEvent?: (event: TransformEvent | 'state_io', n: number) => void;
  /** Connector telemetry (the svc_connector_* metrics, and the metrics connectors declare). */
  telemetry?: RunTelemetry;
  /** The pipeline's taps (src/engine/tap.ts): chunks copy records for them while any is attached. */
  tap?: TapHub;
  /** A shard of a sharded batch run (issue 33): the targets the source polls; absent: all. */
  shard?: PluginContext['shard'];
}

export type { RunTelemetry };

/** Where the state of a pipeline's stateful transforms is kept, keyed by transform instance. */
export interface TransformStateIO {
  /** The stored state (null when none, or when it belongs to another config). */
  load(): Promise<Record<string, unknown> | null>;
  save(state: Record<string, unknown>): Promise<void>;
}

interface UnitState {
  unit: SourceUnit;
  /** Suspects of the decode watch found in this unit: forgotten once the unit is delivered. */
  suspects: Set<Suspect>;
  /** Records that neither reached a sink nor the DLQ: the unit must stay where it is. */
  undelivered: number;
  /** Reading stopped before the end of the unit. */
  partial: boolean;
  finished: boolean;
}

/** The process's schema registry (SVC_SCHEMA_REGISTRY_*), handed to serializers' resolve(). */
const schemaRegistry = () => ({
  url: readSetting('SCHEMA_REGISTRY_URL'),
  username: readSetting('SCHEMA_REGISTRY_USERNAME'),
  password: readSetting('SCHEMA_REGISTRY_PASSWORD'),
});

/** The MIBs of a run that is given none: this process's MIB store, as the settings place it. */
const processMibs = storeMibs(() => loadSettings());

/**
 * A unit read to its end (or given up on) keeps only what finishing it needs (meta, size, done):
 * an ended unit may wait long for its shared flush (finalizeEnded), and a busy stream's units
 * would otherwise hold every record they carried until then, all of them live for the garbage
 * collector (bench otlp-ingest, docs/benchmarks.md). Its chunks hold what they still need.
 */
function letGoOfInput(unit: SourceUnit) {
  unit.records = undefined;
  unit.bodies = undefined;
  unit.undecodable = undefined;
  unit.read = readNothing;
}
async function* readNothing(): AsyncIterable<Buffer> {}

/** At most this many ended units wait for one shared flush before being finalized. */
export const FINALIZE_BATCH = 512;

/** How often a stream writes the state of its stateful transforms when state_persist_interval_s is unset. */
export const DEFAULT_STATE_PERSIST_S = 60;

/** Measured: 512 KiB chunks keep records in V8's young generation; 4 MiB ones halve throughput. */
export const DEFAULT_CHUNK_BYTES = 512 << 10;

export async function runPipeline(config: PipelineConfig, opts: RunOptions = {}): Promise<RunRecord> {
  const run = new PipelineRun(config, opts);
  return run.execute();
}

class PipelineRun {
  readonly runId: string;
  readonly startedAt = new Date();
  readonly counters: RunCounters;
  /** Per-stage figures, added to at each delivered chunk. */
  readonly stages: StageFigures;
  readonly log: Logger;
  /** Masks every secret of the pipeline's connectors in errors and notes. */
  private readonly redact: (text: string) => string;
  /** A stream source exhausted its reconnect attempts: the daemon must not restart it. */
  private gaveUp = false;
  private readonly reg: Registry;
  /** Aborts plugin waits and retries: on_error abort, or a fatal error. */
  private readonly hard = new AbortController();
  private abortError?: string;
  private fatalError?: string;
  /**
   * Deliveries run one after another on this chain (order in = order out) while the read loop
   * goes on preparing the next chunks: processing overlaps with sink I/O.
   */
  private chain: Promise<void> = Promise.resolve();
  /** Completion of each chunk still queued or being delivered, oldest first (rule 3 cap). */
  private readonly inFlight: Promise<void>[] = [];
  /** Chunks submitted and not yet delivered. */
  private queuedChunks = 0;
  private units = 0;
  private plan!: ChunkPlan;
  private sinks: SinkSlot[] = [];
  private dlq?: DeadLetterQueue;
  private limiter?: TokenBucket;
  private watch?: DecodeWatch;
  /** Tells the watch which message of a chunk is being decoded. */
  private onMessage?: (index: number) => void;
  /** Inputs noted by an earlier process's decode watch, to be set aside when they come again. */
  private suspects?: SuspectMatcher;
  /** Units read but not yet finalized. */
  private readonly open = new Set<UnitState>();
  /** Where serializers take a relative schema_file. */
  private get schemaDir() {
    return this.opts.schemaDir ?? readSetting('SCHEMA_DIR');
  }
  /** A graceful stop cut the input short. */
  private interrupted = false;
  /** Transforms of the plan with durable state. */
  private stateful: LabeledTransform[] = [];
  /** Units wait for the run's drain before they are finalized (a transform holds records across units). */
  private defer = false;

  constructor(
    public config: PipelineConfig,
    readonly opts: RunOptions,
  ) {
    this.runId = opts.runId ?? randomUUID();
    this.reg = opts.registry ?? defaultRegistry;
    const secrets = pipelineSecrets(config, this.reg);
    this.redact = redactor(secrets);
    // Every line of the run, the plugins' own included, goes out masked.
    const log = (opts.log ?? silentLogger).child({ pipeline: config.name, run_id: this.runId });
    this.log = secrets.size ? maskedLogger(log, redactor([...secrets].flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]))) : log;
    // Every request a plugin has in flight listens for this abort (an InfluxDB sink writing for 200
    // polled targets at once has hundreds): not a leak, so no MaxListenersExceededWarning.
    setMaxListeners(0, this.hard.signal);
    this.counters = new RunCounters(this.redact);
    this.stages = emptyStages(config);
    if (config.rate_limit_rps) this.limiter = new TokenBucket(config.rate_limit_rps);
  }

  private get stopped() {
    return this.opts.signal?.aborted ?? false;
  }

  private get dlqActive() {
    return !!this.dlq && (this.config.on_error === 'dlq' || this.config.on_error === 'retry');
  }

  async execute(): Promise<RunRecord> {
    const ctx = {
      pipeline: this.config.name,
      log: this.log,
      signal: this.hard.signal,
      processed: this.opts.processed ?? new MemoryProcessedFiles(),
      skipProcessed: this.config.skip_processed,
      services: this.opts.services,
      mibs: this.opts.mibs ?? processMibs,
      redact: this.redact,
      schedule: this.config.schedule.type,
      shard: this.opts.shard,
    };
    let source: Source | undefined;
    let executor: ChunkExecutor | undefined;
    let persistTimer: NodeJS.Timeout | undefined;
    const open = this.open;
    try {
      this.config = await resolveSerializers(this.config, this.reg, this.hard.signal, { schemaRegistry: schemaRegistry(), schemaDir: this.schemaDir });
      this.plan = buildPlan(this.config, {
        registry: this.reg,
        log: this.log,
        count: (e, n = 1) => this.opts.onTransformEvent?.(e, n),
        schemaDir: this.schemaDir,
        countStages: this.opts.onProgress !== undefined,
      });
      this.defer = this.allTransforms().some((t) => t.defersUnits);
      this.stateful = this.plan.chain.filter((t) => t.state);
      await this.loadState();
      await Promise.all(this.allTransforms().map((t) => t.open?.()));
      // Worker threads boot (load modules) while the sinks open and the source lists its input.
      const threads = this.config.thread_workers;
      const watching = this.opts.decodeWatch;
      if (watching) {
        this.watch = new DecodeWatch(watching, this.config.name);
        const suspects = readSuspects(watching.dir, this.config.name);
        if (suspects.length) this.suspects = new SuspectMatcher(suspects);
      }
      const watch = this.watch;
      this.onMessage = watch && ((i: number) => watch.at(i));
      executor = threads > 1 ? sharedExecutor(this.plan, this.config, threads, this.onMessage) : inlineExecutor(this.plan, this.onMessage);
      const srcPlugin = this.reg.source.get(this.config.source.type) as SourcePlugin;
      source = srcPlugin.create(this.config.source as never, { ...ctx, ...this.component('source', this.config.source.type, srcPlugin.metrics) });
      this.sinks = this.config.sinks.map((cfg, i) => this.slot(cfg, sinkLabel(cfg, i), ctx));
      if (this.config.dlq) {
        const slot = this.slot(this.config.dlq, sinkLabel(this.config.dlq, 'dlq'), ctx, { type: 'ndjson' });
        this.dlq = new DeadLetterQueue(slot, { pipeline: this.config.name, runId: this.runId, log: this.log, signal: this.hard.signal, redact: this.redact });
      }
      const info = { runId: this.runId, pipeline: this.config.name, startedAt: this.startedAt };
      await Promise.all([...this.sinks.map((s) => s.sink.open?.(info)), this.dlq?.open(info)]);

      const cap = threads * 2;
      const inOrder = threads === 1 && this.plan.mainFrom !== undefined;
      if (this.stateful.length && this.opts.state && this.config.schedule.type === 'stream') {
        // Streams never end on their own: their state is also written between chunks, in order.
        const every = (this.config.state_persist_interval_s ?? DEFAULT_STATE_PERSIST_S) * 1000;
        persistTimer = setInterval(() => void this.enqueue(() => this.persistState()), every);
        persistTimer.unref();
      }
      const framing = this.plan.decoder.framing;
      const chunkOpts = {
        targetBytes: this.opts.chunkBytes ?? DEFAULT_CHUNK_BYTES,
        maxLines: threads === 1 ? this.config.record_chunk_size : undefined,
      };

      for await (const unit of source.units(this.opts.signal ?? this.hard.signal)) {
        const state: UnitState = { unit, undelivered: 0, partial: false, finished: false, suspects: new Set() };
        open.add(state);
        this.units++;
        if (unit.undecodable?.length) {
          const bad = unit.undecodable;
          this.enqueue(() => this.deadLetterRaw(bad, { data: new Uint8Array(0), firstLine: 1, meta: unit.meta }, state));
        }
        try {
          const chunks = this.chunksOfUnit(unit, framing, chunkOpts);
          for await (const chunk of chunks) {
            // Checked before each chunk: a unit is partial only when input is left unread.
            if (this.abortError || (this.stopped && this.config.schedule.type !== 'stream')) {
              state.partial = true;
              this.interrupted ||= this.stopped;
              break;
            }
            let input: ChunkInput | undefined = {
              data: chunk.data,
              messages: chunk.messages,
              records: chunk.records,
              header: chunk.header,
              firstLine: chunk.firstLine,
              meta: unit.meta,
              readAt: performance.now(),
              error: chunk.error,
              tap: this.opts.tap?.requests(),
            };
            if (this.suspects) input = this.setAside(input, state);
            if (!input) continue;
            // Inline, transforms that hold records must see a chunk after the previous unit's drain:
            // such chunks are processed in delivery order, not when read.
            const result = inOrder ? undefined : this.watched(state, input, () => executor!.run(input));
            result?.catch(() => {}); // awaited in order by the delivery chain
            this.queuedChunks++;
            const delivered = () => {
              this.queuedChunks--;
              this.opts.onQueueDepth?.(this.queuedChunks);
            };
            this.inFlight.push(this.enqueue(() => this.deliverChunk(input, result, state).finally(delivered)));
            this.opts.onQueueDepth?.(this.queuedChunks);
            while (this.inFlight.length >= cap) await this.inFlight.shift();
          }
        } catch (e) {
          // One unreadable unit does not end the run; it stays in place for the next one.
          state.partial = true;
          this.counters.note(`${this.unitName(unit)}: read failed: ${errorMessage(e)}`);
        }
        letGoOfInput(unit);
        this.enqueue(() => this.finishUnit(state));
        // A stream source ends by itself once stopped, after handing on what it already accepted.
        if (this.abortError || (this.stopped && this.config.schedule.type !== 'stream')) {
          this.interrupted ||= this.stopped;
          break;
        }
        if (this.config.batch_size !== undefined) {
          // Counters move at delivery: let this unit's chunks land before comparing.
          await this.chain;
          if (this.counters.records_in >= this.config.batch_size) break;
        }
      }
      // A batch source that saw the stop returns early, possibly before its first unit (nothing was
      // cut short above): the run still did not finish its input, so it is aborted, not a success.
      if (this.stopped && this.config.schedule.type !== 'stream') this.interrupted = true;
      await this.chain;
      if (!this.abortError && !this.interrupted) await this.drain(this.opts.flush ? 'flush' : 'run');
      await this.finalizeEnded();
      await this.saveState();
      for (const n of source.notes ?? []) this.counters.note(n);
    } catch (e) {
      this.fatalError = this.redact(errorMessage(e));
      this.gaveUp = e instanceof GaveUpError;
      this.log.error({ err: this.fatalError }, 'run failed');
      this.hard.abort();
    } finally {
      clearInterval(persistTimer);
      // Units not finished (failure, abort) stay where they are.
      for (const s of open) if (!s.finished) await s.unit.done?.(false).catch(() => {});
      await this.chain.catch(() => {});
      await executor?.close().catch(() => {});
      for (const t of this.plan ? this.allTransforms() : [])
        await t.close?.().catch((e: unknown) => this.counters.note(`${t.label}: close failed: ${errorMessage(e)}`));
      await this.closeAll(source);
    }
    return this.record();
  }

  private slot(cfg: SinkConfig, label: string, ctx: object, fallbackSerializer?: { type: string }): SinkSlot {
    const plugin = this.reg.sink.get(cfg.type) as SinkPlugin;
    const encoder = encoderFor(this.reg, cfg.serializer_out ?? fallbackSerializer ?? this.config.serializer_out, { schemaDir: this.schemaDir });
    const sink = plugin.create(cfg as never, {
      ...(ctx as Parameters<SinkPlugin['create']>[1]),
      encoder,
      log: this.log.child({ sink: label }),
      ...this.component(label, cfg.type, plugin.metrics),
    });
    const breakers = this.opts.breakers ?? new Map<string, CircuitBreaker>();
    let breaker = breakers.get(label);
    if (!breaker || breaker.threshold !== cfg.circuit_breaker_threshold) {
      breaker = new CircuitBreaker(cfg.circuit_breaker_threshold);
      breakers.set(label, breaker);
    }
    return { label, cfg, sink, encoder, breaker, takesRecords: plugin.accepts === 'records' };
  }

  /** The component label and its telemetry, bound for one source or sink (`metrics`: what its plugin declares). */
  private component(component: string, type: string, metrics?: readonly MetricDeclaration[]): Pick<PluginContext, 'component' | 'telemetry'> {
    const t = this.opts.telemetry;
    if (!t) return { component };
    return {
      component,
      telemetry: {
        connection: (state) => t.connection(component, type, state),
        dropped: t.dropped && ((reason, n) => t.dropped!(component, type, reason, n)),
        metric: componentMetrics(t, metrics, (m) => this.log.warn({ component, type }, m)),
      },
    };
  }

  /** A unit's chunks: its records as they are when serializer_in is json (what `json` would decode them into), else its bytes. */
  private chunksOfUnit(unit: SourceUnit, framing: Framing, opts: ChunkOptions): AsyncIterable<Chunk> | Iterable<Chunk> {
    if (unit.records && this.plan.decodesJson) {
      this.counters.bytes_in += unit.size ?? 0;
      return recordChunksOf(unit.records, opts.maxLines);
    }
    if (unit.messages && unit.bodies) {
      for (const b of unit.bodies) this.counters.bytes_in += b.length;
      return bodyChunksOf(unit.bodies, { targetBytes: opts.targetBytes, maxMessages: opts.maxLines });
    }
    if (unit.messages) return messageChunksOf(this.counted(unit.read()), { targetBytes: opts.targetBytes, maxMessages: opts.maxLines });
    return chunksOf(this.counted(unit.read()), framing, opts);
  }

  private async *counted(stream: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    for await (const b of stream) {
      this.counters.bytes_in += b.length;
      yield b;
    }
  }

  /** Processing of a chunk on this thread, under the decode watch when there is one. */
  private watched<T>(state: UnitState, input: ChunkInput, process: () => T): T {
    if (!this.watch) return process();
    this.watch.begin(`${this.unitName(state.unit)} (${this.config.name})`, input.data, input.messages);
    try {
      return process();
    } finally {
      this.watch.end();
    }
  }

  private unitName(unit: SourceUnit) {
    return unit.meta.source_filename ?? unit.meta.source_path ?? 'input';
  }

  /** Appends a step to the delivery chain; an unexpected failure there fails the run. */
  private enqueue(step: () => Promise<void>): Promise<void> {
    const done = this.chain.then(step);
    this.chain = done;
    return done.catch((e: unknown) => {
      this.fatalError ??= this.redact(errorMessage(e));
      this.hard.abort();
    });
  }

  private async deliverChunk(input: ChunkInput, result: Promise<ChunkOutput> | undefined, unit: UnitState) {
    let out: ChunkOutput;
    try {
      out = result ? await result : this.watched(unit, input, () => processChunk(this.plan, input, { keepRecords: true, onMessage: this.onMessage }));
      // A worker did the chain up to the first holding transform; the rest runs here, in order.
      if (out.rest) out = continueChunk(this.plan, out, input.meta, input.tap);
    } catch (e) {
      // The chunk could not be processed at all: a worker thread died on it (its heap ran out). It
      // would kill the next worker too, so it is dead-lettered; without a DLQ it stays in the unit.
      this.counters.note(`${this.unitName(unit.unit)}: chunk processing failed: ${errorMessage(e)}`);
      if (!this.dlqActive) {
        unit.undelivered++;
        return;
      }
      const why = `crashed the decoder: ${errorMessage(e)}`;
      await this.deadLetterRaw(
        (input.messages ?? [rawOf(input)]).map((raw) => ({ raw, why })),
        input,
        unit,
      );
      return;
    }
    if (this.abortError) {
      unit.partial = true;
      return;
    }
    await this.deliver(input, out, unit);
    this.opts.tap?.deliver(out.tapped, this.redact);
    const c = this.counters;
    this.stages.source.bytes = c.bytes_in;
    for (let i = 0; i < this.sinks.length; i++) this.stages.sinks[i]!.circuit = this.sinks[i]!.breaker.isOpen() ? 'open' : 'closed';
    this.opts.onProgress?.({
      units: this.units,
      records_in: c.records_in,
      records_out: c.records_out,
      records_filtered: c.records_filtered,
      records_skipped: c.records_skipped,
      dlq_count: c.dlq_count,
      bytes_in: c.bytes_in,
      bytes_out: c.bytes_out,
      errors: c.errorsView(),
      unit: this.unitName(unit.unit),
      unit_size: unit.unit.size,
      stages: this.stages,
    });
    this.opts.onChunkDelivered?.((performance.now() - input.readAt!) / 1000);
  }

  /** A chunk's own tallies added to the stage figures. */
  private tallyChunk(out: ChunkOutput) {
    const s = this.stages;
    s.source.records += out.recordsIn;
    s.source.parse_errors += out.parseErrors.length;
    const { tally } = out;
    if (!tally) return;
    for (let t = 0; t < s.transforms.length; t++) {
      const f = s.transforms[t]!;
      f.in += tally.in[t] ?? 0;
      f.out += tally.out[t] ?? 0;
      f.errors += tally.errors[t] ?? 0;
    }
  }

  private abort(reason: string) {
    if (this.abortError) return;
    this.abortError = this.redact(reason);
    this.log.warn({ reason }, 'run aborted (on_error: abort)');
    this.hard.abort();
  }

  /** A parse or transform failure of one record (rule 6 and on_error). */
  private recordFailure(stage: Stage, e: StageError, unit: UnitState, dead: Envelope[]) {
    const where = this.unitName(unit.unit);
    this.counters.recordError(`${stage} error in ${where}: ${e.message}`);
    if (this.config.on_error === 'abort') this.abort(`${stage} error in ${where}: ${e.message}`);
    else if (this.dlqActive) dead.push(this.dlq!.envelope(stage, e.message, e.record ?? null, e.raw));
  }

  private async deliver(input: ChunkInput, out: ChunkOutput, unit: UnitState) {
    const c = this.counters;
    c.records_in += out.recordsIn;
    c.records_filtered += out.filtered;
    this.tallyChunk(out);
    for (const n of out.notes) c.note(n);
    const dead: Envelope[] = [];
    for (const e of out.parseErrors) this.recordFailure('parse', e, unit, dead);
    for (const e of out.transformErrors) this.recordFailure('transform', e, unit, dead);

    const delivered = new Uint8Array(out.produced);
    const failed = new Uint8Array(out.produced);
    const reasons: string[] = [];
    let reprocessed: ChunkOutput | undefined;
    const recordsFor = (i: number): Rec[] => {
      if (out.sinks[i]!.records) return out.sinks[i]!.records!;
      // Worker results carry bytes only; the records of a failed write are rebuilt here, once.
      reprocessed ??= processChunk(this.plan, input, { keepRecords: true });
      return reprocessed.sinks[i]!.records!;
    };

    const writeSink = async (slot: SinkSlot, i: number) => {
      const so = out.sinks[i]!;
      so.errors.forEach((e, k) => {
        failed[so.errorOrigins[k]!] = 1;
        c.note(`transform error in ${this.unitName(unit.unit)}: ${e.message}`);
        if (this.config.on_error === 'abort') this.abort(`transform error: ${e.message}`);
        else if (this.dlqActive) dead.push(this.dlq!.envelope('transform', e.message, e.record ?? null));
      });
      const figures = this.stages.sinks[i]!;
      figures.matched += so.matched;
      figures.transform_errors += so.errors.length;
      if (so.count === 0 || this.abortError) return;
      const payload = Buffer.from(so.payload.buffer, so.payload.byteOffset, so.payload.byteLength);
      const batch: SinkBatch = { payload, head: so.head, count: so.count, records: so.records, meta: input.meta, first: so.first };
      const {
        outcome,
        rejected,
        failed: unsent,
        bytes,
      } = await guardedRecordsWrite(slot.sink, batch, {
        label: slot.label,
        policy: slot.cfg,
        breaker: slot.breaker,
        limiter: this.limiter,
        signal: this.hard.signal,
        log: this.log,
        forever: this.config.on_error === 'retry',
      });
      const reason = outcome.ok ? '' : this.redact(outcome.reason);
      figures.writes += outcome.attempts;
      figures.retries += Math.max(0, outcome.attempts - 1);
      if (outcome.ok && rejected.size === 0) {
        for (const o of so.origins) delivered[o] = 1;
        c.bytes_out += payload.length + bytes;
        figures.written += so.count;
        figures.bytes += payload.length + bytes;
        return;
      }
      // Which records of this write did not land, and why (the whole batch, or those the peer named).
      const lost = new Map<number, string>();
      if (unsent === 'all') for (let k = 0; k < so.count; k++) lost.set(k, reason);
      else for (const k of unsent) lost.set(k, reason);
      for (const [k, why] of rejected) if (!lost.has(k)) lost.set(k, this.redact(`${slot.label}: ${why}`));
      so.origins.forEach((o, k) => {
        if (lost.has(k)) failed[o] = 1;
        else delivered[o] = 1;
      });
      figures.written += so.count - lost.size;
      figures.failed += lost.size;
      if (lost.size < so.count) {
        c.bytes_out += payload.length + bytes;
        figures.bytes += payload.length + bytes;
      }
      if (!outcome.ok) reasons.push(reason);
      const byReason = new Map<string, number>();
      for (const why of lost.values()) byReason.set(why, (byReason.get(why) ?? 0) + 1);
      for (const [why, n] of byReason) c.note(`${why} (${n} records from ${this.unitName(unit.unit)})`);
      if (this.config.on_error === 'abort') return this.abort(lost.values().next().value!);
      if (this.dlqActive) {
        const records = recordsFor(i);
        // In the records' order, whatever order the peer named its refusals in (a DLQ read back lists them so).
        for (const [k, why] of [...lost].sort((a, b) => a[0] - b[0])) dead.push(this.dlq!.envelope('sink', why, records[k]!));
      } else unit.undelivered += lost.size;
    };

    if (this.config.parallel_sinks) await Promise.all(this.sinks.map(writeSink));
    else for (let i = 0; i < this.sinks.length; i++) await writeSink(this.sinks[i]!, i);

    let wrote = 0;
    let skipped = 0;
    for (let o = 0; o < out.produced; o++) {
      if (delivered[o]) wrote++;
      else if (failed[o]) skipped++;
    }
    c.records_out += wrote;
    c.records_skipped += skipped;
    // Holding and stateful transforms absorb records by design (written when drained, or as deltas later).
    const absorbs = this.plan.mainFrom !== undefined || this.stateful.length > 0;
    if (out.recordsIn > 0 && wrote === 0 && !this.abortError && !(out.produced === 0 && absorbs)) {
      const why = reasons.length ? reasons.join('; ') : out.produced === 0 ? 'no record passed the transforms' : 'no record matched a sink condition';
      c.note(`no sink wrote the batch of ${out.recordsIn} records from ${this.unitName(unit.unit)}: ${why}`);
    }
    await this.sendDead(dead, input, unit);
  }

  private async sendDead(dead: Envelope[], input: ChunkInput, unit: UnitState) {
    if (!dead.length) return;
    const ok = await this.dlq!.send(dead, input.meta);
    const figures = this.stages.dlq!;
    if (ok) {
      this.counters.dlq_count += dead.length;
      figures.records += dead.length;
      for (const d of dead) figures[d._stage]++;
      this.opts.tap?.dead(dead as unknown as Rec[], this.redact);
    } else {
      figures.failed += dead.length;
      unit.undelivered += dead.length;
      this.counters.note(`dead-letter write failed: ${dead.length} records kept in ${this.unitName(unit.unit)} for the next run`);
    }
  }

  /** Inputs that were never decoded, each a parse failure with its reason (DLQ stage parse). */
  private async deadLetterRaw(items: { raw: Uint8Array; why: string }[], input: ChunkInput, unit: UnitState) {
    const dead: Envelope[] = [];
    this.counters.records_in += items.length;
    this.stages.source.records += items.length;
    this.stages.source.parse_errors += items.length;
    for (const { raw, why } of items) this.recordFailure('parse', { message: why, raw }, unit, dead);
    if (!this.abortError) await this.sendDead(dead, input, unit);
  }

  /**
   * Inputs an earlier process's decode watch noted (src/engine/decode-watch.ts) are not processed
   * again: they go to the DLQ at stage parse with the reason. Returns what is left of the chunk.
   */
  private setAside(input: ChunkInput, state: UnitState): ChunkInput | undefined {
    const matcher = this.suspects!;
    const found: { raw: Uint8Array; suspect: Suspect; why: string }[] = [];
    const why = (suspect: Suspect) => quarantineReason(suspect, this.opts.decodeWatch!.timeoutMs);
    let rest: ChunkInput | undefined = input;
    if (input.messages) {
      const keep: Uint8Array[] = [];
      for (const m of input.messages) {
        const suspect = matcher.match(m);
        if (suspect) found.push({ raw: m, suspect, why: why(suspect) });
        else keep.push(m);
      }
      if (found.length) rest = keep.length ? { ...input, messages: keep } : undefined;
    } else if (!input.records && input.data.length > 0) {
      const suspect = matcher.match(input.data);
      if (suspect) {
        found.push({ raw: rawOf(input), suspect, why: why(suspect) });
        rest = undefined;
      }
    }
    if (!found.length) return input;
    for (const f of found) state.suspects.add(f.suspect);
    this.enqueue(() => this.deadLetterRaw(found, input, state));
    this.log.warn(
      { unit: this.unitName(state.unit), inputs: found.length, reason: found[0]!.suspect.reason, since: found[0]!.suspect.since },
      'input set aside: it stopped an earlier process while being processed',
    );
    return rest;
  }

  /**
   * A unit whose records are all delivered waits here to be finalized. Finalizing needs the sinks
   * to flush (fsync) first, so units that end close together share one flush: they are finalized
   * when nothing else is queued behind them, or when FINALIZE_BATCH have gathered.
   */
  private readonly ended: UnitState[] = [];

  private async finishUnit(state: UnitState) {
    if (this.plan.mainFrom !== undefined) {
      if (!state.partial) await this.drainInto('unit', state);
      else {
        // The unit stays in place and is read again next run: what it left held is dropped, not merged into the next unit.
        const dropped = drainChunk(this.plan, 'unit', state.unit.meta).produced;
        if (dropped)
          this.counters.note(
            `${this.unitName(state.unit)}: read only in part; ${dropped} results of the records held from it dropped (the unit stays for the next run)`,
          );
      }
    }
    for (const s of this.allSinks()) {
      try {
        await s.sink.endUnit?.(state.unit.meta);
      } catch (e) {
        state.undelivered++;
        this.counters.note(`${s.label}: could not complete ${this.unitName(state.unit)}: ${errorMessage(e)}`);
      }
    }
    this.ended.push(state);
    if (this.defer) return; // finalized after the run's drain is written
    if (this.queuedChunks === 0 || this.ended.length >= FINALIZE_BATCH) await this.finalizeEnded();
  }

  /** Delivers what the holding transforms hand on at `at`, as if it came from `unit`. */
  private async drainInto(at: DrainPoint, unit: UnitState) {
    const out = drainChunk(this.plan, at, unit.unit.meta, this.opts.tap?.requests());
    if (out.produced === 0 && out.transformErrors.length === 0 && out.notes.length === 0) return;
    await this.deliver({ data: new Uint8Array(0), firstLine: 1, meta: unit.unit.meta }, out, unit);
    this.opts.tap?.deliver(out.tapped, this.redact);
  }

  /**
   * End of the run: holding transforms hand on what they kept. Records held across units stand for
   * every unit still waiting, so a failed write keeps all of them in place.
   */
  private async drain(at: DrainPoint) {
    if (this.plan.mainFrom === undefined) return;
    const run: UnitState = { unit: { meta: {}, read: async function* () {} }, undelivered: 0, partial: false, finished: false, suspects: new Set() };
    await this.drainInto(at, run);
    if (run.undelivered > 0) for (const u of this.ended) u.undelivered += run.undelivered;
  }

  private async loadState() {
    if (!this.stateful.length || !this.opts.state) return;
    const body = await this.opts.state.load();
    this.opts.onTransformEvent?.('state_io', 1);
    for (const t of this.stateful) {
      if (body?.[t.key] === undefined) continue;
      try {
        t.state!.load(body[t.key]);
      } catch (e) {
        // A corrupt body costs the history of one transform, never the run.
        this.log.warn({ transform: t.key, err: errorMessage(e) }, 'stored transform state discarded');
        this.counters.note(`${t.key}: stored state discarded (${errorMessage(e)})`);
      }
    }
  }

  /** State is written only after a successful run (a failed one is retried from the same snapshot). */
  private async saveState() {
    if (!this.stateful.length || !this.opts.state || this.fatalError || this.abortError || (this.interrupted && this.config.schedule.type !== 'stream')) return;
    await this.persistState();
  }

  private async persistState() {
    const body: Record<string, unknown> = {};
    for (const t of this.stateful) body[t.key] = t.state!.save();
    try {
      await this.opts.state!.save(body);
      this.opts.onTransformEvent?.('state_io', 1);
    } catch (e) {
      this.counters.note(`transform state not saved: ${errorMessage(e)}`);
      this.log.error({ err: errorMessage(e) }, 'transform state not saved');
    }
  }

  private async finalizeEnded() {
    const units = this.ended.splice(0);
    if (units.length === 0) return;
    for (const s of this.allSinks()) {
      let flushed: void | FlushResult;
      try {
        flushed = await s.sink.flush?.();
      } catch (e) {
        for (const u of units) u.undelivered++;
        this.counters.note(`${s.label}: flush failed, inputs kept for the next run: ${this.redact(errorMessage(e))}`);
        continue;
      }
      if (flushed?.rejected?.length) await this.refusedAtFlush(s, flushed.rejected, units);
    }
    for (const state of units) {
      const ok = !state.partial && state.undelivered === 0 && !this.abortError && !this.fatalError;
      if (!ok && !state.partial) this.counters.note(`${this.unitName(state.unit)} left in place: ${state.undelivered} records were not delivered`);
      try {
        await state.unit.done?.(ok);
        if (ok) forget(state.suspects);
      } catch (e) {
        this.counters.note(`${this.unitName(state.unit)}: finalize failed: ${errorMessage(e)}`);
      }
      state.finished = true;
      this.open.delete(state);
    }
  }

  /**
   * Records a deferred-delivery sink's peer refused after write() had resolved (its flush() names
   * them): counted as not written, then dead-lettered, or left undelivered, as a refusal at write()
   * is. A record is found by the batch it was written in; its unit by that batch's meta. Refused by
   * the DLQ's own sink, or with no DLQ, their units stay unacknowledged.
   */
  private async refusedAtFlush(slot: SinkSlot, refused: NonNullable<FlushResult['rejected']>, units: UnitState[]) {
    const c = this.counters;
    const i = this.sinks.indexOf(slot);
    c.records_out -= refused.length;
    c.records_skipped += refused.length;
    if (i >= 0) {
      const figures = this.stages.sinks[i]!;
      figures.written -= refused.length;
      figures.failed += refused.length;
    }
    // Redacted once per distinct reason, not once per record.
    const redacted = new Map<string, string>();
    const why = (reason: string) => {
      let w = redacted.get(reason);
      if (w === undefined) redacted.set(reason, (w = this.redact(`${slot.label}: ${reason}`)));
      return w;
    };
    const byReason = new Map<string, number>();
    for (const r of refused) byReason.set(r.reason, (byReason.get(r.reason) ?? 0) + 1);
    for (const [reason, n] of byReason) c.note(`${why(reason)} (${n} records, refused after they were handed on)`);
    if (this.config.on_error === 'abort') return this.abort(why(refused[0]!.reason));
    // By unit: the one whose meta the batch carries; none found (a drain's batch), every unit of this finalization.
    const unitOfMeta = new Map<unknown, UnitState>();
    for (const u of units) if (!unitOfMeta.has(u.unit.meta)) unitOfMeta.set(u.unit.meta, u);
    const byUnit = new Map<UnitState | undefined, typeof refused>();
    for (const r of refused) {
      const u = unitOfMeta.get(r.batch.meta);
      const rs = byUnit.get(u);
      if (rs) rs.push(r);
      else byUnit.set(u, [r]);
    }
    for (const [unit, rs] of byUnit) {
      const owners = unit ? [unit] : units;
      if (i < 0 || !this.dlqActive || rs.some((r) => !r.batch.records)) {
        for (const o of owners) o.undelivered += rs.length;
        continue;
      }
      const dead = rs.map((r) => this.dlq!.envelope('sink', why(r.reason), r.batch.records![r.index]!));
      const before = owners[0]!.undelivered;
      await this.sendDead(dead, { data: new Uint8Array(0), firstLine: 1, meta: rs[0]!.batch.meta }, owners[0]!);
      const lost = owners[0]!.undelivered - before;
      for (const o of owners.slice(1)) o.undelivered += lost;
    }
  }

  private allTransforms(): LabeledTransform[] {
    return [...this.plan.chain, ...this.plan.sinks.flatMap((s) => s.chain)];
  }

  private allSinks() {
    return [...this.sinks, ...(this.dlq ? [this.dlq.slot] : [])];
  }

  private async closeAll(source: Source | undefined) {
    for (const s of this.allSinks()) {
      try {
        await s.sink.close?.();
      } catch (e) {
        this.counters.note(`${s.label}: close failed: ${errorMessage(e)}`);
      }
    }
    await source?.close?.().catch((e: unknown) => this.counters.note(`source close failed: ${errorMessage(e)}`));
  }

  private record(): RunRecord {
    const c = this.counters;
    let status: RunStatus = 'success';
    let error: string | null = null;
    if (this.fatalError) {
      status = 'failed';
      error = this.fatalError;
    } else if (this.abortError) {
      status = 'aborted';
      error = this.abortError;
    } else if (this.interrupted && this.config.schedule.type !== 'stream') {
      // A stream run ends by being stopped; a batch run that was stopped did not finish its input.
      status = 'aborted';
      error = 'run stopped before its input was finished';
    }
    return {
      run_id: this.runId,
      pipeline: this.config.name,
      node_id: this.opts.nodeId ?? process.env.SVC_NODE_ID ?? hostname(),
      status,
      started_at: this.startedAt.toISOString(),
      finished_at: new Date().toISOString(),
      ...runCounts(c),
      error,
      errors: c.errors(),
      ...(this.gaveUp ? { gave_up: true } : {}),
    };
  }
}

/** A chunk's bytes as they were read: its header lines before its data. */
const rawOf = (input: ChunkInput): Uint8Array => (input.header ? Buffer.concat([input.header, input.data]) : input.data);

/** The secrets of every connector of the pipeline (source, sinks, DLQ) and of its secret-named `${VAR}`s. */
function pipelineSecrets(config: PipelineConfig, reg: Registry): Set<string> {
  const secrets = new Set<string>(expansionOf(config)?.secrets);
  secretsOf(reg.source.get(config.source.type)?.config, config.source, secrets);
  for (const s of [...config.sinks, ...(config.dlq ? [config.dlq] : [])]) secretsOf(reg.sink.get(s.type)?.config, s, secrets);
  return secrets;
}
