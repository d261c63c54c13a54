import { Type } from '@sinclair/typebox';
import { defineTransform, type Rec } from '../../types.js';

const Key = Type.Object(
  {
    field: Type.String({ minLength: 1, description: 'Top-level field to sort on.' }),
    order: Type.Union([Type.Literal('asc'), Type.Literal('desc')], { default: 'asc', description: 'asc or desc.' }),
  },
  { additionalProperties: false },
);

const config = Type.Object(
  {
    by: Type.Array(Key, { minItems: 1, description: 'Sort keys in priority order: {field, order}.' }),
    nulls: Type.Union([Type.Literal('first'), Type.Literal('last')], {
      default: 'last',
      description: 'Where records with a missing or null key go (whatever the order).',
    }),
    scope: Type.Union([Type.Literal('unit'), Type.Literal('run')], {
      default: 'unit',
      description: 'unit: sort the records of each input file (or message batch); run: sort the whole run (batch schedules only).',
    }),
    max_records: Type.Integer({
      minimum: 1,
      default: 1000000,
      description: 'Records held at most; when reached, the records held so far are sorted and handed on (with a note) and sorting starts again.',
    }),
  },
  { additionalProperties: false },
);

/** Numbers before strings before booleans before other values; within a type, natural order. */
function rank(v: unknown): number {
  return typeof v === 'number' ? 0 : typeof v === 'string' ? 1 : typeof v === 'boolean' ? 2 : 3;
}

function compare(a: unknown, b: unknown): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 3) {
    const sa = JSON.stringify(a);
    const sb = JSON.stringify(b);
    return sa < sb ? -1 : sa > sb ? 1 : 0;
  }
  return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
}

export default defineTransform({
  key: 'sort',
  summary: 'Sort records by one or more fields (stable; per input file or per run).',
  config,
  defersUnits: (c) => c.scope === 'run',
  examples: [
    { title: 'Busiest interfaces first in each file', yaml: 'type: sort\nby:\n  - { field: in_octets, order: desc }' },
    { title: 'Whole run by time, then host', yaml: 'type: sort\nscope: run\nby:\n  - { field: ts }\n  - { field: host }' },
  ],
  create(c) {
    const keys = c.by.map((k) => ({ field: k.field, sign: k.order === 'desc' ? -1 : 1 }));
    const nullSign = (c.nulls ?? 'last') === 'last' ? 1 : -1;
    const scope = c.scope ?? 'unit';
    const max = c.max_records ?? 1000000;
    let held: Rec[] = [];
    const cmp = (x: Rec, y: Rec): number => {
      for (const k of keys) {
        const a = x[k.field];
        const b = y[k.field];
        const an = a === undefined || a === null;
        const bn = b === undefined || b === null;
        if (an || bn) {
          if (an && bn) continue;
          return an ? nullSign : -nullSign;
        }
        const d = compare(a, b);
        if (d !== 0) return d * k.sign;
      }
      return 0;
    };
    const take = () => {
      const out = held.sort(cmp); // Array.prototype.sort is stable
      held = [];
      return out;
    };
    return {
      holdsRecords: true,
      apply(r, ctx) {
        held.push(r);
        if (held.length < max) return null;
        ctx.note(`sort: max_records (${max}) reached; ${max} records handed on sorted among themselves only`);
        return take();
      },
      drain: (at) => (scope === 'run' && at === 'unit' ? [] : take()),
    };
  },
});
