import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import avsc from 'avsc';
import * as snappy from 'snappyjs';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPipelineText } from '../../../src/config/load.js';
import { formatDiagnostic } from '../../../src/config/diagnostics.js';
import { runPipeline } from '../../../src/engine/runner.js';
import avro from '../../../src/plugins/serializers/avro/index.js';
import type { Rec } from '../../../src/plugins/types.js';
import { startRegistryPeer, type RegistryPeer } from '../common/registry-peer.js';
import { cfgOf, decodeChunk, decodeUnit, decoderOf, encoderOf, loadedSerializers, randomStream, rng } from './helpers.js';
import { LINEAR_64_READS, readsOf, workOf } from '../../helpers/pending-work.js';
import { containerHeader, encodeBlock } from '../../../src/plugins/serializers/avro/container.js';

// python3-avro is a Debian package: Debian's interpreter has it, a pyenv python3 on PATH may not.
const PY = ['/usr/bin/python3', 'python3'].find((p) => {
  try {
    execFileSync(p, ['-c', 'import avro.datafile'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})!;
const py = (code: string, input?: string | Buffer): Buffer => execFileSync(PY, ['-c', code], { input, maxBuffer: 256 << 20 });

const dir = mkdtempSync(join(tmpdir(), 'svc-avro-'));
const schemaDir = join(dir, 'schemas');
mkdirSync(schemaDir);
process.env.SVC_SCHEMA_DIR = schemaDir;

/** A schema with every Avro type the mapping cares about. */
const RICH = {
  type: 'record',
  name: 'Sample',
  namespace: 'svc.test',
  fields: [
    { name: 'host', type: 'string' },
    { name: 'ifIndex', type: 'int' },
    { name: 'octets', type: 'long' },
    { name: 'ratio', type: 'double' },
    { name: 'f', type: 'float' },
    { name: 'up', type: 'boolean' },
    { name: 'raw', type: 'bytes' },
    { name: 'mac', type: { type: 'fixed', name: 'Mac', size: 6 } },
    { name: 'status', type: { type: 'enum', name: 'Status', symbols: ['UP', 'DOWN', 'TESTING'] } },
    { name: 'tags', type: { type: 'array', items: 'string' } },
    { name: 'counters', type: { type: 'map', values: 'long' } },
    { name: 'descr', type: ['null', 'string'], default: null },
    {
      name: 'peer',
      type: [
        'null',
        {
          type: 'record',
          name: 'Peer',
          fields: [
            { name: 'ip', type: 'string' },
            { name: 'asn', type: 'long' },
          ],
        },
      ],
      default: null,
    },
  ],
};
const RICH_TEXT = JSON.stringify(RICH);
writeFileSync(join(schemaDir, 'rich.avsc'), JSON.stringify(RICH, null, 2));

/** Python code that builds record i of the rich schema, and the same record as we expect to decode it. */
const PY_RECORD = `
import base64, random
def rec(i, r):
    big = 2**62 + i if i % 3 == 0 else i * 1000
    return {
        "host": "rtr-%d-Zürich-東" % i, "ifIndex": i, "octets": big if i % 2 else -big,
        "ratio": i / 4.0, "f": 0.5, "up": i % 2 == 0,
        "raw": bytes(r.randrange(256) for _ in range(r.randrange(0, 9))), "mac": bytes([i % 256] * 6),
        "status": ["UP", "DOWN", "TESTING"][i % 3], "tags": ["t%d" % k for k in range(i % 4)],
        "counters": {"in": i, "out": 2**60 + i}, "descr": None if i % 5 == 0 else "port %d" % i,
        "peer": None if i % 2 else {"ip": "10.0.0.%d" % (i % 256), "asn": 64512 + i},
    }
def expected(d):
    e = dict(d)
    e["raw"] = base64.b64encode(d["raw"]).decode()
    e["mac"] = base64.b64encode(d["mac"]).decode()
    for k in ("octets",):
        e[k] = d[k] if abs(d[k]) <= 2**53 - 1 else str(d[k])
    e["counters"] = {k: (v if abs(v) <= 2**53 - 1 else str(v)) for k, v in d["counters"].items()}
    return e
`;

/** A container file written by python3-avro, and the records it holds. */
function pythonContainer(codec: string, n: number, seed = 1, syncInterval?: number): { file: Buffer; records: Rec[] } {
  const out = py(
    `${PY_RECORD}
import avro.datafile, avro.io, avro.schema, io, json, sys, random
a = json.loads(sys.stdin.read())
schema = avro.schema.parse(a["schema"])
buf = io.BytesIO()
w = avro.datafile.DataFileWriter(buf, avro.io.DatumWriter(), schema, codec=a["codec"])
if a["sync"]: avro.datafile.SYNC_INTERVAL = a["sync"]
r = random.Random(a["seed"])
exp = []
for i in range(a["n"]):
    d = rec(i, r)
    w.append(d)
    exp.append(expected(d))
w.flush()
data = buf.getvalue()
sys.stdout.buffer.write(json.dumps(exp).encode() + b"\\n" + data)
`,
    JSON.stringify({ schema: RICH_TEXT, codec, n, seed, sync: syncInterval ?? 0 }),
  );
  const nl = out.indexOf(0x0a);
  return { records: JSON.parse(out.subarray(0, nl).toString('utf8')) as Rec[], file: out.subarray(nl + 1) };
}

/** python3-avro reads a container file: its records as JSON (bytes base64, longs exact). */
const pythonReads = (file: Buffer): Rec[] =>
  JSON.parse(
    py(
      `import avro.datafile, avro.io, io, json, sys, base64
r = avro.datafile.DataFileReader(io.BytesIO(sys.stdin.buffer.read()), avro.io.DatumReader())
def j(v):
    if isinstance(v, bytes): return base64.b64encode(v).decode()
    if isinstance(v, dict): return {k: j(x) for k, x in v.items()}
    if isinstance(v, list): return [j(x) for x in v]
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53 - 1: return str(v)
    return v
print(json.dumps({"codec": r.codec, "records": [j(x) for x in r]}))`,
      file,
    ).toString('utf8'),
  ) as Rec[];

/** python3-avro writes one datum of `schema` (optionally with the Confluent prefix for `id`). */
function pythonDatum(schema: string, value: unknown, id?: number): Buffer {
  return py(
    `import avro.io, avro.schema, io, json, struct, sys
a = json.loads(sys.stdin.read())
buf = io.BytesIO()
if a["id"] is not None: buf.write(b"\\x00" + struct.pack(">I", a["id"]))
avro.io.DatumWriter(avro.schema.parse(a["schema"])).write(a["value"], avro.io.BinaryEncoder(buf))
sys.stdout.buffer.write(buf.getvalue())`,
    JSON.stringify({ schema, value, id: id ?? null }),
  );
}

/** python3-avro reads one datum (after the Confluent prefix when `prefixed`). */
const pythonReadsDatum = (schema: string, b: Buffer, prefixed: boolean): { id: number | null; value: Rec } =>
  JSON.parse(
    py(
      `import avro.io, avro.schema, io, json, struct, sys
a = json.loads(sys.stdin.buffer.readline())
data = sys.stdin.buffer.read()
i = None
if a["prefixed"]:
    assert data[0] == 0
    i = struct.unpack(">I", data[1:5])[0]
    data = data[5:]
buf = io.BytesIO(data)
v = avro.io.DatumReader(avro.schema.parse(a["schema"])).read(avro.io.BinaryDecoder(buf))
assert buf.read() == b"", "trailing bytes"
print(json.dumps({"id": i, "value": v}))`,
      Buffer.concat([Buffer.from(JSON.stringify({ schema, prefixed }) + '\n'), b]),
    ).toString('utf8'),
  );

const SIMPLE = '{"type":"record","name":"If","fields":[{"name":"host","type":"string"},{"name":"ifIndex","type":"int"}]}';

describe('avro serializer: configuration and lint', () => {
  const diags = (component: string) => {
    const r = loadPipelineText(
      `version: "1"\npipeline:\n  name: t\n  schedule: { type: manual }\n  source: { type: local, path: /in }\n  serializer_in: ${component}\n  sinks: [{ type: local, path: /out }]\n`,
      { env: {} },
    );
    return r.diagnostics.map((d) => formatDiagnostic(d));
  };

  it('defaults: use_magic_bytes true, codec null', () => {
    expect(cfgOf(avro, { schema: SIMPLE })).toEqual({ schema: SIMPLE, use_magic_bytes: true, codec: 'null' });
    expect(loadedSerializers(`{type: avro, schema_file: rich.avsc}`).input).toEqual({
      type: 'avro',
      schema_file: 'rich.avsc',
      use_magic_bytes: true,
      codec: 'null',
    });
  });

  it('one of schema, schema_file or schema_registry_url is required', () => {
    expect(diags('{ type: avro }').join('\n')).toMatch(
      /serializer_in\.schema: one of schema, schema_file or schema_registry_url is required \(line 6\) \[CFG_INVALID\]/,
    );
    expect(diags('{ type: avro, use_magic_bytes: false }').join('\n')).toMatch(/one of schema, schema_file or schema_registry_url is required/);
    expect(diags(`{ type: avro, schema_file: rich.avsc }`)).toEqual([]);
    expect(diags(`{ type: avro, schema: '${SIMPLE}' }`)).toEqual([]);
    expect(diags('{ type: avro, schema_registry_url: "http://reg:8081", schema_registry_subject: s }')).toEqual([]);
    expect(diags('{ type: avro, schema_registry_url: "http://reg:8081", schema_registry_id: 3 }')).toEqual([]);
  });

  it('a registry URL alone does not say which schema; a URL must be http(s); schema and schema_file exclude each other', () => {
    expect(diags('{ type: avro, schema_registry_url: "http://reg:8081" }').join('\n')).toMatch(
      /schema_registry_url: schema_registry_url needs schema_registry_subject or schema_registry_id/,
    );
    expect(diags('{ type: avro, schema_registry_url: "ftp://x", schema_registry_id: 1 }').join('\n')).toMatch(/'ftp:\/\/x' is not an http\(s\) URL/);
    expect(diags(`{ type: avro, schema: '${SIMPLE}', schema_file: rich.avsc }`).join('\n')).toMatch(/schema_file: schema and schema_file exclude each other/);
  });

  it('a missing schema file, invalid JSON (with line and column) and an invalid Avro schema are named', () => {
    expect(diags('{ type: avro, schema_file: nope.avsc }').join('\n')).toMatch(
      new RegExp(`schema_file: schema file '${join(schemaDir, 'nope.avsc')}' not found \\(relative paths are taken under SVC_SCHEMA_DIR`),
    );
    writeFileSync(join(schemaDir, 'broken.avsc'), '{\n  "type": "record",\n  "name": "X",\n  "fields": [\n    {"name": "a" "type": "int"}\n  ]\n}\n');
    expect(diags('{ type: avro, schema_file: broken.avsc }').join('\n')).toMatch(
      new RegExp(`schema file '${join(schemaDir, 'broken.avsc')}': invalid JSON: .* at line 5 column 18`),
    );
    writeFileSync(join(schemaDir, 'badtype.avsc'), '{"type": "record", "name": "X", "fields": [{"name": "a", "type": "integer"}]}');
    expect(diags('{ type: avro, schema_file: badtype.avsc }').join('\n')).toMatch(/schema file '.*badtype\.avsc': invalid Avro schema: .*integer/);
    expect(diags(`{ type: avro, schema: '{"type": "rec' }`).join('\n')).toMatch(/serializer_in\.schema: schema: invalid JSON: .* at line 1 column/);
    expect(diags('{ type: avro, schema_file: ../etc/passwd }').join('\n')).toMatch(/climbs with '\.\.'/);
  });

  it('codec is null, deflate or snappy; schema_registry_id a 32-bit unsigned integer', () => {
    expect(diags(`{ type: avro, schema_file: rich.avsc, codec: zstd }`).join('\n')).toMatch(/codec/);
    expect(diags(`{ type: avro, schema_file: rich.avsc, schema_registry_id: -1 }`).join('\n')).toMatch(/schema_registry_id/);
    expect(diags(`{ type: avro, schema_file: rich.avsc, schema_registry_id: 4294967296 }`).join('\n')).toMatch(/schema_registry_id/);
  });

  it('framing is split; the file extension is avro', () => {
    expect(decoderOf(avro, { schema: SIMPLE }).framing.kind).toBe('split');
    expect(encoderOf(avro, { schema: SIMPLE }).extension).toBe('avro');
  });
});

describe('avro serializer: container files from python3-avro', () => {
  for (const codec of ['null', 'deflate']) {
    it(`codec ${codec}: every record, through random stream splits and small pieces`, async () => {
      const { file, records } = pythonContainer(codec, 600, 7, 2000);
      for (const [seed, target] of [
        [1, 512 << 10],
        [2, 3000],
        [3, 1],
      ] as const) {
        const d = decoderOf(avro, { schema_file: 'rich.avsc' });
        const out = await decodeUnit(d, randomStream(file, rng(seed), 4096), { targetBytes: target });
        expect(out.errors, `seed ${seed}`).toEqual([]);
        expect(out.records).toEqual(records);
        if (target < 512 << 10) expect(out.chunks.length).toBeGreaterThan(5);
        // Every piece starts at a block and carries the file header.
        for (const c of out.chunks) expect(c.header?.subarray(0, 4).toString('latin1')).toBe('Obj\x01');
      }
    });
  }

  it('the file header schema is used: the configured schema may differ (writer schema wins)', async () => {
    const { file, records } = pythonContainer('null', 20);
    const out = await decodeUnit(decoderOf(avro, { schema: SIMPLE }), file);
    expect(out.errors).toEqual([]);
    expect(out.records).toEqual(records);
  });

  it('record_chunk_size bounds the records per piece (whole blocks)', async () => {
    const { file } = pythonContainer('null', 300, 3, 500);
    const out = await decodeUnit(decoderOf(avro, { schema: SIMPLE }), file, { maxLines: 50, targetBytes: 1 << 20 });
    expect(out.records.length).toBe(300);
    expect(out.chunks.length).toBeGreaterThan(3);
  });

  it('a whole container file as one message is decoded too', () => {
    const { file, records } = pythonContainer('deflate', 30);
    const out = decodeChunk(decoderOf(avro, { schema: SIMPLE }), { data: file });
    expect(out.errors).toEqual([]);
    expect(out.records).toEqual(records);
  });

  it('an empty container file (header only) yields no records and no errors', async () => {
    const { file } = pythonContainer('null', 0);
    const out = await decodeUnit(decoderOf(avro, { schema: SIMPLE }), file);
    expect(out).toMatchObject({ records: [], errors: [] });
  });

  it('snappy blocks (written by avsc with snappyjs and a CRC-32) decode', async () => {
    const type = avsc.Type.forSchema(JSON.parse(SIMPLE) as avsc.Schema);
    const enc = new avsc.streams.BlockEncoder(type, {
      codec: 'snappy',
      blockSize: 200,
      codecs: {
        snappy: (buf: Buffer, cb: (err: Error | null, b?: Buffer) => void) => {
          const crc = Buffer.alloc(4);
          crc.writeUInt32BE(crc32(buf) >>> 0);
          cb(null, Buffer.concat([Buffer.from(snappy.compress(buf)), crc]));
        },
      },
    } as never);
    const parts: Buffer[] = [];
    enc.on('data', (b: Buffer) => parts.push(b));
    const done = new Promise((r) => enc.on('end', r));
    const recs = Array.from({ length: 100 }, (_, i) => ({ host: `h${i % 7}`.repeat(5), ifIndex: i }));
    for (const r of recs) enc.write(r);
    enc.end();
    await done;
    const out = await decodeUnit(decoderOf(avro, { schema: SIMPLE }), Buffer.concat(parts), { targetBytes: 100 });
    expect(out.errors).toEqual([]);
    expect(out.records).toEqual(recs);
  });
});

/** Byte ranges of the blocks of a container file (after the header), via the file's own sync marker. */
function blocksOf(file: Buffer): { header: number; blocks: [number, number][]; sync: Buffer } {
  const syncAt = file.indexOf(Buffer.from('avro.codec'));
  // The header ends with the 16-byte sync marker, which also closes every block.
  let headerEnd = -1;
  for (let i = syncAt; i < file.length - 16; i++) {
    const cand = file.subarray(i, i + 16);
    if (file.indexOf(cand, i + 16) !== -1 && file[i - 1] === 0) {
      headerEnd = i + 16;
      break;
    }
  }
  const sync = file.subarray(headerEnd - 16, headerEnd);
  const blocks: [number, number][] = [];
  for (let s = headerEnd; s < file.length; ) {
    const e = file.indexOf(sync, s) + 16;
    blocks.push([s, e]);
    s = e;
  }
  return { header: headerEnd, blocks, sync };
}

describe('avro serializer: corrupt container files', () => {
  const { file, records } = pythonContainer('deflate', 400, 11, 1500);
  const { blocks } = blocksOf(file);
  const perBlock = (() => {
    // How many records each block holds: its count varint (small here, one byte of zig-zag).
    return blocks.map(([s]) => file[s]! >> 1);
  })();
  const recordsBefore = (k: number) => perBlock.slice(0, k).reduce((a, b) => a + b, 0);

  it('the fixture has several blocks', () => {
    expect(blocks.length).toBeGreaterThan(4);
    expect(perBlock.reduce((a, b) => a + b, 0)).toBe(400);
  });

  it('a block whose sync marker is damaged: one error with its raw bytes, the rest decodes', async () => {
    const k = 2;
    const bad = Buffer.from(file);
    bad[blocks[k]![1] - 3]! ^= 0xff; // inside block k's closing sync marker
    for (const target of [512 << 10, 700]) {
      const out = await decodeUnit(decoderOf(avro, { schema: SIMPLE }), randomStream(bad, rng(5), 999), { targetBytes: target });
      expect(out.errors.length, `target ${target}`).toBe(1);
      expect(out.errors[0]!.message).toMatch(/sync marker missing after block/);
      // The bad stretch runs from block k to the end of block k+1 (the next intact sync marker).
      expect(out.errors[0]!.raw.equals(bad.subarray(blocks[k]![0], blocks[k + 1]![1]))).toBe(true);
      expect(out.records).toEqual([...records.slice(0, recordsBefore(k)), ...records.slice(recordsBefore(k + 2))]);
    }
  });

  it('damaged compressed data: that block is an error, the next blocks decode', async () => {
    const k = 1;
    const bad = Buffer.from(file);
    for (let i = blocks[k]![0] + 6; i < blocks[k]![0] + 30; i++) bad[i] = 0xff;
    const out = await decodeUnit(decoderOf(avro, { schema: SIMPLE }), bad, { targetBytes: 600 });
    expect(out.errors.length).toBe(1);
    expect(out.errors[0]!.message).toMatch(/^avro container block: /);
    expect(out.errors[0]!.raw.equals(bad.subarray(blocks[k]![0], blocks[k]![1]))).toBe(true);
    expect(out.records).toEqual([...records.slice(0, recordsBefore(k)), ...records.slice(recordsBefore(k + 1))]);
  });

  it('a block whose size field is damaged is skipped to the next sync marker', async () => {
    const k = 3;
    const bad = Buffer.from(file);
    bad[blocks[k]![0] + 1] = 0x7e; // size: 63 bytes, far too short
    const out = await decodeUnit(decoderOf(avro, { schema: SIMPLE }), randomStream(bad, rng(9), 300), { targetBytes: 2000 });
    expect(out.errors.length).toBe(1);
    expect(out.errors[0]!.raw.equals(bad.subarray(blocks[k]![0], blocks[k]![1]))).toBe(true);
    expect(out.records.length).toBe(400 - perBlock[k]!);
  });

  it('a truncated file: the cut block is an error with its bytes, the blocks before decode', async () => {
    const cutAt = blocks[3]![0] + 40;
    const out = await decodeUnit(decoderOf(avro, { schema: SIMPLE }), randomStream(file.subarray(0, cutAt), rng(2), 500), { targetBytes: 900 });
    expect(out.errors.length).toBe(1);
    expect(out.errors[0]!.message).toMatch(/truncated block/);
    expect(out.errors[0]!.raw.equals(file.subarray(blocks[3]![0], cutAt))).toBe(true);
    expect(out.records).toEqual(records.slice(0, recordsBefore(3)));
  });

  it('a damaged header: every byte goes to the DLQ as errors, nothing is decoded as a datum', async () => {
    const bad = Buffer.from(file);
    bad[4] = 0x7f; // the metadata map count: a huge negative-sized block
    const out = await decodeUnit(decoderOf(avro, { schema: SIMPLE }), bad, { targetBytes: 4096 });
    expect(out.records).toEqual([]);
    expect(out.errors.length).toBeGreaterThan(0);
    expect(out.errors[0]!.message).toMatch(/^avro container: /);
    expect(Buffer.concat(out.errors.map((e) => e.raw)).equals(bad)).toBe(true);
  });

  it('a file cut inside its header is one error', async () => {
    const out = await decodeUnit(decoderOf(avro, { schema: SIMPLE }), file.subarray(0, 30));
    expect(out.records).toEqual([]);
    expect(out.errors.map((e) => e.message)).toEqual(['avro container: truncated Avro container header']);
  });

  it('a unit that is no container file and too large for one datum is dead-lettered in bounded pieces', async () => {
    const big = Buffer.alloc((64 << 20) + 1000, 0x41);
    async function* mb() {
      for (let i = 0; i < big.length; i += 1 << 20) yield big.subarray(i, i + (1 << 20));
    }
    let out: Awaited<ReturnType<typeof decodeUnit>> | undefined;
    const work = await workOf(async () => (out = await decodeUnit(decoderOf(avro, { schema: SIMPLE }), mb(), { targetBytes: 8 << 20 })));
    // Joining the held bytes with each read of 1 MiB copied ~2 GiB (20 s).
    expect(work.copiedBytes).toBeLessThanOrEqual(LINEAR_64_READS.maxCopiesPerByte * big.length);
    out = out!;
    expect(out.records).toEqual([]);
    expect(out.errors.length).toBe(9);
    expect(out.errors[0]!.message).toMatch(/no container file .* larger than 64 MiB/);
    expect(out.errors.reduce((n, e) => n + e.raw.length, 0)).toBe(big.length);
  });

  it('an unsupported codec is named, per block', async () => {
    const { file: bz } = pythonContainer('bzip2', 10);
    const out = await decodeUnit(decoderOf(avro, { schema: SIMPLE }), bz);
    expect(out.records).toEqual([]);
    expect(out.errors[0]!.message).toMatch(/codec 'bzip2' is not supported \(null, deflate, snappy\)/);
  });
});

describe('avro serializer: a block in many reads', () => {
  it('a container block of 256 KiB in 64 reads is scanned O(log n) times and copied about twice (no join and rescan per read)', async () => {
    const sync = Buffer.from('0123456789abcdef');
    const type = avsc.Type.forSchema(JSON.parse(SIMPLE) as avsc.Schema);
    const records = [
      { host: 'h'.repeat(256 << 10), ifIndex: 7 },
      { host: 'a', ifIndex: 1 },
    ];
    const bytes = Buffer.concat([
      containerHeader(SIMPLE, 'null', sync),
      encodeBlock(1, type.toBuffer(records[0]), 'null', sync),
      encodeBlock(1, type.toBuffer(records[1]), 'null', sync),
    ]);
    let out: Awaited<ReturnType<typeof decodeUnit>> | undefined;
    const work = await workOf(async () => (out = await decodeUnit(decoderOf(avro, { schema: SIMPLE }), readsOf(bytes, 64), { targetBytes: 1 << 20 })));
    expect(out!.errors).toEqual([]);
    expect(out!.records).toEqual(records);
    expect(work.incompleteLooks).toBeGreaterThan(0);
    expect(work.incompleteLooks).toBeLessThanOrEqual(LINEAR_64_READS.maxLooks);
    expect(work.copiedBytes).toBeLessThanOrEqual(LINEAR_64_READS.maxCopiesPerByte * bytes.length);
  });
});

describe('avro serializer: single datums', () => {
  const value = { host: 'edge-7 Zürich', ifIndex: 12 };

  it('Confluent wire format (default): python3-avro datum after magic byte and id', async () => {
    const b = pythonDatum(SIMPLE, value, 77);
    expect(b.subarray(0, 5).toString('hex')).toBe('000000004d');
    const out = await decodeUnit(decoderOf(avro, { schema: SIMPLE }), b);
    expect(out).toMatchObject({ records: [value], errors: [] });
  });

  it('use_magic_bytes false: a plain datum', async () => {
    const out = await decodeUnit(decoderOf(avro, { schema: SIMPLE, use_magic_bytes: false }), pythonDatum(SIMPLE, value));
    expect(out).toMatchObject({ records: [value], errors: [] });
  });

  it('every type of the rich schema, from python3-avro', () => {
    const recs = JSON.parse(
      py(
        `${PY_RECORD}
import avro.io, avro.schema, io, json, random, sys, base64
s = avro.schema.parse(sys.stdin.read())
r = random.Random(3)
out = []
for i in range(12):
    d = rec(i, r)
    buf = io.BytesIO()
    avro.io.DatumWriter(s).write(d, avro.io.BinaryEncoder(buf))
    out.append({"datum": base64.b64encode(buf.getvalue()).decode(), "expected": expected(d)})
print(json.dumps(out))`,
        RICH_TEXT,
      ).toString('utf8'),
    ) as { datum: string; expected: Rec }[];
    const d = decoderOf(avro, { schema_file: 'rich.avsc', use_magic_bytes: false });
    for (const { datum, expected } of recs) {
      const out = decodeChunk(d, { data: Buffer.from(datum, 'base64') });
      expect(out.errors).toEqual([]);
      expect(out.records).toEqual([expected]);
    }
  });

  it('a schema that is not a record gives { _value }', () => {
    const out = decodeChunk(decoderOf(avro, { schema: '"string"', use_magic_bytes: false }), { data: pythonDatum('"string"', 'hello') });
    expect(out.records).toEqual([{ _value: 'hello' }]);
  });

  it('wrong magic byte, too short, truncated datum and trailing bytes are errors with the raw bytes', () => {
    const d = decoderOf(avro, { schema: SIMPLE });
    const good = pythonDatum(SIMPLE, value, 1);
    const cases: [Buffer, RegExp][] = [
      [Buffer.concat([Buffer.from([1]), good.subarray(1)]), /first byte is 0x01, not the Confluent magic byte/],
      [good.subarray(0, 3), /too short for the Confluent wire format/],
      [good.subarray(0, good.length - 3), /truncated/],
      [Buffer.concat([good, Buffer.from([1, 2])]), /2 bytes left after the record \(wrong schema\?\)/],
    ];
    for (const [b, re] of cases) {
      const out = decodeChunk(d, { data: b });
      expect(out.records).toEqual([]);
      expect(out.errors.length).toBe(1);
      expect(out.errors[0]!.message).toMatch(re);
      expect(out.errors[0]!.raw.equals(b)).toBe(true);
    }
  });

  it('message units: each message is one datum', () => {
    const d = decoderOf(avro, { schema: SIMPLE });
    const out = { records: [], errors: [], notes: [], chunks: [] };
    for (let i = 0; i < 3; i++) decodeChunk(d, { data: pythonDatum(SIMPLE, { host: `h${i}`, ifIndex: i }, 5) }, out);
    expect(out.records).toEqual([0, 1, 2].map((i) => ({ host: `h${i}`, ifIndex: i })));
  });
});

describe('avro serializer: encode, read by python3-avro', () => {
  const { records } = pythonContainer('null', 150, 21);

  for (const codec of ['null', 'deflate', 'snappy'] as const) {
    it(`container file (codec ${codec}): head + several bodies is one valid file`, () => {
      const e = encoderOf(avro, { schema_file: 'rich.avsc', codec });
      const file = Buffer.concat([Buffer.from(e.head(records)), e.body(records.slice(0, 50)), e.body(records.slice(50, 51)), e.body(records.slice(51))]);
      if (codec === 'snappy') {
        // python3-avro needs python-snappy for this codec; our own decoder reads it instead.
        return decodeUnit(decoderOf(avro, { schema: SIMPLE }), file).then((out) => {
          expect(out.errors).toEqual([]);
          expect(out.records).toEqual(records);
        });
      }
      const r = pythonReads(file) as unknown as { codec: string; records: Rec[] };
      expect(r.codec).toBe(codec);
      expect(r.records).toEqual(records);
    });
  }

  it('the head is the binary container header, the same for every batch', () => {
    for (const schema of [SIMPLE, RICH_TEXT]) {
      const e = encoderOf(avro, { schema });
      const h = Buffer.from(e.head([]));
      expect(h.subarray(0, 4)).toEqual(Buffer.from('Obj\x01', 'latin1'));
      expect(Buffer.from(e.head([{ host: 'x', ifIndex: 1 }]))).toEqual(h);
    }
  });

  it('a file appended to by a second encoder (next run) stays valid: the sync marker comes from the schema', () => {
    const a = encoderOf(avro, { schema: SIMPLE });
    const b = encoderOf(avro, { schema: SIMPLE });
    const file = Buffer.concat([Buffer.from(a.head([])), a.body([{ host: 'a', ifIndex: 1 }]), b.body([{ host: 'b', ifIndex: 2 }])]);
    expect((pythonReads(file) as unknown as { records: Rec[] }).records).toEqual([
      { host: 'a', ifIndex: 1 },
      { host: 'b', ifIndex: 2 },
    ]);
  });

  it('one(): Confluent wire format with schema_registry_id, plain without magic bytes', () => {
    const withId = encoderOf(avro, { schema: SIMPLE, schema_registry_id: 513 }).one({ host: 'h', ifIndex: 3 });
    expect(pythonReadsDatum(SIMPLE, withId, true)).toEqual({ id: 513, value: { host: 'h', ifIndex: 3 } });
    const plain = encoderOf(avro, { schema: SIMPLE, use_magic_bytes: false }).one({ host: 'h', ifIndex: 3 });
    expect(pythonReadsDatum(SIMPLE, plain, false)).toEqual({ id: null, value: { host: 'h', ifIndex: 3 } });
  });

  it('one() with magic bytes but no schema id says what to set', () => {
    expect(() => encoderOf(avro, { schema: SIMPLE }).one({ host: 'h', ifIndex: 3 })).toThrow(
      /use_magic_bytes needs a schema id: set schema_registry_id or schema_registry_subject, or use_magic_bytes: false/,
    );
  });

  it('longs beyond 2^53 as strings and bytes as base64 are written exactly; defaults fill missing fields', () => {
    const schema =
      '{"type":"record","name":"B","fields":[{"name":"n","type":"long"},{"name":"b","type":"bytes"},{"name":"d","type":"string","default":"dflt"}]}';
    const one = encoderOf(avro, { schema, use_magic_bytes: false }).one({ n: '9223372036854775807', b: Buffer.from('héllo').toString('base64') });
    const read = JSON.parse(
      py(
        `import avro.io, avro.schema, io, json, sys
a = sys.stdin.buffer.read()
n = a.index(b"\\n")
v = avro.io.DatumReader(avro.schema.parse(a[:n].decode())).read(avro.io.BinaryDecoder(io.BytesIO(a[n+1:])))
print(json.dumps({"n": str(v["n"]), "b": v["b"].decode("utf-8"), "d": v["d"]}))`,
        Buffer.concat([Buffer.from(schema + '\n'), one]),
      ).toString('utf8'),
    );
    expect(read).toEqual({ n: '9223372036854775807', b: 'héllo', d: 'dflt' });
  });

  it('base64 strings become bytes inside unions, maps, arrays and nested records', () => {
    const schema = JSON.stringify({
      type: 'record',
      name: 'U',
      fields: [
        { name: 'opt', type: ['null', 'bytes'] },
        { name: 'm', type: { type: 'map', values: 'bytes' } },
        { name: 'a', type: { type: 'array', items: { type: 'fixed', name: 'F', size: 2 } } },
        { name: 'r', type: { type: 'record', name: 'In', fields: [{ name: 'b', type: 'bytes' }] } },
      ],
    });
    const b64 = (s: string) => Buffer.from(s, 'latin1').toString('base64');
    const rec = { opt: b64('\x00\xff'), m: { k: b64('xyz') }, a: [b64('ab'), b64('\x01\x02')], r: { b: b64('') } };
    const one = encoderOf(avro, { schema, use_magic_bytes: false }).one(rec);
    const read = JSON.parse(
      py(
        `import avro.io, avro.schema, base64, io, json, sys
a = sys.stdin.buffer.read()
n = a.index(b"\\n")
v = avro.io.DatumReader(avro.schema.parse(a[:n].decode())).read(avro.io.BinaryDecoder(io.BytesIO(a[n+1:])))
e = lambda b: base64.b64encode(b).decode()
print(json.dumps({"opt": e(v["opt"]), "m": {k: e(x) for k, x in v["m"].items()}, "a": [e(x) for x in v["a"]], "r": {"b": e(v["r"]["b"])}}))`,
        Buffer.concat([Buffer.from(schema + '\n'), one]),
      ).toString('utf8'),
    );
    expect(read).toEqual(rec);
    // And back: our decoder gives the same base64 strings.
    expect(decodeChunk(decoderOf(avro, { schema, use_magic_bytes: false }), { data: one }).records).toEqual([rec]);
  });

  it('a record that does not fit names the field and value', () => {
    const e = encoderOf(avro, { schema: SIMPLE });
    expect(() =>
      e.body([
        { host: 'a', ifIndex: 1 },
        { host: 'b', ifIndex: 'two' },
      ]),
    ).toThrow(/avro: record 2 does not fit the schema: ifIndex: "two" is not "int"/);
  });

  it('our decoder reads what our encoder wrote for every type (after python checked the file above)', async () => {
    const e = encoderOf(avro, { schema_file: 'rich.avsc', codec: 'deflate' });
    const file = Buffer.concat([Buffer.from(e.head(records)), e.body(records)]);
    const out = await decodeUnit(decoderOf(avro, { schema: SIMPLE }), file);
    expect(out.records).toEqual(records);
  });
});

describe('avro serializer: Schema Registry', () => {
  let peer: RegistryPeer;
  const V1 = SIMPLE;
  const V2 =
    '{"type":"record","name":"If","fields":[{"name":"host","type":"string"},{"name":"ifIndex","type":"int"},{"name":"speed","type":"long","default":0}]}';
  let id1: number;
  let id2: number;
  beforeAll(async () => {
    peer = await startRegistryPeer({ username: 'u', password: 'p' });
    process.env.SVC_SCHEMA_REGISTRY_USERNAME = 'u';
    process.env.SVC_SCHEMA_REGISTRY_PASSWORD = 'p';
    id1 = peer.add('ifaces-value', V1);
    id2 = peer.add('ifaces-value', V2);
  });
  afterAll(async () => {
    delete process.env.SVC_SCHEMA_REGISTRY_USERNAME;
    delete process.env.SVC_SCHEMA_REGISTRY_PASSWORD;
    await peer.close();
  });
  const signal = new AbortController().signal;
  const resolved = (partial: Record<string, unknown>, direction?: 'in' | 'out') =>
    (avro.resolve! as (c: unknown, ctx: unknown) => Promise<never>)(cfgOf(avro, partial), {
      signal,
      direction,
      schemaDir,
      schemaRegistry: {
        url: process.env.SVC_SCHEMA_REGISTRY_URL,
        username: process.env.SVC_SCHEMA_REGISTRY_USERNAME,
        password: process.env.SVC_SCHEMA_REGISTRY_PASSWORD,
      },
    });

  it('subject: every version is fetched at run start; each message decodes with the schema of its id', async () => {
    const c = await resolved({ schema_registry_url: peer.url, schema_registry_subject: 'ifaces-value' }, 'in');
    const d = avro.decoder!(c, { schemaDir });
    const out = { records: [] as Rec[], errors: [] as { message: string; raw: Buffer }[], notes: [], chunks: [] };
    decodeChunk(d, { data: pythonDatum(V1, { host: 'a', ifIndex: 1 }, id1) }, out);
    decodeChunk(d, { data: pythonDatum(V2, { host: 'b', ifIndex: 2, speed: 10 ** 10 }, id2) }, out);
    decodeChunk(d, { data: pythonDatum(V1, { host: 'c', ifIndex: 3 }, 99) }, out);
    expect(out.records).toEqual([
      { host: 'a', ifIndex: 1 },
      { host: 'b', ifIndex: 2, speed: 10 ** 10 },
    ]);
    expect(out.errors.map((e) => e.message)).toEqual([
      `avro: schema id 99 was not fetched at run start (fetched: ${id1}, ${id2}); add its subject (schema_registry_subject) or rerun after registering it`,
    ]);
    expect(peer.requests.filter((r) => r.startsWith('GET /subjects/ifaces-value/versions'))).toEqual(
      expect.arrayContaining(['GET /subjects/ifaces-value/versions', 'GET /subjects/ifaces-value/versions/1', 'GET /subjects/ifaces-value/versions/2']),
    );
  });

  it("plain datums (use_magic_bytes false) decode with the subject's newest schema; with magic bytes an unknown id is never guessed", async () => {
    const plain = await resolved({ schema_registry_url: peer.url, schema_registry_subject: 'ifaces-value', use_magic_bytes: false });
    expect(decodeChunk(avro.decoder!(plain, { schemaDir }), { data: pythonDatum(V2, { host: 'p', ifIndex: 1, speed: 3 }) }).records).toEqual([
      { host: 'p', ifIndex: 1, speed: 3 },
    ]);
    const byId = await resolved({ schema_registry_url: peer.url, schema_registry_id: id1, use_magic_bytes: false }, 'in');
    expect(decodeChunk(avro.decoder!(byId, { schemaDir }), { data: pythonDatum(V1, { host: 'q', ifIndex: 2 }) }).records).toEqual([{ host: 'q', ifIndex: 2 }]);
    const both = await resolved({ schema_registry_url: peer.url, schema_registry_subject: 'ifaces-value' });
    const out = decodeChunk(avro.decoder!(both, { schemaDir }), { data: pythonDatum(V2, { host: 'r', ifIndex: 1, speed: 3 }, 1234) });
    expect(out.records).toEqual([]);
    expect(out.errors[0]!.message).toMatch(/schema id 1234 was not fetched at run start/);
  });

  it('the resolved config is plain data (it crosses to worker threads) and needs no network afterwards', async () => {
    const c = await resolved({ schema_registry_url: peer.url, schema_registry_subject: 'ifaces-value' });
    const copy = structuredClone(c);
    const before = peer.requests.length;
    const out = decodeChunk(avro.decoder!(copy, { schemaDir }), { data: pythonDatum(V1, { host: 'a', ifIndex: 1 }, id1) });
    expect(out.records).toEqual([{ host: 'a', ifIndex: 1 }]);
    expect(peer.requests.length).toBe(before);
  });

  it('writing with a subject and no local schema uses its latest version and id', async () => {
    const c = await resolved({ schema_registry_url: peer.url, schema_registry_subject: 'ifaces-value' }, 'out');
    const b = avro.encoder!(c, { schemaDir }).one({ host: 'w', ifIndex: 4, speed: 5 });
    expect(pythonReadsDatum(V2, b, true)).toEqual({ id: id2, value: { host: 'w', ifIndex: 4, speed: 5 } });
  });

  it('writing with schema_file and a subject registers the schema (serializer_out only) and writes its id', async () => {
    writeFileSync(join(schemaDir, 'v3.avsc'), '{"type":"record","name":"If","fields":[{"name":"host","type":"string"}]}');
    const readOnly = await resolved({ schema_registry_url: peer.url, schema_registry_subject: 'new-value', schema_file: 'v3.avsc' }, 'in');
    expect(peer.requests).not.toContain('POST /subjects/new-value/versions');
    expect(avro.decoder!(readOnly, { schemaDir })).toBeTruthy();
  });

  it('…and registers when writing', async () => {
    // A subject that does not exist yet: reading it would 404, writing creates it.
    const c = await resolved({ schema_registry_url: peer.url, schema_registry_subject: 'new-value', schema_file: 'v3.avsc' }, 'out');
    expect(peer.requests).toContain('POST /subjects/new-value/versions');
    const b = avro.encoder!(c, { schemaDir }).one({ host: 'n' });
    const schema = readFileSync(join(schemaDir, 'v3.avsc'), 'utf8');
    const r = pythonReadsDatum(schema, b, true);
    expect(r.value).toEqual({ host: 'n' });
    expect(
      (
        await fetch(`${peer.url}/schemas/ids/${r.id}`, { headers: { authorization: 'Basic ' + Buffer.from('u:p').toString('base64') } }).then(
          (x) => x.json() as Promise<{ schema: string }>,
        )
      ).schema,
    ).toBe(schema);
  });

  it('schema_registry_id: fetched by id; SVC_SCHEMA_REGISTRY_URL when schema_registry_url is not set', async () => {
    process.env.SVC_SCHEMA_REGISTRY_URL = peer.url;
    try {
      const c = await resolved({ schema_registry_url: peer.url, schema_registry_id: id1 });
      const out = decodeChunk(avro.decoder!(c, { schemaDir }), { data: pythonDatum(V1, { host: 'i', ifIndex: 9 }, id1) });
      expect(out.records).toEqual([{ host: 'i', ifIndex: 9 }]);
      const viaEnv = await resolved({ schema: V2, schema_registry_subject: 'ifaces-value' }, 'in');
      const out2 = decodeChunk(avro.decoder!(viaEnv, { schemaDir }), { data: pythonDatum(V1, { host: 'e', ifIndex: 1 }, id1) });
      expect(out2.records).toEqual([{ host: 'e', ifIndex: 1 }]);
    } finally {
      delete process.env.SVC_SCHEMA_REGISTRY_URL;
    }
  });

  it('a whole run: Kafka-style datum files decode with schemas fetched at run start; a dead registry fails the run', async () => {
    const base = join(dir, 'reg-run');
    mkdirSync(join(base, 'in'), { recursive: true });
    writeFileSync(join(base, 'in', 'a.bin'), pythonDatum(V1, { host: 'a', ifIndex: 1 }, id1));
    writeFileSync(join(base, 'in', 'b.bin'), pythonDatum(V2, { host: 'b', ifIndex: 2, speed: 7 }, id2));
    const yaml = (url: string) => `version: "1"
pipeline:
  name: avro-reg
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(join(base, 'in'))}, file_pattern: "*.bin" }
  serializer_in: { type: avro, schema_registry_url: "${url}", schema_registry_subject: ifaces-value }
  serializer_out: { type: ndjson }
  sinks:
    - { type: local, path: ${JSON.stringify(join(base, 'out'))}, filename_template: "out" }
`;
    const ok = await runPipeline(loadPipelineText(yaml(peer.url), { env: {} }).config!);
    expect(ok.status).toBe('success');
    const lines = readFileSync(join(base, 'out', readdirSync(join(base, 'out'))[0]!), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Rec);
    expect(lines.sort((x, y) => String(x.host).localeCompare(String(y.host)))).toEqual([
      { host: 'a', ifIndex: 1 },
      { host: 'b', ifIndex: 2, speed: 7 },
    ]);
    const dead = await runPipeline(loadPipelineText(yaml('http://127.0.0.1:9'), { env: {} }).config!);
    expect(dead.status).toBe('failed');
    expect(dead.error).toMatch(/schema registry http:\/\/127\.0\.0\.1:9 is unreachable/);
  });

  it('a subject without any registry configured is an error at run start', async () => {
    await expect(resolved({ schema: V1, schema_registry_subject: 'x' })).rejects.toThrow(
      /schema_registry_subject needs a registry: set schema_registry_url or SVC_SCHEMA_REGISTRY_URL/,
    );
  });

  it('unknown subject and unknown id fail the run start with the registry message', async () => {
    await expect(resolved({ schema_registry_url: peer.url, schema_registry_subject: 'nope' }, 'in')).rejects.toThrow(
      /subject 'nope' not found: Subject 'nope' not found\. \(HTTP 404, error_code 40401\)/,
    );
    await expect(resolved({ schema_registry_url: peer.url, schema_registry_id: 4242 })).rejects.toThrow(/schema id 4242 not found/);
  });

  it('an unreachable registry fails the run start, naming the URL', async () => {
    await expect(resolved({ schema_registry_url: 'http://127.0.0.1:9', schema_registry_subject: 's' })).rejects.toThrow(
      /schema registry http:\/\/127\.0\.0\.1:9 is unreachable/,
    );
  });

  it('a registry serializer used without resolve() says so', () => {
    expect(() => decoderOf(avro, { schema_registry_url: peer.url, schema_registry_subject: 's' })).toThrow(/fetched at run start/);
  });
});

describe('avro serializer: whole runs', () => {
  it('python3-avro container file -> avro -> NDJSON, and NDJSON -> avro container read by python3-avro', async () => {
    const { file, records } = pythonContainer('deflate', 2000, 4, 4000);
    const base = join(dir, 'run');
    mkdirSync(join(base, 'in'), { recursive: true });
    writeFileSync(join(base, 'in', 'data.avro'), file);
    const yaml = (src: string, inSer: string, outSer: string, out: string, pattern: string) => `version: "1"
pipeline:
  name: avro-run
  schedule: { type: manual }
  thread_workers: 2
  source: { type: local, path: ${JSON.stringify(src)}, file_pattern: "${pattern}" }
  serializer_in: ${inSer}
  serializer_out: ${outSer}
  sinks:
    - { type: local, path: ${JSON.stringify(out)}, filename_template: "out" }
`;
    const a = loadPipelineText(
      yaml(join(base, 'in'), '{ type: avro, schema_file: rich.avsc }', '{ type: ndjson, ensure_ascii: false }', join(base, 'nd'), '*.avro'),
      { env: {} },
    );
    expect(a.diagnostics.map((x) => formatDiagnostic(x))).toEqual([]);
    const ra = await runPipeline(a.config!);
    expect(ra.status).toBe('success');
    const nd = readFileSync(join(base, 'nd', readdirSync(join(base, 'nd'))[0]!), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Rec);
    expect(nd).toEqual(records);

    const b = loadPipelineText(yaml(join(base, 'nd'), '{ type: ndjson }', '{ type: avro, schema_file: rich.avsc, codec: deflate }', join(base, 'av'), '*'), {
      env: {},
    });
    const rb = await runPipeline(b.config!);
    expect(rb.status).toBe('success');
    const back = readFileSync(join(base, 'av', readdirSync(join(base, 'av'))[0]!));
    expect((pythonReads(back) as unknown as { records: Rec[] }).records).toEqual(records);
  });
});
