// The budget of one evaluation: how much work it may do and how big a value it may build, checked
// while it runs and before anything is allocated. The compile-time limits (index.ts LIMITS) bound
// the expression; these bound what a short expression can make of big or repeated data
// ('len(str([[[n] * 60000] * 60000] * 60000))' must fail in microseconds, not take the process).
//
// - steps: units of work. One per list or object element walked, compared or built, and one per
//   16 characters of text read or built (native string work is that much cheaper). Nodes of the
//   expression are not counted: there are no loops, so each runs at most once (4096 nodes at most).
// - list length: elements of a list the expression builds, nested lists' elements counted each
//   time they occur ([[x] * 1000] * 1000 is a million), so shared references cannot hide a value
//   that costs that much to write out.
// - string length: characters of a string it builds, and of the text a built list holds.
//
// The defaults keep one evaluation well under ~100 MB and ~1 s: 1M steps of element work take
// ~10-50 ms; 16M characters of text work (the most the steps allow) allocate at most ~32 MB; a
// 100,000-element list is under 1 MB of references. Configurable once per process through
// SVC_EXPR_* (read from the environment at the first compile, also in chunk worker threads, which
// inherit it), or setExprBudget() (tests).
import { SETTINGS } from '../settings.js';
import { ExprError, type Site } from './errors.js';

export interface ExprBudget {
  maxSteps: number;
  maxListLength: number;
  maxStringLength: number;
}

const SETTING_OF = { maxSteps: 'EXPR_MAX_STEPS', maxListLength: 'EXPR_MAX_LIST_LENGTH', maxStringLength: 'EXPR_MAX_STRING_LENGTH' } as const;

/** A budget exceeded: an ExprError (so every caller's catch still applies) that says which limit. */
export class ExprBudgetError extends ExprError {
  override name = 'ExprBudgetError';
  constructor(
    readonly limit: keyof ExprBudget,
    what: string,
    site?: Site,
  ) {
    super(`expression budget exceeded: ${what} (limit ${exprBudget()[limit]}; SVC_${SETTING_OF[limit]})`, site);
  }
}

let budget: ExprBudget | undefined;
let configError: string | undefined;

function fromEnv(env: Record<string, string | undefined>): ExprBudget {
  const out = {} as ExprBudget;
  for (const [k, key] of Object.entries(SETTING_OF) as [keyof ExprBudget, keyof typeof SETTINGS][]) {
    const spec = SETTINGS[key] as { default: (e: typeof env) => number; parse: (raw: string, name: string) => number };
    const raw = env[`SVC_${key}`];
    out[k] = raw === undefined || raw === '' ? spec.default(env) : spec.parse(raw, `SVC_${key}`);
  }
  return out;
}

/** The budget in force; read from the environment the first time (an invalid value is an ExprError at compile). */
export function exprBudget(): ExprBudget {
  if (budget === undefined && configError === undefined) {
    try {
      budget = fromEnv(process.env);
    } catch (e) {
      configError = (e as Error).message;
    }
  }
  if (budget === undefined) throw new ExprError(configError ?? 'expression budget is not configured');
  return budget;
}

/** Sets the budget for this thread (undefined fields keep their value); returns the one before. */
export function setExprBudget(b: Partial<ExprBudget>): ExprBudget {
  const before = exprBudget();
  budget = { ...before, ...b };
  return before;
}

// ---- steps ----------------------------------------------------------------------------------------

/** Steps left in the evaluation running now (evaluations are synchronous and never nest). */
let left = 0;

/** Called before each evaluation (and each compile-time fold). */
export function startEvaluation(): void {
  left = (budget ?? exprBudget()).maxSteps;
}

/** Spends `n` steps. */
export function charge(n: number, site?: Site): void {
  if ((left -= n) < 0) throw new ExprBudgetError('maxSteps', 'the evaluation takes too many steps', site);
}

/** Steps for reading or building `chars` characters of text. */
export const textSteps = (chars: number): number => 1 + (chars >>> 4);

// ---- sizes ----------------------------------------------------------------------------------------

/** Refuses a string of `length` characters before it is built. */
export function checkString(op: string, length: number, site?: Site): void {
  const b = budget as ExprBudget;
  if (length > b.maxStringLength) throw new ExprBudgetError('maxStringLength', `${op} would build a string of ${length} characters`, site);
  charge(textSteps(length), site);
}

/** What weigh() found: elements and characters, and whether it stopped counting early. */
export const tally = { elements: 0, chars: 0, cut: false };

const hasOwn = Object.prototype.hasOwnProperty;
/** Nesting depth followed into lists and objects (as ==, ordering and str() do). */
export const MAX_VALUE_DEPTH = 100;

/**
 * Counts the elements (list items, object entries) and characters (strings, keys) in `v` into
 * `tally`, nested values each time they occur. Stops once either count passes its cap, so the walk
 * costs at most about the caps, whatever `v` is; the walk is charged as steps.
 */
export function weigh(v: unknown, elementCap: number, charCap: number, site?: Site, context = ''): void {
  tally.elements = 0;
  tally.chars = 0;
  tally.cut = false;
  walk(v, elementCap, charCap, 0, site, context);
  charge(1 + tally.elements + (tally.chars >>> 4), site);
}

function walk(v: unknown, eCap: number, cCap: number, depth: number, site: Site | undefined, context: string): void {
  if (typeof v === 'string') {
    tally.chars += v.length;
    return;
  }
  if (typeof v !== 'object' || v === null) return;
  if (depth > MAX_VALUE_DEPTH) throw new ExprError(`${context}values are nested more than ${MAX_VALUE_DEPTH} levels deep`, site);
  if (Array.isArray(v)) {
    tally.elements += v.length;
    for (let i = 0; i < v.length; i++) {
      if (tally.elements > eCap || tally.chars > cCap) {
        // A few items left are still counted, unless one is a list or object: a short flat list
        // (the [x] of [x] * n) gets an exact count for the message.
        if (v.length - i > 16 || v.slice(i).some((x) => typeof x === 'object' && x !== null)) {
          tally.cut = true;
          return;
        }
        for (; i < v.length; i++) if (typeof v[i] === 'string') tally.chars += (v[i] as string).length;
        return;
      }
      const x: unknown = v[i];
      if (typeof x === 'string') tally.chars += x.length;
      else if (typeof x === 'object' && x !== null) walk(x, eCap, cCap, depth + 1, site, context);
    }
    return;
  }
  for (const k in v) {
    if (!hasOwn.call(v, k)) continue;
    if (tally.elements > eCap || tally.chars > cCap) {
      tally.cut = true;
      return;
    }
    tally.elements++;
    tally.chars += k.length;
    walk((v as Record<string, unknown>)[k], eCap, cCap, depth + 1, site, context);
  }
}

/**
 * Refuses a list that would hold `elements` elements and `chars` characters of text (`cut`: the
 * counts are lower bounds, the walk stopped early).
 */
export function checkList(op: string, elements: number, chars: number, cut: boolean, site?: Site): void {
  const b = budget as ExprBudget;
  const more = cut ? 'at least ' : '';
  if (elements > b.maxListLength) throw new ExprBudgetError('maxListLength', `${op} would build a list of ${more}${elements} elements`, site);
  if (chars > b.maxStringLength) throw new ExprBudgetError('maxStringLength', `${op} would build a list holding ${more}${chars} characters of text`, site);
}

/** Weighs the items of a list about to be built from `items`, which are its elements. */
export function checkItems(op: string, items: readonly unknown[], site?: Site): void {
  const b = budget as ExprBudget;
  let elements = items.length;
  let chars = 0;
  let cut = false;
  for (let i = 0; i < items.length; i++) {
    const x = items[i];
    if (typeof x === 'string') chars += x.length;
    else if (typeof x === 'object' && x !== null) {
      weigh(x, b.maxListLength, b.maxStringLength, site);
      elements += tally.elements;
      chars += tally.chars;
      cut ||= tally.cut;
    }
    if (elements > b.maxListLength || chars > b.maxStringLength) {
      cut ||= i < items.length - 1;
      break;
    }
  }
  checkList(op, elements, chars, cut, site);
}
