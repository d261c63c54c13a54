import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { buildPlan } from '../../../src/engine/plan.js';
import { registry } from '../../../src/plugins/registry.js';
import { processChunk } from '../../../src/engine/process-chunk.js';
import ndjson from '../../../src/plugins/serializers/ndjson/index.js';
import type { Rec } from '../../../src/plugins/types.js';
import { cfgOf, decodeChunk, decodeUnit, decoderOf, encoderOf, loadedSerializers, pipelineWith, py, pyJson, randomStream, rng } from './helpers.js';

const dec = (text: string | Buffer, partial: Record<string, unknown> = {}) => decodeChunk(decoderOf(ndjson, partial), { data: Buffer.from(text) });

// Python reads what we wrote: split on the terminator, json.loads every non-empty line.
const pyReadLines = (payload: Buffer, nl: string) =>
  pyJson<unknown[]>(
    `import json,sys; t=sys.stdin.buffer.read().decode('utf-8'); print(json.dumps([json.loads(l) for l in t.split(${JSON.stringify(nl)}) if l]))`,
    payload,
  );

describe('ndjson serializer: configuration', () => {
  it('defaults: ensure_ascii true, strict false, newline "\\n"', () => {
    expect(cfgOf(ndjson)).toEqual({ ensure_ascii: true, strict: false, newline: '\n' });
    expect(loadedSerializers('{type: ndjson}').input).toEqual({ type: 'ndjson', ensure_ascii: true, strict: false, newline: '\n' });
    expect(Value.Check(ndjson.config, { ensure_ascii: true, strict: false, newline: '' })).toBe(false);
  });

  it('reads by lines with no header, so big files are cut into chunks', () => {
    expect(decoderOf(ndjson).framing).toEqual({ kind: 'lines' });
    expect(encoderOf(ndjson).extension).toBe('ndjson');
  });
});

describe('ndjson serializer: decode', () => {
  it('yields one record per line; blank and whitespace-only lines are skipped; last line may lack a newline', () => {
    const { records, errors } = dec('{"a":1}\n\n   \n\t\n{"b":"x"}\n  {"c":true}  \n{"d":null}');
    expect(errors).toEqual([]);
    expect(records).toEqual([{ a: 1 }, { b: 'x' }, { c: true }, { d: null }]);
  });

  it('handles CRLF line ends: no "\\r" left in values, CRLF blank lines skipped', () => {
    const { records, errors } = dec('{"a":"x"}\r\n\r\n{"b":"y"}\r\n');
    expect(errors).toEqual([]);
    expect(records).toEqual([{ a: 'x' }, { b: 'y' }]);
  });

  it('strict false (default) wraps non-object lines as {_value}', () => {
    expect(dec('5\n"s"\n[1,2]\nnull\ntrue\n{"o":1}\n').records).toEqual([
      { _value: 5 },
      { _value: 's' },
      { _value: [1, 2] },
      { _value: null },
      { _value: true },
      { o: 1 },
    ]);
  });

  it('strict true rejects non-object lines with an error whose raw is the line; objects still flow', () => {
    const { records, errors } = dec('{"o":1}\n5\r\n[1,2]\n"s"\nnull\n{"o":2}\n', { strict: true });
    expect(records).toEqual([{ o: 1 }, { o: 2 }]);
    expect(errors.map((e) => e.raw.toString('utf8'))).toEqual(['5', '[1,2]', '"s"', 'null']);
    expect(errors[0]!.message).toContain('number');
    expect(errors[1]!.message).toContain('array');
    expect(errors[2]!.message).toContain('string');
    for (const e of errors) expect(e.message).toContain('strict');
  });

  it('an invalid line is one error with raw = that line; the other lines are still decoded', () => {
    const { records, errors } = dec('{"a":1}\n{"b":\n{"c":3}\nnot json at all\n{"d":"ü"}\n');
    expect(records).toEqual([{ a: 1 }, { c: 3 }, { d: 'ü' }]);
    expect(errors).toHaveLength(2);
    expect(errors[0]!.raw.toString('utf8')).toBe('{"b":');
    expect(errors[1]!.raw.toString('utf8')).toBe('not json at all');
    for (const e of errors) expect(e.message).toMatch(/^invalid JSON/);
  });

  it('the engine hands the bad line to the DLQ as raw bytes (process-chunk, pipeline loaded from YAML)', () => {
    const plan = buildPlan(pipelineWith('{type: ndjson, strict: true}', '{type: ndjson, ensure_ascii: false}'), { registry });
    const out = processChunk(plan, { data: Buffer.from('{"a":"Zürich"}\n{oops}\n[1]\n{"a":2}\n'), firstLine: 1, meta: {} }, { keepRecords: false });
    expect(out.recordsIn).toBe(4);
    expect(out.parseErrors.map((e) => Buffer.from(e.raw!).toString('utf8'))).toEqual(['{oops}', '[1]']);
    expect(Buffer.from(out.sinks[0]!.payload).toString('utf8')).toBe('{"a":"Zürich"}\n{"a":2}\n');
  });

  it('reads what Python json.dumps wrote, line by line, with either ensure_ascii', () => {
    const values = [{ city: 'Zürich', e: '😀', n: 1, l: [1, 'x'] }, { q: 'say "hi"\n\\' }, { none: null, t: true }];
    for (const ascii of ['True', 'False']) {
      const text = py(
        `import json,sys\nfor v in json.loads(sys.stdin.read()): sys.stdout.buffer.write((json.dumps(v, ensure_ascii=${ascii}) + "\\r\\n").encode())`,
        JSON.stringify(values),
      );
      if (ascii === 'True') expect(text.toString('latin1')).toContain('\\u00fc');
      const { records, errors } = dec(text);
      expect(errors).toEqual([]);
      expect(records).toEqual(values);
    }
  });

  it('decodes the same through the chunker with small chunks and bytes split inside UTF-8 characters', async () => {
    const values: Rec[] = Array.from({ length: 60 }, (_, i) => ({ i, s: 'ü€😀'.repeat(i % 5), z: 'Zürich' }));
    const text = Buffer.from(values.map((v) => JSON.stringify(v)).join('\n') + '\n', 'utf8');
    for (let seed = 1; seed <= 25; seed++) {
      const out = await decodeUnit(decoderOf(ndjson), randomStream(text, rng(seed), 5), { targetBytes: 10 + seed * 7 });
      expect(out.errors, `seed ${seed}`).toEqual([]);
      expect(out.chunks.length).toBeGreaterThan(1);
      expect(out.records).toEqual(values);
    }
  });
});

describe('ndjson serializer: encode', () => {
  const records: Rec[] = [
    { city: 'Zürich', e: '😀' },
    { n: 1, l: [true, null], o: { k: 'v' } },
  ];

  it('writes one compact JSON object per line with "\\n" by default; ensure_ascii escapes like Python', () => {
    const e = encoderOf(ndjson);
    expect([e.head(records), e.separator, e.tail]).toEqual(['', '', '']);
    const out = e.body(records);
    expect(out.every((b) => b < 0x80)).toBe(true);
    expect(out.toString('ascii')).toBe('{"city":"Z\\u00fcrich","e":"\\ud83d\\ude00"}\n{"n":1,"l":[true,null],"o":{"k":"v"}}\n');
    const pyLines = py(
      `import json,sys\nfor v in json.loads(sys.stdin.read()): sys.stdout.write(json.dumps(v, separators=(',', ':')) + "\\n")`,
      JSON.stringify(records),
    ).toString('ascii');
    expect(out.toString('ascii')).toBe(pyLines);
    expect(e.one(records[0]!).toString('ascii')).toBe('{"city":"Z\\u00fcrich","e":"\\ud83d\\ude00"}');
  });

  it('ensure_ascii false keeps UTF-8 in body and one', () => {
    const e = encoderOf(ndjson, { ensure_ascii: false });
    expect(e.body(records).toString('utf8')).toBe('{"city":"Zürich","e":"😀"}\n{"n":1,"l":[true,null],"o":{"k":"v"}}\n');
    expect(e.one(records[0]!).toString('utf8')).toBe('{"city":"Zürich","e":"😀"}');
  });

  it('newline sets the terminator after every record (not in one)', () => {
    const crlf = encoderOf(ndjson, { newline: '\r\n' });
    expect(crlf.body(records).toString('ascii')).toBe('{"city":"Z\\u00fcrich","e":"\\ud83d\\ude00"}\r\n{"n":1,"l":[true,null],"o":{"k":"v"}}\r\n');
    expect(crlf.one({ a: 1 }).toString()).toBe('{"a":1}');
    expect(
      encoderOf(ndjson, { newline: '\u001e' })
        .body([{ a: 1 }, { b: 2 }])
        .toString(),
    ).toBe('{"a":1}\u001e{"b":2}\u001e');
    // A CRLF file decodes back with our decoder too.
    expect(dec(crlf.body(records)).records).toEqual(records);
  });

  it('what we write, Python json.loads reads back to the same values, batch after batch', () => {
    const batches: Rec[][] = [records, [{ q: 'a "quoted"\nline\t\\', u: '\u2028東京' }], [{ empty: {} }]];
    for (const partial of [{}, { ensure_ascii: false }, { newline: '\r\n' }, { newline: ';;', ensure_ascii: false }]) {
      const e = encoderOf(ndjson, partial);
      const nl = (partial as { newline?: string }).newline ?? '\n';
      const payload = Buffer.concat(batches.map((b) => e.body(b)));
      expect(pyReadLines(payload, nl), JSON.stringify(partial)).toEqual(batches.flat());
    }
  });

  it('a batch stringified as one array is cut into the same lines as record by record, whatever the records hold', () => {
    // body() stringifies a batch of plain objects in calls of up to 128 records and cuts the text at
    // the `},{` between records; where a record holds `},{` itself, that call's records go record by
    // record (the others still in one call each); where one is not a plain object, all of them.
    class Point {
      constructor(readonly x: number) {}
    }
    const batches: Rec[][] = [
      Array.from({ length: 50 }, (_, i) => ({ i, name: `if.${i}`, v: i * 0.5, host: 'rtr-ü' })),
      [{ a: 'x},{y' }, { b: 1 }, { c: 2 }],
      [{ a: [{ k: 1 }, { k: 2 }] }, { b: [] }],
      [{}, {}, { a: {} }, {}],
      [{ a: 1 }, { toJSON: () => 'not an object' } as unknown as Rec, { b: 2 }],
      [{ a: 1 }, { toJSON: 'a field, not a method' }],
      [{ a: 1 }, new Point(3) as unknown as Rec],
      [Object.assign(Object.create(null) as Rec, { n: 1 }), { d: new Date(0) }],
      [{ a: undefined, f: () => 1, b: 2 }, { s: '\u2028\n"},{"' }],
      [{ only: 1 }],
      [],
      // Past one call's 128 records: a last call of one record, and one call of three that falls back.
      Array.from({ length: 129 }, (_, i) => ({ i })),
      Array.from({ length: 300 }, (_, i) => (i === 200 ? { s: 'x},{y' } : { i, t: 'é' })),
      // Calls of ASCII text and one, the last, not: the calls' text is written part by part into one buffer.
      Array.from({ length: 300 }, (_, i) => ({ i, t: i === 290 ? '東京 😀' : 'ascii' })),
      // A `},{` inside a string of the first call only, and of the last call only (of one record).
      Array.from({ length: 257 }, (_, i) => (i === 3 ? { s: '},{' } : { i })),
      Array.from({ length: 257 }, (_, i) => (i === 256 ? { s: 'a},{b' } : { i })),
    ];
    // One-character newlines are set in place of the `,` of each `},{` in the bytes; `,` and `{` make
    // a `},{` across two calls' text too, which is no boundary.
    for (const partial of [{}, { ensure_ascii: false }, { newline: '\r\n' }, { newline: '},{' }, { newline: ',' }, { newline: '{', ensure_ascii: false }]) {
      const e = encoderOf(ndjson, partial);
      const nl = (partial as { newline?: string }).newline ?? '\n';
      for (const b of batches) {
        const oneByOne = b.map((r) => JSON.stringify(r) + nl).join('');
        expect(e.body(b).toString('utf8'), JSON.stringify(partial)).toBe(
          (partial as { ensure_ascii?: boolean }).ensure_ascii === false
            ? oneByOne
            : oneByOne.replace(/[\u0080-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`),
        );
      }
    }
  });

  it('a record JSON cannot write throws as it did record by record (the BigInt, not a cut array)', () => {
    const e = encoderOf(ndjson);
    expect(() => e.body([{ a: 1 }, { n: 1n }])).toThrow(/BigInt/);
    const loop: Rec = { a: 1 };
    loop.self = loop;
    expect(() => e.body([{ a: 1 }, loop])).toThrow(/circular/);
  });
});
