// Field access: bare names, dotted paths, brackets, $ for any field name, null handling, exists().
import { describe, expect, it } from 'vitest';
import { compile, type Scope } from '../../src/expr/index.js';
import { ev, errorOf, runError } from './helpers.js';

const rec: Scope = {
  ifIndex: 3,
  ifDescr: 'GigabitEthernet0/3',
  'if-alias': 'uplink',
  débit: 12,
  site: { name: 'PAR1', geo: { lat: 48.85, lon: 2.35 }, tags: ['core', 'edge'] },
  neighbors: [
    { id: 'r1', port: 1 },
    { id: 'r2', port: 7 },
  ],
  empty: null,
  undef: undefined,
};

describe('names', () => {
  it('read top-level fields', () => {
    expect(ev('ifIndex', rec)).toBe(3);
    expect(ev('ifDescr', rec)).toBe('GigabitEthernet0/3');
  });

  it('yield null for missing fields (never undefined, never an error)', () => {
    expect(ev('nope', rec)).toBe(null);
    expect(ev('undef', rec)).toBe(null);
    expect(ev('empty', rec)).toBe(null);
    expect(ev('nope == null', rec)).toBe(true);
  });

  it('allow letters, digits and _', () => {
    expect(ev('_a1 + B_2', { _a1: 1, B_2: 2 })).toBe(3);
  });

  it('may be keywords after a dot', () => {
    expect(ev('x.type', { x: { type: 'gauge' } })).toBe('gauge');
    expect(ev('x.in + x.if', { x: { in: 1, if: 2 } })).toBe(3);
    expect(ev('x.null', { x: { null: 'n' } })).toBe('n');
  });
});

describe('dotted access', () => {
  it('walks nested objects', () => {
    expect(ev('site.name', rec)).toBe('PAR1');
    expect(ev('site.geo.lat', rec)).toBe(48.85);
    expect(ev('a.b.c.d.e', { a: { b: { c: { d: { e: 5 } } } } })).toBe(5);
  });

  it('yields null through missing or null parts', () => {
    expect(ev('site.nope', rec)).toBe(null);
    expect(ev('site.nope.deeper', rec)).toBe(null);
    expect(ev('empty.x', rec)).toBe(null);
    expect(ev('nope.x.y.z.w', rec)).toBe(null);
    expect(ev('site.name.length', rec)).toBe(null); // strings have no fields
    expect(ev('site.tags.length', rec)).toBe(null); // nor do lists
    expect(ev('ifIndex.x', rec)).toBe(null);
  });

  it('works on computed values', () => {
    expect(ev('(site if true else null).name', rec)).toBe('PAR1');
    expect(ev('neighbors[1].port', rec)).toBe(7);
    expect(ev('[site][0].geo.lon', rec)).toBe(2.35);
  });
});

describe('bracket access', () => {
  it('reads object keys, including ones that are not names', () => {
    expect(ev("site['name']", rec)).toBe('PAR1');
    expect(ev("x['weird-key'].y", { x: { 'weird-key': { y: 1 } } })).toBe(1);
    expect(ev("site['geo']['lat']", rec)).toBe(48.85);
    expect(ev("site['no']", rec)).toBe(null);
  });

  it('indexes lists and strings, negative from the end, null out of range', () => {
    expect(ev('site.tags[0]', rec)).toBe('core');
    expect(ev('site.tags[-1]', rec)).toBe('edge');
    expect(ev('site.tags[2]', rec)).toBe(null);
    expect(ev('site.tags[-3]', rec)).toBe(null);
    expect(ev('ifDescr[0]', rec)).toBe('G');
    expect(ev('ifDescr[-1]', rec)).toBe('3');
    expect(ev('[10, 20, 30][1]')).toBe(20);
    expect(ev('x[1]', { x: [1, undefined] })).toBe(null);
  });

  it('takes computed keys', () => {
    expect(ev('site.tags[i]', { ...rec, i: 1 })).toBe('edge');
    expect(ev('site[k]', { ...rec, k: 'name' })).toBe('PAR1');
    expect(ev('site.tags[i - 1]', { ...rec, i: 1 })).toBe('core');
    expect(ev('site.tags[missing]', rec)).toBe(null);
  });

  it('mismatched keys give null: a string key on a list, a number key on an object', () => {
    expect(ev("site.tags['0']", rec)).toBe(null);
    expect(ev('site[0]', rec)).toBe(null);
    expect(ev('empty[0]', rec)).toBe(null);
  });

  it('rejects keys that are not strings or integers', () => {
    expect(runError('site.tags[i]', { ...rec, i: 0.5 })).toBe('index must be an integer, got 0.5 at column 10');
    expect(runError('site.tags[i]', { ...rec, i: true })).toBe('index must be a string or an integer, got bool at column 10');
    expect(runError('site[i]', { ...rec, i: [] })).toBe('index must be a string or an integer, got list at column 5');
  });
});

describe('$: the record itself, for any field name', () => {
  it('reaches fields whose names are not identifiers', () => {
    expect(ev("$['if-alias']", rec)).toBe('uplink');
    expect(ev("$['débit'] * 2", rec)).toBe(24);
    expect(ev("$['site'].name", rec)).toBe('PAR1');
    expect(ev('$.ifIndex', rec)).toBe(3);
    expect(ev("$['no such']", rec)).toBe(null);
  });

  it('takes computed names', () => {
    expect(ev('$[k]', { k: 'ifIndex', ifIndex: 3 })).toBe(3);
    expect(ev("$['if' + 'Index']", { ifIndex: 3 })).toBe(3);
  });

  it('must be followed by a key', () => {
    expect(errorOf(() => compile('$')).message).toBe("'$' stands for the whole record and must be followed by ['field name'] or .name at column 1");
    expect(errorOf(() => compile('len($)')).message).toBe("'$' stands for the whole record and must be followed by ['field name'] or .name at column 5");
  });
});

describe('own properties only', () => {
  it('does not see prototype members of the scope or of nested objects', () => {
    expect(ev('toString', {})).toBe(null);
    expect(ev('hasOwnProperty', {})).toBe(null);
    expect(ev('valueOf', {})).toBe(null);
    expect(ev('x.toString', { x: {} })).toBe(null);
    expect(ev("x['valueOf']", { x: {} })).toBe(null);
    expect(ev('x.map', { x: [] })).toBe(null);
  });

  it('does not see inherited data either', () => {
    class Rec {
      own = 1;
      get computed(): number {
        return 2;
      }
    }
    const scope = new Rec() as unknown as Scope;
    expect(ev('own', scope)).toBe(1);
    expect(ev('computed', scope)).toBe(null);
    const child = Object.create({ inherited: 5 }) as Scope;
    child['mine'] = 6;
    expect(ev('[mine, inherited]', child)).toEqual([6, null]);
  });

  it('works with null-prototype objects', () => {
    const scope = Object.assign(Object.create(null) as Scope, { a: Object.assign(Object.create(null) as Scope, { b: 2 }) });
    expect(ev('a.b', scope)).toBe(2);
    expect(ev('a.c', scope)).toBe(null);
  });
});

describe('exists()', () => {
  it('is true for a present field even when its value is null', () => {
    expect(ev('exists(empty)', rec)).toBe(true);
    expect(ev('exists(nope)', rec)).toBe(false);
    expect(ev('exists(undef)', rec)).toBe(false);
  });

  it('follows paths, indexes and $', () => {
    expect(ev('exists(site.geo.lat)', rec)).toBe(true);
    expect(ev('exists(site.geo.alt)', rec)).toBe(false);
    expect(ev('exists(nope.geo.lat)', rec)).toBe(false);
    expect(ev('exists(site.tags[1])', rec)).toBe(true);
    expect(ev('exists(site.tags[-2])', rec)).toBe(true);
    expect(ev('exists(site.tags[2])', rec)).toBe(false);
    expect(ev("exists(site['name'])", rec)).toBe(true);
    expect(ev("exists($['if-alias'])", rec)).toBe(true);
    expect(ev('exists($.ifIndex)', rec)).toBe(true);
    expect(ev('exists($[k])', { ...rec, k: 'nope' })).toBe(false);
  });

  it("takes a field name as a string: exists('weird-key')", () => {
    expect(ev("exists('if-alias')", rec)).toBe(true);
    expect(ev("exists('if-ALIAS')", rec)).toBe(false);
    expect(ev("exists('toString')", rec)).toBe(false);
  });

  it('rejects anything that is not a field reference', () => {
    expect(errorOf(() => compile('exists(1 + 2)')).message).toBe(
      "exists() takes a field, e.g. exists(ifAlias), exists(a.b) or exists('weird-key') at column 1",
    );
    expect(errorOf(() => compile('exists(a, b)')).message).toBe('exists() takes exactly 1 argument (2 given): exists(field) at column 1');
  });
});

describe('results are plain data', () => {
  it('returns nested values from the record as they are', () => {
    expect(ev('site.geo', rec)).toBe((rec['site'] as Scope)['geo']);
  });
});
