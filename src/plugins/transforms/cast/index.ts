import { Type } from '@sinclair/typebox';
import { defineTransform } from '../../types.js';
import { FAIL, fieldConverter } from '../../common/convert-fields.js';

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
    return {
      apply: fieldConverter({
        fields: plan.map(([f]) => f),
        onFailure: c.on_failure,
        skipNull: false, // null is a value to convert (to string it fails; to bool/int it fails too)
        convert: (v, i) => plan[i]![2](v),
        failure: (field, v, i) => `cast: field '${field}' value ${JSON.stringify(v)} is not a valid ${plan[i]![1]}`,
      }),
    };
  },
});
