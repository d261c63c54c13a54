// What the clickhouse source and sink share: the server fields, the client (@clickhouse/client
// 1.23, which speaks ClickHouse's HTTP interface: no maintained Node client speaks the native TCP
// protocol that doc 3's default port 9000 belongs to), error wording, and query parameters with a
// fallback for servers older than 19.6, which refuse `{name:Type}` placeholders.
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { Type } from '@sinclair/typebox';
import type { ClickHouseClient, DataFormat, ResultSet } from '@clickhouse/client';
import { errorMessage } from '../../../core/errors.js';
import { once } from '../../connector-runtime/lazy.js';
import type { LintIssue } from '../../types.js';

/** ClickHouse's native-protocol ports (plain, TLS) and the HTTP ports they stand for here. */
export const NATIVE_PORTS: Record<number, true> = { 9000: true, 9440: true };
export const HTTP_DEFAULT = 8123;
export const HTTPS_DEFAULT = 8443;

export const serverFields = {
  host: Type.String({ minLength: 1, default: 'localhost', description: 'ClickHouse host name or address.' }),
  port: Type.Integer({
    minimum: 1,
    maximum: 65535,
    default: 9000,
    description:
      "ClickHouse port as doc 3 names it. The connector speaks ClickHouse's HTTP interface, so the native-protocol ports 9000 and 9440 stand for the HTTP defaults: 8123 (8443 with secure). Any other value is taken as the HTTP(S) port. http_port overrides it.",
  }),
  http_port: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 65535,
      description:
        'The HTTP(S) interface port, used as it is (server setting http_port or https_port). Set it when that port is not 8123 / 8443. Our extension of doc 3.',
    }),
  ),
  database: Type.String({ minLength: 1, default: 'default', description: 'Database of unqualified table names.' }),
  username: Type.String({ minLength: 1, default: 'default', description: 'ClickHouse user.' }),
  password: Type.String({ writeOnly: true, default: '', description: "The user's password (empty: none)." }),
  secure: Type.Boolean({ default: false, description: 'HTTPS, with the server certificate checked against the system CAs.' }),
  connect_timeout: Type.Number({ exclusiveMinimum: 0, default: 10, description: 'Seconds to establish a connection (TCP and TLS) before the attempt fails.' }),
  send_receive_timeout: Type.Number({
    exclusiveMinimum: 0,
    default: 300,
    description: 'Seconds a request may stay silent (nothing sent or received) before it fails: a long query that streams rows is not cut, a stalled one is.',
  }),
};

export interface ServerConfig {
  host: string;
  port: number;
  http_port?: number;
  database: string;
  username: string;
  password: string;
  secure: boolean;
  connect_timeout: number;
  send_receive_timeout: number;
}

/** The HTTP(S) port the connector talks to. */
export function httpPort(c: Pick<ServerConfig, 'port' | 'http_port' | 'secure'>): number {
  if (c.http_port !== undefined) return c.http_port;
  if (NATIVE_PORTS[c.port]) return c.secure ? HTTPS_DEFAULT : HTTP_DEFAULT;
  return c.port;
}

/** `http://host:8123`: where requests go (no credentials, so it can be quoted). */
export function baseUrl(c: ServerConfig): string {
  const host = c.host.includes(':') && !c.host.startsWith('[') ? `[${c.host}]` : c.host;
  return `${c.secure ? 'https' : 'http'}://${host}:${httpPort(c)}`;
}

export function lintServer(c: ServerConfig): LintIssue[] {
  const out: LintIssue[] = [];
  if (c.port === 9440 && !c.secure && c.http_port === undefined)
    out.push({ path: 'secure', message: "port 9440 is ClickHouse's TLS port: set secure: true (the connector then uses HTTPS on 8443)" });
  if (c.http_port !== undefined && c.port !== 9000) out.push({ path: 'port', message: 'port is not used when http_port is set: remove one of them' });
  return out;
}

/**
 * An agent that fails a connection not established within connect_timeout (the client's own
 * request_timeout only measures silence, which would leave an unreachable host hanging for
 * send_receive_timeout). Keep-alive as the client would set it.
 */
function agentFor(c: ServerConfig): http.Agent {
  const ms = c.connect_timeout * 1000;
  const agent = c.secure ? new https.Agent({ keepAlive: true, maxSockets: 10 }) : new http.Agent({ keepAlive: true, maxSockets: 10 });
  const a = agent as unknown as { createConnection(o: unknown, cb: unknown): Socket };
  const create = a.createConnection.bind(agent);
  a.createConnection = (opts, cb) => {
    const s = create(opts, cb);
    const what = c.secure
      ? `no TLS connection within ${c.connect_timeout} s (connect_timeout): the host does not answer, or the port does not speak TLS`
      : `no connection within ${c.connect_timeout} s (connect_timeout)`;
    const timer = setTimeout(() => s.destroy(Object.assign(new Error(what), { code: 'ETIMEDOUT' })), ms);
    s.once(c.secure ? 'secureConnect' : 'connect', () => clearTimeout(timer));
    s.once('close', () => clearTimeout(timer));
    return s;
  };
  return agent;
}

/** JSON with 64-bit integers (BigInt) as decimal strings, which ClickHouse parses into (U)Int64 columns. */
const stringify = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x));

const clickhouseSdk = once(() => import('@clickhouse/client'));

/** A client; no I/O until the first request. */
export async function clickhouseClient(c: ServerConfig, application: string): Promise<ClickHouseClient> {
  const { ClickHouseLogLevel, createClient } = await clickhouseSdk();
  return createClient({
    url: baseUrl(c),
    username: c.username,
    password: c.password,
    database: c.database,
    application,
    request_timeout: c.send_receive_timeout * 1000,
    http_agent: agentFor(c),
    log: { level: ClickHouseLogLevel.OFF }, // errors reach the runtime, which logs them once
    json: { parse: JSON.parse, stringify },
  });
}

// ---- errors ------------------------------------------------------------------------------------

/** Error codes that no retry changes: credentials, rights, a missing database, table or column, bad SQL. */
const PERMANENT_CODES = new Set([16, 36, 46, 47, 60, 62, 81, 164, 192, 193, 194, 195, 497, 516]);
/** Error codes of a refused login. */
const AUTH_CODES = new Set([192, 193, 194, 195, 516]);

export interface ServerAnswer {
  /** ClickHouse's error code when the server answered with one. */
  code?: number;
  /** One line, the exception text without ClickHouse's decorations. */
  text: string;
}

/** The server's exception (old `Code: N, e.displayText() = DB::Exception: ...` and new `Code: N. DB::Exception: ...` forms), else undefined. */
export function serverAnswer(e: unknown): ServerAnswer | undefined {
  const err = e as { code?: unknown; type?: unknown; message?: string };
  const msg = errorMessage(e);
  // ClickHouseError (new servers): code and type parsed by the client.
  if (typeof err.code === 'string' && /^\d+$/.test(err.code) && typeof err.type === 'string') {
    return { code: Number(err.code), text: `${msg.trim().replace(/\s+/g, ' ')} (${err.type})` };
  }
  const m = /Code: (\d+)[.,]\s*(?:e\.displayText\(\) = )?(?:DB::Exception: )?([\s\S]*?)(?:, e\.what\(\) = DB::Exception)?\s*$/.exec(msg);
  if (!m) return undefined;
  return { code: Number(m[1]), text: m[2]!.trim().replace(/\s+/g, ' ') };
}

export const isPermanent = (a: ServerAnswer) => a.code !== undefined && PERMANENT_CODES.has(a.code);
export const isAuthFailure = (a: ServerAnswer) => a.code !== undefined && AUTH_CODES.has(a.code);

/** The 1-based row a data error names (`(at row N)`), for a sink to find the record. */
export function failedRow(a: ServerAnswer): number | undefined {
  const m = /\(at row (\d+)\)/.exec(a.text);
  return m ? Number(m[1]) : undefined;
}

/** An error in words a user can act on: the server's exception, or what went wrong on the way to it. */
export function describe(e: unknown, c: ServerConfig): string {
  const target = baseUrl(c);
  const a = serverAnswer(e);
  if (a) {
    const hint = isAuthFailure(a) ? ' (check username and password)' : a.code === 81 ? ' (check database)' : '';
    return `${target}: Code ${a.code}: ${a.text}${hint}`;
  }
  const err = e as { code?: string; cause?: { code?: string } };
  const code = err.code ?? err.cause?.code;
  const msg = errorMessage(e).trim().replace(/\s+/g, ' ');
  // The native-protocol port answers HTTP with "Port N is for clickhouse-client program".
  const nativeHint = /clickhouse-client program/.test(msg)
    ? ` (the connector speaks HTTP: set http_port to the server's HTTP port, default ${c.secure ? HTTPS_DEFAULT : HTTP_DEFAULT})`
    : '';
  if (code === 'ECONNREFUSED')
    return `${target}: connection refused (nothing listens there; the connector uses ClickHouse's HTTP interface, port ${httpPort(c)})`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `${target}: host not found (${code})`;
  if (msg === 'Timeout error.') return `${target}: no answer for ${c.send_receive_timeout} s (send_receive_timeout)`;
  if (code && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|EPROTO/.test(code))
    return `${target}: TLS failed (${code}): the server certificate is not trusted, or the port does not speak TLS`;
  return `${target}: ${msg}${code && !msg.includes(code) ? ` (${code})` : ''}${nativeHint}`;
}

// ---- identifiers and query parameters --------------------------------------------------------------

/** A backquoted identifier. */
export const quoteIdent = (s: string) => '`' + s.replace(/\\/g, '\\\\').replace(/`/g, '\\`') + '`';

/** `table` or `db.table` as quoted SQL. */
export function tableRef(table: string): string {
  const dot = table.indexOf('.');
  return dot > 0 ? `${quoteIdent(table.slice(0, dot))}.${quoteIdent(table.slice(dot + 1))}` : quoteIdent(table);
}

export type ParamValue = string | number | boolean | null | (string | number | boolean | null)[];

interface Placeholder {
  name: string;
  type: string;
  start: number;
  end: number;
}

/**
 * The `{name:Type}` placeholders of a query, outside string literals, quoted identifiers and
 * comments (a `{` inside them is text).
 */
export function placeholders(sql: string): Placeholder[] {
  const out: Placeholder[] = [];
  let i = 0;
  while (i < sql.length) {
    const ch = sql[i]!;
    if (ch === "'" || ch === '"' || ch === '`') {
      i++;
      while (i < sql.length && sql[i] !== ch) i += sql[i] === '\\' ? 2 : 1;
      i++;
    } else if (ch === '-' && sql[i + 1] === '-') {
      while (i < sql.length && sql[i] !== '\n') i++;
    } else if (ch === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? sql.length : end + 2;
    } else if (ch === '{') {
      const m = /^\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([^{}]+?)\s*\}/.exec(sql.slice(i));
      if (m) {
        out.push({ name: m[1]!, type: m[2]!, start: i, end: i + m[0].length });
        i += m[0].length;
      } else i++;
    } else i++;
  }
  return out;
}

function literal(v: ParamValue): string {
  if (v === null) return 'NULL';
  if (Array.isArray(v)) return `[${v.map((x) => literal(x)).join(', ')}]`;
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : Number.isNaN(v) ? 'nan' : v > 0 ? 'inf' : '-inf';
  return `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/**
 * The query with every placeholder replaced by its value as a typed literal (`CAST('x' AS String)`;
 * an `Identifier` placeholder becomes a quoted name), for servers without query parameters.
 */
export function inlineParams(sql: string, params: Record<string, ParamValue>): string {
  let out = '';
  let at = 0;
  for (const p of placeholders(sql)) {
    if (!(p.name in params)) throw new Error(`the query uses {${p.name}:${p.type}}, but params has no '${p.name}'`);
    const v = params[p.name]!;
    out += sql.slice(at, p.start);
    if (p.type === 'Identifier') {
      if (typeof v !== 'string') throw new Error(`params.${p.name}: an Identifier must be a string`);
      out += tableRef(v);
    } else out += `CAST(${literal(v)} AS ${p.type})`;
    at = p.end;
  }
  return out + sql.slice(at);
}

/** A server that predates query parameters (ClickHouse < 19.6) takes `param_x` for an unknown setting. */
const refusesParams = (e: unknown) => {
  const a = serverAnswer(e);
  return a?.code === 115 && /param_/.test(a.text);
};

/**
 * Runs SELECT queries with parameters: sent as query parameters (the server binds and types them),
 * or, once a server refused them (older than 19.6), inlined as typed literals.
 */
export class Queries {
  private inline = false;

  constructor(private readonly client: ClickHouseClient) {}

  async select(sql: string, params: Record<string, ParamValue>, format: DataFormat, signal?: AbortSignal): Promise<ResultSet<DataFormat>> {
    const used = placeholders(sql);
    const query_params = Object.fromEntries(used.map((p) => [p.name, params[p.name]]));
    for (const p of used) if (!(p.name in params)) throw new Error(`the query uses {${p.name}:${p.type}}, but params has no '${p.name}'`);
    if (used.length > 0 && !this.inline) {
      try {
        return await this.client.query({ query: sql, format, query_params, abort_signal: signal });
      } catch (e) {
        if (!refusesParams(e)) throw e;
        this.inline = true; // remembered for the client's life: one refused attempt per run
      }
    }
    return this.client.query({ query: used.length ? inlineParams(sql, params) : sql, format, abort_signal: signal });
  }
}

/** A trailing `FORMAT x` (the connector chooses the format) or `;`. */
export const FORMAT_CLAUSE = /\bFORMAT\s+\w+\s*;?\s*$/i;
