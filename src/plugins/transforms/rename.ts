import { Type } from '@sinclair/typebox';
import { defineTransform, type Rec } from '../types.js';

const config = Type.Object(
  {
    fields: Type.Record(Type.String({ minLength: 1 }), Type.String({ minLength: 1 }), {
      description: 'Map of old field name to new field name. Missing fields are left alone; an existing target is overwritten.',
    }),
  },
  { additionalProperties: false },
);

export default defineTransform({
  key: 'rename',
  summary: 'Rename top-level fields.',
  config,
  lint: (c) => (Object.keys(c.fields).length === 0 ? [{ path: 'fields', message: 'names no field to rename' }] : []),
  examples: [{ title: 'SNMP names to short names', yaml: 'type: rename\nfields:\n  ifInOctets: in_octets\n  ifOutOctets: out_octets' }],
  create(c) {
    const pairs = Object.entries(c.fields);
    return {
      apply(r: Rec) {
        for (let i = 0; i < pairs.length; i++) {
          const [from, to] = pairs[i]!;
          if (from in r) {
            r[to] = r[from];
            delete r[from];
          }
        }
        return r;
      },
    };
  },
});
