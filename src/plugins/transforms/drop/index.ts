import { Type } from '@sinclair/typebox';
import { defineTransform, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';
import { shapeCopier } from '../../common/shape-copy.js';

const config = Type.Object(
  {
    fields: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'Top-level fields to remove.' }),
  },
  { additionalProperties: false },
);

export default defineTransform({
  key: 'drop',
  summary: 'Remove top-level fields.',
  config,
  examples: [{ title: 'Drop bulky fields', yaml: 'type: drop\nfields: [ifAlias, ifPhysAddress]' }],
  create(c) {
    const drop = new Set(c.fields);
    // A new object rather than `delete`, which drops V8 objects into slow dictionary mode.
    const slow = (r: Rec) => {
      const out: Rec = {};
      for (const k in r) if (!drop.has(k)) setField(out, k, r[k]);
      return out;
    };
    return { apply: shapeCopier((k) => (drop.has(k) ? null : k), slow) };
  },
});
