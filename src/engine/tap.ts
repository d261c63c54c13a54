// Tap (issue 29): copies of live records at one stage of a running pipeline, like `vector tap`.
// A tap never holds a record back and never slows the run by more than it costs to copy what it
// shows: each chunk is asked for at most as many records as the taps' budgets allow (rate per
// second, total limit), the copy is made where the chunk is processed (a worker thread, or here),
// as JSON text, and the hub hands it on without waiting. With no tap attached a chunk carries
// nothing and processing checks one field.
import { compile, truthy, type CompiledExpr } from '../expr/index.js';
import type { Rec } from '../plugins/types.js';

/** `source` (decoded records), `transforms` (what leaves the global chain), a sink by index, `dlq` (envelopes). */
export type TapStage = 'source' | 'transforms' | 'dlq' | number;

/** What one chunk is asked to copy for one tap (crosses to worker threads: plain data). */
export interface TapRequest {
  id: number;
  stage: 'source' | 'transforms' | number;
  filter?: string;
  max: number;
}

export interface Tapped {
  id: number;
  /** Each record as JSON text. */
  lines: string[];
}

/** At most this many records of one chunk go to one tap, whatever its budget. */
export const TAP_PER_CHUNK = 100;
/** A record longer than this (as JSON) is cut, and says so. */
export const TAP_MAX_RECORD_CHARS = 64 * 1024;

/** Compiled tap filters, by source (kept per thread; a few taps at a time, so a small cap). */
const filters = new Map<string, CompiledExpr>();

function filterOf(source: string): CompiledExpr {
  let f = filters.get(source);
  if (!f) {
    if (filters.size >= 32) filters.clear();
    f = compile(source);
    filters.set(source, f);
  }
  return f;
}

/** Checks a tap filter before a tap is attached (throws ExprError with the position). */
export const checkTapFilter = (source: string) => void filterOf(source);

/** A record as the tap shows it: JSON, with bigints as numbers' text and byte arrays as base64, cut past TAP_MAX_RECORD_CHARS. */
export function tapText(r: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(r, function (this: Record<string, unknown>, key, value: unknown) {
      const original = key === '' ? r : this[key];
      if (typeof original === 'bigint') return original.toString();
      if (ArrayBuffer.isView(original)) {
        const b = Buffer.from(original.buffer, original.byteOffset, Math.min(original.byteLength, 4096));
        return original.byteLength > 4096 ? `base64:${b.toString('base64')}... (${original.byteLength} bytes)` : `base64:${b.toString('base64')}`;
      }
      return value;
    });
  } catch (e) {
    text = JSON.stringify({ _tap_error: `record not shown: ${e instanceof Error ? e.message : String(e)}` });
  }
  return text.length > TAP_MAX_RECORD_CHARS ? JSON.stringify({ _truncated: `${text.length} characters`, head: text.slice(0, TAP_MAX_RECORD_CHARS) }) : text;
}

/** Whether `r` passes the filter; a filter that fails on a record (a type error) does not pass it. */
function passes(filter: CompiledExpr | undefined, r: Rec): boolean {
  if (!filter) return true;
  try {
    return truthy(filter(r));
  } catch {
    return false;
  }
}

/** Copies up to each request's `max` of `records` (those of `stage` that pass its filter) into `into`. */
export function tapRecords(requests: readonly TapRequest[] | undefined, stage: TapRequest['stage'], records: readonly Rec[], into: { tapped?: Tapped[] }) {
  if (!requests) return;
  for (const q of requests) {
    if (q.stage !== stage) continue;
    let filter: CompiledExpr | undefined;
    try {
      filter = q.filter ? filterOf(q.filter) : undefined;
    } catch {
      continue; // checked when the tap was attached; never fails a chunk
    }
    const lines: string[] = [];
    for (let i = 0; i < records.length && lines.length < q.max; i++) if (passes(filter, records[i]!)) lines.push(tapText(records[i]));
    if (lines.length) (into.tapped ??= []).push({ id: q.id, lines });
  }
}

export interface TapOptions {
  stage: TapStage;
  filter?: string;
  /** Records per second at most. */
  rate: number;
  /** Records in all; the tap ends after that many. */
  limit: number;
}

/**
 * A tap's budget: `rate` records per second with bursts up to one second's worth, `limit` in all.
 * The hub keeps one per tap; a manager keeps one per relayed tap (src/cluster/tap-relay.ts).
 */
export class TapBudget {
  private tokens: number;
  private last = performance.now();
  /** Records handed on so far. */
  sent = 0;

  constructor(
    readonly rate: number,
    readonly limit: number,
  ) {
    this.tokens = Math.max(1, rate);
  }

  /** Whole records it may take now (refilled for the time passed). */
  available(): number {
    const now = performance.now();
    this.tokens = Math.min(Math.max(1, this.rate), this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
    return Math.min(Math.floor(this.tokens), this.limit - this.sent);
  }

  /** Takes up to `n` records from what is left (not refilled: chunks in flight were asked for the same tokens); how many it granted. */
  take(n: number): number {
    const k = Math.min(n, Math.floor(this.tokens), this.limit - this.sent);
    if (k <= 0) return 0;
    this.tokens -= k;
    this.sent += k;
    return k;
  }

  get spent(): boolean {
    return this.sent >= this.limit;
  }
}

interface Subscriber extends TapOptions {
  id: number;
  budget: TapBudget;
  send(lines: string[]): void;
  end(reason: string): void;
}

/**
 * The taps of one pipeline. It outlives runs (a stream restarted, a schedule's next run): a tap
 * waits for records while the pipeline is between runs.
 */
export class TapHub {
  private readonly subs = new Map<number, Subscriber>();
  private nextId = 1;

  get active(): boolean {
    return this.subs.size > 0;
  }

  /** Attaches a tap; returns what detaches it. `send` must not block (it drops when its peer is slow). */
  attach(opts: TapOptions, send: (lines: string[]) => void, end: (reason: string) => void): () => void {
    const id = this.nextId++;
    this.subs.set(id, { ...opts, id, budget: new TapBudget(opts.rate, opts.limit), send, end });
    return () => this.subs.delete(id);
  }

  /** The requests a chunk carries: undefined with no tap (the usual case). */
  requests(): TapRequest[] | undefined {
    if (this.subs.size === 0) return undefined;
    const out: TapRequest[] = [];
    for (const s of this.subs.values()) {
      if (s.stage === 'dlq') continue;
      const max = Math.min(s.budget.available(), TAP_PER_CHUNK);
      if (max > 0) out.push({ id: s.id, stage: s.stage, filter: s.filter, max });
    }
    return out.length ? out : undefined;
  }

  /** What chunks copied, once they are delivered; masked with `redact` (the run's secrets). */
  deliver(tapped: readonly Tapped[] | undefined, redact: (text: string) => string) {
    if (!tapped) return;
    for (const t of tapped) {
      const s = this.subs.get(t.id);
      if (s) this.hand(s, t.lines, redact);
    }
  }

  /** Envelopes written to the dead-letter queue (taps at stage `dlq`). */
  dead(envelopes: readonly Rec[], redact: (text: string) => string) {
    for (const s of this.subs.values()) {
      if (s.stage !== 'dlq') continue;
      const lines: string[] = [];
      const max = Math.min(s.budget.available(), TAP_PER_CHUNK);
      const filter = s.filter ? filterOf(s.filter) : undefined;
      for (let i = 0; i < envelopes.length && lines.length < max; i++) if (passes(filter, envelopes[i]!)) lines.push(tapText(envelopes[i]));
      this.hand(s, lines, redact);
    }
  }

  /** Ends every tap (the pipeline was deleted, or the daemon stops). */
  close(reason: string) {
    for (const s of this.subs.values()) s.end(reason);
    this.subs.clear();
  }

  private hand(s: Subscriber, lines: string[], redact: (text: string) => string) {
    // Chunks in flight were all asked for the same budget: what comes past it is dropped here.
    const n = s.budget.take(lines.length);
    if (n <= 0) return;
    s.send((n < lines.length ? lines.slice(0, n) : lines).map(redact));
    if (s.budget.spent) {
      this.subs.delete(s.id);
      s.end(`limit of ${s.limit} records reached`);
    }
  }
}
