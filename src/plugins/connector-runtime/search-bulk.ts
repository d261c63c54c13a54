// The `_bulk` write that the elasticsearch and opensearch sinks share; each brings only its client
// (a BulkConnection). A write of the runtime's records is sent as requests of chunk_size `index`
// actions, one after the other, and the answer is read item by item:
// - a 2xx item landed;
// - a 429 (the node's write queue is full) or 503 item (shard unavailable) is refused for now:
//   WriteResult.retry, written again by the runtime under the sink's retry policy;
// - any other item (400 mapper_parsing_exception...) is refused for good: WriteResult.rejected,
//   dead-lettered with the item's error. Nothing is dropped silently (vectordotdev/vector#2968).
// A request that fails as a whole (no answer, 5xx, 401...) throws a WriteError when nothing of the
// write landed yet; after an earlier chunk landed, it names the records it did not send instead
// (retry or rejected), so landed chunks are not written twice.
import { Type } from '@sinclair/typebox';
import { errorMessage, WriteError } from '../../core/errors.js';
import { exactNumber } from '../../util/exact-number.js';
import { PeerPresence } from './presence.js';
import { formatTimestamp, templateTokens } from './filename-template.js';
import { NOT_A_TIME, timeParser } from '../common/time.js';
import type { LintIssue, PluginContext, Rec, Sink, WriteResult } from '../types.js';
import { errorText, hostList, readFailure, type Product } from './search-nodes.js';

/** Tokens of an index name template. */
export const INDEX_TOKENS = ['pipeline', 'timestamp', 'YYYY', 'MM', 'DD'] as const;
const TOKEN_RE = /\{([^{}]*)\}/g;

/** Item statuses that mean "try again later": a full write queue, an unavailable shard. */
const RETRY_ITEM = new Set([429, 503]);

/** Fields of both bulk sinks beside the node fields and the index template. */
export const bulkFields = {
  id_field: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'Record field whose value is the document _id (a string or number; a dotted path reaches into objects). A write retried after a lost answer then overwrites instead of indexing twice. A record without it is dead-lettered. Unset: the server assigns ids.',
    }),
  ),
  chunk_size: Type.Integer({
    minimum: 1,
    maximum: 100_000,
    default: 500,
    description: 'Documents per _bulk request; a larger write is sent as several requests, one after the other.',
  }),
  timestamp_field: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        "Take the date tokens of the index name ({timestamp}, {YYYY}, {MM}, {DD}) from this field of each record (ISO 8601, or epoch seconds/ms/us/ns by magnitude), in UTC; a record without a readable time is dead-lettered. Unset: the run's start. Our extension of doc 3.",
    }),
  ),
};

export const indexTemplateDescription =
  "Index to write, with tokens {pipeline} (the pipeline name, lower-cased), {timestamp} (yyyymmddthhmmssz), {YYYY}, {MM}, {DD} (UTC; the run start, or each record's timestamp_field). An index that does not exist is created by the server (or by its index template).";

/** Problems of an index name template (lint); messages name the culprit. */
export function lintIndexTemplate(template: string, path: string): LintIssue[] {
  const out: LintIssue[] = [];
  for (const t of new Set(templateTokens(template))) {
    if (!(INDEX_TOKENS as readonly string[]).includes(t))
      out.push({ path, message: `unknown token {${t}}; known tokens: ${INDEX_TOKENS.map((k) => `{${k}}`).join(', ')}` });
  }
  const literal = template.replace(TOKEN_RE, 'x');
  if (/[{}]/.test(literal)) out.push({ path, message: "unbalanced '{' or '}'" });
  if (/[A-Z]/.test(literal)) out.push({ path, message: 'index names are lowercase' });
  const bad = literal.match(/[\\/*?"<>|,# :]/);
  if (bad) out.push({ path, message: `index names cannot contain '${bad[0]}' (nor \\ / * ? " < > | , # : or a space)` });
  if (/^[-_+]/.test(template)) out.push({ path, message: "index names cannot start with '-', '_' or '+'" });
  if (template === '.' || template === '..') out.push({ path, message: "'.' and '..' are not index names" });
  return out;
}

/** The rules of the bulk fields: the index template, and timestamp_field only with a date token. */
export function lintBulk(c: { timestamp_field?: string }, template: string, path: string): LintIssue[] {
  const out = lintIndexTemplate(template, path);
  if (c.timestamp_field !== undefined && !templateTokens(template).some((t) => ['timestamp', 'YYYY', 'MM', 'DD'].includes(t))) {
    out.push({ path: 'timestamp_field', message: `only the date tokens ({timestamp}, {YYYY}, {MM}, {DD}) use timestamp_field, and ${path} has none` });
  }
  return out;
}

const pad = (n: number, w: number) => String(n).padStart(w, '0');

/** The index name of `template` for the pipeline at time `at` (UTC). */
export function expandIndex(template: string, pipeline: string, at: Date): string {
  return template.replace(TOKEN_RE, (_m, t: string) => {
    switch (t) {
      case 'pipeline':
        return pipeline.toLowerCase();
      case 'timestamp':
        // Index names are lowercase: the file templates' 20260101T120000Z becomes 20260101t120000z.
        return formatTimestamp(at).toLowerCase();
      case 'YYYY':
        return pad(at.getUTCFullYear(), 4);
      case 'MM':
        return pad(at.getUTCMonth() + 1, 2);
      case 'DD':
        return pad(at.getUTCDate(), 2);
      default:
        throw new Error(`unknown token {${t}} in index "${template}"`);
    }
  });
}

/** A top-level key (which may itself contain dots), else a dotted path. */
function fieldAt(r: Rec, name: string): unknown {
  if (name in r || !name.includes('.')) return r[name];
  return name.split('.').reduce<unknown>((o, k) => (o !== null && typeof o === 'object' ? (o as Rec)[k] : undefined), r);
}

const bigintSafe = (_k: string, v: unknown) => (typeof v === 'bigint' ? exactNumber(v) : v);

/** The document as JSON: without `_id` and `_index` (metadata fields the server refuses inside a document). */
function sourceOf(r: Rec): string {
  let doc = r;
  if ('_id' in r || '_index' in r) {
    doc = { ...r };
    delete doc._id;
    delete doc._index;
  }
  try {
    return JSON.stringify(doc);
  } catch {
    return JSON.stringify(doc, bigintSafe); // 64-bit integers from some serializers; other failures throw
  }
}

export interface BulkItem {
  _index?: string;
  _id?: string | null;
  status: number;
  error?: { type?: string; reason?: string; caused_by?: { type?: string; reason?: string } };
}

export interface BulkResponse {
  errors?: boolean;
  items?: Record<string, BulkItem>[];
}

/** One product's client, seen by the shared write: no I/O until bulk(). */
export interface BulkConnection {
  /** POST /_bulk with an NDJSON body; resolves with the parsed answer, rejects with the client's error. */
  bulk(body: string, query: Record<string, string>, signal: AbortSignal): Promise<BulkResponse>;
  close(): Promise<void>;
}

export interface BulkSinkOptions {
  product: Product;
  hosts: string[];
  /** The index name template. */
  index: string;
  id_field?: string;
  chunk_size: number;
  timestamp_field?: string;
  /** Ingest pipeline (elasticsearch): the `pipeline` query parameter of every request. */
  pipeline?: string;
  /** A new connection (loads the client library on first use: no other I/O). */
  connect(): Promise<BulkConnection>;
}

/** The ingest pipeline named in a write does not exist: every item says so; a config error. */
const PIPELINE_MISSING = /^pipeline with id \[.*\] does not exist$/;

type Refusal = { index: number; reason: string };

export function bulkSink(o: BulkSinkOptions, ctx: PluginContext): Sink {
  const presence = new PeerPresence(ctx, o.product);
  const parseTime = o.timestamp_field ? timeParser({ unit: 'auto' }) : undefined;
  const query: Record<string, string> = o.pipeline ? { pipeline: o.pipeline } : {};
  let startedAt = new Date();
  /** The index of every record, when it does not depend on the record. */
  let fixedIndex: string | undefined;
  let conn: BulkConnection | undefined;

  const lost = (message: string) => {
    presence.lost(message);
    // A new client next time: the old one's pool may hold the node as dead.
    const c = conn;
    conn = undefined;
    c?.close().catch(() => {});
  };

  /** The NDJSON lines of one record, or why it cannot be sent. */
  const encode = (r: Rec): string | { error: string } => {
    let index = fixedIndex;
    if (index === undefined) {
      const v = fieldAt(r, o.timestamp_field!);
      const t = parseTime!(v);
      if (t === NOT_A_TIME)
        return {
          error: `timestamp_field '${o.timestamp_field}' is ${v === undefined || v === null ? 'missing' : `not a time: ${JSON.stringify(v)?.slice(0, 60)}`}: no index name for the record`,
        };
      index = expandIndex(o.index, ctx.pipeline, new Date(t));
    }
    let id: string | undefined;
    if (o.id_field) {
      const v = fieldAt(r, o.id_field);
      if (typeof v === 'string' && v !== '') id = v;
      else if (typeof v === 'number' && Number.isFinite(v)) id = String(v);
      else if (typeof v === 'bigint') id = v.toString();
      else
        return {
          error: `id_field '${o.id_field}' is ${v === undefined || v === null || v === '' ? 'missing or empty' : `not a string or number (${typeof v})`}`,
        };
    }
    let source: string;
    try {
      source = sourceOf(r);
    } catch (e) {
      return { error: `the record cannot be written as JSON: ${errorMessage(e)}` };
    }
    return `${JSON.stringify({ index: id === undefined ? { _index: index } : { _index: index, _id: id } })}\n${source}\n`;
  };

  /** What the items of one answer say about the records `sent` (their indexes into the write). */
  const readItems = (res: BulkResponse, sent: number[], out: { rejected: Refusal[]; retry: Refusal[] }): string | undefined => {
    const items = res?.items;
    if (!Array.isArray(items) || items.length !== sent.length) {
      throw new WriteError(`${o.product}: _bulk answered ${Array.isArray(items) ? items.length : 'no'} items for ${sent.length} documents`, true);
    }
    if (res.errors === false) return;
    let pipelineMissing: string | undefined;
    items.forEach((wrapped, k) => {
      const item = Object.values(wrapped ?? {})[0];
      const status = item?.status;
      if (typeof status === 'number' && status >= 200 && status < 300) return;
      const detail = errorText(item?.error) || 'no error given';
      const reason = `${status ?? '?'} ${detail}${item?._index ? ` (index ${item._index})` : ''}`;
      if (item?.error?.reason && PIPELINE_MISSING.test(item.error.reason)) pipelineMissing = item.error.reason;
      (typeof status === 'number' && RETRY_ITEM.has(status) ? out.retry : out.rejected).push({ index: sent[k]!, reason });
    });
    return pipelineMissing;
  };

  return {
    async open(run) {
      startedAt = run.startedAt;
      fixedIndex = undefined;
    },
    async write(batch) {
      const records = batch.records ?? [];
      if (o.timestamp_field === undefined) fixedIndex ??= expandIndex(o.index, ctx.pipeline, startedAt);
      const out = { rejected: [] as Refusal[], retry: [] as Refusal[] };
      let landed = false;
      let bytes = 0;
      for (let from = 0; from < records.length; from += o.chunk_size) {
        const to = Math.min(from + o.chunk_size, records.length);
        const parts: string[] = [];
        const sent: number[] = [];
        for (let i = from; i < to; i++) {
          const e = encode(records[i]!);
          if (typeof e === 'string') {
            parts.push(e);
            sent.push(i);
          } else out.rejected.push({ index: i, reason: e.error });
        }
        if (sent.length === 0) continue;
        presence.connecting();
        let res: BulkResponse;
        try {
          conn ??= await o.connect();
          const body = parts.join('');
          res = await conn.bulk(body, query, ctx.signal);
          bytes += Buffer.byteLength(body);
          presence.answered();
        } catch (e) {
          const f = readFailure(e, o.product, `POST _bulk to ${hostList(o.hosts)}`);
          if (f.connectionLost) lost(f.message);
          else presence.answered();
          const message = `${o.product}: ${f.message}`;
          if (!landed) throw new WriteError(message, f.retryable, { cause: e });
          // Earlier chunks landed: name what was not sent, so only that is written again.
          const rest = [...sent, ...Array.from({ length: records.length - to }, (_, k) => to + k)];
          for (const index of rest) (f.retryable ? out.retry : out.rejected).push({ index, reason: f.message });
          break;
        }
        const before = { rejected: out.rejected.length, retry: out.retry.length };
        const missing = readItems(res, sent, out);
        if (missing) {
          // A config error, not the records': fail the write (every item of it was refused).
          const message = `${o.product}: ingest pipeline '${o.pipeline}' does not exist (${missing}); create it or correct pipeline`;
          if (!landed) throw new WriteError(message, false);
          out.rejected.length = before.rejected;
          out.retry.length = before.retry;
          const already = new Set(out.rejected.map((x) => x.index));
          for (let i = from; i < records.length; i++) if (!already.has(i)) out.rejected.push({ index: i, reason: message });
          break;
        }
        landed = true;
      }
      const result: WriteResult = { bytes };
      if (out.rejected.length) result.rejected = out.rejected;
      if (out.retry.length) result.retry = out.retry;
      return result;
    },
    async close() {
      const c = conn;
      conn = undefined;
      await c?.close();
    },
  };
}
