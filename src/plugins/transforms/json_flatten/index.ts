import { Type } from '@sinclair/typebox';
import { RecordError } from '../../../core/errors.js';
import { defineTransform, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';
import { Arrays, isPlainObject, makeFlattener, MaxDepth, Separator } from '../flatten/index.js';

const config = Type.Object(
  {
    field: Type.String({
      minLength: 1,
      description: 'Field holding a JSON object as text (an object value is flattened as is). Missing or null: the record passes unchanged, no error.',
    }),
    prefix: Type.String({
      default: '',
      description: 'Root of the new keys, joined with the separator (prefix attr: attr.x.y); empty: the keys land at the top level.',
    }),
    separator: Separator,
    max_depth: MaxDepth,
    arrays: Arrays,
    drop_source: Type.Boolean({ default: true, description: 'Remove `field` once it has been parsed (kept when parsing fails).' }),
    on_error: Type.Union([Type.Literal('error'), Type.Literal('skip_field'), Type.Literal('keep')], {
      default: 'error',
      description:
        'When the value is not a JSON object (invalid JSON, an array, a number...): error (record error, rule 6 and on_error), skip_field (remove the field, pass the record) or keep (pass the record unchanged).',
    }),
  },
  { additionalProperties: false },
);

export default defineTransform({
  key: 'json_flatten',
  summary: 'Parse a JSON text field and merge its contents into the record as flattened keys.',
  config,
  examples: [
    { title: 'Vendor attributes embedded as JSON text', yaml: 'type: json_flatten\nfield: attributes\nprefix: attr' },
    { title: 'Keep the text, tolerate garbage', yaml: 'type: json_flatten\nfield: payload\nseparator: _\ndrop_source: false\non_error: keep' },
  ],
  create(c) {
    const field = c.field;
    const { walk } = makeFlattener({ separator: c.separator, maxDepth: c.max_depth ?? Infinity, arrays: c.arrays });
    const root = c.prefix === '' ? '' : c.prefix + c.separator;
    const dropSource = c.drop_source;
    const onError = c.on_error;
    const fail = (r: Rec, why: string): Rec => {
      if (onError === 'error') throw new RecordError(`json_flatten: field '${field}' ${why}`);
      if (onError === 'keep') return r;
      const out: Rec = {};
      for (const k in r) if (k !== field) setField(out, k, r[k]);
      return out;
    };
    return {
      apply(r: Rec) {
        const v = r[field];
        // Own fields only: not constructor, toString, ... of Object.prototype.
        if (v === undefined || v === null || !Object.hasOwn(r, field)) return r;
        let parsed: unknown;
        if (typeof v === 'string') {
          try {
            parsed = JSON.parse(v);
          } catch {
            // A fixed message (no parser position, no data) folds into one line of the run record.
            return fail(r, 'is not valid JSON');
          }
        } else parsed = v;
        if (!isPlainObject(parsed)) return fail(r, 'is not a JSON object');
        // Flattened keys first, then merged: they win over existing fields of the same name and
        // take the position of the source field; a new object rather than `delete` (V8 slow mode).
        const flat: Rec = {};
        for (const k in parsed) walk(flat, root + k, parsed[k], 1);
        const out: Rec = {};
        for (const k in r) {
          if (k === field) {
            if (!dropSource) setField(out, k, v);
            for (const fk in flat) setField(out, fk, flat[fk]);
          } else if (!Object.hasOwn(flat, k)) setField(out, k, r[k]);
        }
        return out;
      },
    };
  },
});
