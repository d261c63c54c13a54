import { Type } from '@sinclair/typebox';
import { RecordError } from '../../../core/errors.js';
import { defineTransform, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';
import { isPlainObject } from '../flatten/index.js';

const config = Type.Object(
  {
    field: Type.String({
      minLength: 1,
      description:
        'Object field whose keys move to the top level (one level; the field is removed). Missing or null: the record passes unchanged; any other non-object is a record error.',
    }),
    prefix: Type.String({ default: '', description: 'Text put before each lifted key as is (geo_ gives geo_lat).' }),
    overwrite: Type.Boolean({
      default: false,
      description: 'On a name clash: true lets the lifted value win; false keeps the existing field and notes the clash (rule 6 noted skip).',
    }),
  },
  { additionalProperties: false },
);

export default defineTransform({
  key: 'unnest',
  summary: 'Lift the keys of a nested object field to the top level ({tags: {site: x}} -> {site: x}).',
  config,
  examples: [
    { title: 'Telegraf tags to top-level fields', yaml: 'type: unnest\nfield: tags' },
    { title: 'Prefixed, lifted values win', yaml: 'type: unnest\nfield: location\nprefix: loc_\noverwrite: true' },
  ],
  create(c) {
    const field = c.field;
    const prefix = c.prefix;
    const overwrite = c.overwrite;
    return {
      apply(r: Rec, ctx) {
        const v = r[field];
        // Own fields only: not constructor, toString, ... of Object.prototype.
        if (v === undefined || v === null || !Object.hasOwn(r, field)) return r;
        if (!isPlainObject(v)) throw new RecordError(`unnest: field '${field}' is not an object`);
        // A new object rather than `delete` (V8 slow mode); lifted keys take the field's position.
        const out: Rec = {};
        for (const k in r) {
          if (k === field) {
            for (const nk in v) {
              const name = prefix + nk;
              if (!overwrite && name !== field && Object.hasOwn(r, name)) {
                ctx.note(`unnest: key '${nk}' of '${field}' clashes with an existing field: kept the existing value`);
                continue;
              }
              setField(out, name, v[nk]);
            }
          } else if (!Object.hasOwn(out, k)) setField(out, k, r[k]); // a lifted value already there won (overwrite)
        }
        return out;
      },
    };
  },
});
