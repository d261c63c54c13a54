import type { Rec } from '../types.js';

/** Key orders compiled per copier; records with more distinct orders than this take the slow path. */
const MAX_SHAPES = 8;

interface Shape {
  keys: string[];
  build: (r: Rec) => Rec;
}

/**
 * Copies records with top-level fields renamed or dropped (`rename(key)`: the output name, or null
 * to drop), building each copy as one object literal. The records of a source mostly share one key
 * order, so a builder is compiled once per order seen. Why: stores of computed keys into `{}` make V8
 * look up and extend the object's shape at every field, ~450 ns for a 7-field record against ~80 ns
 * for the literal (measured, docs/benchmarks.md). `slow` copies every other record: an order past
 * MAX_SHAPES, or one whose output would hold a name twice or `__proto__` (a literal would set the
 * prototype), where the caller's own rules apply.
 */
export function shapeCopier(rename: (key: string) => string | null, slow: (r: Rec) => Rec): (r: Rec) => Rec {
  const shapes: Shape[] = [];
  const compile = (keys: string[]): Shape['build'] => {
    const out = keys.map(rename);
    if (out.every((o, i) => o === keys[i])) return (r) => r; // nothing to change
    const names = out.filter((o): o is string => o !== null);
    if (names.includes('__proto__') || new Set(names).size !== names.length) return slow;
    return literalBuilder(keys.flatMap((k, i) => (out[i] === null ? [] : [[out[i]!, k] as [string, string]])));
  };
  return (r) => {
    for (let s = 0; s < shapes.length; s++) {
      const keys = shapes[s]!.keys;
      let i = 0;
      let same = true;
      // Names JSON.parse made are internalized strings: these comparisons are pointer checks.
      for (const k in r) {
        if (k !== keys[i++]) {
          same = false;
          break;
        }
      }
      if (same && i === keys.length) return shapes[s]!.build(r);
    }
    if (shapes.length === MAX_SHAPES) return slow(r);
    const keys = Object.keys(r);
    const build = compile(keys);
    shapes.push({ keys, build });
    return build(r);
  };
}

/**
 * `(r) => ({ to1: r[from1], ... })` compiled from `[to, from]` pairs: a copy whose shape V8 knows in
 * advance. The names must not repeat and must not be `__proto__` (the literal would set the prototype).
 */
export function literalBuilder(pairs: [to: string, from: string][]): (r: Rec) => Rec {
  // JSON.stringify quotes every name, so no field name can break out of the generated source.
  const fields = pairs.map(([to, from]) => `${JSON.stringify(to)}: r[${JSON.stringify(from)}]`);
  return new Function('r', `return { ${fields.join(', ')} };`) as (r: Rec) => Rec;
}
