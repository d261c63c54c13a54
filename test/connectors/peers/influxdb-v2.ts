// A wire-level test peer for the InfluxDB v2 API (no InfluxDB 2.x runs here: Debian ships 1.6.7,
// which has no /api/v2 and no Flux). A node:http server, run as a child process of the test so that
// disrupt() kills it by PID and starts it again on the same port; what it accepted is kept in a file
// and read back at start, as a real server keeps what it acknowledged.
//
// What it checks as InfluxDB 2.x does (answers in its JSON error shape `{"code", "message"}`):
// - every request but /ping and /health: `Authorization: Token <token>` (401 unauthorized);
// - POST /api/v2/write: precision (ns, us, ms, s), bucket and org (or orgID) given and existing
//   (400 / 404), an empty body (400 "writing requires points"), line protocol syntax (measurement,
//   tag and field escaping, quoted strings, integer `i`, unsigned `u`, float and boolean values,
//   an integer timestamp): a line that does not parse refuses the whole batch with 400 `invalid`
//   and `unable to parse '<line>': <reason>`; a field whose type differs from the type already
//   stored (or earlier in the batch) drops that point, the others are written, and the answer is
//   422 `unprocessable entity`, `failure writing points to database: partial write: field type
//   conflict: ... dropped=N`; a field named `time` is refused the same way. Points of one series at
//   one time overwrite each other; a point without a timestamp gets the server time at the precision.
// - POST /api/v2/query: org, the query in a JSON body `{query, type: "flux"}` or as
//   `application/vnd.flux`; answers annotated CSV (#datatype, #group, #default, CRLF line ends, a
//   new annotation block when the schema changes). It runs only these Flux forms:
//   `from(bucket: "b") |> range(start: <int seconds | -duration | RFC 3339>[, stop: ...])`, then any
//   of `filter(fn: (r) => r.<column> == "<value>")`, `pivot(rowKey: ["_time"], columnKey:
//   ["_field"], valueColumn: "_value")` and `limit(n: N)`; and `buckets()` with `limit`. Anything
//   else is refused with 400 `invalid` ("compilation failed: ..."), as an unknown identifier is; an
//   unbounded `from` and an unknown bucket are refused with the server's messages.
// A test control endpoint (POST /svc-peer/fail-writes?n=&status=) makes the next writes fail with a
// 5xx or 429, as an overloaded server does.
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { InfluxDB, Point } from '@influxdata/influxdb-client';
import { freePort } from '../../helpers/net.js';
import type { Collector, Peer, PeerFixture, Rec } from '../conformance.js';
import { pollingCollector } from './polling.js';
import { peerProcess } from './process.js';
import { pace } from '../../helpers/wait.js';

export const PEER_VERSION = 'v2.7.4';

export interface PeerOptions {
  port: number;
  token: string;
  org: string;
  orgID: string;
  buckets: string[];
  dataFile: string;
}

type FieldType = 'float' | 'integer' | 'unsigned' | 'string' | 'boolean';
type FieldValue = number | bigint | string | boolean;

interface StoredPoint {
  bucket: string;
  measurement: string;
  tags: Record<string, string>;
  fields: Record<string, { type: FieldType; value: FieldValue }>;
  /** Nanoseconds since the epoch. */
  time: bigint;
}

// ---- line protocol -------------------------------------------------------------------------------

class ParseError extends Error {}

const PRECISION_NS: Record<string, bigint> = { ns: 1n, us: 1_000n, ms: 1_000_000n, s: 1_000_000_000n };
const MIN_NS = -9_223_372_036_854_775_806n;
const MAX_NS = 9_223_372_036_854_775_806n;

/** Splits a body into lines; a newline inside a quoted field value is part of its line. */
function splitLines(body: string): string[] {
  const out: string[] = [];
  let start = 0;
  let section = 0; // 0: measurement and tags, 1: fields, 2: timestamp
  let quoted = false;
  for (let i = 0; i < body.length; i++) {
    const ch = body[i];
    if (ch === '\\' && i + 1 < body.length && body[i + 1] !== '\n') {
      i++;
      continue;
    }
    if (section === 1 && ch === '"') quoted = !quoted;
    else if (!quoted && ch === ' ' && section < 2) section++;
    else if (!quoted && ch === '\n') {
      out.push(body.slice(start, i));
      start = i + 1;
      section = 0;
    }
  }
  out.push(body.slice(start));
  return out;
}

/** Splits at unescaped `sep` outside quotes. */
function splitUnescaped(s: string, sep: string, quotes = false): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if (ch === '\\' && i + 1 < s.length) {
      cur += ch + s[i + 1];
      i++;
      continue;
    }
    if (quotes && ch === '"') quoted = !quoted;
    if (!quoted && ch === sep) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  if (quoted) throw new ParseError('unbalanced quotes');
  return out;
}

/** Index of the first unescaped `ch` outside quotes (quotes only counted when asked). */
function indexUnescaped(s: string, ch: string, from = 0, quotes = false): number {
  let quoted = false;
  for (let i = from; i < s.length; i++) {
    if (s[i] === '\\') {
      i++;
      continue;
    }
    if (quotes && s[i] === '"') quoted = !quoted;
    if (!quoted && s[i] === ch) return i;
  }
  return -1;
}

const unescapeKey = (s: string) => s.replace(/\\([,= ])/g, '$1');
const unescapeMeasurement = (s: string) => s.replace(/\\([, ])/g, '$1');

function parseValue(raw: string): { type: FieldType; value: FieldValue } {
  if (raw === '') throw new ParseError('missing field value');
  if (raw.startsWith('"')) {
    if (raw.length < 2 || !raw.endsWith('"') || (raw.endsWith('\\"') && !raw.endsWith('\\\\"'))) throw new ParseError('unbalanced quotes');
    return { type: 'string', value: raw.slice(1, -1).replace(/\\(["\\])/g, '$1') };
  }
  if (/^(t|T|true|True|TRUE)$/.test(raw)) return { type: 'boolean', value: true };
  if (/^(f|F|false|False|FALSE)$/.test(raw)) return { type: 'boolean', value: false };
  if (/^-?\d+i$/.test(raw)) {
    const v = BigInt(raw.slice(0, -1));
    if (v < -(2n ** 63n) || v > 2n ** 63n - 1n)
      throw new ParseError(`unable to parse integer ${raw.slice(0, -1)}: strconv.ParseInt: parsing "${raw.slice(0, -1)}": value out of range`);
    return { type: 'integer', value: v };
  }
  if (/^\d+u$/.test(raw)) {
    const v = BigInt(raw.slice(0, -1));
    if (v > 2n ** 64n - 1n) throw new ParseError(`unable to parse unsigned ${raw.slice(0, -1)}: value out of range`);
    return { type: 'unsigned', value: v };
  }
  if (/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw)) return { type: 'float', value: Number(raw) };
  if (/^[-+]?[\d.]/.test(raw)) throw new ParseError('invalid number');
  if (/^[tTfF]/.test(raw)) throw new ParseError('invalid boolean');
  throw new ParseError('invalid field format');
}

function parseLine(line: string, bucket: string, precision: string, now: bigint): StoredPoint {
  const keyEnd = indexUnescaped(line, ' ');
  if (keyEnd < 0) throw new ParseError('missing fields');
  const keyPart = line.slice(0, keyEnd);
  const rest = line.slice(keyEnd + 1);
  const [m, ...tagParts] = splitUnescaped(keyPart, ',');
  if (!m) throw new ParseError('missing measurement');
  const tags: Record<string, string> = {};
  for (const t of tagParts) {
    const eq = indexUnescaped(t, '=');
    if (eq < 0) throw new ParseError('missing tag value');
    const k = t.slice(0, eq);
    const v = t.slice(eq + 1);
    if (!k) throw new ParseError('missing tag key');
    if (!v) throw new ParseError('missing tag value');
    if (indexUnescaped(v, '=') >= 0) throw new ParseError('invalid tag format');
    tags[unescapeKey(k)] = unescapeKey(v);
  }
  const fieldsEnd = indexUnescaped(rest, ' ', 0, true);
  const fieldPart = fieldsEnd < 0 ? rest : rest.slice(0, fieldsEnd);
  const tsPart = fieldsEnd < 0 ? '' : rest.slice(fieldsEnd + 1).trim();
  if (!fieldPart) throw new ParseError('missing fields');
  const fields: StoredPoint['fields'] = {};
  for (const f of splitUnescaped(fieldPart, ',', true)) {
    const eq = indexUnescaped(f, '=');
    if (eq <= 0) throw new ParseError(eq === 0 ? 'missing field key' : 'missing field value');
    fields[unescapeKey(f.slice(0, eq))] = parseValue(f.slice(eq + 1));
  }
  let time: bigint;
  if (tsPart === '') time = (now / PRECISION_NS[precision]!) * PRECISION_NS[precision]!;
  else {
    if (!/^-?\d+$/.test(tsPart)) throw new ParseError('bad timestamp');
    time = BigInt(tsPart) * PRECISION_NS[precision]!;
    if (time < MIN_NS || time > MAX_NS) throw new ParseError(`time outside range ${MIN_NS} - ${MAX_NS}`);
  }
  return { bucket, measurement: unescapeMeasurement(m), tags, fields, time };
}

// ---- the store -----------------------------------------------------------------------------------

const seriesKey = (p: Pick<StoredPoint, 'bucket' | 'measurement' | 'tags'>) =>
  JSON.stringify([p.bucket, p.measurement, Object.entries(p.tags).sort(([a], [b]) => (a < b ? -1 : 1))]);

class Store {
  /** series key + time -> point (fields merged: a later write of a field overwrites it). */
  readonly points = new Map<string, StoredPoint>();
  /** bucket, measurement, field -> type. */
  readonly types = new Map<string, FieldType>();

  constructor(private readonly file: string) {
    if (!existsSync(file)) return;
    for (const line of readFileSync(file, 'utf8').split('\n')) if (line) this.put(revive(JSON.parse(line)), false);
  }

  typeKey = (p: StoredPoint, field: string) => JSON.stringify([p.bucket, p.measurement, field]);

  put(p: StoredPoint, persist = true) {
    const key = `${seriesKey(p)}@${p.time}`;
    const old = this.points.get(key);
    this.points.set(key, old ? { ...old, fields: { ...old.fields, ...p.fields } } : p);
    for (const [f, v] of Object.entries(p.fields)) this.types.set(this.typeKey(p, f), v.type);
    if (persist) this.unsaved.push(JSON.stringify(p, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)));
  }

  private unsaved: string[] = [];

  /** Makes what put() took durable (before the write is answered). */
  save() {
    if (this.unsaved.length) appendFileSync(this.file, this.unsaved.join('\n') + '\n');
    this.unsaved = [];
  }
}

function revive(o: StoredPoint): StoredPoint {
  const big = (v: unknown) => (typeof v === 'string' && /^-?\d+n$/.test(v) ? BigInt(v.slice(0, -1)) : v);
  return {
    ...o,
    time: big(o.time) as bigint,
    fields: Object.fromEntries(Object.entries(o.fields).map(([k, f]) => [k, { type: f.type, value: big(f.value) as FieldValue }])),
  };
}

// ---- Flux (the forms the tests send) ----------------------------------------------------------------

interface Plan {
  kind: 'from' | 'buckets';
  bucket?: string;
  start?: bigint;
  stop?: bigint;
  filters: { column: string; value: string }[];
  pivot: boolean;
  limit?: number;
}

class FluxError extends Error {
  constructor(
    message: string,
    readonly status = 400,
    readonly code = 'invalid',
  ) {
    super(message);
  }
}

const STR = '"((?:[^"\\\\]|\\\\.)*)"';

function timeArg(s: string, now: bigint): bigint {
  s = s.trim();
  if (/^-?\d+$/.test(s)) return BigInt(s) * 1_000_000_000n;
  const d = /^-(\d+)(ns|us|ms|s|m|h|d|w)$/.exec(s);
  if (d) {
    const unit: Record<string, bigint> = {
      ns: 1n,
      us: 1_000n,
      ms: 1_000_000n,
      s: 1_000_000_000n,
      m: 60_000_000_000n,
      h: 3_600_000_000_000n,
      d: 86_400_000_000_000n,
      w: 604_800_000_000_000n,
    };
    return now - BigInt(d[1]!) * unit[d[2]!]!;
  }
  const t = Date.parse(s);
  if (Number.isFinite(t)) return BigInt(t) * 1_000_000n;
  throw new FluxError(`compilation failed: error in range: invalid time ${s}`);
}

function compile(query: string, now: bigint): Plan {
  const stages = query
    .trim()
    .split(/\s*\|>\s*/)
    .map((s) => s.trim());
  const refuse = (stage: string) => {
    const at = query.indexOf(stage);
    const col = at < 0 ? 1 : at + 1;
    return new FluxError(`compilation failed: error at @1:${col}-1:${col + stage.length}: unsupported by the svc test peer: ${stage}`);
  };
  const plan: Plan = { kind: 'from', filters: [], pivot: false };
  const first = stages[0] ?? '';
  const from = new RegExp(`^from\\(\\s*bucket\\s*:\\s*${STR}\\s*\\)$`).exec(first);
  if (from) plan.bucket = from[1]!.replace(/\\(.)/g, '$1');
  else if (/^buckets\(\s*\)$/.test(first)) plan.kind = 'buckets';
  else throw refuse(first);
  let ranged = false;
  for (const stage of stages.slice(1)) {
    let m: RegExpExecArray | null;
    if (plan.kind === 'from' && (m = /^range\(\s*start\s*:\s*([^,)]+?)\s*(?:,\s*stop\s*:\s*([^,)]+?)\s*)?\)$/.exec(stage))) {
      plan.start = timeArg(m[1]!, now);
      plan.stop = m[2] ? timeArg(m[2], now) : now;
      ranged = true;
    } else if (
      plan.kind === 'from' &&
      (m = new RegExp(`^filter\\(\\s*fn\\s*:\\s*\\(\\s*r\\s*\\)\\s*=>\\s*r(?:\\.(\\w+)|\\[\\s*${STR}\\s*\\])\\s*==\\s*${STR}\\s*\\)$`).exec(stage))
    ) {
      plan.filters.push({ column: (m[1] ?? m[2]!).replace(/\\(.)/g, '$1'), value: m[3]!.replace(/\\(.)/g, '$1') });
    } else if (
      plan.kind === 'from' &&
      /^pivot\(\s*rowKey\s*:\s*\[\s*"_time"\s*\]\s*,\s*columnKey\s*:\s*\[\s*"_field"\s*\]\s*,\s*valueColumn\s*:\s*"_value"\s*\)$/.test(stage)
    ) {
      plan.pivot = true;
    } else if ((m = /^limit\(\s*n\s*:\s*(\d+)\s*\)$/.exec(stage))) plan.limit = Number(m[1]);
    else throw refuse(stage);
  }
  if (plan.kind === 'from' && !ranged) throw new FluxError(`cannot submit unbounded read to "${plan.bucket}"; try bounding 'from' with a call to 'range'`);
  return plan;
}

const FLUX_TYPE: Record<FieldType, string> = { float: 'double', integer: 'long', unsigned: 'unsignedLong', string: 'string', boolean: 'boolean' };

/** Go's RFC3339Nano: fraction without trailing zeros. */
function rfc3339(ns: bigint): string {
  const ms = ns / 1_000_000n - (ns < 0n && ns % 1_000_000n !== 0n ? 1n : 0n);
  const base = new Date(Number(ms)).toISOString().slice(0, 19);
  const frac = (((ns % 1_000_000_000n) + 1_000_000_000n) % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${base}${frac ? '.' + frac : ''}Z`;
}

const csvCell = (v: string) => (/[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
const cellOf = (v: FieldValue | undefined) => (v === undefined ? '' : String(v));

interface Column {
  label: string;
  type: string;
  group: boolean;
}

/** Annotated CSV of tables (columns, rows), a new annotation block when the schema changes. */
function annotatedCsv(tables: { columns: Column[]; rows: string[][] }[]): string {
  let out = '';
  let schema = '';
  tables.forEach((t, n) => {
    const s = JSON.stringify(t.columns);
    if (s !== schema) {
      if (schema) out += '\r\n';
      schema = s;
      out += `#datatype,string,long,${t.columns.map((c) => c.type).join(',')}\r\n`;
      out += `#group,false,false,${t.columns.map((c) => String(c.group)).join(',')}\r\n`;
      out += `#default,_result,,${t.columns.map(() => '').join(',')}\r\n`;
      out += `,result,table,${t.columns.map((c) => csvCell(c.label)).join(',')}\r\n`;
    }
    for (const r of t.rows) out += `,,${n},${r.map(csvCell).join(',')}\r\n`;
  });
  return out + '\r\n';
}

function run(plan: Plan, store: Store, o: PeerOptions): string {
  if (plan.kind === 'buckets') {
    const columns: Column[] = [
      { label: 'name', type: 'string', group: false },
      { label: 'id', type: 'string', group: false },
      { label: 'organizationID', type: 'string', group: false },
      { label: 'retentionPeriod', type: 'long', group: false },
    ];
    const rows = o.buckets.slice(0, plan.limit ?? Infinity).map((b, i) => [b, `${(i + 1).toString(16).padStart(16, '0')}`, o.orgID, '0']);
    return annotatedCsv([{ columns, rows }]);
  }
  if (!o.buckets.includes(plan.bucket!)) throw new FluxError(`failed to initialize execute state: could not find bucket "${plan.bucket}"`, 404, 'not found');
  const start = rfc3339(plan.start!);
  const stop = rfc3339(plan.stop!);
  // One table per series and field, rows in time order.
  const tables = new Map<string, { measurement: string; tags: Record<string, string>; field: string; type: FieldType; rows: [bigint, FieldValue][] }>();
  for (const p of store.points.values()) {
    if (p.bucket !== plan.bucket || p.time < plan.start! || p.time >= plan.stop!) continue;
    for (const [field, v] of Object.entries(p.fields)) {
      const cols: Record<string, string> = { _measurement: p.measurement, _field: field, ...p.tags };
      if (!plan.filters.every((f) => cols[f.column] === f.value)) continue;
      const key = JSON.stringify([seriesKey(p), field, v.type]);
      const t = tables.get(key) ?? { measurement: p.measurement, tags: p.tags, field, type: v.type, rows: [] };
      t.rows.push([p.time, v.value]);
      tables.set(key, t);
    }
  }
  const sorted = [...tables.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([, t]) => (t.rows.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)), t));
  const out: { columns: Column[]; rows: string[][] }[] = [];
  const times: Column[] = [
    { label: '_start', type: 'dateTime:RFC3339', group: true },
    { label: '_stop', type: 'dateTime:RFC3339', group: true },
    { label: '_time', type: 'dateTime:RFC3339', group: false },
  ];
  if (!plan.pivot) {
    for (const t of sorted) {
      const tagKeys = Object.keys(t.tags).sort();
      const columns = [
        ...times,
        { label: '_value', type: FLUX_TYPE[t.type], group: false },
        { label: '_field', type: 'string', group: true },
        { label: '_measurement', type: 'string', group: true },
        ...tagKeys.map((k) => ({ label: k, type: 'string', group: true })),
      ];
      const rows = t.rows
        .slice(0, plan.limit ?? Infinity)
        .map(([time, v]) => [start, stop, rfc3339(time), cellOf(v), t.field, t.measurement, ...tagKeys.map((k) => t.tags[k]!)]);
      out.push({ columns, rows });
    }
    return annotatedCsv(out);
  }
  // pivot: one table per series, a row per time, a column per field.
  const series = new Map<
    string,
    { measurement: string; tags: Record<string, string>; fields: Map<string, FieldType>; rows: Map<bigint, Map<string, FieldValue>> }
  >();
  for (const t of sorted) {
    const key = JSON.stringify([t.measurement, Object.entries(t.tags).sort(([a], [b]) => (a < b ? -1 : 1))]);
    const s = series.get(key) ?? { measurement: t.measurement, tags: t.tags, fields: new Map(), rows: new Map() };
    s.fields.set(t.field, t.type);
    for (const [time, v] of t.rows) {
      const row = s.rows.get(time) ?? new Map<string, FieldValue>();
      row.set(t.field, v);
      s.rows.set(time, row);
    }
    series.set(key, s);
  }
  for (const s of series.values()) {
    const tagKeys = Object.keys(s.tags).sort();
    const fieldKeys = [...s.fields.keys()].sort();
    const columns = [
      ...times,
      { label: '_measurement', type: 'string', group: true },
      ...tagKeys.map((k) => ({ label: k, type: 'string', group: true })),
      ...fieldKeys.map((f) => ({ label: f, type: FLUX_TYPE[s.fields.get(f)!], group: false })),
    ];
    const stamps = [...s.rows.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).slice(0, plan.limit ?? Infinity);
    const rows = stamps.map((time) => [
      start,
      stop,
      rfc3339(time),
      s.measurement,
      ...tagKeys.map((k) => s.tags[k]!),
      ...fieldKeys.map((f) => cellOf(s.rows.get(time)!.get(f))),
    ]);
    out.push({ columns, rows });
  }
  return annotatedCsv(out);
}

// ---- HTTP ----------------------------------------------------------------------------------------

const nowNs = () => BigInt(Date.now()) * 1_000_000n;

function send(res: ServerResponse, status: number, body?: { code: string; message: string } | string, contentType = 'application/json; charset=utf-8') {
  const headers: Record<string, string> = { 'X-Influxdb-Build': 'OSS', 'X-Influxdb-Version': PEER_VERSION };
  if (body === undefined) {
    res.writeHead(status, headers).end();
    return;
  }
  res.writeHead(status, { ...headers, 'Content-Type': contentType }).end(typeof body === 'string' ? body : JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  const raw = Buffer.concat(parts);
  return req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
}

/** The organization a request names, or an answer already sent. */
function orgOf(url: URL, res: ServerResponse, o: PeerOptions): boolean {
  const org = url.searchParams.get('org');
  const orgID = url.searchParams.get('orgID');
  if (!org && !orgID) {
    send(res, 400, { code: 'invalid', message: 'Please provide either orgID or org' });
    return false;
  }
  if (orgID ? orgID !== o.orgID : org !== o.org && org !== o.orgID) {
    send(res, 404, { code: 'not found', message: orgID ? `organization id "${orgID}" not found` : `organization name "${org}" not found` });
    return false;
  }
  return true;
}

function write(url: URL, body: string, res: ServerResponse, store: Store, o: PeerOptions) {
  const precision = url.searchParams.get('precision') || 'ns';
  if (!(precision in PRECISION_NS)) return send(res, 400, { code: 'invalid', message: 'invalid precision; valid precision units are ns, us, ms, and s' });
  const bucket = url.searchParams.get('bucket');
  if (!bucket) return send(res, 404, { code: 'not found', message: 'bucket not found' });
  if (!orgOf(url, res, o)) return;
  if (!o.buckets.includes(bucket)) return send(res, 404, { code: 'not found', message: `bucket "${bucket}" not found` });
  if (body.length === 0) return send(res, 400, { code: 'invalid', message: 'writing requires points' });
  const now = nowNs();
  const points: StoredPoint[] = [];
  const failed: string[] = [];
  for (const line of splitLines(body)) {
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    try {
      points.push(parseLine(line, bucket, precision, now));
    } catch (e) {
      if (!(e instanceof ParseError)) throw e;
      failed.push(`unable to parse '${line}': ${e.message}`);
    }
  }
  // 2.x: a line that does not parse refuses the batch whole.
  if (failed.length) return send(res, 400, { code: 'invalid', message: failed.join('\n') });
  let dropped = 0;
  let first: string | undefined;
  const batchTypes = new Map<string, FieldType>();
  for (const p of points) {
    let reason: string | undefined;
    for (const [f, v] of Object.entries(p.fields)) {
      const key = store.typeKey(p, f);
      const known = batchTypes.get(key) ?? store.types.get(key);
      if (f === 'time') reason ??= `invalid field name: input field "${f}" on measurement "${p.measurement}" is invalid`;
      else if (known && known !== v.type)
        reason ??= `field type conflict: input field "${f}" on measurement "${p.measurement}" is type ${v.type}, already exists as type ${known}`;
    }
    if (reason) {
      dropped++;
      first ??= reason;
      continue;
    }
    for (const [f, v] of Object.entries(p.fields)) batchTypes.set(store.typeKey(p, f), v.type);
    store.put(p);
  }
  store.save();
  if (dropped)
    return send(res, 422, { code: 'unprocessable entity', message: `failure writing points to database: partial write: ${first} dropped=${dropped}` });
  send(res, 204);
}

function query(url: URL, req: IncomingMessage, body: string, res: ServerResponse, store: Store, o: PeerOptions) {
  if (!orgOf(url, res, o)) return;
  const type = String(req.headers['content-type'] ?? '')
    .split(';')[0]!
    .trim();
  let flux: string;
  if (type === 'application/vnd.flux') flux = body;
  else if (type === 'application/json') {
    let j: { query?: unknown; type?: unknown };
    try {
      j = JSON.parse(body) as typeof j;
    } catch (e) {
      return send(res, 400, { code: 'invalid', message: `failed to decode request body: ${(e as Error).message}` });
    }
    if (j.type !== undefined && j.type !== 'flux') return send(res, 400, { code: 'invalid', message: `unknown query type: ${String(j.type)}` });
    if (typeof j.query !== 'string' || j.query === '') return send(res, 400, { code: 'invalid', message: 'query cannot be empty' });
    flux = j.query;
  } else return send(res, 400, { code: 'invalid', message: `unsupported content type "${type}"` });
  try {
    send(res, 200, run(compile(flux, nowNs()), store, o), 'text/csv; charset=utf-8');
  } catch (e) {
    if (!(e instanceof FluxError)) throw e;
    send(res, e.status, { code: e.code, message: e.message });
  }
}

/** Runs the peer in this process (the child process entry point below). */
export function servePeer(o: PeerOptions) {
  const store = new Store(o.dataFile);
  let failing = { n: 0, status: 503 };
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://peer');
    void (async () => {
      const body = (await readBody(req)).toString('utf8');
      if (url.pathname === '/ping') return send(res, 204);
      // Test control, not part of InfluxDB's API: the next n writes are answered with `status`.
      if (url.pathname === '/svc-peer/fail-writes') {
        failing = { n: Number(url.searchParams.get('n') ?? 1), status: Number(url.searchParams.get('status') ?? 503) };
        return send(res, 204);
      }
      if (url.pathname === '/health')
        return send(res, 200, JSON.stringify({ name: 'influxdb', message: 'ready for queries and writes', status: 'pass', checks: [], version: PEER_VERSION }));
      const routes: Record<string, () => void> = {
        '/api/v2/write': () => {
          if (failing.n > 0) {
            failing.n--;
            return send(res, failing.status, {
              code: failing.status === 429 ? 'too many requests' : 'unavailable',
              message: 'the peer was told to refuse this write',
            });
          }
          write(url, body, res, store, o);
        },
        '/api/v2/query': () => query(url, req, body, res, store, o),
      };
      const route = routes[url.pathname];
      if (!route) return send(res, 404, { code: 'not found', message: 'path not found' });
      if (req.method !== 'POST') return send(res, 405, { code: 'method not allowed', message: 'method not allowed' });
      if (req.headers.authorization !== `Token ${o.token}`) return send(res, 401, { code: 'unauthorized', message: 'unauthorized access' });
      route();
    })().catch((e: Error) => send(res, 500, { code: 'internal error', message: e.message }));
  });
  server.listen(o.port, '127.0.0.1');
  return server;
}

// ---- the fixture side ------------------------------------------------------------------------------

export interface InfluxV2Peer {
  url: string;
  port: number;
  token: string;
  org: string;
  pid(): number;
  /** The next `n` writes are answered with `status` (503, 429...). */
  failWrites(n: number, status: number): Promise<void>;
  /** SIGKILL, `downMs` without a server, then the same port and data. */
  restart(downMs?: number): Promise<void>;
  stop(): Promise<void>;
}

const SELF = fileURLToPath(import.meta.url);

/** Starts the peer as a child process on a free loopback port. */
export async function influxV2Peer(opts: { token?: string; org?: string; buckets?: string[] } = {}): Promise<InfluxV2Peer> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-influx2-'));
  const o: PeerOptions = {
    port: await freePort(),
    token: opts.token ?? 'peer-token-secret',
    org: opts.org ?? 'svc',
    orgID: '0123456789abcdef',
    buckets: opts.buckets ?? ['svc'],
    dataFile: join(dir, 'points.jsonl'),
  };
  const proc = peerProcess(process.execPath, ['--import', 'tsx', SELF, JSON.stringify(o)], o.port);
  await proc.start();
  return {
    url: `http://127.0.0.1:${o.port}`,
    port: o.port,
    token: o.token,
    org: o.org,
    pid: proc.pid,
    async failWrites(n, status) {
      await fetch(`http://127.0.0.1:${o.port}/svc-peer/fail-writes?n=${n}&status=${status}`, { method: 'POST' });
    },
    async restart(downMs = 0) {
      await proc.kill();
      await pace(downMs); // the peer is down this long
      await proc.start();
    },
    async stop() {
      await proc.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) servePeer(JSON.parse(process.argv[2]!) as PeerOptions);

// ---- the conformance fixture -------------------------------------------------------------------------

/** Records of `measurement` as the peer's query API answers them (pivoted: one per time and series). */
export async function queryRecords(peer: Pick<InfluxV2Peer, 'url' | 'token' | 'org'>, measurement: string, bucket = 'svc'): Promise<Rec[]> {
  const api = new InfluxDB({ url: peer.url, token: peer.token }).getQueryApi(peer.org);
  const flux = `from(bucket: ${JSON.stringify(bucket)}) |> range(start: 0) |> filter(fn: (r) => r._measurement == ${JSON.stringify(measurement)}) |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")`;
  return api.collectRows<Rec>(flux);
}

/** Reads a measurement every 100 ms until closed; the sink writes `seq` as a tag, read back as a number. */
function poll(peer: InfluxV2Peer, measurement: string): Collector {
  return pollingCollector(() => queryRecords(peer, measurement).then((rows) => rows.map((r) => ({ ...r, seq: Number(r.seq) }))));
}

export const influxdbFixture: PeerFixture = {
  type: 'influxdb',
  badConfig: { role: 'sink', set: { precision: 'm' }, path: 'precision' },
  async start(): Promise<Peer> {
    const peer = await influxV2Peer();
    const base = { type: 'influxdb', url: peer.url, token: peer.token, org: peer.org };
    const writer = new InfluxDB({ url: peer.url, token: peer.token });
    return {
      source: {
        config: (ch) => ({
          ...base,
          query: `from(bucket: "svc") |> range(start: 0) |> filter(fn: (r) => r._measurement == "${ch}") |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")`,
        }),
        // One point per body, its time the sequence number in seconds.
        async publish(ch, bodies) {
          const lines = bodies.map((b) => {
            const r = JSON.parse(b.toString()) as { seq: number; pad: string };
            return new Point(ch)
              .intField('seq', r.seq)
              .stringField('pad', r.pad)
              .timestamp(String(r.seq + 1))
              .toLineProtocol()!;
          });
          await writer.transport.request(`/api/v2/write?org=${peer.org}&bucket=svc&precision=s`, lines.join('\n'), {
            method: 'POST',
            headers: { 'content-type': 'text/plain' },
          });
        },
      },
      sink: {
        // seq as a tag: each record its own series, so points stamped in the same second do not overwrite each other.
        config: (ch) => ({ ...base, bucket: 'svc', measurement: ch, tag_fields: ['seq'] }),
        collect: async (ch) => poll(peer, ch),
      },
      wrongPort: (cfg) => ({ ...cfg, url: 'http://127.0.0.1:1' }),
      wrongCredentials: (cfg) => ({ ...cfg, token: 'wrong-token' }),
      // Down for a while: HTTP clients reconnect between requests, so a restart only shows when a write meets it.
      disrupt: () => peer.restart(1500),
      stop: () => peer.stop(),
    };
  },
};
