import { Type } from '@sinclair/typebox';
import { defineTransform, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';

/** Objects that are flattened: plain ones (JSON-like), not Date, Buffer, Map or class instances. */
export function isPlainObject(v: unknown): v is Rec {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const p = Object.getPrototypeOf(v) as unknown;
  return p === Object.prototype || p === null;
}

export interface FlattenOptions {
  separator: string;
  /** Levels of nesting flattened below the starting path; Infinity for all. */
  maxDepth: number;
  /** `index`: array elements become `<path><sep><i>`; `keep`: arrays stay values. */
  arrays: 'keep' | 'index';
}

/**
 * Returns `walk(out, path, value, depth)`, which writes `value` into `out` under `path`, expanding
 * plain objects (and arrays with `index`) into `<path><sep><key>` while `depth <= maxDepth`.
 * Empty objects and arrays are kept as values so that nothing is lost.
 */
export function makeFlattener(o: FlattenOptions) {
  const { separator, maxDepth } = o;
  const index = o.arrays === 'index';
  const walk = (out: Rec, path: string, v: unknown, depth: number): void => {
    if (depth <= maxDepth) {
      if (isPlainObject(v)) {
        let any = false;
        for (const k in v) {
          any = true;
          walk(out, path + separator + k, v[k], depth + 1);
        }
        if (any) return;
      } else if (index && Array.isArray(v) && v.length > 0) {
        for (let i = 0; i < v.length; i++) walk(out, path + separator + i, v[i], depth + 1);
        return;
      }
    }
    setField(out, path, v);
  };
  /** True when `walk` would expand `v` (at depth 1) rather than copy it. */
  const expands = (v: unknown): boolean => {
    if (maxDepth < 1) return false;
    if (isPlainObject(v)) {
      for (const _ in v) return true;
      return false;
    }
    return index && Array.isArray(v) && v.length > 0;
  };
  return { walk, expands };
}

export const Separator = Type.String({ minLength: 1, default: '.', description: 'Joins the names of the levels into one key (a.b.c).' });
export const MaxDepth = Type.Optional(
  Type.Integer({ minimum: 1, description: 'Levels of nesting to flatten; deeper objects stay as values of the last key. Absent: no limit.' }),
);
export const Arrays = Type.Union([Type.Literal('keep'), Type.Literal('index')], {
  default: 'keep',
  description: 'keep: arrays stay values; index: elements become <key><separator><i> (0-based), an empty array stays [].',
});

const config = Type.Object(
  {
    separator: Separator,
    max_depth: MaxDepth,
    fields: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        minItems: 1,
        description: 'Top-level fields to flatten; absent: every field. Missing fields and non-object values are left alone (no error).',
      }),
    ),
    arrays: Arrays,
  },
  { additionalProperties: false },
);

export default defineTransform({
  key: 'flatten',
  summary: 'Turn nested objects into dotted top-level keys ({a: {b: 1}} -> {"a.b": 1}).',
  config,
  lint: (c) => (c.fields && new Set(c.fields).size !== c.fields.length ? [{ path: 'fields', message: 'names a field more than once' }] : []),
  examples: [
    { title: 'Flatten a whole gNMI update', yaml: 'type: flatten' },
    { title: 'Only some fields, underscores, two levels', yaml: 'type: flatten\nfields: [interface, counters]\nseparator: _\nmax_depth: 2' },
    { title: 'Index array elements', yaml: 'type: flatten\narrays: index' },
  ],
  create(c) {
    const { walk, expands } = makeFlattener({ separator: c.separator, maxDepth: c.max_depth ?? Infinity, arrays: c.arrays });
    const only = c.fields ? new Set(c.fields) : null;
    const list = c.fields ?? [];
    return {
      // A new object rather than `delete` (V8 slow mode); flattened keys sit where their parent was.
      // On a name clash (a literal "a.b" field and a.b), the later one in record order wins.
      apply(r: Rec) {
        let hit = false;
        if (only) {
          for (let i = 0; i < list.length && !hit; i++) if (Object.hasOwn(r, list[i]!) && expands(r[list[i]!])) hit = true;
        } else {
          for (const k in r) {
            if (expands(r[k])) {
              hit = true;
              break;
            }
          }
        }
        if (!hit) return r;
        const out: Rec = {};
        for (const k in r) {
          if (only === null || only.has(k)) walk(out, k, r[k], 1);
          else setField(out, k, r[k]);
        }
        return out;
      },
    };
  },
});
