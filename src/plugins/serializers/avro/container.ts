// Avro object container files, read block by block so a large file is never held whole. avsc's own
// container streams are asynchronous Node streams that stop at the first bad block; the engine needs
// synchronous decoding of independent pieces and recovery at the next sync marker, so the block
// framing (count, size, data, 16-byte sync marker) is walked here and avsc decodes header and datums.
import { crc32, deflateRawSync, inflateRawSync } from 'node:zlib';
import avro from 'avsc';
import * as snappy from 'snappyjs';
import { uncompressBlock } from '../../common/snappy-block.js';

export const CONTAINER_MAGIC = Buffer.from('Obj\x01', 'latin1');

const HEADER = avro.Type.forSchema({
  type: 'record',
  name: 'org.apache.avro.file.Header',
  fields: [
    { name: 'magic', type: { type: 'fixed', name: 'Magic', size: 4 } },
    { name: 'meta', type: { type: 'map', values: 'bytes' } },
    { name: 'sync', type: { type: 'fixed', name: 'Sync', size: 16 } },
  ],
});

export const CODECS = ['null', 'deflate', 'snappy'] as const;
/** Largest uncompressed snappy block accepted: far above what writers produce (64 KiB to a few MiB). */
const MAX_BLOCK = 1 << 30;
export type Codec = (typeof CODECS)[number];

export interface ContainerHeader {
  schema: string;
  codec: string;
  sync: Buffer;
  /** Bytes the header takes at the start of the file. */
  length: number;
}

export const isContainer = (b: Buffer): boolean => b.length >= 4 && b.subarray(0, 4).equals(CONTAINER_MAGIC);

/**
 * The header at the start of `b`; undefined when `b` is too short; throws when it is invalid.
 * Walked here rather than by avsc: avsc's map reader trusts the block counts, so a corrupt count
 * of billions spun for seconds over a few hundred bytes (test/fuzz-regressions/avro-container).
 * Every entry takes at least two bytes, so this walk ends within the buffer.
 */
export function readHeader(b: Buffer): ContainerHeader | undefined {
  if (b.length < 4) return undefined;
  if (!isContainer(b)) throw new Error('not an Avro object container file (no Obj\\x01 magic)');
  const bad = (what: string) => new Error(`invalid Avro container header: ${what}`);
  const meta = new Map<string, Buffer>();
  let pos = 4;
  const bytes = (): Buffer | undefined => {
    const n = readLong(b, pos);
    if (n === 'more') return undefined;
    if (!(n.value >= 0)) throw bad(`a length of ${n.value}`);
    if (n.pos + n.value > b.length) return undefined;
    pos = n.pos + n.value;
    return b.subarray(n.pos, pos);
  };
  for (;;) {
    const block = readLong(b, pos);
    if (block === 'more') return undefined;
    if (Number.isNaN(block.value)) throw bad('a metadata block count longer than 10 bytes');
    pos = block.pos;
    if (block.value === 0) break;
    if (block.value < 0) {
      // A negative count is followed by the block's size in bytes (not needed here).
      const size = readLong(b, pos);
      if (size === 'more') return undefined;
      if (!(size.value >= 0)) throw bad(`a metadata block size of ${size.value}`);
      pos = size.pos;
    }
    for (let i = Math.abs(block.value); i > 0; i--) {
      const key = bytes();
      const value = key && bytes();
      if (!key || !value) return undefined;
      meta.set(key.toString('utf8'), value);
    }
  }
  if (pos + 16 > b.length) return undefined;
  const schema = meta.get('avro.schema');
  if (!schema) throw bad('no avro.schema entry');
  return {
    schema: schema.toString('utf8'),
    codec: meta.get('avro.codec')?.toString('utf8') || 'null',
    sync: Buffer.from(b.subarray(pos, pos + 16)),
    length: pos + 16,
  };
}

/** An unsigned-safe zig-zag varint long at `pos`; `more` when it runs past the end; NaN when it is longer than 10 bytes. */
function readLong(b: Buffer, pos: number): { value: number; pos: number } | 'more' {
  let v = 0;
  let mul = 1;
  for (let i = 0; i < 10; i++) {
    if (pos >= b.length) return 'more';
    const byte = b[pos++]!;
    v += (byte & 0x7f) * mul;
    mul *= 128;
    if ((byte & 0x80) === 0) return { value: v % 2 === 0 ? v / 2 : -(v + 1) / 2, pos };
  }
  return { value: NaN, pos };
}

export type BlockScan =
  | { kind: 'block'; end: number; count: number; dataStart: number; dataEnd: number }
  | { kind: 'bad'; end: number; reason: string }
  | { kind: 'more' };

/**
 * The block at `pos`. A block is good only when the sync marker follows its data; otherwise the
 * bad stretch runs to the end of the next sync marker found (the reader resumes there), or to the
 * end of `b` when `final` and none is found. `more` (only when not `final`): read further first.
 */
export function scanBlock(b: Buffer, pos: number, sync: Buffer, final: boolean): BlockScan {
  const bad = (reason: string): BlockScan => {
    const at = b.indexOf(sync, pos);
    if (at !== -1) return { kind: 'bad', end: at + 16, reason };
    return final ? { kind: 'bad', end: b.length, reason } : { kind: 'more' };
  };
  const count = readLong(b, pos);
  if (count === 'more') return final ? bad('truncated block header') : { kind: 'more' };
  const size = readLong(b, count.pos);
  if (size === 'more') return final ? bad('truncated block header') : { kind: 'more' };
  if (!(count.value >= 0) || !(size.value >= 0)) return bad(`invalid block header (count ${count.value}, size ${size.value})`);
  const dataEnd = size.pos + size.value;
  if (dataEnd + 16 > b.length) {
    // A sync marker before the declared end means the size is wrong: no need to wait for more.
    const at = b.indexOf(sync, pos);
    if (at !== -1 && at < dataEnd) return { kind: 'bad', end: at + 16, reason: `block size ${size.value} runs past the next sync marker` };
    return final ? bad(`truncated block: ${size.value} bytes announced, ${Math.max(0, b.length - size.pos - 16)} present`) : { kind: 'more' };
  }
  if (!b.subarray(dataEnd, dataEnd + 16).equals(sync)) return bad('sync marker missing after block (corrupt block)');
  return { kind: 'block', end: dataEnd + 16, count: count.value, dataStart: size.pos, dataEnd };
}

/** The uncompressed datums of a block. */
export function inflate(codec: string, data: Buffer): Buffer {
  switch (codec) {
    case 'null':
      return data;
    case 'deflate':
      return inflateRawSync(data, { maxOutputLength: MAX_BLOCK }); // as snappy: no block inflates past 1 GiB
    case 'snappy': {
      // Snappy blocks end with the CRC-32 of the uncompressed data, big-endian.
      if (data.length < 4) throw new Error('snappy block shorter than its checksum');
      const out = Buffer.from(uncompressBlock(data.subarray(0, data.length - 4), MAX_BLOCK));
      if (crc32(out) >>> 0 !== data.readUInt32BE(data.length - 4)) throw new Error('snappy block checksum mismatch');
      return out;
    }
    default:
      throw new Error(`codec '${codec}' is not supported (null, deflate, snappy)`);
  }
}

export function deflate(codec: Codec, data: Buffer): Buffer {
  switch (codec) {
    case 'null':
      return data;
    case 'deflate':
      return deflateRawSync(data);
    case 'snappy': {
      const crc = Buffer.allocUnsafe(4);
      crc.writeUInt32BE(crc32(data) >>> 0);
      return Buffer.concat([Buffer.from(snappy.compress(data)), crc]);
    }
  }
}

export function writeLong(n: number, out: number[]): void {
  let v = n >= 0 ? n * 2 : -n * 2 - 1;
  while (v >= 128) {
    out.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
}

/** One block: count, byte size, (compressed) datums, sync marker. */
export function encodeBlock(count: number, datums: Buffer, codec: Codec, sync: Buffer): Buffer {
  const data = deflate(codec, datums);
  const pre: number[] = [];
  writeLong(count, pre);
  writeLong(data.length, pre);
  return Buffer.concat([Buffer.from(pre), data, sync]);
}

/** The container header: magic, schema and codec metadata, sync marker. */
export function containerHeader(schema: string, codec: Codec, sync: Buffer): Buffer {
  return HEADER.toBuffer({ magic: CONTAINER_MAGIC, meta: { 'avro.schema': Buffer.from(schema, 'utf8'), 'avro.codec': Buffer.from(codec) }, sync });
}
