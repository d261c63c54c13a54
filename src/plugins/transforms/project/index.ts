import { Type } from '@sinclair/typebox';
import { defineTransform, type LintIssue, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';
import { literalBuilder } from '../../common/shape-copy.js';

const Entry = Type.Union([
  Type.String({ minLength: 1 }),
  Type.Record(Type.String({ minLength: 1 }), Type.String({ minLength: 1 }), { minProperties: 1, maxProperties: 1 }),
]);
const config = Type.Object(
  {
    fields: Type.Array(Entry, {
      minItems: 1,
      description: 'Top-level fields to keep, in output order: a name, or `{name: new_name}` to keep it under another name. Every other field is removed.',
    }),
    rename: Type.Optional(
      Type.Record(Type.String({ minLength: 1 }), Type.String({ minLength: 1 }), {
        description: 'Map of kept field name to output name (another way to write `{name: new_name}` entries).',
      }),
    ),
    missing: Type.Union([Type.Literal('omit'), Type.Literal('null')], {
      default: 'omit',
      description: 'A listed field the record lacks: omit (left out of the output) or null (present with null, so every record has the same columns).',
    }),
  },
  { additionalProperties: false },
);

type Config = typeof config.static;

/** [source field, output field] in output order. */
function plan(c: Config): [string, string][] {
  return c.fields.map((e) => {
    const [from, to] = typeof e === 'string' ? [e, e] : Object.entries(e)[0]!;
    return [from, c.rename && Object.hasOwn(c.rename, from) ? c.rename[from]! : to];
  });
}

export default defineTransform({
  key: 'project',
  summary: 'Keep only the listed fields, in the listed order, optionally under new names.',
  config,
  lint(c) {
    const issues: LintIssue[] = [];
    const p = plan(c);
    const seen = new Set<string>();
    p.forEach(([, to], i) => {
      if (seen.has(to)) issues.push({ path: `fields.${i}`, message: `output field '${to}' is produced twice` });
      seen.add(to);
    });
    const sources = new Set(p.map(([from]) => from));
    for (const k of Object.keys(c.rename ?? {})) if (!sources.has(k)) issues.push({ path: `rename.${k}`, message: `'${k}' is not listed in fields` });
    return issues;
  },
  examples: [
    { title: 'Fixed CDR columns', yaml: 'type: project\nfields: [imsi, msisdn, {cell_id: cell}, duration]\nmissing: "null"' },
    {
      title: 'Keep and rename SNMP fields',
      yaml: 'type: project\nfields: [ifIndex, ifInOctets, ifOutOctets]\nrename: {ifInOctets: in_octets, ifOutOctets: out_octets}',
    },
  ],
  create(c) {
    const p = plan(c);
    const from = p.map(([f]) => f);
    const to = p.map(([, t]) => t);
    const withNull = c.missing === 'null';
    // Output names are known now: only a `__proto__` among them needs the careful setter.
    const put = to.includes('__proto__') ? setField : (o: Rec, k: string, v: unknown) => void (o[k] = v);
    // A record that has every listed field (the common case) is copied by one object literal.
    const whole = to.includes('__proto__') ? undefined : literalBuilder(p.map(([f, t]) => [t, f]));
    return {
      // A new object in the listed order (no `delete`).
      apply(r: Rec) {
        let all = whole !== undefined;
        for (let i = 0; all && i < from.length; i++) all = r[from[i]!] !== undefined && Object.hasOwn(r, from[i]!);
        if (all) return whole!(r);
        const out: Rec = {};
        for (let i = 0; i < from.length; i++) {
          const f = from[i]!;
          const v = r[f];
          if (v !== undefined && Object.hasOwn(r, f)) put(out, to[i]!, v);
          else if (withNull) put(out, to[i]!, null);
        }
        return out;
      },
    };
  },
});
