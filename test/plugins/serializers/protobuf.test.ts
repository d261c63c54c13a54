import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPipelineText } from '../../../src/config/load.js';
import { formatDiagnostic } from '../../../src/config/diagnostics.js';
import { runPipeline } from '../../../src/engine/runner.js';
import { decodeMessageIndexes, readWireHeader } from '../../../src/plugins/common/schema-registry.js';
import protobuf from '../../../src/plugins/serializers/protobuf/index.js';
import type { Rec } from '../../../src/plugins/types.js';
import { startRegistryPeer, type RegistryPeer } from '../common/registry-peer.js';
import { cfgOf, decodeChunk, decodeUnit, decoderOf, encoderOf, loadedSerializers, randInt, randomStream, rng } from './helpers.js';
import { LINEAR_64_READS, readsOf, workOf } from '../../helpers/pending-work.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-protobuf-'));
const schemaDir = join(dir, 'schemas');
mkdirSync(join(schemaDir, 'sub'), { recursive: true });
process.env.SVC_SCHEMA_DIR = schemaDir;

const RICH_PROTO = `syntax = "proto3";
package telco.test;

enum Status {
  UNKNOWN = 0;
  UP = 1;
  DOWN = 2;
}

message Counter {
  string name = 1;
  uint64 value = 2;
}

message Sample {
  string host = 1;
  int32 if_index = 2;
  int64 octets = 3;
  uint64 big = 4;
  double ratio = 5;
  float f = 6;
  bool up = 7;
  bytes raw = 8;
  Status status = 9;
  repeated string tags = 10;
  map<string, int64> counters = 11;
  Counter main = 12;
  repeated Counter all = 13;
  sint32 delta = 14;
  fixed64 stamp = 15;
  oneof peer {
    string ip = 16;
    uint32 asn = 17;
  }
  message Nested {
    int32 x = 1;
  }
  Nested nested = 18;
  repeated int64 samples = 19;
}

message Batch {
  repeated Sample items = 1;
}
`;
writeFileSync(join(schemaDir, 'rich.proto'), RICH_PROTO);
const C = { schema_file: 'rich.proto', message_class: 'telco.test.Sample' };

/** protoc in the schema folder. */
const protoc = (args: string[], input: Buffer | string): Buffer => execFileSync('protoc', [`-I${schemaDir}`, ...args], { input, maxBuffer: 64 << 20 });

const textString = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
const textBytes = (b: Buffer) => `"${[...b].map((x) => '\\' + x.toString(8).padStart(3, '0')).join('')}"`;
const safe = (n: bigint): number | string => (n >= -(2n ** 53n - 1n) && n <= 2n ** 53n - 1n ? Number(n) : n.toString());

/** Samples as protobuf text format (for protoc) and as the records we expect to decode. */
function samples(n: number, seed: number): { text: string[]; records: Rec[] } {
  const r = rng(seed);
  const text: string[] = [];
  const records: Rec[] = [];
  const alphabet = ['a', 'Z', '7', ' ', 'ü', '東', '😀', '"', '\\', '-', ':'];
  const str = () => Array.from({ length: randInt(r, 0, 8) }, () => alphabet[randInt(r, 0, alphabet.length - 1)]).join('');
  const big = (bits: number, signed: boolean) => {
    let v = 0n;
    for (let i = 0; i < bits; i += 16) v = (v << 16n) | BigInt(randInt(r, 0, 0xffff));
    v &= (1n << BigInt(bits)) - 1n;
    return signed && r() < 0.5 ? -v : v;
  };
  for (let i = 0; i < n; i++) {
    const t: string[] = [];
    const rec: Rec = {
      host: '',
      if_index: 0,
      octets: 0,
      big: 0,
      ratio: 0,
      f: 0,
      up: false,
      raw: '',
      status: 'UNKNOWN',
      tags: [],
      counters: {},
      main: null,
      all: [],
      delta: 0,
      stamp: 0,
      nested: null,
      samples: [],
    };
    const host = `rtr-${i}-${str()}`;
    t.push(`host: ${textString(host)}`);
    rec.host = host;
    if (r() < 0.8) t.push(`if_index: ${(rec.if_index = randInt(r, 1, 100000))}`);
    const oct = big(r() < 0.5 ? 40 : 63, true);
    t.push(`octets: ${oct}`);
    rec.octets = safe(oct);
    if (r() < 0.7) {
      const b = big(64, false);
      t.push(`big: ${b}`);
      rec.big = safe(b);
    }
    if (r() < 0.7) t.push(`ratio: ${(rec.ratio = i / 4)}`);
    if (r() < 0.5) t.push(`f: ${(rec.f = 1.25)}`);
    if (r() < 0.5) t.push(`up: ${(rec.up = true)}`);
    if (r() < 0.7) {
      const raw = Buffer.from(Array.from({ length: randInt(r, 1, 12) }, () => randInt(r, 0, 255)));
      t.push(`raw: ${textBytes(raw)}`);
      rec.raw = raw.toString('base64');
    }
    const st = ['UNKNOWN', 'UP', 'DOWN'][randInt(r, 0, 2)]!;
    if (st !== 'UNKNOWN') t.push(`status: ${st}`);
    rec.status = st;
    rec.tags = Array.from({ length: randInt(r, 0, 3) }, () => str());
    for (const tag of rec.tags as string[]) t.push(`tags: ${textString(tag)}`);
    const counters: Rec = {};
    for (let k = randInt(r, 0, 3); k > 0; k--) {
      const key = `c${k}${randInt(r, 0, 9)}`; // distinct keys: a repeated key would be two entries on the wire
      const v = big(60, true);
      counters[key] = safe(v);
      t.push(`counters { key: "${key}" value: ${v} }`);
    }
    rec.counters = counters;
    if (r() < 0.5) {
      const v = big(64, false);
      rec.main = { name: 'in', value: safe(v) };
      t.push(`main { name: "in" value: ${v} }`);
    }
    rec.all = Array.from({ length: randInt(r, 0, 2) }, (_, k) => {
      t.push(`all { name: "n${k}" value: ${k} }`);
      return { name: `n${k}`, value: k };
    });
    if (r() < 0.5) t.push(`delta: ${(rec.delta = -randInt(r, 1, 1000))}`);
    if (r() < 0.3) {
      const v = big(64, false);
      t.push(`stamp: ${v}`);
      rec.stamp = safe(v);
    }
    const p = randInt(r, 0, 2);
    if (p === 1) t.push(`ip: "10.0.0.${(rec.ip = `10.0.0.${i % 256}`).split('.')[3]}"`);
    if (p === 2) t.push(`asn: ${(rec.asn = 64512 + i)}`);
    if (r() < 0.3) {
      rec.nested = { x: -i || 0 };
      t.push(`nested { x: ${-i} }`);
    }
    rec.samples = Array.from({ length: randInt(r, 0, 3) }, () => {
      const v = big(63, true);
      t.push(`samples: ${v}`);
      return safe(v);
    });
    text.push(t.join('\n'));
    records.push(rec);
  }
  return { text, records };
}

/** Reads the varint at pos (test-side, to take protoc's Batch apart). */
function varintAt(b: Buffer, pos: number): [number, number] {
  let v = 0;
  let mul = 1;
  for (;;) {
    const x = b[pos++]!;
    v += (x & 0x7f) * mul;
    mul *= 128;
    if (!(x & 0x80)) return [v, pos];
  }
}

/** protoc encodes the samples as one Batch; field 1's tag byte before each item leaves a length-delimited stream. */
function protocDelimited(text: string[]): { stream: Buffer; messages: Buffer[] } {
  const batch = protoc(['--encode=telco.test.Batch', '--deterministic_output', 'rich.proto'], text.map((t) => `items {\n${t}\n}`).join('\n'));
  const messages: Buffer[] = [];
  const parts: Buffer[] = [];
  for (let pos = 0; pos < batch.length; ) {
    expect(batch[pos]).toBe(0x0a);
    const [len, start] = varintAt(batch, pos + 1);
    parts.push(batch.subarray(pos + 1, start + len));
    messages.push(batch.subarray(start, start + len));
    pos = start + len;
  }
  return { stream: Buffer.concat(parts), messages };
}

/** Delimited messages -> protoc reads them as a Batch and writes them back deterministically. */
const protocReencodes = (delimited: Buffer): Buffer => {
  const parts: Buffer[] = [];
  for (let pos = 0; pos < delimited.length; ) {
    const [len, start] = varintAt(delimited, pos);
    parts.push(Buffer.from([0x0a]), delimited.subarray(pos, start + len));
    pos = start + len;
  }
  const text = protoc(['--decode=telco.test.Batch', 'rich.proto'], Buffer.concat(parts));
  return protoc(['--encode=telco.test.Batch', '--deterministic_output', 'rich.proto'], text);
};

/** protoc's text form of a Batch (readable diffs). */
const protocText = (batch: Buffer): string => protoc(['--decode=telco.test.Batch', 'rich.proto'], batch).toString('utf8');

const diags = (component: string) =>
  loadPipelineText(
    `version: "1"\npipeline:\n  name: t\n  schedule: { type: manual }\n  source: { type: local, path: /in }\n  serializer_in: ${component}\n  sinks: [{ type: local, path: /out }]\n`,
    { env: {} },
  ).diagnostics.map((d) => formatDiagnostic(d));

describe('protobuf serializer: configuration and lint', () => {
  it('defaults: framing length_delimited, use_magic_bytes true; schema_file and message_class are required', () => {
    expect(cfgOf(protobuf, C)).toEqual({ ...C, framing: 'length_delimited', use_magic_bytes: true });
    expect(loadedSerializers('{type: protobuf, schema_file: rich.proto, message_class: Sample}').input).toMatchObject({
      framing: 'length_delimited',
      use_magic_bytes: true,
    });
    const d = diags('{ type: protobuf }').join('\n');
    expect(d).toMatch(/schema_file/);
    expect(d).toMatch(/message_class/);
    expect(diags('{ type: protobuf, schema_file: rich.proto, message_class: Sample, framing: lines }').join('\n')).toMatch(/framing/);
  });

  it('clean with a full or a unique simple message name', () => {
    expect(diags('{ type: protobuf, schema_file: rich.proto, message_class: telco.test.Sample }')).toEqual([]);
    expect(diags('{ type: protobuf, schema_file: rich.proto, message_class: Counter, framing: none }')).toEqual([]);
    expect(diags('{ type: protobuf, schema_file: rich.proto, message_class: Sample.Nested }')).toEqual([]);
  });

  it('an unknown message class lists the nearest names', () => {
    expect(diags('{ type: protobuf, schema_file: rich.proto, message_class: Sampel }').join('\n')).toMatch(
      new RegExp(`message_class: message 'Sampel' not found in schema file '${join(schemaDir, 'rich.proto')}'; nearest: telco\\.test\\.Sample, `),
    );
  });

  it('a simple name defined twice must be given in full', () => {
    writeFileSync(
      join(schemaDir, 'twice.proto'),
      'syntax = "proto3";\npackage p;\nmessage A { message X { int32 a = 1; } }\nmessage B { message X { int32 b = 1; } }\n',
    );
    expect(diags('{ type: protobuf, schema_file: twice.proto, message_class: X }').join('\n')).toMatch(
      /message 'X' is ambiguous in .*: p\.A\.X, p\.B\.X; give the full name/,
    );
    expect(diags('{ type: protobuf, schema_file: twice.proto, message_class: p.B.X }')).toEqual([]);
  });

  it('a .proto syntax error names the file and line, also inside an import', () => {
    writeFileSync(join(schemaDir, 'bad.proto'), 'syntax = "proto3";\n\nmessage M {\n  string a = 1\n  int32 b = 2;\n}\n');
    expect(diags('{ type: protobuf, schema_file: bad.proto, message_class: M }').join('\n')).toMatch(
      new RegExp(`schema_file: schema file '${join(schemaDir, 'bad.proto')}': illegal token 'int32'.*\\(line 5\\)`),
    );
    writeFileSync(join(schemaDir, 'sub', 'dep.proto'), 'syntax = "proto3";\npackage dep;\nmessage D {\n  strin g x = 1;\n}\n');
    writeFileSync(join(schemaDir, 'main.proto'), 'syntax = "proto3";\nimport "sub/dep.proto";\nmessage M { dep.D d = 1; }\n');
    expect(diags('{ type: protobuf, schema_file: main.proto, message_class: M }').join('\n')).toMatch(
      new RegExp(`schema file '${join(schemaDir, 'sub', 'dep.proto')}': .*\\(line 4\\)`),
    );
  });

  it('missing files, missing imports, climbing imports and unresolved types are lint errors', () => {
    expect(diags('{ type: protobuf, schema_file: none.proto, message_class: M }').join('\n')).toMatch(/schema file '.*none\.proto' not found/);
    writeFileSync(join(schemaDir, 'imp.proto'), 'syntax = "proto3";\nimport "gone.proto";\nmessage M { int32 a = 1; }\n');
    expect(diags('{ type: protobuf, schema_file: imp.proto, message_class: M }').join('\n')).toMatch(/import not found: .*gone\.proto/);
    writeFileSync(join(schemaDir, 'climb.proto'), 'syntax = "proto3";\nimport "../x.proto";\nmessage M { int32 a = 1; }\n');
    expect(diags('{ type: protobuf, schema_file: climb.proto, message_class: M }').join('\n')).toMatch(/import '\.\.\/x\.proto' climbs with '\.\.'/);
    writeFileSync(join(schemaDir, 'unres.proto'), 'syntax = "proto3";\nmessage M { Nope a = 1; }\n');
    expect(diags('{ type: protobuf, schema_file: unres.proto, message_class: M }').join('\n')).toMatch(
      /schema file '.*unres\.proto': no such Type or Enum 'Nope'/,
    );
  });

  it('well-known google types resolve from the bundled definitions', () => {
    writeFileSync(
      join(schemaDir, 'wkt.proto'),
      'syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\nmessage E { google.protobuf.Timestamp at = 1; }\n',
    );
    expect(diags('{ type: protobuf, schema_file: wkt.proto, message_class: E }')).toEqual([]);
  });

  it('schema_registry_url must be http(s); schema_registry_id a 32-bit unsigned integer', () => {
    expect(diags('{ type: protobuf, schema_file: rich.proto, message_class: Sample, schema_registry_url: "nope" }').join('\n')).toMatch(
      /'nope' is not an http\(s\) URL/,
    );
    expect(diags('{ type: protobuf, schema_file: rich.proto, message_class: Sample, schema_registry_id: -2 }').join('\n')).toMatch(/schema_registry_id/);
  });

  it('framing: split for length_delimited, whole for none; extensions pb and bin', () => {
    expect(decoderOf(protobuf, C).framing.kind).toBe('split');
    expect(decoderOf(protobuf, { ...C, framing: 'none' }).framing.kind).toBe('whole');
    expect(encoderOf(protobuf, C).extension).toBe('pb');
    expect(encoderOf(protobuf, { ...C, framing: 'none' }).extension).toBe('bin');
  });
});

describe('protobuf serializer: decode messages written by protoc', () => {
  const { text, records } = samples(300, 42);
  const { stream, messages } = protocDelimited(text);

  it('length-delimited stream: every record and type mapping, through random splits and small pieces', async () => {
    for (const [seed, target] of [
      [1, 512 << 10],
      [2, 500],
      [3, 1],
    ] as const) {
      const out = await decodeUnit(decoderOf(protobuf, C), randomStream(stream, rng(seed), 300), { targetBytes: target });
      expect(out.errors, `seed ${seed}`).toEqual([]);
      expect(out.records).toEqual(records);
      if (target < 1000) expect(out.chunks.length).toBeGreaterThan(10);
    }
  });

  it('record_chunk_size bounds the messages per piece', async () => {
    const out = await decodeUnit(decoderOf(protobuf, C), stream, { maxLines: 7, targetBytes: 1 << 20 });
    expect(out.records.length).toBe(300);
    expect(out.chunks.length).toBe(Math.ceil(300 / 7));
  });

  it('records keep the .proto field order; unset fields carry defaults, an unset oneof is absent', () => {
    const out = decodeChunk(decoderOf(protobuf, { ...C, framing: 'none', use_magic_bytes: false }), { data: Buffer.alloc(0) });
    expect(out.records).toEqual([
      {
        host: '',
        if_index: 0,
        octets: 0,
        big: 0,
        ratio: 0,
        f: 0,
        up: false,
        raw: '',
        status: 'UNKNOWN',
        tags: [],
        counters: {},
        main: null,
        all: [],
        delta: 0,
        stamp: 0,
        nested: null,
        samples: [],
      },
    ]);
    expect(Object.keys(out.records[0]!).slice(0, 4)).toEqual(['host', 'if_index', 'octets', 'big']);
  });

  it('framing none: one message per unit or queue message, plain or in the Confluent wire format', () => {
    const plain = decoderOf(protobuf, { ...C, framing: 'none', use_magic_bytes: false });
    const wire = decoderOf(protobuf, { ...C, framing: 'none' });
    for (let i = 0; i < 20; i++) {
      expect(decodeChunk(plain, { data: messages[i]! }).records).toEqual([records[i]]);
      // Message indexes [1] (Sample is the second message of the file) and the abbreviated [0].
      for (const ix of ['0202', '00']) {
        const framed = Buffer.concat([Buffer.from('0000000009' + ix, 'hex'), messages[i]!]);
        const out = decodeChunk(wire, { data: framed });
        expect(out.errors).toEqual([]);
        expect(out.records).toEqual([records[i]]);
      }
    }
  });

  it('Confluent prefix problems are errors with the raw bytes', () => {
    const wire = decoderOf(protobuf, { ...C, framing: 'none' });
    for (const [b, re] of [
      [Buffer.concat([Buffer.from('01000000090', 'hex'), messages[0]!]), /not the Confluent magic byte/],
      [Buffer.from('0000', 'hex'), /too short/],
      [Buffer.from('000000000904', 'hex'), /truncated message-index varint/],
    ] as [Buffer, RegExp][]) {
      const out = decodeChunk(wire, { data: b });
      expect(out.records).toEqual([]);
      expect(out.errors[0]!.message).toMatch(re);
      expect(out.errors[0]!.raw.equals(b)).toBe(true);
    }
  });

  it('a corrupt message: an error with its prefix and bytes, the next messages decode', async () => {
    const bad = Buffer.from(messages[5]!);
    bad[0] = 0x0f; // field 1 with wire type 7: invalid
    const parts = messages.map((m, i) => {
      const body = i === 5 ? bad : m;
      return Buffer.concat([Buffer.from(varintBytes(body.length)), body]);
    });
    const out = await decodeUnit(decoderOf(protobuf, C), randomStream(Buffer.concat(parts), rng(3), 200), { targetBytes: 700 });
    expect(out.errors.length).toBe(1);
    expect(out.errors[0]!.message).toMatch(/^protobuf telco\.test\.Sample: invalid wire type 7/);
    expect(out.errors[0]!.raw.equals(parts[5]!)).toBe(true);
    expect(out.records).toEqual([...records.slice(0, 5), ...records.slice(6)]);
  });

  it('a truncated stream: the cut message is one error with its bytes', async () => {
    const cut = stream.subarray(0, stream.length - 5);
    const out = await decodeUnit(decoderOf(protobuf, C), randomStream(cut, rng(4), 100), { targetBytes: 400 });
    expect(out.records).toEqual(records.slice(0, 299));
    expect(out.errors.length).toBe(1);
    expect(out.errors[0]!.message).toMatch(/truncated message: \d+ bytes announced, \d+ bytes present/);
    const lastStart = stream.length - (messages[299]!.length + varintBytes(messages[299]!.length).length);
    expect(out.errors[0]!.raw.equals(cut.subarray(lastStart))).toBe(true);
  });

  it('a corrupt length prefix: the messages before decode, the rest is dead-lettered whole (framing lost)', async () => {
    const k = 100;
    let off = 0;
    for (let i = 0; i < k; i++) off += varintBytes(messages[i]!.length).length + messages[i]!.length;
    for (const prefix of [Buffer.alloc(11, 0xff), Buffer.from(varintBytes(200 << 20))]) {
      const bad = Buffer.concat([stream.subarray(0, off), prefix, stream.subarray(off)]);
      for (const target of [1 << 20, 1000]) {
        const out = await decodeUnit(decoderOf(protobuf, C), randomStream(bad, rng(5), 500), { targetBytes: target });
        expect(out.records).toEqual(records.slice(0, k));
        expect(out.errors.length).toBeGreaterThan(0);
        expect(out.errors[0]!.message).toMatch(/corrupt length prefix|framing lost/);
        expect(Buffer.concat(out.errors.map((e) => e.raw)).equals(bad.subarray(off))).toBe(true);
      }
    }
  });

  it('a message unit in length_delimited framing holds several messages', () => {
    const out = decodeChunk(decoderOf(protobuf, C), {
      data: stream.subarray(0, varintBytes(messages[0]!.length).length * 2 + messages[0]!.length + messages[1]!.length),
    });
    expect(out.records).toEqual(records.slice(0, 2));
  });
});

function varintBytes(n: number): number[] {
  const out: number[] = [];
  while (n >= 128) {
    out.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

describe('protobuf serializer: encode, read by protoc', () => {
  const { text, records } = samples(120, 7);
  const expected = protoc(['--encode=telco.test.Batch', '--deterministic_output', 'rich.proto'], text.map((t) => `items {\n${t}\n}`).join('\n'));

  it('length-delimited batches: protoc reads exactly the messages the records describe', () => {
    const e = encoderOf(protobuf, C);
    const file = Buffer.concat([Buffer.from(e.head(records)), e.body(records.slice(0, 40)), e.body(records.slice(40))]);
    expect(protocText(protocReencodes(file))).toBe(protocText(expected));
  });

  it('one() is one length-delimited message in that framing', () => {
    const e = encoderOf(protobuf, C);
    expect(protocText(protocReencodes(Buffer.concat(records.map((r) => e.one(r)))))).toBe(protocText(expected));
  });

  it('framing none: Confluent prefix with the schema id and the message indexes, then the message', () => {
    const e = encoderOf(protobuf, { ...C, framing: 'none', schema_registry_id: 300 });
    const b = e.one(records[3]!);
    const { id, offset } = readWireHeader(b);
    expect(id).toBe(300);
    const { indexes, pos } = decodeMessageIndexes(b, offset);
    expect(indexes).toEqual([1]);
    expect(b.subarray(offset, pos).toString('hex')).toBe('0202');
    const text3 = protoc(['--decode=telco.test.Sample', 'rich.proto'], b.subarray(pos));
    expect(
      protoc(['--encode=telco.test.Sample', '--deterministic_output', 'rich.proto'], text3).equals(
        protoc(['--encode=telco.test.Sample', '--deterministic_output', 'rich.proto'], text[3]!),
      ),
    ).toBe(true);
  });

  it('message indexes of the first and of a nested message', () => {
    const first = encoderOf(protobuf, { ...C, message_class: 'Counter', framing: 'none', schema_registry_id: 1 }).one({ name: 'x', value: 1 });
    expect(first.subarray(0, 6).toString('hex')).toBe('000000000100');
    const nested = encoderOf(protobuf, { ...C, message_class: 'telco.test.Sample.Nested', framing: 'none', schema_registry_id: 1 }).one({ x: 5 });
    expect(decodeMessageIndexes(nested, 5).indexes).toEqual([1, 0]);
  });

  it('framing none without magic bytes is the bare message; body() takes exactly one record', () => {
    const e = encoderOf(protobuf, { ...C, framing: 'none', use_magic_bytes: false });
    const b = e.body([records[0]!]);
    expect(b.equals(e.one(records[0]!))).toBe(true);
    expect(protoc(['--decode=telco.test.Sample', 'rich.proto'], b).toString()).toContain(`host: `);
    expect(() => e.body(records.slice(0, 2))).toThrow(/framing none holds one message per payload, not 2: use framing length_delimited for files/);
  });

  it('framing none with magic bytes but no schema id says what to set', () => {
    expect(() => encoderOf(protobuf, { ...C, framing: 'none' }).one(records[0]!)).toThrow(/use_magic_bytes needs a schema id/);
  });

  it('values as CSV gives them: numeric strings, enum names and numbers, base64 bytes', () => {
    const e = encoderOf(protobuf, { ...C, framing: 'none', use_magic_bytes: false });
    const b = e.one({
      host: 'h',
      if_index: '12',
      octets: '-9223372036854775808',
      big: '18446744073709551615',
      status: 2,
      raw: Buffer.from('hi').toString('base64'),
      up: true,
    });
    const t = protoc(['--decode=telco.test.Sample', 'rich.proto'], b).toString();
    expect(t).toBe('host: "h"\nif_index: 12\noctets: -9223372036854775808\nbig: 18446744073709551615\nup: true\nraw: "hi"\nstatus: DOWN\n');
  });
});

describe('protobuf serializer: Schema Registry', () => {
  let peer: RegistryPeer;
  beforeAll(async () => {
    peer = await startRegistryPeer();
  });
  afterAll(() => peer.close());
  const signal = new AbortController().signal;
  const resolved = (partial: Record<string, unknown>, direction?: 'in' | 'out') =>
    (protobuf.resolve! as (c: unknown, ctx: unknown) => Promise<never>)(cfgOf(protobuf, { ...C, framing: 'none', ...partial }), {
      signal,
      direction,
      schemaDir,
    });

  it('writing registers schema_file as PROTOBUF under the subject and writes its id', async () => {
    const c = await resolved({ schema_registry_url: peer.url, schema_registry_subject: 'samples-value' }, 'out');
    expect(peer.requests).toContain('POST /subjects/samples-value/versions');
    const b = protobuf.encoder!(c, { schemaDir }).one({ host: 'x' });
    const { id } = readWireHeader(b);
    const s = await fetch(`${peer.url}/schemas/ids/${id}`).then((x) => x.json() as Promise<{ schema: string; schemaType: string }>);
    expect(s).toEqual({ schema: RICH_PROTO, schemaType: 'PROTOBUF' });
    // Reading it back with the wire format skips the prefix.
    expect(decodeChunk(protobuf.decoder!(c, { schemaDir }), { data: b }).records[0]).toMatchObject({ host: 'x' });
  });

  it('reading asks the registry nothing; an unknown direction only looks the schema up', async () => {
    const before = peer.requests.length;
    await resolved({ schema_registry_url: peer.url, schema_registry_subject: 'samples-value' }, 'in');
    expect(peer.requests.length).toBe(before);
    const c = await resolved({ schema_registry_url: peer.url, schema_registry_subject: 'samples-value' });
    expect(peer.requests.at(-1)).toBe('POST /subjects/samples-value');
    expect(readWireHeader(protobuf.encoder!(c, { schemaDir }).one({ host: 'y' })).id).toBe(1);
  });

  it('length-delimited streams and use_magic_bytes false carry no id: no registry request', async () => {
    const before = peer.requests.length;
    await resolved({ schema_registry_url: peer.url, schema_registry_subject: 'x-value', framing: 'length_delimited' }, 'out');
    await resolved({ schema_registry_url: peer.url, schema_registry_subject: 'x-value', use_magic_bytes: false }, 'out');
    expect(peer.requests.length).toBe(before);
  });

  it('schema_registry_id needs no request; an unreachable registry fails the run start', async () => {
    const before = peer.requests.length;
    const c = await resolved({ schema_registry_url: peer.url, schema_registry_id: 77, schema_registry_subject: 's' }, 'out');
    expect(peer.requests.length).toBe(before);
    expect(readWireHeader(protobuf.encoder!(c, { schemaDir }).one({})).id).toBe(77);
    await expect(resolved({ schema_registry_url: 'http://127.0.0.1:9', schema_registry_subject: 's' }, 'out')).rejects.toThrow(/is unreachable/);
    await expect(resolved({ schema_registry_subject: 's' }, 'out')).rejects.toThrow(/needs a registry/);
  });
});

describe('protobuf serializer: a whole run', () => {
  it('protoc-written length-delimited file -> NDJSON -> length-delimited file protoc reads back', async () => {
    const { text, records } = samples(1000, 9);
    const { stream } = protocDelimited(text);
    const base = join(dir, 'run');
    mkdirSync(join(base, 'in'), { recursive: true });
    writeFileSync(join(base, 'in', 'samples.pb'), stream);
    const yaml = (src: string, inSer: string, outSer: string, out: string) => `version: "1"
pipeline:
  name: pb-run
  schedule: { type: manual }
  thread_workers: 2
  source: { type: local, path: ${JSON.stringify(src)} }
  serializer_in: ${inSer}
  serializer_out: ${outSer}
  sinks:
    - { type: local, path: ${JSON.stringify(out)}, filename_template: "out" }
`;
    const ser = `{ type: protobuf, schema_file: rich.proto, message_class: Sample }`;
    const a = loadPipelineText(yaml(join(base, 'in'), ser, '{ type: ndjson, ensure_ascii: false }', join(base, 'nd')), { env: {} });
    expect(a.diagnostics).toEqual([]);
    expect((await runPipeline(a.config!)).status).toBe('success');
    const nd = readFileSync(join(base, 'nd', readdirSync(join(base, 'nd'))[0]!), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Rec);
    expect(nd).toEqual(records);
    const b = loadPipelineText(yaml(join(base, 'nd'), '{ type: ndjson }', ser, join(base, 'pb')), { env: {} });
    expect((await runPipeline(b.config!)).status).toBe('success');
    const back = readFileSync(join(base, 'pb', readdirSync(join(base, 'pb'))[0]!));
    expect(back.equals(stream) || protocReencodes(back).equals(protocReencodes(stream))).toBe(true);
  });
});

describe('protobuf serializer: a message in many reads', () => {
  it('a length-delimited message of 256 KiB in 64 reads is looked at O(log n) times and copied about twice (no join per read)', async () => {
    const host = 'h'.repeat(256 << 10);
    const varint = (n: number) => Buffer.from(varintBytes(n));
    const message = Buffer.concat([Buffer.from([0x0a]), varint(host.length), Buffer.from(host), Buffer.from([0x10, 0x07])]); // host, if_index 7
    const small = Buffer.from([0x0a, 0x01, 0x61]); // host "a"
    const bytes = Buffer.concat([varint(message.length), message, varint(small.length), small]);
    let out: Awaited<ReturnType<typeof decodeUnit>> | undefined;
    const work = await workOf(async () => (out = await decodeUnit(decoderOf(protobuf, C), readsOf(bytes, 64), { targetBytes: 1 << 20 })));
    expect(out!.errors).toEqual([]);
    expect(out!.records.map((r) => [r.host, r.if_index])).toEqual([
      [host, 7],
      ['a', 0],
    ]);
    expect(work.incompleteLooks).toBeGreaterThan(0);
    expect(work.incompleteLooks).toBeLessThanOrEqual(LINEAR_64_READS.maxLooks);
    expect(work.copiedBytes).toBeLessThanOrEqual(LINEAR_64_READS.maxCopiesPerByte * bytes.length);
  });
});
