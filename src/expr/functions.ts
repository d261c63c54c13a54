// The built-in functions: the only things an expression can call. Each takes its arguments
// positionally (no arrays built per call) plus the call's Site for error messages.
//
// Null handling: a missing field is null, so functions whose first argument is the subject
// (lower(x), int(x), ...) return null for a null subject, and predicates (startswith, matches, ...)
// return false; a wrong non-null type is an error naming the function.
import { charge, checkList, checkString, exprBudget, textSteps } from './budget.js';
import { fail, quote, type Site } from './errors.js';
import { REGEX_LIMITS, type SafeRegex } from './regex.js';
import { contains, isMap, orderStrict, toStr, truthy, typeName } from './values.js';

type Fixed = (site: Site, a: unknown, b: unknown, c: unknown) => unknown;
type Variadic = (site: Site, args: readonly unknown[]) => unknown;

export interface FunctionSpec {
  /** Signature as documented and shown in arity errors. */
  readonly signature: string;
  readonly minArgs: number;
  readonly maxArgs: number;
  /** Same arguments, same result: may be evaluated at compile time when the arguments are constant. */
  readonly pure: boolean;
  /**
   * fixed: called with the arguments positionally; variadic: with an array;
   * special: compiled by the compiler itself (lazy arguments, or an argument that is a field path).
   */
  readonly call: { kind: 'fixed'; fn: Fixed } | { kind: 'variadic'; fn: Variadic } | { kind: 'special' };
  /** Index of an argument that must be a constant pattern; the function receives a SafeRegex. */
  readonly regexArg?: number;
}

// ---- argument checks ------------------------------------------------------------------------------

function str(fn: string, v: unknown, site: Site, what = 'a string'): string {
  if (typeof v !== 'string') fail(`${fn}() expects ${what}, got ${typeName(v)}`, site);
  return v;
}

function num(fn: string, v: unknown, site: Site): number {
  if (typeof v !== 'number') fail(`${fn}() expects a number, got ${typeName(v)}`, site);
  return v;
}

function integer(fn: string, what: string, v: unknown, site: Site): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) fail(`${fn}(): ${what} must be an integer, got ${typeName(v) === 'number' ? v : typeName(v)}`, site);
  return v;
}

/** Occurrences of `sub` (not empty) in `s`, without building anything; stops counting after `max`. */
function occurrences(s: string, sub: string, max: number): number {
  let n = 0;
  for (let i = s.indexOf(sub); i !== -1 && n <= max; i = s.indexOf(sub, i + sub.length)) n++;
  return n;
}

// ---- conversions ----------------------------------------------------------------------------------

const DIGITS = '0123456789abcdefghijklmnopqrstuvwxyz';
const PREFIXES: Readonly<Record<number, string>> = { 16: '0x', 8: '0o', 2: '0b' };

/** Python int(s, base): optional sign and surrounding whitespace, 0x/0o/0b prefix for its base. */
function parseInteger(s: string, base: number, site: Site): number {
  let t = s.trim().toLowerCase();
  let sign = 1;
  if (t.startsWith('-') || t.startsWith('+')) {
    if (t[0] === '-') sign = -1;
    t = t.slice(1);
  }
  const prefix = PREFIXES[base];
  if (prefix !== undefined && t.startsWith(prefix)) t = t.slice(2);
  charge(textSteps(t.length), site);
  let valid = t.length > 0;
  for (let i = 0; valid && i < t.length; i++) {
    const d = DIGITS.indexOf(t[i] as string);
    valid = d >= 0 && d < base;
  }
  if (!valid) fail(`int(): invalid literal for base ${base}: ${quote(s)}`, site);
  const value = parseInt(t, base);
  if (!Number.isFinite(value)) fail(`int(): ${quote(s)} is too large`, site);
  return sign * value;
}

function toInt(site: Site, v: unknown, base: unknown): unknown {
  if (v === null) return null;
  if (base !== undefined) {
    const b = integer('int', 'base', base, site);
    if (b < 2 || b > 36) fail(`int(): base must be between 2 and 36, got ${b}`, site);
    return parseInteger(str('int', v, site, 'a string when a base is given'), b, site);
  }
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) fail(`int(): cannot convert ${v} to an integer`, site);
    return Math.trunc(v) + 0; // + 0 turns -0 into 0
  }
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string') return parseInteger(v, 10, site);
  if (typeof v === 'bigint') return Number(v);
  return fail(`int() expects a number or a string, got ${typeName(v)}`, site);
}

const FLOAT_SYNTAX = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

function toFloat(site: Site, v: unknown): unknown {
  if (v === null) return null;
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string') {
    const t = v.trim();
    charge(textSteps(t.length), site);
    if (!FLOAT_SYNTAX.test(t)) fail(`float(): invalid number ${quote(v)}`, site);
    return Number(t);
  }
  return fail(`float() expects a number or a string, got ${typeName(v)}`, site);
}

/** Round half to even, like Python's round(). */
function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return (Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r) + 0;
}

/**
 * round(x, n) for n > 0, exactly as Python: on the exact binary value, so round(2.675, 2) is 2.67
 * (2.675 is really 2.67499...). toFixed() rounds the exact value too, but sends exact ties away
 * from zero; Python sends them to the even digit, so ties are found on the exact expansion.
 */
function roundDecimals(x: number, n: number): number {
  const away = Number(x.toFixed(n)) + 0;
  const exact = Math.abs(x).toFixed(100);
  const dot = exact.indexOf('.');
  if (dot < 0) return away; // exponent notation: |x| >= 1e21, an integer already
  const frac = exact.slice(dot + 1);
  const tie = frac[n] === '5' && /^0*$/.test(frac.slice(n + 1));
  if (!tie || Number(frac[n - 1]) % 2 !== 0) return away;
  return (x < 0 ? -1 : 1) * Number(exact.slice(0, dot + 1 + n)) + 0;
}

function round(site: Site, v: unknown, ndigits: unknown): unknown {
  if (v === null) return null;
  const x = num('round', v, site);
  const n = ndigits === undefined || ndigits === null ? 0 : integer('round', 'ndigits', ndigits, site);
  if (!Number.isFinite(x)) return x;
  if (n === 0) return roundHalfEven(x);
  if (n > 0) return n > 99 ? x : roundDecimals(x, n);
  if (n < -308) return 0;
  const f = 10 ** -n;
  return roundHalfEven(x / f) * f;
}

function extreme(name: 'min' | 'max', site: Site, args: readonly unknown[]): unknown {
  let values = args;
  if (args.length === 1) {
    const only = args[0];
    if (!Array.isArray(only)) fail(`${name}() with one argument expects a list, got ${typeName(only)}`, site);
    values = only;
  }
  if (values.length === 0) fail(`${name}() of an empty list`, site);
  charge(values.length, site);
  let best: unknown = values[0] ?? null;
  for (let i = 1; i < values.length; i++) {
    const v: unknown = values[i] ?? null;
    const c = orderStrict(v, best, `${name}()`, site);
    if (name === 'min' ? c < 0 : c > 0) best = v;
  }
  return best;
}

// ---- strings --------------------------------------------------------------------------------------

/** startswith/endswith: the affix may be a string or a list of strings (any of them), as in Python. */
function affix(name: 'startswith' | 'endswith', site: Site, s: unknown, a: unknown): boolean {
  if (s === null) return false;
  const subject = str(name, s, site);
  if (!Array.isArray(a)) return hasAffix(name, subject, a, site);
  charge(1 + a.length, site);
  for (const x of a) if (hasAffix(name, subject, x, site)) return true;
  return false;
}

function hasAffix(name: 'startswith' | 'endswith', subject: string, affix: unknown, site: Site): boolean {
  const p = str(name, affix, site, 'a string or a list of strings to look for');
  return name === 'startswith' ? subject.startsWith(p) : subject.endsWith(p);
}

function replace(site: Site, s: unknown, old: unknown, by: unknown): unknown {
  if (s === null) return null;
  const subject = str('replace', s, site);
  const o = str('replace', old, site, 'a string to replace');
  const b = str('replace', by, site, 'a replacement string');
  charge(textSteps(subject.length), site);
  // Counted, not split: the pieces of a big subject would be the allocation this check prevents.
  const count = o === '' ? subject.length + 1 : b.length > o.length ? occurrences(subject, o, subject.length) : 0;
  checkString('replace()', subject.length + count * (b.length - o.length), site);
  // A function, so that '$&' or '$`' in the new text is text (as in Python), not a pattern that
  // would copy the match or everything before it into each replacement.
  return subject.replaceAll(o, () => b);
}

function split(site: Site, s: unknown, sep: unknown): unknown {
  if (s === null) return null;
  const subject = str('split', s, site);
  const { maxListLength } = exprBudget();
  charge(textSteps(subject.length), site);
  if (sep === undefined || sep === null) {
    // No separator: split on runs of whitespace and drop empty strings (Python's split()).
    const t = subject.trim();
    if (t === '') return [];
    let pieces = 1;
    for (WHITESPACE_RUN.lastIndex = 0; pieces <= maxListLength && WHITESPACE_RUN.test(t); ) pieces++;
    checkList('split()', pieces, t.length, pieces > maxListLength, site);
    charge(pieces, site);
    return t.split(/\s+/);
  }
  const p = str('split', sep, site, 'a separator string');
  if (p === '') fail('split(): empty separator', site);
  const pieces = occurrences(subject, p, maxListLength) + 1;
  checkList('split()', pieces, subject.length - (pieces - 1) * p.length, pieces > maxListLength, site);
  charge(pieces, site);
  return subject.split(p);
}

function join(site: Site, list: unknown, sep: unknown): unknown {
  if (list === null) return null;
  if (!Array.isArray(list)) fail(`join() expects a list, got ${typeName(list)}`, site);
  const p = str('join', sep, site, 'a separator string');
  // The pieces are added up as they are made: the join is refused before it is built.
  const { maxStringLength } = exprBudget();
  charge(list.length, site);
  const parts: string[] = [];
  let length = Math.max(0, list.length - 1) * p.length;
  for (let i = 0; i < list.length && length <= maxStringLength; i++) {
    const piece = toStr(list[i] ?? null, site);
    length += piece.length;
    parts.push(piece);
  }
  checkString('join()', length, site);
  return parts.join(p);
}

function len(site: Site, v: unknown): unknown {
  if (v === null) return null;
  if (typeof v === 'string' || Array.isArray(v)) return v.length;
  if (isMap(v)) {
    const n = Object.keys(v).length;
    charge(1 + n, site);
    return n;
  }
  return fail(`len() expects a string, list or object, got ${typeName(v)}`, site);
}

/** lower/upper/strip: the result is about as long as the subject (upper('ß') is 'SS'), so both are checked. */
const WHITESPACE_RUN = /\s+/g;

const stringFn =
  (name: string, f: (s: string) => string): Fixed =>
  (site, v) => {
    if (v === null) return null;
    const subject = str(name, v, site);
    if (subject.length > exprBudget().maxStringLength && name !== 'strip') checkString(`${name}()`, subject.length, site);
    const out = f(subject);
    checkString(`${name}()`, out.length, site);
    return out;
  };

// ---- regular expressions --------------------------------------------------------------------------

function matches(site: Site, s: unknown, re: unknown): boolean {
  if (s === null) return false;
  const subject = str('matches', s, site);
  charge(textSteps(Math.min(subject.length, REGEX_LIMITS.maxInputLength)), site);
  return (re as SafeRegex).test(subject);
}

function search(site: Site, s: unknown, re: unknown, group: unknown): unknown {
  if (s === null) return null;
  const subject = str('search', s, site);
  charge(textSteps(Math.min(subject.length, REGEX_LIMITS.maxInputLength)), site);
  const m = (re as SafeRegex).exec(subject);
  if (m === null) return null;
  if (group === undefined) return m[0];
  if (typeof group === 'string') {
    if (m.groups === undefined || !(group in m.groups)) fail(`search(): pattern has no group named ${quote(group)}`, site);
    return m.groups[group] ?? null;
  }
  const g = integer('search', 'group', group, site);
  if (g < 0 || g >= m.length) fail(`search(): pattern has no group ${g}`, site);
  return m[g] ?? null;
}

// ---- the table ------------------------------------------------------------------------------------

const fixed = (signature: string, minArgs: number, maxArgs: number, fn: Fixed, extra: Partial<FunctionSpec> = {}): FunctionSpec => ({
  signature,
  minArgs,
  maxArgs,
  pure: true,
  call: { kind: 'fixed', fn },
  ...extra,
});

export const FUNCTIONS: Readonly<Record<string, FunctionSpec>> = Object.freeze({
  len: fixed('len(x)', 1, 1, len),
  lower: fixed(
    'lower(s)',
    1,
    1,
    stringFn('lower', (s) => s.toLowerCase()),
  ),
  upper: fixed(
    'upper(s)',
    1,
    1,
    stringFn('upper', (s) => s.toUpperCase()),
  ),
  strip: fixed(
    'strip(s)',
    1,
    1,
    stringFn('strip', (s) => s.trim()),
  ),
  str: fixed('str(x)', 1, 1, (site, v) => toStr(v, site)),
  int: fixed('int(x, base=10)', 1, 2, toInt),
  float: fixed('float(x)', 1, 1, toFloat),
  bool: fixed('bool(x)', 1, 1, (_site, v) => truthy(v)),
  round: fixed('round(x, ndigits=0)', 1, 2, round),
  abs: fixed('abs(x)', 1, 1, (site, v) => (v === null ? null : Math.abs(num('abs', v, site)))),
  min: {
    signature: 'min(a, b, ...) or min(list)',
    minArgs: 1,
    maxArgs: Infinity,
    pure: true,
    call: { kind: 'variadic', fn: (site, args) => extreme('min', site, args) },
  },
  max: {
    signature: 'max(a, b, ...) or max(list)',
    minArgs: 1,
    maxArgs: Infinity,
    pure: true,
    call: { kind: 'variadic', fn: (site, args) => extreme('max', site, args) },
  },
  startswith: fixed('startswith(s, prefix)', 2, 2, (site, s, p) => affix('startswith', site, s, p)),
  endswith: fixed('endswith(s, suffix)', 2, 2, (site, s, p) => affix('endswith', site, s, p)),
  contains: fixed('contains(container, item)', 2, 2, (site, c, x) => contains(c, x, site)),
  replace: fixed('replace(s, old, new)', 3, 3, replace),
  split: fixed('split(s, sep=whitespace)', 1, 2, split),
  join: fixed('join(list, sep)', 2, 2, join),
  matches: fixed('matches(s, pattern)', 2, 2, matches, { regexArg: 1 }),
  search: fixed('search(s, pattern, group=0)', 2, 3, search, { regexArg: 1 }),
  coalesce: { signature: 'coalesce(a, b, ...)', minArgs: 1, maxArgs: Infinity, pure: true, call: { kind: 'special' } },
  exists: { signature: 'exists(field)', minArgs: 1, maxArgs: 1, pure: true, call: { kind: 'special' } },
  now: fixed('now()', 0, 0, () => new Date().toISOString(), { pure: false }),
  now_epoch: fixed('now_epoch()', 0, 0, () => Date.now() / 1000, { pure: false }),
} satisfies Record<string, FunctionSpec>);

export const FUNCTION_NAMES: readonly string[] = Object.keys(FUNCTIONS).sort();
