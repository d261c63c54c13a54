// regex_extract: named groups to fields, prefix, every on_no_match, ReDoS bounds, and end to end.
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { RecordError } from '../../../src/core/errors.js';
import type { Rec } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/regex_extract/index.js';
import { diagnostics, runTransform, transformOf } from './_harness.js';

const { make, apply, rc } = transformOf(plugin);

const ifName = '^(?<if_type>[A-Za-z]+)(?<slot>\\d+)/(?<port>\\d+)$';

describe('transform regex_extract', () => {
  it('has defaults: no prefix, on_no_match keep', () => {
    expect(Value.Default(plugin.config, { field: 'f', pattern: '(?<a>.)' })).toEqual({ field: 'f', pattern: '(?<a>.)', prefix: '', on_no_match: 'keep' });
    expect(Value.Check(plugin.config, { field: 'f', pattern: '(?<a>.)', prefix: '', on_no_match: 'skip' })).toBe(false);
    expect(Value.Check(plugin.config, { field: 'f', prefix: '', on_no_match: 'keep' })).toBe(false);
  });

  it('sets one field per named group, as text, keeping the source field', () => {
    expect(apply({ field: 'ifDescr', pattern: ifName }, { ifDescr: 'GigabitEthernet0/1', x: 1 })).toEqual({
      ifDescr: 'GigabitEthernet0/1',
      x: 1,
      if_type: 'GigabitEthernet',
      slot: '0',
      port: '1',
    });
  });

  it('is unanchored unless the pattern says otherwise, and overwrites existing fields', () => {
    expect(apply({ field: 'm', pattern: 'state (?<state>up|down)' }, { m: 'link changed state down now', state: 'old' })).toEqual({
      m: 'link changed state down now',
      state: 'down',
    });
  });

  it('prefix is prepended to every group name', () => {
    expect(apply({ field: 'ifDescr', pattern: ifName, prefix: 'if_' }, { ifDescr: 'Te1/2' })).toEqual({
      ifDescr: 'Te1/2',
      if_if_type: 'Te',
      if_slot: '1',
      if_port: '2',
    });
  });

  it('groups that did not take part set nothing; empty matches set an empty string', () => {
    expect(apply({ field: 'm', pattern: '^(?:(?<a>x+)|(?<b>y+))(?<c>z*)$' }, { m: 'yy' })).toEqual({ m: 'yy', b: 'yy', c: '' });
  });

  it('matches numbers and booleans as text', () => {
    expect(apply({ field: 'n', pattern: '^(?<hi>\\d)(?<lo>\\d+)$' }, { n: 1234 })).toEqual({ n: 1234, hi: '1', lo: '234' });
    expect(apply({ field: 'n', pattern: '^(?<b>t)' }, { n: true })).toEqual({ n: true, b: 't' });
  });

  it('keeps a group named __proto__ as data', () => {
    const out = apply({ field: 'm', pattern: '(?<__proto__>.+)' }, { m: 'x' }) as Rec;
    expect(JSON.stringify(out)).toBe('{"m":"x","__proto__":"x"}');
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });

  describe('on_no_match', () => {
    const cases: Rec[] = [{ m: 'no digits here' }, { other: 1 }, { m: null }, { m: { a: 1 } }, {}];
    it('keep (default) returns the record unchanged', () => {
      for (const r of cases) expect(apply({ field: 'm', pattern: '(?<d>\\d+)' }, { ...r })).toEqual(r);
    });
    it('drop filters the record out', () => {
      for (const r of cases) expect(apply({ field: 'm', pattern: '(?<d>\\d+)', on_no_match: 'drop' }, { ...r })).toBeNull();
      expect(apply({ field: 'm', pattern: '(?<d>\\d+)', on_no_match: 'drop' }, { m: 'a1' })).toEqual({ m: 'a1', d: '1' });
    });
    it('error throws a record error saying why', () => {
      const cfg = { field: 'm', pattern: '(?<d>\\d+)', on_no_match: 'error' };
      for (const r of cases) expect(() => apply(cfg, { ...r }), JSON.stringify(r)).toThrow(RecordError);
      expect(() => apply(cfg, { m: 'abc' })).toThrow(`regex_extract: field 'm' value "abc" does not match the pattern`);
      expect(() => apply(cfg, { x: 1 })).toThrow(`regex_extract: field 'm' is missing`);
      expect(() => apply(cfg, { m: [1] })).toThrow(`regex_extract: field 'm' is not text`);
      expect(() => apply(cfg, { m: 'y'.repeat(200) })).toThrow(/value "y{80}"\.\.\. does not match/);
    });
  });

  describe('bounded regular expressions', () => {
    it('a ReDoS-shaped pattern on a long line finishes quickly (linear-time engine)', () => {
      const t = make({ field: 'm', pattern: '^(?<x>(a|aa)+)b$', on_no_match: 'drop' });
      const line = 'a'.repeat(50_000) + 'c';
      const t0 = performance.now();
      expect(t.apply({ m: line }, rc)).toBeNull();
      expect(performance.now() - t0).toBeLessThan(1000);
      expect(t.apply({ m: 'aaab' }, rc)).toEqual({ m: 'aaab', x: 'aaa' });
    });
    it('a polynomial pattern (.*.*x) on a long line finishes quickly', () => {
      const t = make({ field: 'm', pattern: '(?<a>.*)(?<b>.*)x' });
      const line = 'y'.repeat(60_000);
      const t0 = performance.now();
      expect(t.apply({ m: line }, rc)).toEqual({ m: line });
      expect(performance.now() - t0).toBeLessThan(1000);
    });
    it('only the first 64 KiB of a value are examined', () => {
      const t = make({ field: 'm', pattern: '(?<tail>END)', on_no_match: 'error' });
      expect(() => t.apply({ m: 'z'.repeat(70_000) + 'END' }, rc)).toThrow('(only the first 64 KiB are examined)');
      expect(t.apply({ m: 'z'.repeat(1000) + 'END' }, rc)).toMatchObject({ tail: 'END' });
    });
  });

  it('lints invalid, too long, unbounded and group-less patterns (and create refuses them)', () => {
    const lint = (pattern: string) => plugin.lint!({ field: 'f', pattern } as never);
    expect(lint(ifName)).toEqual([]);
    expect(lint('(?<a>[)')).toEqual([{ path: 'pattern', message: expect.stringContaining('invalid regular expression') }]);
    expect(lint('(?<a>x)' + 'y'.repeat(600))[0]!.message).toContain('the limit is 512');
    expect(lint('(?<a>(x+)+)\\1')[0]!.message).toContain('too complex');
    expect(lint('(\\d+)')).toEqual([{ path: 'pattern', message: 'pattern has no named group ((?<name>...)): nothing would be extracted' }]);
    expect(() => make({ field: 'f', pattern: '(\\d+)' })).toThrow('no named group');
    expect(diagnostics({ type: 'regex_extract', field: 'f', pattern: '(?<a>[)' }).join('\n')).toContain('invalid regular expression');
  });

  it('end to end: extracted fields, dropped and errored records', async () => {
    const t = `{ type: regex_extract, field: ifDescr, pattern: ${JSON.stringify(ifName)}, prefix: p_ }`;
    const { record, out } = await runTransform([{ ifDescr: 'Gi0/1' }, { ifDescr: 'mgmt' }, { x: 1 }], t);
    expect(out).toEqual([{ ifDescr: 'Gi0/1', p_if_type: 'Gi', p_slot: '0', p_port: '1' }, { ifDescr: 'mgmt' }, { x: 1 }]);
    expect(record).toMatchObject({ status: 'success', records_in: 3, records_out: 3, records_skipped: 0, errors: [] });

    const d = await runTransform([{ ifDescr: 'Gi0/1' }, { ifDescr: 'mgmt' }], t.replace(' }', ', on_no_match: drop }'));
    expect(d.out).toEqual([{ ifDescr: 'Gi0/1', p_if_type: 'Gi', p_slot: '0', p_port: '1' }]);
    expect(d.record).toMatchObject({ records_in: 2, records_out: 1, records_skipped: 0, errors: [] });

    const e = await runTransform([{ ifDescr: 'Gi0/1' }, { ifDescr: 'mgmt' }], t.replace(' }', ', on_no_match: error }'));
    expect(e.out).toHaveLength(1);
    expect(e.record).toMatchObject({ records_in: 2, records_out: 1, records_skipped: 1 });
    expect(e.record.errors).toEqual([
      `transform error in in.ndjson: transforms[0] (regex_extract): regex_extract: field 'ifDescr' value "mgmt" does not match the pattern`,
    ]);
  });
});
