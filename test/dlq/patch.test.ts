// The replay's RFC 6902 JSON Patch (src/dlq/patch.ts) operation by operation, with RFC 6901
// escapes and array indexes; a failing operation leaves the record as it was.
import { describe, expect, it } from 'vitest';
import { applyPatch, type PatchOp } from '../../src/dlq/patch.js';

const rec = () => ({ a: 1, 'b/c': { 'd~e': 2 }, arr: [1, 2, 3], n: { x: 'y' } });

describe('applyPatch', () => {
  it('applies add, remove, replace, move, copy and test, on a copy', () => {
    const r = rec();
    const out = applyPatch(r, [
      { op: 'test', path: '/b~1c/d~0e', value: 2 },
      { op: 'add', path: '/arr/1', value: 9 },
      { op: 'add', path: '/arr/-', value: 4 },
      { op: 'remove', path: '/arr/0' },
      { op: 'replace', path: '/a', value: { z: true } },
      { op: 'move', from: '/n/x', path: '/moved' },
      { op: 'copy', from: '/b~1c', path: '/n/copy' },
    ]);
    expect(out).toEqual({ a: { z: true }, 'b/c': { 'd~e': 2 }, arr: [9, 2, 3, 4], n: { copy: { 'd~e': 2 } }, moved: 'y' });
    expect(r).toEqual(rec());
  });

  it.each<[PatchOp, RegExp]>([
    [{ op: 'test', path: '/a', value: 2 }, /^patch\[0\] \(test \/a\): the value differs$/],
    [{ op: 'remove', path: '/missing' }, /\/missing does not exist/],
    [{ op: 'replace', path: '/arr/3', value: 0 }, /index 3 is out of range/],
    [{ op: 'add', path: '/arr/x', value: 0 }, /'x' is not an array index/],
    [{ op: 'add', path: '/no/deeper', value: 0 }, /'no' does not exist/],
    [{ op: 'add', path: 'a', value: 0 }, /is not a JSON pointer/],
    [{ op: 'move', from: '/n', path: '/n/x/y' }, /cannot be moved into itself/],
    [{ op: 'copy', path: '/c' }, /copy needs from/],
  ])('refuses %j', (op, why) => {
    expect(() => applyPatch(rec(), [op])).toThrow(why);
  });

  it('is all or nothing: an operation failing after others changes nothing', () => {
    const r = rec();
    expect(() =>
      applyPatch(r, [
        { op: 'remove', path: '/a' },
        { op: 'test', path: '/a', value: 1 },
      ]),
    ).toThrow(/patch\[1\]/);
    expect(r).toEqual(rec());
  });
});
