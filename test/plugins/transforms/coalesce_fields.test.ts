// coalesce_fields: priority order, empties, default, drop_sources, and end to end.
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import plugin from '../../../src/plugins/transforms/coalesce_fields/index.js';
import { runTransform, transformOf } from './_harness.js';

const { one: apply } = transformOf(plugin);

const fields = ['sysName', 'hostname', 'ip'];

describe('transform coalesce_fields', () => {
  it('has defaults: ignore_empty true, drop_sources false, no default', () => {
    expect(Value.Default(plugin.config, { fields: ['a'], target: 't' })).toEqual({ fields: ['a'], target: 't', ignore_empty: true, drop_sources: false });
    expect(Value.Check(plugin.config, { fields: [], target: 't', ignore_empty: true, drop_sources: false })).toBe(false);
    expect(Value.Check(plugin.config, { fields: ['a'], ignore_empty: true, drop_sources: false })).toBe(false);
    expect(Value.Check(plugin.config, { fields: ['a'], target: 't', ignore_empty: true, drop_sources: false, default: [1] })).toBe(false);
  });

  it('takes the first field with a value, in priority order, keeping the sources', () => {
    expect(apply({ fields, target: 'host' }, { sysName: 'r1', hostname: 'h1', ip: '10.0.0.1' })).toEqual({
      sysName: 'r1',
      hostname: 'h1',
      ip: '10.0.0.1',
      host: 'r1',
    });
    expect(apply({ fields, target: 'host' }, { hostname: 'h1', ip: '10.0.0.1' })).toMatchObject({ host: 'h1' });
    expect(apply({ fields, target: 'host' }, { sysName: null, ip: '10.0.0.1' })).toMatchObject({ host: '10.0.0.1' });
  });

  it('empty strings are skipped unless ignore_empty is false; 0 and false are values', () => {
    expect(apply({ fields, target: 'host' }, { sysName: '', hostname: 'h1' }).host).toBe('h1');
    expect(apply({ fields, target: 'host', ignore_empty: false }, { sysName: '', hostname: 'h1' }).host).toBe('');
    expect(apply({ fields: ['a', 'b'], target: 't' }, { a: 0, b: 1 }).t).toBe(0);
    expect(apply({ fields: ['a', 'b'], target: 't' }, { a: false, b: 1 }).t).toBe(false);
    expect(apply({ fields: ['a', 'b'], target: 't' }, { a: { x: 1 } }).t).toEqual({ x: 1 });
  });

  it('without a value: default when set, else target is left as it is', () => {
    expect(apply({ fields, target: 'host', default: 'unknown' }, { sysName: '' })).toEqual({ sysName: '', host: 'unknown' });
    expect(apply({ fields, target: 'host', default: null }, {})).toEqual({ host: null });
    expect(apply({ fields, target: 'host', default: 0 }, {}).host).toBe(0);
    expect(apply({ fields, target: 'host' }, { x: 1 })).toEqual({ x: 1 });
    expect(apply({ fields, target: 'host' }, { host: 'old' })).toEqual({ host: 'old' });
    // A found value overwrites an existing target.
    expect(apply({ fields, target: 'host' }, { host: 'old', ip: 'new' }).host).toBe('new');
  });

  it('drop_sources removes every listed field but target, keeping the order of the rest', () => {
    const out = apply({ fields, target: 'host', drop_sources: true }, { a: 1, sysName: null, hostname: 'h1', ip: 'x', z: 2 });
    expect(out).toEqual({ a: 1, z: 2, host: 'h1' });
    expect(Object.keys(out)).toEqual(['a', 'z', 'host']);
    // Target among the sources: it stays, in place.
    const self = apply({ fields: ['in_octets', 'ifInOctets'], target: 'in_octets', drop_sources: true }, { in_octets: null, ifInOctets: 5, k: 1 });
    expect(self).toEqual({ in_octets: 5, k: 1 });
    expect(Object.keys(self)).toEqual(['in_octets', 'k']);
    // Nothing found, no default: sources still dropped, target not written.
    expect(apply({ fields, target: 'host', drop_sources: true }, { sysName: '', k: 1 })).toEqual({ k: 1 });
  });

  it('does not treat inherited properties as fields; a target named __proto__ stays data', () => {
    expect(apply({ fields: ['constructor', 'toString'], target: 't' }, { a: 1 })).toEqual({ a: 1 });
    const out = apply({ fields: ['a'], target: '__proto__' }, { a: 'x' });
    expect(JSON.stringify(out)).toBe('{"a":"x","__proto__":"x"}');
    const dropped = apply({ fields: ['a'], target: '__proto__', drop_sources: true }, { a: 'x' });
    expect(JSON.stringify(dropped)).toBe('{"__proto__":"x"}');
    expect(Object.getPrototypeOf(dropped)).toBe(Object.prototype);
  });

  it('lints a field listed twice', () => {
    expect(plugin.lint!({ fields: ['a', 'b', 'a'], target: 't' } as never)).toEqual([{ path: 'fields', message: 'lists a field twice' }]);
    expect(plugin.lint!({ fields: ['a', 'b'], target: 't' } as never)).toEqual([]);
  });

  it('end to end: first value wins, sources dropped, default for the rest', async () => {
    const { record, out } = await runTransform(
      [{ ifHCInOctets: 10, ifInOctets: 1, k: 'a' }, { ifHCInOctets: null, ifInOctets: 2, k: 'b' }, { k: 'c' }],
      '{ type: coalesce_fields, fields: [ifHCInOctets, ifInOctets], target: in_octets, drop_sources: true, default: 0 }',
    );
    expect(out).toEqual([
      { k: 'a', in_octets: 10 },
      { k: 'b', in_octets: 2 },
      { k: 'c', in_octets: 0 },
    ]);
    expect(record).toMatchObject({ status: 'success', records_in: 3, records_out: 3, records_skipped: 0, errors: [] });
  });
});
