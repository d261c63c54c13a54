// Encoding Prometheus remote write 1.0: a protobuf WriteRequest (the messages decode.ts reads) in a
// snappy block. The sink's wire format, and what the tests, the benchmark, the fuzz corpus and the
// conformance fixture build bodies with: one encoder for all of them. Sizes are computed first and
// the message is written into one buffer (no buffer per label or sample).
import * as snappy from 'snappyjs';

export interface SeriesIn {
  /** Label name to value, `__name__` among them; written in the order given (the sink sorts them, as the spec asks). */
  labels: Record<string, string> | [string, string][];
  samples: { value: number; timestamp_ms: number }[];
  /** The labels already encoded (labelBytes()): copied as they are, `labels` not read. */
  encoded?: Buffer;
}

/** The protobuf bytes of a series' labels (its `TimeSeries.labels` fields), for a sender that sends the same series again and again. */
export function labelBytes(labels: SeriesIn['labels']): Buffer {
  const enc = encodeWriteRequest([{ labels, samples: [] }]);
  // Past the WriteRequest.timeseries tag and length: the TimeSeries' own fields.
  let pos = 1;
  while (enc[pos]! >= 0x80) pos++;
  return enc.subarray(pos + 1);
}

/** Bytes of a varint (negative int64s take ten). */
function varintSize(v: number): number {
  if (v < 0) return 10;
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 0x80);
    n++;
  }
  return n;
}

function putVarint(buf: Buffer, pos: number, v: number): number {
  if (v < 0) {
    let b = BigInt.asUintN(64, BigInt(v));
    while (b >= 0x80n) {
      buf[pos++] = Number(b & 0x7fn) | 0x80;
      b >>= 7n;
    }
    buf[pos++] = Number(b);
    return pos;
  }
  while (v >= 0x80) {
    buf[pos++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  buf[pos++] = v;
  return pos;
}

const pairsOf = (l: SeriesIn['labels']) => (Array.isArray(l) ? l : Object.entries(l));

/** The protobuf bytes of a WriteRequest: for each series its labels, then its samples. */
export function encodeWriteRequest(series: SeriesIn[]): Buffer {
  // Pass 1: the size of every length-delimited part, kept in order for pass 2.
  const sizes: number[] = [];
  let total = 0;
  const strBytes: number[] = [];
  for (const s of series) {
    let ts = 0;
    if (s.encoded) ts += s.encoded.length;
    else
      for (const [name, value] of pairsOf(s.labels)) {
        const n = Buffer.byteLength(name);
        const v = Buffer.byteLength(value);
        strBytes.push(n, v);
        const label = 1 + varintSize(n) + n + 1 + varintSize(v) + v;
        ts += 1 + varintSize(label) + label;
      }
    for (const smp of s.samples) {
      const sample = 9 + 1 + varintSize(smp.timestamp_ms);
      ts += 1 + varintSize(sample) + sample;
    }
    sizes.push(ts);
    total += 1 + varintSize(ts) + ts;
  }
  // Pass 2: the bytes.
  const buf = Buffer.allocUnsafe(total);
  let pos = 0;
  let si = 0;
  let bi = 0;
  for (const s of series) {
    buf[pos++] = 0x0a; // WriteRequest.timeseries = 1
    pos = putVarint(buf, pos, sizes[si++]!);
    if (s.encoded) pos += s.encoded.copy(buf, pos);
    else
      for (const [name, value] of pairsOf(s.labels)) {
        const n = strBytes[bi++]!;
        const v = strBytes[bi++]!;
        buf[pos++] = 0x0a; // TimeSeries.labels = 1
        pos = putVarint(buf, pos, 1 + varintSize(n) + n + 1 + varintSize(v) + v);
        buf[pos++] = 0x0a; // Label.name = 1
        pos = putVarint(buf, pos, n);
        pos += buf.write(name, pos, 'utf8');
        buf[pos++] = 0x12; // Label.value = 2
        pos = putVarint(buf, pos, v);
        pos += buf.write(value, pos, 'utf8');
      }
    for (const smp of s.samples) {
      buf[pos++] = 0x12; // TimeSeries.samples = 2
      pos = putVarint(buf, pos, 9 + 1 + varintSize(smp.timestamp_ms));
      buf[pos++] = 0x09; // Sample.value = 1, double
      buf.writeDoubleLE(smp.value, pos);
      pos += 8;
      buf[pos++] = 0x10; // Sample.timestamp = 2, int64 (ms)
      pos = putVarint(buf, pos, smp.timestamp_ms);
    }
  }
  return buf;
}

/** A snappy block (the block format remote write uses, not the framed one). */
export const snappyBlock = (b: Uint8Array) => Buffer.from(snappy.compress(b));

/** A remote-write body: the WriteRequest in a snappy block. */
export const encodeBody = (series: SeriesIn[]) => snappyBlock(encodeWriteRequest(series));

/** Prometheus' stale-marker NaN as a double (bit pattern 0x7ff0000000000002). */
export const STALE_NAN = Buffer.from([2, 0, 0, 0, 0, 0, 0xf0, 0x7f]).readDoubleLE(0);

/** The headers remote write 1.0 requires on every request. */
export const REMOTE_WRITE_HEADERS = {
  'content-type': 'application/x-protobuf',
  'content-encoding': 'snappy',
  'x-prometheus-remote-write-version': '0.1.0',
} as const;
