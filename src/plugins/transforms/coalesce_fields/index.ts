import { Type } from '@sinclair/typebox';
import { defineTransform, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';

const Value = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);
const config = Type.Object(
  {
    fields: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'Top-level fields in priority order; the first with a value wins.' }),
    target: Type.String({ minLength: 1, description: 'Field that receives the value (overwritten when it exists); may be one of fields.' }),
    ignore_empty: Type.Boolean({ default: true, description: 'Treat empty strings like null (skip them); false takes the first field that is not null.' }),
    drop_sources: Type.Boolean({ default: false, description: 'Remove the listed fields afterwards (all of them, except target).' }),
    default: Type.Optional({ ...Value, description: 'Value for target when no field has one; when absent target is left as it is.' }),
  },
  { additionalProperties: false },
);

export default defineTransform({
  key: 'coalesce_fields',
  summary: 'Set a field to the first non-null, non-empty value among several fields.',
  config,
  lint: (c) => (new Set(c.fields).size !== c.fields.length ? [{ path: 'fields', message: 'lists a field twice' }] : []),
  examples: [
    { title: 'Best available host name', yaml: 'type: coalesce_fields\nfields: [sysName, hostname, agent_address]\ntarget: host\ndefault: unknown' },
    { title: 'Merge vendor variants into one field', yaml: 'type: coalesce_fields\nfields: [ifHCInOctets, ifInOctets]\ntarget: in_octets\ndrop_sources: true' },
  ],
  create(c) {
    const fields = c.fields;
    const target = c.target;
    const ignoreEmpty = c.ignore_empty ?? true;
    const hasDefault = 'default' in c;
    const drop = c.drop_sources ? new Set(fields.filter((f) => f !== target)) : null;
    return {
      apply(r: Rec) {
        let found: unknown;
        for (let i = 0; i < fields.length; i++) {
          const f = fields[i]!;
          const v = r[f];
          // Own fields only: not constructor, toString, ... of Object.prototype.
          if (v === undefined || v === null || (ignoreEmpty && v === '') || !Object.hasOwn(r, f)) continue;
          found = v;
          break;
        }
        if (found === undefined && hasDefault) found = c.default;
        if (drop === null) {
          if (found !== undefined) setField(r, target, found);
          return r;
        }
        // A new object rather than `delete`, which drops V8 objects into slow dictionary mode.
        const out: Rec = {};
        for (const k in r) if (!drop.has(k)) setField(out, k, r[k]);
        if (found !== undefined) setField(out, target, found);
        return out;
      },
    };
  },
});
