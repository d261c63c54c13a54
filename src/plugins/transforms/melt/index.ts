import { Type } from '@sinclair/typebox';
import { defineTransform, type LintIssue, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';

const config = Type.Object(
  {
    id_fields: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'Fields copied into every output record (node, time, object). A missing one is simply absent from the output.',
    }),
    value_fields: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        minItems: 1,
        description:
          'Fields melted, one output record each, in this order; absent: every field not in id_fields, in record order. Missing ones give no record.',
      }),
    ),
    var_name: Type.String({ minLength: 1, default: 'metric', description: 'Output field holding the name of the melted field.' }),
    value_name: Type.String({ minLength: 1, default: 'value', description: 'Output field holding the value of the melted field.' }),
    drop_null: Type.Boolean({ default: false, description: 'Give no record for a melted field whose value is null.' }),
  },
  { additionalProperties: false },
);

export default defineTransform({
  key: 'melt',
  summary: 'Wide to long, as pandas.melt: one record per value field, with id fields, the field name and its value.',
  config,
  lint: (c) => {
    const issues: LintIssue[] = [];
    const ids = new Set(c.id_fields);
    if (c.var_name === c.value_name) issues.push({ path: 'value_name', message: `is the same as var_name '${c.var_name}'` });
    if (ids.has(c.var_name)) issues.push({ path: 'var_name', message: `'${c.var_name}' is also an id field` });
    if (ids.has(c.value_name)) issues.push({ path: 'value_name', message: `'${c.value_name}' is also an id field` });
    c.value_fields?.forEach((f, i) => {
      if (ids.has(f)) issues.push({ path: `value_fields/${i}`, message: `'${f}' is also an id field` });
    });
    return issues;
  },
  examples: [
    {
      title: 'PM counters, one record per counter',
      yaml: 'type: melt\nid_fields: [node, measObjLdn, beginTime]\nvar_name: counter\nvalue_name: value',
    },
    {
      title: 'Selected counters, nulls dropped',
      yaml: 'type: melt\nid_fields: [cell]\nvalue_fields: [pmRrcConnEstabSucc, pmRrcConnEstabAtt]\ndrop_null: true',
    },
  ],
  create(c) {
    const ids = c.id_fields;
    const idSet = new Set(ids);
    const values = c.value_fields;
    const varName = c.var_name;
    const valueName = c.value_name;
    const dropNull = c.drop_null;
    const emptyNote = values ? 'melt: record has none of the value_fields: dropped' : 'melt: record has no field besides id_fields: dropped';
    const nullNote = 'melt: every value to melt is null (drop_null): record dropped';
    const one = (r: Rec, name: string, v: unknown): Rec => {
      const o: Rec = {};
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i]!;
        if (Object.hasOwn(r, id)) setField(o, id, r[id]);
      }
      setField(o, varName, name);
      setField(o, valueName, v);
      return o;
    };
    return {
      apply(r: Rec, ctx) {
        const out: Rec[] = [];
        let nulls = 0;
        if (values) {
          for (let i = 0; i < values.length; i++) {
            const f = values[i]!;
            // Own fields only: not constructor, toString, ... of Object.prototype.
            if (!Object.hasOwn(r, f)) continue;
            const v = r[f];
            if (v === null && dropNull) {
              nulls++;
              continue;
            }
            out.push(one(r, f, v));
          }
        } else {
          for (const f in r) {
            if (idSet.has(f)) continue;
            const v = r[f];
            if (v === null && dropNull) {
              nulls++;
              continue;
            }
            out.push(one(r, f, v));
          }
        }
        // Nothing to melt: no record, and a message (rule 6 noted skip) rather than a wide record
        // slipping into a long stream. All-null values with drop_null are dropped the same way.
        if (out.length === 0) {
          ctx.note(nulls > 0 ? nullNote : emptyNote);
          return null;
        }
        return out;
      },
    };
  },
});
