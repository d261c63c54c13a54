import { Type } from '@sinclair/typebox';
import { defineTransform, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';

const config = Type.Object(
  {
    field: Type.String({
      minLength: 1,
      description:
        'Array field to split: one record per element. Missing or null: the record passes unchanged; a non-array value counts as a one-element array.',
    }),
    target: Type.Optional(
      Type.String({ minLength: 1, description: 'Field that receives the element; absent: `field` itself. When set, `field` is removed from the new records.' }),
    ),
    index_field: Type.Optional(Type.String({ minLength: 1, description: 'Also write the 0-based position of the element here.' })),
    keep_empty: Type.Boolean({
      default: false,
      description: 'An empty array: true gives one record with the target null (and no index); false drops the record with a noted skip (rule 6).',
    }),
  },
  { additionalProperties: false },
);

export default defineTransform({
  key: 'explode',
  summary: 'Split a record into one record per element of an array field.',
  config,
  lint: (c) => {
    const target = c.target ?? c.field;
    return c.index_field !== undefined && c.index_field === target ? [{ path: 'index_field', message: `is the same field as the target '${target}'` }] : [];
  },
  examples: [
    { title: 'One record per 3GPP measValue', yaml: 'type: explode\nfield: measValues\ntarget: measValue\nindex_field: pos' },
    { title: 'Keep interfaces without neighbours', yaml: 'type: explode\nfield: neighbors\nkeep_empty: true' },
  ],
  create(c) {
    const field = c.field;
    const target = c.target ?? field;
    const moved = target !== field;
    const indexField = c.index_field;
    const keepEmpty = c.keep_empty;
    const emptyNote = `explode: field '${field}' is an empty array: record dropped`;
    // One new object per element (never shared: later transforms change records in place). The
    // element sits where the array was; an existing field named like target or index_field is replaced.
    const one = (r: Rec, el: unknown, i: number): Rec => {
      const out: Rec = {};
      for (const k in r) {
        if (k === field) {
          setField(out, target, el);
          if (indexField !== undefined && i >= 0) setField(out, indexField, i);
        } else if (k !== target && k !== indexField) setField(out, k, r[k]);
      }
      return out;
    };
    return {
      apply(r: Rec, ctx) {
        const v = r[field];
        // Own fields only: not constructor, toString, ... of Object.prototype.
        if (v === undefined || v === null || !Object.hasOwn(r, field)) return r;
        if (!Array.isArray(v)) return moved || indexField !== undefined ? one(r, v, 0) : r;
        if (v.length === 0) {
          if (keepEmpty) return one(r, null, -1);
          ctx.note(emptyNote);
          return null;
        }
        const out: Rec[] = new Array<Rec>(v.length);
        for (let i = 0; i < v.length; i++) out[i] = one(r, v[i], i);
        return out;
      },
    };
  },
});
