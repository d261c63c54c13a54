import { describe, expect, it } from 'vitest';
import text from '../../../src/plugins/serializers/text/index.js';
import type { Rec } from '../../../src/plugins/types.js';
import { cfgOf, decodeChunk, decodeUnit, decoderOf, encoderOf, loadedSerializers, py, randomStream, rng } from './helpers.js';

const dec = (data: string | Buffer, partial: Record<string, unknown> = {}, firstLine = 1) =>
  decodeChunk(decoderOf(text, partial), { data: Buffer.from(data), firstLine });

// Python writes the bytes in the given codec (the input is UTF-8 on stdin).
const pyEncode = (s: string, codec: string) =>
  py(`import sys; sys.stdout.buffer.write(sys.stdin.buffer.read().decode("utf-8").encode(${JSON.stringify(codec)}))`, Buffer.from(s, 'utf8'));

describe('text serializer: configuration', () => {
  it('defaults: utf-8, skip_empty, line_field _line, include_line_num, newline "\\n"', () => {
    expect(cfgOf(text)).toEqual({ encoding: 'utf-8', skip_empty: true, line_field: '_line', include_line_num: true, newline: '\n' });
    expect(loadedSerializers('{type: text}').input).toEqual({
      type: 'text',
      encoding: 'utf-8',
      skip_empty: true,
      line_field: '_line',
      include_line_num: true,
      newline: '\n',
    });
    expect(encoderOf(text).extension).toBe('txt');
  });

  it('lint refuses an unknown encoding and accepts real ones', () => {
    expect(text.lint!(cfgOf(text, { encoding: 'klingon-8' }))).toHaveLength(1);
    for (const encoding of ['utf-8', 'UTF8', 'latin1', 'iso-8859-1', 'windows-1252', 'utf-16le', 'utf_16le'])
      expect(text.lint!(cfgOf(text, { encoding }))).toEqual([]);
  });

  it('line framing for "\\n" and "\\r\\n"; any other terminator needs the whole unit', () => {
    expect(decoderOf(text).framing.kind).toBe('lines');
    expect(decoderOf(text, { newline: '\r\n' }).framing.kind).toBe('lines');
    expect(decoderOf(text, { newline: ';' }).framing.kind).toBe('whole');
    expect(decoderOf(text).framing.headerLines ?? 0).toBe(0);
  });

  it('UTF-16 text is read whole: a 0x0A byte there is not a line end', () => {
    for (const encoding of ['utf-16le', 'UTF-16', 'utf_16be']) expect(decoderOf(text, { encoding }).framing.kind, encoding).toBe('whole');
    for (const encoding of ['latin1', 'windows-1252', 'utf8']) expect(decoderOf(text, { encoding }).framing.kind, encoding).toBe('lines');
  });
});

describe('text serializer: decode', () => {
  it('one record per line with _line and the 1-based _line_num; a last line without newline is kept', () => {
    expect(dec('first\nsecond line\n  third  ').records).toEqual([
      { _line: 'first', _line_num: 1 },
      { _line: 'second line', _line_num: 2 },
      { _line: '  third  ', _line_num: 3 },
    ]);
  });

  it('skip_empty true drops empty and whitespace-only lines but keeps the numbering', () => {
    expect(dec('a\n\n \t \nb\n\n').records).toEqual([
      { _line: 'a', _line_num: 1 },
      { _line: 'b', _line_num: 4 },
    ]);
  });

  it('skip_empty false keeps them', () => {
    expect(dec('a\n\n \t \nb\n', { skip_empty: false }).records).toEqual([
      { _line: 'a', _line_num: 1 },
      { _line: '', _line_num: 2 },
      { _line: ' \t ', _line_num: 3 },
      { _line: 'b', _line_num: 4 },
    ]);
  });

  it('line_field names the field; include_line_num false leaves _line_num out', () => {
    expect(dec('x\ny\n', { line_field: 'message', include_line_num: false }).records).toEqual([{ message: 'x' }, { message: 'y' }]);
  });

  it('CRLF input loses its "\\r" (default newline and newline "\\r\\n")', () => {
    for (const partial of [{}, { newline: '\r\n' }]) {
      expect(dec('a\r\nb\r\n\r\nc', partial).records).toEqual([
        { _line: 'a', _line_num: 1 },
        { _line: 'b', _line_num: 2 },
        { _line: 'c', _line_num: 4 },
      ]);
    }
  });

  it('firstLine of the chunk numbers the lines', () => {
    expect(dec('x\ny\n', {}, 41).records).toEqual([
      { _line: 'x', _line_num: 41 },
      { _line: 'y', _line_num: 42 },
    ]);
  });

  it('encoding latin1 reads real Latin-1 bytes (written by Python); as UTF-8 the same bytes are broken', () => {
    const lines = ['Zürich café', 'Ñandú ÿ ß ©', 'plain'];
    const bytes = pyEncode(lines.join('\n') + '\n', 'latin-1');
    expect(bytes.includes(0xfc)).toBe(true); // ü is one byte in Latin-1
    expect(bytes.length).toBe(Buffer.byteLength(lines.join('\n') + '\n', 'latin1'));
    expect(dec(bytes, { encoding: 'latin1', include_line_num: false }).records).toEqual(lines.map((l) => ({ _line: l })));
    expect(dec(bytes, { encoding: 'iso-8859-1', include_line_num: false }).records).toEqual(lines.map((l) => ({ _line: l })));
    const asUtf8 = dec(bytes, { include_line_num: false }).records.map((r) => r._line);
    expect(asUtf8[0]).toContain('\ufffd');
    expect(asUtf8[2]).toBe('plain');
  });

  it('utf-8 (default) reads multi-byte characters', () => {
    expect(dec(Buffer.from('東京 😀\nZürich\n', 'utf8'), { include_line_num: false }).records).toEqual([{ _line: '東京 😀' }, { _line: 'Zürich' }]);
  });

  it('_line_num counts lines across chunks of a big unit (the chunker passes firstLine)', async () => {
    const lines = Array.from({ length: 500 }, (_, i) => (i % 7 === 3 ? '' : `line ${i + 1} ü€ ${'x'.repeat(i % 13)}`));
    const bytes = Buffer.from(lines.join('\n') + '\n', 'utf8');
    const expected = lines.flatMap((l, i) => (l === '' ? [] : [{ _line: l, _line_num: i + 1 }]));
    for (let seed = 1; seed <= 10; seed++) {
      const out = await decodeUnit(decoderOf(text), randomStream(bytes, rng(seed), 13), { targetBytes: 50 + seed * 37 });
      expect(out.chunks.length, `seed ${seed}`).toBeGreaterThan(5);
      expect(out.records, `seed ${seed}`).toEqual(expected);
    }
  });

  it('a custom newline like ";" splits the whole unit on it (not on "\\n"), numbering from 1', async () => {
    const unit = Buffer.from('alpha;beta; ;gamma\nstill gamma;delta', 'utf8');
    for (let seed = 1; seed <= 5; seed++) {
      const out = await decodeUnit(decoderOf(text, { newline: ';' }), randomStream(unit, rng(seed), 4), { targetBytes: 3 });
      expect(out.chunks).toHaveLength(1);
      expect(out.records).toEqual([
        { _line: 'alpha', _line_num: 1 },
        { _line: 'beta', _line_num: 2 },
        { _line: 'gamma\nstill gamma', _line_num: 4 },
        { _line: 'delta', _line_num: 5 },
      ]);
    }
    expect(dec('a||b||', { newline: '||', include_line_num: false }).records).toEqual([{ _line: 'a' }, { _line: 'b' }]);
  });

  it('utf-16le text survives the chunker: records are right however the unit is cut', async () => {
    const lines = Array.from({ length: 120 }, (_, i) => `zeile ${i + 1} Zürich Ċ ${'€'.repeat(i % 4)}`);
    const bytes = pyEncode(lines.join('\n') + '\n', 'utf-16-le');
    const expected = lines.map((l, i) => ({ _line: l, _line_num: i + 1 }));
    expect(decodeChunk(decoderOf(text, { encoding: 'utf-16le' }), { data: bytes, firstLine: 1 }).records).toEqual(expected);
    for (const targetBytes of [7, 64, 1000]) {
      const out = await decodeUnit(decoderOf(text, { encoding: 'utf-16le' }), randomStream(bytes, rng(targetBytes), 9), { targetBytes });
      expect(out.records, `targetBytes ${targetBytes}`).toEqual(expected);
    }
  });
});

describe('text serializer: encode', () => {
  it('writes the line field of every record, each followed by the newline', () => {
    const e = encoderOf(text);
    expect([e.head([]), e.separator, e.tail]).toEqual(['', '', '']);
    expect(e.body([{ _line: 'a', _line_num: 1 }, { _line: 'Zürich 😀' }]).toString('utf8')).toBe('a\nZürich 😀\n');
    expect(e.one({ _line: 'only' }).toString()).toBe('only');
  });

  it('records without the line field are written as their JSON; non-string values as JSON', () => {
    const e = encoderOf(text);
    const out = e.body([{ other: 1, s: 'x' }, { _line: 42 }, { _line: { k: ['v'] } }, { _line: null }, { _line: '' }]).toString();
    expect(out).toBe('{"other":1,"s":"x"}\n42\n{"k":["v"]}\nnull\n\n');
    expect(e.one({ other: true }).toString()).toBe('{"other":true}');
  });

  it('line_field and newline are used when writing', () => {
    const e = encoderOf(text, { line_field: 'message', newline: '\r\n' });
    expect(e.body([{ message: 'one' }, { message: 'two', _line: 'ignored' }, { _line: 'not mine' }]).toString()).toBe('one\r\ntwo\r\n{"_line":"not mine"}\r\n');
    expect(
      encoderOf(text, { newline: ';' })
        .body([{ _line: 'a' }, { _line: 'b' }])
        .toString(),
    ).toBe('a;b;');
  });

  it('round trip: what we write decodes back to the same lines, Python sees the same lines', async () => {
    const lines = ['alpha', 'Zürich 😀', '  padded  ', 'tab\there', 'last'];
    for (const newline of ['\n', '\r\n', ';']) {
      const body = encoderOf(text, { newline }).body(lines.map((l) => ({ _line: l })));
      const back = await decodeUnit(decoderOf(text, { newline, include_line_num: false }), randomStream(body, rng(5), 3), { targetBytes: 9 });
      expect(
        back.records.map((r: Rec) => r._line),
        JSON.stringify(newline),
      ).toEqual(lines);
      const pyLines = JSON.parse(
        py(`import json,sys; t=sys.stdin.buffer.read().decode("utf-8"); print(json.dumps(t.split(${JSON.stringify(newline)})[:-1]))`, body).toString(),
      ) as string[];
      expect(pyLines).toEqual(lines);
    }
  });
});

describe('text encoding on write', () => {
  it('writes latin1 and utf-16le bytes, and refuses encodings it cannot write', async () => {
    const { Value } = await import('@sinclair/typebox/value');
    const enc = (encoding: string) => text.encoder!(Value.Default(text.config, { encoding }) as never);
    expect([...enc('latin1').body([{ _line: 'Zürich' }])]).toEqual([...Buffer.from('Zürich\n', 'latin1')]);
    expect(
      enc('utf-16le')
        .body([{ _line: 'é' }])
        .toString('utf16le'),
    ).toBe('é\n');
    expect(() => enc('windows-1252')).toThrow(/cannot write encoding "windows-1252"/);
  });
});
