import { compile } from '../../expr/index.js';
import type { LintIssue } from '../types.js';

/** Lint helper: an expression that does not compile, reported at `path`. */
export function lintExpression(source: string, path: string): LintIssue[] {
  try {
    compile(source);
    return [];
  } catch (e) {
    return [{ path, message: `invalid expression: ${(e as Error).message}` }];
  }
}
