// A small client for the Confluent Schema Registry REST API, and the Confluent wire format that
// Kafka producers and consumers put around an Avro datum or a Protobuf message. Used only at run
// start (serializer resolve()), so per-record code never touches the network.
import type { LintIssue, SchemaRegistryDefaults } from '../types.js';

export class SchemaRegistryError extends Error {
  override name = 'SchemaRegistryError';
  constructor(
    message: string,
    /** HTTP status (0 when the registry could not be reached). */
    readonly status: number = 0,
    /** The registry's own error_code (40401 subject not found, 40403 schema not found, ...). */
    readonly code?: number,
  ) {
    super(message);
  }
}

export type SchemaType = 'AVRO' | 'PROTOBUF' | 'JSON';

export interface RegisteredSchema {
  id: number;
  schema: string;
  schemaType: SchemaType;
  subject?: string;
  version?: number;
}

export interface RegistryOptions {
  url: string;
  username?: string;
  password?: string;
  /** Per request; default 10 s. */
  timeoutMs?: number;
}

const CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json';

export class SchemaRegistryClient {
  readonly url: string;
  private readonly auth?: string;
  private readonly timeoutMs: number;

  constructor(opts: RegistryOptions) {
    this.url = opts.url.replace(/\/+$/, '');
    if (opts.username || opts.password) this.auth = 'Basic ' + Buffer.from(`${opts.username ?? ''}:${opts.password ?? ''}`).toString('base64');
    this.timeoutMs = opts.timeoutMs ?? 10_000;
  }

  /** GET /schemas/ids/{id}: the schema text registered under a global id. */
  async schemaById(id: number, signal?: AbortSignal): Promise<RegisteredSchema> {
    const body = await this.call<{ schema: string; schemaType?: SchemaType }>('GET', `/schemas/ids/${id}`, undefined, signal, `schema id ${id}`);
    return { id, schema: body.schema, schemaType: body.schemaType ?? 'AVRO' };
  }

  /** GET /subjects/{subject}/versions: the version numbers of a subject. */
  versions(subject: string, signal?: AbortSignal): Promise<number[]> {
    return this.call<number[]>('GET', `/subjects/${enc(subject)}/versions`, undefined, signal, `subject '${subject}'`);
  }

  /** GET /subjects/{subject}/versions/{version} (version a number or `latest`). */
  async version(subject: string, version: number | 'latest', signal?: AbortSignal): Promise<RegisteredSchema> {
    const b = await this.call<{ subject: string; version: number; id: number; schema: string; schemaType?: SchemaType }>(
      'GET',
      `/subjects/${enc(subject)}/versions/${version}`,
      undefined,
      signal,
      `subject '${subject}' version ${version}`,
    );
    return { id: b.id, schema: b.schema, schemaType: b.schemaType ?? 'AVRO', subject: b.subject, version: b.version };
  }

  latest(subject: string, signal?: AbortSignal): Promise<RegisteredSchema> {
    return this.version(subject, 'latest', signal);
  }

  /** POST /subjects/{subject}/versions: registers (or finds, when it is there already) a schema; its id. */
  async register(subject: string, schema: string, schemaType: SchemaType, signal?: AbortSignal): Promise<number> {
    const body = schemaType === 'AVRO' ? { schema } : { schema, schemaType };
    const b = await this.call<{ id: number }>('POST', `/subjects/${enc(subject)}/versions`, body, signal, `subject '${subject}'`);
    return b.id;
  }

  /** POST /subjects/{subject}: the id of this exact schema under the subject, undefined when it is not registered. */
  async lookup(subject: string, schema: string, schemaType: SchemaType, signal?: AbortSignal): Promise<RegisteredSchema | undefined> {
    const body = schemaType === 'AVRO' ? { schema } : { schema, schemaType };
    try {
      const b = await this.call<{ id: number; version: number; schema: string }>('POST', `/subjects/${enc(subject)}`, body, signal, `subject '${subject}'`);
      return { id: b.id, schema, schemaType, subject, version: b.version };
    } catch (e) {
      // 40401 subject not found, 40403 schema not found under it: both mean "not registered".
      if (e instanceof SchemaRegistryError && e.status === 404) return undefined;
      throw e;
    }
  }

  private async call<T>(method: string, path: string, body: unknown, signal: AbortSignal | undefined, what: string): Promise<T> {
    const headers: Record<string, string> = { accept: CONTENT_TYPE };
    if (this.auth) headers.authorization = this.auth;
    if (body !== undefined) headers['content-type'] = CONTENT_TYPE;
    const timeout = AbortSignal.timeout(this.timeoutMs);
    let res: Response;
    try {
      res = await fetch(this.url + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (e) {
      if (signal?.aborted) throw new SchemaRegistryError(`schema registry ${this.url}: request aborted`);
      if (timeout.aborted) throw new SchemaRegistryError(`schema registry ${this.url}: no answer within ${this.timeoutMs / 1000} s (${method} ${path})`);
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      throw new SchemaRegistryError(`schema registry ${this.url} is unreachable: ${cause?.code ?? cause?.message ?? (e as Error).message}`);
    }
    const text = await res.text().catch(() => '');
    if (!res.ok) {
      let err: { error_code?: number; message?: string } = {};
      try {
        err = JSON.parse(text) as typeof err;
      } catch {
        /* not the registry's error JSON: the status says enough */
      }
      const detail = err.message ?? (text.slice(0, 200) || res.statusText);
      if (res.status === 401 || res.status === 403) {
        throw new SchemaRegistryError(
          `schema registry ${this.url}: ${res.status} ${detail} (credentials come from SVC_SCHEMA_REGISTRY_USERNAME and SVC_SCHEMA_REGISTRY_PASSWORD)`,
          res.status,
          err.error_code,
        );
      }
      const notFound = res.status === 404 ? `${what} not found: ` : '';
      throw new SchemaRegistryError(
        `schema registry ${this.url}: ${notFound}${detail} (HTTP ${res.status}${err.error_code ? `, error_code ${err.error_code}` : ''})`,
        res.status,
        err.error_code,
      );
    }
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new SchemaRegistryError(
        `schema registry ${this.url}: ${method} ${path} answered with something that is not JSON: ${text.slice(0, 100)}`,
        res.status,
      );
    }
  }
}

const enc = encodeURIComponent;

/**
 * The registry client for a serializer: its `schema_registry_url`, else the process's registry
 * (`defaults`: ResolveContext.schemaRegistry, from SVC_SCHEMA_REGISTRY_URL); undefined when neither
 * is set. Credentials always come from `defaults` (SVC_SCHEMA_REGISTRY_USERNAME, _PASSWORD).
 */
export function registryFor(url: string | undefined, defaults: SchemaRegistryDefaults = {}): SchemaRegistryClient | undefined {
  const base = url || defaults.url;
  if (!base) return undefined;
  return new SchemaRegistryClient({ url: base, username: defaults.username, password: defaults.password });
}

// ---- Confluent wire format -------------------------------------------------------------------
// magic byte 0, the schema id as a 4-byte big-endian integer, then (Protobuf only) the message
// indexes, then the Avro datum or Protobuf message.

/** Lint of a serializer's `schema_registry_url`: it must be an http(s) URL. */
export function lintRegistryUrl(url: string | undefined): LintIssue[] {
  if (!url) return [];
  try {
    const u = new URL(url);
    if (u.protocol === 'http:' || u.protocol === 'https:') return [];
  } catch {
    /* reported below */
  }
  return [{ path: 'schema_registry_url', message: `'${url}' is not an http(s) URL` }];
}

export const MAGIC_BYTE = 0;

/** The 5-byte prefix: magic byte and schema id. */
export function wireHeader(id: number): Buffer {
  const b = Buffer.allocUnsafe(5);
  b[0] = MAGIC_BYTE;
  b.writeUInt32BE(id >>> 0, 1);
  return b;
}

export interface WirePrefix {
  id: number;
  /** Offset of the payload after the prefix. */
  offset: number;
}

/** Reads the 5-byte prefix; throws with a message fit for the DLQ when it is not there. */
export function readWireHeader(b: Buffer): WirePrefix {
  if (b.length < 5) throw new Error(`${b.length} bytes: too short for the Confluent wire format (magic byte and 4-byte schema id)`);
  if (b[0] !== MAGIC_BYTE)
    throw new Error(`first byte is 0x${b[0]!.toString(16).padStart(2, '0')}, not the Confluent magic byte 0x00 (use_magic_bytes: false reads plain payloads)`);
  return { id: b.readUInt32BE(1), offset: 5 };
}

// Confluent's Protobuf message indexes: the path of the message type in its .proto file (index of
// the top-level message, then of nested ones), written as zig-zag varints (Kafka's ByteUtils),
// count first; the common [0] is abbreviated to a single 0 byte.

function writeZigZag(n: number, out: number[]): void {
  let v = ((n << 1) ^ (n >> 31)) >>> 0;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
}

function readZigZag(b: Buffer, pos: number): { value: number; pos: number } {
  let v = 0;
  for (let shift = 0; shift < 35; shift += 7) {
    if (pos >= b.length) throw new Error('truncated message-index varint');
    const byte = b[pos++]!;
    v |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return { value: (v >>> 1) ^ -(v & 1), pos };
  }
  throw new Error('message-index varint longer than 5 bytes');
}

export function encodeMessageIndexes(indexes: number[]): Buffer {
  if (indexes.length === 1 && indexes[0] === 0) return Buffer.from([0]);
  const out: number[] = [];
  writeZigZag(indexes.length, out);
  for (const i of indexes) writeZigZag(i, out);
  return Buffer.from(out);
}

/** The message indexes at `pos`; [0] for the abbreviated form. */
export function decodeMessageIndexes(b: Buffer, pos: number): { indexes: number[]; pos: number } {
  const n = readZigZag(b, pos);
  if (n.value === 0) return { indexes: [0], pos: n.pos };
  if (n.value < 0 || n.value > 100) throw new Error(`implausible message-index count ${n.value}`);
  const indexes: number[] = [];
  let p = n.pos;
  for (let i = 0; i < n.value; i++) {
    const r = readZigZag(b, p);
    indexes.push(r.value);
    p = r.pos;
  }
  return { indexes, pos: p };
}
