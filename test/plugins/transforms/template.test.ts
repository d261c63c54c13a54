// template: placeholders, dotted paths, escapes, on_missing, lint, and end to end.
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { RecordError } from '../../../src/core/errors.js';
import type { Rec } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/template/index.js';
import { diagnostics, runTransform, transformOf } from './_harness.js';

const { make, rc } = transformOf(plugin);

/** Renders `template` against `r` and returns the target `out`. */
const render = (template: string, r: Rec, on_missing?: string) =>
  (make({ target: 'out', template, ...(on_missing ? { on_missing } : {}) }).apply(r, rc) as Rec).out;

describe('transform template', () => {
  it('has defaults: on_missing empty', () => {
    expect(Value.Default(plugin.config, { target: 'o', template: 'x' })).toEqual({ target: 'o', template: 'x', on_missing: 'empty' });
    expect(Value.Check(plugin.config, { target: 'o', template: 'x', on_missing: 'keep' })).toBe(false);
    expect(Value.Check(plugin.config, { template: 'x', on_missing: 'empty' })).toBe(false);
  });

  it('fills {field} placeholders and keeps the other fields', () => {
    const r = make({ target: 'resource', template: '{site}/{ne}/if-{ifIndex}' }).apply({ site: 'paris-1', ne: 'rtr1', ifIndex: 3 }, rc);
    expect(r).toEqual({ site: 'paris-1', ne: 'rtr1', ifIndex: 3, resource: 'paris-1/rtr1/if-3' });
  });

  it('reads dotted paths into nested objects and lists; a literal dotted top-level name wins', () => {
    expect(render('{device.name}@{device.loc.city}', { device: { name: 'r1', loc: { city: 'Lyon' } } })).toBe('r1@Lyon');
    expect(render('{hops.1}', { hops: ['a', 'b'] })).toBe('b');
    expect(render('{a.b}', { 'a.b': 'literal', a: { b: 'nested' } })).toBe('literal');
    expect(render('{a.b.c}', { a: { b: 'text' } })).toBe('');
    expect(render('{a.constructor}', { a: {} })).toBe('');
  });

  it('writes numbers, booleans, objects and lists as text; trims spaces in placeholders', () => {
    expect(render('{n}|{f}|{b}|{o}|{l}|{s}', { n: 1, f: 2.5, b: false, o: { x: 1 }, l: [1, 'a'], s: '' })).toBe('1|2.5|false|{"x":1}|[1,"a"]|');
    expect(render('{ n }', { n: 7 })).toBe('7');
  });

  it('{{ and }} are literal braces; text without placeholders is constant', () => {
    expect(render('{{{ne}}}:{{x}}', { ne: 'N1' })).toBe('{N1}:{x}');
    expect(render('constant', {})).toBe('constant');
    expect(render('', { a: 1 })).toBe('');
  });

  it('overwrites an existing target, which may be a source of the template', () => {
    expect(render('{out}-2', { out: 'v1' })).toBe('v1-2');
  });

  it('on_missing empty (default): missing and null values render as empty', () => {
    expect(render('[{a}][{b}][{c.d}]', { b: null })).toBe('[][][]');
  });

  it('on_missing error: a record error naming the placeholder', () => {
    expect(() => render('{a}-{b}', { a: 1 }, 'error')).toThrow(RecordError);
    expect(() => render('{a}-{b}', { a: 1, b: null }, 'error')).toThrow(`template: '{b}' is missing`);
    expect(() => render('{x.y}', { x: {} }, 'error')).toThrow(`template: '{x.y}' is missing`);
    expect(render('{a}-{b}', { a: 1, b: '' }, 'error')).toBe('1-');
  });

  it('sets a target named __proto__ as data', () => {
    const out = make({ target: '__proto__', template: '{a}' }).apply({ a: 'x' }, rc) as Rec;
    expect(JSON.stringify(out)).toBe('{"a":"x","__proto__":"x"}');
  });

  it('lints unbalanced braces and empty placeholders (and create refuses them)', () => {
    const lint = (template: string) => plugin.lint!({ target: 'o', template } as never);
    expect(lint('{a}/{b.c}')).toEqual([]);
    expect(lint('{a')).toEqual([{ path: 'template', message: "unclosed '{' at position 1 (write {{ for a literal brace)" }]);
    expect(lint('a}')).toEqual([{ path: 'template', message: "unmatched '}' at position 2 (write }} for a literal brace)" }]);
    expect(lint('x{}')).toEqual([{ path: 'template', message: 'empty or invalid placeholder at position 2' }]);
    expect(lint('{a{b}')[0]!.message).toContain('invalid placeholder');
    expect(() => make({ target: 'o', template: '{a' })).toThrow('unclosed');
    expect(diagnostics({ type: 'template', target: 'o', template: '{a' }).join('\n')).toContain("unclosed '{'");
  });

  it('end to end: rendered field, and a missing value as a record error under on_missing error', async () => {
    const { record, out } = await runTransform(
      [{ site: 'p1', dev: { name: 'r1' } }, { site: 'p2' }],
      "{ type: template, target: key, template: '{site}/{dev.name}' }",
    );
    expect(out).toEqual([
      { site: 'p1', dev: { name: 'r1' }, key: 'p1/r1' },
      { site: 'p2', key: 'p2/' },
    ]);
    expect(record).toMatchObject({ status: 'success', records_in: 2, records_out: 2, records_skipped: 0, errors: [] });
    const e = await runTransform(
      [{ site: 'p1', dev: { name: 'r1' } }, { site: 'p2' }],
      "{ type: template, target: key, template: '{site}/{dev.name}', on_missing: error }",
    );
    expect(e.out).toEqual([{ site: 'p1', dev: { name: 'r1' }, key: 'p1/r1' }]);
    expect(e.record).toMatchObject({ records_in: 2, records_out: 1, records_skipped: 1 });
    expect(e.record.errors).toEqual([`transform error in in.ndjson: transforms[0] (template): template: '{dev.name}' is missing`]);
  });
});
