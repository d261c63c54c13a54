// Turns TypeBox validation errors into human diagnostics: "expected integer, got "three"",
// "unknown key 'retry_cuont' (did you mean 'retry_count'?)", "must be one of 'a', 'b'".
import { closest, distance } from 'fastest-levenshtein';
import { Kind, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import type { DiagnosticCode } from './diagnostics.js';

export interface SchemaIssue {
  /** Path segments relative to the validated object. */
  path: (string | number)[];
  code: DiagnosticCode;
  message: string;
  /** Points at the key itself rather than its value (unknown keys). */
  atKey?: boolean;
  /** The key suggested for an unknown key. */
  hint?: string;
}

export function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? v.slice(0, 37) + '...' : v);
  return String(v);
}

const TYPE_NAMES: Partial<Record<ValueErrorType, string>> = {
  [ValueErrorType.Integer]: 'integer',
  [ValueErrorType.Number]: 'number',
  [ValueErrorType.String]: 'string',
  [ValueErrorType.Boolean]: 'boolean (true or false)',
  [ValueErrorType.Object]: 'a mapping',
  [ValueErrorType.Array]: 'a list',
  [ValueErrorType.Null]: 'null',
};

/** A key name suggestion within edit distance of about a third of the name. */
export function suggest(name: string, candidates: readonly string[]): string | undefined {
  if (candidates.length === 0) return undefined;
  const best = closest(name, candidates as string[]);
  return distance(name, best) <= Math.max(2, Math.floor(name.length / 3)) ? best : undefined;
}

const literals = (s: TSchema): unknown[] | undefined => {
  if (s[Kind] === 'Literal') return [s.const];
  if (s[Kind] === 'Union') {
    const all = (s.anyOf as TSchema[]).map(literals);
    return all.every(Boolean) ? all.flat() : undefined;
  }
  return undefined;
};

const fmtOptions = (vals: unknown[]) => vals.map((v) => (typeof v === 'string' ? `'${v}'` : String(v))).join(', ');

export function typeOf(s: TSchema): string {
  const lits = literals(s);
  if (lits) return `one of ${fmtOptions(lits)}`;
  switch (s[Kind]) {
    case 'Union':
      return (s.anyOf as TSchema[]).map(typeOf).join(' or ');
    case 'Integer':
      return 'integer';
    case 'Number':
      return 'number';
    case 'String':
      return 'string';
    case 'Boolean':
      return 'boolean';
    case 'Null':
      return 'null';
    case 'Array':
      return 'a list';
    case 'Object':
    case 'Record':
      return 'a mapping';
    default:
      return String(s[Kind] ?? 'value').toLowerCase();
  }
}

const toSegments = (pointer: string) =>
  pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p));

function issueOf(e: ValueError, knownKeys: (path: (string | number)[]) => readonly string[]): SchemaIssue | undefined {
  const path = toSegments(e.path);
  const got = describeValue(e.value);
  switch (e.type) {
    case ValueErrorType.ObjectAdditionalProperties: {
      const key = String(path[path.length - 1]);
      const hint = suggest(key, knownKeys(path.slice(0, -1)));
      return { path, atKey: true, hint, code: 'CFG_UNKNOWN_KEY', message: `unknown key '${key}'${hint ? ` (did you mean '${hint}'?)` : ''}` };
    }
    case ValueErrorType.ObjectRequiredProperty:
      return { path, code: 'CFG_REQUIRED', message: 'is required' };
    case ValueErrorType.Literal:
      return { path, code: 'CFG_INVALID_OPTION', message: `must be ${fmtOptions([e.schema.const])}, got ${got}` };
    case ValueErrorType.Union: {
      const lits = literals(e.schema);
      if (lits) return { path, code: 'CFG_INVALID_OPTION', message: `must be one of ${fmtOptions(lits)}, got ${got}` };
      return { path, code: 'CFG_TYPE', message: `expected ${typeOf(e.schema)}, got ${got}` };
    }
    case ValueErrorType.Kind:
      return undefined;
    default: {
      const t = TYPE_NAMES[e.type];
      if (t) return { path, code: 'CFG_TYPE', message: `expected ${t}, got ${got}` };
      return { path, code: 'CFG_RANGE', message: `${e.message.charAt(0).toLowerCase()}${e.message.slice(1)}, got ${got}` };
    }
  }
}

/** Object schema at a relative path (for key suggestions). */
function schemaAt(schema: TSchema, path: (string | number)[]): TSchema | undefined {
  let s: TSchema | undefined = schema;
  for (const seg of path) {
    if (!s) return undefined;
    if (s[Kind] === 'Object') s = s.properties?.[seg as string];
    else if (s[Kind] === 'Array') s = s.items as TSchema;
    else if (s[Kind] === 'Record') s = Object.values(s.patternProperties ?? {})[0] as TSchema;
    else return undefined;
  }
  return s;
}

/**
 * Validates `value` against `schema`: returns the value with defaults applied and strings converted
 * where the schema wants numbers or booleans (interpolated `${VAR}`s are strings), plus all issues.
 * `extraKeys` are keys handled elsewhere (sink common fields): not reported, but suggested.
 */
export function checkAgainst(schema: TSchema, value: unknown, extraKeys: readonly string[] = []): { value: unknown; issues: SchemaIssue[] } {
  let v = Value.Clone(value);
  v = Value.Convert(schema, v);
  v = Value.Default(schema, v);
  const issues: SchemaIssue[] = [];
  const knownKeys = (p: (string | number)[]) => {
    const s = schemaAt(schema, p);
    const own = s && s[Kind] === 'Object' ? Object.keys(s.properties ?? {}) : [];
    return p.length === 0 ? [...own, ...extraKeys] : own;
  };
  for (const e of Value.Errors(schema, v)) {
    const issue = issueOf(e, knownKeys);
    if (!issue) continue;
    // A union of objects reports itself and every member: keep the first issue per path.
    if (issues.some((i) => i.path.join('\0') === issue.path.join('\0'))) continue;
    issues.push(issue);
  }
  // A misspelt required key shows up twice (unknown 'feilds', missing 'fields'): keep the first.
  const suggested = new Set(issues.filter((i) => i.hint !== undefined).map((i) => [...i.path.slice(0, -1), i.hint].join('\0')));
  return { value: v, issues: issues.filter((i) => !(i.code === 'CFG_REQUIRED' && suggested.has(i.path.join('\0')))) };
}
