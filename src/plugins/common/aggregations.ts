// Aggregation functions shared by `aggregate` and `window_aggregate`. Accumulators are plain JSON
// (numbers, arrays, objects) so window_aggregate can store open windows as durable state.
import { Type, type Static } from '@sinclair/typebox';
import type { LintIssue, Rec } from '../types.js';

export const Aggregation = Type.Object(
  {
    function: Type.Union(
      ['count', 'sum', 'min', 'max', 'avg', 'first', 'last', 'count_distinct', 'percentile'].map((f) => Type.Literal(f)),
      { description: 'count (records, or non-null values of field), sum, min, max, avg, first, last, count_distinct, percentile.' },
    ),
    field: Type.Optional(Type.String({ minLength: 1, description: 'Input field (top-level); optional for count.' })),
    as: Type.Optional(
      Type.String({ minLength: 1, description: 'Output field; default `<field>_<function>` (`count` for a plain count, `<field>_p<N>` for percentiles).' }),
    ),
    percentile: Type.Optional(Type.Number({ minimum: 0, maximum: 100, description: 'For percentile: which one (0-100), nearest-rank.' })),
  },
  { additionalProperties: false },
);
export type AggregationSpec = Static<typeof Aggregation>;

export const aggregationsField = Type.Array(Aggregation, {
  minItems: 1,
  description: 'What to compute per group: a list of {function, field, as, percentile}. Missing and null values are ignored (as in SQL).',
});

export const groupByField = Type.Array(Type.String({ minLength: 1 }), {
  default: [],
  description: 'Fields whose values form a group (a record without one of them groups under null). Empty: one group.',
});

const NUMERIC = new Set(['sum', 'min', 'max', 'avg', 'percentile']);

export function outputName(a: AggregationSpec): string {
  if (a.as) return a.as;
  if (a.function === 'count' && !a.field) return 'count';
  if (a.function === 'percentile') return `${a.field}_p${a.percentile}`;
  return `${a.field}_${a.function}`;
}

export function lintAggregations(c: { aggregations: AggregationSpec[]; group_by?: string[] }, path = 'aggregations'): LintIssue[] {
  const issues: LintIssue[] = [];
  const names = new Set(c.group_by ?? []);
  c.aggregations.forEach((a, i) => {
    if (a.function !== 'count' && !a.field) issues.push({ path: `${path}.${i}.field`, message: `${a.function} needs a field` });
    if (a.function === 'percentile' && a.percentile === undefined)
      issues.push({ path: `${path}.${i}.percentile`, message: 'percentile needs percentile: 0-100' });
    if (a.function !== 'percentile' && a.percentile !== undefined)
      issues.push({ path: `${path}.${i}.percentile`, message: 'percentile is only for function percentile' });
    const name = outputName(a);
    if (names.has(name))
      issues.push({ path: `${path}.${i}.as`, message: `output field '${name}' is produced twice (or is a group_by field); set a distinct 'as'` });
    names.add(name);
  });
  return issues;
}

/** One function's running value: plain JSON. */
export interface Acc {
  n: number;
  v?: unknown;
  s?: number;
  xs?: number[];
  set?: Record<string, 1>;
}

function toNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.trim() !== '') return Number(v);
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  return NaN;
}

/** Accumulates records for a list of aggregations. */
export class Aggregator {
  private readonly names: string[];
  private readonly numeric: boolean[];

  constructor(readonly specs: AggregationSpec[]) {
    this.names = specs.map(outputName);
    this.numeric = specs.map((a) => NUMERIC.has(a.function));
  }

  fresh(): Acc[] {
    return this.specs.map(() => ({ n: 0 }));
  }

  /**
   * Adds a record. Values are checked first, so a record with a non-numeric value for a numeric
   * function throws (a recorded error) without being half-counted.
   */
  add(accs: Acc[], r: Rec): void {
    const specs = this.specs;
    let nums: number[] | undefined;
    for (let i = 0; i < specs.length; i++) {
      if (!this.numeric[i]) continue;
      const f = specs[i]!.field!;
      const v = r[f];
      if (v === undefined || v === null) continue;
      const x = toNumber(v);
      if (Number.isNaN(x)) throw new Error(`field '${f}' value ${JSON.stringify(v)} is not a number (${specs[i]!.function})`);
      (nums ??= [])[i] = x;
    }
    for (let i = 0; i < specs.length; i++) {
      const a = specs[i]!;
      const acc = accs[i]!;
      const v = a.field === undefined ? true : r[a.field];
      if (v === undefined || v === null) continue;
      const x = nums?.[i] as number;
      switch (a.function) {
        case 'count':
          acc.n++;
          break;
        case 'sum':
        case 'avg':
          acc.n++;
          acc.s = (acc.s ?? 0) + x;
          break;
        case 'min':
          if (acc.n++ === 0 || x < (acc.v as number)) acc.v = x;
          break;
        case 'max':
          if (acc.n++ === 0 || x > (acc.v as number)) acc.v = x;
          break;
        case 'first':
          if (acc.n++ === 0) acc.v = v;
          break;
        case 'last':
          acc.n++;
          acc.v = v;
          break;
        case 'count_distinct':
          (acc.set ??= {})[JSON.stringify(v)] = 1; // "1" and 1 stay distinct
          break;
        case 'percentile':
          acc.n++;
          (acc.xs ??= []).push(x);
          break;
      }
    }
  }

  /** Writes each aggregation's result into `out`. */
  results(accs: Acc[], out: Rec): Rec {
    for (let i = 0; i < this.specs.length; i++) out[this.names[i]!] = result(this.specs[i]!, accs[i]!);
    return out;
  }
}

function result(a: AggregationSpec, acc: Acc): unknown {
  switch (a.function) {
    case 'count':
      return acc.n;
    case 'sum':
      return acc.s ?? 0;
    case 'avg':
      return acc.n ? acc.s! / acc.n : null;
    case 'count_distinct':
      return acc.set ? Object.keys(acc.set).length : 0;
    case 'percentile': {
      if (!acc.xs?.length) return null;
      const xs = [...acc.xs].sort((x, y) => x - y);
      // Nearest rank: the smallest value with at least p% of the values at or below it.
      // p% of n in floating point can land just above a whole number (7% of 100 is 7.000000000000001):
      // rounded to 12 significant digits first, so the rank is that of the decimal the user wrote.
      const rank = Math.max(1, Math.ceil(Number(((a.percentile! * xs.length) / 100).toPrecision(12))));
      return xs[rank - 1];
    }
    default:
      return acc.n ? acc.v : null;
  }
}

/** Group key of a record: the group_by values, JSON-encoded (missing = null). */
export function groupKey(fields: string[], r: Rec): string {
  if (fields.length === 0) return '';
  if (fields.length === 1) return JSON.stringify(r[fields[0]!] ?? null);
  return JSON.stringify(fields.map((f) => r[f] ?? null));
}

/** The group_by values of a record, to copy into its output. */
export function groupValues(fields: string[], r: Rec): unknown[] {
  return fields.map((f) => r[f] ?? null);
}
