import { describe, expect, it } from 'vitest';
import {
  expandTemplate,
  formatTimestamp,
  hasPartToken,
  lintTemplate,
  padPart,
  templateTokens,
  unknownTokens,
  withPartSuffix,
  type TemplateValues,
} from '../../src/plugins/connector-runtime/filename-template.js';

const startedAt = new Date('2024-03-05T07:08:09.123Z');
const values = (over: Partial<TemplateValues> = {}): TemplateValues => ({
  pipeline: 'pm',
  runId: 'run-1',
  startedAt,
  part: '00007',
  meta: { source_filename: 'A20240305.xml.gz', source_path: '/in/east/A20240305.xml.gz', source_relative_dir: 'east/site1' },
  first: { device: 'rtr-1', n: 42, nested: { site: 'lyon' }, 'a.b': 'flat' },
  ...over,
});

describe('expandTemplate tokens', () => {
  it.each([
    ['{pipeline}', 'pm'],
    ['{timestamp}', '20240305T070809Z'],
    ['{epoch}', String(Math.floor(startedAt.getTime() / 1000))],
    ['{epoch_m}', String(startedAt.getTime())],
    ['{part}', '00007'],
    ['{index}', '00007'],
    ['{run_id}', 'run-1'],
    ['{source_filename}', 'A20240305.xml.gz'],
    ['{source_stem}', 'A20240305.xml'],
    ['{source_suffix}', '.gz'],
    ['{source_path}', 'east/site1'],
    ['{field.device}', 'rtr-1'],
    ['{field.n}', '42'],
    ['{field.nested.site}', 'lyon'],
    ['{field.a.b}', 'flat'],
    ['{field.nested}', '__site___lyon__'],
  ])('%s -> %s', (template, expected) => {
    expect(expandTemplate(template, values())).toBe(expected);
  });

  it('combines literal text, tokens and subdirectories', () => {
    expect(expandTemplate('out/{pipeline}_{timestamp}_{part}.csv', values())).toBe('out/pm_20240305T070809Z_00007.csv');
  });

  it('uses unknown for a missing field or source name, empty for a missing suffix', () => {
    const v = values({ meta: {}, first: { x: null } });
    expect(expandTemplate('{field.missing}-{field.x}-{source_filename}-{source_stem}{source_suffix}', v)).toBe('unknown-unknown-unknown-unknown');
    expect(expandTemplate('{field.any}', values({ first: undefined }))).toBe('unknown');
    expect(expandTemplate('{source_stem}{source_suffix}', values({ meta: { source_filename: 'README' } }))).toBe('README');
  });

  it('falls back to the directory of source_path when the source gives no relative dir', () => {
    expect(expandTemplate('{source_path}/x', values({ meta: { source_path: '/data/in/a.csv' } }))).toBe('data/in/x');
    expect(expandTemplate('{source_path}/x', values({ meta: {} }))).toBe('x');
  });
});

describe('expandTemplate never escapes the target directory', () => {
  it('sanitizes field values: separators, dots-only, odd characters', () => {
    expect(expandTemplate('{field.v}.json', values({ first: { v: '../../etc/passwd' } }))).toBe('.._.._etc_passwd.json');
    expect(expandTemplate('{field.v}', values({ first: { v: '..' } }))).toBe('_');
    expect(expandTemplate('d/{field.v}/f', values({ first: { v: '..' } }))).toBe('d/_/f');
    expect(expandTemplate('{field.v}', values({ first: { v: 'a b:c*?\u0000' } }))).toBe('a_b_c___');
    expect(expandTemplate('{field.v}', values({ first: { v: 'Zürich' } }))).toBe('Zürich');
    expect(expandTemplate('{field.v}', values({ first: { v: 'x'.repeat(500) } })).length).toBe(100);
  });

  it('cleans {source_path}: no .., no absolute root, no empty segments', () => {
    const v = values({ meta: { source_relative_dir: '/../a/./../b//c\\..\\d' } });
    expect(expandTemplate('{source_path}/f', v)).toBe('a/b/c/d/f');
  });

  it('keeps a source file name but strips separators and dot-only names', () => {
    expect(expandTemplate('{source_filename}', values({ meta: { source_filename: 'a/../b' } }))).toBe('a_.._b');
    expect(expandTemplate('{source_filename}', values({ meta: { source_filename: '..' } }))).toBe('_');
    expect(expandTemplate('{pipeline}', values({ pipeline: '../x' }))).toBe(`.._x`);
  });

  it('drops a leading slash and . segments, turns a .. segment into _', () => {
    expect(expandTemplate('/abs/./{pipeline}', values())).toBe('abs/pm');
    expect(expandTemplate('a/../{pipeline}', values())).toBe('a/_/pm');
  });

  it('throws on an unknown token and on an empty result', () => {
    expect(() => expandTemplate('{nope}', values())).toThrow(/unknown token \{nope\}/);
    expect(() => expandTemplate('{source_path}', values({ meta: {} }))).toThrow(/empty name/);
  });
});

describe('template lint and helpers', () => {
  it('lists unknown tokens by name', () => {
    expect(unknownTokens('{pipeline}_{date}_{field.}_{part}_{date}')).toEqual(['date', 'field.']);
    expect(lintTemplate('{pipeline}_{date}.csv')[0]).toMatch(/unknown token \{date\}/);
    expect(lintTemplate('{pipeline}_{timestamp}_{part}.csv')).toEqual([]);
    expect(lintTemplate('{field.a.b}/{source_path}/{source_stem}{source_suffix}')).toEqual([]);
  });

  it('rejects absolute paths, .. segments, stray braces and a trailing slash', () => {
    expect(lintTemplate('/etc/{pipeline}')).toEqual([expect.stringMatching(/relative/)]);
    expect(lintTemplate('../{pipeline}')).toEqual([expect.stringMatching(/'\.\.'/)]);
    expect(lintTemplate('a/../../b')).toEqual([expect.stringMatching(/'\.\.'/)]);
    expect(lintTemplate('{pipeline')).toEqual([expect.stringMatching(/unbalanced/)]);
    expect(lintTemplate('{pipeline}/')).toEqual([expect.stringMatching(/file name/)]);
    expect(lintTemplate('a..b_{pipeline}')).toEqual([]);
  });

  it('formats, pads and inserts parts', () => {
    expect(templateTokens('a{x}b{field.y}')).toEqual(['x', 'field.y']);
    expect(hasPartToken('{pipeline}_{index}')).toBe(true);
    expect(hasPartToken('{pipeline}')).toBe(false);
    expect(formatTimestamp(new Date('1999-12-31T23:59:59.999Z'))).toBe('19991231T235959Z');
    expect(padPart(3, 99999)).toBe('00003');
    expect(padPart(12, 9)).toBe('12');
    expect(padPart(0, 1000)).toBe('0000');
    expect(withPartSuffix('d/e/name.tar.gz', '003')).toBe('d/e/name.tar_003.gz');
    expect(withPartSuffix('name', '003')).toBe('name_003');
  });
});
