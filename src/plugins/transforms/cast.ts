import { Type } from '@sinclair/typebox';
import { RecordError } from '../../errors.js';
import { defineTransform, type Rec } from '../types.js';

const Target = Type.Union([Type.Literal('int'), Type.Literal('float'), Type.Literal('string'), Type.Literal('bool')]);
const config = Type.Object(
  {
    fields: Type.Record(Type.String({ minLength: 1 }), Target, { description: 'Map of field name to target type: int, float, string or bool.' }),
    on_failure: Type.Union([Type.Literal('error'), Type.Literal('null'), Type.Literal('keep')], {
      default: 'error',
      description: 'When a value does not convert: error (record error, rule 6 and on_error), null (set the field to null) or keep (leave it).',
    }),
  },
  { additionalProperties: false },
);

const INT = /^[+-]?\d+$/;
const HEX = /^0x[0-9a-f]+$/i;
const TRUE = new Set(['true', 'yes', 'on', '1', 't', 'y']);
const FALSE = new Set(['false', 'no', 'off', '0', 'f', 'n', '']);
const FAIL = Symbol('fail');

// Each converter returns FAIL instead of throwing: failures are common in dirty data and cheap this way.
const converters: Record<string, (v: unknown) => unknown> = {
  int(v) {
    if (typeof v === 'number') return Number.isFinite(v) ? Math.trunc(v) : FAIL;
    if (typeof v === 'boolean') return v ? 1 : 0;
    if (typeof v === 'string') {
      const s = v.trim();
      if (INT.test(s)) return parseInt(s, 10);
      if (HEX.test(s)) return parseInt(s.slice(2), 16);
      const n = Number(s);
      return s !== '' && Number.isFinite(n) ? Math.trunc(n) : FAIL;
    }
    return FAIL;
  },
  float(v) {
    // Non-finite values (NaN, Infinity) are failures: JSON cannot carry them (they would be written as null).
    if (typeof v === 'number') return Number.isFinite(v) ? v : FAIL;
    if (typeof v === 'boolean') return v ? 1 : 0;
    if (typeof v === 'string') {
      const s = v.trim();
      const n = Number(s);
      return s !== '' && Number.isFinite(n) ? n : FAIL;
    }
    return FAIL;
  },
  string(v) {
    if (typeof v === 'string') return v;
    if (v === null) return FAIL;
    return typeof v === 'object' ? JSON.stringify(v) : String(v);
  },
  bool(v) {
    if (typeof v === 'boolean') return v;
    if (typeof v === 'number') return v !== 0;
    if (typeof v === 'string') {
      const s = v.trim().toLowerCase();
      return TRUE.has(s) ? true : FALSE.has(s) ? false : FAIL;
    }
    return FAIL;
  },
};

export default defineTransform({
  key: 'cast',
  summary: 'Convert field values to int, float, string or bool.',
  config,
  examples: [
    { title: 'Counters from CSV text', yaml: 'type: cast\nfields:\n  ifInOctets: int\n  ifSpeed: float\n  ifAdminUp: bool' },
    { title: 'Tolerate dirty values', yaml: 'type: cast\nfields: {rssi: float}\non_failure: "null"' },
  ],
  create(c) {
    const plan = Object.entries(c.fields).map(([f, t]) => [f, t, converters[t]!] as const);
    const onFailure = c.on_failure;
    return {
      apply(r: Rec) {
        for (let i = 0; i < plan.length; i++) {
          const [field, type, conv] = plan[i]!;
          const v = r[field];
          // Missing fields are left alone; own fields only (not constructor, toString, ... of Object.prototype).
          if (v === undefined || !Object.hasOwn(r, field)) continue;
          const out = conv(v);
          if (out !== FAIL) r[field] = out;
          else if (onFailure === 'null') r[field] = null;
          else if (onFailure === 'error') throw new RecordError(`cast: field '${field}' value ${JSON.stringify(v)} is not a valid ${type}`);
        }
        return r;
      },
    };
  },
});
