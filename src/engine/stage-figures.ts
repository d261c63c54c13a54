// Per-stage figures of a run (issue 29): what the source read, what each global transform took in,
// handed on and failed on, what each sink's condition let through and what its writes did, and
// what went to the dead-letter queue. The runner adds to them once per delivered chunk from the
// chunk's own tallies (process-chunk.ts), so the hot path pays a few increments per record at most.
import type { PipelineConfig } from '../config/pipeline-schema.js';
import { sinkLabel } from './plan.js';
import type { StageFigures } from './stage-types.js';

export type { DlqFigures, SinkFigures, SourceFigures, StageFigures, TransformFigures } from './stage-types.js';

/** Zeroed figures with the stages of `config`. */
export function emptyStages(config: Pick<PipelineConfig, 'source' | 'transforms' | 'sinks' | 'dlq'>): StageFigures {
  return {
    source: { type: config.source.type, records: 0, bytes: 0, parse_errors: 0 },
    transforms: (config.transforms ?? []).map((t, i) => ({ label: `transforms[${i}] (${t.type})`, type: t.type, in: 0, out: 0, errors: 0 })),
    sinks: config.sinks.map((s, i) => ({
      label: sinkLabel(s, i),
      type: s.type,
      matched: 0,
      transform_errors: 0,
      written: 0,
      failed: 0,
      writes: 0,
      retries: 0,
      bytes: 0,
      circuit: 'closed',
    })),
    dlq: config.dlq ? { label: sinkLabel(config.dlq, 'dlq'), type: config.dlq.type, records: 0, parse: 0, transform: 0, sink: 0, failed: 0 } : null,
  };
}

/** A copy (the runner goes on adding to its own). */
export const copyStages = (s: StageFigures): StageFigures => ({
  source: { ...s.source },
  transforms: s.transforms.map((t) => ({ ...t })),
  sinks: s.sinks.map((k) => ({ ...k })),
  dlq: s.dlq && { ...s.dlq },
});

/** Each numeric field of `from` added to `into` (same shape); a circuit is open when any is. */
function addFields<T extends object>(into: T, from: T) {
  const a = into as Record<string, unknown>;
  for (const [k, v] of Object.entries(from)) {
    if (typeof v === 'number' && typeof a[k] === 'number') a[k] = (a[k] as number) + v;
    else if (k === 'circuit' && v === 'open') a[k] = 'open';
  }
}

/**
 * The figures of several runs of one pipeline (a placement's slots on several workers) added up.
 * Runs of another version of the config (other stages) are skipped, not mixed in.
 */
export function sumStages(list: StageFigures[]): StageFigures | undefined {
  const first = list[0];
  if (!first) return undefined;
  const sum = copyStages(first);
  const same = (s: StageFigures) =>
    s.transforms.length === sum.transforms.length &&
    s.sinks.length === sum.sinks.length &&
    s.transforms.every((t, i) => t.label === sum.transforms[i]!.label) &&
    s.sinks.every((k, i) => k.label === sum.sinks[i]!.label);
  for (const s of list.slice(1)) {
    if (!same(s)) continue;
    addFields(sum.source, s.source);
    s.transforms.forEach((t, i) => addFields(sum.transforms[i]!, t));
    s.sinks.forEach((k, i) => addFields(sum.sinks[i]!, k));
    if (sum.dlq && s.dlq) addFields(sum.dlq, s.dlq);
  }
  return sum;
}

/** The counts of `s` in one flat list, in a fixed order (the rates are taken over these). */
export function stageCounts(s: StageFigures): number[] {
  return [s.source.records, ...s.transforms.map((t) => t.out), ...s.sinks.map((k) => k.written), s.dlq?.records ?? 0];
}

/** Per-second rates per stage, from two flat counts `seconds` apart (stageCounts order). */
export interface StageRates {
  source: number;
  transforms: number[];
  sinks: number[];
  dlq: number;
}

export function stageRates(s: StageFigures, now: number[], before: number[] | undefined, seconds: number): StageRates {
  const rate = (i: number) => (seconds > 0.05 ? Math.round((Math.max(0, now[i]! - (before?.[i] ?? 0)) / seconds) * 10) / 10 : 0);
  const t = s.transforms.length;
  const k = s.sinks.length;
  return {
    source: rate(0),
    transforms: s.transforms.map((_, i) => rate(1 + i)),
    sinks: s.sinks.map((_, i) => rate(1 + t + i)),
    dlq: rate(1 + t + k),
  };
}
