import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import plugin from '../../../src/plugins/transforms/value_map/index.js';
import { silentLogger } from '../../../src/observability/log.js';
import type { Rec, RecordContext } from '../../../src/plugins/types.js';

const rc: RecordContext = { meta: {}, note: () => {} };
const make = (cfg: object) => plugin.create(Value.Default(plugin.config, cfg) as never, { pipeline: 't', log: silentLogger });
const apply = (cfg: object, r: Rec) => make(cfg).apply(r, rc);
const status = { '1': 'up', '2': 'down', '3': 'testing' };

describe('transform value_map', () => {
  it('replaces the value of the field through the mapping', () => {
    expect(apply({ field: 's', mapping: status }, { s: '2', x: 1 })).toEqual({ s: 'down', x: 1 });
  });

  it('looks numbers and booleans up as text', () => {
    expect(apply({ field: 's', mapping: status }, { s: 1 })).toEqual({ s: 'up' });
    expect(apply({ field: 's', mapping: status }, { s: 3.0 })).toEqual({ s: 'testing' });
    expect(apply({ field: 's', mapping: { true: 'yes', false: 'no' } }, { s: false })).toEqual({ s: 'no' });
    expect(apply({ field: 's', mapping: { '1.5': 'x' } }, { s: 1.5 })).toEqual({ s: 'x' });
  });

  it('compares text exactly (case, spaces)', () => {
    expect(apply({ field: 's', mapping: { up: 1 } }, { s: 'UP' })).toEqual({ s: 'UP' });
    expect(apply({ field: 's', mapping: { '1': 'up' } }, { s: ' 1' })).toEqual({ s: ' 1' });
  });

  it('maps to numbers, booleans and null', () => {
    const mapping = { up: 1, down: 0, t: true, gone: null };
    expect(apply({ field: 's', mapping }, { s: 'up' })).toEqual({ s: 1 });
    expect(apply({ field: 's', mapping }, { s: 't' })).toEqual({ s: true });
    expect(apply({ field: 's', mapping }, { s: 'gone' })).toEqual({ s: null });
  });

  it('writes to target and keeps the source field', () => {
    expect(apply({ field: 'ifOperStatus', target: 'oper_status', mapping: status }, { ifOperStatus: 2 })).toEqual({ ifOperStatus: 2, oper_status: 'down' });
  });

  it('uses default for unmapped values (in place and with target)', () => {
    expect(apply({ field: 's', mapping: status, default: 'unknown' }, { s: 9 })).toEqual({ s: 'unknown' });
    expect(apply({ field: 's', target: 't', mapping: status, default: 'unknown' }, { s: 9 })).toEqual({ s: 9, t: 'unknown' });
    expect(apply({ field: 's', mapping: status, default: null }, { s: 9 })).toEqual({ s: null });
    expect(apply({ field: 's', mapping: status, default: 0 }, { s: 9 })).toEqual({ s: 0 });
    // A mapped value does not use the default.
    expect(apply({ field: 's', mapping: status, default: 'unknown' }, { s: 1 })).toEqual({ s: 'up' });
  });

  it('without default keeps unmapped values (copied to target when there is one)', () => {
    expect(apply({ field: 's', mapping: status }, { s: 9 })).toEqual({ s: 9 });
    expect(apply({ field: 's', target: 't', mapping: status }, { s: 9 })).toEqual({ s: 9, t: 9 });
  });

  it('leaves records without the field untouched, even with a default', () => {
    expect(apply({ field: 's', mapping: status, default: 'unknown' }, { x: 1 })).toEqual({ x: 1 });
    expect(apply({ field: 's', target: 't', mapping: status, default: 'unknown' }, { x: 1 })).toEqual({ x: 1 });
  });

  it('does not treat inherited properties (constructor, toString) as fields', () => {
    expect(apply({ field: 'constructor', target: 't', mapping: {} }, { a: 1 })).toEqual({ a: 1 });
    expect(apply({ field: 'toString', mapping: {}, default: 'd' }, { a: 1 })).toEqual({ a: 1 });
    // A mapping key named like an Object.prototype member is an ordinary key.
    expect(apply({ field: 's', mapping: { constructor: 'c' } }, { s: 'constructor' })).toEqual({ s: 'c' });
    expect(apply({ field: 's', mapping: {} }, { s: 'constructor' })).toEqual({ s: 'constructor' });
  });

  it('the schema needs field and mapping', () => {
    expect(Value.Check(plugin.config, { field: 's', mapping: {} })).toBe(true);
    expect(Value.Check(plugin.config, { mapping: {} })).toBe(false);
    expect(Value.Check(plugin.config, { field: 's' })).toBe(false);
    expect(Value.Check(plugin.config, { field: 's', mapping: { a: [1] } })).toBe(false);
  });
});
