// Shared by the expression tests.
import { expect } from 'vitest';
import { compile, ExprError, type Scope } from '../../src/expr/index.js';

export const ev = (src: string, scope: Scope = {}): unknown => compile(src)(scope);

/** The ExprError that `f` throws (fails the test when it throws nothing or something else). */
export function errorOf(f: () => unknown): ExprError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ExprError);
    return e as ExprError;
  }
  throw new Error('expected an ExprError');
}

/** The message of the error compiling `src` raises. */
export const compileError = (src: string, maxLength?: number): string => errorOf(() => compile(src, maxLength === undefined ? {} : { maxLength })).message;

/** The message of the error evaluating `src` raises (compiles fine, fails at run time). */
export const runError = (src: string, scope: Scope = {}): string => {
  const f = compile(src);
  return errorOf(() => f(scope)).message;
};
