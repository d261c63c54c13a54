import { Type } from '@sinclair/typebox';
import { RecordError } from '../../../core/errors.js';
import { defineTransform, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';

const config = Type.Object(
  {
    field: Type.String({ minLength: 1, description: 'Top-level field holding the list of objects (e.g. cells, attributes).' }),
    match_field: Type.String({ minLength: 1, description: 'Field of each element that is compared with match_value.' }),
    match_value: Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()], {
      description: 'The element whose match_field equals this is selected; compared as text (1 matches "1"); null matches only null.',
    }),
    value_field: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'Field of the selected element to copy; when absent the whole element is copied. A selected element without it gives null.',
      }),
    ),
    target: Type.String({ minLength: 1, description: 'Field of the record that receives the selected value (overwritten if present).' }),
    pick: Type.Union([Type.Literal('first'), Type.Literal('last')], { default: 'first', description: 'Which element wins when several match.' }),
    on_no_match: Type.Union([Type.Literal('keep'), Type.Literal('null'), Type.Literal('drop'), Type.Literal('error')], {
      default: 'keep',
      description:
        'When no element matches (or the field is missing or not a list): keep (record unchanged), null (target set to null), drop (record dropped with a message) or error (record error: skipped and counted, dead-lettered under on_error dlq).',
    }),
  },
  { additionalProperties: false },
);

export default defineTransform({
  key: 'select_from_list',
  summary: 'Pick the element of a list of objects whose key field has a given value and copy it (or one of its fields) to a field.',
  config,
  examples: [
    {
      title: 'Value of a name/value attribute list',
      yaml: 'type: select_from_list\nfield: attributes\nmatch_field: name\nmatch_value: imsi\nvalue_field: value\ntarget: imsi\non_no_match: "null"',
    },
    {
      title: 'Serving cell object, or drop the record',
      yaml: 'type: select_from_list\nfield: cells\nmatch_field: serving\nmatch_value: true\ntarget: serving_cell\non_no_match: drop',
    },
  ],
  create(c) {
    const { field, match_field: key, value_field: valueField, target, on_no_match: onNoMatch } = c;
    const wantNull = c.match_value === null;
    const want = String(c.match_value);
    const last = c.pick === 'last';
    const matches = (el: unknown): el is Rec => {
      if (typeof el !== 'object' || el === null || Array.isArray(el) || !Object.hasOwn(el, key)) return false;
      const v = (el as Rec)[key];
      if (wantNull) return v === null;
      return v !== null && typeof v !== 'object' && v !== undefined && String(v) === want;
    };
    const shown = JSON.stringify(c.match_value);
    return {
      apply(r: Rec, ctx) {
        const list = Object.hasOwn(r, field) ? r[field] : undefined;
        let hit: Rec | undefined;
        if (Array.isArray(list)) {
          if (last) {
            for (let i = list.length - 1; i >= 0 && !hit; i--) if (matches(list[i])) hit = list[i] as Rec;
          } else {
            for (let i = 0; i < list.length && !hit; i++) if (matches(list[i])) hit = list[i] as Rec;
          }
        }
        if (hit) {
          const v = valueField === undefined ? hit : Object.hasOwn(hit, valueField) ? hit[valueField] : undefined;
          setField(r, target, v === undefined ? null : v);
          return r;
        }
        switch (onNoMatch) {
          case 'keep':
            return r;
          case 'null':
            setField(r, target, null);
            return r;
          default: {
            const why = Array.isArray(list) ? `no element of '${field}' has ${key} = ${shown}` : `field '${field}' is not a list`;
            if (onNoMatch === 'drop') {
              ctx.note(`select_from_list: record dropped: ${why}`);
              return null;
            }
            throw new RecordError(`select_from_list: ${why}`);
          }
        }
      },
    };
  },
});
