import { Type } from '@sinclair/typebox';
import { defineSerializer, type Rec } from '../../types.js';

const config = Type.Object(
  {
    encoding: Type.Union([Type.Literal('base64'), Type.Literal('hex'), Type.Literal('none')], {
      default: 'base64',
      description:
        'How `_raw` holds the bytes: base64, hex, or none (the bytes as UTF-8 text). Written out, a record whose `_raw` nothing changed is the very bytes it was read from (with none too, where they are not UTF-8).',
    }),
  },
  { additionalProperties: false },
);

const BUF_ENCODING = { base64: 'base64', hex: 'hex', none: 'utf8' } as const;

/** The bytes a record was decoded from, and the getter its `_raw` had then. */
const SOURCE = Symbol('bytes source');
type Sourced = Rec & { [SOURCE]?: { data: Buffer; get: () => string } };

/**
 * A record whose `_raw` is the text of `data`, made only when something reads it. A file copied
 * with bytes in and out (SFTP to local, say) is then written from the bytes it was read as: no
 * text of a 5 MB file is made and thrown away twice, and bytes that `none` cannot hold as UTF-8
 * pass unchanged. Assigning `_raw` makes it a plain field again; a copy of the record (a
 * transform's, a worker thread's) has a plain field and no source.
 */
function sourcedRecord(data: Buffer, encoding: BufferEncoding): Rec {
  let text: string | undefined;
  const rec = {} as Sourced;
  const get = () => (text ??= data.toString(encoding));
  const set = (value: unknown) => Object.defineProperty(rec, '_raw', { value, writable: true, enumerable: true, configurable: true });
  Object.defineProperty(rec, '_raw', { get, set, enumerable: true, configurable: true });
  rec._size = data.length;
  Object.defineProperty(rec, SOURCE, { value: { data, get } }); // not enumerable: never written out
  return rec;
}

/** The bytes `r` was decoded from, while its `_raw` is still the one they gave. */
function sourceBytes(r: Rec): Buffer | undefined {
  const source = (r as Sourced)[SOURCE];
  return source && Object.getOwnPropertyDescriptor(r, '_raw')?.get === source.get ? source.data : undefined;
}

export default defineSerializer({
  key: 'bytes',
  summary: 'Opaque payloads: one record per unit with `_raw` (encoded bytes) and `_size`.',
  direction: 'both',
  config,
  examples: [
    { title: 'Base64 (default)', yaml: 'type: bytes', worked: { input: '3006020101040161', encoding: 'hex', records: [{ _raw: 'MAYCAQEEAWE=', _size: 8 }] } },
    { title: 'Hex dump of binary files', yaml: 'type: bytes\nencoding: hex' },
  ],
  decoder: (c) => ({
    framing: { kind: 'whole' },
    decode({ data }, out) {
      out.record(sourcedRecord(data, BUF_ENCODING[c.encoding]));
    },
  }),
  encoder: (c) => {
    // Writing reverses reading: `_raw` is decoded back to the original bytes.
    const bytesOf = (r: Rec) => sourceBytes(r) ?? (typeof r._raw === 'string' ? Buffer.from(r._raw, BUF_ENCODING[c.encoding]) : Buffer.from(JSON.stringify(r)));
    return {
      extension: 'bin',
      head: () => '',
      separator: '',
      tail: '',
      // One record (a whole file) is written as it is decoded: no second copy of a large payload.
      body: (records) => (records.length === 1 ? bytesOf(records[0]!) : Buffer.concat(records.map(bytesOf))),
      one: bytesOf,
    };
  },
});
