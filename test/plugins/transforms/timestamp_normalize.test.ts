// timestamp_normalize: every input kind to exact ISO strings, every parameter and failure mode, and end to end.
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { RecordError } from '../../../src/core/errors.js';
import plugin from '../../../src/plugins/transforms/timestamp_normalize/index.js';
import { diagnostics, runTransform, transformOf } from './_harness.js';

const { make, one: apply } = transformOf(plugin);

const check = (o: object) => Value.Check(plugin.config, Value.Default(plugin.config, o));
/** Normalizes one value (field `v`) with extra config; throws like the transform. */
const norm = (v: unknown, cfg: object = {}) => apply({ fields: ['v'], ...cfg }, { v }).v;

describe('transform timestamp_normalize', () => {
  it('has defaults: unit auto, no formats, offset Z, output iso, on_failure error', () => {
    expect(Value.Default(plugin.config, { fields: ['t'] })).toEqual({
      fields: ['t'],
      unit: 'auto',
      formats: [],
      default_offset: 'Z',
      output: 'iso',
      on_failure: 'error',
    });
    expect(check({ fields: [] })).toBe(false);
    expect(check({ fields: ['t'], unit: 'min' })).toBe(false);
    expect(check({ fields: ['t'], default_offset: 'Europe/Paris' })).toBe(false);
    expect(check({ fields: ['t'], default_offset: '+05:30' })).toBe(true);
    expect(check({ fields: ['t'], bogus: 1 })).toBe(false);
  });

  describe('epoch numbers', () => {
    it('auto guesses s, ms, us and ns by magnitude', () => {
      expect(norm(0)).toBe('1970-01-01T00:00:00.000Z');
      expect(norm(1767268800)).toBe('2026-01-01T12:00:00.000Z');
      expect(norm(1767268800.123)).toBe('2026-01-01T12:00:00.123Z');
      expect(norm(1767268800123)).toBe('2026-01-01T12:00:00.123Z');
      expect(norm(1767268800123456)).toBe('2026-01-01T12:00:00.123Z');
      // eslint-disable-next-line no-loss-of-precision -- a nanosecond epoch as a JSON number arrives: rounded to a double
      expect(norm(1767268800123456789)).toBe('2026-01-01T12:00:00.123Z');
      // The boundaries: below 1e11 is seconds (year 5138), from 1e11 milliseconds (1973).
      expect(norm(99999999999)).toBe('5138-11-16T09:46:39.000Z');
      expect(norm(1e11)).toBe('1973-03-03T09:46:40.000Z');
    });
    it('an explicit unit is used as given', () => {
      expect(norm(1767268800, { unit: 'ms' })).toBe('1970-01-21T10:54:28.800Z');
      expect(norm(1767268800, { unit: 's' })).toBe('2026-01-01T12:00:00.000Z');
      expect(norm(1767268800123, { unit: 'ms' })).toBe('2026-01-01T12:00:00.123Z');
      expect(norm(1767268800123456, { unit: 'us' })).toBe('2026-01-01T12:00:00.123Z');
      // eslint-disable-next-line no-loss-of-precision -- a nanosecond epoch as a JSON number arrives: rounded to a double
      expect(norm(1767268800123456789, { unit: 'ns' })).toBe('2026-01-01T12:00:00.123Z');
      expect(norm(5, { unit: 'ns' })).toBe('1970-01-01T00:00:00.000Z');
    });
    it('digit strings are epochs too, nanoseconds exact beyond 2^53 and truncated (not rounded) to the millisecond', () => {
      expect(norm('1767268800')).toBe('2026-01-01T12:00:00.000Z');
      expect(norm('1767268800999')).toBe('2026-01-01T12:00:00.999Z');
      expect(norm('1767268800999999999')).toBe('2026-01-01T12:00:00.999Z');
      expect(norm('1767268800999999')).toBe('2026-01-01T12:00:00.999Z');
      expect(norm('1767268800999999999', { unit: 'ns' })).toBe('2026-01-01T12:00:00.999Z');
      expect(norm(' 1767268800.5 ')).toBe('2026-01-01T12:00:00.500Z');
      expect(norm('1.7672688e9')).toBe('2026-01-01T12:00:00.000Z');
    });
    it('before 1970: rounded down to the millisecond', () => {
      expect(norm(-1)).toBe('1969-12-31T23:59:59.000Z');
      expect(norm(-1.5)).toBe('1969-12-31T23:59:58.500Z');
      expect(norm('-1500', { unit: 'us' })).toBe('1969-12-31T23:59:59.998Z');
      expect(norm('-1000', { unit: 'us' })).toBe('1969-12-31T23:59:59.999Z');
    });
  });

  describe('ISO 8601', () => {
    it('converts offsets to UTC (fixed offsets, no DST involved)', () => {
      expect(norm('2026-01-01T12:00:00Z')).toBe('2026-01-01T12:00:00.000Z');
      expect(norm('2026-01-01T12:00:00+01:00')).toBe('2026-01-01T11:00:00.000Z');
      expect(norm('2026-07-01T12:00:00-04:00')).toBe('2026-07-01T16:00:00.000Z');
      expect(norm('2026-01-01T05:30:00+0530')).toBe('2026-01-01T00:00:00.000Z');
      expect(norm('2026-01-01T00:30:00+01')).toBe('2025-12-31T23:30:00.000Z');
      expect(norm('2026-01-01T12:00:00.5z')).toBe('2026-01-01T12:00:00.500Z');
      expect(norm('2026-01-01 12:00:00,25 +02:00')).toBe('2026-01-01T10:00:00.250Z');
    });
    it('accepts minutes-only times and dates alone', () => {
      expect(norm('2026-01-01T12:00Z')).toBe('2026-01-01T12:00:00.000Z');
      expect(norm('2026-03-15')).toBe('2026-03-15T00:00:00.000Z');
    });
    it('truncates fractions beyond milliseconds (ns precision)', () => {
      expect(norm('2026-01-01T12:00:00.123456789Z')).toBe('2026-01-01T12:00:00.123Z');
      expect(norm('2024-12-31T23:59:59.9999999Z')).toBe('2024-12-31T23:59:59.999Z');
    });
    it('knows leap years', () => {
      expect(norm('2024-02-29T10:00:00Z')).toBe('2024-02-29T10:00:00.000Z');
      expect(norm('2000-02-29')).toBe('2000-02-29T00:00:00.000Z');
      expect(() => norm('2023-02-29')).toThrow(RecordError);
      expect(() => norm('1900-02-29')).toThrow(RecordError);
    });
    it('applies default_offset to times without one', () => {
      expect(norm('2026-01-01T12:00:00', { default_offset: '+01:00' })).toBe('2026-01-01T11:00:00.000Z');
      expect(norm('2026-01-01T12:00:00', { default_offset: '-0230' })).toBe('2026-01-01T14:30:00.000Z');
      // An explicit offset wins.
      expect(norm('2026-01-01T12:00:00Z', { default_offset: '+01:00' })).toBe('2026-01-01T12:00:00.000Z');
    });
  });

  describe('3GPP / ISO basic', () => {
    it('reads YYYYMMDDhhmmss with optional fraction and offset', () => {
      expect(norm('20260101120000+0100')).toBe('2026-01-01T11:00:00.000Z');
      expect(norm('20260101120000')).toBe('2026-01-01T12:00:00.000Z');
      expect(norm('20260101120000.5-0530')).toBe('2026-01-01T17:30:00.500Z');
      expect(norm('20260101120000,123456Z')).toBe('2026-01-01T12:00:00.123Z');
      expect(norm('20260101T120000+01:00')).toBe('2026-01-01T11:00:00.000Z');
      expect(norm('20240229235959+0000')).toBe('2024-02-29T23:59:59.000Z');
      expect(norm('20260101000000+0100')).toBe('2025-12-31T23:00:00.000Z');
    });
    it('a 14-digit string that is no calendar time is an epoch', () => {
      expect(() => norm('20230229000000+0000')).toThrow(RecordError);
      expect(norm('17672688001234')).toBe('2530-01-10T00:00:01.234Z');
    });
  });

  describe('custom formats', () => {
    it('reads each directive, tried in order before the built-in kinds', () => {
      const formats = ['%d/%b/%Y:%H:%M:%S %z', '%m/%d/%Y %H:%M', '%Y.%m.%d %H:%M:%S.%f', '100%% %Y-%m-%d'];
      expect(norm('01/Jan/2026:12:00:00 +0100', { formats })).toBe('2026-01-01T11:00:00.000Z');
      expect(norm('15/DEC/2025:23:59:59 -05:00', { formats })).toBe('2025-12-16T04:59:59.000Z');
      expect(norm('2/29/2024 7:05', { formats })).toBe('2024-02-29T07:05:00.000Z');
      expect(norm('2026.01.01 12:00:00.987654', { formats })).toBe('2026-01-01T12:00:00.987Z');
      expect(norm('100% 2026-01-02', { formats })).toBe('2026-01-02T00:00:00.000Z');
      // Built-in kinds still apply after the custom formats.
      expect(norm('2026-01-01T12:00:00Z', { formats })).toBe('2026-01-01T12:00:00.000Z');
      // Without %z, default_offset applies.
      expect(norm('1/1/2026 12:00', { formats, default_offset: '+02:00' })).toBe('2026-01-01T10:00:00.000Z');
    });
    it('checks calendar values of formatted input', () => {
      expect(() => norm('31/Feb/2026:00:00:00 Z', { formats: ['%d/%b/%Y:%H:%M:%S %z'] })).toThrow(RecordError);
      expect(() => norm('01/Foo/2026:00:00:00 Z', { formats: ['%d/%b/%Y:%H:%M:%S %z'] })).toThrow(RecordError);
    });
    it('lints unknown directives and formats without a date', () => {
      expect(plugin.lint!({ fields: ['t'], formats: ['%Y-%m-%d %Q'] } as never)).toEqual([
        { path: 'formats.0', message: expect.stringContaining("unknown directive '%Q'") },
      ]);
      expect(plugin.lint!({ fields: ['t'], formats: ['%Y-%m-%d', '%H:%M'] } as never)).toEqual([
        { path: 'formats.1', message: "format '%H:%M' needs %Y, %m or %b, and %d" },
      ]);
      expect(plugin.lint!({ fields: ['t'], formats: ['%Y %Y %m %d'] } as never)[0]!.message).toContain('%Y appears twice');
      expect(plugin.lint!({ fields: ['t'], formats: ['%Y %b %m %d'] } as never)[0]!.message).toContain('both %m and %b');
      expect(() => make({ fields: ['t'], formats: ['%Y%'] })).toThrow(/unknown directive/);
    });
  });

  describe('output', () => {
    it('epoch_ms and epoch_s (rounded down)', () => {
      expect(norm('2026-01-01T12:00:00.999+01:00', { output: 'epoch_ms' })).toBe(1767265200999);
      expect(norm('2026-01-01T12:00:00.999+01:00', { output: 'epoch_s' })).toBe(1767265200);
      expect(norm(-1.5, { output: 'epoch_s' })).toBe(-2);
      // eslint-disable-next-line no-loss-of-precision -- a nanosecond epoch as a JSON number arrives: rounded to a double
      expect(norm(1767268800123456789, { output: 'epoch_ms' })).toBe(1767268800123);
    });
  });

  describe('failures', () => {
    const garbage = [
      'garbage',
      '',
      '   ',
      '2026-13-01',
      '2026-01-32',
      '2026-01-01T24:00:00Z',
      '2026-01-01T12:60:00Z',
      '2026-01-01T12:00:60Z',
      '2026-01-01T12:00:00+25:00',
      '12:00',
      'NaN',
      '1e400',
      true,
      { a: 1 },
      [1],
      NaN,
      Infinity,
      1e300,
      'x'.repeat(100),
      '2026-01-01T12:00:00Z junk',
    ];
    it('error (default) throws a record error naming the field and value', () => {
      for (const v of garbage) expect(() => norm(v), JSON.stringify(v)).toThrow(RecordError);
      expect(() => norm('garbage')).toThrow(`timestamp_normalize: field 'v' value "garbage" is not a recognized timestamp`);
    });
    it('null sets the result to null, keep leaves the value', () => {
      for (const v of garbage) {
        expect(norm(v, { on_failure: 'null' }), JSON.stringify(v)).toBeNull();
        expect(norm(v, { on_failure: 'keep' }), JSON.stringify(v)).toEqual(v);
      }
    });
    it('with target: null writes null there, keep writes nothing; the source is never changed', () => {
      expect(apply({ fields: ['t'], target: 'ts', on_failure: 'null' }, { t: 'bad' })).toEqual({ t: 'bad', ts: null });
      expect(apply({ fields: ['t'], target: 'ts', on_failure: 'keep' }, { t: 'bad' })).toEqual({ t: 'bad' });
    });
  });

  it('normalizes several fields, leaves missing, null and inherited ones alone', () => {
    expect(apply({ fields: ['a', 'b', 'c', 'constructor'] }, { a: 0, b: '20260101120000Z', c: null })).toEqual({
      a: '1970-01-01T00:00:00.000Z',
      b: '2026-01-01T12:00:00.000Z',
      c: null,
    });
  });

  it('target keeps the source field; target needs exactly one field', () => {
    expect(apply({ fields: ['t'], target: 'ts' }, { t: 1767268800 })).toEqual({ t: 1767268800, ts: '2026-01-01T12:00:00.000Z' });
    expect(plugin.lint!({ fields: ['a', 'b'], target: 'x' } as never)).toEqual([{ path: 'target', message: 'target needs exactly one field in fields' }]);
    expect(() => make({ fields: ['a', 'b'], target: 'x' })).toThrow('target needs exactly one field');
    expect(diagnostics({ type: 'timestamp_normalize', fields: ['a', 'b'], target: 'x' }).join('\n')).toContain('target needs exactly one field');
  });

  it('end to end: normalized records out, failures counted as skipped records with messages', async () => {
    const { record, out } = await runTransform(
      [{ t: '20260101120000+0100' }, { t: 1767268800123 }, { t: 'nope', k: 1 }, { t: '2024-02-29T00:00:00.123456789-01:00' }],
      '{ type: timestamp_normalize, fields: [t] }',
    );
    expect(out).toEqual([{ t: '2026-01-01T11:00:00.000Z' }, { t: '2026-01-01T12:00:00.123Z' }, { t: '2024-02-29T01:00:00.123Z' }]);
    expect(record).toMatchObject({ status: 'success', records_in: 4, records_out: 3, records_skipped: 1 });
    expect(record.errors).toEqual([
      `transform error in in.ndjson: transforms[0] (timestamp_normalize): timestamp_normalize: field 't' value "nope" is not a recognized timestamp`,
    ]);
  });

  it('end to end: a failure under on_error dlq goes to the DLQ', async () => {
    const { record, out, dlq } = await runTransform([{ t: 'nope' }, { t: 0 }], '{ type: timestamp_normalize, fields: [t], output: epoch_s }', {
      onError: 'dlq',
      dlq: true,
    });
    expect(out).toEqual([{ t: 0 }]);
    expect(record).toMatchObject({ records_skipped: 1, dlq_count: 1 });
    expect(dlq).toEqual([expect.objectContaining({ _stage: 'transform', record: { t: 'nope' } })]);
  });
});

describe('repeated values (the last conversion is reused)', () => {
  it('gives each record the conversion of its own value when values repeat and alternate', () => {
    const t = make({ fields: ['ts'] });
    const a = 1767225600; // 2026-01-01T00:00:00Z
    const b = 1767225601;
    const got = [a, a, b, a, 'garbage', a].map((ts) => {
      try {
        return t.apply({ ts }, { meta: {}, note: () => {} }) as { ts: unknown };
      } catch (e) {
        return { ts: (e as Error).name };
      }
    });
    expect(got.map((r) => r.ts)).toEqual([
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:01.000Z',
      '2026-01-01T00:00:00.000Z',
      'RecordError',
      '2026-01-01T00:00:00.000Z',
    ]);
  });
});
