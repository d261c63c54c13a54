import { Type } from '@sinclair/typebox';
import { Packr, Unpackr } from 'msgpackr';
import { defineSerializer, type DecodeOut, type Rec, type SplitOptions, type SplitPiece } from '../../types.js';
import { readSetting } from '../../../settings.js';
import { INCOMPLETE, INVALID, MAX_DECLARED, resync, scanValue } from './scan.js';
import { PendingBytes } from '../../../util/pending-bytes.js';

const config = Type.Object({}, { additionalProperties: false });

// Standard MessagePack only: msgpackr's own record extension is off, maps decode to objects.
// 64-bit integers beyond 2^53 arrive as bigint ('auto') and are turned into decimal strings below.
// structuredClone: false turns off msgpackr's reference extensions, which build cyclic values.
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'auto' as 'bigint', structuredClone: false }); // 'auto' is in msgpackr's code and README, not in its types
const packr = new Packr({ useRecords: false, variableMapSize: true, encodeUndefinedAsNil: true, largeBigIntToString: true });

const isRecord = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array) && !(v instanceof Date);

/**
 * bigint -> decimal string, in place (only walked when the scan saw such an integer, or one of
 * msgpackr's own extension types). Those extensions decode to Sets, Errors, RegExps or typed arrays,
 * which are no record data (found by fuzzing, test/fuzz-regressions/msgpack): they throw here.
 */
function bigToString(v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = bigToString(v[i]);
  } else if (isRecord(v)) {
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null)
      throw new Error(`a ${(v as object).constructor?.name ?? 'non-plain'} object (a msgpackr extension type, not standard MessagePack)`);
    for (const k in v) v[k] = bigToString(v[k]);
  } else if (ArrayBuffer.isView(v) && !(v instanceof Uint8Array))
    throw new Error(`a ${v.constructor.name} (a msgpackr extension type, not standard MessagePack)`);
  return v;
}

type Scanned = { start: number; end: number; big: boolean };

const emit = (v: unknown, s: Scanned, b: Buffer, out: DecodeOut, where: (at: number) => string) => {
  if (s.big) {
    try {
      v = bigToString(v);
    } catch (e) {
      out.error(`MessagePack ${where(s.start)}: ${(e as Error).message}`, b.subarray(s.start, s.end));
      return;
    }
  }
  out.record(isRecord(v) ? v : { _value: v });
};

/** Decodes [from, to) of complete, scanned values: all at once, else one by one when msgpackr refuses one. */
function decodeRun(b: Buffer, values: Scanned[], out: DecodeOut, where: (at: number) => string) {
  if (values.length === 0) return;
  const from = values[0]!.start;
  const to = values[values.length - 1]!.end;
  let decoded: unknown[] | undefined;
  try {
    decoded = unpackr.unpackMultiple(b.subarray(from, to)) as unknown[];
  } catch {
    decoded = undefined; // an extension type msgpackr does not know, a map with a map as key...
  }
  if (decoded && decoded.length === values.length) {
    for (let i = 0; i < values.length; i++) emit(decoded[i], values[i]!, b, out, where);
    return;
  }
  for (const v of values) {
    const raw = b.subarray(v.start, v.end);
    let value: unknown;
    try {
      value = unpackr.unpack(raw);
    } catch (e) {
      out.error(`MessagePack ${where(v.start)}: ${(e as Error).message}`, raw);
      continue;
    }
    emit(value, v, b, out, where);
  }
}

/**
 * Cuts the stream after complete values, about `targetBytes` (at most `maxRecords` values) a piece.
 * Corrupt bytes stay in the piece they were found in, up to where a record can start again (the same
 * rule the decoder applies), so the decoder reports them with their bytes.
 */
async function* splitValues(stream: AsyncIterable<Buffer>, opts: SplitOptions): AsyncGenerator<SplitPiece> {
  // A corrupt stretch with no record start in sight is cut here rather than held without bound.
  const junkLimit = Math.max(opts.targetBytes * 4, 16 << 20);
  const held = new PendingBytes();
  let pending: Buffer = held.bytes; // held.bytes, kept up to date
  let pos = 0; // scanned up to here: a value boundary (or the end of a corrupt stretch)
  let values = 0;
  const cut = (): SplitPiece => {
    const piece = { data: pending.subarray(0, pos) };
    held.consume(pos);
    pending = held.bytes;
    pos = 0;
    values = 0;
    return piece;
  };
  const full = () => pos >= opts.targetBytes || (opts.maxRecords !== undefined && values >= opts.maxRecords);
  /** Scans what arrived, cutting pieces; a value still incomplete is scanned again once worth it (PendingBytes). */
  function* look(): Generator<SplitPiece> {
    while (pos < pending.length) {
      const { end } = scanValue(pending, pos);
      if (end === INCOMPLETE) {
        // A value may declare up to MAX_DECLARED bytes or items: one still incomplete past that
        // many bytes is a corrupt count (items nested in items). Its bytes go out as they are (the
        // decoder reports a truncated value) instead of being held to the end of the stream.
        if (pending.length - pos > MAX_DECLARED + junkLimit) {
          pos = pending.length;
          yield cut();
          return;
        }
        held.incomplete(pos, pos + MAX_DECLARED + junkLimit + 1);
        return;
      }
      if (end === INVALID) {
        const q = resync(pending, pos + 1, false);
        if (q === INCOMPLETE || q === pending.length) {
          // No record start confirmed yet: wait for more bytes, within limits.
          if (pending.length - pos < junkLimit) {
            held.incomplete(pos, pos + junkLimit);
            return;
          }
          pos = pending.length;
          yield cut(); // the corrupt stretch goes out on its own; decoding resumes after it
          return;
        }
        pos = q;
        continue;
      }
      pos = end;
      values++;
      if (full()) yield cut();
    }
  }
  let looked = true;
  for await (const b of stream) {
    held.push(b);
    pending = held.bytes;
    looked = held.ready;
    if (looked) yield* look();
  }
  if (!looked) yield* look();
  // The rest: whole values, then anything truncated or corrupt (the decoder reports it).
  if (pending.length) yield { data: pending };
}

export default defineSerializer({
  key: 'msgpack',
  summary: 'MessagePack: a stream of concatenated values, one record per map (other values wrapped as `_value`).',
  direction: 'both',
  config,
  examples: [
    {
      title: 'Concatenated maps (hex)',
      yaml: 'type: msgpack',
      worked: {
        // {"host":"rtr1","ifIndex":1} {"host":"rtr2","up":true} 7
        input: '82a4686f7374a472747231a76966496e64657801' + '82a4686f7374a472747232a27570c3' + '07',
        encoding: 'hex',
        records: [{ host: 'rtr1', ifIndex: 1 }, { host: 'rtr2', up: true }, { _value: 7 }],
      },
    },
  ],
  decoder: () => {
    const maxDepth = readSetting('DECODE_MAX_DEPTH');
    return {
      framing: { kind: 'split', split: splitValues },
      decode({ data, firstLine }, out) {
        const where = (at: number) => `piece ${firstLine}, byte ${at}`;
        let run: Scanned[] = [];
        let p = 0;
        while (p < data.length) {
          const { end, big, depth } = scanValue(data, p);
          if (end >= 0 && depth > maxDepth) {
            // msgpackr decodes recursively, and so do later steps: refused before it is decoded.
            decodeRun(data, run, out, where);
            run = [];
            out.error(
              `MessagePack ${where(p)}: arrays and maps nested ${depth} deep, deeper than ${maxDepth} (SVC_DECODE_MAX_DEPTH): flatten the data at its source, or raise the setting`,
              data.subarray(p, end),
            );
            p = end;
            continue;
          }
          if (end >= 0) {
            run.push({ start: p, end, big });
            p = end;
            continue;
          }
          decodeRun(data, run, out, where);
          run = [];
          if (end === INCOMPLETE) {
            out.error(`MessagePack ${where(p)}: truncated value (${data.length - p} bytes at the end of the input)`, data.subarray(p));
            return;
          }
          const q = resync(data, p + 1, true);
          out.error(
            `MessagePack ${where(p)}: invalid value (a 0xc1 byte, or a size over ${MAX_DECLARED} bytes, in it); ${q - p} bytes up to the next record skipped`,
            data.subarray(p, q),
          );
          p = q;
        }
        decodeRun(data, run, out, where);
      },
    };
  },
  encoder: () => ({
    extension: 'msgpack',
    head: () => '',
    separator: '',
    tail: '',
    body: (records) => Buffer.concat(records.map((r) => packr.pack(r))),
    one: (r) => packr.pack(r),
  }),
});
