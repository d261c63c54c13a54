import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/core/errors.js';
import type { Rec } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/jmespath/index.js';
import { pyJson } from '../serializers/helpers.js';
import { loadTransforms, runTransform, transformOf } from './_harness.js';

const { cfg, apply, make, rc } = transformOf(plugin);

const gnmi = {
  timestamp: 1767225600000000000,
  prefix: { origin: 'openconfig', target: 'r1' },
  update: [
    { path: 'interfaces/interface[name=eth0]/state/counters/in-octets', val: 1000 },
    { path: 'interfaces/interface[name=eth1]/state/counters/in-octets', val: 2500 },
  ],
  alarms: [
    { id: 'a1', severity: 2, name: 'LOS' },
    { id: 'a2', severity: 5, name: 'LOF' },
    { id: 'a3', severity: 3, name: 'AIS' },
  ],
  tags: ['core', 'paris'],
};

describe('transform jmespath', () => {
  it('standard expressions give what the Python reference implementation (jmespath) gives', () => {
    const exprs = [
      '{path: update[0].path, value: update[0].val, ts: timestamp}',
      'update[*].val',
      'update[?val > `1500`].path',
      'max_by(alarms, &severity).name',
      'sort_by(alarms, &severity)[*].id',
      'length(alarms)',
      'alarms[?severity >= `3`] | [0]',
      "join(', ', tags)",
      'prefix.*',
      'sum(update[*].val)',
      'contains(tags, `"paris"`)',
      'missing.field',
      'alarms[*].{n: name, s: severity}',
      'keys(prefix)',
      "starts_with(prefix.target, 'r')",
      'not_null(missing, prefix.origin)',
      'to_string(timestamp)',
    ];
    const expected = pyJson<unknown[]>(
      `
import json, sys, jmespath
d = json.loads(sys.stdin.read())
print(json.dumps([jmespath.search(e, d['record']) for e in d['exprs']]))
`,
      JSON.stringify({ record: gnmi, exprs }),
    );
    const got = exprs.map((expression) => (apply({ expression, target: 'out' }, structuredClone(gnmi)) as Rec).out);
    expect(got).toEqual(expected);
  });

  it('an object result replaces the record', () => {
    expect(apply({ expression: '{path: update[0].path, value: update[0].val, ts: timestamp}' }, structuredClone(gnmi))).toEqual({
      path: 'interfaces/interface[name=eth0]/state/counters/in-octets',
      value: 1000,
      ts: 1767225600000000000,
    });
    expect(apply({ expression: 'prefix' }, structuredClone(gnmi))).toEqual({ origin: 'openconfig', target: 'r1' });
  });

  it('an array of objects becomes several records; an empty array drops the record', () => {
    expect(apply({ expression: 'alarms[*].{id: id, sev: severity}' }, structuredClone(gnmi))).toEqual([
      { id: 'a1', sev: 2 },
      { id: 'a2', sev: 5 },
      { id: 'a3', sev: 3 },
    ]);
    expect(apply({ expression: 'alarms[?severity > `9`]' }, structuredClone(gnmi))).toEqual([]);
  });

  it('a null result (e.g. a missing path) drops the record', () => {
    expect(apply({ expression: 'missing' }, { a: 1 })).toBeNull();
    expect(apply({ expression: 'a.b.c' }, { a: 1 })).toBeNull();
  });

  it('a scalar result, or an array with something other than objects, is a record error (thrown)', () => {
    expect(() => apply({ expression: 'length(alarms)' }, structuredClone(gnmi))).toThrow(
      'result 3 is not an object (set target to keep other results in a field)',
    );
    expect(() => apply({ expression: 'tags[0]' }, structuredClone(gnmi))).toThrow('result "core" is not an object');
    expect(() => apply({ expression: 'update[*].val' }, structuredClone(gnmi))).toThrow(
      'result element 0 is 1000, not an object (set target to keep other results in a field)',
    );
    expect(() => apply({ expression: '[prefix, tags]' }, structuredClone(gnmi))).toThrow('result element 1 is ["core","paris"], not an object');
  });

  it('target: the result (any type, null too) goes into that field and the record is kept', () => {
    expect(apply({ expression: 'max_by(alarms, &severity).severity', target: 'worst' }, { alarms: gnmi.alarms })).toEqual({ alarms: gnmi.alarms, worst: 5 });
    expect(apply({ expression: 'missing', target: 'x' }, { a: 1 })).toEqual({ a: 1, x: null });
    expect(apply({ expression: 'a', target: 'a' }, { a: [1] })).toEqual({ a: [1] });
    expect(apply({ expression: '{n: a}', target: 'o' }, { a: 1, o: 'old' })).toEqual({ a: 1, o: { n: 1 } });
    // The target is a top-level name (no path), and __proto__ stays data.
    const r = apply({ expression: 'a', target: '__proto__' }, { a: 'x' }) as Rec;
    expect(Object.getPrototypeOf(r)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(r, '__proto__')?.value).toBe('x');
    expect(apply({ expression: 'a', target: 'x.y' }, { a: 1 })).toEqual({ a: 1, 'x.y': 1 });
  });

  it('JMESPath Community functions and syntax: let, arithmetic, items, from_items, group_by, zip, upper', () => {
    const r = {
      a: { b: [1, 2, 3] },
      name: 'x',
      items: [
        { k: 'a', v: 1 },
        { k: 'b', v: 2 },
        { k: 'a', v: 3 },
      ],
    };
    const t = (expression: string) => (apply({ expression, target: 'out' }, structuredClone(r)) as Rec).out;
    expect(t('let $x = a.b in $x[0]')).toBe(1);
    expect(t('a.b[0] + a.b[2] * `2`')).toBe(7);
    expect(t('sum(a.b) % `2`')).toBe(0);
    expect(t('items(a)')).toEqual([['b', [1, 2, 3]]]);
    expect(t("from_items([['p', `1`]])")).toEqual({ p: 1 });
    expect(t('group_by(items, &k)')).toEqual({
      a: [
        { k: 'a', v: 1 },
        { k: 'a', v: 3 },
      ],
      b: [{ k: 'b', v: 2 }],
    });
    expect(t('zip(a.b, a.b)[1]')).toEqual([2, 2]);
    expect(t('upper(name)')).toBe('X');
  });

  it('a failing evaluation (wrong argument type, division by zero) is a record error (thrown)', () => {
    expect(() => apply({ expression: 'abs(name)', target: 'x' }, { name: 'x' })).toThrow(/abs\(\) expected argument 1 to be type \(number\)/);
    expect(() => apply({ expression: 'a / `0`', target: 'x' }, { a: 1 })).toThrow(/divide by zero/);
  });

  it('the compiled expression is reused across records', () => {
    const t = make({ expression: '{v: v}' });
    expect([1, 2, 3].map((v) => t.apply({ v, w: 0 }, rc))).toEqual([{ v: 1 }, { v: 2 }, { v: 3 }]);
  });

  it('an invalid expression is a validation error with the YAML path; create refuses it too', () => {
    expect(loadTransforms(`{ type: jmespath, expression: 'a[' }`)).toEqual({
      config: undefined,
      diagnostics: ['pipeline.transforms[0].expression: not a JMESPath expression: Syntax error: expected Star, got: EOF (line 9) [CFG_INVALID]'],
    });
    expect(loadTransforms(['{ type: rename, fields: { a: b } }', `{ type: jmespath, expression: 'foo(@)', target: t }`]).diagnostics).toEqual([
      'pipeline.transforms[1].expression: unknown JMESPath function foo() (line 10) [CFG_INVALID]',
    ]);
    expect(loadTransforms(`{ type: jmespath, expression: 'bar(a) | foo(@) | abs(b)' }`).diagnostics).toEqual([
      'pipeline.transforms[0].expression: unknown JMESPath functions bar(), foo() (line 9) [CFG_INVALID]',
    ]);
    // A JSON literal that looks like a function node is data.
    expect(loadTransforms('{ type: jmespath, expression: \'merge(@, `{"type": "Function", "name": "nope"}`)\' }').diagnostics).toEqual([]);
    expect(() => make({ expression: '{a: }' })).toThrow(ConfigError);
    expect(() => make({ expression: 'nope(@)' })).toThrow('jmespath: unknown JMESPath function nope()');
    expect(loadTransforms(`{ type: jmespath, expression: '{a: b}' }`).diagnostics).toEqual([]);
  });

  it('schema: expression required, non-empty; target non-empty', () => {
    const ok = (c: object) => Value.Check(plugin.config, cfg(c));
    expect(ok({ expression: 'a' })).toBe(true);
    expect(ok({})).toBe(false);
    expect(ok({ expression: '' })).toBe(false);
    expect(ok({ expression: 'a', target: '' })).toBe(false);
    expect(ok({ expression: 'a', into: 'x' })).toBe(false);
  });

  it('in the engine: one record per array element; a scalar result under on_error dlq goes to the DLQ (stage transform)', async () => {
    const rows = [
      {
        event: {
          alarms: [
            { name: 'LOS', value: 1 },
            { name: 'LOF', value: 2 },
          ],
        },
      },
      { event: { alarms: 'none' } },
      { event: {} },
      { event: { alarms: [{ name: 'AIS', value: 3 }] } },
    ];
    const { record, out, dlq } = await runTransform(rows, `{ type: jmespath, expression: 'event.alarms[*].{name: name, value: value}' }`, {
      onError: 'dlq',
      dlq: true,
    });
    expect(out).toEqual([
      { name: 'LOS', value: 1 },
      { name: 'LOF', value: 2 },
      { name: 'AIS', value: 3 },
    ]);
    // 'none'[*] is null in JMESPath: dropped, like the record without alarms.
    expect(record).toMatchObject({ status: 'success', records_in: 4, records_out: 3, records_skipped: 0, dlq_count: 0 });
    expect(dlq).toEqual([]);

    const bad = await runTransform([{ a: 1 }, { a: { b: 2 } }], `{ type: jmespath, expression: 'a' }`, { onError: 'dlq', dlq: true });
    expect(bad.out).toEqual([{ b: 2 }]);
    expect(bad.record).toMatchObject({ records_in: 2, records_out: 1, records_skipped: 1, dlq_count: 1 });
    expect(bad.dlq).toEqual([
      expect.objectContaining({
        _stage: 'transform',
        _error: 'transforms[0] (jmespath): result 1 is not an object (set target to keep other results in a field)',
        record: { a: 1 },
        raw: null,
      }),
    ]);
  });
});
