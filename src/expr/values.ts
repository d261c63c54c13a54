// Runtime semantics shared by the compiled closures and the functions: truthiness, equality,
// ordering, membership, field access and the type-checked operators. The compiler inlines the
// number fast paths; these are the general (slower) cases, and the place where type errors are
// raised with the operator and the offending types named.
import { charge, checkList, checkString, exprBudget, MAX_VALUE_DEPTH, tally, textSteps, weigh } from './budget.js';
import { fail, type Site } from './errors.js';

const hasOwn = Object.prototype.hasOwnProperty;

/** A JSON-style object (not a list, not null): the only thing `.name` and `['key']` look into. */
export function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Language-level type names for messages: number, string, bool, null, list, object. */
export function typeName(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  switch (typeof v) {
    case 'boolean':
      return 'bool';
    case 'object':
      return Array.isArray(v) ? 'list' : 'object';
    default:
      return typeof v;
  }
}

/** Python truthiness: null, false, 0, '', [] and {} are false; everything else (even NaN) is true. */
export function truthy(v: unknown): boolean {
  if (typeof v === 'boolean') return v;
  if (v === null || v === undefined) return false;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'string') return v.length > 0;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') {
    for (const k in v) if (hasOwn.call(v, k)) return true;
    return false;
  }
  if (typeof v === 'bigint') return v !== 0n;
  return true;
}

// ---- access ---------------------------------------------------------------------------------------

/** Own property `key` of an object, or null: never the prototype chain, never undefined. */
export function getKey(obj: unknown, key: string): unknown {
  if (!isMap(obj) || !hasOwn.call(obj, key)) return null;
  const v = obj[key];
  return v === undefined ? null : v;
}

/** `obj[i]` for lists and strings, Python-style negative indexes; out of range is null. */
export function getItem(obj: unknown, i: number): unknown {
  if (typeof obj === 'string') {
    const j = i < 0 ? obj.length + i : i;
    return j >= 0 && j < obj.length ? obj[j] : null;
  }
  if (!Array.isArray(obj)) return null;
  const j = i < 0 ? obj.length + i : i;
  if (!(j >= 0 && j < obj.length)) return null;
  const v: unknown = obj[j];
  return v === undefined ? null : v;
}

/** `obj[key]` with a key only known at run time. */
export function getIndex(obj: unknown, key: unknown, site: Site): unknown {
  if (typeof key === 'string') return getKey(obj, key);
  if (typeof key === 'number') {
    if (!Number.isInteger(key)) fail(`index must be an integer, got ${key}`, site);
    return getItem(obj, key);
  }
  if (key === null) return null;
  return fail(`index must be a string or an integer, got ${typeName(key)}`, site);
}

// ---- equality and ordering ------------------------------------------------------------------------

/** `==`: values of different types are simply unequal; lists and objects compare by content. */
export function equals(a: unknown, b: unknown, site?: Site, depth = 0): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (depth > MAX_VALUE_DEPTH) fail(`values are nested more than ${MAX_VALUE_DEPTH} levels deep`, site);
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    charge(1 + a.length, site);
    for (let i = 0; i < a.length; i++) if (!equals(a[i] ?? null, b[i] ?? null, site, depth + 1)) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a);
  charge(1 + ka.length, site);
  if (ka.length !== Object.keys(b).length) return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  for (const k of ka) if (!hasOwn.call(rb, k) || !equals(ra[k] ?? null, rb[k] ?? null, site, depth + 1)) return false;
  return true;
}

/**
 * Three-way comparison for < <= > >=: negative, zero or positive; NaN when either side is null
 * (a missing field), which makes every ordering comparison false instead of an error.
 * Numbers order with numbers, strings with strings, lists lexicographically; anything else is a
 * type error naming the operator.
 */
export function order(a: unknown, b: unknown, op: string, site: Site, depth = 0): number {
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : a === b ? 0 : NaN;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (a === null || b === null || a === undefined || b === undefined) return NaN;
  if (Array.isArray(a) && Array.isArray(b)) {
    if (depth > MAX_VALUE_DEPTH) fail(`values are nested more than ${MAX_VALUE_DEPTH} levels deep`, site);
    const n = Math.min(a.length, b.length);
    charge(1 + n, site);
    for (let i = 0; i < n; i++) {
      const x: unknown = a[i] ?? null;
      const y: unknown = b[i] ?? null;
      if (!equals(x, y, site)) return order(x, y, op, site, depth + 1);
    }
    return a.length - b.length;
  }
  return fail(`'${op}' is not supported between '${typeName(a)}' and '${typeName(b)}'`, site);
}

/** Like order() but null is an error too: for min() and max(), where "false" has no meaning. */
export function orderStrict(a: unknown, b: unknown, op: string, site: Site): number {
  if (a === null || b === null) fail(`${op} cannot compare '${typeName(a)}' and '${typeName(b)}'`, site);
  return order(a, b, op, site);
}

/** `item in container`: list membership, substring, or object key. Anything `in` null is false. */
export function contains(container: unknown, item: unknown, site: Site): boolean {
  if (typeof container === 'string') {
    if (typeof item !== 'string') fail(`'in <string>' requires a string on the left, got ${typeName(item)}`, site);
    charge(textSteps(container.length), site);
    return container.includes(item);
  }
  if (Array.isArray(container)) {
    charge(1 + container.length, site);
    for (const x of container) if (equals(x ?? null, item, site)) return true;
    return false;
  }
  if (container === null || container === undefined) return false;
  if (isMap(container)) return typeof item === 'string' && hasOwn.call(container, item) && container[item] !== undefined;
  return fail(`'in' needs a list, string or object on the right, got ${typeName(container)}`, site);
}

// ---- conversion -----------------------------------------------------------------------------------

/** str(): strings as they are, everything else as JSON would write it (true, null, [1, "a"]). */
export function toStr(v: unknown, site?: Site): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (typeof v === 'object') {
    // JSON is at least one character per element plus the text it holds: refused from that count
    // before anything is written, and checked again on what was written (numbers may be longer).
    const max = exprBudget().maxStringLength;
    weigh(v, max, max, site, `str() cannot convert this ${typeName(v)}: `);
    if (tally.elements + tally.chars > max) checkString('str()', tally.elements + tally.chars, site);
    let out: string;
    try {
      out = JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? String(x) : x)) ?? 'null';
    } catch (e) {
      // First line only: V8's message for a cycle goes on to draw it.
      const reason = (e instanceof Error ? e.message : String(e)).split('\n')[0];
      return fail(`str() cannot convert this ${typeName(v)}: ${reason}`, site);
    }
    checkString('str()', out.length, site);
    return out;
  }
  return fail(`str() cannot convert a ${typeName(v)}`, site);
}

// ---- arithmetic: the non-number cases (numbers are handled inline by the compiler) ------------------

const unsupported = (op: string, a: unknown, b: unknown, site: Site): never =>
  fail(`unsupported operand types for ${op}: '${typeName(a)}' and '${typeName(b)}'`, site);

export function add(a: unknown, b: unknown, site: Site): unknown {
  if (typeof a === 'number' && typeof b === 'number') return a + b;
  if (typeof a === 'string' && typeof b === 'string') {
    checkString("'+'", a.length + b.length, site);
    return a + b;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    // Concatenation copies, so a long a + b + c + ... chain of big lists would be quadratic: each
    // copy is charged, and the result is weighed whole (nested lists included).
    const { maxListLength, maxStringLength } = exprBudget();
    weigh(a, maxListLength, maxStringLength, site);
    const { elements, chars, cut } = tally;
    weigh(b, maxListLength - elements, maxStringLength - chars, site);
    checkList("'+'", elements + tally.elements, chars + tally.chars, cut || tally.cut, site);
    charge(a.length + b.length, site);
    return a.concat(b);
  }
  return unsupported('+', a, b, site);
}

/** Numbers only: '-', '/', '//', '%', '**' and the number case of '*'. */
export function arithmetic(op: '-' | '*' | '/' | '//' | '%' | '**', a: unknown, b: unknown, site: Site): number {
  if (typeof a !== 'number' || typeof b !== 'number') return unsupported(op, a, b, site);
  switch (op) {
    case '-':
      return a - b;
    case '*':
      return a * b;
    case '/':
      if (b === 0) fail('division by zero', site);
      return a / b;
    case '//':
      if (b === 0) fail('integer division by zero', site);
      return Math.floor(a / b);
    case '%': {
      if (b === 0) fail('modulo by zero', site);
      // Python: the result takes the sign of the divisor, so -7 % 3 == 2.
      const r = a % b;
      return r !== 0 && r < 0 !== b < 0 ? r + b : r;
    }
    case '**': {
      if (a === 0 && b < 0) fail('zero cannot be raised to a negative power', site);
      const r = a ** b;
      // A negative base with a fractional exponent would be complex in Python: refuse.
      if (Number.isNaN(r) && !Number.isNaN(a) && !Number.isNaN(b)) fail(`${a} ** ${b} is not a real number`, site);
      if (!Number.isFinite(r) && Number.isFinite(a) && Number.isFinite(b)) fail(`result of ${a} ** ${b} is too large`, site);
      return r;
    }
  }
}

/** `*`: numbers, or string/list repetition by an integer (capped, so 'a' * 10**9 fails fast). */
export function multiply(a: unknown, b: unknown, site: Site): unknown {
  if (typeof a === 'number' && typeof b === 'number') return a * b;
  const [seq, times] = typeof a === 'number' ? [b, a] : [a, b];
  if ((typeof seq === 'string' || Array.isArray(seq)) && typeof times === 'number') {
    if (!Number.isInteger(times)) fail(`can only repeat a ${typeName(seq)} by an integer, got ${times}`, site);
    // An empty sequence stays empty however often it is repeated (and must not loop 1e300 times).
    const n = seq.length === 0 ? 0 : Math.max(0, times);
    if (typeof seq === 'string') {
      checkString("'*'", seq.length * n, site);
      return seq.repeat(n);
    }
    if (n === 0) return [];
    // The whole result is weighed: n copies of everything seq holds, nested lists included, so
    // [[[x] * 60000] * 60000] * 60000 is refused as the 2e14 elements it would take to write out.
    const { maxListLength, maxStringLength } = exprBudget();
    weigh(seq, maxListLength / n, maxStringLength / n, site);
    checkList("'*'", tally.elements * n, tally.chars * n, tally.cut, site);
    charge(seq.length * n, site);
    const out: unknown[] = [];
    for (let i = 0; i < n; i++) for (const x of seq) out.push(x);
    return out;
  }
  return unsupported('*', a, b, site);
}

export function negate(op: '-' | '+', v: unknown, site: Site): number {
  if (typeof v !== 'number') fail(`bad operand type for unary ${op}: '${typeName(v)}'`, site);
  return op === '-' ? -v : v;
}
