// Replay of dead letters (docs/dead-letters.md): a run of the pipeline of its own, through the
// engine, whose source is the selected envelopes. Each envelope enters where it failed:
//
// - parse: its raw bytes, one message, through serializer_in, the transforms and the sinks;
// - transform: its record (the record as the failing transform got it) from that transform on
//   (`transforms[2] (...)`: the global chain from 2; `sinks[1].transforms[0] (...)` and
//   `sinks[1] (...) condition`: that sink only); an error that names no transform: all of them;
// - sink: its record (as the sink got it) to the sink its error names (`sinks[1] (sql): ...`),
//   without the condition and sink transforms it already passed; to every sink when none is named.
//
// Records cross as JSON messages with a json serializer_in (they went through the DLQ as JSON).
// Envelopes of one entry point form one engine run with a config cut to that entry; the runs share
// the replay's run id and their records add up to its one run record. The replay writes no dead
// letters: a record that fails again is caught (a capture DLQ) and reported, and its envelope
// stays unmarked. An envelope is marked replayed only when its unit is delivered (done(true)).
import { Type } from '@sinclair/typebox';
import type { ComponentConfig, PipelineConfig, SinkConfig } from '../config/pipeline-schema.js';
import type { Registry } from '../config/load.js';
import type { Envelope } from '../engine/dlq.js';
import type { RunRecord, RunStatus } from '../engine/run-record.js';
import { runPipeline, type RunOptions } from '../engine/runner.js';
import { errorMessage } from '../core/errors.js';
import { registry as defaultRegistry } from '../plugins/registry.js';
import { defineSink, defineSource, type AnyPlugin, type PluginKind, type Rec, type Sink, type Source, type SourceUnit } from '../plugins/types.js';
import type { DlqEntry } from './envelope.js';
import type { Edit } from './edit.js';

/** Where an envelope re-enters the pipeline. */
type Entry =
  | { kind: 'parse' }
  | { kind: 'chain'; from: number }
  | { kind: 'sink-chain'; sink: number; from: number }
  | { kind: 'sink-condition'; sink: number }
  | { kind: 'write'; sink: number | 'all' };

const entryKey = (e: Entry) => JSON.stringify(e);

/** The entry point of an envelope in this config (an error naming a component the config no longer has falls back to the broad entry). */
export function entryOf(e: Envelope, config: PipelineConfig): Entry {
  if (e._stage === 'parse') return { kind: 'parse' };
  const sinkOk = (i: number, type: string) => config.sinks[i]?.type === type;
  if (e._stage === 'transform') {
    let m = /^transforms\[(\d+)\] \(([^)]+)\)/.exec(e._error);
    if (m && config.transforms[+m[1]!]?.type === m[2]) return { kind: 'chain', from: +m[1]! };
    m = /^sinks\[(\d+)\]\.transforms\[(\d+)\] \(([^)]+)\)/.exec(e._error);
    if (m && config.sinks[+m[1]!]?.transforms[+m[2]!]?.type === m[3]) return { kind: 'sink-chain', sink: +m[1]!, from: +m[2]! };
    m = /^sinks\[(\d+)\] \(([^)]+)\) condition/.exec(e._error);
    if (m && sinkOk(+m[1]!, m[2]!)) return { kind: 'sink-condition', sink: +m[1]! };
    return { kind: 'chain', from: 0 };
  }
  const m = /^sinks\[(\d+)\] \(([^)]+)\)/.exec(e._error);
  return m && sinkOk(+m[1]!, m[2]!) ? { kind: 'write', sink: +m[1]! } : { kind: 'write', sink: 'all' };
}

const REPLAY_SOURCE = '_dlq_replay';
const CAPTURE_SINK = '_dlq_replay_capture';

/** The pipeline cut to one entry point, reading the replay source and dead-lettering into the capture. */
function configFor(config: PipelineConfig, entry: Entry): PipelineConfig {
  const bare = (s: SinkConfig, transforms: ComponentConfig[]): SinkConfig => ({ ...s, condition: undefined, transforms });
  const base: PipelineConfig = {
    ...config,
    source: { type: REPLAY_SOURCE },
    schedule: { ...config.schedule, type: 'manual' },
    on_error: 'dlq',
    dlq: { ...config.dlq!, type: CAPTURE_SINK, serializer_out: { type: 'ndjson' }, retry_count: 0, circuit_breaker_threshold: undefined },
    batch_size: undefined,
    skip_processed: false,
  };
  if (entry.kind === 'parse') return base;
  const records = { ...base, serializer_in: { type: 'json' } };
  switch (entry.kind) {
    case 'chain':
      return { ...records, transforms: config.transforms.slice(entry.from) };
    case 'sink-chain':
      return { ...records, transforms: [], sinks: [bare(config.sinks[entry.sink]!, config.sinks[entry.sink]!.transforms.slice(entry.from))] };
    case 'sink-condition':
      return { ...records, transforms: [], sinks: [config.sinks[entry.sink]!] };
    case 'write':
      return { ...records, transforms: [], sinks: (entry.sink === 'all' ? config.sinks : [config.sinks[entry.sink]!]).map((s) => bare(s, [])) };
  }
}

/** One envelope selected for replay, edited already. */
export interface ReplayItem {
  id: string;
  envelope: Envelope;
}

export interface ReplayOutcome {
  /** Delivered and marked. */
  replayed: string[];
  /** Not replayed, with the reason (an edit, a failure again, the run stopped). */
  failed: { id: string; error: string }[];
}

const PARSE_EDIT = 'edits apply to records; a parse-stage dead letter has raw bytes only (replay it without edits after fixing serializer_in)';

/** Applies the edit to each entry's record: entries whose edit fails are reported, not dropped. */
export function edited(entries: DlqEntry[], edit: Edit | undefined): { items: ReplayItem[]; failed: { id: string; error: string }[] } {
  const items: ReplayItem[] = [];
  const failed: { id: string; error: string }[] = [];
  for (const { id, envelope } of entries) {
    if (!edit) items.push({ id, envelope });
    else if (envelope.record === null) failed.push({ id, error: PARSE_EDIT });
    else {
      try {
        items.push({ id, envelope: { ...envelope, record: edit(envelope.record) } });
      } catch (e) {
        failed.push({ id, error: `edit failed: ${errorMessage(e)}` });
      }
    }
  }
  return { items, failed };
}

interface Group {
  entry: Entry;
  items: ReplayItem[];
}

function grouped(items: ReplayItem[], config: PipelineConfig): Group[] {
  const groups = new Map<string, Group>();
  for (const it of items) {
    const entry = entryOf(it.envelope, config);
    const k = entryKey(entry);
    if (!groups.has(k)) groups.set(k, { entry, items: [] });
    groups.get(k)!.items.push(it);
  }
  return [...groups.values()];
}

/** The engine's registry plus the replay source and the capture sink of one entry's run. */
function replayRegistry(base: Registry, source: Source, capture: Sink): Registry {
  const common = {
    config: Type.Object({}, { additionalProperties: true }),
    examples: [],
    delivery: { guarantee: 'at-least-once' as const, why: 'replay' },
    test: async () => {},
  };
  const src = defineSource({ ...common, key: REPLAY_SOURCE, summary: 'dead letters being replayed', mode: 'batch', create: () => source });
  const sink = defineSink({ ...common, key: CAPTURE_SINK, summary: 'dead letters of a replay', accepts: 'records', create: () => capture });
  const add = (kind: PluginKind, p: AnyPlugin) => new Map([...base[kind], [p.key, p]]);
  return { ...base, source: add('source', src), sink: add('sink', sink) };
}

export interface ReplayHooks {
  /** The envelope's unit was delivered: mark it (a failure is reported for that envelope). */
  delivered(id: string, runId: string): Promise<void>;
  registry?: Registry;
}

/**
 * The run function handed to the executor (RunJob.runner): one engine run per entry point, one
 * record for all of them. `outcome` is filled as units finish.
 */
export function replayRun(items: ReplayItem[], hooks: ReplayHooks, outcome: ReplayOutcome) {
  const stages = (['parse', 'transform', 'sink'] as const).map((s) => [s, items.filter((i) => i.envelope._stage === s).length] as const).filter(([, n]) => n);
  // `config` is the pipeline's as the run starts (what the manager hands every run).
  return async (config: PipelineConfig, opts: RunOptions): Promise<RunRecord> => {
    const groups = grouped(items, config);
    const records: RunRecord[] = [];
    const base = { ...ZERO, units: 0 };
    for (const g of groups) {
      if (opts.signal?.aborted) {
        for (const it of g.items) outcome.failed.push({ id: it.id, error: 'the replay was stopped before this dead letter' });
        continue;
      }
      // Why each envelope failed again (the capture DLQ), by id.
      const again = new Map<string, string>();
      const capture: Sink = {
        async write(batch) {
          for (const r of batch.records ?? []) again.set(String(batch.meta.dlq_envelope_id), String((r as Rec)._error));
        },
      };
      const record = await runPipeline(configFor(config, g.entry), {
        ...opts,
        registry: replayRegistry(hooks.registry ?? opts.registry ?? defaultRegistry, memorySource(g, again, opts.runId!, hooks, outcome), capture),
        state: undefined, // a replay neither loads nor saves the state of stateful transforms
        processed: undefined,
        breakers: undefined,
        // Progress of the whole replay: the entry runs before this one, plus this one so far.
        onProgress: opts.onProgress && ((p) => opts.onProgress!({ ...p, ...sumOf(base, p), units: p.units + base.units, dlq_count: 0 })),
      });
      records.push(record);
      // Units the run never finished (it failed before reading them, or while they were in flight).
      const settled = new Set([...outcome.replayed, ...outcome.failed.map((f) => f.id)]);
      const why = `not replayed: ${record.error ?? 'the run ended before this dead letter was delivered'}`;
      for (const it of g.items) if (!settled.has(it.id)) outcome.failed.push({ id: it.id, error: why });
      Object.assign(base, sumOf(base, record));
      base.units += g.items.length;
    }
    const note = `replay of ${items.length} dead letter${items.length === 1 ? '' : 's'} (${stages.map(([s, n]) => `${s} ${n}`).join(', ')})`;
    return combine(records, opts, config.name, note, outcome.failed.length);
  };
}

const COUNTERS = ['records_in', 'records_out', 'records_filtered', 'records_skipped', 'bytes_in', 'bytes_out'] as const;
type Counters = Record<(typeof COUNTERS)[number], number>;
const sumOf = (a: Counters, b: Counters): Counters => Object.fromEntries(COUNTERS.map((k) => [k, a[k] + b[k]])) as Counters;
const ZERO = Object.fromEntries(COUNTERS.map((k) => [k, 0])) as Counters;

/** One unit per envelope: a message of raw bytes (parse) or of the record as JSON. */
function memorySource(g: Group, again: Map<string, string>, runId: string, hooks: ReplayHooks, outcome: ReplayOutcome): Source {
  return {
    async *units(signal) {
      for (const it of g.items) {
        if (signal.aborted) return;
        const e = it.envelope;
        const bytes = e._stage === 'parse' ? Buffer.from(e.raw ?? '', 'base64') : Buffer.from(JSON.stringify(e.record));
        const unit: SourceUnit = {
          meta: { source_filename: `dlq-${it.id}`, dlq_envelope_id: it.id, dlq_stage: e._stage, dlq_run_id: e._run_id },
          size: bytes.length,
          messages: true,
          async *read() {
            yield bytes;
          },
          async done(delivered) {
            const why = again.get(it.id);
            if (why !== undefined) outcome.failed.push({ id: it.id, error: `failed again: ${why}` });
            else if (!delivered) outcome.failed.push({ id: it.id, error: 'not delivered (see the run record errors)' });
            else {
              try {
                await hooks.delivered(it.id, runId);
                outcome.replayed.push(it.id);
              } catch (err) {
                outcome.failed.push({ id: it.id, error: `delivered, but not marked replayed (a later replay would write it again): ${errorMessage(err)}` });
              }
            }
          },
        };
        yield unit;
      }
    },
  };
}

const WORST: RunStatus[] = ['failed', 'aborted', 'success'];

/** The replay's run record: the sum of its entry runs. */
function combine(records: RunRecord[], opts: RunOptions, pipeline: string, note: string, notReplayed: number): RunRecord {
  const status = WORST.find((s) => records.some((r) => r.status === s)) ?? (opts.signal?.aborted ? 'aborted' : 'success');
  const now = new Date().toISOString();
  return {
    run_id: opts.runId!,
    pipeline,
    node_id: records[0]?.node_id ?? opts.nodeId ?? '',
    status,
    started_at: records[0]?.started_at ?? now,
    finished_at: records.at(-1)?.finished_at ?? now,
    ...records.reduce(sumOf, ZERO),
    // The replay writes no dead letters: what failed again is records_skipped, and stays in the DLQ unmarked.
    dlq_count: 0,
    error: records.find((r) => r.error)?.error ?? null,
    errors: [note, ...(notReplayed ? [`${notReplayed} dead letters not replayed (see the replay's answer)`] : []), ...records.flatMap((r) => r.errors)],
  };
}
