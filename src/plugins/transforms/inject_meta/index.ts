import { Type } from '@sinclair/typebox';
import { defineTransform, type LintIssue, type Rec, type SourceMeta } from '../../types.js';
import { setField } from '../../common/record.js';

const config = Type.Object(
  {
    fields: Type.Optional(
      Type.Record(Type.String({ minLength: 1 }), Type.String({ minLength: 1 }), {
        description:
          'Map of record field to metadata key of the source unit (source_filename, source_path, source_dir, source_relative_dir, source_size, source_mtime, webhook_path...).',
      }),
    ),
    all: Type.Boolean({ default: false, description: 'Copy every metadata key of the unit, each as `prefix` + key.' }),
    prefix: Type.String({ default: '_meta_', description: 'all: prefix of the field names (source_filename -> _meta_source_filename).' }),
    missing: Type.Union([Type.Literal('omit'), Type.Literal('null')], {
      default: 'omit',
      description: 'A metadata key that the source does not set (fields only): omit (field not added) or null (field set to null).',
    }),
    overwrite: Type.Boolean({ default: true, description: 'Replace a field the record already has; false keeps the record value.' }),
  },
  { additionalProperties: false },
);

export default defineTransform({
  key: 'inject_meta',
  summary: 'Copy metadata of the source unit (file name, path, size, webhook path...) into each record.',
  config,
  lint(c) {
    const issues: LintIssue[] = [];
    if (!c.all && (c.fields === undefined || Object.keys(c.fields).length === 0))
      issues.push({ path: 'fields', message: 'names no metadata to copy (give fields, or all: true)' });
    if (!c.all && c.prefix !== '_meta_') issues.push({ path: 'prefix', message: 'applies with all: true only' });
    return issues;
  },
  examples: [
    { title: 'File name and mtime of each record', yaml: 'type: inject_meta\nfields:\n  file: source_filename\n  file_mtime: source_mtime' },
    { title: 'Everything the source knows', yaml: 'type: inject_meta\nall: true\nprefix: src_' },
  ],
  create(c) {
    const targets = Object.keys(c.fields ?? {});
    const keys = Object.values(c.fields ?? {});
    const { all, prefix, overwrite } = c;
    const withNull = c.missing === 'null';
    // The values depend on the unit only: computed once per meta object, not once per record.
    let cachedFor: SourceMeta | undefined;
    let names: string[] = [];
    let values: unknown[] = [];
    const prepare = (meta: SourceMeta) => {
      cachedFor = meta;
      names = [];
      values = [];
      if (all) {
        for (const k of Object.keys(meta)) {
          if (meta[k] === undefined) continue;
          names.push(prefix + k);
          values.push(meta[k]);
        }
      }
      for (let i = 0; i < targets.length; i++) {
        const v = Object.hasOwn(meta, keys[i]!) ? meta[keys[i]!] : undefined;
        if (v === undefined && !withNull) continue;
        names.push(targets[i]!);
        values.push(v === undefined ? null : v);
      }
    };
    return {
      apply(r: Rec, ctx) {
        if (ctx.meta !== cachedFor) prepare(ctx.meta);
        for (let i = 0; i < names.length; i++) {
          const n = names[i]!;
          if (!overwrite && r[n] !== undefined && Object.hasOwn(r, n)) continue;
          setField(r, n, values[i]);
        }
        return r;
      },
    };
  },
});
