// compile(): compiled once, evaluated on many scopes; the CompiledExpr surface; constant folding
// that never changes behaviour; speed of the hot path.
import { describe, expect, it } from 'vitest';
import { compile, LIMITS, type Scope } from '../../src/expr/index.js';
import { errorOf } from './helpers.js';

describe('compile once, evaluate many times', () => {
  it('gives each scope its own result from one compiled function', () => {
    const f = compile('ifOperStatus == 1 and ifInErrors > 0');
    const records = Array.from({ length: 10_000 }, (_, i) => ({ ifOperStatus: i % 2 ? 1 : 2, ifInErrors: i % 3 }));
    const kept = records.filter((r) => f(r) === true);
    expect(kept.length).toBe(records.filter((r) => r.ifOperStatus === 1 && r.ifInErrors > 0).length);
    expect(kept.length).toBe(3333);
  });

  it('keeps no state between evaluations', () => {
    const f = compile("coalesce(ifAlias, 'none') + ':' + str(len(tags))");
    expect(f({ ifAlias: 'uplink', tags: [1] })).toBe('uplink:1');
    expect(f({ tags: [] })).toBe('none:0');
    expect(f({ ifAlias: 'x', tags: [1, 2, 3] })).toBe('x:3');
  });

  it('returns a fresh list each time, so a caller may mutate the result', () => {
    const f = compile("[1, 2, ['a']]");
    const first = f({}) as unknown[];
    first.push(99);
    (first[2] as unknown[]).push('b');
    expect(f({})).toEqual([1, 2, ['a']]);
    const g = compile('x + [3]');
    const r = g({ x: [1] }) as unknown[];
    r.push(4);
    expect(g({ x: [1] })).toEqual([1, 3]);
  });

  it('does not fail at compile time for errors in constant parts; they surface when evaluated', () => {
    const f = compile('1 / 0');
    expect(errorOf(() => f({})).message).toBe('division by zero at column 3');
    const g = compile("x if x else 'a' * 10**9");
    expect(g({ x: 1 })).toBe(1);
    expect(errorOf(() => g({ x: 0 })).message).toBe(
      "expression budget exceeded: '*' would build a string of 1000000000 characters (limit 1048576; SVC_EXPR_MAX_STRING_LENGTH) at column 17",
    );
  });

  it('errors at run time are ExprErrors with a position', () => {
    const f = compile('a + b');
    const e = errorOf(() => f({ a: 1, b: 'x' }));
    expect(e.position).toBe(2);
    expect(e.name).toBe('ExprError');
    expect(e).toBeInstanceOf(Error);
  });
});

describe('CompiledExpr', () => {
  it('carries its source', () => {
    const src = "severity in ['critical', 'major']";
    expect(compile(src).source).toBe(src);
  });

  it('lists the top-level fields it reads, once each, in order', () => {
    expect(compile('ifOperStatus == 1 and ifInErrors > 0').fields).toEqual(['ifOperStatus', 'ifInErrors']);
    expect(compile("a + b + a.c + $['d-e'] + $.f + len(g) + coalesce(h, 1)").fields).toEqual(['a', 'b', 'd-e', 'f', 'g', 'h']);
    expect(compile("exists(x.y) or exists('w-z') or exists($.v)").fields).toEqual(['x', 'w-z', 'v']);
    expect(compile('records_in > 0 and error_rate > 0.05 or status == "failed"').fields).toEqual(['records_in', 'error_rate', 'status']);
    expect(compile('1 + 2').fields).toEqual([]);
    expect(compile('len(now())').fields).toEqual([]);
  });

  it("lists '$' when the field is chosen at run time", () => {
    expect(compile('$[k] > 1').fields).toEqual(['k', '$']);
  });

  it('accepts a longer source when asked', () => {
    const src = `port in [${Array.from({ length: 1500 }, (_, i) => i * 2).join(', ')}]`;
    expect(src.length).toBeGreaterThan(LIMITS.maxLength);
    expect(errorOf(() => compile(src)).message).toBe(`expression is ${src.length} characters long; the limit is 4096`);
    const f = compile(src, { maxLength: 10_000 });
    expect(f({ port: 2998 })).toBe(true);
    expect(f({ port: 2999 })).toBe(false);
    expect(errorOf(() => compile('x', { maxLength: Number.NaN })).message).toBe('maxLength must be a positive number, got NaN');
  });
});

describe('speed of the hot path', () => {
  it('evaluates simple filters in well under a microsecond', () => {
    const cases: [string, Scope[]][] = [
      ['x > 5', [{ x: 3 }, { x: 9 }]],
      ["severity in ['critical', 'major']", [{ severity: 'major' }, { severity: 'info' }]],
      [
        'ifOperStatus == 1 and ifInErrors > 0',
        [
          { ifOperStatus: 1, ifInErrors: 2 },
          { ifOperStatus: 2, ifInErrors: 0 },
        ],
      ],
      ['a.b.c >= 2', [{ a: { b: { c: 1 } } }, { a: { b: { c: 3 } } }]],
    ];
    for (const [src, scopes] of cases) {
      const f = compile(src);
      const n = 200_000;
      let hits = 0;
      for (let i = 0; i < n; i++) if (f(scopes[i & 1] as Scope) === true) hits++;
      const start = performance.now();
      for (let i = 0; i < n; i++) if (f(scopes[i & 1] as Scope) === true) hits++;
      const nsPerEval = ((performance.now() - start) * 1e6) / n;
      expect(hits).toBe(n); // one of the two scopes matches, twice over
      // Typically 5-30 ns; the bound only catches a gross regression on a slow, shared machine.
      expect(nsPerEval).toBeLessThan(1000);
    }
  });
});
