import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import bytes from '../../../src/plugins/serializers/bytes/index.js';
import { cfgOf, decodeChunk, decodeUnit, decoderOf, encoderOf, loadedSerializers, py, pyJson, randomStream, rng } from './helpers.js';

/** Every byte value 0..255, then the same reversed: binary data that is not valid UTF-8. */
const ALL = Buffer.from([...Array.from({ length: 256 }, (_, i) => i), ...Array.from({ length: 256 }, (_, i) => 255 - i)]);

// Python encodes the same bytes independently.
const pyViews = (data: Buffer) =>
  pyJson<{ base64: string; hex: string; size: number }>(
    `import base64,json,sys; b=sys.stdin.buffer.read(); print(json.dumps({"base64": base64.b64encode(b).decode(), "hex": b.hex(), "size": len(b)}))`,
    data,
  );

describe('bytes serializer: configuration', () => {
  it('defaults to base64 and accepts only base64, hex, none', () => {
    expect(cfgOf(bytes)).toEqual({ encoding: 'base64' });
    expect(loadedSerializers('{type: bytes, encoding: hex}').input).toEqual({ type: 'bytes', encoding: 'hex' });
    expect(Value.Check(bytes.config, { encoding: 'base32' })).toBe(false);
  });

  it('reads the whole unit as one record', () => {
    expect(decoderOf(bytes).framing).toEqual({ kind: 'whole' });
    expect(encoderOf(bytes).extension).toBe('bin');
  });
});

describe('bytes serializer: decode', () => {
  const views = pyViews(ALL);

  it('base64 (default): _raw is the base64 of the bytes, _size their count (as Python computes them)', () => {
    const { records, errors } = decodeChunk(decoderOf(bytes), { data: ALL });
    expect(errors).toEqual([]);
    expect(records).toEqual([{ _raw: views.base64, _size: 512 }]);
  });

  it('hex: _raw is the lower-case hex of the bytes', () => {
    expect(decodeChunk(decoderOf(bytes, { encoding: 'hex' }), { data: ALL }).records).toEqual([{ _raw: views.hex, _size: 512 }]);
  });

  it('none: _raw is the bytes as UTF-8 text; _size counts bytes, not characters', () => {
    const data = Buffer.from('Zürich 😀\n', 'utf8');
    expect(decodeChunk(decoderOf(bytes, { encoding: 'none' }), { data }).records).toEqual([{ _raw: 'Zürich 😀\n', _size: 13 }]);
  });

  it('a unit read in random pieces (the chunker concatenates) is still one record of all its bytes', async () => {
    const data = py('import random,sys; sys.stdout.buffer.write(random.Random(7).randbytes(5000))');
    expect(data.length).toBe(5000);
    const views5k = pyViews(data);
    for (let seed = 1; seed <= 5; seed++) {
      const out = await decodeUnit(decoderOf(bytes, { encoding: 'hex' }), randomStream(data, rng(seed), 300), { targetBytes: 16 });
      expect(out.chunks).toHaveLength(1);
      expect(out.records).toEqual([{ _raw: views5k.hex, _size: 5000 }]);
    }
  });
});

describe('bytes serializer: encode', () => {
  it('reverses decode byte-exactly for base64 and hex on binary data with all 256 byte values', () => {
    for (const encoding of ['base64', 'hex']) {
      const rec = decodeChunk(decoderOf(bytes, { encoding }), { data: ALL }).records[0]!;
      const e = encoderOf(bytes, { encoding });
      expect(e.body([rec]).equals(ALL), encoding).toBe(true);
      expect(e.one(rec).equals(ALL), encoding).toBe(true);
    }
  });

  it('reverses what Python produced (its base64/hex turned back into the original bytes)', () => {
    const data = py('import random,sys; sys.stdout.buffer.write(random.Random(11).randbytes(777))');
    const v = pyViews(data);
    expect(encoderOf(bytes).one({ _raw: v.base64 }).equals(data)).toBe(true);
    expect(encoderOf(bytes, { encoding: 'hex' }).one({ _raw: v.hex }).equals(data)).toBe(true);
  });

  it('none writes _raw as UTF-8', () => {
    expect(encoderOf(bytes, { encoding: 'none' }).one({ _raw: 'Zürich 😀', _size: 12 }).toString('utf8')).toBe('Zürich 😀');
  });

  it('body concatenates the records with nothing between them; head, separator and tail are empty', () => {
    const e = encoderOf(bytes);
    expect([e.head([]), e.separator, e.tail]).toEqual(['', '', '']);
    const parts = [ALL.subarray(0, 10), ALL.subarray(300, 301), ALL.subarray(100, 200)];
    const out = e.body(parts.map((p) => ({ _raw: p.toString('base64') })));
    expect(out.equals(Buffer.concat(parts))).toBe(true);
  });

  it('a record decoded and not changed is written as the bytes it was read from, even bytes that none cannot hold as UTF-8', () => {
    for (const encoding of ['none', 'base64', 'hex']) {
      const rec = decodeChunk(decoderOf(bytes, { encoding }), { data: ALL }).records[0]!;
      expect(Object.keys(rec)).toEqual(['_raw', '_size']);
      const out = encoderOf(bytes, { encoding }).one(rec);
      expect(out.equals(ALL), encoding).toBe(true);
      expect(out.buffer, `${encoding}: no copy`).toBe(ALL.buffer);
    }
    // Read, the text is as before: invalid UTF-8 became U+FFFD.
    const rec = decodeChunk(decoderOf(bytes, { encoding: 'none' }), { data: ALL }).records[0]!;
    expect(rec._raw).toBe(ALL.toString('utf8'));
    expect(JSON.parse(JSON.stringify(rec))).toEqual({ _raw: ALL.toString('utf8'), _size: 512 });
  });

  it('a record whose _raw was assigned, copied or deleted is written from what it holds now', () => {
    const e = encoderOf(bytes, { encoding: 'none' });
    const fresh = () => decodeChunk(decoderOf(bytes, { encoding: 'none' }), { data: Buffer.from('original') }).records[0]!;
    const assigned = fresh();
    assigned._raw = 'changed';
    expect(e.one(assigned).toString()).toBe('changed');
    expect(Object.keys(assigned)).toEqual(['_raw', '_size']);
    expect(e.one({ ...fresh(), _size: 1 }).toString()).toBe('original'); // a copy: its plain _raw
    const removed = fresh();
    delete removed._raw;
    expect(e.one(removed).toString()).toBe('{"_size":8}');
  });

  it('a record without a string _raw is written as its JSON', () => {
    const e = encoderOf(bytes);
    expect(e.one({ a: 1, b: 'ü' }).toString('utf8')).toBe('{"a":1,"b":"ü"}');
    expect(e.body([{ _raw: 42 }]).toString('utf8')).toBe('{"_raw":42}');
  });
});
