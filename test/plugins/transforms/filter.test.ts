import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import plugin from '../../../src/plugins/transforms/filter/index.js';
import { ExprError } from '../../../src/expr/index.js';
import { silentLogger } from '../../../src/observability/log.js';
import type { Rec, RecordContext } from '../../../src/plugins/types.js';

const rc: RecordContext = { meta: {}, note: () => {} };
const make = (expression: string) => plugin.create(Value.Default(plugin.config, { expression }) as never, { pipeline: 't', log: silentLogger });
const keeps = (expression: string, r: Rec) => {
  const out = make(expression).apply(r, rc);
  if (out !== null) expect(out).toBe(r); // kept records are passed on as they are
  return out !== null;
};

describe('transform filter', () => {
  it('keeps records for which the expression is true and drops the others (null)', () => {
    const t = make('ifOperStatus == 1');
    const up = { ifOperStatus: 1 };
    expect(t.apply(up, rc)).toBe(up);
    expect(t.apply({ ifOperStatus: 2 }, rc)).toBeNull();
  });

  it('decides by truthiness, as in Python', () => {
    for (const v of [null, false, 0, '', [], {}]) expect(keeps('v', { v })).toBe(false);
    for (const v of [true, 1, -1, 0.5, 'x', '0', 'false', [0], { a: null }]) expect(keeps('v', { v })).toBe(true);
  });

  it('reads missing fields as null: comparisons with them are false', () => {
    expect(keeps('ifInErrors > 0', {})).toBe(false);
    expect(keeps('ifInErrors <= 0', {})).toBe(false);
    expect(keeps('ifInErrors == null', {})).toBe(true);
    expect(keeps('not missing', {})).toBe(true);
    expect(keeps('missing', {})).toBe(false);
    expect(keeps('exists(x)', { x: null })).toBe(true);
    expect(keeps('exists(x)', {})).toBe(false);
  });

  it('handles lists, membership and functions', () => {
    const e = "severity in ['critical', 'major'] and startswith(node, 'core')";
    expect(keeps(e, { severity: 'major', node: 'core-1' })).toBe(true);
    expect(keeps(e, { severity: 'minor', node: 'core-1' })).toBe(false);
    expect(keeps(e, { severity: 'critical' })).toBe(false);
    expect(keeps("'Eth' in ifDescr", { ifDescr: 'Ethernet0' })).toBe(true);
  });

  it('does not see JavaScript properties of the record', () => {
    expect(keeps('toString', {})).toBe(false);
    expect(keeps("$['valueOf']", {})).toBe(false);
    expect(keeps('toString', { toString: 1 })).toBe(true);
    expect(() => make('constructor')).toThrow(/not allowed/);
  });

  it('throws when the expression fails on a record (a record error for the engine)', () => {
    const t = make('x + 1 > 2');
    expect(() => t.apply({ x: 'a' }, rc)).toThrow(ExprError);
    expect(() => make("x < '6'").apply({ x: 5 }, rc)).toThrow("'<' is not supported between 'number' and 'string'");
  });

  it('refuses an expression that does not compile, at creation and in lint', () => {
    expect(() => make('x ==')).toThrow(ExprError);
    expect(plugin.lint!({ expression: 'x ==' } as never)[0]).toMatchObject({ path: 'expression', message: expect.stringMatching(/^invalid expression: /) });
    expect(plugin.lint!({ expression: 'x == 1' } as never)).toEqual([]);
    expect(Value.Check(plugin.config, { expression: '' })).toBe(false);
  });
});
