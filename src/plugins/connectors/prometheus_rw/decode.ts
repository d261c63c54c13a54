// Prometheus remote write 1.0: a Snappy block (not the framed format) around a protobuf
// `WriteRequest`. A hand-written reader of the four messages the records need, not a generic
// protobuf library: it walks the bytes once and builds each record directly (bench
// `prom-rw-ingest` measures it against snappy + protobufjs decoding into objects).
//
//   WriteRequest { repeated TimeSeries timeseries = 1; repeated MetricMetadata metadata = 3; }
//   TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2;
//                  repeated Exemplar exemplars = 3; repeated Histogram histograms = 4; }
//   Label        { string name = 1; string value = 2; }
//   Sample       { double value = 1; int64 timestamp = 2; }   // timestamp: ms since the epoch
//
// Unknown fields are skipped by wire type, as protobuf requires. Metadata, exemplars and native
// histograms are not samples: they are counted (`ignored`), not turned into records.
import { uncompressBlock } from '../../common/snappy-block.js';
import { sampleValue } from '../../common/prom-value.js';

/** One sample as a record. */
export interface SampleRecord {
  name: string;
  labels: Record<string, string>;
  /** A number; NaN and the infinities (which JSON cannot hold) as "NaN", "+Inf", "-Inf"; null for a stale marker. */
  value: number | string | null;
  timestamp: string;
  timestamp_ms: number;
  /** Present (true) only on Prometheus stale markers: the series ended (target gone, series vanished). */
  stale?: true;
}

export interface Ignored {
  exemplars: number;
  histograms: number;
  metadata: number;
}

/** Largest uncompressed WriteRequest taken (a snappy bomb is refused before it is allocated). */
export const MAX_UNCOMPRESSED_BYTES = 64 << 20;

/**
 * Estimated JSON bytes of one sample's record beside its labels ({"name","labels","value",
 * "timestamp","timestamp_ms"}): every sample repeats its series' labels, so a series with large
 * labels and many empty samples (two bytes each) would otherwise multiply the body many times over.
 */
const RECORD_BYTES = 96;

const tooLarge = (est: number, max: number, at: number): never =>
  fail(
    `the samples' records would take about ${est} bytes, more than the ${max} allowed (SVC_PROMETHEUS_RW_MAX_OUTPUT_BYTES): each sample repeats its series' labels; send fewer samples per request (remote_write queue_config max_samples_per_send)`,
    at,
  );

export class RemoteWriteError extends Error {
  override name = 'RemoteWriteError';
}

/** The protobuf bytes of a remote-write body; throws RemoteWriteError on a bad snappy block. */
export function uncompress(body: Uint8Array): Buffer {
  if (body.length === 0) throw new RemoteWriteError('empty body: expected a snappy-compressed protobuf WriteRequest');
  try {
    const out = uncompressBlock(body, MAX_UNCOMPRESSED_BYTES);
    return Buffer.isBuffer(out) ? out : Buffer.from(out.buffer, out.byteOffset, out.byteLength);
  } catch (e) {
    throw new RemoteWriteError(`not a snappy block (Content-Encoding: snappy, block format): ${(e as Error).message}`);
  }
}

// ---- the protobuf wire ----------------------------------------------------------------------

const fail = (what: string, at: number): never => {
  throw new RemoteWriteError(`malformed protobuf WriteRequest: ${what} at byte ${at}`);
};

/** A cursor over one message's bytes. */
class Reader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  /** A varint up to 2^53 exactly; a longer one (negative int64) through BigInt. */
  varint(): number {
    const buf = this.buf;
    let pos = this.pos;
    let b = buf[pos++]!;
    if (b < 0x80 && pos <= this.end) {
      this.pos = pos;
      return b;
    }
    let value = b & 0x7f;
    let mul = 0x80;
    for (let i = 1; i < 10; i++) {
      if (pos >= this.end) fail('truncated varint', pos);
      b = buf[pos++]!;
      if (i >= 7) return this.bigVarint();
      value += (b & 0x7f) * mul;
      if (b < 0x80) {
        this.pos = pos;
        return value;
      }
      mul *= 0x80;
    }
    return fail('varint longer than 10 bytes', pos);
  }

  /** A varint of 8 to 10 bytes (int64 beyond 2^49, negative values) read again exactly. */
  private bigVarint(): number {
    let pos = this.pos;
    let v = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (pos >= this.end) fail('truncated varint', pos);
      const b = this.buf[pos++]!;
      v |= BigInt(b & 0x7f) << shift;
      shift += 7n;
      if (b < 0x80) {
        this.pos = pos;
        return Number(BigInt.asIntN(64, v));
      }
    }
    return fail('varint longer than 10 bytes', pos);
  }

  /** The end of a length-delimited field that starts here. */
  delimited(): number {
    const len = this.varint();
    const end = this.pos + len;
    // A 10-byte varint reads as a negative int64: such a length would step back (an endless loop, found by fuzzing).
    if (len < 0) fail('negative length', this.pos);
    if (end > this.end) fail('length past the end of its message', this.pos);
    return end;
  }

  skip(wire: number) {
    switch (wire) {
      case 0:
        this.varint();
        return;
      case 1:
        this.pos += 8;
        break;
      case 2:
        this.pos = this.delimited();
        return;
      case 5:
        this.pos += 4;
        break;
      default:
        fail(`unsupported wire type ${wire}`, this.pos);
    }
    if (this.pos > this.end) fail('field past the end of its message', this.pos);
  }
}

/**
 * Label names and values repeat across series and requests (a scrape sends the same names,
 * instances and jobs again and again): a small direct-mapped cache of short strings, keyed by a
 * hash of their bytes and checked byte by byte, returns the same string without decoding it again
 * (and V8 then keys record objects by one internalized string). A miss decodes and replaces.
 */
const CACHE_SIZE = 4096;
const CACHE_MAX_BYTES = 64;
const cacheBytes: (Buffer | undefined)[] = new Array(CACHE_SIZE);
const cacheText: string[] = new Array(CACHE_SIZE);

function text(buf: Buffer, start: number, end: number): string {
  const len = end - start;
  if (len === 0) return '';
  if (len > CACHE_MAX_BYTES) return buf.toString('utf8', start, end);
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ buf[i]!, 0x01000193);
  const slot = (h ^ (h >>> 15)) & (CACHE_SIZE - 1);
  const known = cacheBytes[slot];
  if (known !== undefined && known.length === len) {
    let same = true;
    for (let i = 0; i < len; i++) {
      if (known[i] !== buf[start + i]) {
        same = false;
        break;
      }
    }
    if (same) return cacheText[slot]!;
  }
  const str = buf.toString('utf8', start, end);
  cacheBytes[slot] = Buffer.from(buf.subarray(start, end));
  cacheText[slot] = str;
  return str;
}

// ---- WriteRequest → records -----------------------------------------------------------------

/** Largest |timestamp| a Date holds (about 275,000 years either side of 1970). */
const MAX_MS = 8.64e15;

/** Prometheus' stale marker: the NaN with the bit pattern 0x7ff0000000000002. */
const isStale = (buf: Buffer, at: number) => buf.readUInt32LE(at) === 2 && buf.readUInt32LE(at + 4) === 0x7ff00000;

// The record builder reads with a flat cursor (module state: one decode runs at a time on a
// thread, and none awaits): no reader objects per label or sample.
let B: Buffer = Buffer.alloc(0);
let P = 0;

/** A varint at P, bounded by `end` (fast path: one or two bytes, as tags and lengths are). */
function vint(end: number): number {
  const b0 = B[P]!;
  if (b0 < 0x80 && P < end) {
    P++;
    return b0;
  }
  const r = new Reader(B, P, end);
  const v = r.varint();
  P = r.pos;
  return v;
}

/** The end of a length-delimited field whose length starts at P. */
function field(end: number): number {
  const len = vint(end);
  const e = P + len;
  if (e > end) fail('length past the end of its message', P);
  return e;
}

function skipField(wire: number, end: number) {
  const r = new Reader(B, P, end);
  r.skip(wire);
  P = r.pos;
}

/**
 * Walks a WriteRequest (protobuf bytes) and hands every sample on as a record, in order (series by
 * series, samples in their order). Throws RemoteWriteError on malformed bytes. Returns what was ignored.
 */
export function decodeWriteRequest(buf: Buffer, emit: (r: SampleRecord) => void, maxOutput = Infinity): Ignored {
  const ignored: Ignored = { exemplars: 0, histograms: 0, metadata: 0 };
  let est = 0;
  B = buf;
  P = 0;
  const total = buf.length;
  let lastMs = NaN;
  let lastIso = '';
  // Offsets of the samples of the current series: [start, end, start, end...].
  const samples: number[] = [];
  while (P < total) {
    const tag = vint(total);
    if (tag !== 0x0a) {
      if (tag >>> 3 === 3 && (tag & 7) === 2) ignored.metadata++;
      skipField(tag & 7, total);
      continue;
    }
    const end = field(total);
    // TimeSeries: the labels come first on the wire, but order is not guaranteed, so samples are
    // noted as offsets and turned into records once the series is read.
    let name = '';
    const labels: Record<string, string> = {};
    samples.length = 0;
    let labelBytes = 0;
    while (P < end) {
      const t = vint(end);
      if (t === 0x0a) {
        const lend = field(end);
        labelBytes += lend - P + 4;
        let ln = '';
        let lv = '';
        while (P < lend) {
          const lt = vint(lend);
          if (lt === 0x0a || lt === 0x12) {
            const send = field(lend);
            if (lt === 0x0a) ln = text(B, P, send);
            else lv = text(B, P, send);
            P = send;
          } else skipField(lt & 7, lend);
        }
        if (ln === '__name__') name = lv;
        else labels[ln] = lv;
      } else if (t === 0x12) {
        const send = field(end);
        samples.push(P, send);
        P = send;
      } else {
        if (t === 0x1a) ignored.exemplars++;
        else if (t === 0x22) ignored.histograms++;
        skipField(t & 7, end);
      }
    }
    est += (samples.length / 2) * (labelBytes + RECORD_BYTES);
    if (est > maxOutput) tooLarge(est, maxOutput, end);
    for (let i = 0; i < samples.length; i += 2) {
      P = samples[i]!;
      const send = samples[i + 1]!;
      let value = 0;
      let stale = false;
      let ms = 0;
      while (P < send) {
        const st = vint(send);
        if (st === 0x09) {
          // value: field 1, fixed64 (double)
          if (P + 8 > send) fail('truncated double', P);
          value = B.readDoubleLE(P);
          stale = value !== value && isStale(B, P);
          P += 8;
        } else if (st === 0x10)
          ms = vint(send); // timestamp: field 2, varint
        else skipField(st & 7, send);
      }
      if (ms !== lastMs) {
        const d = new Date(ms);
        if (Number.isNaN(d.getTime())) fail(`timestamp ${ms} ms out of range`, samples[i]!);
        lastIso = d.toISOString();
        lastMs = ms;
      }
      const rec: SampleRecord = {
        name,
        labels: i === 0 ? labels : { ...labels },
        value: stale ? null : sampleValue(value),
        timestamp: lastIso,
        timestamp_ms: ms,
      };
      if (stale) rec.stale = true;
      emit(rec);
    }
    P = end;
  }
  B = EMPTY;
  return ignored;
}

const EMPTY = Buffer.alloc(0);

/**
 * Checks a WriteRequest without building records (the receive-time check: a malformed body is a
 * 400, never a dead letter later), and that its records stay within `maxOutput` estimated bytes.
 * Returns the number of samples; throws RemoteWriteError.
 */
export function checkWriteRequest(buf: Buffer, maxOutput = Infinity): number {
  let n = 0;
  let est = 0;
  const r = new Reader(buf, 0, buf.length);
  while (r.pos < r.end) {
    const tag = r.varint();
    if (tag >>> 3 === 1 && (tag & 7) === 2) {
      const end = r.delimited();
      const ts = new Reader(buf, r.pos, end);
      let labelBytes = 0;
      let seriesSamples = 0;
      while (ts.pos < end) {
        const t = ts.varint();
        const w = t & 7;
        if (t >>> 3 <= 2 && w === 2) {
          const fend = ts.delimited();
          const m = new Reader(buf, ts.pos, fend);
          while (m.pos < fend) {
            const mt = m.varint();
            // A Label holds two strings, a Sample a fixed64 and a varint: another wire type there is corrupt.
            if (t >>> 3 === 1 ? (mt & 7) !== 2 && mt >>> 3 <= 2 : (mt >>> 3 === 1 && mt !== 0x09) || (mt >>> 3 === 2 && mt !== 0x10))
              fail('field of the wrong wire type', m.pos);
            if (mt === 0x10) {
              const ms = m.varint();
              if (!(Math.abs(ms) <= MAX_MS)) fail(`timestamp ${ms} ms out of range`, m.pos);
            } else m.skip(mt & 7);
          }
          if (t >>> 3 === 2) seriesSamples++;
          else labelBytes += fend - ts.pos + 4;
          ts.pos = fend;
        } else {
          if (t >>> 3 <= 2) fail('field of the wrong wire type', ts.pos);
          ts.skip(w);
        }
      }
      n += seriesSamples;
      est += seriesSamples * (labelBytes + RECORD_BYTES);
      if (est > maxOutput) tooLarge(est, maxOutput, end);
      r.pos = end;
    } else {
      if (tag >>> 3 === 1) fail('field of the wrong wire type', r.pos);
      r.skip(tag & 7);
    }
  }
  return n;
}

/** Decodes a whole remote-write body (snappy + protobuf) into records. */
export function decodeBody(body: Uint8Array): { records: SampleRecord[]; ignored: Ignored } {
  const records: SampleRecord[] = [];
  const ignored = decodeWriteRequest(uncompress(body), (rec) => records.push(rec));
  return { records, ignored };
}
