// Regular expressions for matches() and search(), hardened against ReDoS.
//
// A backtracking engine (V8's default) can take exponential or high-polynomial time: '(a+)+$' is
// exponential, and even '.*.*x' needs over a minute on an 8 KiB string. Bounding the input length
// alone does not help with the polynomial cases, so patterns are handled in layers:
//   1. compile-time checks: at most 512 characters and valid syntax;
//   2. only the first 64 KiB of an input are examined;
//   3. V8's linear-time engine (the `l` flag, which Node ships behind
//      --enable-experimental-regexp-engine and which we switch on once, lazily) runs
//      - every input of a pattern that repeats a group containing a quantifier or alternatives
//        ('(a+)+', '(a|aa)*', '(\.\d+)+'): the exponential shapes;
//      - inputs too long for the pattern's polynomial worst case to stay within a fixed step budget
//        on the fast engine. Short inputs (interface names, hostnames, OIDs) keep native speed: the
//        linear engine is an interpreter and 10-100x slower on them.
// If the running Node cannot provide the linear engine, the exponential shapes are rejected at
// compile time instead, and polynomial patterns rely on the input bound alone (documented).
import { setFlagsFromString } from 'node:v8';
import { fail, quote, type Site } from './errors.js';

export const REGEX_LIMITS = {
  maxPatternLength: 512,
  maxInputLength: 64 * 1024,
  /** Worst-case backtracking steps accepted on the fast engine before switching to the linear one. */
  backtrackBudget: 1e7,
} as const;

export class SafeRegex {
  constructor(
    readonly pattern: string,
    private readonly fast: RegExp,
    private readonly linear: RegExp | null,
    /** Inputs up to this length run on `fast`; longer ones on `linear` (when there is one). */
    readonly fastLimit: number,
  ) {}

  test(s: string): boolean {
    const input = s.length > REGEX_LIMITS.maxInputLength ? s.slice(0, REGEX_LIMITS.maxInputLength) : s;
    return this.engineFor(input).test(input);
  }

  exec(s: string): RegExpExecArray | null {
    const input = s.length > REGEX_LIMITS.maxInputLength ? s.slice(0, REGEX_LIMITS.maxInputLength) : s;
    return this.engineFor(input).exec(input);
  }

  /** Which engine handles an input of this length (exposed for tests). */
  engineFor(input: string): RegExp {
    return this.linear !== null && input.length > this.fastLimit ? this.linear : this.fast;
  }
}

let linearAvailable: boolean | undefined;

/** Whether V8's linear-time engine can be used; enables it the first time a pattern is compiled. */
export function linearEngineAvailable(): boolean {
  if (linearAvailable === undefined) {
    const probe = (): boolean => {
      try {
        new RegExp('a', 'l');
        return true;
      } catch {
        return false;
      }
    };
    linearAvailable = probe();
    if (!linearAvailable) {
      try {
        // Only makes the opt-in `l` flag available; no other regular expression changes behaviour.
        setFlagsFromString('--enable-experimental-regexp-engine');
      } catch {
        // Not fatal: we fall back to layers 1 and 2.
      }
      linearAvailable = probe();
    }
  }
  return linearAvailable;
}

/** Checks and compiles `pattern` (a string constant of the expression) once, at compile time. */
export function compileRegex(pattern: string, fn: string, site: Site): SafeRegex {
  if (pattern.length > REGEX_LIMITS.maxPatternLength) {
    fail(`${fn}(): pattern is ${pattern.length} characters long; the limit is ${REGEX_LIMITS.maxPatternLength}`, site);
  }
  let fast: RegExp;
  try {
    fast = new RegExp(pattern);
  } catch (e) {
    const hint = /^\(\?[a-zA-Z]+\)/.test(pattern) ? ' (inline flags such as (?i) are not supported; match on lower(x) instead)' : '';
    const reason = e instanceof Error ? e.message.replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, '') : String(e);
    return fail(`${fn}(): invalid regular expression ${quote(pattern)}: ${reason}${hint}`, site);
  }
  const { choices, nestedRepetition } = analyse(pattern);

  let linear: RegExp | null = null;
  if (!linearEngineAvailable()) {
    if (nestedRepetition) {
      fail(`${fn}(): pattern ${quote(pattern)} repeats a group that contains a quantifier or alternatives (like (a+)+), which can take exponential time`, site);
    }
  } else {
    try {
      linear = new RegExp(pattern, 'l');
    } catch {
      fail(
        `${fn}(): pattern ${quote(pattern)} cannot be run in guaranteed linear time ` +
          '(backreferences, lookahead/lookbehind and large repetition counts are not supported)',
        site,
      );
    }
  }
  // With k choice points a backtracking search costs about n^(k+1) steps on an input of length n;
  // nested repetition has no such bound, so it never runs on the fast engine.
  const fastLimit = nestedRepetition
    ? 0
    : choices === 0
      ? Infinity
      : Math.floor(REGEX_LIMITS.backtrackBudget ** (1 / (choices + 1)));
  return new SafeRegex(pattern, fast, linear, fastLimit);
}

interface Group {
  /** The group contains a quantifier or a '|' (directly or in a nested group). */
  branches: boolean;
}

/**
 * One pass over a (syntactically valid) pattern: finds a repeated group that contains a quantifier
 * or alternatives (the exponential shape) and counts the choice points (quantifiers with a variable
 * count, and alternatives) that set how long an input the backtracking engine may safely see.
 */
export function analyse(p: string): { choices: number; nestedRepetition: boolean } {
  const stack: Group[] = [{ branches: false }];
  let choices = 0;
  let nestedRepetition = false;
  let lastClosed: Group | null = null; // the group just closed, when it is the atom a quantifier applies to
  for (let i = 0; i < p.length; i++) {
    const ch = p[i];
    const top = stack[stack.length - 1] as Group;
    const q = quantifierAt(p, i);
    if (q !== null) {
      if (q.variable) choices++;
      if (lastClosed !== null && lastClosed.branches && q.repeats) nestedRepetition = true;
      top.branches = true;
      i = q.end - 1;
      if (p[i + 1] === '?') i++; // lazy quantifier
      lastClosed = null;
      continue;
    }
    lastClosed = null;
    if (ch === '\\') {
      i++;
    } else if (ch === '[') {
      // A character class is one atom; skip to its closing bracket.
      for (i++; i < p.length && p[i] !== ']'; i++) if (p[i] === '\\') i++;
    } else if (ch === '(') {
      stack.push({ branches: false });
      if (p[i + 1] === '?') {
        // (?:  (?=  (?!  (?<=  (?<!  (?<name>  : skip the prefix so its '?' is not read as a quantifier.
        i++;
        if (p[i + 1] === '<' && p[i + 2] !== '=' && p[i + 2] !== '!') {
          while (i < p.length && p[i] !== '>') i++;
        } else if (p[i + 1] === '<') {
          i += 2;
        } else {
          i++;
        }
      }
    } else if (ch === ')') {
      const closed = stack.length > 1 ? (stack.pop() as Group) : { branches: false };
      const parent = stack[stack.length - 1] as Group;
      parent.branches ||= closed.branches;
      lastClosed = closed;
    } else if (ch === '|') {
      choices++;
      top.branches = true;
    }
  }
  return { choices, nestedRepetition };
}

/** A quantifier starting at i: `repeats` when it allows more than one repetition, `variable` when the count varies. */
function quantifierAt(p: string, i: number): { end: number; repeats: boolean; variable: boolean } | null {
  const ch = p[i];
  if (ch === '*' || ch === '+') return { end: i + 1, repeats: true, variable: true };
  if (ch === '?') return { end: i + 1, repeats: false, variable: true };
  if (ch !== '{') return null;
  const m = /^\{(\d+)(,(\d*))?\}/.exec(p.slice(i, i + 24));
  if (m === null) return null; // a literal '{', as JavaScript reads it without the u flag
  const min = Number(m[1]);
  const max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
  return { end: i + m[0].length, repeats: max > 1, variable: max !== min };
}
