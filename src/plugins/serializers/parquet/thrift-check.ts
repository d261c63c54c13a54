// Walks one thrift struct (compact protocol: Parquet's footer and page headers) before hyparquet
// reads it. hyparquet allocates a list at the size its header declares (`new Array(size)`) before
// reading any element, so a 793-byte file whose footer declared a list of millions took 80 MB
// (found by fuzzing). Every element takes at least one byte, so a list longer than the bytes left is
// refused here, as are nesting past MAX_DEPTH and a struct cut short.

const STOP = 0;
const TRUE = 1;
const FALSE = 2;
const BYTE = 3;
const I16 = 4;
const I32 = 5;
const I64 = 6;
const DOUBLE = 7;
const BINARY = 8;
const LIST = 9;
const STRUCT = 12;
/** Parquet's deepest metadata (a schema element's logical type) nests a few levels; this is ample. */
const MAX_DEPTH = 32;

export class ThriftError extends Error {
  override name = 'ThriftError';
}

/** Checks the struct at `offset` of `view`; returns the offset after it. */
export function checkThrift(view: DataView, offset: number): number {
  let o = offset;
  const end = view.byteLength;
  const byte = () => {
    if (o >= end) throw new ThriftError(`thrift data cut short at byte ${o}`);
    return view.getUint8(o++);
  };
  const varint = () => {
    let v = 0;
    for (let shift = 0; ; shift += 7) {
      const b = byte();
      if (shift < 35) v += (b & 0x7f) * 2 ** shift;
      if (!(b & 0x80)) return v;
      if (shift > 63) throw new ThriftError(`thrift varint longer than 10 bytes at byte ${o}`);
    }
  };
  const element = (type: number, depth: number): void => {
    switch (type) {
      case TRUE:
      case FALSE:
        return;
      case BYTE:
        byte();
        return;
      case I16:
      case I32:
      case I64:
        varint();
        return;
      case DOUBLE:
        if (o + 8 > end) throw new ThriftError(`thrift double cut short at byte ${o}`);
        o += 8;
        return;
      case BINARY: {
        const n = varint();
        if (n > end - o) throw new ThriftError(`thrift binary of ${n} bytes, ${end - o} left`);
        o += n;
        return;
      }
      case LIST: {
        const h = byte();
        const n = h >> 4 === 15 ? varint() : h >> 4;
        const t = h & 0x0f;
        if (n > end - o) throw new ThriftError(`thrift list of ${n} elements, ${end - o} bytes left`);
        for (let i = 0; i < n; i++) element(t === TRUE || t === FALSE ? BYTE : t, depth);
        return;
      }
      case STRUCT:
        struct(depth + 1);
        return;
      default:
        throw new ThriftError(`thrift type ${type} at byte ${o - 1} (not used by Parquet)`);
    }
  };
  const struct = (depth: number): void => {
    if (depth > MAX_DEPTH) throw new ThriftError(`thrift structs nested deeper than ${MAX_DEPTH}`);
    for (;;) {
      const h = byte();
      const type = h & 0x0f;
      if (type === STOP) return;
      if (!(h >> 4)) varint(); // the field id in full
      element(type, depth);
    }
  };
  struct(0);
  return o;
}
