import { describe, expect, it } from 'vitest';
import { shapeCopier } from '../../../src/plugins/common/shape-copy.js';
import type { Rec } from '../../../src/plugins/types.js';

describe('shapeCopier', () => {
  const renames = new Map([['a', 'x']]);
  let slowCalls = 0;
  const slow = (r: Rec) => {
    slowCalls++;
    return { slow: true, ...r };
  };
  const fresh = () => {
    slowCalls = 0;
    return shapeCopier((k) => (k === 'gone' ? null : (renames.get(k) ?? k)), slow);
  };

  it('renames and drops in place, keeping the order of the other fields, without touching the input', () => {
    const copy = fresh();
    const r = { z: 1, a: 2, gone: 3, b: [4] };
    const out = copy(r);
    expect(Object.keys(out)).toEqual(['z', 'x', 'b']);
    expect(out).toEqual({ z: 1, x: 2, b: [4] });
    expect(r).toEqual({ z: 1, a: 2, gone: 3, b: [4] });
    // the same order again, and another order: each its own builder
    expect(copy({ z: 5, a: 6, gone: 0, b: 7 })).toEqual({ z: 5, x: 6, b: 7 });
    expect(Object.keys(copy({ b: 1, a: 2 }))).toEqual(['b', 'x']);
    expect(slowCalls).toBe(0);
  });

  it('tells orders apart that share their first fields or differ in length', () => {
    const copy = fresh();
    expect(copy({ a: 1, b: 2 })).toEqual({ x: 1, b: 2 });
    expect(copy({ a: 1, b: 2, c: 3 })).toEqual({ x: 1, b: 2, c: 3 });
    expect(copy({ a: 1 })).toEqual({ x: 1 });
    expect(copy({ a: 1, c: 2 })).toEqual({ x: 1, c: 2 });
  });

  it('hands back a record that has nothing to rename or drop', () => {
    const copy = fresh();
    const r = { b: 1, c: 2 };
    expect(copy(r)).toBe(r);
  });

  it('leaves output that names a field twice, or __proto__, to the slow path', () => {
    const copy = fresh();
    expect(copy({ a: 1, x: 2 })).toEqual({ slow: true, a: 1, x: 2 });
    expect(copy({ a: 1, x: 2 })).toEqual({ slow: true, a: 1, x: 2 });
    const proto = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as Rec;
    const out = copy(proto);
    expect(slowCalls).toBe(3);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });

  it('quotes field names in the compiled builder, so a name cannot inject code', () => {
    const copy = fresh();
    const evil = { ['"]; globalThis.pwned = 1; //']: 1, a: 2, 'line\nbreak': 3, '\u2028': 4 };
    const out = copy(evil);
    expect(out).toEqual({ ['"]; globalThis.pwned = 1; //']: 1, x: 2, 'line\nbreak': 3, '\u2028': 4 });
    expect((globalThis as Record<string, unknown>).pwned).toBeUndefined();
  });

  it('takes the slow path for key orders past the cache', () => {
    const copy = fresh();
    for (let i = 0; i < 8; i++) expect(copy({ [`f${i}`]: i, a: 1 })).toEqual({ [`f${i}`]: i, x: 1 });
    expect(slowCalls).toBe(0);
    expect(copy({ f9: 9, a: 1 })).toEqual({ slow: true, f9: 9, a: 1 });
    expect(slowCalls).toBe(1);
  });
});
