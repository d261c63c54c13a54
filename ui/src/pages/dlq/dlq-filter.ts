// The dead-letter page's filter and page live in the hash (#/pipelines/p/dlq?stage=transform&page=2),
// so a filtered view can be reloaded and shared. The time choices are the runs page's.
import type { DlqFilter, DlqStage } from '../../api/dlq-types.js';
import { SINCE_OPTIONS } from '../runs/run-filter.js';

export const STAGES: readonly DlqStage[] = ['parse', 'transform', 'sink'];

export const PAGE_SIZE = 50;

export interface DlqView {
  stage: string;
  error: string;
  /** A SINCE_OPTIONS value; dead letters wait to be handled, so the default is all of them. */
  since: string;
  /** Replayed envelopes are listed (with their mark) unless hidden. */
  hideReplayed: boolean;
  /** The run that dead-lettered them ('' for every run): a run's page links here with it. */
  run: string;
  /** 1-based. */
  page: number;
}

export function viewOf(query: URLSearchParams): DlqView {
  const page = Number(query.get('page') ?? 1);
  return {
    stage: query.get('stage') ?? '',
    error: query.get('error') ?? '',
    since: query.get('since') ?? 'all',
    hideReplayed: query.get('replayed') === 'hide',
    run: query.get('run') ?? '',
    page: Number.isInteger(page) && page > 0 ? page : 1,
  };
}

/** The hash query of a view (defaults left out). */
export function queryOf(v: DlqView): Record<string, string | undefined> {
  return {
    stage: v.stage || undefined,
    error: v.error || undefined,
    since: v.since === 'all' ? undefined : v.since,
    replayed: v.hideReplayed ? 'hide' : undefined,
    run: v.run || undefined,
    page: v.page > 1 ? String(v.page) : undefined,
  };
}

/** The filters shared by the listing and a replay of "all matching". */
export function filterOf(v: DlqView, now = Date.now()): DlqFilter {
  const ms = SINCE_OPTIONS.find((o) => o.value === v.since)?.ms ?? 0;
  return {
    stage: STAGES.includes(v.stage as DlqStage) ? (v.stage as DlqStage) : undefined,
    error: v.error || undefined,
    since: ms ? new Date(now - ms).toISOString() : undefined,
    run_id: v.run || undefined,
  };
}
