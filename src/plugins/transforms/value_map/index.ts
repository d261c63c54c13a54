import { Type } from '@sinclair/typebox';
import { defineTransform, type Rec } from '../../types.js';

const Value = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);
const config = Type.Object(
  {
    field: Type.String({ minLength: 1, description: 'Field whose value is looked up.' }),
    mapping: Type.Record(Type.String(), Value, { description: 'Map of value (compared as text) to replacement.' }),
    target: Type.Optional(Type.String({ minLength: 1, description: 'Write the result here instead of replacing `field`.' })),
    default: Type.Optional({ ...Value, description: 'Value for unmapped inputs; when absent they keep their value.' }),
  },
  { additionalProperties: false },
);

export default defineTransform({
  key: 'value_map',
  summary: 'Replace coded values with names (ifOperStatus 1 -> up) through a lookup table.',
  config,
  examples: [
    {
      title: 'ifOperStatus to text',
      yaml: "type: value_map\nfield: ifOperStatus\ntarget: oper_status\nmapping: {'1': up, '2': down, '3': testing}\ndefault: unknown",
    },
  ],
  create(c) {
    const table = new Map(Object.entries(c.mapping));
    const target = c.target ?? c.field;
    const hasDefault = 'default' in c;
    return {
      apply(r: Rec) {
        const v = r[c.field];
        // Own fields only: not constructor, toString, ... of Object.prototype.
        if (v === undefined || !Object.hasOwn(r, c.field)) return r;
        const key = String(v);
        if (table.has(key)) r[target] = table.get(key);
        else if (hasDefault) r[target] = c.default;
        else if (target !== c.field) r[target] = v;
        return r;
      },
    };
  },
});
