import { Type } from '@sinclair/typebox';
import { defineTransform, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';
import { shapeCopier } from '../../common/shape-copy.js';

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
    const map = new Map(Object.entries(c.fields));
    const from = [...map.keys()];
    // A new object rather than `delete`: deleting keys drops V8 objects into slow dictionary
    // mode (slower access and JSON.stringify later), and renamed fields keep their position.
    const slow = (r: Rec) => {
      let hit = false;
      // Own fields only: `in` would also find Object.prototype members (constructor, toString).
      for (let i = 0; i < from.length; i++) if (Object.hasOwn(r, from[i]!)) hit = true;
      if (!hit) return r;
      const out: Rec = {};
      for (const k in r) setField(out, map.get(k) ?? k, r[k]);
      // The renamed value wins over a field that already had the target name.
      for (let i = 0; i < from.length; i++) if (Object.hasOwn(r, from[i]!)) setField(out, map.get(from[i]!)!, r[from[i]!]);
      return out;
    };
    return { apply: shapeCopier((k) => map.get(k) ?? k, slow) };
  },
});
