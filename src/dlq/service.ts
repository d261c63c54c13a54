// What the API and the CLI ask of a pipeline's DLQ: the listing (filters, replay marks, paging)
// and a replay (selection, edits, the replay run through the pipeline manager).
import { ManagerError, type PipelineManager } from '../pipelines/pipeline-manager.js';
import type { RunRecord } from '../engine/run-record.js';
import type { Logger } from '../observability/log.js';
import type { DlqReplayStore } from '../store/types.js';
import { compileEdits, type Edit, type ReplayEdits } from './edit.js';
import { matches, type DlqEntry, type DlqFilter } from './envelope.js';
import { readDlq } from './reader.js';
import { edited, replayRun, type ReplayOutcome } from './replay.js';

/** Longest a listing or a replay selection may spend reading the DLQ sink. */
export const READ_TIMEOUT_MS = 60_000;

export interface DlqDeps {
  manager: PipelineManager;
  marks: DlqReplayStore;
  log: Logger;
}

export interface ListedEnvelope extends DlqEntry {
  replayed: boolean;
  replayed_at: string | null;
  replayed_run_id: string | null;
}

/** Reads the DLQ and joins the replay marks; `replayed` filters on them when set. */
async function readMarked(deps: DlqDeps, name: string, filter: DlqFilter, signal?: AbortSignal) {
  const config = deps.manager.get(name).config;
  const timeout = AbortSignal.timeout(READ_TIMEOUT_MS);
  const read = await readDlq(config, { log: deps.log, signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
  // readDlq keeps this pipeline's envelopes only (a DLQ sink may be shared).
  const selected = read.entries.filter((e) => matches(e.envelope, filter));
  const marks = await deps.marks.marks(
    name,
    selected.map((e) => e.id),
  );
  const listed: ListedEnvelope[] = selected.map((e) => {
    const m = marks.get(e.id);
    return { ...e, replayed: !!m, replayed_at: m?.replayed_at ?? null, replayed_run_id: m?.run_id ?? null };
  });
  return { listed, truncated: read.truncated, skipped: read.skipped };
}

export async function listDlq(deps: DlqDeps, name: string, q: DlqFilter & { replayed?: boolean; limit: number; offset: number }, signal?: AbortSignal) {
  const r = await readMarked(deps, name, q, signal);
  const all = q.replayed === undefined ? r.listed : r.listed.filter((e) => e.replayed === q.replayed);
  return { total: all.length, items: all.slice(q.offset, q.offset + q.limit), truncated: r.truncated, skipped: r.skipped };
}

export interface ReplayRequest extends DlqFilter, ReplayEdits {
  /** Envelope ids (from the listing); when given, the filters narrow them further. */
  ids?: string[];
  /** Replay envelopes marked replayed already too. */
  force?: boolean;
}

export interface ReplayAnswer extends ReplayOutcome {
  run_id: string | null;
  status: RunRecord['status'] | null;
  records_in: number;
  records_out: number;
  records_skipped: number;
  selected: number;
  /** Selected but marked replayed already (not replayed again without force). */
  already_replayed: string[];
  /** Ids asked for that are not in the selection: the DLQ does not hold them (any more), or the filters leave them out. */
  unknown_ids: string[];
}

/** Compiles the edits first (an invalid expression or patch throws before anything is read). */
export async function replayDlq(deps: DlqDeps, name: string, req: ReplayRequest): Promise<ReplayAnswer> {
  const edit = compileEdits(req);
  deps.manager.get(name); // 404 before anything else
  // From the read of the marks to the end of the run: a second replay meanwhile would see the same envelopes unmarked.
  if (replaying.has(name)) throw new ManagerError(409, `a replay of pipeline '${name}' is in progress; try again when it has finished`);
  replaying.add(name);
  try {
    return await replaySelected(deps, name, req, edit);
  } finally {
    replaying.delete(name);
  }
}

const replaying = new Set<string>();

async function replaySelected(deps: DlqDeps, name: string, req: ReplayRequest, edit: Edit | undefined): Promise<ReplayAnswer> {
  const { listed } = await readMarked(deps, name, req);
  let chosen = listed;
  let unknown: string[] = [];
  if (req.ids) {
    const want = new Set(req.ids);
    chosen = listed.filter((e) => want.has(e.id));
    const found = new Set(chosen.map((e) => e.id));
    unknown = req.ids.filter((id) => !found.has(id));
  }
  const already = req.force ? [] : chosen.filter((e) => e.replayed).map((e) => e.id);
  const todo = req.force ? chosen : chosen.filter((e) => !e.replayed);
  const { items, failed } = edited(todo, edit);
  const outcome: ReplayOutcome = { replayed: [], failed };
  const answer = (run?: RunRecord): ReplayAnswer => ({
    run_id: run?.run_id ?? null,
    status: run?.status ?? null,
    records_in: run?.records_in ?? 0,
    records_out: run?.records_out ?? 0,
    records_skipped: run?.records_skipped ?? 0,
    selected: chosen.length,
    already_replayed: already,
    unknown_ids: unknown,
    ...outcome,
  });
  if (items.length === 0) return answer();
  const runner = replayRun(items, { delivered: (id, runId) => deps.marks.mark(name, id, runId) }, outcome);
  const { done } = deps.manager.replay(name, runner);
  return answer(await done);
}
