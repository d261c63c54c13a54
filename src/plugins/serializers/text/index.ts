import { Type } from '@sinclair/typebox';
import { ConfigError } from '../../../core/errors.js';
import { defineSerializer, type Rec } from '../../types.js';
import { decoderFor, lintEncoding } from '../../common/text.js';

const config = Type.Object(
  {
    encoding: Type.String({
      default: 'utf-8',
      description: 'Character encoding: any WHATWG label to read (utf-8, latin1, windows-1252, utf-16le, ...); utf-8, ascii, latin1 or utf-16le to write.',
    }),
    skip_empty: Type.Boolean({ default: true, description: 'Drop empty (or whitespace-only) lines.' }),
    line_field: Type.String({ default: '_line', minLength: 1, description: 'Field that holds the line.' }),
    include_line_num: Type.Boolean({ default: true, description: 'Add `_line_num`, the 1-based line number in the input unit.' }),
    newline: Type.String({ default: '\n', minLength: 1, description: 'Line terminator; "\\r\\n" input is also split on "\\n" with the "\\r" removed.' }),
  },
  { additionalProperties: false },
);

/** Encodings text can be written in (Node's own); every TextDecoder label can be read. */
const WRITABLE: Record<string, BufferEncoding> = {
  'utf-8': 'utf8',
  utf8: 'utf8',
  ascii: 'ascii',
  'us-ascii': 'ascii',
  latin1: 'latin1',
  'iso-8859-1': 'latin1',
  'utf-16le': 'utf16le',
  'utf-16': 'utf16le',
};

function writeEncoding(label: string): BufferEncoding {
  const e = WRITABLE[label.toLowerCase().replace(/_/g, '-')];
  if (!e) throw new ConfigError(`text serializer: cannot write encoding "${label}"; for output use one of ${Object.keys(WRITABLE).join(', ')}`);
  return e;
}

export default defineSerializer({
  key: 'text',
  summary: 'Plain text, one record per line (syslog files, CLI output, logs).',
  direction: 'both',
  config,
  lint: (c) => lintEncoding(c.encoding),
  examples: [
    {
      title: 'One record per line',
      yaml: 'type: text',
      worked: {
        input: 'link up Gi0/1\n\nlink down Gi0/2\n',
        records: [
          { _line: 'link up Gi0/1', _line_num: 1 },
          { _line: 'link down Gi0/2', _line_num: 3 },
        ],
      },
    },
    { title: 'Latin-1 log lines into field `message`', yaml: 'type: text\nencoding: latin1\nline_field: message\ninclude_line_num: false' },
  ],
  decoder: (c) => {
    const toText = decoderFor(c.encoding);
    const lf = c.newline === '\n' || c.newline === '\r\n';
    // The engine cuts after 0x0A bytes: right only for ASCII-compatible encodings, not UTF-16.
    const wide = new TextDecoder(c.encoding.toLowerCase().replace(/_/g, '-')).encoding.startsWith('utf-16');
    return {
      // Line framing lets the engine cut big files anywhere; other terminators need the whole unit.
      framing: { kind: lf && !wide ? 'lines' : 'whole' },
      decode({ data, firstLine }, out) {
        const text = toText(data);
        const lines = text.split(lf ? '\n' : c.newline);
        if (lines.length && lines[lines.length - 1] === '') lines.pop();
        for (let i = 0; i < lines.length; i++) {
          let line = lines[i]!;
          if (lf && line.endsWith('\r')) line = line.slice(0, -1);
          if (c.skip_empty && line.trim() === '') continue;
          const r: Rec = { [c.line_field]: line };
          if (c.include_line_num) r._line_num = firstLine + i;
          out.record(r);
        }
      },
    };
  },
  encoder: (c) => {
    // A record without the line field is written as its JSON, so nothing is silently lost.
    const lineOf = (r: Rec) => {
      const v = r[c.line_field];
      return v === undefined ? JSON.stringify(r) : typeof v === 'string' ? v : JSON.stringify(v);
    };
    const enc = writeEncoding(c.encoding);
    return {
      extension: 'txt',
      head: () => '',
      separator: '',
      tail: '',
      body: (records) => Buffer.from(records.map(lineOf).join(c.newline) + c.newline, enc),
      one: (r) => Buffer.from(lineOf(r), enc),
    };
  },
});
