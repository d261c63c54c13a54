import { describe, expect, it } from 'vitest';
import { chunksOf } from '../../../src/engine/chunker.js';
import { buildPlan } from '../../../src/engine/plan.js';
import { registry } from '../../../src/plugins/registry.js';
import { processChunk } from '../../../src/engine/process-chunk.js';
import { scanValue } from '../../../src/plugins/serializers/msgpack/scan.js';
import msgpack from '../../../src/plugins/serializers/msgpack/index.js';
import type { Rec } from '../../../src/plugins/types.js';
import { cfgOf, decodeChunk, decodeUnit, decoderOf, encoderOf, loadedSerializers, once, pipelineWith, pyJson, randInt, randomStream, rng } from './helpers.js';
import { LINEAR_64_READS, readsOf, workOf } from '../../helpers/pending-work.js';

// Python here has no msgpack module: the vectors come from a small encoder and decoder written in
// Python from the MessagePack specification (github.com/msgpack/msgpack/blob/master/spec.md), with
// a mode that picks the widest forms (uint64 for 1, str32 for "a", map32...) or random widths.
const PY_SPEC = `
import json, random, struct, sys, base64, datetime
def _len(n, fix, fixmax, tags, mode, r):
    # tags: the 8/16/32-bit length forms (None where the type has no 8-bit form)
    forms = []
    if fix is not None and n <= fixmax: forms.append(bytes([fix | n]))
    if tags[0] is not None and n < 256: forms.append(bytes([tags[0], n]))
    if n < 65536: forms.append(bytes([tags[1]]) + struct.pack(">H", n))
    forms.append(bytes([tags[2]]) + struct.pack(">I", n))
    return forms[0] if mode == "min" else forms[-1] if mode == "wide" else r.choice(forms)
def pack(v, mode="min", r=random):
    if v is None: return b"\\xc0"
    if v is True: return b"\\xc3"
    if v is False: return b"\\xc2"
    if isinstance(v, int):
        forms = []
        if 0 <= v <= 127: forms.append(bytes([v]))
        if -32 <= v < 0: forms.append(struct.pack(">b", v))
        if v >= 0:
            for tag, fmt, lim in ((0xcc, ">B", 1 << 8), (0xcd, ">H", 1 << 16), (0xce, ">I", 1 << 32), (0xcf, ">Q", 1 << 64)):
                if v < lim: forms.append(bytes([tag]) + struct.pack(fmt, v))
        else:
            for tag, fmt, lim in ((0xd0, ">b", 1 << 7), (0xd1, ">h", 1 << 15), (0xd2, ">i", 1 << 31), (0xd3, ">q", 1 << 63)):
                if -lim <= v: forms.append(bytes([tag]) + struct.pack(fmt, v))
        return forms[0] if mode == "min" else forms[-1] if mode == "wide" else r.choice(forms)
    if isinstance(v, float): return b"\\xcb" + struct.pack(">d", v)
    if isinstance(v, F32): return b"\\xca" + struct.pack(">f", v.v)
    if isinstance(v, str):
        b = v.encode("utf-8")
        return _len(len(b), 0xa0, 31, (0xd9, 0xda, 0xdb), mode, r) + b
    if isinstance(v, bytes): return _len(len(v), None, 0, (0xc4, 0xc5, 0xc6), mode, r) + v
    if isinstance(v, list): return _len(len(v), 0x90, 15, (None, 0xdc, 0xdd), mode, r) + b"".join(pack(x, mode, r) for x in v)
    if isinstance(v, dict): return _len(len(v), 0x80, 15, (None, 0xde, 0xdf), mode, r) + b"".join(pack(k, mode, r) + pack(x, mode, r) for k, x in v.items())
    if isinstance(v, Ext): return pack_ext(v.type, v.data)
    raise TypeError(v)
def pack_ext(t, data):
    n = len(data)
    fixed = {1: 0xd4, 2: 0xd5, 4: 0xd6, 8: 0xd7, 16: 0xd8}
    if n in fixed: return bytes([fixed[n]]) + struct.pack(">b", t) + data
    return bytes([0xc7, n]) + struct.pack(">b", t) + data
class F32:
    def __init__(self, v): self.v = v
class Ext:
    def __init__(self, t, data): self.type, self.data = t, data
def js(v):
    # What the serializer should make of a value: ints beyond 2^53 as decimal strings, bytes tagged.
    if isinstance(v, bool) or v is None: return v
    if isinstance(v, int): return v if -(1 << 53) <= v <= (1 << 53) else {"__big__": str(v)}
    if isinstance(v, F32): return struct.unpack(">f", struct.pack(">f", v.v))[0]
    if isinstance(v, bytes): return {"__bin__": v.hex()}
    if isinstance(v, list): return [js(x) for x in v]
    if isinstance(v, dict): return {k: js(x) for k, x in v.items()}
    return v

def unpack(b, i=0):
    t = b[i]
    if t <= 0x7f: return t, i + 1
    if t >= 0xe0: return t - 256, i + 1
    if 0x80 <= t <= 0x8f: return _map(b, i + 1, t & 15)
    if 0x90 <= t <= 0x9f: return _arr(b, i + 1, t & 15)
    if 0xa0 <= t <= 0xbf: n = t & 31; return b[i + 1:i + 1 + n].decode("utf-8"), i + 1 + n
    if t == 0xc0: return None, i + 1
    if t == 0xc2: return False, i + 1
    if t == 0xc3: return True, i + 1
    lens = {0xc4: 1, 0xc5: 2, 0xc6: 4, 0xd9: 1, 0xda: 2, 0xdb: 4}
    if t in lens:
        k = lens[t]; n = int.from_bytes(b[i + 1:i + 1 + k], "big"); s = b[i + 1 + k:i + 1 + k + n]
        return ({"__bin__": s.hex()} if t <= 0xc6 else s.decode("utf-8")), i + 1 + k + n
    nums = {0xca: ">f", 0xcb: ">d", 0xcc: ">B", 0xcd: ">H", 0xce: ">I", 0xcf: ">Q", 0xd0: ">b", 0xd1: ">h", 0xd2: ">i", 0xd3: ">q"}
    if t in nums:
        k = struct.calcsize(nums[t]); return struct.unpack(nums[t], b[i + 1:i + 1 + k])[0], i + 1 + k
    if t in (0xdc, 0xdd, 0xde, 0xdf):
        k = 2 if t in (0xdc, 0xde) else 4; n = int.from_bytes(b[i + 1:i + 1 + k], "big")
        return (_arr if t <= 0xdd else _map)(b, i + 1 + k, n)
    fixext = {0xd4: 1, 0xd5: 2, 0xd6: 4, 0xd7: 8, 0xd8: 16}
    if t in fixext or t in (0xc7, 0xc8, 0xc9):
        if t in fixext: n = fixext[t]; j = i + 1
        else: k = {0xc7: 1, 0xc8: 2, 0xc9: 4}[t]; n = int.from_bytes(b[i + 1:i + 1 + k], "big"); j = i + 1 + k
        et = struct.unpack(">b", b[j:j + 1])[0]; data = b[j + 1:j + 1 + n]
        if et == -1 and n == 4: return {"__ts__": int.from_bytes(data, "big")}, j + 1 + n
        if et == -1 and n == 8:
            x = int.from_bytes(data, "big"); return {"__ts__": x & 0x3ffffffff, "__ns__": x >> 34}, j + 1 + n
        return {"__ext__": et, "data": data.hex()}, j + 1 + n
    raise ValueError("bad type byte %x at %d" % (t, i))
def _arr(b, i, n):
    out = []
    for _ in range(n):
        v, i = unpack(b, i); out.append(v)
    return out, i
def _map(b, i, n):
    out = {}
    for _ in range(n):
        k, i = unpack(b, i); v, i = unpack(b, i); out[k] = v
    return out, i
def unpack_all(b):
    out, i = [], 0
    while i < len(b):
        v, i = unpack(b, i); out.append(v)
    return out
`;

/** Python's values -> what our decoder yields: tagged big ints as strings, tagged bytes as Buffers. */
function fromPy(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(fromPy);
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if ('__big__' in o) return o.__big__;
    if ('__bin__' in o) return Buffer.from(o.__bin__ as string, 'hex');
    return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, fromPy(x)]));
  }
  return v;
}

interface PyStream {
  hex: string;
  values: unknown[];
}

/** Python packs random interface-like records (every type, all length forms) into one stream. */
function pythonStream(seed: number, mode: 'min' | 'wide' | 'mixed', count = 60): { bytes: Buffer; records: Rec[] } {
  const out = pyJson<PyStream>(
    `${PY_SPEC}
a = json.loads(sys.stdin.read())
r = random.Random(a["seed"])
alphabet = ["a", "Z", " ", "ü", "東", "😀", '"', "\\n", "\\u0000"]
def val(depth=0):
    k = r.random()
    if k < 0.15: return r.choice([0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**53 - 1, 2**53, 2**53 + 1, 2**63, 2**64 - 1, -1, -32, -33, -128, -129, -32768, -32769, -2**31, -2**31 - 1, -2**53, -2**53 - 1, -2**63])
    if k < 0.25: return r.choice([0.5, -1.25, 1e300, 3.141592653589793, 0.1])
    if k < 0.3: return F32(r.choice([0.1, 1.5, -2.25]))
    if k < 0.35: return r.choice([None, True, False])
    if k < 0.4: return bytes(r.randrange(256) for _ in range(r.randint(0, 40)))
    if k < 0.5 and depth < 3: return [val(depth + 1) for _ in range(r.randint(0, 4))]
    if k < 0.6 and depth < 3: return {"k%d" % i: val(depth + 1) for i in range(r.randint(0, 4))}
    if k < 0.62: return "".join(r.choice(alphabet) for _ in range(300))
    return "".join(r.choice(alphabet) for _ in range(r.randint(0, 12)))
values = []
for i in range(a["count"]):
    if i % 17 == 5:
        values.append(val())  # not a map: wrapped as _value
    else:
        rec = {"host": "rtr-%03d" % (i % 50), "ifIndex": i, "ifHCInOctets": r.choice([i * 7919, 2**53 + i, 2**64 - 1 - i])}
        for j in range(r.randint(0, 6)): rec["f%d" % j] = val()
        values.append(rec)
data = b"".join(pack(v, a["mode"], r) for v in values)
print(json.dumps({"hex": data.hex(), "values": [js(v) for v in values]}))
`,
    JSON.stringify({ seed, mode, count }),
  );
  const records = out.values.map((v) => {
    const x = fromPy(v);
    return x !== null && typeof x === 'object' && !Array.isArray(x) && !Buffer.isBuffer(x) ? (x as Rec) : { _value: x };
  });
  return { bytes: Buffer.from(out.hex, 'hex'), records };
}

/** Python's spec decoder reading bytes we wrote (every value of the stream). */
const pyUnpack = (bytes: Buffer) => pyJson<unknown[]>(`${PY_SPEC}\nprint(json.dumps([js(v) for v in unpack_all(sys.stdin.buffer.read())]))`, bytes);

/** Python's spec encoder: the bytes of values given as JSON (ints stay ints). */
const pyPack = (values: unknown[], mode: 'min' | 'wide' = 'min') =>
  Buffer.from(
    pyJson<string>(`${PY_SPEC}\nprint(json.dumps(b"".join(pack(v, "${mode}") for v in json.loads(sys.stdin.read())).hex()))`, JSON.stringify(values)),
    'hex',
  );

const decodeMp = (bytes: Buffer, targetBytes?: number) => decodeUnit(decoderOf(msgpack), bytes, { targetBytes });

describe('msgpack serializer: configuration', () => {
  it('has no parameters; split framing; extension msgpack', () => {
    expect(cfgOf(msgpack)).toEqual({});
    expect(loadedSerializers('{type: msgpack}').input).toEqual({ type: 'msgpack' });
    expect(() => loadedSerializers('{type: msgpack, strict: true}')).toThrow(/strict/);
    expect(decoderOf(msgpack).framing.kind).toBe('split');
    expect(encoderOf(msgpack).extension).toBe('msgpack');
  });
});

describe('msgpack serializer: decode', () => {
  it('decodes spec-built streams (smallest, widest and random length forms) over random piece sizes and read splits', async () => {
    for (const [i, mode] of (['min', 'wide', 'mixed'] as const).entries()) {
      const { bytes, records } = pythonStream(100 + i, mode);
      const r = rng(i + 1);
      for (let round = 0; round < 12; round++) {
        const targetBytes = randInt(r, 1, 3000);
        const out = await decodeUnit(decoderOf(msgpack), randomStream(bytes, r, randInt(r, 1, 60)), { targetBytes });
        const where = `${mode} round ${round} targetBytes ${targetBytes}`;
        expect(out.errors, where).toEqual([]);
        expect(out.records, where).toEqual(records);
        if (targetBytes < 500) expect(out.chunks.length, where).toBeGreaterThan(1);
      }
    }
  });

  it('pieces are bounded: about targetBytes, at most record_chunk_size values, cut between values', async () => {
    const { bytes, records } = pythonStream(7, 'min', 300);
    const out = await decodeUnit(decoderOf(msgpack), randomStream(bytes, rng(2), 500), { targetBytes: 1024 });
    expect(out.records).toEqual(records);
    // Each piece is cut at the first value boundary at or past 1024 bytes.
    expect(out.chunks.length).toBeGreaterThan(5);
    for (const c of out.chunks.slice(0, -1)) {
      expect(c.data.length).toBeGreaterThanOrEqual(1024);
      let before = 0;
      for (let p = 0; p < c.data.length; p = scanValue(c.data, p).end) before = p;
      expect(before).toBeLessThan(1024);
    }
    const capped = await decodeUnit(decoderOf(msgpack), bytes, { targetBytes: 1 << 20, maxLines: 7 });
    expect(capped.chunks.length).toBe(Math.ceil(300 / 7));
    expect(capped.records).toEqual(records);
  });

  it('a value that is not a map is a record {_value}', async () => {
    const out = await decodeMp(pyPack([1, 'x', [1, 2], null, { a: 1 }]));
    expect(out.records).toEqual([{ _value: 1 }, { _value: 'x' }, { _value: [1, 2] }, { _value: null }, { a: 1 }]);
  });

  it('64-bit integers: numbers up to 2^53 in magnitude, decimal strings beyond (also nested)', async () => {
    const bytes = Buffer.concat([
      pyPack([{ a: 2 ** 53 - 1, b: -(2 ** 53 - 1), c: 2 ** 53, d: 1 }], 'wide'),
      Buffer.from(
        pyJson<string>(
          `${PY_SPEC}\nprint(json.dumps(pack({"e": 2**53 + 1, "f": 2**64 - 1, "g": -2**63, "h": -2**53 - 1, "n": [2**63, {"x": 2**60}]}, "min").hex()))`,
        ),
        'hex',
      ),
    ]);
    const out = await decodeMp(bytes);
    expect(out.errors).toEqual([]);
    expect(out.records).toEqual([
      { a: 2 ** 53 - 1, b: -(2 ** 53 - 1), c: 2 ** 53, d: 1 },
      {
        e: '9007199254740993',
        f: '18446744073709551615',
        g: '-9223372036854775808',
        h: '-9007199254740993',
        n: ['9223372036854775808', { x: '1152921504606846976' }],
      },
    ]);
  });

  it('the timestamp extension (-1) is a Date; str, bin and floats as the spec says', async () => {
    const hex = pyJson<string>(`${PY_SPEC}
print(json.dumps((pack({"t": Ext(-1, struct.pack(">I", 1763715600)), "t64": Ext(-1, struct.pack(">Q", (500000000 << 34) | 1763715600)), "s": "Zürich", "b": b"\\x00\\xff", "f": F32(0.5), "d": 0.1})).hex()))`);
    const out = await decodeMp(Buffer.from(hex, 'hex'));
    expect(out.errors).toEqual([]);
    expect(out.records).toEqual([
      { t: new Date(1763715600 * 1000), t64: new Date(1763715600 * 1000 + 500), s: 'Zürich', b: Buffer.from([0, 255]), f: 0.5, d: 0.1 },
    ]);
  });

  it('a corrupt byte (0xc1) is one error with the bytes up to the next record; records before and after decode', async () => {
    const recs = [{ n: 1 }, { n: 2, s: 'x' }, { n: 3 }, { n: 4 }];
    const good = recs.map((r) => pyPack([r]));
    const junk = Buffer.from([0xc1, 0x05, 0xa3, 0x41]); // c1, then bytes that are no map
    // A map whose first key is not a string, and an empty map, do not count as a record start.
    const junk2 = Buffer.from([0xc1, 0x81, 0x01, 0x02, 0x80, 0xde, 0x00, 0x00]);
    const bytes = Buffer.concat([good[0]!, good[1]!, junk, good[2]!, junk2, good[3]!]);
    for (const targetBytes of [1, 7, 1 << 20]) {
      for (const seed of [1, 2, 3]) {
        const out = await decodeUnit(decoderOf(msgpack), randomStream(bytes, rng(seed), 3), { targetBytes });
        expect(out.records, `${targetBytes}`).toEqual(recs);
        expect(out.errors.map((e) => e.raw.toString('hex'))).toEqual([junk.toString('hex'), junk2.toString('hex')]);
        expect(out.errors[0]!.message).toMatch(
          /^MessagePack piece \d+, byte \d+: invalid value \(a 0xc1 byte, or a size over 268435456 bytes, in it\); 4 bytes up to the next record skipped$/,
        );
      }
    }
  });

  it('a corrupt length inside a record: the record up to the next record start is the error', async () => {
    const a = pyPack([{ n: 1 }]);
    const b = pyPack([{ n: 2, s: 'abc' }]);
    const bad = Buffer.from(b);
    bad[bad.indexOf(0xa3)] = 0xdb; // str32 with a length of 0x61626300 (> the limit): invalid
    const c = pyPack([{ n: 3 }]);
    const out = await decodeMp(Buffer.concat([a, bad, c]), 1);
    expect(out.records).toEqual([{ n: 1 }, { n: 3 }]);
    expect(out.errors.map((e) => e.raw.toString('hex'))).toEqual([bad.toString('hex')]);
  });

  it('a truncated last value is an error with its bytes; everything before it decodes', async () => {
    const full = pyPack([{ n: 1 }, { n: 2, s: 'hello' }]);
    const cut = full.subarray(0, full.length - 3);
    for (const targetBytes of [1, 1 << 20]) {
      const out = await decodeMp(cut, targetBytes);
      expect(out.records).toEqual([{ n: 1 }]);
      expect(out.errors.map((e) => e.raw.toString('hex'))).toEqual([cut.subarray(pyPack([{ n: 1 }]).length).toString('hex')]);
      expect(out.errors[0]!.message).toMatch(/truncated value/);
    }
  });

  it('a value msgpackr will not decode (unknown extension type, a map as a key) is an error with exactly its bytes', async () => {
    const hex = pyJson<string>(`${PY_SPEC}
print(json.dumps((pack({"n": 1}) + pack({"x": Ext(5, b"\\x01\\x02\\x03\\x04")}) + bytes([0x81, 0x81, 0x01, 0x02, 0x03]) + pack({"n": 2})).hex()))`);
    const bytes = Buffer.from(hex, 'hex');
    const out = await decodeMp(bytes);
    expect(out.records).toEqual([{ n: 1 }, { n: 2 }]);
    expect(out.errors.map((e) => e.raw.toString('hex'))).toEqual(['81a178d60501020304', '8181010203']);
  });

  it('runs through the engine: MessagePack in, NDJSON out, the corrupt stretch as a parse error', async () => {
    const config = pipelineWith('{type: msgpack}', '{type: ndjson}', '  record_chunk_size: 2\n');
    const plan = buildPlan(config, { registry });
    const bytes = Buffer.concat([pyPack([{ a: 1 }, { a: 2 }]), Buffer.from([0xc1]), pyPack([{ a: 3 }, 'x'])]);
    let payload = '';
    const raws: string[] = [];
    for await (const c of chunksOf(once(bytes), plan.decoder.framing, { targetBytes: 1 << 20, maxLines: config.record_chunk_size })) {
      const out = processChunk(plan, { ...c, meta: {} }, { keepRecords: false });
      payload += Buffer.from(out.sinks[0]!.payload).toString('utf8');
      for (const e of out.parseErrors) raws.push(Buffer.from(e.raw!).toString('hex'));
    }
    expect(raws).toEqual(['c1']);
    expect(payload).toBe('{"a":1}\n{"a":2}\n{"a":3}\n{"_value":"x"}\n');
  });

  it('a message (no split) decodes the same way', () => {
    const out = decodeChunk(decoderOf(msgpack), { data: pyPack([{ a: 1 }, { b: 'x' }]) });
    expect(out.records).toEqual([{ a: 1 }, { b: 'x' }]);
  });
});

describe('msgpack serializer: encode', () => {
  it('writes standard MessagePack the spec decoder reads: maps, every scalar, bigint, Date, bytes, undefined as nil', () => {
    const e = encoderOf(msgpack);
    const r: Rec = {
      s: 'Zürich 😀',
      i: 1,
      neg: -33,
      big: 2 ** 40,
      f: 1.5,
      t: true,
      n: null,
      u: undefined,
      b64: 2n ** 63n,
      huge: 2n ** 70n,
      arr: [1, 'x', { y: [] }],
      obj: { a: {} },
      bin: Buffer.from([1, 2]),
      when: new Date(1763715600000),
    };
    const py = pyUnpack(e.one(r));
    expect(py).toEqual([
      {
        s: 'Zürich 😀',
        i: 1,
        neg: -33,
        big: 2 ** 40,
        f: 1.5,
        t: true,
        n: null,
        u: null,
        b64: { __big__: '9223372036854775808' },
        huge: '1180591620717411303424',
        arr: [1, 'x', { y: [] }],
        obj: { a: {} },
        bin: { __bin__: '0102' },
        when: { __ts__: 1763715600 },
      },
    ]);
  });

  it('batches are concatenated values: a file of many batches is one stream', async () => {
    const { records } = pythonStream(9, 'mixed', 40);
    const e = encoderOf(msgpack);
    expect([e.head(records), e.separator, e.tail]).toEqual(['', '', '']);
    const bytes = Buffer.concat([e.body(records.slice(0, 15)), e.body(records.slice(15))]);
    const py = pyUnpack(bytes).map(fromPy);
    // Decimal strings stay strings on the way out (documented): compare with that.
    expect(py).toEqual(records);
    const back = await decodeUnit(decoderOf(msgpack), randomStream(bytes, rng(3), 40), { targetBytes: 200 });
    expect(back.errors).toEqual([]);
    expect(back.records).toEqual(records);
  });

  it('maps use the standard map types (no msgpackr record extension), fixmap/map16 by size', () => {
    const e = encoderOf(msgpack);
    expect(e.one({ a: 1 }).toString('hex')).toBe('81a16101');
    expect(e.one({}).toString('hex')).toBe('80');
    const many = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, i]));
    expect(e.one(many).subarray(0, 3).toString('hex')).toBe('de0010');
  });
});

describe('msgpack serializer: a value in many reads', () => {
  it('a map of 65,536 items in 64 reads is scanned O(log n) times and copied about twice (no join and rescan per read)', async () => {
    const n = 1 << 16;
    const items = Buffer.alloc(n);
    for (let i = 0; i < n; i++) items[i] = i & 0x7f; // positive fixints
    // {"a": [0, 1, ...]} (array32), then {"b": 1}
    const big = Buffer.concat([Buffer.from([0x81, 0xa1, 0x61, 0xdd, 0, 1, 0, 0]), items]);
    const bytes = Buffer.concat([big, Buffer.from([0x81, 0xa1, 0x62, 0x01])]);
    let out: Awaited<ReturnType<typeof decodeUnit>> | undefined;
    const work = await workOf(async () => (out = await decodeUnit(decoderOf(msgpack), readsOf(bytes, 64), { targetBytes: 1 << 20 })));
    expect(out!.errors).toEqual([]);
    expect(out!.records).toEqual([{ a: [...items] }, { b: 1 }]);
    expect(work.incompleteLooks).toBeGreaterThan(0);
    expect(work.incompleteLooks).toBeLessThanOrEqual(LINEAR_64_READS.maxLooks);
    expect(work.copiedBytes).toBeLessThanOrEqual(LINEAR_64_READS.maxCopiesPerByte * bytes.length);
  });
});
