// The synchronous heart of the engine: one chunk of bytes -> records -> global transforms -> per sink
// condition, sink transforms and encoding. Pure (no I/O), so it runs the same inline and in a worker
// thread; its output is plain data that crosses threads by structured clone.
import { truthy } from '../expr/index.js';
import type { DrainPoint, Rec, RecordContext, SourceMeta } from '../plugins/types.js';
import type { ChunkPlan, LabeledTransform } from './plan.js';

const NO_BYTES = new Uint8Array(0);

export interface ChunkInput {
  data: Uint8Array;
  /** Separate messages (webhook bodies, queue messages): each is decoded on its own; `data` is empty. */
  messages?: Uint8Array[];
  /** Records a source parsed itself (SourceUnit.records): no decoding; `data` is empty. */
  records?: Rec[];
  header?: Uint8Array;
  /** 1-based line number of the first line of `data` in its unit. */
  firstLine: number;
  meta: SourceMeta;
  /** performance.now() when the chunk was read (main thread only; for the chunk duration metric). */
  readAt?: number;
}

export interface StageError {
  message: string;
  /** The record as it was when the stage failed (transform stage). */
  record?: Rec;
  /** The raw input that did not parse (parse stage). */
  raw?: Uint8Array;
}

export interface SinkOutput {
  /** The records encoded with the sink's serializer_out; empty for a sink that takes records. */
  payload: Uint8Array;
  head: string | Uint8Array;
  count: number;
  /** Indexes (among the records that left the global chain) of the records in this payload. */
  origins: Uint32Array;
  first?: Rec;
  /** The records in the payload; kept inline, or in a worker when the sink asks for records. */
  records?: Rec[];
  /** Records that failed this sink's own transforms. */
  errors: StageError[];
  /** Origins of those failed records. */
  errorOrigins: number[];
}

export interface ChunkOutput {
  recordsIn: number;
  /** Records that left the global transform chain (index space of `origins`). */
  produced: number;
  parseErrors: StageError[];
  transformErrors: StageError[];
  notes: string[];
  sinks: SinkOutput[];
  /** Worker results of a plan with a main-thread part (ProcessOptions.stopAt): the records so far; `sinks` is empty. */
  rest?: Rec[];
}

/** A Buffer view of bytes that may have crossed a thread as a plain Uint8Array. */
const asBuffer = (b: Uint8Array): Buffer => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength));

const toBytes = (raw: Buffer | string): Uint8Array => (typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw);

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Applies `chain[from..to)`: results go to `emit`, failures to `fail`. Transforms return one
 * record (the common case, kept allocation-free), several, or null to drop.
 */
function applyChain(chain: LabeledTransform[], from: number, to: number, r: Rec, ctx: RecordContext, emit: (r: Rec) => void, fail: (msg: string, r: Rec) => void) {
  let cur: Rec = r;
  for (let t = from; t < to; t++) {
    let out: Rec | Rec[] | null;
    try {
      out = chain[t]!.apply(cur, ctx);
    } catch (e) {
      fail(`${chain[t]!.label}: ${errorText(e)}`, cur);
      return;
    }
    if (out === null || out === undefined) return;
    if (Array.isArray(out)) {
      for (const o of out) applyChain(chain, t + 1, to, o, ctx, emit, fail);
      return;
    }
    cur = out;
  }
  emit(cur);
}

/** Asks each holding transform of `chain` for its records and runs them through the rest of it. */
function drainChain(chain: LabeledTransform[], at: DrainPoint, ctx: RecordContext, emit: (r: Rec) => void, fail: (msg: string, r: Rec) => void) {
  for (let t = 0; t < chain.length; t++) {
    const tr = chain[t]!;
    if (!tr.drain) continue;
    let held: Rec[];
    try {
      held = tr.drain(at);
    } catch (e) {
      ctx.note(`${tr.label}: ${errorText(e)}`);
      continue;
    }
    for (const r of held) applyChain(chain, t + 1, chain.length, r, ctx, emit, fail);
  }
}

export interface ProcessOptions {
  /** Keep each sink's records in the output (inline runs: needed for DLQ on write failure). */
  keepRecords: boolean;
  /**
   * Stop the global chain before this transform and hand the records back in `rest` (worker
   * threads of a plan whose chain holds records from there on: the main thread goes on).
   */
  stopAt?: number;
}

const emptyOutput = (): ChunkOutput => ({ recordsIn: 0, produced: 0, parseErrors: [], transformErrors: [], notes: [], sinks: [] });

export function processChunk(plan: ChunkPlan, input: ChunkInput, opts: ProcessOptions): ChunkOutput {
  const out = emptyOutput();
  const ctx: RecordContext = { meta: input.meta, note: (m) => out.notes.push(m) };

  // 1. decode
  // Records a source parsed itself are not decoded again (and not changed here: the array is only read).
  const decoded: Rec[] = input.records ?? [];
  const sink = {
    record: (r: Rec) => decoded.push(r),
    error: (message: string, raw: Buffer | string) => out.parseErrors.push({ message, raw: toBytes(raw) }),
    note: ctx.note,
  };
  if (input.messages) {
    for (const m of input.messages) plan.decoder.decode({ data: asBuffer(m), firstLine: 1 }, sink);
  } else if (!input.records && (input.data.length > 0 || input.header)) {
    plan.decoder.decode({ data: asBuffer(input.data), header: input.header && asBuffer(input.header), firstLine: input.firstLine }, sink);
  }
  out.recordsIn = decoded.length + out.parseErrors.length;

  // 2. global transforms (up to stopAt)
  const to = opts.stopAt ?? plan.chain.length;
  const produced = to === 0 ? decoded : runChain(plan.chain, 0, to, decoded, ctx, out);
  if (opts.stopAt !== undefined) {
    out.rest = produced;
    return out;
  }
  // 3. per sink: condition, sink transforms, encode
  return finish(plan, produced, ctx, out, opts.keepRecords);
}

/** The main thread's part of a worker result (`rest`): the chain from plan.mainFrom, then the sinks. */
export function continueChunk(plan: ChunkPlan, out: ChunkOutput, meta: SourceMeta): ChunkOutput {
  const ctx: RecordContext = { meta, note: (m) => out.notes.push(m) };
  const produced = runChain(plan.chain, plan.mainFrom!, plan.chain.length, out.rest!, ctx, out);
  out.rest = undefined;
  return finish(plan, produced, ctx, out, true);
}

/** What the holding transforms hand on at a drain point, through the rest of their chains and the sinks. */
export function drainChunk(plan: ChunkPlan, at: DrainPoint, meta: SourceMeta): ChunkOutput {
  const out = emptyOutput();
  const ctx: RecordContext = { meta, note: (m) => out.notes.push(m) };
  const produced: Rec[] = [];
  drainChain(plan.chain, at, ctx, (r) => produced.push(r), (message, record) => out.transformErrors.push({ message, record }));
  return finish(plan, produced, ctx, out, true, at);
}

function runChain(chain: LabeledTransform[], from: number, to: number, records: Rec[], ctx: RecordContext, out: ChunkOutput): Rec[] {
  const produced: Rec[] = [];
  const emit = (r: Rec) => produced.push(r);
  const fail = (message: string, record: Rec) => out.transformErrors.push({ message, record });
  for (let i = 0; i < records.length; i++) applyChain(chain, from, to, records[i]!, ctx, emit, fail);
  return produced;
}

/**
 * Sink stage. Records that sink-level holding transforms hand on at a drain point stand for no one
 * record of `produced`: they get origins past its end, and `produced` grows to cover them.
 */
function finish(plan: ChunkPlan, produced: Rec[], ctx: RecordContext, out: ChunkOutput, keepRecords: boolean, at?: DrainPoint): ChunkOutput {
  let extra = produced.length;
  out.sinks = plan.sinks.map((s): SinkOutput => {
    const records: Rec[] = [];
    const origins: number[] = [];
    const errors: StageError[] = [];
    const errorOrigins: number[] = [];
    let origin = 0;
    const emit = (r: Rec) => {
      records.push(r);
      origins.push(origin);
    };
    const fail = (message: string, record: Rec) => {
      errors.push({ message, record });
      errorOrigins.push(origin);
    };
    for (let i = 0; i < produced.length; i++) {
      const r = produced[i]!;
      if (s.condition) {
        let keep: boolean;
        try {
          keep = truthy(s.condition(r));
        } catch (e) {
          origin = i;
          fail(`${s.label} condition: ${errorText(e)}`, r);
          continue;
        }
        if (!keep) continue;
      }
      if (s.chain.length === 0) {
        records.push(r);
        origins.push(i);
      } else {
        origin = i;
        applyChain(s.chain, 0, s.chain.length, plan.copyForSinks ? { ...r } : r, ctx, emit, fail);
      }
    }
    if (at && s.holds) {
      drainChain(
        s.chain,
        at,
        ctx,
        (r) => {
          records.push(r);
          origins.push(extra++);
        },
        (message, record) => {
          errors.push({ message, record });
          errorOrigins.push(extra++);
        },
      );
    }
    // A records sink speaks its own wire format (COPY, line protocol, one message per record): the
    // batch payload would be encoded for nothing.
    const encode = records.length > 0 && !s.wantsRecords;
    return {
      payload: encode ? s.encoder.body(records) : NO_BYTES,
      head: encode ? s.encoder.head(records) : '',
      count: records.length,
      origins: Uint32Array.from(origins),
      first: records[0],
      records: keepRecords || s.wantsRecords ? records : undefined,
      errors,
      errorOrigins,
    };
  });
  out.produced = extra;
  return out;
}
