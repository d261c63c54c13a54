// Compiles the syntax tree into nested closures, once; evaluating is then just calling them.
// No eval, no new Function: every closure below is written here, and the tree only chooses which.
//
// For speed on the per-record hot path the common shapes get their own closures: field paths
// (a.b.c), comparisons with a constant side (x > 5, status == 'up'), membership in a constant list
// (a Set), and the number case of arithmetic, which skip the general helpers in values.ts.
// Parts whose operands are all constants are evaluated here once (constant folding).
import type { CompareOp, Node, NodeOf } from './ast.js';
import { charge, checkItems, startEvaluation } from './budget.js';
import { fail, type Site } from './errors.js';
import { FUNCTION_NAMES, FUNCTIONS, type FunctionSpec } from './functions.js';
import { checkFieldName } from './parser.js';
import { compileRegex } from './regex.js';
import { add, arithmetic, contains, equals, getIndex, getItem, getKey, isMap, multiply, negate, order, truthy } from './values.js';

export type Scope = Record<string, unknown>;
export type Evaluator = (scope: Scope) => unknown;

interface Compiled {
  readonly fn: Evaluator;
  /** Present when the value is known at compile time. */
  readonly constant?: { readonly value: unknown };
  /** Present when the node reads scope[path[0]][path[1]]...: lets a.b.c become one closure. */
  readonly path?: readonly string[];
}

const hasOwn = Object.prototype.hasOwnProperty;
const EMPTY_SCOPE: Scope = Object.freeze({});

export function compileTree(root: Node, source: string): { evaluate: Evaluator; fields: string[] } {
  const compiler = new Compiler(source);
  const { fn } = compiler.compile(root);
  return { evaluate: fn, fields: [...compiler.fields] };
}

function constant(value: unknown): Compiled {
  // A list result is copied per evaluation: the caller may store it in a record and mutate it later.
  const fn: Evaluator = Array.isArray(value) ? () => copyList(value) : () => value;
  return { fn, constant: { value } };
}

function copyList(list: readonly unknown[]): unknown[] {
  // Charged: a folded constant may be up to the list budget long, and is copied on every evaluation.
  charge(1 + list.length);
  return list.map((x) => (Array.isArray(x) ? copyList(x) : x));
}

/** Is this constant a scalar, so that `==` is `===` and a Set can hold it? */
const isScalar = (v: unknown): boolean => v === null || (typeof v !== 'object' && typeof v !== 'function');

class Compiler {
  /** Top-level names read, in order of appearance; '$' when a field is chosen at run time. */
  readonly fields = new Set<string>();

  constructor(private readonly source: string) {}

  private site(pos: number): Site {
    return { pos, source: this.source };
  }

  compile(node: Node): Compiled {
    switch (node.kind) {
      case 'literal':
        return constant(node.value);
      case 'list':
        return this.list(node);
      case 'name':
        this.fields.add(node.name);
        return { fn: readField(node.name), path: [node.name] };
      case 'root':
        // The parser only allows $ before .name or [key], which access() handles; this is for completeness.
        this.fields.add('$');
        return { fn: (s) => s };
      case 'member':
        return this.access(node.object, node.key, node.pos);
      case 'index':
        return this.index(node);
      case 'call':
        return this.call(node);
      case 'unary':
        return this.unary(node);
      case 'arith':
        return this.arith(node);
      case 'logical':
        return this.logical(node);
      case 'compare':
        return this.compare(node);
      case 'conditional':
        return this.conditional(node);
    }
  }

  /** Evaluates `fn` now when every part is constant; an error is left for run time (it may sit in an untaken branch). */
  private fold(fn: Evaluator, parts: readonly Compiled[], pure = true): Compiled {
    if (pure && parts.every((p) => p.constant !== undefined)) {
      try {
        // Folding is an evaluation too, under the same budget: '[[1] * 60000] * 60000' must not
        // hang the compiler (svc validate, the API) instead of the run.
        startEvaluation();
        return constant(fn(EMPTY_SCOPE));
      } catch {
        // Left to run time, which reports it if the part is ever evaluated.
      }
    }
    return { fn };
  }

  // ---- literals and access ----------------------------------------------------------------------

  private list(node: NodeOf<'list'>): Compiled {
    const items = node.items.map((n) => this.compile(n));
    const fns = items.map((c) => c.fn);
    const n = fns.length;
    const site = this.site(node.pos);
    const fn: Evaluator = (s) => {
      const out = new Array<unknown>(n);
      for (let i = 0; i < n; i++) out[i] = (fns[i] as Evaluator)(s);
      // Items may be big lists or fields: [x, x, x] holds x three times for whoever writes it out.
      checkItems('a list literal', out, site);
      return out;
    };
    return this.fold(fn, items);
  }

  /** `object.key`, or `object['key']` with a constant key. */
  private access(objectNode: Node, key: string, pos: number): Compiled {
    checkFieldName(key, this.site(pos));
    if (objectNode.kind === 'root') {
      this.fields.add(key);
      return { fn: readField(key), path: [key] };
    }
    const object = this.compile(objectNode);
    if (object.path !== undefined) {
      const path = [...object.path, key];
      return { fn: readPath(path), path };
    }
    const parent = object.fn;
    return this.fold((s) => getKey(parent(s), key), [object]);
  }

  private index(node: NodeOf<'index'>): Compiled {
    const index = this.compile(node.index);
    const k = index.constant?.value;
    if (typeof k === 'string') return this.access(node.object, k, node.pos);
    const site = this.site(node.pos);
    if (node.object.kind === 'root') {
      // $[expr]: which field is read is only known at run time.
      this.fields.add('$');
      const key = index.fn;
      return { fn: (s) => getIndex(s, key(s), site) };
    }
    const object = this.compile(node.object);
    const parent = object.fn;
    if (typeof k === 'number' && Number.isInteger(k)) return this.fold((s) => getItem(parent(s), k), [object]);
    const key = index.fn;
    return this.fold((s) => getIndex(parent(s), key(s), site), [object, index]);
  }

  // ---- operators --------------------------------------------------------------------------------

  private unary(node: NodeOf<'unary'>): Compiled {
    const operand = this.compile(node.operand);
    const f = operand.fn;
    const site = this.site(node.pos);
    let fn: Evaluator;
    switch (node.op) {
      case 'not':
        fn = (s) => !truthy(f(s));
        break;
      case '-':
        fn = (s) => {
          const v = f(s);
          return typeof v === 'number' ? -v : negate('-', v, site);
        };
        break;
      case '+':
        fn = (s) => negate('+', f(s), site);
        break;
    }
    return this.fold(fn, [operand]);
  }

  private arith(node: NodeOf<'arith'>): Compiled {
    const left = this.compile(node.left);
    const right = this.compile(node.right);
    const L = left.fn;
    const R = right.fn;
    const site = this.site(node.pos);
    let fn: Evaluator;
    switch (node.op) {
      case '+':
        fn = (s) => {
          const a = L(s);
          const b = R(s);
          return typeof a === 'number' && typeof b === 'number' ? a + b : add(a, b, site);
        };
        break;
      case '-':
        fn = (s) => {
          const a = L(s);
          const b = R(s);
          return typeof a === 'number' && typeof b === 'number' ? a - b : arithmetic('-', a, b, site);
        };
        break;
      case '*':
        fn = (s) => {
          const a = L(s);
          const b = R(s);
          return typeof a === 'number' && typeof b === 'number' ? a * b : multiply(a, b, site);
        };
        break;
      case '/':
        fn = (s) => {
          const a = L(s);
          const b = R(s);
          return typeof a === 'number' && typeof b === 'number' && b !== 0 ? a / b : arithmetic('/', a, b, site);
        };
        break;
      default: {
        const op = node.op;
        fn = (s) => arithmetic(op, L(s), R(s), site);
      }
    }
    return this.fold(fn, [left, right]);
  }

  /** `and` / `or` short-circuit and return the deciding operand, as in Python. */
  private logical(node: NodeOf<'logical'>): Compiled {
    const parts = node.operands.map((n) => this.compile(n));
    const fns = parts.map((p) => p.fn);
    const isAnd = node.op === 'and';
    let fn: Evaluator;
    if (fns.length === 2) {
      const [A, B] = fns as [Evaluator, Evaluator];
      fn = isAnd
        ? (s) => {
            const a = A(s);
            return truthy(a) ? B(s) : a;
          }
        : (s) => {
            const a = A(s);
            return truthy(a) ? a : B(s);
          };
    } else {
      const last = fns.length - 1;
      const final = fns[last] as Evaluator;
      fn = (s) => {
        for (let i = 0; i < last; i++) {
          const v = (fns[i] as Evaluator)(s);
          if (truthy(v) !== isAnd) return v;
        }
        return final(s);
      };
    }
    return this.fold(fn, parts);
  }

  private conditional(node: NodeOf<'conditional'>): Compiled {
    const test = this.compile(node.test);
    const then = this.compile(node.then);
    const otherwise = this.compile(node.otherwise);
    if (test.constant !== undefined) return truthy(test.constant.value) ? then : otherwise;
    const T = test.fn;
    const A = then.fn;
    const B = otherwise.fn;
    return { fn: (s) => (truthy(T(s)) ? A(s) : B(s)) };
  }

  private compare(node: NodeOf<'compare'>): Compiled {
    const parts = node.operands.map((n) => this.compile(n));
    if (node.ops.length === 1) {
      const fn = this.compareTwo(node.ops[0] as CompareOp, parts[0] as Compiled, parts[1] as Compiled, this.site(node.sites[0] as number));
      return this.fold(fn, parts);
    }
    // Chained, as in Python: a < b < c is a < b and b < c, with b evaluated once.
    const fns = parts.map((p) => p.fn);
    const tests = node.ops.map((op, i) => tester(op, this.site(node.sites[i] as number)));
    const first = fns[0] as Evaluator;
    const fn: Evaluator = (s) => {
      let a = first(s);
      for (let i = 0; i < tests.length; i++) {
        const b = (fns[i + 1] as Evaluator)(s);
        if (!(tests[i] as Test)(a, b)) return false;
        a = b;
      }
      return true;
    };
    return this.fold(fn, parts);
  }

  /** One comparison, specialised when a side is constant (the shape of most filters). */
  private compareTwo(op: CompareOp, left: Compiled, right: Compiled, site: Site): Evaluator {
    const L = left.fn;
    const R = right.fn;
    const rc = right.constant;
    switch (op) {
      case '==':
      case 'is':
      case '!=':
      case 'is not': {
        const negated = op === '!=' || op === 'is not';
        // Equality with a scalar constant is identity: values of other types are simply unequal.
        const scalar = rc !== undefined && isScalar(rc.value) ? rc : left.constant !== undefined && isScalar(left.constant.value) ? left.constant : undefined;
        if (scalar !== undefined) {
          const c = scalar.value;
          const other = scalar === rc ? L : R;
          return negated ? (s) => other(s) !== c : (s) => other(s) === c;
        }
        return negated ? (s) => !equals(L(s), R(s), site) : (s) => equals(L(s), R(s), site);
      }
      case 'in':
      case 'not in': {
        const negated = op === 'not in';
        let test: Evaluator;
        if (rc !== undefined && Array.isArray(rc.value) && rc.value.every(isScalar)) {
          // `severity in ['critical', 'major']`: a Set lookup (SameValueZero, so 1 matches 1.0).
          const set = new Set<unknown>(rc.value);
          test = (s) => set.has(L(s));
        } else if (rc !== undefined && typeof rc.value === 'string') {
          const text = rc.value;
          test = (s) => {
            const a = L(s);
            return typeof a === 'string' ? text.includes(a) : contains(text, a, site);
          };
        } else {
          test = (s) => {
            const a = L(s);
            return contains(R(s), a, site);
          };
        }
        return negated ? (s) => !test(s) : test;
      }
      default:
        return ordering(op, L, R, rc, site);
    }
  }

  // ---- functions --------------------------------------------------------------------------------

  private call(node: NodeOf<'call'>): Compiled {
    const site = this.site(node.pos);
    const name = node.name;
    const spec: FunctionSpec | undefined = hasOwn.call(FUNCTIONS, name) ? FUNCTIONS[name] : undefined;
    if (spec === undefined) fail(`unknown function '${name}' (known: ${FUNCTION_NAMES.join(', ')})`, site);
    const n = node.args.length;
    if (n < spec.minArgs || n > spec.maxArgs) {
      const expected =
        spec.minArgs === spec.maxArgs
          ? `exactly ${spec.minArgs}`
          : spec.maxArgs === Infinity
            ? `at least ${spec.minArgs}`
            : `${spec.minArgs} to ${spec.maxArgs}`;
      const last = spec.minArgs === spec.maxArgs || spec.maxArgs === Infinity ? spec.minArgs : spec.maxArgs;
      fail(`${name}() takes ${expected} argument${last === 1 ? '' : 's'} (${n} given): ${spec.signature}`, site);
    }
    if (name === 'exists') return this.exists(node.args[0] as Node, site);

    const args = node.args.map((a, i) => {
      const c = this.compile(a);
      if (i !== spec.regexArg) return c;
      if (c.constant === undefined || typeof c.constant.value !== 'string') {
        fail(`${name}(): the pattern must be a string constant, so it can be checked and compiled once`, this.site(a.pos));
      }
      return constant(compileRegex(c.constant.value, name, this.site(a.pos)));
    });
    const fns = args.map((a) => a.fn);
    let fn: Evaluator;
    if (spec.call.kind === 'special') {
      // coalesce(), the only special function left (exists() returned above): later arguments are
      // evaluated only when the earlier ones are null.
      fn = coalesce(fns);
    } else if (spec.call.kind === 'variadic') {
      const f = spec.call.fn;
      fn = (s) => {
        const values = new Array<unknown>(n);
        for (let i = 0; i < n; i++) values[i] = (fns[i] as Evaluator)(s);
        return f(site, values);
      };
    } else {
      const f = spec.call.fn;
      const [A, B, C] = fns as [Evaluator, Evaluator, Evaluator];
      switch (n) {
        case 0:
          fn = () => f(site, undefined, undefined, undefined);
          break;
        case 1:
          fn = (s) => f(site, A(s), undefined, undefined);
          break;
        case 2:
          fn = (s) => f(site, A(s), B(s), undefined);
          break;
        default:
          fn = (s) => f(site, A(s), B(s), C(s));
      }
    }
    return this.fold(fn, args, spec.pure);
  }

  /**
   * exists(x): is the field present (even if its value is null)? The argument is a field
   * reference, not evaluated: exists(ifAlias), exists(a.b), exists(a[0]), exists('weird-key').
   */
  private exists(arg: Node, site: Site): Compiled {
    if (arg.kind === 'literal' && typeof arg.value === 'string') {
      const key = arg.value;
      checkFieldName(key, site);
      this.fields.add(key);
      return { fn: (s) => has(s, key) };
    }
    if (arg.kind === 'name') {
      this.fields.add(arg.name);
      const key = arg.name;
      return { fn: (s) => has(s, key) };
    }
    if (arg.kind !== 'member' && arg.kind !== 'index') {
      fail("exists() takes a field, e.g. exists(ifAlias), exists(a.b) or exists('weird-key')", site);
    }
    const parent: Evaluator = arg.object.kind === 'root' ? (s) => s : this.compile(arg.object).fn;
    if (arg.kind === 'member') {
      if (arg.object.kind === 'root') this.fields.add(arg.key);
      const key = arg.key;
      return { fn: (s) => has(parent(s), key) };
    }
    const index = this.compile(arg.index);
    const k = index.constant?.value;
    if (typeof k === 'string') checkFieldName(k, this.site(arg.index.pos));
    if (arg.object.kind === 'root') this.fields.add(typeof k === 'string' ? k : '$');
    const key = index.fn;
    return { fn: (s) => has(parent(s), key(s)) };
  }
}

// ---- closures for reading fields ----------------------------------------------------------------

/** scope[name] as an own property only; missing (or undefined) is null. */
function readField(name: string): Evaluator {
  return (s) => {
    if (!hasOwn.call(s, name)) return null;
    const v = s[name];
    return v === undefined ? null : v;
  };
}

function readPath(path: readonly string[]): Evaluator {
  const [k0, k1, k2] = path as [string, string, string];
  const top = readField(k0);
  switch (path.length) {
    case 1:
      return top;
    case 2:
      return (s) => getKey(top(s), k1);
    case 3:
      return (s) => getKey(getKey(top(s), k1), k2);
    default:
      return (s) => {
        let v = top(s);
        for (let i = 1; i < path.length && v !== null; i++) v = getKey(v, path[i] as string);
        return v;
      };
  }
}

/** Is `key` present in `obj`: an own, defined property of an object, or an index within a list or string. */
function has(obj: unknown, key: unknown): boolean {
  if (typeof key === 'string') return isMap(obj) && hasOwn.call(obj, key) && obj[key] !== undefined;
  if (typeof key === 'number' && Number.isInteger(key) && (Array.isArray(obj) || typeof obj === 'string')) {
    const i = key < 0 ? obj.length + key : key;
    return i >= 0 && i < obj.length;
  }
  return false;
}

function coalesce(fns: readonly Evaluator[]): Evaluator {
  if (fns.length === 2) {
    const [A, B] = fns as [Evaluator, Evaluator];
    return (s) => {
      const a = A(s);
      return a !== null ? a : B(s);
    };
  }
  return (s) => {
    for (const f of fns) {
      const v = f(s);
      if (v !== null) return v;
    }
    return null;
  };
}

// ---- closures for comparisons -------------------------------------------------------------------

type Test = (a: unknown, b: unknown) => boolean;

/** The comparison as a two-argument test, for chains. */
function tester(op: CompareOp, site: Site): Test {
  switch (op) {
    case '==':
    case 'is':
      return (a, b) => equals(a, b, site);
    case '!=':
    case 'is not':
      return (a, b) => !equals(a, b, site);
    case 'in':
      return (a, b) => contains(b, a, site);
    case 'not in':
      return (a, b) => !contains(b, a, site);
    case '<':
      return (a, b) => (typeof a === 'number' && typeof b === 'number' ? a < b : order(a, b, op, site) < 0);
    case '<=':
      return (a, b) => (typeof a === 'number' && typeof b === 'number' ? a <= b : order(a, b, op, site) <= 0);
    case '>':
      return (a, b) => (typeof a === 'number' && typeof b === 'number' ? a > b : order(a, b, op, site) > 0);
    case '>=':
      return (a, b) => (typeof a === 'number' && typeof b === 'number' ? a >= b : order(a, b, op, site) >= 0);
  }
}

/**
 * < <= > >=. Written out per operator so each closure is a direct comparison on the fast path;
 * order() covers strings, lists, null (false) and type errors.
 */
function ordering(op: '<' | '<=' | '>' | '>=', L: Evaluator, R: Evaluator, rc: { readonly value: unknown } | undefined, site: Site): Evaluator {
  if (rc !== undefined && typeof rc.value === 'number') {
    const c = rc.value;
    switch (op) {
      case '<':
        return (s) => {
          const a = L(s);
          return typeof a === 'number' ? a < c : order(a, c, op, site) < 0;
        };
      case '<=':
        return (s) => {
          const a = L(s);
          return typeof a === 'number' ? a <= c : order(a, c, op, site) <= 0;
        };
      case '>':
        return (s) => {
          const a = L(s);
          return typeof a === 'number' ? a > c : order(a, c, op, site) > 0;
        };
      case '>=':
        return (s) => {
          const a = L(s);
          return typeof a === 'number' ? a >= c : order(a, c, op, site) >= 0;
        };
    }
  }
  switch (op) {
    case '<':
      return (s) => {
        const a = L(s);
        const b = R(s);
        return typeof a === 'number' && typeof b === 'number' ? a < b : order(a, b, op, site) < 0;
      };
    case '<=':
      return (s) => {
        const a = L(s);
        const b = R(s);
        return typeof a === 'number' && typeof b === 'number' ? a <= b : order(a, b, op, site) <= 0;
      };
    case '>':
      return (s) => {
        const a = L(s);
        const b = R(s);
        return typeof a === 'number' && typeof b === 'number' ? a > b : order(a, b, op, site) > 0;
      };
    case '>=':
      return (s) => {
        const a = L(s);
        const b = R(s);
        return typeof a === 'number' && typeof b === 'number' ? a >= b : order(a, b, op, site) >= 0;
      };
  }
}
