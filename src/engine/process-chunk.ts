// The synchronous heart of the engine: one chunk of bytes -> records -> global transforms -> per sink
// condition, sink transforms and encoding. Pure (no I/O), so it runs the same inline and in a worker
// thread; its output is plain data that crosses threads by structured clone.
import { truthy } from '../expr/index.js';
import type { DecodeInput, DecodeOut, DrainPoint, Rec, RecordContext, SourceMeta } from '../plugins/types.js';
import type { ChunkPlan, LabeledTransform } from './plan.js';
import { tapRecords, type TapRequest, type Tapped } from './tap.js';

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
  /** Not to be decoded: `data` is a parse error with this reason (a line past the chunker's line ceiling). */
  error?: string;
  /** Records to copy for taps (src/engine/tap.ts); absent when no tap is attached. */
  tap?: TapRequest[];
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
  /** Records its condition let through (stage figures). */
  matched: number;
  /** Records that failed this sink's own transforms. */
  errors: StageError[];
  /** Origins of those failed records. */
  errorOrigins: number[];
}

export interface ChunkOutput {
  recordsIn: number;
  /** Records that left the global transform chain (index space of `origins`). */
  produced: number;
  /**
   * Records dropped on purpose (records_filtered): a global transform gave none for them (filter,
   * limit, deduplicate, validate's drop, ...; not the records a holding transform takes in), or
   * they left the global chain and no sink took them (its condition false, or its own transforms
   * dropped them, for every sink).
   */
  filtered: number;
  parseErrors: StageError[];
  transformErrors: StageError[];
  notes: string[];
  sinks: SinkOutput[];
  /** Worker results of a plan with a main-thread part (ProcessOptions.stopAt): the records so far; `sinks` is empty. */
  rest?: Rec[];
  /** Per global transform: records handed to it, handed on by it, and failed on (stage figures). */
  tally?: Tally;
  /** Copies for taps. */
  tapped?: Tapped[];
}

export interface Tally {
  in: number[];
  out: number[];
  errors: number[];
}

/** A Buffer view of bytes that may have crossed a thread as a plain Uint8Array. */
const asBuffer = (b: Uint8Array): Buffer => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength));

const toBytes = (raw: Buffer | string): Uint8Array => (typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw);

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Applies `chain[from..to)`: results go to `emit`, failures to `fail`. Transforms return one
 * record (the common case, kept allocation-free), several, or null to drop; `drop` is told of each
 * record a transform gave none for: `held` when a holding transform took it in (aggregate, sort,
 * window_aggregate), not dropped it.
 */
function applyChain(
  chain: LabeledTransform[],
  from: number,
  to: number,
  r: Rec,
  ctx: RecordContext,
  emit: (r: Rec) => void,
  fail: (msg: string, r: Rec) => void,
  drop?: (held: boolean) => void,
  tally?: Tally,
) {
  let cur: Rec = r;
  for (let t = from; t < to; t++) {
    let out: Rec | Rec[] | null;
    if (tally) tally.in[t]++;
    try {
      out = chain[t]!.apply(cur, ctx);
    } catch (e) {
      if (tally) tally.errors[t]++;
      fail(`${chain[t]!.label}: ${errorText(e)}`, cur);
      return;
    }
    if (out === null || out === undefined) {
      drop?.(chain[t]!.holdsRecords === true);
      return;
    }
    if (Array.isArray(out)) {
      if (out.length === 0) drop?.(chain[t]!.holdsRecords === true);
      if (tally) tally.out[t] += out.length;
      for (const o of out) applyChain(chain, t + 1, to, o, ctx, emit, fail, drop, tally);
      return;
    }
    if (tally) tally.out[t]++;
    cur = out;
  }
  emit(cur);
}

/** Asks each holding transform of `chain` for its records and runs them through the rest of it. */
function drainChain(
  chain: LabeledTransform[],
  at: DrainPoint,
  ctx: RecordContext,
  emit: (r: Rec) => void,
  fail: (msg: string, r: Rec) => void,
  drop?: (held: boolean) => void,
  tally?: Tally,
) {
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
    if (tally) tally.out[t] += held.length;
    for (const r of held) applyChain(chain, t + 1, chain.length, r, ctx, emit, fail, drop, tally);
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
  /** Told the index of each message as its decoding starts, and -1 once decoding is over (the decode watch). */
  onMessage?: (index: number) => void;
}

const zeros = (n: number) => new Array<number>(n).fill(0);

const emptyOutput = (plan: ChunkPlan): ChunkOutput => {
  const n = plan.chain.length;
  return {
    recordsIn: 0,
    produced: 0,
    filtered: 0,
    parseErrors: [],
    transformErrors: [],
    notes: [],
    sinks: [],
    tally: plan.countStages ? { in: zeros(n), out: zeros(n), errors: zeros(n) } : undefined,
  };
};

/** Stops a decoder at the ceiling (thrown from DecodeOut.record, caught in BoundedDecode.decode). */
const CEILING = Symbol('decode ceiling');

/** Every this many records (on average, at random) one is measured for the byte estimate. */
const SAMPLE_EVERY = 64;

/**
 * Decodes the inputs of one chunk (each message, or the chunk, or a split piece) under the ceiling
 * of the plan's limits: each input may give at most max(maxRecords, its bytes) records and about
 * maxBytes of them (their JSON size, estimated from records drawn at random across the chunk:
 * measuring each would cost the hot path, and so would measuring the first of every message).
 * Past either, or when the decoder throws, the whole input is one parse error with its raw bytes:
 * the records it gave so far are dropped, so the dead-letter entry holds all of that input and
 * nothing of it is delivered twice after a replay. One per chunk: its sink is made once.
 */
class BoundedDecode {
  private readonly sink: DecodeOut;
  private sampled = 0;
  private sampledBytes = 0;
  private untilSample = 0;
  /** Of the input in work: */
  private decoded: Rec[] = [];
  private count = 0;
  private maxRecords = 0;
  private failure: string | undefined;

  constructor(
    private readonly plan: ChunkPlan,
    private readonly out: ChunkOutput,
    note: (m: string) => void,
  ) {
    this.sink = {
      record: (r) => this.record(r),
      error: (message, raw) => {
        if (this.failure === undefined) out.parseErrors.push({ message, raw: toBytes(raw) });
      },
      note,
    };
  }

  private fail(why: string): never {
    this.failure ??= why;
    throw CEILING;
  }

  private record(r: Rec) {
    if (this.failure !== undefined) throw CEILING;
    this.decoded.push(r);
    if (++this.count > this.maxRecords)
      this.fail(`more than ${this.maxRecords} records from one input (SVC_DECODE_MAX_RECORDS_PER_INPUT, at least one per input byte)`);
    if (--this.untilSample > 0) return;
    this.untilSample = 1 + Math.floor(Math.random() * (2 * SAMPLE_EVERY - 1));
    const { maxBytes } = this.plan.limits;
    this.sampled++;
    this.sampledBytes += jsonSizeUpTo(r, maxBytes);
    const estimate = (this.sampledBytes / this.sampled) * this.count;
    if (estimate > maxBytes)
      this.fail(
        `its records come to about ${Math.round(estimate / 1048576)} MiB, more than ${Math.round(maxBytes / 1048576)} MiB from one input (SVC_DECODE_MAX_BYTES_PER_INPUT)`,
      );
  }

  decode(input: DecodeInput, decoded: Rec[]): void {
    const out = this.out;
    const from = decoded.length;
    const errorsFrom = out.parseErrors.length;
    this.decoded = decoded;
    this.count = 0;
    this.maxRecords = Math.max(this.plan.limits.maxRecords, input.data.length);
    this.failure = undefined;
    try {
      this.plan.decoder.decode(input, this.sink);
    } catch (e) {
      if (e !== CEILING) this.failure ??= `the decoder failed: ${errorText(e)}`;
    }
    if (this.failure === undefined) return;
    decoded.length = from;
    out.parseErrors.length = errorsFrom;
    const what = input.header ? 'piece' : 'input';
    const advice = this.failure.includes('(SVC_DECODE_MAX_') ? '; if the data is genuine, raise the setting' : '';
    out.parseErrors.push({ message: `${this.failure}: the whole ${what} is dead-lettered, none of its records delivered${advice}`, raw: input.data });
  }
}

/**
 * The size of `v` as JSON, about (no escapes counted), walked without recursion; stops counting
 * past `cap`.
 */
export function jsonSizeUpTo(v: unknown, cap: number): number {
  let size = 0;
  const stack: unknown[] = [v];
  while (stack.length > 0 && size <= cap) {
    const x = stack.pop();
    switch (typeof x) {
      case 'string':
        size += x.length + 3;
        break;
      case 'object':
        if (x === null) size += 5;
        else if (Array.isArray(x)) {
          size += 2 + x.length;
          if (size > cap) break; // a huge array is not pushed only to be passed over
          for (let i = 0; i < x.length; i++) stack.push(x[i]);
        } else if (ArrayBuffer.isView(x)) size += x.byteLength * 2;
        else {
          size += 2;
          for (const k in x as Rec) {
            size += k.length + 4;
            if (size > cap) break;
            stack.push((x as Rec)[k]);
          }
        }
        break;
      default:
        size += 8; // numbers, booleans, bigints
    }
  }
  return size;
}

export function processChunk(plan: ChunkPlan, input: ChunkInput, opts: ProcessOptions): ChunkOutput {
  const out = emptyOutput(plan);
  const ctx: RecordContext = { meta: input.meta, note: (m) => out.notes.push(m) };

  // 1. decode
  // Records a source parsed itself are not decoded again (and not changed here: the array is only read).
  const decoded: Rec[] = input.records ?? [];
  if (input.messages) {
    const told = opts.onMessage;
    const bounded = new BoundedDecode(plan, out, ctx.note);
    for (let i = 0; i < input.messages.length; i++) {
      told?.(i);
      bounded.decode({ data: asBuffer(input.messages[i]!), firstLine: 1 }, decoded);
    }
    told?.(-1);
  } else if (input.error) {
    out.parseErrors.push({ message: input.error, raw: input.data });
  } else if (!input.records && (input.data.length > 0 || input.header)) {
    new BoundedDecode(plan, out, ctx.note).decode(
      { data: asBuffer(input.data), header: input.header && asBuffer(input.header), firstLine: input.firstLine },
      decoded,
    );
  }
  out.recordsIn = decoded.length + out.parseErrors.length;
  tapRecords(input.tap, 'source', decoded, out);

  // 2. global transforms (up to stopAt)
  const to = opts.stopAt ?? plan.chain.length;
  const produced = to === 0 ? decoded : runChain(plan.chain, 0, to, decoded, ctx, out);
  if (opts.stopAt !== undefined) {
    out.rest = produced;
    return out;
  }
  // 3. per sink: condition, sink transforms, encode
  return finish(plan, produced, ctx, out, opts.keepRecords, undefined, input.tap);
}

/** The main thread's part of a worker result (`rest`): the chain from plan.mainFrom, then the sinks. */
export function continueChunk(plan: ChunkPlan, out: ChunkOutput, meta: SourceMeta, tap?: TapRequest[]): ChunkOutput {
  const ctx: RecordContext = { meta, note: (m) => out.notes.push(m) };
  const produced = runChain(plan.chain, plan.mainFrom!, plan.chain.length, out.rest!, ctx, out);
  out.rest = undefined;
  return finish(plan, produced, ctx, out, true, undefined, tap);
}

/** What the holding transforms hand on at a drain point, through the rest of their chains and the sinks. */
export function drainChunk(plan: ChunkPlan, at: DrainPoint, meta: SourceMeta, tap?: TapRequest[]): ChunkOutput {
  const out = emptyOutput(plan);
  const ctx: RecordContext = { meta, note: (m) => out.notes.push(m) };
  const produced: Rec[] = [];
  drainChain(
    plan.chain,
    at,
    ctx,
    (r) => produced.push(r),
    (message, record) => out.transformErrors.push({ message, record }),
    (held) => held || out.filtered++,
    out.tally,
  );
  return finish(plan, produced, ctx, out, true, at, tap);
}

function runChain(chain: LabeledTransform[], from: number, to: number, records: Rec[], ctx: RecordContext, out: ChunkOutput): Rec[] {
  const produced: Rec[] = [];
  const emit = (r: Rec) => produced.push(r);
  const fail = (message: string, record: Rec) => out.transformErrors.push({ message, record });
  const drop = (held: boolean) => held || out.filtered++;
  const tally = out.tally;
  for (let i = 0; i < records.length; i++) applyChain(chain, from, to, records[i]!, ctx, emit, fail, drop, tally);
  return produced;
}

/**
 * Sink stage. Records that sink-level holding transforms hand on at a drain point stand for no one
 * record of `produced`: they get origins past its end, and `produced` grows to cover them.
 */
function finish(
  plan: ChunkPlan,
  produced: Rec[],
  ctx: RecordContext,
  out: ChunkOutput,
  keepRecords: boolean,
  at?: DrainPoint,
  tap?: TapRequest[],
): ChunkOutput {
  let extra = produced.length;
  tapRecords(tap, 'transforms', produced, out);
  // Which records some sink took (wrote, or failed on): the others were filtered at the sinks. A sink
  // with no condition and no transforms takes every record, and then none need marking.
  const takesAll = plan.sinks.some((s) => !s.condition && s.chain.length === 0);
  const taken = takesAll ? undefined : new Uint8Array(produced.length);
  out.sinks = plan.sinks.map((s, index): SinkOutput => {
    let matched = 0;
    const records: Rec[] = [];
    const origins: number[] = [];
    const errors: StageError[] = [];
    const errorOrigins: number[] = [];
    let origin = 0;
    const emit = (r: Rec) => {
      records.push(r);
      origins.push(origin);
      if (taken) taken[origin] = 1;
    };
    const fail = (message: string, record: Rec) => {
      errors.push({ message, record });
      errorOrigins.push(origin);
      if (taken) taken[origin] = 1;
    };
    // A record a holding transform of the sink's chain took in counts as taken: its result comes at the drain.
    const drop = taken
      ? (held: boolean) => {
          if (held) taken[origin] = 1;
        }
      : undefined;
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
      matched++;
      if (s.chain.length === 0) {
        records.push(r);
        origins.push(i);
        if (taken) taken[i] = 1;
      } else {
        origin = i;
        applyChain(s.chain, 0, s.chain.length, plan.copyForSinks ? { ...r } : r, ctx, emit, fail, drop);
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
    tapRecords(tap, index, records, out);
    // A records sink speaks its own wire format (COPY, line protocol, one message per record): the
    // batch payload would be encoded for nothing.
    const encode = records.length > 0 && !s.wantsRecords;
    return {
      payload: encode ? s.encoder.body(records) : NO_BYTES,
      head: encode ? s.encoder.head(records) : '',
      count: records.length,
      matched,
      origins: Uint32Array.from(origins),
      first: records[0],
      records: keepRecords || s.wantsRecords ? records : undefined,
      errors,
      errorOrigins,
    };
  });
  if (taken) for (let i = 0; i < taken.length; i++) if (taken[i] === 0) out.filtered++;
  out.produced = extra;
  return out;
}
