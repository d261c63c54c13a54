import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { Rec } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/inject_meta/index.js';
import { runTransform, transformOf } from './_harness.js';

const { cfg, make, apply } = transformOf(plugin);

const meta = { source_filename: 'a.csv', source_path: '/in/a.csv', source_size: 12, webhook_path: undefined };

describe('transform inject_meta', () => {
  it('fields: copies the named meta keys to the named record fields', () => {
    expect(apply({ fields: { file: 'source_filename', size: 'source_size' } }, { x: 1 }, meta)).toEqual({ x: 1, file: 'a.csv', size: 12 });
  });

  it('missing: omit (default) leaves unset keys out; null writes null', () => {
    expect(apply({ fields: { file: 'source_filename', hook: 'webhook_path', t: 'topic' } }, {}, meta)).toEqual({ file: 'a.csv' });
    expect(apply({ fields: { file: 'source_filename', hook: 'webhook_path', t: 'topic' }, missing: 'null' }, {}, meta)).toEqual({
      file: 'a.csv',
      hook: null,
      t: null,
    });
    // Inherited members are not meta keys.
    expect(apply({ fields: { c: 'constructor' }, missing: 'null' }, {}, {})).toEqual({ c: null });
  });

  it('all: copies every set meta key with prefix (default _meta_)', () => {
    expect(apply({ all: true }, { x: 1 }, meta)).toEqual({ x: 1, _meta_source_filename: 'a.csv', _meta_source_path: '/in/a.csv', _meta_source_size: 12 });
    expect(apply({ all: true, prefix: 'src_' }, {}, { source_filename: 'f' })).toEqual({ src_source_filename: 'f' });
    expect(apply({ all: true, prefix: '' }, {}, { topic: 't' })).toEqual({ topic: 't' });
  });

  it('all and fields together', () => {
    expect(apply({ all: true, fields: { file: 'source_filename' } }, {}, { source_filename: 'f' })).toEqual({ _meta_source_filename: 'f', file: 'f' });
  });

  it('overwrite: true (default) replaces record fields, false keeps them', () => {
    expect(apply({ fields: { file: 'source_filename' } }, { file: 'mine' }, meta)).toEqual({ file: 'a.csv' });
    expect(apply({ fields: { file: 'source_filename', size: 'source_size' }, overwrite: false }, { file: 'mine', size: null }, meta)).toEqual({
      file: 'mine',
      size: null,
    });
    expect(apply({ fields: { file: 'source_filename' }, overwrite: false }, { other: 1 }, meta)).toEqual({ other: 1, file: 'a.csv' });
  });

  it('follows the unit: values change when ctx.meta changes between records', () => {
    const t = make({ fields: { file: 'source_filename' } });
    const note = () => {};
    expect(t.apply({}, { meta: { source_filename: 'a' }, note })).toEqual({ file: 'a' });
    expect(t.apply({}, { meta: { source_filename: 'b' }, note })).toEqual({ file: 'b' });
    expect(t.apply({}, { meta: {}, note })).toEqual({});
  });

  it('a __proto__ target stays data', () => {
    const out = apply({ fields: { ['__proto__']: 'source_filename' } }, {}, meta) as Rec;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(out, '__proto__')?.value).toBe('a.csv');
  });

  it('lint: needs fields or all; prefix without all', () => {
    expect(plugin.lint!(cfg({}))).toEqual([{ path: 'fields', message: 'names no metadata to copy (give fields, or all: true)' }]);
    expect(plugin.lint!(cfg({ fields: {} }))).toHaveLength(1);
    expect(plugin.lint!(cfg({ fields: { f: 'source_filename' }, prefix: 'x_' }))).toEqual([{ path: 'prefix', message: 'applies with all: true only' }]);
    expect(plugin.lint!(cfg({ all: true }))).toEqual([]);
    expect(Value.Check(plugin.config, cfg({ fields: { f: '' } }))).toBe(false);
    expect(Value.Check(plugin.config, cfg({ missing: 'drop' }))).toBe(false);
  });

  it('end to end: the local source metadata of the file', async () => {
    const { record, out, dirs } = await runTransform(
      [{ a: 1 }, { a: 2 }],
      '    - { type: inject_meta, fields: { file: source_filename, size: source_size, hook: webhook_path }, missing: "null" }\n    - { type: inject_meta, all: true, prefix: m_ }',
    );
    expect(record).toMatchObject({ status: 'success', records_in: 2, records_out: 2, records_skipped: 0, errors: [] });
    const size = readFileSync(join(dirs.input, 'in.ndjson')).length;
    expect(out[0]).toMatchObject({
      a: 1,
      file: 'in.ndjson',
      size,
      hook: null,
      m_source_filename: 'in.ndjson',
      m_source_path: join(dirs.input, 'in.ndjson'),
      m_source_size: size,
    });
    expect(out[1]).toMatchObject({ a: 2, file: 'in.ndjson', size });
    expect(
      Object.keys(out[0]!)
        .filter((k) => k.startsWith('m_'))
        .sort(),
    ).toEqual(['m_source_dir', 'm_source_filename', 'm_source_mtime', 'm_source_path', 'm_source_relative_dir', 'm_source_size']);
  });
});
