import { Type } from '@sinclair/typebox';
import { ipv6Text } from '../../../util/ip-text.js';
import { defineTransform } from '../../types.js';
import { FAIL, fieldConverter, lintTarget, quoteValue } from '../../common/convert-fields.js';

const config = Type.Object(
  {
    fields: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      description: 'Top-level fields holding hex text; each is decoded in place. Missing and null fields are left alone.',
    }),
    target: Type.Optional(Type.String({ minLength: 1, description: 'Write the result here instead of replacing the field (only with exactly one field).' })),
    output: Type.Union([Type.Literal('text'), Type.Literal('base64'), Type.Literal('mac'), Type.Literal('ipv4'), Type.Literal('ipv6'), Type.Literal('int')], {
      default: 'text',
      description:
        'text: the bytes decoded with encoding; base64: the bytes as base64; mac: 6 or 8 bytes as aa:bb:cc:dd:ee:ff; ipv4: 4 bytes dotted; ipv6: 16 bytes in RFC 5952 form; int: unsigned big-endian integer (as a decimal string above 2^53-1).',
    }),
    encoding: Type.Union([Type.Literal('utf-8'), Type.Literal('latin1')], {
      default: 'utf-8',
      description: 'Character encoding for output text; invalid UTF-8 is a failure (use latin1 or base64 for binary values).',
    }),
    trim_nul: Type.Boolean({ default: true, description: 'For output text: remove trailing NUL bytes (C strings padded by agents).' }),
    on_failure: Type.Union([Type.Literal('error'), Type.Literal('null'), Type.Literal('keep')], {
      default: 'error',
      description:
        'When a value is not hex or does not fit the output (wrong byte count, invalid UTF-8): error (record error, rule 6 and on_error), null or keep.',
    }),
  },
  { additionalProperties: false },
);

/** Hex text: optional 0x, then either contiguous pairs or groups split by ':', '-' or spaces. */
const HEX = /^[0-9a-fA-F]*$/;
const SEP = /\s*[:-]\s*|\s+/;
/** Longer values are failures without being read (64 KiB of bytes). */
const MAX_LEN = 256 * 1024;

/** Bytes of a hex string, or null when it is not hex. */
export function parseHex(v: string): Buffer | null {
  if (v.length > MAX_LEN) return null;
  let s = v.trim();
  if (s.startsWith('0x') || s.startsWith('0X')) s = s.slice(2);
  if (HEX.test(s)) return s.length % 2 === 0 ? Buffer.from(s, 'hex') : null;
  const tokens = s.split(SEP);
  let joined = '';
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    // Groups of one digit are padded (net-snmp prints MACs as 0:1b:...); longer groups need whole bytes.
    if (t === '' || !HEX.test(t) || (t.length % 2 === 1 && t.length !== 1)) return null;
    joined += t.length === 1 ? '0' + t : t;
  }
  return Buffer.from(joined, 'hex');
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

export default defineTransform({
  key: 'hex_decode',
  summary: 'Decode hex strings (SNMP OctetStrings: 0x4e6f6b6961, 4e:6f:6b, 4E 6F) to text, base64, MAC, IP address or integer.',
  config,
  lint: lintTarget,
  examples: [
    { title: 'sysDescr and ifAlias sent as hex', yaml: 'type: hex_decode\nfields: [sysDescr, ifAlias]' },
    { title: 'ifPhysAddress to a MAC address', yaml: 'type: hex_decode\nfields: [ifPhysAddress]\ntarget: mac\noutput: mac' },
    { title: 'Binary address to IPv4, tolerant', yaml: "type: hex_decode\nfields: [ipAdEntAddr]\noutput: ipv4\non_failure: 'null'" },
  ],
  create(c) {
    const output = c.output ?? 'text';
    const latin1 = c.encoding === 'latin1';
    const trimNul = c.trim_nul ?? true;

    const fromBytes = (b: Buffer): unknown => {
      switch (output) {
        case 'text': {
          let end = b.length;
          if (trimNul) while (end > 0 && b[end - 1] === 0) end--;
          const sub = end === b.length ? b : b.subarray(0, end);
          if (latin1) return sub.toString('latin1');
          try {
            return utf8.decode(sub);
          } catch {
            return FAIL;
          }
        }
        case 'base64':
          return b.toString('base64');
        case 'mac':
          if (b.length !== 6 && b.length !== 8) return FAIL;
          return b.toString('hex').replace(/..(?!$)/g, '$&:');
        case 'ipv4':
          return b.length === 4 ? `${b[0]}.${b[1]}.${b[2]}.${b[3]}` : FAIL;
        case 'ipv6':
          return b.length === 16 ? ipv6Text(b) : FAIL;
        default: {
          if (b.length === 0) return FAIL;
          if (b.length <= 6) return b.readUIntBE(0, b.length);
          const n = BigInt('0x' + b.toString('hex'));
          return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
        }
      }
    };

    const bytesOf = (v: unknown) => (typeof v === 'string' ? parseHex(v) : null);
    return {
      apply: fieldConverter({
        fields: c.fields,
        target: c.target,
        onFailure: c.on_failure ?? 'error',
        skipNull: true,
        convert(v) {
          const bytes = bytesOf(v);
          return bytes === null ? FAIL : fromBytes(bytes);
        },
        failure: (field, v) =>
          `hex_decode: field '${field}' value ${quoteValue(v)} ${bytesOf(v) === null ? 'is not hex' : `does not decode as ${output}${output === 'text' ? ` (${c.encoding})` : ''}`}`,
      }),
    };
  },
});
