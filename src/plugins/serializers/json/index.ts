import { Type } from '@sinclair/typebox';
import { defineSerializer, type Rec } from '../../types.js';
import { asciiJson, jsonBytes, tooDeepJson } from '../../common/text.js';
import { readSetting } from '../../../settings.js';

const config = Type.Object(
  {
    indent: Type.Union([Type.Integer({ minimum: 0, maximum: 10 }), Type.Null()], {
      default: null,
      description: 'Spaces of indentation; null writes compact JSON.',
    }),
    ensure_ascii: Type.Boolean({ default: true, description: 'Write non-ASCII characters as \\uXXXX escapes.' }),
  },
  { additionalProperties: false },
);

const isObject = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

export default defineSerializer({
  key: 'json',
  summary: 'A JSON document: an array of objects (or one object) per payload.',
  direction: 'both',
  config,
  examples: [
    {
      title: 'Compact (default)',
      yaml: 'type: json',
      worked: {
        input: '[{"host": "rtr1", "ifIndex": 1}, {"host": "rtr2", "up": true}, 42]',
        records: [{ host: 'rtr1', ifIndex: 1 }, { host: 'rtr2', up: true }, { _value: 42 }],
      },
    },
    { title: 'Pretty-printed, UTF-8 kept', yaml: 'type: json\nindent: 2\nensure_ascii: false' },
  ],
  decoder: () => {
    const maxDepth = readSetting('DECODE_MAX_DEPTH');
    return {
      framing: { kind: 'whole' },
      decode({ data }, out) {
        const text = data.toString('utf8');
        if (tooDeepJson(text, maxDepth)) {
          out.error(
            `JSON document nested deeper than ${maxDepth} arrays and objects (SVC_DECODE_MAX_DEPTH): flatten the data at its source, or raise the setting`,
            data,
          );
          return;
        }
        let v: unknown;
        try {
          v = JSON.parse(text);
        } catch (e) {
          out.error(`invalid JSON document: ${(e as Error).message}`, data);
          return;
        }
        // An array yields one record per element; a non-object element is wrapped, as in ndjson.
        const items = Array.isArray(v) ? v : [v];
        for (const item of items) out.record(isObject(item) ? item : { _value: item });
      },
    };
  },
  encoder: (c) => {
    const indent = c.indent ?? undefined;
    const fix = c.ensure_ascii ? asciiJson : (s: string) => s;
    const pretty = indent !== undefined && indent > 0;
    const sep = pretty ? ',\n' : ',';
    const stringify = (r: Rec) => {
      const s = JSON.stringify(r, null, indent);
      // Inside the array, pretty records are indented one level further.
      return pretty ? ' '.repeat(indent!) + s.replace(/\n/g, '\n' + ' '.repeat(indent!)) : s;
    };
    return {
      extension: 'json',
      head: () => (pretty ? '[\n' : '['),
      separator: sep,
      tail: pretty ? '\n]\n' : ']\n',
      body: (records) => Buffer.from(fix(records.map(stringify).join(sep)), 'utf8'),
      // One record per message (Kafka, MQTT...): ASCII is told by the byte count, without a scan per record.
      one: (r) => jsonBytes(JSON.stringify(r, null, indent), c.ensure_ascii),
    };
  },
});
