// The runs page's filter lives in the hash (#/runs?pipeline=a&status=failed&since=24h), so a
// filtered view can be reloaded and shared.
import type { RunFilter } from '../../api/types.js';

export const SINCE_OPTIONS = [
  { value: '1h', label: 'Last hour', ms: 3600_000 },
  { value: '24h', label: 'Last 24 hours', ms: 86400_000 },
  { value: '7d', label: 'Last 7 days', ms: 7 * 86400_000 },
  { value: '30d', label: 'Last 30 days', ms: 30 * 86400_000 },
  { value: 'all', label: 'All time', ms: 0 },
] as const;

export const STATUS_OPTIONS = ['success', 'failed', 'aborted', 'running'] as const;

/** Runs fetched for the table and the charts: enough for a month of 10-minute runs of one pipeline. */
export const RUN_LIMIT = 500;

export interface RunView {
  pipeline: string;
  status: string;
  since: string;
}

export function viewOf(query: URLSearchParams): RunView {
  return { pipeline: query.get('pipeline') ?? '', status: query.get('status') ?? '', since: query.get('since') ?? '24h' };
}

export function filterOf(v: RunView, now = Date.now()): RunFilter {
  const ms = SINCE_OPTIONS.find((o) => o.value === v.since)?.ms ?? 0;
  return {
    pipeline: v.pipeline || undefined,
    status: v.status || undefined,
    from_dt: ms ? new Date(now - ms).toISOString() : undefined,
    limit: RUN_LIMIT,
  };
}
