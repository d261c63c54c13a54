import { readFileSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
import { Type } from '@sinclair/typebox';
import { ConfigError, RecordError, errorMessage } from '../../../core/errors.js';
import { defineTransform, type LintIssue, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';

// A small JSON Schema validator, compiled once into closures. TypeBox's Value/TypeCompiler only
// understand schemas built with Type.* (they refuse plain JSON Schema: "Unknown type"), so the
// keywords below are implemented here. Anything else is refused when the pipeline is loaded,
// rather than silently ignored.
const SUPPORTED = [
  'type',
  'enum',
  'const',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'items',
  'minItems',
  'maxItems',
  'uniqueItems',
  'properties',
  'required',
  'additionalProperties',
  'patternProperties',
  'minProperties',
  'maxProperties',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
];
/** Keywords that carry no constraint: accepted and ignored. */
const ANNOTATIONS = new Set(['$schema', '$id', '$comment', 'title', 'description', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly']);
const KNOWN = new Set(SUPPORTED);
const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null', 'object', 'array']);
const FORMATS: Record<string, (s: string) => boolean> = {
  'date-time': (s) => /^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$/.test(s) && !Number.isNaN(Date.parse(s)),
  date: (s) => /^\d{4}-\d\d-\d\d$/.test(s) && !Number.isNaN(Date.parse(s)),
  time: (s) => /^\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)?$/.test(s),
  email: (s) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s),
  ipv4: (s) => isIPv4(s),
  ipv6: (s) => isIPv6(s),
  uuid: (s) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s),
  hostname: (s) => s.length <= 253 && /^(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*$/i.test(s),
};
const SUPPORTED_TEXT = `${SUPPORTED.join(', ')}; format: ${Object.keys(FORMATS).join(', ')}`;

const config = Type.Object(
  {
    schema: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: `Inline JSON Schema each record must match. Supported keywords: ${SUPPORTED_TEXT}; annotations (title, description, $schema...) are ignored; others ($ref, if/then/else...) are refused.`,
      }),
    ),
    schema_file: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'Path of a JSON file holding the schema (instead of `schema`), read once when the pipeline starts; relative to the working directory.',
      }),
    ),
    mode: Type.Union([Type.Literal('dlq'), Type.Literal('drop'), Type.Literal('annotate')], {
      default: 'dlq',
      description:
        'What happens to an invalid record: dlq (a record error: skipped and counted, dead-lettered under on_error dlq), drop (dropped with a message only) or annotate (kept, with the problems in annotate_field).',
    }),
    annotate_field: Type.String({
      minLength: 1,
      default: '_validation_errors',
      description: 'annotate: field that receives the list of problems ("/path: message"); only invalid records get it.',
    }),
    max_errors: Type.Integer({ minimum: 1, default: 10, description: 'Most problems reported per record.' }),
  },
  { additionalProperties: false },
);

// ---- the compiler ----------------------------------------------------------------------------

interface Errs {
  list: string[];
  /** Keys and indexes from the record down to the value being checked. */
  path: (string | number)[];
  max: number;
}
/** Returns whether `v` matches; records problems in `e` (null: only the answer is wanted). */
type Check = (v: unknown, e: Errs | null) => boolean;

const pointer = (path: (string | number)[]) => (path.length ? '/' + path.map((p) => String(p).replaceAll('~', '~0').replaceAll('/', '~1')).join('/') : '/');
function fail(e: Errs | null, message: string): false {
  if (e && e.list.length < e.max) e.list.push(`${pointer(e.path)}: ${message}`);
  return false;
}
const typeOf = (v: unknown): string =>
  v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'number' ? (Number.isInteger(v) ? 'integer' : 'number') : typeof v;
const isType = (v: unknown, t: string): boolean =>
  t === 'integer'
    ? Number.isInteger(v)
    : t === 'number'
      ? typeof v === 'number'
      : t === 'object'
        ? typeof v === 'object' && v !== null && !Array.isArray(v)
        : t === 'array'
          ? Array.isArray(v)
          : t === 'null'
            ? v === null
            : typeof v === t;
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** JSON text with sorted keys: equality of JSON values for enum, const and uniqueItems. */
function canon(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canon).join(',')}]`;
  if (isObj(v))
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canon(v[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}
function codePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdbff) n++;
  }
  return n;
}

/** Compiles a JSON Schema; throws ConfigError naming the path of anything it cannot honour. */
export function compileSchema(schema: unknown, at = '#'): Check {
  if (schema === true) return () => true;
  if (schema === false) return (_v, e) => fail(e, 'no value is allowed here');
  if (!isObj(schema)) throw new ConfigError(`${at}: a schema must be an object or a boolean`);
  const bad = (k: string, why: string) => new ConfigError(`${at}/${k}: ${why}`);
  const num = (k: string): number | undefined => {
    const v = schema[k];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(k, 'must be a number');
    return v;
  };
  const checks: Check[] = [];
  for (const k of Object.keys(schema)) {
    if (k === '$ref') throw bad(k, `$ref is not supported: write the schema out in full (supported keywords: ${SUPPORTED_TEXT})`);
    if (!KNOWN.has(k) && !ANNOTATIONS.has(k) && k !== '$defs' && k !== 'definitions') throw bad(k, `keyword not supported (supported: ${SUPPORTED_TEXT})`);
  }

  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    for (const t of types) if (typeof t !== 'string' || !TYPES.has(t)) throw bad('type', `unknown type ${JSON.stringify(t)}`);
    const want = types as string[];
    const label = want.join(' or ');
    checks.push((v, e) => {
      for (let i = 0; i < want.length; i++) if (isType(v, want[i]!)) return true;
      return fail(e, `must be ${label} (got ${typeOf(v)})`);
    });
  }
  if (schema.enum !== undefined) {
    if (!Array.isArray(schema.enum)) throw bad('enum', 'must be an array');
    const allowed = new Set(schema.enum.map(canon));
    const shown = JSON.stringify(schema.enum);
    checks.push((v, e) => allowed.has(canon(v)) || fail(e, `must be one of ${shown}`));
  }
  if ('const' in schema) {
    const want = canon(schema.const);
    const shown = JSON.stringify(schema.const);
    checks.push((v, e) => canon(v) === want || fail(e, `must be ${shown}`));
  }

  // numbers
  const min = num('minimum');
  const max = num('maximum');
  if (typeof schema.exclusiveMinimum === 'boolean' || typeof schema.exclusiveMaximum === 'boolean') {
    throw bad(
      typeof schema.exclusiveMinimum === 'boolean' ? 'exclusiveMinimum' : 'exclusiveMaximum',
      'the draft-04 boolean form is not supported: give the bound as a number',
    );
  }
  const xmin = num('exclusiveMinimum');
  const xmax = num('exclusiveMaximum');
  const mult = num('multipleOf');
  if (mult !== undefined && mult <= 0) throw bad('multipleOf', 'must be greater than 0');
  if (min !== undefined) checks.push((v, e) => typeof v !== 'number' || v >= min || fail(e, `must be >= ${min}`));
  if (max !== undefined) checks.push((v, e) => typeof v !== 'number' || v <= max || fail(e, `must be <= ${max}`));
  if (xmin !== undefined) checks.push((v, e) => typeof v !== 'number' || v > xmin || fail(e, `must be > ${xmin}`));
  if (xmax !== undefined) checks.push((v, e) => typeof v !== 'number' || v < xmax || fail(e, `must be < ${xmax}`));
  if (mult !== undefined) {
    checks.push((v, e) => {
      if (typeof v !== 'number') return true;
      const q = v / mult;
      return Math.abs(q - Math.round(q)) < 1e-9 || fail(e, `must be a multiple of ${mult}`);
    });
  }

  // strings
  const minLen = num('minLength');
  const maxLen = num('maxLength');
  if (minLen !== undefined) checks.push((v, e) => typeof v !== 'string' || codePoints(v) >= minLen || fail(e, `must have at least ${minLen} characters`));
  if (maxLen !== undefined) checks.push((v, e) => typeof v !== 'string' || codePoints(v) <= maxLen || fail(e, `must have at most ${maxLen} characters`));
  if (schema.pattern !== undefined) {
    if (typeof schema.pattern !== 'string') throw bad('pattern', 'must be a string');
    let re: RegExp;
    try {
      re = new RegExp(schema.pattern, 'u');
    } catch (err) {
      throw bad('pattern', `invalid regular expression: ${errorMessage(err)}`);
    }
    const src = schema.pattern;
    checks.push((v, e) => typeof v !== 'string' || re.test(v) || fail(e, `must match pattern ${src}`));
  }
  if (schema.format !== undefined) {
    const f = schema.format;
    const test = typeof f === 'string' ? FORMATS[f] : undefined;
    if (!test || !Object.hasOwn(FORMATS, f as string))
      throw bad('format', `unknown format ${JSON.stringify(f)} (supported: ${Object.keys(FORMATS).join(', ')})`);
    checks.push((v, e) => typeof v !== 'string' || test(v) || fail(e, `must be a valid ${f as string}`));
  }

  // arrays
  if (schema.items !== undefined) {
    if (Array.isArray(schema.items)) throw bad('items', 'the array (tuple) form is not supported');
    const item = compileSchema(schema.items, `${at}/items`);
    checks.push((v, e) => {
      if (!Array.isArray(v)) return true;
      let ok = true;
      for (let i = 0; i < v.length; i++) {
        if (e) e.path.push(i);
        const r = item(v[i], e);
        if (e) e.path.pop();
        if (!r) {
          ok = false;
          if (!e) return false;
        }
      }
      return ok;
    });
  }
  const minItems = num('minItems');
  const maxItems = num('maxItems');
  if (minItems !== undefined) checks.push((v, e) => !Array.isArray(v) || v.length >= minItems || fail(e, `must have at least ${minItems} items`));
  if (maxItems !== undefined) checks.push((v, e) => !Array.isArray(v) || v.length <= maxItems || fail(e, `must have at most ${maxItems} items`));
  if (schema.uniqueItems === true) {
    checks.push((v, e) => {
      if (!Array.isArray(v)) return true;
      const seen = new Set<string>();
      for (let i = 0; i < v.length; i++) {
        const c = canon(v[i]);
        if (seen.has(c)) return fail(e, `items must be unique (item ${i} repeats an earlier one)`);
        seen.add(c);
      }
      return true;
    });
  }

  // objects
  if (schema.required !== undefined) {
    if (!Array.isArray(schema.required) || schema.required.some((r) => typeof r !== 'string')) throw bad('required', 'must be an array of field names');
    const req = schema.required as string[];
    checks.push((v, e) => {
      if (!isObj(v)) return true;
      let ok = true;
      for (let i = 0; i < req.length; i++) {
        if (v[req[i]!] !== undefined && Object.hasOwn(v, req[i]!)) continue;
        ok = false;
        if (!e) return false;
        fail(e, `missing required field '${req[i]}'`);
      }
      return ok;
    });
  }
  let props: [string, Check][] = [];
  if (schema.properties !== undefined) {
    if (!isObj(schema.properties)) throw bad('properties', 'must be an object');
    props = Object.entries(schema.properties).map(([k, s]) => [k, compileSchema(s, `${at}/properties/${k}`)]);
  }
  let patterns: [RegExp, Check][] = [];
  if (schema.patternProperties !== undefined) {
    if (!isObj(schema.patternProperties)) throw bad('patternProperties', 'must be an object');
    patterns = Object.entries(schema.patternProperties).map(([p, s]) => {
      try {
        return [new RegExp(p, 'u'), compileSchema(s, `${at}/patternProperties/${p}`)];
      } catch (err) {
        if (err instanceof ConfigError) throw err;
        throw bad('patternProperties', `invalid regular expression ${p}: ${errorMessage(err)}`);
      }
    });
  }
  const additional = schema.additionalProperties === undefined ? undefined : compileSchema(schema.additionalProperties, `${at}/additionalProperties`);
  if (props.length || patterns.length || additional) {
    const declared = new Set(props.map(([k]) => k));
    const forbidAll = schema.additionalProperties === false;
    checks.push((v, e) => {
      if (!isObj(v)) return true;
      let ok = true;
      const sub = (k: string, c: Check): boolean => {
        if (e) e.path.push(k);
        const r = c(v[k], e);
        if (e) e.path.pop();
        if (!r) ok = false;
        return r || !!e;
      };
      for (let i = 0; i < props.length; i++) {
        const [k, c] = props[i]!;
        if (v[k] === undefined || !Object.hasOwn(v, k)) continue;
        if (!sub(k, c)) return false;
      }
      if (patterns.length || additional) {
        for (const k in v) {
          if (!Object.hasOwn(v, k)) continue;
          let matched = declared.has(k);
          for (let i = 0; i < patterns.length; i++) {
            if (!patterns[i]![0].test(k)) continue;
            matched = true;
            if (!sub(k, patterns[i]![1])) return false;
          }
          if (matched || !additional) continue;
          if (forbidAll) {
            ok = false;
            if (!e) return false;
            fail(e, `field '${k}' is not allowed`);
          } else if (!sub(k, additional)) return false;
        }
      }
      return ok;
    });
  }
  const minProps = num('minProperties');
  const maxProps = num('maxProperties');
  if (minProps !== undefined) checks.push((v, e) => !isObj(v) || Object.keys(v).length >= minProps || fail(e, `must have at least ${minProps} fields`));
  if (maxProps !== undefined) checks.push((v, e) => !isObj(v) || Object.keys(v).length <= maxProps || fail(e, `must have at most ${maxProps} fields`));

  // combinators
  const list = (k: string): Check[] | undefined => {
    const l = schema[k];
    if (l === undefined) return undefined;
    if (!Array.isArray(l) || l.length === 0) throw bad(k, 'must be a non-empty array of schemas');
    return l.map((s, i) => compileSchema(s, `${at}/${k}/${i}`));
  };
  const allOf = list('allOf');
  const anyOf = list('anyOf');
  const oneOf = list('oneOf');
  if (allOf) {
    checks.push((v, e) => {
      let ok = true;
      for (const c of allOf) if (!c(v, e)) ok = false;
      return ok;
    });
  }
  if (anyOf) checks.push((v, e) => anyOf.some((c) => c(v, null)) || fail(e, 'must match at least one schema of anyOf'));
  if (oneOf) {
    checks.push((v, e) => {
      let n = 0;
      for (const c of oneOf) if (c(v, null)) n++;
      return n === 1 || fail(e, `must match exactly one schema of oneOf (matches ${n})`);
    });
  }
  if (schema.not !== undefined) {
    const not = compileSchema(schema.not, `${at}/not`);
    checks.push((v, e) => !not(v, null) || fail(e, 'must not match the schema of not'));
  }

  if (checks.length === 0) return () => true;
  if (checks.length === 1) return checks[0]!;
  return (v, e) => {
    let ok = true;
    for (let i = 0; i < checks.length; i++) {
      if (checks[i]!(v, e)) continue;
      ok = false;
      if (!e) return false;
    }
    return ok;
  };
}

function loadSchema(c: { schema?: Record<string, unknown>; schema_file?: string }): unknown {
  if ((c.schema === undefined) === (c.schema_file === undefined)) throw new ConfigError('validate: give exactly one of schema or schema_file');
  if (c.schema !== undefined) return c.schema;
  let text: string;
  try {
    text = readFileSync(c.schema_file!, 'utf8');
  } catch (err) {
    throw new ConfigError(`validate: cannot read schema_file ${c.schema_file}: ${errorMessage(err)}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new ConfigError(`validate: schema_file ${c.schema_file} is not valid JSON: ${errorMessage(err)}`);
  }
}

export default defineTransform({
  key: 'validate',
  summary: 'Check each record against a JSON Schema; drop, dead-letter or annotate the records that do not match.',
  config,
  lint(c) {
    const issues: LintIssue[] = [];
    if (c.schema === undefined && c.schema_file === undefined) issues.push({ path: 'schema', message: 'give schema or schema_file' });
    if (c.schema !== undefined && c.schema_file !== undefined) issues.push({ path: 'schema_file', message: 'give schema or schema_file, not both' });
    if (c.schema !== undefined) {
      try {
        compileSchema(c.schema);
      } catch (err) {
        issues.push({ path: 'schema', message: errorMessage(err) });
      }
    }
    if (c.mode !== 'annotate' && c.annotate_field !== '_validation_errors')
      issues.push({ path: 'annotate_field', message: `applies to mode annotate only (mode is ${c.mode})` });
    return issues;
  },
  examples: [
    {
      title: 'Dead-letter CDRs without a valid IMSI',
      yaml: "type: validate\nmode: dlq\nschema:\n  type: object\n  required: [imsi, duration]\n  properties:\n    imsi: { type: string, pattern: '^[0-9]{14,15}$' }\n    duration: { type: integer, minimum: 0 }",
    },
    {
      title: 'Flag records against a schema file, keep them all',
      yaml: 'type: validate\nschema_file: /etc/svc/schemas/cdr.json\nmode: annotate\nannotate_field: problems',
    },
  ],
  create(c) {
    const check = compileSchema(loadSchema(c));
    const mode = c.mode;
    const field = c.annotate_field;
    // One reusable collector: apply is synchronous, the list is copied only for invalid records.
    const errs: Errs = { list: [], path: [], max: c.max_errors };
    return {
      apply(r: Rec, ctx) {
        // Valid records cost one pass without collecting anything.
        if (check(r, null)) return r;
        errs.list.length = 0;
        errs.path.length = 0;
        check(r, errs);
        if (mode === 'annotate') {
          setField(r, field, errs.list.slice());
          return r;
        }
        const msg = `validate: record does not match the schema: ${errs.list.join('; ')}`;
        if (mode === 'drop') {
          ctx.note(msg);
          return null;
        }
        throw new RecordError(msg);
      },
    };
  },
});
