// Page decompressors for reading. Native zlib is several times faster than the pure-JS gunzip and
// brotli; snappy (a WebAssembly build), zstd and lz4 come from hyparquet-compressors.
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { Compressors } from 'hyparquet';
import { compressors as libCompressors } from 'hyparquet-compressors';

export const compressors: Compressors = {
  ...libCompressors,
  GZIP: (input) => gunzipSync(input),
  BROTLI: (input) => brotliDecompressSync(input),
};
