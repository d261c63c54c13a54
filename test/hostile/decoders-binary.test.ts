// Issue 28, finding 1 and "every decoder is bounded by its input": count bombs for the binary
// formats (Avro, MessagePack, Protobuf, Parquet), a header that claims 2^31 or 2^40 elements with
// nothing behind it, zero-width elements where the format has them. Each is decoded as the engine
// does, in a child process (decode-child.ts: a bomb that kills its process fails the test rather
// than vitest), and must come out as parse errors with a reason within a time and memory bound.
// Then the engine's generic ceiling per input (SVC_DECODE_MAX_*), and the Avro reproduction
// through `svc run` end to end: the file is dead-lettered at stage parse and the run finishes.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ROOT, svc } from '../helpers/cli.js';
import { tempDir } from '../helpers/fs.js';
import { AVRO_BOMB, avroContainer, avroString, parquetNulls, SYNC, zz } from './binary-bombs.js';

/** Time and memory a bomb may take to be refused: generous (machines differ threefold), far below what a bomb takes. */
const MAX_MS = 5000;
const MAX_RSS_GROWTH_MB = 300;
/** A decoding process still running after this long is killed (and the test fails); a test that starts several gets TEST_MS. */
const CHILD_MS = 25_000;
const TEST_MS = 120_000;

interface Outcome {
  records: number;
  errors: { message: string; rawBytes: number }[];
  ms: number;
  rssGrowthMb: number;
}

/** Decodes `data` in a child process (see decode-child.ts) and returns what came out; fails when the child dies. */
function decodeInChild(
  serializer: string,
  config: Record<string, unknown>,
  data: Buffer,
  opts: { mode?: 'unit' | 'message'; env?: Record<string, string> } = {},
): Promise<Outcome> {
  const file = join(tempDir('svc-hostile-'), 'input.bin');
  writeFileSync(file, data);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/hostile/decode-child.ts', serializer, JSON.stringify(config), file, opts.mode ?? 'unit'], {
      cwd: ROOT,
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    // A bomb that is not refused grows until V8 aborts (tens of seconds): stopped here sooner.
    const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_MS);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`the decoding process died (code ${code}, signal ${signal}): ${stderr.slice(-2000)}`));
      else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as Outcome);
    });
  });
}

function expectRefused(o: Outcome, reason: RegExp) {
  expect(o.records).toBe(0);
  expect(o.errors.length).toBeGreaterThan(0);
  expect(o.errors.map((e) => e.message).join('\n')).toMatch(reason);
  expect(o.ms).toBeLessThan(MAX_MS);
  expect(o.rssGrowthMb).toBeLessThan(MAX_RSS_GROWTH_MB);
}

// ---- Avro ------------------------------------------------------------------------------------

const AVRO_CFG = { schema: '"string"', use_magic_bytes: false };

describe('Avro', () => {
  it(
    'the reproduction (119 bytes, 2^40 empty records) is a parse error, not a dead process',
    async () => {
      expect(AVRO_BOMB.length).toBe(119);
      expectRefused(await decodeInChild('avro', AVRO_CFG, AVRO_BOMB), /block announces 1099511627776 records in 0 bytes/);
    },
    TEST_MS,
  );

  it(
    'as one message (a webhook body) too',
    async () => {
      expectRefused(await decodeInChild('avro', AVRO_CFG, AVRO_BOMB, { mode: 'message' }), /block announces 1099511627776 records/);
    },
    TEST_MS,
  );

  it(
    'an array or map inside a record that claims 2^31 nulls or empty records',
    async () => {
      const schema = {
        type: 'record',
        name: 'r',
        fields: [
          { name: 'a', type: { type: 'array', items: 'null' } },
          { name: 'm', type: { type: 'map', values: { type: 'record', name: 'e', fields: [] } } },
        ],
      };
      // One record: an array block of 2^31 nulls, then nothing (avsc allocated it and filled it with nulls).
      expectRefused(
        await decodeInChild('avro', AVRO_CFG, avroContainer(schema, [[1, Buffer.concat([zz(2n ** 31n), zz(0)])]])),
        /array block announces 2147483648 items/,
      );
      // A negative block count (followed by a byte size) of -2^31 map entries.
      expectRefused(
        await decodeInChild('avro', AVRO_CFG, avroContainer(schema, [[1, Buffer.concat([zz(0), zz(-(2n ** 31n)), zz(4), zz(0)])]])),
        /map block announces 2147483648 items/,
      );
    },
    TEST_MS,
  );

  it(
    'nested arrays of nulls, each block within its bytes, cannot multiply',
    async () => {
      // 600 arrays of 1,000 nulls each: every count is below the bytes left, together 600,000 values from 4 KB.
      const schema = { type: 'record', name: 'r', fields: [{ name: 'a', type: { type: 'array', items: { type: 'array', items: 'null' } } }] };
      const inner = Buffer.concat([zz(1000), zz(0)]);
      const datum = Buffer.concat([zz(600), ...Array.from({ length: 600 }, () => inner), zz(0), Buffer.alloc(2000)]);
      expectRefused(await decodeInChild('avro', AVRO_CFG, avroContainer(schema, [[1, datum]])), /more than 4 records or null values per byte/);
    },
    TEST_MS,
  );

  it(
    'a recursive schema nests as deep as its data: 100,000 records deep in 100 KB is refused by its depth; 512 deep (the default ceiling) decodes',
    async () => {
      // A linked list: each record's `next` is the union's second branch (index 1, zigzag 0x02), the last one null (0x00).
      const list = JSON.stringify({ type: 'record', name: 'N', fields: [{ name: 'next', type: ['null', 'N'] }] });
      const cfg = { schema: list, use_magic_bytes: false };
      const datum = (depth: number) => Buffer.concat([Buffer.alloc(depth - 1, 0x02), Buffer.from([0x00])]);
      expectRefused(await decodeInChild('avro', cfg, datum(100_000)), /records, arrays and maps nested deeper than 512 \(SVC_DECODE_MAX_DEPTH\)/);
      expect(await decodeInChild('avro', cfg, datum(512))).toMatchObject({ records: 1, errors: [] });
      expectRefused(await decodeInChild('avro', cfg, datum(513)), /nested deeper than 512/);
    },
    TEST_MS,
  );
});

// ---- MessagePack -----------------------------------------------------------------------------

describe('MessagePack', () => {
  it(
    'an array32 of 2^28-1 nils, a map32 of 2^31 entries and a str32 of 2^32-1 bytes with nothing behind them',
    async () => {
      const bombs = [
        Buffer.from([0xdd, 0x0f, 0xff, 0xff, 0xff, 0xc0]),
        Buffer.from([0xdf, 0x80, 0x00, 0x00, 0x00, 0xc0, 0xc0]),
        Buffer.from([0xdb, 0xff, 0xff, 0xff, 0xff, 0x41]),
      ];
      for (const b of bombs) {
        const o = await decodeInChild('msgpack', {}, b);
        expectRefused(o, /MessagePack piece 1, byte 0: (truncated value|invalid value)/);
        expect(o.errors.reduce((n, e) => n + e.rawBytes, 0)).toBe(b.length); // every byte reaches the DLQ
      }
    },
    TEST_MS,
  );
});

describe('MessagePack nesting', () => {
  it(
    'an array nested 100,000 deep between two good maps is refused by its depth, with its bytes; the maps decode; 512 deep (the default ceiling) decodes',
    async () => {
      const good = Buffer.from('81a168a472747231', 'hex'); // {"h":"rtr1"}
      const nested = (depth: number) => Buffer.concat([Buffer.alloc(depth, 0x91), Buffer.from([0xc0])]); // [[[...nil]]]
      const bomb = nested(100_000);
      const o = await decodeInChild('msgpack', {}, Buffer.concat([good, bomb, good]));
      expect(o.records).toBe(2);
      expect(o.errors.map((e) => e.message)).toEqual([
        `MessagePack piece 1, byte ${good.length}: arrays and maps nested 100000 deep, deeper than 512 (SVC_DECODE_MAX_DEPTH): flatten the data at its source, or raise the setting`,
      ]);
      expect(o.errors[0]!.rawBytes).toBe(bomb.length);
      expect(o.ms).toBeLessThan(MAX_MS);
      const atCeiling = await decodeInChild('msgpack', {}, nested(512));
      expect(atCeiling).toMatchObject({ records: 1, errors: [] });
      const past = await decodeInChild('msgpack', {}, nested(513));
      expect(past.errors.map((e) => e.message).join('')).toMatch(/nested 513 deep, deeper than 512/);
    },
    TEST_MS,
  );
});

// ---- Protobuf --------------------------------------------------------------------------------

const PROTO = `syntax = "proto3";
package hostile;
message Empty {}
message M {
  repeated int32 v = 1;
  repeated Empty e = 2;
  string s = 3;
}
`;

describe('Protobuf', () => {
  const protoConfig = () => {
    const dir = tempDir('svc-hostile-proto-');
    writeFileSync(join(dir, 'm.proto'), PROTO);
    return { schema_file: join(dir, 'm.proto'), message_class: 'hostile.M' };
  };

  it(
    'a packed field, a string and a length prefix that claim 2^31 bytes or more with nothing behind them',
    async () => {
      const cfg = protoConfig();
      const pb = (...parts: number[][]) => Buffer.from(parts.flat());
      const len31 = [0x80, 0x80, 0x80, 0x80, 0x08]; // varint 2^31
      // Length-delimited framing: a message of 8 bytes whose packed field 1 claims 2^31 bytes.
      const packed = pb([8], [0x0a, ...len31], [0x08, 0x01]);
      expectRefused(await decodeInChild('protobuf', cfg, packed), /protobuf hostile\.M: /);
      // A single message whose string field claims 2^31 bytes.
      expectRefused(
        await decodeInChild('protobuf', { ...cfg, framing: 'none', use_magic_bytes: false }, pb([0x1a, ...len31], [0x41])),
        /protobuf hostile\.M: /,
      );
      // A frame length of 2^40.
      expectRefused(
        await decodeInChild('protobuf', cfg, pb([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40], [0x08])),
        /protobuf: bytes after a corrupt length prefix/,
      );
    },
    TEST_MS,
  );

  it(
    'empty messages cost their two bytes each: a frame of them decodes, bounded by its size',
    async () => {
      const cfg = protoConfig();
      // 2 MB of zero-width elements (an empty message is a tag and a zero length).
      const body = Buffer.alloc(2 << 20);
      for (let i = 0; i < body.length; i += 2) body[i] = 0x12;
      const frame = Buffer.concat([Buffer.from([0x80, 0x80, 0x80, 0x01]), body]); // varint 2^21
      const o = await decodeInChild('protobuf', cfg, frame);
      expect(o.errors).toEqual([]);
      expect(o.records).toBe(1);
      expect(o.ms).toBeLessThan(MAX_MS * 2);
      expect(o.rssGrowthMb).toBeLessThan(MAX_RSS_GROWTH_MB);
    },
    TEST_MS,
  );
});

// ---- Parquet ---------------------------------------------------------------------------------

describe('Parquet', () => {
  it(
    'the crafted file is valid: 1,000 nulls decode to 1,000 records',
    async () => {
      const o = await decodeInChild('parquet', {}, parquetNulls(1000));
      expect(o.errors).toEqual([]);
      expect(o.records).toBe(1000);
    },
    TEST_MS,
  );

  it(
    'a row group of 2^30 rows in a 40-byte column chunk is refused, as a file and as a message',
    async () => {
      const bomb = parquetNulls(2 ** 30);
      expect(bomb.length).toBeLessThan(300);
      expectRefused(await decodeInChild('parquet', {}, bomb), /claim 1073741824 values in \d+ bytes/);
      expectRefused(await decodeInChild('parquet', {}, bomb, { mode: 'message' }), /claim 1073741824 values in \d+ bytes/);
    },
    TEST_MS,
  );
});

// ---- the engine's ceiling per input ----------------------------------------------------------

describe('the ceiling per input (SVC_DECODE_MAX_RECORDS_PER_INPUT, SVC_DECODE_MAX_BYTES_PER_INPUT)', () => {
  it(
    'records past max(limit, input bytes): a deflated Avro block of 200,000 records in a few hundred bytes',
    async () => {
      const schema = { type: 'record', name: 'r', fields: [{ name: 'i', type: 'int' }] };
      const block = deflateRawSync(Buffer.alloc(200_000)); // 200,000 records of i = 0, one byte each
      const head = avroContainer(schema, [], 'deflate');
      const file = Buffer.concat([head, zz(200_000), zz(block.length), block, SYNC]);
      const o = await decodeInChild('avro', AVRO_CFG, file, { env: { SVC_DECODE_MAX_RECORDS_PER_INPUT: '1000' } });
      expect(o.records).toBe(0);
      expect(o.errors).toHaveLength(1);
      expect(o.errors[0]!.message).toMatch(/^more than 1000 records from one input \(SVC_DECODE_MAX_RECORDS_PER_INPUT.*\): the whole piece is dead-lettered/);
      expect(o.errors[0]!.rawBytes).toBe(file.length - head.length); // the piece (its blocks), whole
      // The default lets it through.
      const ok = await decodeInChild('avro', AVRO_CFG, file);
      expect(ok).toMatchObject({ records: 200_000, errors: [] });
    },
    TEST_MS,
  );

  it(
    'bytes of records past the limit: the whole input is one parse error with its raw bytes',
    async () => {
      const lines = Array.from({ length: 200 }, (_, i) => JSON.stringify({ i, text: 'x'.repeat(100) })).join('\n') + '\n';
      const o = await decodeInChild('ndjson', {}, Buffer.from(lines), { env: { SVC_DECODE_MAX_BYTES_PER_INPUT: '4096' } });
      expect(o.records).toBe(0);
      expect(o.errors).toHaveLength(1);
      expect(o.errors[0]!.message).toMatch(
        /MiB from one input \(SVC_DECODE_MAX_BYTES_PER_INPUT\): the whole input is dead-lettered, none of its records delivered; if the data is genuine, raise the setting/,
      );
      expect(o.errors[0]!.rawBytes).toBe(Buffer.byteLength(lines));
      expect(await decodeInChild('ndjson', {}, Buffer.from(lines))).toMatchObject({ records: 200, errors: [] });
    },
    TEST_MS,
  );
});

// ---- end to end ------------------------------------------------------------------------------

describe('svc run with the Avro reproduction in a local source folder', () => {
  it(
    'the run finishes, the file is dead-lettered at stage parse with the reason, the good file is delivered',
    async () => {
      const dir = tempDir('svc-hostile-run-');
      mkdirSync(join(dir, 'in'));
      writeFileSync(join(dir, 'in', 'bomb.avro'), AVRO_BOMB);
      const schema = { type: 'record', name: 'r', fields: [{ name: 'host', type: 'string' }] };
      writeFileSync(join(dir, 'in', 'good.avro'), avroContainer(schema, [[1, avroString('rtr1')]]));
      const file = join(dir, 'p.yaml');
      writeFileSync(
        file,
        `version: "1"
pipeline:
  name: hostile-avro
  schedule: { type: manual }
  source: { type: local, path: "${dir}/in", file_pattern: "*.avro" }
  serializer_in: { type: avro, schema: '"string"', use_magic_bytes: false }
  serializer_out: { type: ndjson }
  on_error: dlq
  sinks:
    - { type: local, path: "${dir}/out", filename_template: out.ndjson }
  dlq: { type: local, path: "${dir}/dlq" }
`,
      );
      const started = Date.now();
      const r = await svc(['run', file], { NODE_OPTIONS: '--max-old-space-size=512' });
      expect(Date.now() - started).toBeLessThan(60_000);
      expect(r.stderr).not.toMatch(/invalid size error|heap out of memory/);
      expect(r.code, r.stderr).toBe(0);
      const rec = JSON.parse(r.stdout) as Record<string, unknown>;
      expect(rec).toMatchObject({ status: 'success', dlq_count: 1, records_out: 1 });
      expect(readFileSync(join(dir, 'out', 'out.ndjson'), 'utf8')).toBe('{"host":"rtr1"}\n');
      const dead = readdirSync(join(dir, 'dlq')).flatMap((f) =>
        readFileSync(join(dir, 'dlq', f), 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Record<string, unknown>),
      );
      expect(dead).toHaveLength(1);
      expect(dead[0]).toMatchObject({ _stage: 'parse' });
      expect(String(dead[0]!._error)).toMatch(/block announces 1099511627776 records in 0 bytes/);
      // The raw bytes are the block that claimed the records (a container's pieces are its blocks; the header is not repeated).
      const block = Buffer.concat([zz(2n ** 40n), zz(0), SYNC]);
      expect(Buffer.from(String(dead[0]!.raw), 'base64')).toEqual(block);
      expect(AVRO_BOMB.subarray(-block.length)).toEqual(block);
    },
    TEST_MS,
  );
});
