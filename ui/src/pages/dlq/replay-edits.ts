// The replay form's edits as the API takes them (`set` and `patch`), or what is wrong with them
// before anything is sent; the server checks the expressions and operations (422).
import type { JsonPatchOp, ReplayRequest } from '../../api/dlq-types.js';

export interface SetRow {
  field: string;
  expr: string;
}

/** The edits of the form, or what is wrong with them before anything is sent. */
export function editsOf(rows: SetRow[], patchText: string): Pick<ReplayRequest, 'set' | 'patch'> | string {
  const edits: Pick<ReplayRequest, 'set' | 'patch'> = {};
  const set = rows.filter((r) => r.field.trim() !== '' || r.expr.trim() !== '');
  for (const r of set) if (!r.field.trim() || !r.expr.trim()) return `set: every row needs a field and an expression (${r.field.trim() || r.expr.trim()})`;
  const twice = set.find((r, i) => set.findIndex((o) => o.field.trim() === r.field.trim()) !== i);
  if (twice) return `set: the field ${twice.field.trim()} is set twice`;
  if (set.length) edits.set = Object.fromEntries(set.map((r) => [r.field.trim(), r.expr.trim()]));
  if (patchText.trim()) {
    let patch: unknown;
    try {
      patch = JSON.parse(patchText);
    } catch (e) {
      return `JSON patch: ${(e as Error).message}`;
    }
    if (!Array.isArray(patch)) return 'JSON patch: an array of operations, e.g. [{"op": "replace", "path": "/field", "value": 1}]';
    edits.patch = patch as JsonPatchOp[];
  }
  return edits;
}
