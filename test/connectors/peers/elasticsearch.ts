// A wire-level test peer for the elasticsearch and opensearch connectors: no Elasticsearch or
// OpenSearch server can be installed here, so this node:http server inside the test process speaks
// their REST protocol on a loopback port and checks what the real servers check:
// - basic authentication on every request: 401 with the real body and WWW-Authenticate header
//   (Elasticsearch: a security_exception JSON body and three challenges; OpenSearch's security
//   plugin: the text `Unauthorized`);
// - Elasticsearch's product header (`X-Elastic-Product: Elasticsearch`, which its client demands on
//   every 2xx answer); OpenSearch's cluster info says `version.distribution: "opensearch"`;
// - the Content-Type of each body (406 for one the server does not take: NDJSON for _bulk, JSON for
//   searches; Elasticsearch's compatible-with=7|8 vendor types);
// - `_bulk`: the NDJSON framing (terminated by a newline, action and source lines), per-item
//   answers in the real shapes with `errors: true`; the ingest `pipeline` parameter (recorded with
//   each document; an unknown one refused per item as the real server does); metadata fields
//   (`_id`, `_index`) refused inside a document; a small dynamic mapping (long, float, boolean,
//   date, text, object from the first value seen) whose conflicts are refused per item with the
//   real parsing exception; index names (lowercase); `index` actions with an `_id` overwrite;
// - `_search` with `scroll`, `_search/scroll`, `DELETE _search/scroll` (open scroll contexts are
//   counted, and expire after their keep-alive), a subset of the Query DSL (match_all, term,
//   terms, match, range, exists, bool; any other query is the real parsing_exception), and
//   `index_not_found_exception` for an unknown index;
// - `GET _ingest/pipeline/<id>` (404 `{}` for an unknown one).
// Tests can make chosen items fail (400 or 429), fail whole requests, lose answers, serve https,
// make a user read-only (403 on _bulk), and restart the listener.
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Collector, Peer, PeerFixture, Rec } from '../conformance.js';
import { loopbackServer } from './http.js';

export type Flavor = 'elasticsearch' | 'opensearch';

export interface SearchPeerOptions {
  flavor?: Flavor;
  /** username -> password; absent: security off (no authentication, as an unsecured cluster). */
  users?: Record<string, string>;
  /** PEM certificate and key: serve https. */
  tls?: { cert: string; key: string };
  /** Users that may read but not write: _bulk is a 403 security_exception for them. */
  readOnly?: string[];
}

export interface LoggedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
  status: number;
}

export interface StoredDoc {
  _id: string;
  _source: Rec;
  _version: number;
  /** The ingest pipeline the document went through. */
  pipeline?: string;
}

/** Makes matching `index` items fail: 400 (a parsing error) or 429 (a full write queue). */
export interface ItemFailure {
  status: 400 | 429;
  when: (doc: Rec, index: string) => boolean;
  /** Fail each matching document this many times (by its JSON), then take it; default always. */
  times?: number;
}

export interface SearchPeer {
  flavor: Flavor;
  url: string;
  port: number;
  requests: LoggedRequest[];
  /** Documents of an index, in the order they were first indexed. */
  documents(index: string): StoredDoc[];
  indices(): string[];
  createIndex(index: string): void;
  /** Indexes documents directly (for the source tests). */
  put(index: string, docs: Rec[]): void;
  addPipeline(id: string): void;
  failItems(f: ItemFailure): void;
  /** The next _bulk requests are answered as a whole with these statuses (one each; 0 answers normally). */
  failRequests(statuses: number[]): void;
  /** The next `n` _bulk requests are carried out, then their connection is cut before the answer. */
  loseAnswers(n: number): void;
  /** Scroll contexts open now (not cleared, not expired). */
  openScrolls(): number;
  /** Cuts every connection, refuses new ones for `downMs`, then listens on the same port again. */
  restart(downMs: number): Promise<void>;
  close(): Promise<void>;
}

type FieldType = 'long' | 'float' | 'boolean' | 'date' | 'text' | 'object';

interface Index {
  uuid: string;
  docs: Map<string, StoredDoc>;
  mapping: Map<string, FieldType>;
  seqNo: number;
}

interface Scroll {
  index: string;
  hits: { index: string; doc: StoredDoc }[];
  pos: number;
  size: number;
  keepAliveMs: number;
  expiresAt: number;
}

interface ErrorObj {
  type: string;
  reason: string;
  [k: string]: unknown;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string | string[]> = {},
  ) {
    super(typeof body === 'string' ? body : JSON.stringify(body));
  }
}

/** The error body of both servers: `{error: {root_cause: [...], type, reason, ...}, status}`. */
const errorBody = (status: number, e: ErrorObj, causedBy?: ErrorObj) => ({
  error: { root_cause: [e], ...e, ...(causedBy ? { caused_by: causedBy } : {}) },
  status,
});
const fail = (status: number, type: string, reason: string, extra: Record<string, unknown> = {}, causedBy?: ErrorObj) =>
  new HttpError(status, errorBody(status, { type, reason, ...extra }, causedBy));

const TIME_UNITS: Record<string, number> = { nanos: 1e-6, micros: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
function timeValueMs(v: string, setting: string): number {
  const m = /^(\d+)(nanos|micros|ms|s|m|h|d)$/.exec(v);
  if (!m)
    throw fail(400, 'illegal_argument_exception', `failed to parse setting [${setting}] with value [${v}] as a time value: unit is missing or unrecognized`);
  return Number(m[1]) * TIME_UNITS[m[2]!]!;
}

const INVALID_INDEX_CHARS = /[\\/*?"<>|, #:]/;
const METADATA_FIELDS = new Set([
  '_id',
  '_index',
  '_source',
  '_routing',
  '_version',
  '_seq_no',
  '_primary_term',
  '_ignored',
  '_field_names',
  '_tier',
  '_doc_count',
]);
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

const newId = () => randomBytes(15).toString('base64url');

export async function startSearchPeer(opts: SearchPeerOptions = {}): Promise<SearchPeer> {
  const flavor: Flavor = opts.flavor ?? 'elasticsearch';
  const es = flavor === 'elasticsearch';
  const indices = new Map<string, Index>();
  const pipelines = new Set<string>();
  const scrolls = new Map<string, Scroll>();
  const itemFailures: ItemFailure[] = [];
  const attempts = new Map<string, number>();
  const requestFailures: number[] = [];
  let answersToLose = 0;
  const requests: LoggedRequest[] = [];

  const indexOf = (name: string, create: boolean): Index | undefined => {
    let ix = indices.get(name);
    if (!ix && create) {
      ix = { uuid: randomBytes(16).toString('base64url').slice(0, 22), docs: new Map(), mapping: new Map(), seqNo: 0 };
      indices.set(name, ix);
    }
    return ix;
  };
  const notFound = (name: string) =>
    fail(404, 'index_not_found_exception', `no such index [${name}]`, {
      'resource.type': 'index_or_alias',
      'resource.id': name,
      index_uuid: '_na_',
      index: name,
    });

  // ---- authentication ------------------------------------------------------------------------

  const challenge = (uri: string, user?: string) => {
    if (!es)
      return new HttpError(401, 'Unauthorized', { 'www-authenticate': 'Basic realm="OpenSearch Security"', 'content-type': 'text/plain; charset=UTF-8' });
    const challenges = ['Basic realm="security" charset="UTF-8"', 'Bearer realm="security"', 'ApiKey'];
    const reason =
      user === undefined ? `missing authentication credentials for REST request [${uri}]` : `unable to authenticate user [${user}] for REST request [${uri}]`;
    const e = { type: 'security_exception', reason, header: { 'WWW-Authenticate': challenges } };
    return new HttpError(401, { error: { root_cause: [e], ...e }, status: 401 }, { 'www-authenticate': challenges });
  };

  /** The authenticated user (undefined when security is off). */
  function authenticate(req: IncomingMessage, uri: string): string | undefined {
    if (!opts.users) return undefined;
    const h = req.headers.authorization;
    if (!h || !/^Basic /i.test(h)) throw challenge(uri);
    const text = Buffer.from(h.slice(6), 'base64').toString('utf8');
    const i = text.indexOf(':');
    const user = i < 0 ? text : text.slice(0, i);
    if (i < 0 || opts.users[user] === undefined || opts.users[user] !== text.slice(i + 1)) throw challenge(uri, user);
    return user;
  }

  // ---- content types -------------------------------------------------------------------------

  function checkContentType(req: IncomingMessage, kind: 'json' | 'ndjson') {
    const raw = req.headers['content-type'];
    if (!raw) throw new HttpError(406, { error: 'Content-Type header is missing', status: 406 });
    const [type, ...params] = raw.split(';').map((s) => s.trim().toLowerCase());
    const compat = params.find((p) => p.startsWith('compatible-with='))?.split('=')[1];
    const plain = kind === 'ndjson' ? ['application/x-ndjson', 'application/json'] : ['application/json'];
    const vendor = es
      ? `application/vnd.elasticsearch+${kind === 'ndjson' ? 'x-ndjson' : 'json'}`
      : `application/vnd.opensearch+${kind === 'ndjson' ? 'x-ndjson' : 'json'}`;
    if (type === vendor) {
      if (!compat || !(es ? ['7', '8'] : ['7']).includes(compat)) {
        throw fail(
          400,
          'media_type_header_exception',
          `Invalid media-type value on headers [Content-Type]`,
          {},
          {
            type: 'status_exception',
            reason: `A compatible version is required on both Content-Type and Accept headers if either one has requested a compatible version. Accept=${String(req.headers.accept)}, Content-Type=${raw}`,
          },
        );
      }
      return;
    }
    if (!plain.includes(type!)) throw new HttpError(406, { error: `Content-Type header [${raw}] is not supported`, status: 406 });
  }

  const parseJson = (body: string): Rec => {
    if (body.trim() === '') return {};
    try {
      const v = JSON.parse(body) as unknown;
      if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object');
      return v as Rec;
    } catch (e) {
      throw fail(400, 'x_content_parse_exception', `[1:1] Unexpected character: ${(e as Error).message}`);
    }
  };

  // ---- documents and mapping -----------------------------------------------------------------

  const parsingError = (reason: string, causedBy?: ErrorObj): ErrorObj => ({
    type: es ? 'document_parsing_exception' : 'mapper_parsing_exception',
    reason,
    ...(causedBy ? { caused_by: causedBy } : {}),
  });

  /** The mapping updates a document needs, or the parsing error that refuses it. */
  function mapDocument(ix: Index, id: string, doc: Rec): Map<string, FieldType> | ErrorObj {
    for (const k of Object.keys(doc)) {
      if (METADATA_FIELDS.has(k))
        return parsingError(`Field [${k}] is a metadata field and cannot be added inside a document. Use the index API request parameters.`);
    }
    const updates = new Map<string, FieldType>();
    const typeOf = (path: string) => updates.get(path) ?? ix.mapping.get(path);
    const preview = (v: unknown) => (typeof v === 'object' ? JSON.stringify(v) : String(v));
    const conflict = (path: string, type: FieldType, v: unknown, cause: ErrorObj) =>
      parsingError(`failed to parse field [${path}] of type [${type}] in document with id '${id}'. Preview of field's value: '${preview(v)}'`, cause);
    const walk = (obj: Rec, prefix: string): ErrorObj | undefined => {
      for (const [k, raw] of Object.entries(obj)) {
        const path = prefix + k;
        for (const v of Array.isArray(raw) ? raw : [raw]) {
          if (v === null) continue;
          const mapped = typeOf(path);
          if (typeof v === 'object') {
            if (mapped !== undefined && mapped !== 'object')
              return conflict(path, mapped, v, { type: 'illegal_state_exception', reason: `Can't get text on a START_OBJECT at 1:${path.length + 3}` });
            if (mapped === undefined) updates.set(path, 'object');
            const inner = walk(v as Rec, `${path}.`);
            if (inner) return inner;
            continue;
          }
          if (mapped === 'object') return parsingError(`object mapping for [${path}] tried to parse field [${path}] as object, but found a concrete value`);
          if (mapped === undefined) {
            const t: FieldType =
              typeof v === 'boolean'
                ? 'boolean'
                : typeof v === 'number'
                  ? Number.isInteger(v)
                    ? 'long'
                    : 'float'
                  : ISO_DATE.test(String(v))
                    ? 'date'
                    : 'text';
            updates.set(path, t);
            continue;
          }
          if ((mapped === 'long' || mapped === 'float') && typeof v !== 'number') {
            if (typeof v === 'boolean' || String(v).trim() === '' || Number.isNaN(Number(v))) {
              return conflict(path, mapped, v, {
                type: es ? 'illegal_argument_exception' : 'number_format_exception',
                reason: `For input string: "${String(v)}"`,
              });
            }
          }
          if (mapped === 'boolean' && v !== true && v !== false && v !== 'true' && v !== 'false') {
            return conflict(path, mapped, v, {
              type: 'illegal_argument_exception',
              reason: `Failed to parse value [${String(v)}] as only [true] or [false] are allowed.`,
            });
          }
          if (mapped === 'date' && typeof v !== 'number' && !ISO_DATE.test(String(v))) {
            return conflict(path, mapped, v, {
              type: 'illegal_argument_exception',
              reason: `failed to parse date field [${String(v)}] with format [strict_date_optional_time||epoch_millis]`,
            });
          }
        }
      }
      return undefined;
    };
    return walk(doc, '') ?? updates;
  }

  /** Indexes one document; returns the item answer (without the action key). */
  function indexOne(name: string, id: string | undefined, doc: Rec, pipeline: string | undefined, create: boolean): Rec {
    if (name !== name.toLowerCase())
      return {
        _index: name,
        _id: id ?? null,
        status: 400,
        error: { type: 'invalid_index_name_exception', reason: `Invalid index name [${name}], must be lowercase`, index_uuid: '_na_', index: name },
      };
    if (INVALID_INDEX_CHARS.test(name) || /^[-_+]/.test(name)) {
      return {
        _index: name,
        _id: id ?? null,
        status: 400,
        error: {
          type: 'invalid_index_name_exception',
          reason: `Invalid index name [${name}], must not contain the following characters [ , ", *, \\, <, |, ,, >, /, ?]`,
          index_uuid: '_na_',
          index: name,
        },
      };
    }
    if (pipeline !== undefined && pipeline !== '_none' && !pipelines.has(pipeline)) {
      return {
        _index: name,
        _id: id ?? null,
        status: 400,
        error: { type: 'illegal_argument_exception', reason: `pipeline with id [${pipeline}] does not exist` },
      };
    }
    const key = JSON.stringify(doc);
    for (const f of itemFailures) {
      if (!f.when(doc, name)) continue;
      const n = (attempts.get(key) ?? 0) + 1;
      attempts.set(key, n);
      if (f.times !== undefined && n > f.times) continue;
      if (f.status === 429) {
        return {
          _index: name,
          _id: id ?? null,
          status: 429,
          error: {
            type: es ? 'es_rejected_execution_exception' : 'rejected_execution_exception',
            reason: `rejected execution of primary operation [coordinating_and_primary_bytes=104857600, replica_bytes=0, all_bytes=104857600, primary_operation_bytes=1024, max_coordinating_and_primary_bytes=104857600]`,
          },
        };
      }
      const err = parsingError(`failed to parse field [injected] of type [long] in document with id '${id ?? 'auto'}'. Preview of field's value: 'x'`, {
        type: 'illegal_argument_exception',
        reason: 'For input string: "x"',
      });
      return { _index: name, _id: id ?? null, status: 400, error: err };
    }
    const ix = indexOf(name, true)!;
    const docId = id ?? newId();
    const mapped = mapDocument(ix, docId, doc);
    if (!(mapped instanceof Map)) return { _index: name, _id: docId, status: 400, error: { ...mapped, index_uuid: ix.uuid, shard: '0', index: name } };
    const existing = ix.docs.get(docId);
    if (existing && create) {
      return {
        _index: name,
        _id: docId,
        status: 409,
        error: {
          type: 'version_conflict_engine_exception',
          reason: `[${docId}]: version conflict, document already exists (current version [${existing._version}])`,
          index_uuid: ix.uuid,
          shard: '0',
          index: name,
        },
      };
    }
    for (const [p, t] of mapped) ix.mapping.set(p, t);
    const version = (existing?._version ?? 0) + 1;
    ix.docs.set(docId, { _id: docId, _source: doc, _version: version, ...(pipeline && pipeline !== '_none' ? { pipeline } : {}) });
    return {
      _index: name,
      _id: docId,
      _version: version,
      result: existing ? 'updated' : 'created',
      _shards: { total: 2, successful: 1, failed: 0 },
      _seq_no: ix.seqNo++,
      _primary_term: 1,
      status: existing ? 200 : 201,
    };
  }

  function bulk(req: IncomingMessage, body: string, pathIndex: string | undefined, query: URLSearchParams) {
    checkContentType(req, 'ndjson');
    const planned = requestFailures.shift();
    if (planned) {
      if (planned === 429)
        throw fail(
          429,
          es ? 'es_rejected_execution_exception' : 'rejected_execution_exception',
          'rejected execution of coordinating operation [coordinating_and_primary_bytes=104857600, max_coordinating_and_primary_bytes=104857600]',
        );
      if (planned === 413) throw new HttpError(413, '');
      throw fail(planned, 'cluster_block_exception', 'blocked by: [SERVICE_UNAVAILABLE/1/state not recovered / initialized];');
    }
    if (body.length > 0 && !body.endsWith('\n')) throw fail(400, 'illegal_argument_exception', 'The bulk request must be terminated by a newline [\\n]');
    const lines = body.split('\n');
    lines.pop();
    if (lines.length === 0) throw fail(400, 'action_request_validation_exception', 'Validation Failed: 1: no requests added;');
    const started = Date.now();
    const items: Rec[] = [];
    for (let i = 0; i < lines.length; i++) {
      let action: Rec;
      try {
        action = JSON.parse(lines[i]!) as Rec;
      } catch {
        throw fail(400, 'illegal_argument_exception', `Malformed action/metadata line [${i + 1}], expected START_OBJECT but found [VALUE_STRING]`);
      }
      const op = Object.keys(action)[0];
      if (op !== 'index' && op !== 'create')
        throw fail(
          400,
          'illegal_argument_exception',
          `Malformed action/metadata line [${i + 1}], expected field [index] or [create] in this peer, found [${op}]`,
        );
      const meta = (action[op] ?? {}) as Rec;
      const name = (meta._index as string | undefined) ?? pathIndex;
      if (!name) throw fail(400, 'action_request_validation_exception', 'Validation Failed: 1: index is missing;');
      const src = lines[++i];
      if (src === undefined) throw fail(400, 'illegal_argument_exception', `The bulk request must be terminated by a newline [\\n]`);
      let doc: unknown;
      try {
        doc = JSON.parse(src);
      } catch {
        const err = parsingError('failed to parse', { type: 'json_parse_exception', reason: 'Unexpected character' });
        items.push({ [op]: { _index: name, _id: (meta._id as string) ?? null, status: 400, error: err } });
        continue;
      }
      if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
        items.push({
          [op]: {
            _index: name,
            _id: (meta._id as string) ?? null,
            status: 400,
            error: parsingError('failed to parse', {
              type: 'not_x_content_exception',
              reason: 'Compressor detection can only be called on some xcontent bytes or compressed xcontent bytes',
            }),
          },
        });
        continue;
      }
      const id = meta._id === undefined || meta._id === null ? undefined : String(meta._id);
      if (id === '') throw fail(400, 'action_request_validation_exception', 'Validation Failed: 1: if _id is specified it must not be empty;');
      const pipeline = (meta.pipeline as string | undefined) ?? query.get('pipeline') ?? undefined;
      items.push({ [op]: indexOne(name, id, doc as Rec, pipeline, op === 'create') });
    }
    const errors = items.some((it) => ((Object.values(it)[0] as Rec).status as number) >= 300);
    return { took: Date.now() - started, errors, items };
  }

  // ---- search --------------------------------------------------------------------------------

  /** The concrete indices a search names (a comma list, wildcards); an unknown concrete name is a 404. */
  function resolve(target: string): string[] {
    const out: string[] = [];
    for (const part of target.split(',')) {
      if (part.includes('*')) {
        const re = new RegExp(
          `^${part
            .split('*')
            .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
            .join('.*')}$`,
        );
        out.push(...[...indices.keys()].filter((n) => re.test(n)));
      } else if (indices.has(part)) out.push(part);
      else throw notFound(part);
    }
    return [...new Set(out)];
  }

  const valueAt = (doc: Rec, field: string): unknown => {
    if (field in doc) return doc[field];
    return field.split('.').reduce<unknown>((o, k) => (o !== null && typeof o === 'object' ? (o as Rec)[k] : undefined), doc);
  };
  const values = (doc: Rec, field: string) => {
    const v = valueAt(doc, field);
    return v === undefined || v === null ? [] : Array.isArray(v) ? v : [v];
  };
  const single = (q: unknown, name: string): [string, unknown] => {
    const entries = Object.entries((q ?? {}) as Rec);
    if (entries.length !== 1)
      throw fail(400, 'parsing_exception', `[${name}] query doesn't support multiple fields, found [${entries.map((e) => e[0]).join('] and [')}]`, {
        line: 1,
        col: 1,
      });
    return entries[0]!;
  };
  const cmp = (a: unknown, b: unknown) => (typeof a === 'number' && typeof b === 'number' ? a - b : String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0);

  function matcher(q: Rec): (doc: Rec) => boolean {
    const keys = Object.keys(q);
    if (keys.length !== 1)
      throw fail(
        400,
        'parsing_exception',
        keys.length ? `[${keys[0]}] malformed query, expected [END_OBJECT] but found [FIELD_NAME]` : 'query malformed, empty clause found',
        { line: 1, col: 1 },
      );
    const type = keys[0]!;
    const arg = q[type];
    switch (type) {
      case 'match_all':
        return () => true;
      case 'match_none':
        return () => false;
      case 'term':
      case 'match': {
        const [field, spec] = single(arg, type);
        const want = spec !== null && typeof spec === 'object' ? (spec as Rec)[type === 'term' ? 'value' : 'query'] : spec;
        return (doc) => values(doc, field).some((v) => v === want || String(v) === String(want));
      }
      case 'terms': {
        const [field, list] = single(arg, type);
        if (!Array.isArray(list)) throw fail(400, 'parsing_exception', `[terms] query does not support [${field}]`, { line: 1, col: 1 });
        return (doc) => values(doc, field).some((v) => list.some((w) => v === w || String(v) === String(w)));
      }
      case 'exists': {
        const field = (arg as Rec)?.field as string;
        return (doc) => values(doc, field).length > 0;
      }
      case 'range': {
        const [field, spec] = single(arg, type);
        const r = spec as Rec;
        return (doc) =>
          values(doc, field).some(
            (v) =>
              (r.gte === undefined || cmp(v, r.gte) >= 0) &&
              (r.gt === undefined || cmp(v, r.gt) > 0) &&
              (r.lte === undefined || cmp(v, r.lte) <= 0) &&
              (r.lt === undefined || cmp(v, r.lt) < 0),
          );
      }
      case 'bool': {
        const b = (arg ?? {}) as Rec;
        const list = (k: string) => (b[k] === undefined ? [] : Array.isArray(b[k]) ? (b[k] as Rec[]) : [b[k] as Rec]).map(matcher);
        const must = [...list('must'), ...list('filter')];
        const should = list('should');
        const not = list('must_not');
        return (doc) => must.every((m) => m(doc)) && not.every((m) => !m(doc)) && (should.length === 0 || must.length > 0 || should.some((m) => m(doc)));
      }
      default:
        throw fail(
          400,
          'parsing_exception',
          `unknown query [${type}]`,
          { line: 1, col: 14 },
          { type: 'named_object_not_found_exception', reason: `[1:14] unknown field [${type}]` },
        );
    }
  }

  const shards = { total: 1, successful: 1, skipped: 0, failed: 0 };
  const hitOf = (h: { index: string; doc: StoredDoc }, i: number) => ({ _index: h.index, _id: h.doc._id, _score: null, _source: h.doc._source, sort: [i] });

  function page(s: Scroll, id: string | undefined, trackTotal: boolean) {
    const from = s.pos;
    const slice = s.hits.slice(from, from + s.size);
    s.pos += slice.length;
    return {
      ...(id ? { _scroll_id: id } : {}),
      took: 1,
      timed_out: false,
      _shards: shards,
      hits: { ...(trackTotal ? { total: { value: s.hits.length, relation: 'eq' } } : {}), max_score: null, hits: slice.map((h, k) => hitOf(h, from + k)) },
    };
  }

  function search(req: IncomingMessage, body: string, target: string, query: URLSearchParams) {
    if (body.trim() !== '') checkContentType(req, 'json');
    const b = parseJson(body);
    const names = resolve(target);
    const match = matcher((b.query as Rec | undefined) ?? { match_all: {} });
    const size = (b.size as number | undefined) ?? Number(query.get('size') ?? 10);
    if (!Number.isInteger(size) || size < 0) throw fail(400, 'illegal_argument_exception', `[size] parameter cannot be negative, found [${size}]`);
    const hits = names.flatMap((index) => [...indices.get(index)!.docs.values()].filter((d) => match(d._source)).map((doc) => ({ index, doc })));
    const scroll = query.get('scroll');
    const trackTotal = b.track_total_hits !== false;
    if (!scroll) return page({ index: target, hits, pos: 0, size, keepAliveMs: 0, expiresAt: 0 }, undefined, trackTotal);
    if (size > 10_000)
      throw fail(
        400,
        'illegal_argument_exception',
        `Batch size is too large, size must be less than or equal to: [10000] but was [${size}]. Scroll batch sizes cost as much memory as result windows so they are controlled by the [index.max_result_window] index level setting.`,
      );
    const keepAliveMs = timeValueMs(scroll, 'scroll');
    const id = Buffer.from(`svc-peer-scroll:${newId()}`).toString('base64');
    // A sub-millisecond clock: a keep-alive of 1nanos has expired by the next request even when it comes within the same millisecond.
    const s: Scroll = { index: target, hits, pos: 0, size, keepAliveMs, expiresAt: performance.now() + keepAliveMs };
    scrolls.set(id, s);
    return page(s, id, trackTotal);
  }

  const contextMissing = (id: string) => {
    const e = { type: 'search_context_missing_exception', reason: `No search context found for id [${id.slice(-8)}]` };
    return new HttpError(404, {
      error: {
        root_cause: [e],
        type: 'search_phase_execution_exception',
        reason: 'all shards failed',
        phase: 'query',
        grouped: true,
        failed_shards: [{ shard: -1, index: null, reason: e }],
        caused_by: e,
      },
      status: 404,
    });
  };

  function scrollNext(req: IncomingMessage, body: string, query: URLSearchParams) {
    if (body.trim() !== '') checkContentType(req, 'json');
    const b = parseJson(body);
    const id = (b.scroll_id as string | undefined) ?? query.get('scroll_id') ?? undefined;
    if (!id) throw fail(400, 'action_request_validation_exception', 'Validation Failed: 1: scrollId is missing;');
    const s = scrolls.get(id);
    if (!s || performance.now() > s.expiresAt) {
      scrolls.delete(id);
      throw contextMissing(id);
    }
    const keep = (b.scroll as string | undefined) ?? query.get('scroll');
    if (keep) s.keepAliveMs = timeValueMs(keep, 'scroll');
    s.expiresAt = performance.now() + s.keepAliveMs;
    return page(s, id, true);
  }

  function clearScroll(req: IncomingMessage, body: string): [number, Rec] {
    if (body.trim() !== '') checkContentType(req, 'json');
    const b = parseJson(body);
    const raw = b.scroll_id;
    const ids = raw === '_all' ? [...scrolls.keys()] : Array.isArray(raw) ? (raw as string[]) : raw ? [raw as string] : [];
    if (ids.length === 0) throw fail(400, 'action_request_validation_exception', 'Validation Failed: 1: no scroll ids specified;');
    let freed = 0;
    for (const id of ids) {
      const s = scrolls.get(id);
      if (s && performance.now() <= s.expiresAt) freed++;
      scrolls.delete(id);
    }
    return [freed > 0 ? 200 : 404, { succeeded: true, num_freed: freed }];
  }

  // ---- routing -------------------------------------------------------------------------------

  const info = () => ({
    name: 'svc-test-peer',
    cluster_name: es ? 'elasticsearch' : 'opensearch',
    cluster_uuid: 'c9Zz1tq3QxWm6ZB1hIzYxA',
    version: es
      ? {
          number: '8.19.2',
          build_flavor: 'default',
          build_type: 'docker',
          build_hash: '0000000000000000000000000000000000000000',
          build_date: '2025-08-01T00:00:00.000Z',
          build_snapshot: false,
          lucene_version: '9.12.2',
          minimum_wire_compatibility_version: '7.17.0',
          minimum_index_compatibility_version: '7.0.0',
        }
      : {
          distribution: 'opensearch',
          number: '2.19.1',
          build_type: 'tar',
          build_hash: '0000000000000000000000000000000000000000',
          build_date: '2025-02-27T00:00:00.000Z',
          build_snapshot: false,
          lucene_version: '9.12.1',
          minimum_wire_compatibility_version: '7.10.0',
          minimum_index_compatibility_version: '7.0.0',
        },
    tagline: es ? 'You Know, for Search' : 'The OpenSearch Project: https://opensearch.org/',
  });

  function route(req: IncomingMessage, body: string, u: URL, user: string | undefined): [number, unknown] {
    const method = req.method ?? 'GET';
    const parts = u.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    const [a, b, c] = parts;
    if (parts.length === 0 && (method === 'GET' || method === 'HEAD')) return [200, method === 'HEAD' ? '' : info()];
    if ((a === '_bulk' && parts.length === 1) || (b === '_bulk' && parts.length === 2)) {
      if (method !== 'POST' && method !== 'PUT')
        throw fail(405, 'illegal_argument_exception', `Incorrect HTTP method for uri [${u.pathname}] and method [${method}], allowed: [POST, PUT]`);
      if (user !== undefined && opts.readOnly?.includes(user)) {
        throw fail(
          403,
          'security_exception',
          `action [indices:data/write/bulk] is unauthorized for user [${user}] with effective roles [viewer], this action is granted by the index privileges [create_doc,create,delete,index,write,all]`,
        );
      }
      return [200, bulk(req, body, a === '_bulk' ? undefined : a, u.searchParams)];
    }
    if (a === '_search' && b === 'scroll' && parts.length === 2) {
      if (method === 'DELETE') return clearScroll(req, body);
      if (method === 'GET' || method === 'POST') return [200, scrollNext(req, body, u.searchParams)];
    }
    if (b === '_search' && parts.length === 2 && (method === 'GET' || method === 'POST')) return [200, search(req, body, a!, u.searchParams)];
    if (a === '_search' && parts.length === 1 && (method === 'GET' || method === 'POST')) return [200, search(req, body, '*', u.searchParams)];
    if (a === '_ingest' && b === 'pipeline' && c && method === 'GET')
      return pipelines.has(c) ? [200, { [c]: { description: 'test peer pipeline', processors: [] } }] : [404, {}];
    if (a === '_ingest' && b === 'pipeline' && c && method === 'PUT') {
      pipelines.add(c);
      return [200, { acknowledged: true }];
    }
    throw new HttpError(400, { error: `no handler found for uri [${u.pathname}] and method [${method}]` });
  }

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string | string[]> = {}) => {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    const product = es && status !== 401 && status !== 403 ? { 'x-elastic-product': 'Elasticsearch' } : {};
    const type =
      typeof body === 'string' ? 'text/plain; charset=UTF-8' : es ? 'application/vnd.elasticsearch+json;compatible-with=8' : 'application/json; charset=UTF-8';
    res.writeHead(status, { 'content-type': type, ...product, ...headers });
    res.end(text);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const ch of req) chunks.push(ch as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const u = new URL(req.url ?? '/', 'http://peer');
    const entry: LoggedRequest = { method: req.method ?? '', path: u.pathname, query: u.searchParams, headers: req.headers, body, status: 0 };
    requests.push(entry);
    try {
      const user = authenticate(req, `${u.pathname}${u.search}`);
      const [status, out] = route(req, body, u, user);
      entry.status = status;
      if (answersToLose > 0 && /\/_bulk$/.test(u.pathname)) {
        answersToLose--;
        entry.status = 0;
        res.socket?.destroy();
        return;
      }
      send(res, status, out);
    } catch (e) {
      if (!(e instanceof HttpError)) throw e;
      entry.status = e.status;
      send(res, e.status, e.body, e.headers);
    }
  };

  const {
    port,
    restart,
    close: closeServer,
  } = await loopbackServer(opts.tls, handle, (res, e) => send(res, 500, errorBody(500, { type: 'exception', reason: e.message })));

  return {
    flavor,
    url: `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    requests,
    documents: (index) => [...(indices.get(index)?.docs.values() ?? [])],
    indices: () => [...indices.keys()],
    createIndex: (index) => void indexOf(index, true),
    put(index, docs) {
      for (const d of docs) {
        const item = indexOne(index, undefined, d, undefined, false);
        if ((item.status as number) >= 300) throw new Error(`put into ${index}: ${JSON.stringify(item.error)}`);
      }
    },
    addPipeline: (id) => void pipelines.add(id),
    failItems: (f) => void itemFailures.push(f),
    failRequests: (statuses) => void requestFailures.push(...statuses),
    loseAnswers: (n) => void (answersToLose += n),
    openScrolls: () => [...scrolls.values()].filter((s) => performance.now() <= s.expiresAt).length,
    restart,
    close: closeServer,
  };
}

// ---- conformance fixtures ----------------------------------------------------------------------

export const USER = 'svc';
export const PASSWORD = 'right-secret';

/** Reads what a sink wrote into index `channel` (the peer is in this process: no polling needed). */
const collector = (peer: SearchPeer, index: string): Collector => ({
  records: () => peer.documents(index).map((d) => d._source),
  close: async () => {},
});

function fixture(flavor: Flavor): PeerFixture {
  return {
    type: flavor,
    badConfig:
      flavor === 'elasticsearch'
        ? { role: 'source', set: { scroll: 'two minutes' }, path: 'scroll' }
        : { role: 'sink', set: { chunk_size: 0 }, path: 'chunk_size' },
    async start(): Promise<Peer> {
      const peer = await startSearchPeer({ flavor, users: { [USER]: PASSWORD } });
      const base = { type: flavor, hosts: [peer.url], username: USER, password: PASSWORD };
      return {
        ...(flavor === 'elasticsearch'
          ? {
              source: {
                config: (index: string) => ({ ...base, index, batch_size: 100 }),
                prepare: async (index: string) => peer.createIndex(index),
                publish: async (index: string, bodies: Buffer[]) =>
                  peer.put(
                    index,
                    bodies.map((b) => JSON.parse(b.toString('utf8')) as Rec),
                  ),
              },
            }
          : {}),
        sink: {
          config: (index) => ({ ...base, [flavor === 'elasticsearch' ? 'index_template' : 'index']: index }),
          collect: async (index) => collector(peer, index),
        },
        wrongPort: (cfg) => ({ ...cfg, hosts: ['http://127.0.0.1:1'] }),
        wrongCredentials: (cfg) => ({ ...cfg, password: 'wrong-secret' }),
        // The listener goes away (every open connection cut) and comes back on the same port.
        disrupt: () => peer.restart(300),
        stop: () => peer.close(),
      };
    },
  };
}

export const elasticsearchPeer = fixture('elasticsearch');
export const opensearchPeer = fixture('opensearch');
