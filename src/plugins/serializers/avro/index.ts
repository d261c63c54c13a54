import { createHash } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import type avro from 'avsc';
import { encodeBlock, inflate, isContainer, readHeader, scanBlock, containerHeader, type Codec, type ContainerHeader } from './container.js';
import { avroType, budgetFor, decodeValue, encodeValue, valueMapping, whyInvalid } from './values.js';
import { lintRegistryUrl, readWireHeader, registryFor, SchemaRegistryError, wireHeader, type SchemaRegistryClient } from '../../common/schema-registry.js';
import { readSchemaFile, schemaPath, SchemaFileError } from '../../common/schema-file.js';
import {
  defineSerializer,
  type SerializerPlugin,
  type DecodeOut,
  type LintIssue,
  type Rec,
  type ResolveContext,
  type SerializerContext,
  type SplitPiece,
} from '../../types.js';
import { PendingBytes } from '../../../util/pending-bytes.js';

const config = Type.Object(
  {
    schema: Type.Optional(Type.String({ minLength: 1, description: 'The Avro schema as inline JSON text.' })),
    schema_file: Type.Optional(Type.String({ minLength: 1, description: 'An Avro schema file (.avsc, JSON); a relative path is taken under SVC_SCHEMA_DIR.' })),
    schema_registry_url: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'Confluent Schema Registry base URL; overrides SVC_SCHEMA_REGISTRY_URL. Basic auth from SVC_SCHEMA_REGISTRY_USERNAME/PASSWORD.',
      }),
    ),
    schema_registry_subject: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'Registry subject: its versions are fetched at run start (reading); writing uses its latest schema, or registers schema/schema_file under it.',
      }),
    ),
    schema_registry_id: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 0xffffffff,
        description: 'Registry schema id: fetched at run start when a registry is set; written after the magic byte.',
      }),
    ),
    use_magic_bytes: Type.Boolean({
      default: true,
      description: 'Single datums carry the Confluent wire format prefix (magic byte 0 and 4-byte schema id). Container files never do.',
    }),
    codec: Type.Union([Type.Literal('null'), Type.Literal('deflate'), Type.Literal('snappy')], {
      default: 'null',
      description: 'Block compression when writing container files (reading takes the codec from the file header).',
    }),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

/** What resolve() fetched from the registry: plain data, so it crosses to worker threads. */
interface Resolved {
  /** Schema text by registry id: every version of the subject, and schema_registry_id. */
  schemas: Record<string, string>;
  /** The newest schema of the subject (reading plain datums, which carry no id). */
  latest?: string;
  /** The schema and id to write with. */
  write?: { schema: string; id?: number };
}

type AvroConfig = Config & { _resolved?: Resolved };

/** Versions of a subject fetched at run start, newest first (older messages beyond it go to the DLQ). */
const MAX_VERSIONS = 100;

/** Line and column of a JSON.parse error position. */
function jsonErrorWhere(text: string, e: Error): string {
  const m = /position (\d+)/.exec(e.message);
  if (!m) return e.message;
  const pos = Number(m[1]);
  const before = text.slice(0, pos).split('\n');
  return `${e.message.replace(/ in JSON at position \d+.*$/, '')} at line ${before.length} column ${before.at(-1)!.length + 1}`;
}

/** The schema text given locally (schema or schema_file), undefined when there is none. Throws SchemaFileError. */
function localSchema(c: Config, schemaDir: string | undefined): { text: string; where: string } | undefined {
  if (c.schema) return { text: c.schema, where: 'schema' };
  if (c.schema_file) return { text: readSchemaFile(c.schema_file, schemaDir), where: `schema file '${schemaPath(c.schema_file, schemaDir)}'` };
  return undefined;
}

/** Parses and compiles a schema; the message names where it came from and the line of a JSON error. */
function compile(text: string, where: string): avro.Type {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new SchemaFileError(`${where}: invalid JSON: ${jsonErrorWhere(text, e as Error)}`);
  }
  try {
    return avroType(json);
  } catch (e) {
    throw new SchemaFileError(`${where}: invalid Avro schema: ${(e as Error).message}`);
  }
}

const usesRegistry = (c: Config) => Boolean(c.schema_registry_url || c.schema_registry_subject);

function lint(c: Config, ctx?: SerializerContext): LintIssue[] {
  const issues: LintIssue[] = [];
  if (!c.schema && !c.schema_file && !c.schema_registry_url) {
    issues.push({ path: 'schema', message: 'one of schema, schema_file or schema_registry_url is required' });
    return issues;
  }
  if (c.schema && c.schema_file) issues.push({ path: 'schema_file', message: 'schema and schema_file exclude each other: give one' });
  if (!c.schema && !c.schema_file && c.schema_registry_subject === undefined && c.schema_registry_id === undefined) {
    issues.push({ path: 'schema_registry_url', message: 'schema_registry_url needs schema_registry_subject or schema_registry_id (which schema to fetch)' });
  }
  issues.push(...lintRegistryUrl(c.schema_registry_url));
  if (c.schema) {
    try {
      compile(c.schema, 'schema');
    } catch (e) {
      issues.push({ path: 'schema', message: (e as Error).message });
    }
  }
  if (c.schema_file) {
    try {
      const full = schemaPath(c.schema_file, ctx?.schemaDir);
      compile(readSchemaFile(c.schema_file, ctx?.schemaDir), `schema file '${full}'`);
    } catch (e) {
      issues.push({ path: 'schema_file', message: (e as Error).message });
    }
  }
  return issues;
}

/**
 * Fetches what the registry holds for this serializer, once per run on the main thread. Reading
 * needs the writer schema of every id a message may carry: all versions of the subject (newest
 * MAX_VERSIONS) and schema_registry_id. Writing needs one schema and its id: schema_registry_id,
 * else the local schema registered under the subject (only when writing: registering is a change),
 * else the subject's latest version.
 */
async function resolve(
  c: AvroConfig,
  ctx: Pick<ResolveContext, 'signal' | 'schemaRegistry' | 'schemaDir'> & { direction?: 'in' | 'out' },
): Promise<AvroConfig> {
  const local = localSchema(c, ctx.schemaDir);
  if (!usesRegistry(c)) return c;
  const reg = registryFor(c.schema_registry_url, ctx.schemaRegistry);
  if (!reg) throw new SchemaRegistryError('schema_registry_subject needs a registry: set schema_registry_url or SVC_SCHEMA_REGISTRY_URL');
  const reading = ctx.direction !== 'out';
  const writing = ctx.direction !== 'in';
  const resolved: Resolved = { schemas: {} };
  if (c.schema_registry_id !== undefined) {
    const s = await reg.schemaById(c.schema_registry_id, ctx.signal);
    resolved.schemas[s.id] = s.schema;
    resolved.write = { schema: local?.text ?? s.schema, id: s.id };
  }
  const subject = c.schema_registry_subject;
  if (subject !== undefined) {
    if (reading) {
      const { schemas, latest } = await subjectSchemas(reg, subject, local !== undefined, ctx.signal);
      Object.assign(resolved.schemas, schemas);
      resolved.latest = latest;
    }
    if (writing && !resolved.write) resolved.write = await writeSchema(reg, subject, local?.text, ctx);
  }
  return { ...c, _resolved: resolved };
}

async function subjectSchemas(
  reg: SchemaRegistryClient,
  subject: string,
  hasLocal: boolean,
  signal: AbortSignal,
): Promise<{ schemas: Record<string, string>; latest?: string }> {
  let versions: number[];
  try {
    versions = (await reg.versions(subject, signal)).sort((a, b) => b - a).slice(0, MAX_VERSIONS);
  } catch (e) {
    // A subject nobody registered yet is no obstacle when the local schema is there to read with.
    if (hasLocal && e instanceof SchemaRegistryError && e.status === 404) return { schemas: {} };
    throw e;
  }
  const schemas: Record<string, string> = {};
  let latest: string | undefined;
  for (const v of versions) {
    const s = await reg.version(subject, v, signal);
    schemas[s.id] = s.schema;
    latest ??= s.schema;
  }
  return { schemas, latest };
}

async function writeSchema(reg: SchemaRegistryClient, subject: string, local: string | undefined, ctx: { signal: AbortSignal; direction?: 'in' | 'out' }) {
  if (local === undefined) {
    const s = await reg.latest(subject, ctx.signal);
    return { schema: s.schema, id: s.id };
  }
  // The engine may not tell the direction: then only look the schema up, never register it.
  if (ctx.direction === 'out') return { schema: local, id: await reg.register(subject, local, 'AVRO', ctx.signal) };
  const found = await reg.lookup(subject, local, 'AVRO', ctx.signal);
  return { schema: local, id: found?.id };
}

// ---- decoding --------------------------------------------------------------------------------

/** A unit that is no container file and larger than this is not taken for one datum. */
const MAX_DATUM = 64 << 20;
const NOT_A_DATUM = Buffer.from('svc:avro:not-a-datum');

/** Cuts a unit into pieces: a container file into groups of whole blocks, anything else whole. */
async function* splitAvro(stream: AsyncIterable<Buffer>, opts: { targetBytes: number; maxRecords?: number }): AsyncGenerator<SplitPiece> {
  const held = new PendingBytes();
  let pending: Buffer = held.bytes; // held.bytes, kept up to date
  const consume = (n: number) => {
    held.consume(n);
    pending = held.bytes;
  };
  const it = stream[Symbol.asyncIterator]();
  let ended = false;
  const more = async (): Promise<boolean> => {
    if (ended) return false;
    const r = await it.next();
    if (r.done) {
      ended = true;
      return false;
    }
    held.push(r.value);
    pending = held.bytes;
    return true;
  };
  /** Reads on until what was incomplete is worth scanning again (see PendingBytes): false when nothing more came. */
  const moreForLook = async (): Promise<boolean> => {
    let got = false;
    while (await more()) {
      got = true;
      if (held.ready) break;
    }
    return got;
  };
  /** Everything left, in pieces of targetBytes, each marked so that decode() reports it. */
  async function* rest(header: Buffer): AsyncGenerator<SplitPiece> {
    do {
      while (pending.length >= opts.targetBytes) {
        yield { data: Buffer.from(pending.subarray(0, opts.targetBytes)), header };
        consume(opts.targetBytes);
      }
    } while (await more());
    if (pending.length) yield { data: Buffer.from(pending), header };
  }
  while (pending.length < 4 && (await more()));
  if (!isContainer(pending)) {
    // A single datum: the unit is one payload. Something far larger is not one (a wrong file):
    // it goes on in bounded pieces, each an error in decode(), instead of being held whole.
    while (pending.length <= MAX_DATUM && (await more()));
    if (pending.length <= MAX_DATUM) {
      if (pending.length) yield { data: pending };
      return;
    }
    yield* rest(NOT_A_DATUM);
    return;
  }
  let header: ContainerHeader | undefined;
  let headerError = false;
  for (;;) {
    try {
      header = readHeader(pending);
    } catch {
      headerError = true;
    }
    if (header || headerError) break;
    held.incomplete();
    if (!(await moreForLook())) break;
  }
  if (!header) {
    // Unreadable or truncated header: the bytes go on, in bounded pieces, each an error in decode().
    yield* rest(Buffer.from(pending.subarray(0, Math.min(pending.length, 64 << 10))));
    return;
  }
  const headerBytes = Buffer.from(pending.subarray(0, header.length));
  // Pieces are sized by what they decode to: compressed blocks hold 4-10x their size, and pieces
  // of many records cost more in garbage collection than they save in overhead. Without
  // record_chunk_size a piece holds about as many records as a chunk of NDJSON (~128 bytes each).
  const target = header.codec === 'null' ? opts.targetBytes : Math.max(1, opts.targetBytes >> 2);
  const maxRecords = opts.maxRecords ?? Math.max(1, opts.targetBytes >> 7);
  consume(header.length);
  let pos = 0; // end of the blocks taken into the current piece
  let records = 0;
  const cut = () => {
    const data = Buffer.from(pending.subarray(0, pos));
    consume(pos);
    pos = 0;
    records = 0;
    return { data, header: headerBytes };
  };
  for (;;) {
    if (pos >= pending.length) {
      if (!(await more())) break;
      continue;
    }
    const b = scanBlock(pending, pos, header.sync, ended);
    if (b.kind === 'more') {
      // (scanBlock looks for the next sync marker from the block's start.)
      held.incomplete(pos);
      await moreForLook(); // at the end of the stream the next scan is final and decides
      continue;
    }
    pos = b.end;
    if (b.kind === 'block') records += b.count;
    if (pos >= target || records >= maxRecords) yield cut();
  }
  if (pos > 0) yield cut();
}

interface Schemas {
  /** By registry id (fetched at run start). */
  byId: Map<number, avro.Type>;
  /** The local or resolved schema used when no id says otherwise. */
  fallback?: avro.Type;
}

function schemasOf(c: AvroConfig, schemaDir: string | undefined): Schemas {
  const byId = new Map<number, avro.Type>();
  for (const [id, text] of Object.entries(c._resolved?.schemas ?? {})) byId.set(Number(id), compile(text, `registry schema id ${id}`));
  const local = localSchema(c, schemaDir);
  if (local) return { byId, fallback: compile(local.text, local.where) };
  if (usesRegistry(c) && !c._resolved) throw new SchemaRegistryError('avro: registry schemas are fetched at run start (resolve) and were not');
  // With magic bytes the embedded id picks the schema (an unknown id is an error, never a guess);
  // plain datums carry no id: schema_registry_id's schema, else the subject's newest.
  if (c.use_magic_bytes) return { byId };
  const r = c._resolved;
  const w = (c.schema_registry_id !== undefined ? r?.schemas[c.schema_registry_id] : undefined) ?? r?.latest ?? r?.write?.schema;
  return { byId, fallback: w ? compile(w, 'registry schema') : undefined };
}

function decoderFor(c: AvroConfig, schemaDir: string | undefined) {
  const schemas = schemasOf(c, schemaDir);
  const mappings = new WeakMap<avro.Type, ReturnType<typeof valueMapping>>();
  const mappingOf = (t: avro.Type) => {
    let m = mappings.get(t);
    if (!m) mappings.set(t, (m = valueMapping(t)));
    return m;
  };
  let lastHeader: { bytes: Buffer; header: ContainerHeader; type: avro.Type } | undefined;

  /** Header of a container piece, parsed once for all pieces of a file. */
  const containerOf = (bytes: Buffer): { header: ContainerHeader; type: avro.Type } => {
    if (lastHeader?.bytes.equals(bytes)) return lastHeader;
    const header = readHeader(bytes);
    if (!header) throw new Error('truncated Avro container header');
    const type = compile(header.schema, 'container header schema');
    lastHeader = { bytes: Buffer.from(bytes), header, type };
    return lastHeader;
  };

  const decodeBlocks = (data: Buffer, from: number, header: ContainerHeader, type: avro.Type, out: DecodeOut) => {
    const { toRecord } = mappingOf(type);
    for (let pos = from; pos < data.length; ) {
      const b = scanBlock(data, pos, header.sync, true);
      if (b.kind === 'more') break; // not with final
      const raw = data.subarray(pos, b.end);
      pos = b.end;
      if (b.kind === 'bad') {
        out.error(`avro container: ${b.reason}; skipped to the next sync marker`, raw);
        continue;
      }
      // A block decodes whole or not at all: its raw bytes go to the DLQ as one unit.
      const recs: Rec[] = [];
      try {
        const datums = inflate(header.codec, data.subarray(b.dataStart, b.dataEnd));
        // A record counts at least one byte, even of a schema that takes none (an empty record):
        // a count of 2^40 over no data grew one array until the process died (issue 28).
        if (b.count > datums.length)
          throw new Error(`block announces ${b.count} records in ${datums.length} bytes (each record counts at least one byte): a corrupt or hostile count`);
        const budget = budgetFor(datums.length);
        let p = 0;
        for (let i = 0; i < b.count; i++) {
          const r = decodeValue(type, datums, p, budget);
          if (r.offset === -1) throw new Error(`block announces ${b.count} records, its data ends after ${i}`);
          p = r.offset;
          recs.push(toRecord(r.value));
        }
        if (p !== datums.length) throw new Error(`${datums.length - p} bytes left after ${b.count} records`);
      } catch (e) {
        out.error(`avro container block: ${(e as Error).message}`, raw);
        continue;
      }
      for (const r of recs) out.record(r);
    }
  };

  const decodeDatum = (data: Buffer, out: DecodeOut) => {
    let type = schemas.fallback;
    let offset = 0;
    if (c.use_magic_bytes) {
      let id: number;
      try {
        ({ id, offset } = readWireHeader(data));
      } catch (e) {
        out.error(`avro: ${(e as Error).message}`, data);
        return;
      }
      type = schemas.byId.get(id) ?? schemas.fallback;
      if (!type) {
        const known = [...schemas.byId.keys()].join(', ') || 'none';
        out.error(
          `avro: schema id ${id} was not fetched at run start (fetched: ${known}); add its subject (schema_registry_subject) or rerun after registering it`,
          data,
        );
        return;
      }
    }
    if (!type) {
      out.error('avro: no schema to decode with', data);
      return;
    }
    let r: { value: unknown; offset: number };
    try {
      r = decodeValue(type, data, offset);
    } catch (e) {
      out.error(`avro datum: ${(e as Error).message}`, data);
      return;
    }
    if (r.offset === -1) out.error('avro datum: truncated (the data ends inside the record)', data);
    else if (r.offset !== data.length) out.error(`avro datum: ${data.length - r.offset} bytes left after the record (wrong schema?)`, data);
    else out.record(mappingOf(type).toRecord(r.value));
  };

  return {
    framing: { kind: 'split' as const, split: splitAvro },
    decode({ data, header }: { data: Buffer; header?: Buffer }, out: DecodeOut) {
      if (header?.equals(NOT_A_DATUM)) {
        out.error(`avro: the unit is no container file (no Obj\\x01 magic) and larger than ${MAX_DATUM >> 20} MiB, so no single datum either`, data);
        return;
      }
      if (header || isContainer(data)) {
        // A container piece, or a whole container file as one message.
        let h: { header: ContainerHeader; type: avro.Type };
        try {
          h = containerOf(header ?? data);
        } catch (e) {
          out.error(`avro container: ${(e as Error).message}`, data);
          return;
        }
        decodeBlocks(data, header ? 0 : h.header.length, h.header, h.type, out);
        return;
      }
      if (data.length) decodeDatum(data, out);
    },
  };
}

// ---- encoding --------------------------------------------------------------------------------

/** A sync marker from the schema rather than random: a file a later run appends to stays one valid container. */
const syncFor = (schema: string) =>
  createHash('sha256')
    .update('svc avro sync ' + schema)
    .digest()
    .subarray(0, 16);

function encoderFor(c: AvroConfig, schemaDir: string | undefined) {
  const local = localSchema(c, schemaDir);
  const text = local?.text ?? c._resolved?.write?.schema;
  if (!text) throw new SchemaRegistryError('avro: no schema to write with (the registry schema is fetched at run start)');
  const type = compile(text, local?.where ?? 'registry schema');
  const canonical = JSON.stringify(type.schema());
  const { fromRecord } = valueMapping(type);
  const codec = c.codec as Codec;
  const sync = syncFor(canonical);
  const head = containerHeader(canonical, codec, sync);
  const id = c._resolved?.write?.id ?? c.schema_registry_id;
  const prefix = c.use_magic_bytes && id !== undefined ? wireHeader(id) : undefined;

  const datum = (r: Rec, i: number): Buffer => {
    const v = fromRecord(r);
    try {
      return encodeValue(type, v);
    } catch {
      throw new Error(`avro: record ${i + 1} does not fit the schema: ${whyInvalid(type, v)}`);
    }
  };
  return {
    extension: 'avro',
    head: () => head,
    separator: '',
    tail: '',
    body: (records: Rec[]) => encodeBlock(records.length, Buffer.concat(records.map(datum)), codec, sync),
    one: (r: Rec) => {
      const d = datum(r, 0);
      if (!c.use_magic_bytes) return d;
      if (!prefix) throw new Error('avro: use_magic_bytes needs a schema id: set schema_registry_id or schema_registry_subject, or use_magic_bytes: false');
      return Buffer.concat([prefix, d]);
    },
  };
}

const exampleSchema =
  '{"type":"record","name":"Interface","fields":[{"name":"host","type":"string"},{"name":"ifIndex","type":"int"},{"name":"ifInOctets","type":"long"}]}';

export default defineSerializer({
  key: 'avro',
  summary: 'Apache Avro: object container files (streamed block by block) and single datums in the Confluent wire format, with Schema Registry.',
  status: 'beta',
  direction: 'both',
  config,
  lint,
  // resolve() adds the fetched schemas as `_resolved`, which the schema does not describe.
  resolve: resolve as NonNullable<SerializerPlugin<typeof config>['resolve']>,
  examples: [
    {
      title: 'Container files or plain datums with a schema file',
      yaml: 'type: avro\nschema_file: interface.avsc\nuse_magic_bytes: false',
      worked: {
        // One datum: "rtr1", 1, 1234567 (zig-zag varints).
        input: '0872747231028eda9601',
        encoding: 'hex',
        records: [{ host: 'rtr1', ifIndex: 1, ifInOctets: 1234567 }],
      },
    },
    {
      title: 'Inline schema, Confluent wire format (magic byte and schema id 42)',
      yaml: `type: avro\nschema: '${exampleSchema}'\nschema_registry_id: 42`,
      worked: {
        input: '000000002a0872747231028eda9601',
        encoding: 'hex',
        records: [{ host: 'rtr1', ifIndex: 1, ifInOctets: 1234567 }],
      },
    },
    {
      title: 'Kafka messages with schemas from a Schema Registry subject',
      yaml: 'type: avro\nschema_registry_url: http://registry:8081\nschema_registry_subject: interfaces-value',
    },
    { title: 'Write deflate-compressed container files', yaml: 'type: avro\nschema_file: interface.avsc\ncodec: deflate' },
  ],
  decoder: (c, ctx) => decoderFor(c as AvroConfig, ctx?.schemaDir),
  encoder: (c, ctx) => encoderFor(c as AvroConfig, ctx?.schemaDir),
});
