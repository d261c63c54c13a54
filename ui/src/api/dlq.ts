// A pipeline's dead letters (docs/dead-letters.md): the listing with its total, and a replay.
import { request } from '../lib/http.js';
import type { DlqFilter, DlqItem, DlqPage, ReplayAnswer, ReplayRequest } from './dlq-types.js';

export type * from './dlq-types.js';

const path = (name: string) => `/api/pipelines/${encodeURIComponent(name)}/dlq`;

export const dlqApi = {
  list: async (name: string, f: DlqFilter & { replayed?: boolean; limit: number; offset: number }): Promise<DlqPage> => {
    let headers: Headers | undefined;
    const items = await request<DlqItem[]>(path(name), { query: { ...f }, onHeaders: (h) => (headers = h) });
    const total = Number(headers?.get('x-total-count') ?? items.length);
    return { items, total, truncated: headers?.get('x-dlq-truncated') === 'true', skipped: Number(headers?.get('x-dlq-skipped') ?? 0) };
  },
  replay: (name: string, body: ReplayRequest) => request<ReplayAnswer>(`${path(name)}/replay`, { method: 'POST', json: body }),
};
