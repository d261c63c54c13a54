// Dead letters as read back from a DLQ sink: the envelope of spec doc 3 checked field by field, a
// stable id, and the filters of the listing and of a replay selection (docs/dead-letters.md).
import { createHash } from 'node:crypto';
import type { Envelope, Stage } from '../engine/dlq.js';
import type { Rec } from '../plugins/types.js';

export const STAGES: readonly Stage[] = ['parse', 'transform', 'sink'];

/** One dead letter of a listing: its id, where the DLQ sink keeps it, the envelope. */
export interface DlqEntry {
  id: string;
  location: string;
  envelope: Envelope;
}

const isObject = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A JSON column read back as text (a SQL table without a JSON type) is parsed again. */
function jsonish(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  const t = v.trim();
  if (!t.startsWith('{') && !t.startsWith('[') && t !== 'null') return v;
  try {
    return JSON.parse(t);
  } catch {
    return v;
  }
}

/** The envelope a decoded record or a table row holds, or why it is not one. */
export function asEnvelope(r: Rec): Envelope | string {
  const stage = r._stage;
  if (typeof stage !== 'string' || !STAGES.includes(stage as Stage)) return `_stage is ${JSON.stringify(stage)}, not parse, transform or sink`;
  if (typeof r._error !== 'string') return '_error is missing';
  const record = jsonish(r.record ?? null);
  const raw = r.raw ?? null;
  if (record !== null && !isObject(record)) return 'record is not an object';
  if (raw !== null && typeof raw !== 'string') return 'raw is not a base64 string';
  if (stage === 'parse' ? raw === null : record === null)
    return stage === 'parse' ? 'a parse-stage envelope without raw' : `a ${stage}-stage envelope without record`;
  const ts = r._timestamp instanceof Date ? r._timestamp.toISOString() : r._timestamp;
  return {
    _error: r._error,
    _stage: stage as Stage,
    _pipeline: String(r._pipeline ?? ''),
    _run_id: String(r._run_id ?? ''),
    _timestamp: String(ts ?? ''),
    record: record as Rec | null,
    raw: raw as string | null,
  };
}

/** JSON with object keys sorted at every level: the same envelope always hashes alike. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isObject(v)) {
    return `{${Object.keys(v)
      .sort()
      .filter((k) => v[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/**
 * The id of an envelope: sha256 of its canonical JSON (32 hex digits). It does not depend on where
 * the sink keeps it (a file rolled, a row moved), so a replay mark holds across re-reads.
 */
export function envelopeId(e: Envelope): string {
  return createHash('sha256').update(canonical(e)).digest('hex').slice(0, 32);
}

/** Gives identical envelopes (same content, same millisecond) distinct ids, in read order. */
export class IdAssigner {
  private readonly seen = new Map<string, number>();
  next(e: Envelope): string {
    const base = envelopeId(e);
    const n = (this.seen.get(base) ?? 0) + 1;
    this.seen.set(base, n);
    return n === 1 ? base : `${base}-${n}`;
  }
}

export interface DlqFilter {
  stage?: Stage;
  /** ISO 8601 bounds on `_timestamp` (since inclusive, until exclusive). */
  since?: string;
  until?: string;
  /** Case-insensitive substring of `_error`. */
  error?: string;
  run_id?: string;
}

export function matches(e: Envelope, f: DlqFilter): boolean {
  if (f.stage && e._stage !== f.stage) return false;
  if (f.run_id && e._run_id !== f.run_id) return false;
  if (f.error && !e._error.toLowerCase().includes(f.error.toLowerCase())) return false;
  if (f.since || f.until) {
    const t = Date.parse(e._timestamp);
    if (Number.isNaN(t)) return false;
    if (f.since && t < Date.parse(f.since)) return false;
    if (f.until && t >= Date.parse(f.until)) return false;
  }
  return true;
}
