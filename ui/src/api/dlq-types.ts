// The dead-letter API's shapes (docs/dead-letters.md); no DOM, so the page's pure helpers and their
// tests can use them.

export type DlqStage = 'parse' | 'transform' | 'sink';

/** The envelope of spec doc 3 as the DLQ sink stored it. */
export interface DlqEnvelope {
  _error: string;
  _stage: DlqStage;
  _pipeline: string;
  _run_id: string;
  _timestamp: string;
  record: Record<string, unknown> | null;
  /** Base64 of the raw input (parse stage only). */
  raw: string | null;
}

export interface DlqItem {
  id: string;
  location: string;
  envelope: DlqEnvelope;
  replayed: boolean;
  replayed_at: string | null;
  replayed_run_id: string | null;
}

export interface DlqFilter {
  stage?: DlqStage;
  since?: string;
  until?: string;
  error?: string;
  run_id?: string;
}

export interface DlqPage {
  items: DlqItem[];
  /** Matching envelopes before paging (X-Total-Count). */
  total: number;
  /** More were stored than one read keeps (X-DLQ-Truncated). */
  truncated: boolean;
  /** Stored items that are not envelopes (X-DLQ-Skipped). */
  skipped: number;
}

export interface JsonPatchOp {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  value?: unknown;
  from?: string;
}

export interface ReplayRequest extends DlqFilter {
  ids?: string[];
  force?: boolean;
  patch?: JsonPatchOp[];
  set?: Record<string, string>;
}

export interface ReplayAnswer {
  run_id: string | null;
  status: string | null;
  records_in: number;
  records_out: number;
  records_skipped: number;
  selected: number;
  replayed: string[];
  failed: { id: string; error: string }[];
  already_replayed: string[];
  unknown_ids: string[];
}
