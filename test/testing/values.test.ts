// How `svc test` compares and shows values: what YAML cannot write (bigint, bytes), deep equality,
// record diffs by field and line diffs of serialized output.
import { describe, expect, it } from 'vitest';
import { recordsDiff } from '../../src/testing/check.js';
import { diffLines, plain, same, show } from '../../src/testing/values.js';

describe('values as a test file states them', () => {
  it('turns bigint, bytes and dates into what YAML writes, and drops undefined fields', () => {
    expect(plain({ a: 5n, b: 18446744073709551615n, c: Buffer.from('hi'), d: new Date(0), e: undefined, f: [new Uint8Array([1])] })).toEqual({
      a: 5,
      b: '18446744073709551615',
      c: 'aGk=',
      d: '1970-01-01T00:00:00.000Z',
      f: ['AQ=='],
    });
  });

  it('compares deeply, ignoring key order; NaN equals NaN; 1 is not "1"', () => {
    expect(same({ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 })).toBe(true);
    expect(same({ a: NaN }, { a: NaN })).toBe(true);
    expect(same({ a: 1 }, { a: '1' })).toBe(false);
    expect(same({ a: 1 }, { a: 1, b: null })).toBe(false);
    expect(same([1, 2], [2, 1])).toBe(false);
    expect(show({ r: Infinity, n: NaN })).toBe('{"r":".inf","n":".nan"}');
  });
});

describe('diffs', () => {
  it('names nested fields by path, missing and unexpected records by index', () => {
    expect(recordsDiff([{ a: 1, tags: { site: 'x', rack: 2 } }, { a: 2 }], [{ a: 1, tags: { site: 'y', rack: 2 }, extra: true }])).toEqual([
      '  [0]',
      '  - tags.site: "x"',
      '  + tags.site: "y"',
      '  + extra: true (not expected)',
      '- [1] missing: {"a":2}',
    ]);
  });

  it('diffs text by line, with context, and keeps whitespace differences visible', () => {
    const want = ['h', '1', '2', '3', '4', '5', '6', 'x', ''].join('\n');
    const got = ['h', '1', '2', '3', '4', '5', '6', 'y', 'z', ''].join('\n');
    expect(diffLines(want, got)).toEqual(['  ...', '  5', '  6', '- x', '+ y', '+ z', '  ']);
    expect(diffLines('a\nb\n', 'a\r\nb\n')).toEqual(['- a', '+ "a\\r"', '  b', '  ']);
  });

  it('falls back to the first differing line when the texts are too large for a table', () => {
    const want = Array.from({ length: 3000 }, (_, i) => `line ${i}`).join('\n');
    const got = want.replace('line 1500', 'line X');
    expect(diffLines(want, got)).toEqual(['  first difference at line 1501', '- line 1500', '+ line X']);
  });
});
