import { Type } from '@sinclair/typebox';
import { defineSerializer, type Rec } from '../types.js';

const config = Type.Object(
  {
    encoding: Type.Union([Type.Literal('base64'), Type.Literal('hex'), Type.Literal('none')], {
      default: 'base64',
      description: 'How `_raw` holds the bytes: base64, hex, or none (the bytes as UTF-8 text).',
    }),
  },
  { additionalProperties: false },
);

const BUF_ENCODING = { base64: 'base64', hex: 'hex', none: 'utf8' } as const;

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
      out.record({ _raw: data.toString(BUF_ENCODING[c.encoding]), _size: data.length });
    },
  }),
  encoder: (c) => {
    // Writing reverses reading: `_raw` is decoded back to the original bytes.
    const bytesOf = (r: Rec) => (typeof r._raw === 'string' ? Buffer.from(r._raw, BUF_ENCODING[c.encoding]) : Buffer.from(JSON.stringify(r)));
    return {
      extension: 'bin',
      head: () => '',
      separator: '',
      tail: '',
      body: (records) => Buffer.concat(records.map(bytesOf)),
      one: bytesOf,
    };
  },
});
