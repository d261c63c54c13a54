import { Type } from '@sinclair/typebox';
import { defineTransform, type Rec } from '../types.js';

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
    const fields = c.fields;
    return {
      apply(r: Rec) {
        for (let i = 0; i < fields.length; i++) delete r[fields[i]!];
        return r;
      },
    };
  },
});
