// Count bombs of the binary formats (issue 28): inputs that claim far more elements than their
// bytes hold. Built here for test/hostile/decoders-binary.test.ts; the same bytes are regression
// cases of the fuzz targets (test/fuzz-regressions/avro-container, parquet).
import { ByteWriter } from 'hyparquet-writer';
import { serializeTCompactProtocol } from 'hyparquet-writer/src/thrift.js';
import { longBytes } from '../../src/plugins/serializers/avro/values.js';

/** Avro's zig-zag varint long. */
export const zz = (n: number | bigint): Buffer => longBytes(n);

export const avroString = (s: string | Buffer) => Buffer.concat([zz(Buffer.byteLength(s)), Buffer.from(s)]);
export const SYNC = Buffer.alloc(16, 'S');

/** A container file with `schema` (JSON text, or a value) in its header and the given blocks (count, datum bytes). */
export function avroContainer(schema: unknown, blocks: [count: number | bigint, data: Buffer][], codec = 'null'): Buffer {
  const text = typeof schema === 'string' ? schema : JSON.stringify(schema);
  const header = Buffer.concat([
    Buffer.from('Obj\x01', 'latin1'),
    zz(2),
    avroString('avro.schema'),
    avroString(text),
    avroString('avro.codec'),
    avroString(codec),
    zz(0),
    SYNC,
  ]);
  return Buffer.concat([header, ...blocks.flatMap(([count, data]) => [zz(count), zz(data.length), data, SYNC])]);
}

/** The reproduction, byte for byte (119 bytes): an empty record type and a block count of 2^40. */
export const AVRO_BOMB = avroContainer('{"type": "record", "name": "e", "fields": []}', [[2n ** 40n, Buffer.alloc(0)]]);

/** Thrift compact struct bytes (fields as field_<id>, ascending; bigint for i64). */
function thrift(struct: Record<string, unknown>): Buffer {
  const w = new ByteWriter();
  serializeTCompactProtocol(w, struct as never);
  return Buffer.from(w.getBuffer());
}

const varint = (n: number) => {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return Buffer.from(out);
};

/**
 * A Parquet file of one optional INT32 column whose only page holds `n` nulls: definition levels as
 * one run-length run of n zeros (a few bytes, whatever n), counts in the footer and the page header
 * to match. With n = 2^30 the old reader grew arrays of a billion elements until V8 aborted.
 */
export function parquetNulls(n: number): Buffer {
  const levels = Buffer.concat([varint(n * 2), Buffer.from([0])]); // RLE run: header n << 1, value 0 (bit width 1)
  const body = Buffer.concat([Buffer.from([levels.length, 0, 0, 0]), levels]);
  const page = thrift({ field_1: 0, field_2: body.length, field_3: body.length, field_5: { field_1: n, field_2: 0, field_3: 3, field_4: 3 } });
  const chunk = Buffer.concat([page, body]);
  const footer = thrift({
    field_1: 1,
    field_2: [
      { field_4: 'schema', field_5: 1 },
      { field_1: 1, field_3: 1, field_4: 'x' },
    ],
    field_3: BigInt(n),
    field_4: [
      {
        field_1: [
          {
            field_2: 4n,
            field_3: {
              field_1: 1,
              field_2: [0, 3],
              field_3: ['x'],
              field_4: 0,
              field_5: BigInt(n),
              field_6: BigInt(chunk.length),
              field_7: BigInt(chunk.length),
              field_9: 4n,
            },
          },
        ],
        field_2: BigInt(chunk.length),
        field_3: BigInt(n),
      },
    ],
  });
  const len = Buffer.alloc(4);
  len.writeUInt32LE(footer.length);
  return Buffer.concat([Buffer.from('PAR1'), chunk, footer, len, Buffer.from('PAR1')]);
}
