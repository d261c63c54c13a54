// The snappy block check added after fuzzing (src/plugins/common/snappy-block.ts) accepts every
// block snappyjs writes, with the same bytes out, and refuses the one that hung snappyjs.
import fc from 'fast-check';
import * as snappy from 'snappyjs';
import { describe, expect, it } from 'vitest';
import { uncompressBlock } from '../../src/plugins/common/snappy-block.js';

describe('uncompressBlock', () => {
  it('gives back what snappyjs compressed, for data with and without repeats', () => {
    const data = fc.oneof(
      fc.uint8Array({ maxLength: 5000 }),
      fc.array(fc.uint8Array({ minLength: 1, maxLength: 40 }), { maxLength: 300 }).map((parts) => Uint8Array.from(parts.flatMap((p) => [...p, ...p, ...p]))),
    );
    fc.assert(
      fc.property(data, (d) => {
        expect(Buffer.from(uncompressBlock(snappy.compress(d), 1 << 20))).toEqual(Buffer.from(d));
      }),
      { seed: 19, numRuns: 300 },
    );
  });

  it('refuses a literal whose 4-byte length reads negative, a copy from before the start, a wrong length', () => {
    expect(() => uncompressBlock(Buffer.from('30fcaaaf97be', 'hex'), 1 << 20)).toThrow(/literal runs past the end/);
    expect(() => uncompressBlock(Buffer.from('0a0501', 'hex'), 1 << 20)).toThrow(/copy from before the start/);
    expect(() => uncompressBlock(Buffer.from('0508616263', 'hex'), 1 << 20)).toThrow(/3 bytes, its header says 5/);
    expect(() => uncompressBlock(Buffer.from('8080808001', 'hex'), 1 << 20)).toThrow(/more than/);
  });
});
