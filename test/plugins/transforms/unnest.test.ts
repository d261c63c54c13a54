import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { Rec } from '../../../src/plugins/types.js';
import plugin from '../../../src/plugins/transforms/unnest/index.js';
import { runTransform, transformOf } from './_harness.js';

const { cfg, apply, notes } = transformOf(plugin);

describe('transform unnest', () => {
  it('lifts the keys of the object to the top level at its position and removes it', () => {
    const out = apply({ field: 'tags' }, { a: 1, tags: { site: 'p1', vendor: 'x' }, z: 0 }) as Rec;
    expect(out).toEqual({ a: 1, site: 'p1', vendor: 'x', z: 0 });
    expect(Object.keys(out)).toEqual(['a', 'site', 'vendor', 'z']);
  });

  it('lifts one level only: nested values stay as they are', () => {
    const inner = { lat: 1 };
    const out = apply({ field: 't' }, { t: { geo: inner, l: [1] } }) as Rec;
    expect(out).toEqual({ geo: inner, l: [1] });
    expect(out.geo).toBe(inner);
    expect(apply({ field: 't' }, { t: {}, a: 1 })).toEqual({ a: 1 });
  });

  it('prefix is put before each lifted key as is', () => {
    expect(apply({ field: 'loc', prefix: 'loc_' }, { loc: { lat: 1, lon: 2 } })).toEqual({ loc_lat: 1, loc_lon: 2 });
    expect(apply({ field: 'loc', prefix: 'loc.' }, { loc: { lat: 1 } })).toEqual({ 'loc.lat': 1 });
  });

  it('overwrite false (default): existing fields win and each clash is noted', () => {
    const out = apply({ field: 't' }, { a: 1, t: { a: 2, b: 3 }, b: 4 }) as Rec;
    expect(out).toEqual({ a: 1, b: 4 });
    expect(Object.keys(out)).toEqual(['a', 'b']);
    expect(notes).toEqual([
      "unnest: key 'a' of 't' clashes with an existing field: kept the existing value",
      "unnest: key 'b' of 't' clashes with an existing field: kept the existing value",
    ]);
    notes.length = 0;
    // A lifted key named like the field itself is no clash.
    expect(apply({ field: 't' }, { t: { t: 1 } })).toEqual({ t: 1 });
    expect(apply({ field: 't', prefix: 'p_' }, { a: 1, t: { a: 2 } })).toEqual({ a: 1, p_a: 2 });
    expect(notes).toEqual([]);
  });

  it('overwrite true: lifted values win, wherever the existing field sits, without messages', () => {
    const out = apply({ field: 't', overwrite: true }, { a: 1, t: { a: 2, b: 3 }, b: 4 }) as Rec;
    expect(out).toEqual({ a: 2, b: 3 });
    expect(Object.keys(out)).toEqual(['a', 'b']);
    expect(notes).toEqual([]);
  });

  it('missing, null or inherited fields: the record passes unchanged', () => {
    const r = { x: 1 };
    expect(apply({ field: 't' }, r)).toBe(r);
    const n = { t: null };
    expect(apply({ field: 't' }, n)).toBe(n);
    expect(apply({ field: 'constructor' }, r)).toBe(r);
    expect(notes).toEqual([]);
  });

  it('a value that is not an object is a record error', () => {
    for (const t of ['s', 5, [{ a: 1 }], true, new Date(0)]) {
      expect(() => apply({ field: 't' }, { t }), String(t)).toThrow(
        expect.objectContaining({ name: 'RecordError', message: "unnest: field 't' is not an object" }),
      );
    }
  });

  it('keeps keys named __proto__ as data', () => {
    const out = apply({ field: 't' }, JSON.parse('{"t":{"__proto__":{"x":1},"a":1}}')) as Rec;
    expect(Object.keys(out)).toEqual(['__proto__', 'a']);
    expect(Object.getOwnPropertyDescriptor(out, '__proto__')?.value).toEqual({ x: 1 });
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });

  it('the schema needs field and refuses unknown options', () => {
    expect(Value.Check(plugin.config, cfg({ field: 't' }))).toBe(true);
    expect(Value.Check(plugin.config, {})).toBe(false);
    expect(Value.Check(plugin.config, { field: 't', recursive: true })).toBe(false);
  });

  it('end to end: lifted fields, clashes noted, a non-object as a record error', async () => {
    const { record, out } = await runTransform([{ n: 1, tags: { site: 'p1', n: 9 } }, { n: 2, tags: 'bad' }, { n: 3 }], '    - { type: unnest, field: tags }');
    expect(out).toEqual([{ n: 1, site: 'p1' }, { n: 3 }]);
    expect(record).toMatchObject({ status: 'success', records_in: 3, records_out: 2, records_skipped: 1 });
    expect(record.errors).toEqual([
      "unnest: key 'n' of 'tags' clashes with an existing field: kept the existing value",
      "transform error in in.ndjson: transforms[0] (unnest): unnest: field 'tags' is not an object",
    ]);
  });
});
