// The synchronous heart of the engine: one chunk of bytes -> records -> global transforms -> per sink
// condition, sink transforms and encoding. Pure (no I/O), so it runs the same inline and in a worker
// thread; its output is plain data that crosses threads by structured clone.
import { truthy } from '../expr/index.js';
import type { Rec, RecordContext, SourceMeta } from '../plugins/types.js';
import type { ChunkPlan, LabeledTransform } from './plan.js';

export interface ChunkInput {
  data: Uint8Array;
  /** Separate messages (webhook bodies, queue messages): each is decoded on its own; `data` is empty. */
  messages?: Uint8Array[];
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
  payload: Uint8Array;
  head: string;
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
}

/** A Buffer view of bytes that may have crossed a thread as a plain Uint8Array. */
const asBuffer = (b: Uint8Array): Buffer => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength));

const toBytes = (raw: Buffer | string): Uint8Array => (typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw);

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Applies `chain` from `from` on: results go to `emit`, failures to `fail`. Transforms return one
 * record (the common case, kept allocation-free), several, or null to drop.
 */
function applyChain(chain: LabeledTransform[], from: number, r: Rec, ctx: RecordContext, emit: (r: Rec) => void, fail: (msg: string, r: Rec) => void) {
  let cur: Rec = r;
  for (let t = from; t < chain.length; t++) {
    let out: Rec | Rec[] | null;
    try {
      out = chain[t]!.apply(cur, ctx);
    } catch (e) {
      fail(`${chain[t]!.label}: ${errorText(e)}`, cur);
      return;
    }
    if (out === null || out === undefined) return;
    if (Array.isArray(out)) {
      for (const o of out) applyChain(chain, t + 1, o, ctx, emit, fail);
      return;
    }
    cur = out;
  }
  emit(cur);
}

export interface ProcessOptions {
  /** Keep each sink's records in the output (inline runs: needed for DLQ on write failure). */
  keepRecords: boolean;
  /** Records that global stateful transforms emit at the end of a run, processed like decoded ones. */
  extra?: Rec[];
}

export function processChunk(plan: ChunkPlan, input: ChunkInput, opts: ProcessOptions): ChunkOutput {
  const notes: string[] = [];
  const ctx: RecordContext = { meta: input.meta, note: (m) => notes.push(m) };
  const parseErrors: StageError[] = [];
  const transformErrors: StageError[] = [];

  // 1. decode
  const decoded: Rec[] = opts.extra ?? [];
  const extraCount = decoded.length;
  const out = {
    record: (r: Rec) => decoded.push(r),
    error: (message: string, raw: Buffer | string) => parseErrors.push({ message, raw: toBytes(raw) }),
    note: (message: string) => notes.push(message),
  };
  if (input.messages) {
    for (const m of input.messages) plan.decoder.decode({ data: asBuffer(m), firstLine: 1 }, out);
  } else if (input.data.length > 0 || input.header) {
    plan.decoder.decode({ data: asBuffer(input.data), header: input.header && asBuffer(input.header), firstLine: input.firstLine }, out);
  }

  // 2. global transforms
  let produced: Rec[];
  if (plan.chain.length === 0) produced = decoded;
  else {
    produced = [];
    const emit = (r: Rec) => produced.push(r);
    const fail = (message: string, record: Rec) => transformErrors.push({ message, record });
    for (let i = 0; i < decoded.length; i++) applyChain(plan.chain, 0, decoded[i]!, ctx, emit, fail);
  }

  // 3. per sink: condition, sink transforms, encode
  const sinks = plan.sinks.map((s): SinkOutput => {
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
        applyChain(s.chain, 0, plan.copyForSinks ? { ...r } : r, ctx, emit, fail);
      }
    }
    const encoded = records.length ? s.encoder.body(records) : new Uint8Array(0);
    return {
      payload: encoded,
      head: records.length ? s.encoder.head(records) : '',
      count: records.length,
      origins: Uint32Array.from(origins),
      first: records[0],
      records: opts.keepRecords || s.wantsRecords ? records : undefined,
      errors,
      errorOrigins,
    };
  });

  return { recordsIn: decoded.length - extraCount + parseErrors.length, produced: produced.length, parseErrors, transformErrors, notes, sinks };
}
