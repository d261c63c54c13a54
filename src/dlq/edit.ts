// Replay edits (docs/dead-letters.md): an RFC 6902 patch, then `set` (field -> expression of
// src/expr, evaluated against the record as it was before `set`, like add_field, with `record`
// bound to the whole record). The expression language has no object literals, so "an expression
// returning the new record" is a map of fields to expressions.
import { compile, type CompiledExpr } from '../expr/index.js';
import type { Rec } from '../plugins/types.js';
import { applyPatch, type PatchOp } from './patch.js';

export interface ReplayEdits {
  patch?: PatchOp[];
  set?: Record<string, string>;
}

export type Edit = (record: Rec) => Rec;

/** Compiles the edits once (an invalid expression throws ExprError: the request is refused); undefined when there are none. */
export function compileEdits(e: ReplayEdits): Edit | undefined {
  const patch = e.patch?.length ? e.patch : undefined;
  const set = Object.entries(e.set ?? {}).map(([field, src]): [string, CompiledExpr] => [field, compile(src)]);
  if (!patch && set.length === 0) return undefined;
  return (record) => {
    const r = patch ? applyPatch(record, patch) : structuredClone(record);
    if (set.length) {
      const scope = { ...r, record: r };
      for (const [field, f] of set) r[field] = f(scope);
    }
    return r;
  };
}
