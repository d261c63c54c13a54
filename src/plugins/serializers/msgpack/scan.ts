// Finds where MessagePack values end without decoding them (sizes only, from the format's type
// bytes: github.com/msgpack/msgpack/blob/master/spec.md). The msgpack serializer uses it to cut a
// stream between complete values and to step over corrupt bytes; msgpackr has no "skip a value" API
// and decoding twice would double the cost.

/** More bytes are needed to finish the value. */
export const INCOMPLETE = -1;
/** The bytes cannot be MessagePack (the never-used type byte 0xc1, or a declared size over the limit). */
export const INVALID = -2;

/** One value may not declare more than this many bytes or items: corrupt lengths are caught early. */
export const MAX_DECLARED = 256 << 20;

export interface ScanResult {
  /** End offset of the value, or INCOMPLETE / INVALID. */
  end: number;
  /**
   * The value holds a 64-bit integer outside the range a JavaScript number holds exactly, or an
   * extension type that msgpackr decodes to a JavaScript object (MSGPACKR_TYPES): the decoder
   * walks it.
   */
  big: boolean;
  /** How deep the value's arrays and maps nest (0 for a scalar): later steps walk records recursively. */
  depth: number;
}

/** Extension types msgpackr decodes itself: bigint (0x42), Error, references, Set, typed arrays, RegExp, bundles. */
const MSGPACKR_TYPES = new Set([0x42, 0x62, 0x65, 0x69, 0x70, 0x73, 0x74, 0x78]);

const u16 = (b: Uint8Array, i: number) => (b[i]! << 8) | b[i + 1]!;
const u32 = (b: Uint8Array, i: number) => ((b[i]! << 24) >>> 0) + ((b[i + 1]! << 16) | (b[i + 2]! << 8) | b[i + 3]!);

/** uint64 at i is above 2^53, or int64 at i is below -2^53: it will not fit a double exactly. */
function bigAt(b: Uint8Array, i: number, signed: boolean): boolean {
  const hi = u32(b, i);
  if (!signed) return hi > 0x200000 || (hi === 0x200000 && u32(b, i + 4) > 0);
  if (hi < 0x80000000) return hi > 0x200000 || (hi === 0x200000 && u32(b, i + 4) > 0);
  // Negative: -2^53 is 0xFFE00000_00000000.
  return hi < 0xffe00000;
}

/**
 * Values still to read at each enclosing level of the value being scanned: one array for every
 * scan (a scan never runs inside another), as an allocation per value cost three times the scan.
 */
const outer: number[] = [];

/** Scans the value starting at `start` (iteratively: nesting depth costs no stack). */
export function scanValue(b: Uint8Array, start: number, len = b.length): ScanResult {
  let i = start;
  let need = 1; // values still to read at the current level
  let top = 0; // levels open around it (outer[0..top))
  let depth = 0;
  let big = false;
  let items = 0; // values in the container just read (a map's keys and values counted)
  for (;;) {
    if (items > 0) {
      outer[top++] = need;
      need = items;
      items = 0;
      if (top > depth) depth = top;
    }
    while (need === 0) {
      if (top === 0) return { end: i > len ? INCOMPLETE : i, big, depth };
      need = outer[--top]!;
    }
    if (i >= len) return { end: INCOMPLETE, big, depth };
    const t = b[i]!;
    need--;
    if (t <= 0x7f || t >= 0xe0) {
      i += 1; // positive / negative fixint
      continue;
    }
    if (t <= 0x8f) {
      items = 2 * (t & 0x0f); // fixmap
      i += 1;
      continue;
    }
    if (t <= 0x9f) {
      items = t & 0x0f; // fixarray
      i += 1;
      continue;
    }
    if (t <= 0xbf) {
      i += 1 + (t & 0x1f); // fixstr
      continue;
    }
    // The fixed part (type byte and any length field) must be there before it is read.
    const fixed = FIXED[t - 0xc0]!;
    if (fixed === 0) return { end: INVALID, big, depth };
    if (i + fixed > len) return { end: INCOMPLETE, big, depth };
    let size = 0; // payload bytes after the fixed part
    switch (t) {
      case 0xc4:
      case 0xd9:
        size = b[i + 1]!;
        break; // bin8, str8
      case 0xc5:
      case 0xda:
        size = u16(b, i + 1);
        break;
      case 0xc6:
      case 0xdb:
        size = u32(b, i + 1);
        break;
      case 0xc7:
        size = b[i + 1]!;
        break; // ext8: the type byte is in `fixed`
      case 0xc8:
        size = u16(b, i + 1);
        break;
      case 0xc9:
        size = u32(b, i + 1);
        break;
      case 0xcf:
        big ||= bigAt(b, i + 1, false);
        break;
      case 0xd3:
        big ||= bigAt(b, i + 1, true);
        break;
      case 0xdc:
        items = u16(b, i + 1);
        break;
      case 0xdd: {
        const n = u32(b, i + 1);
        if (n > MAX_DECLARED) return { end: INVALID, big, depth };
        items = n;
        break;
      }
      case 0xde:
        items = 2 * u16(b, i + 1);
        break;
      case 0xdf: {
        const n = u32(b, i + 1);
        if (n > MAX_DECLARED) return { end: INVALID, big, depth };
        items = 2 * n;
        break;
      }
    }
    if (size > MAX_DECLARED) return { end: INVALID, big, depth };
    // The extension type: the last byte of the fixed part of ext8/16/32, the second of fixext1..16.
    if (t >= 0xc7 && t <= 0xc9) big ||= MSGPACKR_TYPES.has(b[i + fixed - 1]!);
    else if (t >= 0xd4 && t <= 0xd8) big ||= MSGPACKR_TYPES.has(b[i + 1]!);
    i += fixed + size;
  }
}

// Bytes of each type 0xc0..0xdf before its payload (type byte, length, ext type); 0 = never used.
// prettier-ignore
const FIXED = [
  1,
  0,
  1,
  1,
  2,
  3,
  5,
  3,
  4,
  6, // c0 nil, c1 -, false, true, bin8/16/32, ext8/16/32
  5,
  9,
  2,
  3,
  5,
  9,
  2,
  3,
  5,
  9, // float32/64, uint8..64, int8..64
  3,
  4,
  6,
  10,
  18,
  2,
  3,
  5,
  3,
  5,
  3,
  5, // fixext1..16, str8/16/32, array16/32, map16/32
];

const isStrType = (t: number) => (t >= 0xa0 && t <= 0xbf) || t === 0xd9 || t === 0xda || t === 0xdb;

/**
 * After corrupt bytes: the next offset from `from` where a record can start again. A candidate is
 * a non-empty map whose first key is a string and which scans to a complete, valid value (random
 * bytes rarely pass all three; a lone byte that is a fixint or fixstr would not do). A candidate
 * that runs past `len` may be confirmed by more bytes: then INCOMPLETE, unless `final` (the bytes
 * are all there is: it is passed over). `len` when nothing can start a record.
 */
export function resync(b: Uint8Array, from: number, final: boolean, len = b.length): number {
  for (let q = from; q < len; q++) {
    const t = b[q]!;
    let keyAt: number;
    if (t >= 0x81 && t <= 0x8f) keyAt = q + 1;
    else if (t === 0xde) keyAt = q + 3;
    else if (t === 0xdf) keyAt = q + 5;
    else continue;
    if (keyAt >= len) {
      if (final) continue;
      return INCOMPLETE;
    }
    if (t === 0xde && u16(b, q + 1) === 0) continue;
    if (t === 0xdf && u32(b, q + 1) === 0) continue;
    if (!isStrType(b[keyAt]!)) continue;
    const { end } = scanValue(b, q, len);
    if (end === INCOMPLETE && !final) return INCOMPLETE;
    if (end >= 0) return q;
  }
  return len;
}
