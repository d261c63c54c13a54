import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import plugin from '../../../src/plugins/transforms/add_field/index.js';
import { ExprError } from '../../../src/expr/index.js';
import { silentLogger } from '../../../src/observability/log.js';
import type { Rec, RecordContext } from '../../../src/plugins/types.js';

const rc: RecordContext = { meta: {}, note: () => {} };
const make = (cfg: object) => plugin.create(Value.Default(plugin.config, cfg) as never, { pipeline: 't', log: silentLogger });
const apply = (cfg: object, r: Rec) => make(cfg).apply(r, rc);

describe('transform add_field', () => {
  it('sets fields to the value of expressions', () => {
    const out = apply(
      { fields: { site: "'paris-1'", in_mbps: 'ifInOctets * 8 / 1000000', up: 'ifOperStatus == 1', label: "'down' if ifOperStatus == 2 else 'up'" } },
      { ifInOctets: 2500000, ifOperStatus: 1 },
    );
    expect(out).toEqual({ ifInOctets: 2500000, ifOperStatus: 1, site: 'paris-1', in_mbps: 20, up: true, label: 'up' });
  });

  it('uses functions and nested fields', () => {
    expect(
      apply(
        { fields: { n: "lower(name) + ':' + str(ifIndex)", lat: 'site.geo.lat', last: "split(oid, '.')[-1]" } },
        { name: 'CORE', ifIndex: 3, site: { geo: { lat: 48.8 } }, oid: '1.3.6.7' },
      ),
    ).toMatchObject({
      n: 'core:3',
      lat: 48.8,
      last: '7',
    });
  });

  it('sets numbers, booleans and null as constants', () => {
    const out = apply({ fields: { n: 42, f: 2.5, neg: -1, t: true, no: false, nothing: null } }, { a: 1 }) as Rec;
    expect(out).toEqual({ a: 1, n: 42, f: 2.5, neg: -1, t: true, no: false, nothing: null });
    expect(Object.keys(out)).toEqual(['a', 'n', 'f', 'neg', 't', 'no', 'nothing']);
  });

  it('treats a string as an expression, not as text: a bare word reads a field', () => {
    expect(apply({ fields: { x: 'paris' } }, { paris: 'the field' })).toEqual({ paris: 'the field', x: 'the field' });
    expect(apply({ fields: { x: 'paris' } }, {})).toEqual({ x: null });
    expect(apply({ fields: { x: '"quoted"' } }, {})).toEqual({ x: 'quoted' });
  });

  it('sets fields in order, so later ones use earlier ones', () => {
    expect(apply({ fields: { a: 'x * 2', b: 'a + 1', c: 'b * a' } }, { x: 5 })).toEqual({ x: 5, a: 10, b: 11, c: 110 });
  });

  it('overwrites an existing field; an expression reads the value before the change', () => {
    expect(apply({ fields: { x: 'x + 1' } }, { x: 1 })).toEqual({ x: 2 });
    expect(apply({ fields: { x: 'x + 1', y: 'x' } }, { x: 1 })).toEqual({ x: 2, y: 2 });
    expect(apply({ fields: { x: 7 } }, { x: 'old' })).toEqual({ x: 7 });
  });

  it('missing fields read as null; coalesce() gives a fallback', () => {
    expect(apply({ fields: { v: 'coalesce(missing, 0) + 1', e: 'exists(missing)', isnull: 'missing == null' } }, {})).toEqual({ v: 1, e: false, isnull: true });
  });

  it('throws when an expression fails on a record (the engine turns it into a record error)', () => {
    const t = make({ fields: { y: 'x + 1' } });
    expect(() => t.apply({ x: 'abc' }, rc)).toThrow(ExprError);
    expect(() => t.apply({ x: 'abc' }, rc)).toThrow("unsupported operand types for +: 'string' and 'number'");
    expect(() => t.apply({}, rc)).toThrow("unsupported operand types for +: 'null' and 'number'");
    expect(() => make({ fields: { y: 'x / 0' } }).apply({ x: 1 }, rc)).toThrow(ExprError);
    expect(() => make({ fields: { y: 'int(x)' } }).apply({ x: 'abc' }, rc)).toThrow(/int\(\)/);
    // The same transform still works for the next good record.
    expect(t.apply({ x: 1 }, rc)).toEqual({ x: 1, y: 2 });
  });

  it('refuses an expression that does not compile, at creation and in lint', () => {
    expect(() => make({ fields: { y: 'x +' } })).toThrow(ExprError);
    expect(() => make({ fields: { y: 'exec(x)' } })).toThrow(/unknown function 'exec'/);
    const issues = plugin.lint!(Value.Default(plugin.config, { fields: { ok: 'x + 1', bad: 'x +', n: 3 } }) as never);
    expect(issues).toHaveLength(1);
    expect(issues[0]!.path).toBe('fields.bad');
    expect(issues[0]!.message).toMatch(/^invalid expression: /);
  });

  it('the schema takes strings, numbers, booleans and null only', () => {
    expect(Value.Check(plugin.config, { fields: { a: 'x', b: 1, c: true, d: null } })).toBe(true);
    expect(Value.Check(plugin.config, { fields: { a: [1] } })).toBe(false);
    expect(Value.Check(plugin.config, { fields: { a: { b: 1 } } })).toBe(false);
  });
});
