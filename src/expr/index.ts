// The sandboxed expression language used by `filter`, sink `condition`, `add_field` and alert
// rules: Python-like syntax, compiled once to closures, evaluated per record.
// User reference: docs/expressions.md.
//
//   const keep = compile("ifOperStatus == 1 and ifInErrors > 0");
//   if (truthy(keep(record))) ...
import { exprBudget, startEvaluation } from './budget.js';
import { compileTree, type Scope } from './compiler.js';
import { ExprError } from './errors.js';
import { parse } from './parser.js';

export { ExprError } from './errors.js';
export { ExprBudgetError, exprBudget, setExprBudget, type ExprBudget } from './budget.js';
export { truthy } from './values.js';
export { FUNCTION_NAMES } from './functions.js';
export type { Scope } from './compiler.js';

export interface CompiledExpr {
  (scope: Scope): unknown;
  readonly source: string;
  /** Top-level names the expression reads, in order of appearance; '$' if it picks one at run time ($[expr]). */
  readonly fields: string[];
}

export interface CompileOptions {
  /** Longest accepted source, in characters (default 4096). */
  maxLength?: number;
}

/** Bounds on what compile() accepts, so hostile input fails fast instead of exhausting the stack. */
export const LIMITS = {
  maxLength: 4096,
  /** Parentheses, brackets, calls, unary operators and conditionals nested in each other. */
  maxDepth: 64,
  /** Syntax elements (literals, names, operators, ...). */
  maxNodes: 4096,
  /** Depth of a chain of binary operators such as a + b + c + ... (and/or chains are flat). */
  maxHeight: 256,
} as const;

/**
 * Parses and compiles `source` once. Throws ExprError (with `position`) for syntax errors, unknown
 * functions, wrong argument counts, bad regular expressions and exceeded limits. The returned
 * function throws ExprError for type errors at run time (e.g. "a" - 1) and ExprBudgetError (an
 * ExprError) when one evaluation would do or build more than the budget allows (budget.ts), and
 * never anything else.
 */
export function compile(source: string, opts: CompileOptions = {}): CompiledExpr {
  if (typeof source !== 'string') throw new ExprError(`expression must be a string, got ${source === null ? 'null' : typeof source}`);
  const maxLength = opts.maxLength ?? LIMITS.maxLength;
  if (!(maxLength >= 1)) throw new ExprError(`maxLength must be a positive number, got ${String(opts.maxLength)}`);
  if (source.length > maxLength) {
    throw new ExprError(`expression is ${source.length} characters long; the limit is ${maxLength}`);
  }
  if (source.trim() === '') throw new ExprError('empty expression');
  exprBudget(); // an invalid SVC_EXPR_* setting is reported here, when the pipeline is loaded

  const tree = parse(source, LIMITS);
  const { evaluate, fields } = compileTree(tree, source);
  const expr = ((scope: Scope) => {
    try {
      startEvaluation();
      return evaluate(scope);
    } catch (e) {
      // Type errors are ExprErrors already; anything else (a string over V8's length limit, ...) becomes one.
      if (e instanceof ExprError) throw e;
      throw new ExprError(`evaluation failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }) as CompiledExpr;
  Object.defineProperty(expr, 'source', { value: source, enumerable: true });
  Object.defineProperty(expr, 'fields', { value: fields, enumerable: true });
  return expr;
}
