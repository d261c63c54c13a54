import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import json from '../../../src/plugins/serializers/json/index.js';
import type { Rec } from '../../../src/plugins/types.js';
import { cfgOf, decodeChunk, decodeUnit, decoderOf, encoderOf, loadedSerializers, py, pyJson, randomStream, rng } from './helpers.js';

const dec = (text: string | Buffer) => decodeChunk(decoderOf(json), { data: Buffer.from(text) });

/** A file as a file sink builds it: head, the batches joined by separator, tail. */
function fileOf(partial: Record<string, unknown>, batches: Rec[][]): string {
  const e = encoderOf(json, partial);
  return String(e.head(batches[0]!)) + batches.map((b) => e.body(b).toString('utf8')).join(String(e.separator)) + String(e.tail);
}

// Python: json.dumps of stdin (a JSON document) with the given keyword arguments.
const pyDumps = (value: unknown, kwargs: string) =>
  py(`import json,sys; sys.stdout.write(json.dumps(json.loads(sys.stdin.read()), ${kwargs}))`, JSON.stringify(value)).toString('utf8');

const UNICODE: Rec = { city: 'Zürich', greek: 'αβγ', cjk: '東京', emoji: '😀📶', mixed: 'a\u00e9\u2028b', quote: 'say "hi"\n\t\\' };

describe('json serializer: configuration', () => {
  it('defaults to compact output with ASCII escapes', () => {
    expect(cfgOf(json)).toEqual({ indent: null, ensure_ascii: true });
    expect(loadedSerializers('{type: json}').output).toEqual({ type: 'json', indent: null, ensure_ascii: true });
  });

  it('accepts indent 0..10 or null and rejects anything else', () => {
    for (const indent of [null, 0, 2, 10]) expect(Value.Check(json.config, { indent, ensure_ascii: true })).toBe(true);
    for (const indent of [-1, 11, 1.5, '2']) expect(Value.Check(json.config, { indent, ensure_ascii: true })).toBe(false);
    expect(Value.Check(json.config, { indent: null, ensure_ascii: true, pretty: true })).toBe(false);
  });

  it('reads a whole unit (the engine never cuts a JSON document)', () => {
    expect(decoderOf(json).framing).toEqual({ kind: 'whole' });
    expect(encoderOf(json).extension).toBe('json');
  });
});

describe('json serializer: decode', () => {
  it('yields one record per array element, in order', () => {
    const { records, errors } = dec('[{"a":1},{"b":"x","c":[1,2]},{}]');
    expect(errors).toEqual([]);
    expect(records).toEqual([{ a: 1 }, { b: 'x', c: [1, 2] }, {}]);
  });

  it('yields a single object as one record', () => {
    expect(dec(' {"ne": "core-1", "n": {"x": null}} \n').records).toEqual([{ ne: 'core-1', n: { x: null } }]);
  });

  it('wraps non-object elements and top-level scalars as {_value}', () => {
    expect(dec('[1, "s", null, true, [1, 2], {"k": 1}]').records).toEqual([
      { _value: 1 },
      { _value: 's' },
      { _value: null },
      { _value: true },
      { _value: [1, 2] },
      { k: 1 },
    ]);
    expect(dec('42').records).toEqual([{ _value: 42 }]);
    expect(dec('"text"').records).toEqual([{ _value: 'text' }]);
    expect(dec('[]').records).toEqual([]);
  });

  it('reports an invalid document as exactly one error carrying the raw bytes, and no records', () => {
    for (const bad of ['[{"a":1},{"b":2}', '{"a": 1,}', 'not json', '[{"a":1}]\n[{"b":2}]']) {
      const raw = Buffer.from(bad, 'utf8');
      const { records, errors } = decodeChunk(decoderOf(json), { data: raw });
      expect(records).toEqual([]);
      expect(errors).toHaveLength(1);
      expect(errors[0]!.message).toMatch(/^invalid JSON document/);
      expect(errors[0]!.raw.equals(raw)).toBe(true);
    }
  });

  it('keeps non-UTF-8 junk byte-exact in the error raw', () => {
    const raw = Buffer.from([0x5b, 0xff, 0xfe, 0x00, 0x5d]);
    const { errors } = dec(raw);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.raw.equals(raw)).toBe(true);
  });

  it('reads what Python json.dumps wrote (ASCII escapes, surrogate pairs, indentation)', () => {
    const docs = [
      py(`import json,sys; sys.stdout.write(json.dumps([{"city":"Zürich","emoji":"😀","n":-3,"f":1.5,"ok":True,"none":None}], ensure_ascii=True))`),
      py(
        `import json,sys; sys.stdout.buffer.write(json.dumps([{"city":"Zürich","emoji":"😀","n":-3,"f":1.5,"ok":True,"none":None}], ensure_ascii=False, indent=4).encode("utf-8"))`,
      ),
    ];
    expect(docs[0]!.toString('latin1')).toContain('\\u00fc'); // really escaped by Python
    expect(docs[0]!.toString('latin1')).toContain('\\ud83d\\ude00');
    for (const doc of docs) expect(dec(doc).records).toEqual([{ city: 'Zürich', emoji: '😀', n: -3, f: 1.5, ok: true, none: null }]);
  });

  it('decodes the same through the chunker when the bytes arrive split inside UTF-8 characters', async () => {
    const doc = Buffer.from(JSON.stringify([UNICODE, { x: 'ü'.repeat(50) }], null, 1), 'utf8');
    for (let seed = 1; seed <= 20; seed++) {
      const out = await decodeUnit(decoderOf(json), randomStream(doc, rng(seed), 3), { targetBytes: 8 });
      expect(out.chunks, `seed ${seed}`).toHaveLength(1);
      expect(out.chunks[0]!.data.equals(doc)).toBe(true);
      expect(out.records).toEqual([UNICODE, { x: 'ü'.repeat(50) }]);
    }
  });
});

describe('json serializer: encode', () => {
  const records: Rec[] = [
    { a: 1, b: 'x' },
    { c: [1, { d: null }], e: true },
  ];

  it('writes a compact JSON array by default: head "[", "," between batches, tail "]\\n"', () => {
    const e = encoderOf(json);
    expect(e.head(records)).toBe('[');
    expect(e.separator).toBe(',');
    expect(e.tail).toBe(']\n');
    expect(e.body(records).toString('utf8')).toBe('{"a":1,"b":"x"},{"c":[1,{"d":null}],"e":true}');
    expect(fileOf({}, [[records[0]!], [records[1]!]])).toBe('[{"a":1,"b":"x"},{"c":[1,{"d":null}],"e":true}]\n');
    expect(e.one(records[0]!).toString('utf8')).toBe('{"a":1,"b":"x"}');
  });

  it('ensure_ascii true writes non-ASCII as \\uXXXX escapes exactly as Python does', () => {
    const out = encoderOf(json).one(UNICODE);
    expect(out.every((b) => b < 0x80)).toBe(true);
    expect(out.toString('ascii')).toContain('"Z\\u00fcrich"');
    expect(out.toString('ascii')).toContain('"\\ud83d\\ude00\\ud83d\\udcf6"');
    expect(out.toString('ascii')).toBe(pyDumps(UNICODE, "ensure_ascii=True, separators=(',', ':')"));
    expect(encoderOf(json).body([UNICODE]).toString('ascii')).toBe(out.toString('ascii'));
  });

  it('ensure_ascii false writes the characters as UTF-8', () => {
    const e = encoderOf(json, { ensure_ascii: false });
    const out = e.one({ city: 'Zürich', emoji: '😀' });
    expect(out.toString('utf8')).toBe('{"city":"Zürich","emoji":"😀"}');
    expect(out.includes(Buffer.from([0xc3, 0xbc]))).toBe(true); // ü in UTF-8
    expect(out.toString('utf8')).not.toContain('\\u');
    expect(out.toString('utf8')).toBe(
      py(
        `import json,sys; sys.stdout.buffer.write(json.dumps(json.loads(sys.stdin.read()), ensure_ascii=False, separators=(',', ':')).encode())`,
        JSON.stringify({ city: 'Zürich', emoji: '😀' }),
      ).toString('utf8'),
    );
  });

  it('indent 2 pretty-prints records and the whole file exactly as Python json.dumps(indent=2)', () => {
    const e = encoderOf(json, { indent: 2 });
    const rs: Rec[] = [{ a: 1, b: [1, 2], c: {}, d: [] }, { z: 'Zürich 😀', n: { m: null } }, { last: 'x' }];
    expect(e.one(rs[0]!).toString('utf8')).toBe(pyDumps(rs[0], 'indent=2'));
    expect(e.head(rs)).toBe('[\n');
    expect(e.separator).toBe(',\n');
    expect(e.tail).toBe('\n]\n');
    const file = fileOf({ indent: 2 }, [[rs[0]!, rs[1]!], [rs[2]!]]);
    expect(file).toBe(pyDumps(rs, 'indent=2') + '\n');
    expect(fileOf({ indent: 4, ensure_ascii: false }, [rs])).toBe(
      py(
        `import json,sys; sys.stdout.buffer.write(json.dumps(json.loads(sys.stdin.read()), indent=4, ensure_ascii=False).encode())`,
        JSON.stringify(rs),
      ).toString('utf8') + '\n',
    );
  });

  it('indent 0 and null both write compact JSON', () => {
    expect(
      encoderOf(json, { indent: 0 })
        .one({ a: [1] })
        .toString(),
    ).toBe('{"a":[1]}');
    expect(fileOf({ indent: 0 }, [[{ a: 1 }], [{ b: 2 }]])).toBe('[{"a":1},{"b":2}]\n');
  });

  it('files built from many batches are one document that Python json.loads reads back', () => {
    const batches: Rec[][] = [[UNICODE, { n: 1 }], [{ n: 2, deep: { l: [true, false, null] } }], [{ n: 3 }]];
    for (const partial of [{}, { indent: 2 }, { ensure_ascii: false }, { indent: 3, ensure_ascii: false }]) {
      const file = fileOf(partial, batches);
      const back = pyJson(`import json,sys; v=json.loads(sys.stdin.buffer.read().decode('utf-8')); print(json.dumps(v))`, Buffer.from(file, 'utf8'));
      expect(back, JSON.stringify(partial)).toEqual(batches.flat());
      // and our own decoder agrees
      expect(dec(file).records).toEqual(batches.flat());
    }
  });
});
