import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import plugin from '../../../src/plugins/transforms/drop/index.js';
import { silentLogger } from '../../../src/observability/log.js';
import type { Rec, RecordContext } from '../../../src/plugins/types.js';

const rc: RecordContext = { meta: {}, note: () => {} };
const make = (cfg: object) => plugin.create(Value.Default(plugin.config, cfg) as never, { pipeline: 't', log: silentLogger });
const apply = (cfg: object, r: Rec) => make(cfg).apply(r, rc);

describe('transform drop', () => {
  it('removes the listed top-level fields and keeps the order of the others', () => {
    const out = apply({ fields: ['ifAlias', 'ifPhysAddress'] }, { ifIndex: 1, ifAlias: 'x', ifDescr: 'Gi0/1', ifPhysAddress: 'aa', z: null }) as Rec;
    expect(out).toEqual({ ifIndex: 1, ifDescr: 'Gi0/1', z: null });
    expect(Object.keys(out)).toEqual(['ifIndex', 'ifDescr', 'z']);
  });

  it('ignores listed fields the record does not have', () => {
    expect(apply({ fields: ['missing'] }, { a: 1 })).toEqual({ a: 1 });
    expect(apply({ fields: ['a', 'b'] }, { a: 1, b: 2 })).toEqual({});
  });

  it('drops only top-level fields (a dotted name is a literal name)', () => {
    expect(apply({ fields: ['site.geo'] }, { site: { geo: 1, x: 2 }, 'site.geo': 3 })).toEqual({ site: { geo: 1, x: 2 } });
  });

  it('drops fields whose value is null or falsy', () => {
    expect(apply({ fields: ['n', 'z'] }, { n: null, z: 0, k: '' })).toEqual({ k: '' });
  });

  it('keeps a field literally named __proto__ as data', () => {
    const out = apply({ fields: ['a'] }, JSON.parse('{"a":1,"__proto__":{"x":1},"b":2}')) as Rec;
    expect(JSON.stringify(out)).toBe('{"__proto__":{"x":1},"b":2}');
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.stringify(apply({ fields: ['__proto__'] }, JSON.parse('{"a":1,"__proto__":{"x":1}}')))).toBe('{"a":1}');
  });

  it('the schema needs at least one non-empty name', () => {
    expect(Value.Check(plugin.config, { fields: [] })).toBe(false);
    expect(Value.Check(plugin.config, { fields: [''] })).toBe(false);
    expect(Value.Check(plugin.config, { fields: ['a'] })).toBe(true);
  });
});
