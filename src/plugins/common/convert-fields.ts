// The loop shared by transforms that convert field values in place (cast, hex_decode,
// timestamp_normalize): own fields only, missing ones left alone, the result written to the field
// or to `target`, and a value that does not convert handled by `on_failure` (rule 6).
import { RecordError } from '../../core/errors.js';
import type { LintIssue, Rec } from '../types.js';
import { setField } from './record.js';

/** What a converter returns for a value it cannot convert. */
export const FAIL: unique symbol = Symbol('conversion failed');

export type OnFailure = 'error' | 'null' | 'keep';

export interface FieldConversion {
  fields: readonly string[];
  /** Write here instead of the field itself (one field only; see lintTarget). */
  target?: string;
  onFailure: OnFailure;
  /** Leave null values alone (not a failure). */
  skipNull: boolean;
  /** Converts the value of fields[index]. */
  convert(value: unknown, index: number): unknown;
  /** The recorded-error message for a value of fields[index] that did not convert. */
  failure(field: string, value: unknown, index: number): string;
}

export function fieldConverter(c: FieldConversion): (r: Rec) => Rec {
  const { fields, target, onFailure, skipNull, convert, failure } = c;
  // Output names are known now: only a `__proto__` among them needs the careful setter.
  const careful = target === '__proto__' || fields.includes('__proto__');
  const put = careful ? setField : (o: Rec, k: string, v: unknown) => void (o[k] = v);
  return (r) => {
    for (let i = 0; i < fields.length; i++) {
      const field = fields[i]!;
      const v = r[field];
      if (v === undefined || (skipNull && v === null) || !Object.hasOwn(r, field)) continue;
      const out = convert(v, i);
      if (out !== FAIL) put(r, target ?? field, out);
      else if (onFailure === 'null') put(r, target ?? field, null);
      else if (onFailure === 'error') throw new RecordError(failure(field, v, i));
    }
    return r;
  };
}

/** Lint: `target` names one output, so it needs exactly one field. */
export function lintTarget(c: { fields: readonly string[]; target?: string }): LintIssue[] {
  return c.target !== undefined && c.fields.length !== 1 ? [{ path: 'target', message: 'target needs exactly one field in fields' }] : [];
}

/** A value quoted for a message, cut to a readable length. */
export const quoteValue = (v: unknown) => JSON.stringify(v)?.slice(0, 80) ?? String(v);
