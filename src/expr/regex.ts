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
//      A pattern that needs it but uses what it cannot run (backreferences, lookaround, repetition
//      counts above 16) is refused at compile time; one that never needs it (few choice points,
//      or anchored with ^) may use anything.
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
        // eslint-disable-next-line no-invalid-regexp -- `l` is V8's linear-time engine flag (behind --enable-experimental-regexp-engine): this probe detects it
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
  const cost = analyse(pattern);

  // Backtracking tries factor * n^degree paths from each start position, and an unanchored search
  // tries n of them. Nested repetition has no such bound.
  const budget = REGEX_LIMITS.backtrackBudget / cost.factor;
  const degree = cost.degree + (cost.anchored ? 0 : 1);
  const fastLimit = cost.nestedRepetition || budget < 1 ? 0 : degree === 0 ? Infinity : Math.floor(budget ** (1 / degree));
  if (fastLimit >= REGEX_LIMITS.maxInputLength) return new SafeRegex(pattern, fast, null, Infinity);

  if (!linearEngineAvailable()) {
    // Without the linear engine only the exponential shapes are refused (see the header).
    if (cost.nestedRepetition) {
      fail(`${fn}(): pattern ${quote(pattern)} repeats a group that contains a quantifier or alternatives (like (a+)+), which can take exponential time`, site);
    }
    return new SafeRegex(pattern, fast, null, Infinity);
  }
  let linear: RegExp;
  try {
    // eslint-disable-next-line no-invalid-regexp -- `l` is V8's linear-time engine flag, known to be available here (linearEngineAvailable)
    linear = new RegExp(pattern, 'l');
  } catch {
    return fail(
      `${fn}(): pattern ${quote(pattern)} is too complex to run in bounded time on long input: it needs the ` +
        'linear-time engine, which does not support backreferences, lookahead/lookbehind or repetition counts above 16 ' +
        '(anchoring the pattern with ^ or simplifying it may help)',
      site,
    );
  }
  return new SafeRegex(pattern, fast, linear, fastLimit);
}

/** Worst-case number of backtracking paths of a piece of pattern: factor * n^degree on input length n. */
interface Cost {
  degree: number;
  factor: number;
}

interface Frame {
  /** The group contains a quantifier or a '|' (directly or in a nested group). */
  branches: boolean;
  /** Cost of the alternative being read, and the most expensive one so far. */
  current: Cost;
  worst: Cost;
  alternatives: number;
}

const newFrame = (): Frame => ({ branches: false, current: { degree: 0, factor: 1 }, worst: { degree: 0, factor: 1 }, alternatives: 1 });

function endAlternative(f: Frame): void {
  f.worst = { degree: Math.max(f.worst.degree, f.current.degree), factor: Math.max(f.worst.factor, f.current.factor) };
  f.current = { degree: 0, factor: 1 };
}

/**
 * One pass over a (syntactically valid) pattern, estimating how long the backtracking engine may
 * take: a sequence multiplies the paths of its parts, alternatives add up (bounded by count times
 * the worst), a quantifier multiplies by its range of counts (a factor of n when unbounded).
 * A repeated group that contains a quantifier or alternatives (the exponential shape) is flagged.
 */
export function analyse(p: string): { degree: number; factor: number; anchored: boolean; nestedRepetition: boolean } {
  const stack: Frame[] = [newFrame()];
  let nestedRepetition = false;
  // A group just closed, whose cost is added once we know whether a quantifier follows it.
  let pending: { frame: Frame; cost: Cost } | null = null;
  const add = (into: Frame, cost: Cost): void => {
    into.current.degree += cost.degree;
    into.current.factor *= cost.factor;
  };

  for (let i = 0; i < p.length; i++) {
    const ch = p[i];
    const top = stack[stack.length - 1] as Frame;
    const q = quantifierAt(p, i);
    const atom = pending ?? { frame: null, cost: { degree: 0, factor: 1 } };
    pending = null;
    if (q !== null) {
      if (atom.frame !== null && atom.frame.branches && q.repeats) nestedRepetition = true;
      add(top, {
        degree: atom.cost.degree + (q.counts === Infinity ? 1 : 0),
        factor: atom.cost.factor * (q.counts === Infinity ? 1 : q.counts),
      });
      top.branches = true;
      i = q.end - 1;
      if (p[i + 1] === '?') i++; // lazy quantifier
      continue;
    }
    add(top, atom.cost);
    if (ch === '\\') {
      i++;
    } else if (ch === '[') {
      // A character class is one atom; skip to its closing bracket.
      for (i++; i < p.length && p[i] !== ']'; i++) if (p[i] === '\\') i++;
    } else if (ch === '(') {
      stack.push(newFrame());
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
    } else if (ch === ')' && stack.length > 1) {
      const closed = stack.pop() as Frame;
      endAlternative(closed);
      (stack[stack.length - 1] as Frame).branches ||= closed.branches;
      pending = { frame: closed, cost: { degree: closed.worst.degree, factor: closed.alternatives * closed.worst.factor } };
    } else if (ch === '|') {
      endAlternative(top);
      top.alternatives++;
      top.branches = true;
    }
  }
  const root = stack[0] as Frame;
  if (pending !== null) add(stack[stack.length - 1] as Frame, pending.cost);
  endAlternative(root);
  return {
    degree: root.worst.degree,
    factor: root.alternatives * root.worst.factor,
    // '^a|b' anchors only its first alternative.
    anchored: p.startsWith('^') && root.alternatives === 1,
    nestedRepetition,
  };
}

/** A quantifier starting at i: how many different counts it allows, and whether it can repeat at all. */
function quantifierAt(p: string, i: number): { end: number; repeats: boolean; counts: number } | null {
  const ch = p[i];
  if (ch === '*' || ch === '+') return { end: i + 1, repeats: true, counts: Infinity };
  if (ch === '?') return { end: i + 1, repeats: false, counts: 2 };
  if (ch !== '{') return null;
  const m = /^\{(\d+)(,(\d*))?\}/.exec(p.slice(i, i + 24));
  if (m === null) return null; // a literal '{', as JavaScript reads it without the u flag
  const min = Number(m[1]);
  const max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
  return { end: i + m[0].length, repeats: max > 1, counts: max === Infinity ? Infinity : max - min + 1 };
}
