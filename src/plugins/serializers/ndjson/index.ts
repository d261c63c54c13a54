import { Type } from '@sinclair/typebox';
import { defineSerializer, type Rec } from '../../types.js';
import { asciiJson, jsonBytes, splitLines, tooDeepJson, utf8Text } from '../../common/text.js';
import { readSetting } from '../../../settings.js';

const config = Type.Object(
  {
    ensure_ascii: Type.Boolean({ default: true, description: 'Write non-ASCII characters as \\uXXXX escapes.' }),
    strict: Type.Boolean({
      default: false,
      description: 'Reject lines that are valid JSON but not objects; when false they are wrapped as {"_value": ...}.',
    }),
    newline: Type.String({ default: '\n', minLength: 1, description: 'Line terminator written between records.' }),
  },
  { additionalProperties: false },
);

const isObject = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

export default defineSerializer({
  key: 'ndjson',
  summary: 'Newline-delimited JSON: one JSON object per line.',
  direction: 'both',
  config,
  examples: [
    {
      title: 'Defaults',
      yaml: 'type: ndjson',
      worked: {
        input: '{"host": "rtr1", "in": 10}\n[1, 2]\n{"host": "rtr2", "in": 7}\n',
        records: [{ host: 'rtr1', in: 10 }, { _value: [1, 2] }, { host: 'rtr2', in: 7 }],
      },
    },
    { title: 'Strict objects, UTF-8 kept as is', yaml: 'type: ndjson\nstrict: true\nensure_ascii: false' },
  ],
  decoder: (c) => {
    const maxDepth = readSetting('DECODE_MAX_DEPTH');
    return {
      framing: { kind: 'lines' },
      decode({ data }, out) {
        const lines = splitLines(utf8Text(data));
        for (let i = 0; i < lines.length; i++) {
          const line = lines[i]!;
          // Blank lines are skipped; trim() only when the line starts with whitespace (it allocates).
          if (line.length === 0 || (line.charCodeAt(0) <= 32 && line.trim() === '')) continue;
          if (tooDeepJson(line, maxDepth)) {
            out.error(
              `JSON nested deeper than ${maxDepth} arrays and objects (SVC_DECODE_MAX_DEPTH): flatten the data at its source, or raise the setting`,
              line,
            );
            continue;
          }
          let v: unknown;
          try {
            v = JSON.parse(line);
          } catch (e) {
            out.error(`invalid JSON: ${(e as Error).message}`, line);
            continue;
          }
          if (isObject(v)) out.record(v);
          else if (c.strict) out.error(`expected a JSON object, got ${Array.isArray(v) ? 'array' : typeof v} (strict: true)`, line);
          else out.record({ _value: v });
        }
      },
    };
  },
  encoder: (c) => {
    const nl = c.newline;
    const str = c.ensure_ascii ? (r: Rec) => asciiJson(JSON.stringify(r)) : (r: Rec) => JSON.stringify(r);
    return {
      extension: 'ndjson',
      head: () => '',
      separator: '',
      tail: '',
      body(records) {
        // String concatenation measured faster than collecting the lines and joining them.
        let s = '';
        for (let i = 0; i < records.length; i++) s += JSON.stringify(records[i]) + nl;
        return jsonBytes(s, c.ensure_ascii);
      },
      one: (r) => Buffer.from(str(r), 'utf8'),
    };
  },
});
