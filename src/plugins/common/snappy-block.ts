// Snappy block decompression with the stream checked first. snappyjs trusts its input: a literal
// whose 4-byte length has the top bit set reads as a negative length, its cursor jumps back before
// the start and it then walks a billion undefined bytes (a 6-byte remote-write body held the event
// loop for minutes; found by fuzzing, test/fuzz-regressions/prometheus-rw). One linear pass over the
// tags checks every length and copy offset, and that the output is exactly the declared length.
import * as snappy from 'snappyjs';

/** The declared uncompressed length; throws when the block is not a well-formed snappy block. */
function checkBlock(b: Uint8Array, maxLength: number): number {
  let pos = 0;
  let length = 0;
  for (let shift = 0; ; shift += 7) {
    if (pos >= b.length || shift > 28) throw new Error('invalid snappy block: bad uncompressed length');
    const c = b[pos++]!;
    length += (c & 0x7f) * 2 ** shift;
    if (c < 0x80) break;
  }
  if (length > maxLength) throw new Error(`snappy block of ${length} bytes uncompressed, more than ${maxLength}`);
  let out = 0;
  while (pos < b.length) {
    const c = b[pos++]!;
    const kind = c & 3;
    if (kind === 0) {
      let n = (c >>> 2) + 1;
      if (n > 60) {
        const k = n - 60; // the length follows in 1 to 4 little-endian bytes
        if (pos + k > b.length) throw new Error('invalid snappy block: truncated literal length');
        n = 1;
        for (let i = 0; i < k; i++) n += b[pos + i]! * 256 ** i;
        pos += k;
      }
      if (pos + n > b.length) throw new Error('invalid snappy block: literal runs past the end');
      pos += n;
      out += n;
    } else {
      const size = kind === 1 ? 1 : kind === 2 ? 2 : 4;
      if (pos + size > b.length) throw new Error('invalid snappy block: truncated copy');
      let offset = 0;
      for (let i = 0; i < size; i++) offset += b[pos + i]! * 256 ** i;
      const n = kind === 1 ? ((c >>> 2) & 7) + 4 : (c >>> 2) + 1;
      if (kind === 1) offset += (c >>> 5) << 8;
      pos += size;
      if (offset === 0 || offset > out) throw new Error('invalid snappy block: copy from before the start');
      out += n;
    }
    if (out > length) throw new Error('invalid snappy block: more data than its declared length');
  }
  if (out !== length) throw new Error(`invalid snappy block: ${out} bytes, its header says ${length}`);
  return length;
}

/** The uncompressed bytes of a snappy block (raw format, no framing); throws Error on a bad block. */
export function uncompressBlock(b: Uint8Array, maxLength: number): Uint8Array {
  checkBlock(b, maxLength);
  return snappy.uncompress(b, maxLength);
}
