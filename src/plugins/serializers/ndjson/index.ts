import { Type } from '@sinclair/typebox';
import { defineSerializer, type Rec } from '../../types.js';
import { jsonBytes, jsonBytesOf, splitLines, tooDeepJson, utf8Text } from '../../common/text.js';
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

/** One JSON.stringify call per record, each line ended by `nl`. */
function concatLines(records: readonly Rec[], nl: string): string {
  // String concatenation measured faster than collecting the lines and joining them.
  let s = '';
  for (let i = 0; i < records.length; i++) s += JSON.stringify(records[i]) + nl;
  return s;
}

/** A plain object without toJSON: stringified, it is `{...}` whether alone or as an array element. */
function plainRecord(r: unknown): boolean {
  if (typeof r !== 'object' || r === null) return false;
  const proto = Object.getPrototypeOf(r) as unknown;
  return (proto === Object.prototype || proto === null) && typeof (r as { toJSON?: unknown }).toJSON !== 'function';
}

/**
 * Records per JSON.stringify call in linesOf: V8 writes the text of a hundred-odd records several
 * times faster per record than that of a few thousand (a megabyte of text: 2.9 against 0.3 us per
 * record of the otlp-ingest bench, docs/benchmarks.md).
 */
const LINES_CHUNK = 128;

/** The records of call `c` of a batch of `n` (LINES_CHUNK each, the last the rest). */
const callSize = (n: number, c: number) => Math.min(LINES_CHUNK, n - c * LINES_CHUNK);

/**
 * One JSON.stringify per LINES_CHUNK records, which costs less than a call per record (bench
 * otlp-ingest, docs/benchmarks.md): each call's text, undefined for a call that throws (thrown
 * again, for the record that throws, by concatLines); undefined when the records are not all plain
 * objects. Each record is a plain object, so its text is `{...}` alone or in the array, and the k-1
 * boundaries between the k records of a call are k-1 occurrences of `},{` (the pattern cannot
 * overlap itself). When a call's text holds exactly k-1, every one is a boundary; any more (`},{`
 * inside a string or a nested array of objects) and that call's records go one call each.
 */
function callsOf(records: readonly Rec[]): (string | undefined)[] | undefined {
  if (records.length < 2) return undefined;
  for (let i = 0; i < records.length; i++) if (!plainRecord(records[i])) return undefined;
  const calls: (string | undefined)[] = [];
  for (let i = 0; i < records.length; i += LINES_CHUNK) {
    try {
      calls.push(JSON.stringify(records.length <= LINES_CHUNK ? records : records.slice(i, i + LINES_CHUNK)));
    } catch {
      calls.push(undefined);
    }
  }
  return calls;
}

/** The text of concatLines from the calls' text, in parts (jsonBytesOf writes them into one buffer without joining them). */
function linesOf(records: readonly Rec[], calls: readonly (string | undefined)[], nl: string): string[] {
  return calls.map((whole, c) => {
    const parts = whole?.slice(1, -1).split('},{');
    if (parts && parts.length === callSize(records.length, c)) return parts.join(`}${nl}{`) + nl;
    return concatLines(records.slice(c * LINES_CHUNK, (c + 1) * LINES_CHUNK), nl);
  });
}

/**
 * The bytes of linesOf without cutting any text, when `nl` is one ASCII character: each call's text
 * is written into the buffer without its brackets, then the `,` of each `},{` inside it becomes
 * `nl` in place. UTF-8 writes every non-ASCII character as bytes >= 0x80, so `},{` in the bytes is
 * `},{` in the text. undefined when linesOf must do it: a call that threw or holds other than its
 * records less one `},{`, or characters that ensure_ascii escapes.
 */
function linesInPlace(n: number, calls: readonly (string | undefined)[], nl: string, ensureAscii: boolean): Buffer | undefined {
  let bytes = 0;
  let chars = 0;
  for (const text of calls) {
    if (text === undefined) return undefined;
    bytes += Buffer.byteLength(text, 'utf8') - 1; // without its brackets, with its line's end
    chars += text.length - 1;
  }
  if (ensureAscii && bytes !== chars) return undefined;
  const nlByte = nl.charCodeAt(0);
  const b = Buffer.allocUnsafe(bytes);
  const ends: number[] = [];
  let at = 0;
  for (const text of calls) {
    at += b.write(text!.slice(1, -1), at, 'utf8');
    ends.push(at);
    b[at++] = nlByte;
  }
  // Call c's text is [start, ends[c]); a `},{` across a line's end (nl being `,` or `{`) is none of its.
  const cuts: number[] = [];
  let c = 0;
  let start = 0;
  let seen = 0;
  for (let p = b.indexOf('},{'); p >= 0; p = b.indexOf('},{', p + 1)) {
    while (p >= ends[c]!) {
      if (seen !== callSize(n, c) - 1) return undefined;
      start = ends[c++]! + 1;
      seen = 0;
    }
    if (p >= start && p + 3 <= ends[c]!) {
      cuts.push(p + 1);
      seen++;
    }
  }
  for (; c < calls.length; c++, seen = 0) if (seen !== callSize(n, c) - 1) return undefined;
  for (const cut of cuts) b[cut] = nlByte;
  return b;
}

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
    return {
      extension: 'ndjson',
      head: () => '',
      separator: '',
      tail: '',
      body(records) {
        const calls = callsOf(records);
        if (!calls) return jsonBytes(concatLines(records, nl), c.ensure_ascii);
        const inPlace = nl.length === 1 && nl.charCodeAt(0) < 0x80 ? linesInPlace(records.length, calls, nl, c.ensure_ascii) : undefined;
        return inPlace ?? jsonBytesOf(linesOf(records, calls, nl), c.ensure_ascii);
      },
      one: (r) => jsonBytes(JSON.stringify(r), c.ensure_ascii),
    };
  },
});
