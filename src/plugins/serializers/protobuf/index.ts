import { readFileSync } from 'node:fs';
import { Type, type Static } from '@sinclair/typebox';
import { findType, loadProto, messageIndexes, messageMapping, readVarint, varint } from './schema.js';
import {
  decodeMessageIndexes,
  encodeMessageIndexes,
  lintRegistryUrl,
  readWireHeader,
  registryFor,
  SchemaRegistryError,
  wireHeader,
} from '../../common/schema-registry.js';
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
    schema_file: Type.String({ minLength: 1, description: 'The .proto file (imports resolve next to it); a relative path is taken under SVC_SCHEMA_DIR.' }),
    message_class: Type.String({ minLength: 1, description: 'The message type: its full name (package.Message) or a unique simple name.' }),
    framing: Type.Union([Type.Literal('length_delimited'), Type.Literal('none')], {
      default: 'length_delimited',
      description:
        'length_delimited: each message is preceded by its varint byte length (writeDelimitedTo), many per unit; none: one message per unit or per queue message.',
    }),
    schema_registry_url: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'Confluent Schema Registry base URL; overrides SVC_SCHEMA_REGISTRY_URL. Used when writing to find the schema id.',
      }),
    ),
    schema_registry_subject: Type.Optional(
      Type.String({ minLength: 1, description: 'Registry subject: when writing, schema_file is registered under it (its id goes after the magic byte).' }),
    ),
    schema_registry_id: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 0xffffffff, description: 'Schema id to write after the magic byte (no registry request).' }),
    ),
    use_magic_bytes: Type.Boolean({
      default: true,
      description:
        'With framing none, messages carry the Confluent wire format prefix (magic byte 0, 4-byte schema id, message indexes). Length-delimited streams never do.',
    }),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;
type ProtoConfig = Config & { _resolved?: { id?: number } };

/** Longer messages are taken as a corrupt length prefix (protobuf's classic 64 MiB limit). */
const MAX_MESSAGE = 64 << 20;
/** Marks split pieces that follow a corrupt length prefix: no message boundary can be found in them. */
const FRAMING_LOST = Buffer.from('svc:protobuf:framing-lost');

function lint(c: Config, ctx?: SerializerContext): LintIssue[] {
  const issues: LintIssue[] = [];
  try {
    const { root, path } = loadProto(c.schema_file, ctx?.schemaDir);
    try {
      findType(root, c.message_class, `schema file '${path}'`);
    } catch (e) {
      issues.push({ path: 'message_class', message: (e as Error).message });
    }
  } catch (e) {
    issues.push({ path: 'schema_file', message: (e as Error).message });
  }
  issues.push(...lintRegistryUrl(c.schema_registry_url));
  return issues;
}

/**
 * The schema id to write, found once per run: schema_registry_id as given, else schema_file
 * registered under the subject when writing (looked up only when the engine does not say it writes).
 * Reading needs nothing from the registry: the local schema decodes, the embedded id is skipped.
 */
async function resolve(
  c: ProtoConfig,
  ctx: Pick<ResolveContext, 'signal' | 'schemaRegistry' | 'schemaDir'> & { direction?: 'in' | 'out' },
): Promise<ProtoConfig> {
  // Only framing none with magic bytes writes an id; length-delimited streams carry none.
  if (c.framing !== 'none' || !c.use_magic_bytes) return c;
  if (c.schema_registry_id !== undefined || c.schema_registry_subject === undefined || ctx.direction === 'in') return c;
  const reg = registryFor(c.schema_registry_url, ctx.schemaRegistry);
  if (!reg) throw new SchemaRegistryError('schema_registry_subject needs a registry: set schema_registry_url or SVC_SCHEMA_REGISTRY_URL');
  const { path } = loadProto(c.schema_file, ctx.schemaDir);
  const text = readFileSync(path, 'utf8');
  const id =
    ctx.direction === 'out'
      ? await reg.register(c.schema_registry_subject, text, 'PROTOBUF', ctx.signal)
      : (await reg.lookup(c.schema_registry_subject, text, 'PROTOBUF', ctx.signal))?.id;
  return { ...c, _resolved: { id } };
}

/** Cuts a length-delimited stream after whole messages; a corrupt prefix ends the framing. */
async function* splitDelimited(stream: AsyncIterable<Buffer>, opts: { targetBytes: number; maxRecords?: number }): AsyncGenerator<SplitPiece> {
  const held = new PendingBytes();
  let pending: Buffer = held.bytes; // held.bytes, kept up to date
  let pos = 0;
  let count = 0;
  let ended = false;
  const it = stream[Symbol.asyncIterator]();
  const more = async () => {
    if (ended) return false;
    const r = await it.next();
    if (r.done) return !(ended = true);
    held.push(r.value);
    pending = held.bytes;
    return true;
  };
  /** Reads on until the message at `pos` may be whole (see PendingBytes): false when nothing more came. */
  const moreForLook = async () => {
    let got = false;
    while (await more()) {
      got = true;
      if (held.ready) break;
    }
    return got;
  };
  const cut = (): SplitPiece => {
    const data = Buffer.from(pending.subarray(0, pos));
    held.consume(pos);
    pending = held.bytes;
    pos = count = 0;
    return { data };
  };
  for (;;) {
    if (pos >= pending.length) {
      if (!(await more())) break;
      continue;
    }
    const v = readVarint(pending, pos);
    if (v === 'more' || (v !== 'bad' && v.value <= MAX_MESSAGE && v.end + v.value > pending.length)) {
      held.incomplete(pos, v === 'more' ? undefined : v.end + v.value);
      if (await moreForLook()) continue;
      pos = pending.length; // truncated at the end: decode() reports it with its bytes
      break;
    }
    if (v === 'bad' || v.value > MAX_MESSAGE) {
      // No way to find the next message: the piece so far, then the rest marked as unframed.
      if (pos > 0) yield cut();
      do {
        while (pending.length >= opts.targetBytes) {
          yield { data: Buffer.from(pending.subarray(0, opts.targetBytes)), header: FRAMING_LOST };
          held.consume(opts.targetBytes);
          pending = held.bytes;
        }
      } while (await more());
      if (pending.length) yield { data: Buffer.from(pending), header: FRAMING_LOST };
      return;
    }
    pos = v.end + v.value;
    count++;
    if (pos >= opts.targetBytes || (opts.maxRecords !== undefined && count >= opts.maxRecords)) yield cut();
  }
  if (pos > 0) yield cut();
}

function decoderFor(c: ProtoConfig, schemaDir: string | undefined) {
  const { root, path } = loadProto(c.schema_file, schemaDir);
  const type = findType(root, c.message_class, `schema file '${path}'`);
  const { toRecord } = messageMapping(type);
  const name = type.fullName.slice(1);

  const decodeOne = (bytes: Buffer, raw: Buffer, out: DecodeOut) => {
    let r: Rec;
    try {
      r = toRecord(bytes);
    } catch (e) {
      out.error(`protobuf ${name}: ${(e as Error).message}`, raw);
      return;
    }
    out.record(r);
  };

  const decodeDelimited = (data: Buffer, out: DecodeOut) => {
    for (let pos = 0; pos < data.length; ) {
      const v = readVarint(data, pos);
      if (v === 'bad' || (v !== 'more' && v.value > MAX_MESSAGE)) {
        out.error(
          `protobuf: corrupt length prefix at byte ${pos} of the piece${v === 'bad' ? ' (varint longer than 10 bytes)' : ` (${v.value} bytes announced)`}; the rest cannot be framed`,
          data.subarray(pos),
        );
        return;
      }
      if (v === 'more' || v.end + v.value > data.length) {
        const announced = v === 'more' ? 'a length prefix' : `${v.value} bytes`;
        out.error(`protobuf: truncated message: ${announced} announced, ${data.length - (v === 'more' ? pos : v.end)} bytes present`, data.subarray(pos));
        return;
      }
      decodeOne(data.subarray(v.end, v.end + v.value), data.subarray(pos, v.end + v.value), out);
      pos = v.end + v.value;
    }
  };

  const decodeFramed = (data: Buffer, out: DecodeOut) => {
    let offset = 0;
    if (c.use_magic_bytes) {
      try {
        offset = decodeMessageIndexes(data, readWireHeader(data).offset).pos;
      } catch (e) {
        out.error(`protobuf: ${(e as Error).message}`, data);
        return;
      }
    }
    decodeOne(data.subarray(offset), data, out);
  };

  return c.framing === 'none'
    ? {
        framing: { kind: 'whole' as const },
        decode: ({ data }: { data: Buffer }, out: DecodeOut) => decodeFramed(data, out),
      }
    : {
        framing: { kind: 'split' as const, split: splitDelimited },
        decode({ data, header }: { data: Buffer; header?: Buffer }, out: DecodeOut) {
          if (header?.equals(FRAMING_LOST)) out.error('protobuf: bytes after a corrupt length prefix (framing lost)', data);
          else decodeDelimited(data, out);
        },
      };
}

function encoderFor(c: ProtoConfig, schemaDir: string | undefined) {
  const { root, path } = loadProto(c.schema_file, schemaDir);
  const type = findType(root, c.message_class, `schema file '${path}'`);
  const { fromRecord } = messageMapping(type);
  const id = c.schema_registry_id ?? c._resolved?.id;
  const prefix = c.use_magic_bytes && id !== undefined ? Buffer.concat([wireHeader(id), encodeMessageIndexes(messageIndexes(type))]) : undefined;
  const message = (r: Rec): Buffer => {
    try {
      return Buffer.from(fromRecord(r));
    } catch (e) {
      throw new Error(`protobuf ${type.fullName.slice(1)}: ${(e as Error).message}`, { cause: e });
    }
  };
  const delimited = (r: Rec) => {
    const m = message(r);
    return Buffer.concat([varint(m.length), m]);
  };
  const single = (r: Rec) => {
    const m = message(r);
    if (!c.use_magic_bytes) return m;
    if (!prefix) throw new Error('protobuf: use_magic_bytes needs a schema id: set schema_registry_id or schema_registry_subject, or use_magic_bytes: false');
    return Buffer.concat([prefix, m]);
  };
  return {
    extension: c.framing === 'none' ? 'bin' : 'pb',
    head: () => '',
    separator: '',
    tail: '',
    body: (records: Rec[]) => {
      if (c.framing === 'length_delimited') return Buffer.concat(records.map(delimited));
      // Concatenated protobuf messages merge into one: a payload holds exactly one.
      if (records.length !== 1)
        throw new Error(`protobuf framing none holds one message per payload, not ${records.length}: use framing length_delimited for files`);
      return single(records[0]!);
    },
    one: (r: Rec) => (c.framing === 'length_delimited' ? delimited(r) : single(r)),
  };
}

export default defineSerializer({
  key: 'protobuf',
  summary: 'Protocol Buffers from a .proto file: length-delimited streams or one message per payload (Confluent wire format), with Schema Registry ids.',
  status: 'beta',
  direction: 'both',
  config,
  lint,
  // resolve() adds the fetched schemas as `_resolved`, which the schema does not describe.
  resolve: resolve as NonNullable<SerializerPlugin<typeof config>['resolve']>,
  examples: [
    {
      title: 'Length-delimited messages in a file',
      yaml: 'type: protobuf\nschema_file: interface.proto\nmessage_class: svc.examples.Interface',
      worked: {
        // Two messages, each after its varint length.
        input: '0c0a047274723110011887ad4b0a0a047274723210022001',
        encoding: 'hex',
        records: [
          { host: 'rtr1', if_index: 1, in_octets: 1234567, oper_status: 'UP' },
          { host: 'rtr2', if_index: 2, in_octets: 0, oper_status: 'DOWN' },
        ],
      },
    },
    {
      title: 'Kafka messages in the Confluent wire format',
      yaml: 'type: protobuf\nschema_file: interface.proto\nmessage_class: Interface\nframing: none',
      worked: {
        input: '0000000007000a0472747231100118bf843d',
        encoding: 'hex',
        records: [{ host: 'rtr1', if_index: 1, in_octets: 999999, oper_status: 'UP' }],
      },
    },
    {
      title: 'Write with the schema registered under a subject',
      yaml: 'type: protobuf\nschema_file: interface.proto\nmessage_class: Interface\nframing: none\nschema_registry_url: http://registry:8081\nschema_registry_subject: interfaces-value',
    },
  ],
  decoder: (c, ctx) => decoderFor(c as ProtoConfig, ctx?.schemaDir),
  encoder: (c, ctx) => encoderFor(c as ProtoConfig, ctx?.schemaDir),
});
