// Where each dead letter re-enters a pipeline (src/dlq/replay.ts), through the real engine with the
// test registry's memory sinks: the global chain from the transform that failed, a sink's chain
// from its failed transform, a condition, a sink write alone; and a replay run that fails before
// delivering reports every envelope of it as not replayed and marks nothing.
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { loadPipelineText } from '../../src/config/load.js';
import type { Envelope, Stage } from '../../src/engine/dlq.js';
import { entryOf, replayRun, type ReplayItem, type ReplayOutcome } from '../../src/dlq/replay.js';
import { defineSink, type Rec } from '../../src/plugins/types.js';
import { capture, testRegistry } from '../helpers/plugins.js';

const yaml = `version: "1"
pipeline:
  name: entry
  schedule: { type: manual }
  source: { type: local, path: /nonexistent }
  serializer_in: { type: ndjson }
  serializer_out: { type: ndjson }
  transforms:
    - { type: add_field, fields: { a: "1" } }
    - { type: add_field, fields: { b: "x + 1" } }
  sinks:
    - { type: memory, id: s0, transforms: [{ type: add_field, fields: { c: "2" } }, { type: add_field, fields: { d: "y * 2" } }] }
    - { type: memory, id: s1, condition: "b > 0" }
  dlq: { type: local, path: /nonexistent-dlq }
`;
const config = loadPipelineText(yaml, { env: {}, registry: testRegistry }).config!;

const env = (stage: Stage, error: string, record: Rec | null, raw: string | null = null): Envelope => ({
  _error: error,
  _stage: stage,
  _pipeline: 'entry',
  _run_id: 'r0',
  _timestamp: '2026-01-01T00:00:00.000Z',
  record,
  raw,
});

describe('replay entry points', () => {
  it('reads the entry from the error, falling back when the config no longer has that component', () => {
    expect(entryOf(env('parse', 'invalid JSON', null, 'eA=='), config)).toEqual({ kind: 'parse' });
    expect(entryOf(env('transform', 'transforms[1] (add_field): boom', {}), config)).toEqual({ kind: 'chain', from: 1 });
    expect(entryOf(env('transform', 'transforms[1] (cast): boom', {}), config)).toEqual({ kind: 'chain', from: 0 });
    expect(entryOf(env('transform', 'sinks[0].transforms[1] (add_field): boom', {}), config)).toEqual({ kind: 'sink-chain', sink: 0, from: 1 });
    expect(entryOf(env('transform', 'sinks[1] (memory) condition: boom', {}), config)).toEqual({ kind: 'sink-condition', sink: 1 });
    expect(entryOf(env('sink', 'sinks[1] (memory): refused', {}), config)).toEqual({ kind: 'write', sink: 1 });
    expect(entryOf(env('sink', 'sinks[2] (memory): refused', {}), config)).toEqual({ kind: 'write', sink: 'all' });
    expect(entryOf(env('sink', 'circuit open', {}), config)).toEqual({ kind: 'write', sink: 'all' });
  });

  it('sends each record in where it failed, and only there', async () => {
    const s0 = capture('s0');
    const s1 = capture('s1');
    const items: ReplayItem[] = [
      { id: 'p', envelope: env('parse', 'invalid JSON', null, Buffer.from('{"x": 1}').toString('base64')) },
      { id: 't1', envelope: env('transform', 'transforms[1] (add_field): boom', { x: 10, a: 'kept', y: 5 }) },
      { id: 's0t1', envelope: env('transform', 'sinks[0].transforms[1] (add_field): boom', { x: 20, b: 21, c: 'kept', y: 3 }) },
      { id: 'c1', envelope: env('transform', 'sinks[1] (memory) condition: boom', { x: 30, b: 31 }) },
      { id: 'w1', envelope: env('sink', 'sinks[1] (memory): refused', { x: 40, b: -1 }) },
    ];
    const marked: string[] = [];
    const outcome: ReplayOutcome = { replayed: [], failed: [] };
    const run = replayRun(items, { delivered: async (id) => void marked.push(id), registry: testRegistry }, outcome);
    const record = await run(config, { runId: 'replay-1', registry: testRegistry });
    expect(outcome.failed).toEqual([
      { id: 'p', error: expect.stringMatching(/^failed again: sinks\[0\]\.transforms\[1\] \(add_field\): unsupported operand/) },
    ]);
    expect(marked.sort()).toEqual(['c1', 's0t1', 't1', 'w1']);
    // p reached s1, so the engine counts it written (records_out), though it failed at s0.
    expect(record).toMatchObject({ run_id: 'replay-1', pipeline: 'entry', status: 'success', records_in: 5, records_out: 5, dlq_count: 0 });
    expect(record.errors[0]).toBe('replay of 5 dead letters (parse 1, transform 3, sink 1)');
    const got = (id: string) => captures(id === 's0' ? s0 : s1);
    // parse: everything ran; it fails at s0's d (y is missing) but reaches s1.
    expect(got('s1')).toContainEqual({ x: 1, a: 1, b: 2 });
    // t1: from transforms[1] on (a is not set again), then both sinks.
    expect(got('s0')).toContainEqual({ x: 10, a: 'kept', y: 5, b: 11, c: 2, d: 10 });
    // s0t1: s0 only, from its transforms[1] (c not set again).
    expect(got('s0')).toContainEqual({ x: 20, b: 21, c: 'kept', y: 3, d: 6 });
    expect(got('s1').some((r) => r.x === 20)).toBe(false);
    // c1: s1 only, through its condition.
    expect(got('s1')).toContainEqual({ x: 30, b: 31 });
    expect(got('s0').some((r) => r.x === 30)).toBe(false);
    // w1: written to s1 as it is, its condition (b > 0) not asked again.
    expect(got('s1')).toContainEqual({ x: 40, b: -1 });
    expect(got('s0').some((r) => r.x === 40)).toBe(false);
  });

  it('a replay run that fails before delivering marks nothing and reports every envelope', async () => {
    const broken = defineSink({
      key: 'broken',
      summary: 'Test sink whose open fails.',
      accepts: 'payload',
      delivery: { guarantee: 'at-least-once', why: 'test sink' },
      test: async () => {},
      config: Type.Object({}),
      examples: [],
      create: () => ({
        open: async () => {
          throw new Error('peer refused the session');
        },
        write: async () => {},
      }),
    });
    const reg = { ...testRegistry, sink: new Map([...testRegistry.sink, ['broken', broken]]) };
    const cfg = { ...config, sinks: [{ ...config.sinks[1]!, type: 'broken', condition: undefined }] };
    const items: ReplayItem[] = [1, 2].map((x) => ({ id: `i${x}`, envelope: env('sink', 'sinks[0] (broken): refused', { x }) }));
    const marked: string[] = [];
    const outcome: ReplayOutcome = { replayed: [], failed: [] };
    const record = await replayRun(items, { delivered: async (id) => void marked.push(id), registry: reg }, outcome)(cfg, { runId: 'replay-2' });
    expect(record).toMatchObject({ status: 'failed', error: expect.stringContaining('peer refused the session') });
    expect(marked).toEqual([]);
    expect(outcome.failed).toEqual(items.map((i) => ({ id: i.id, error: expect.stringMatching(/^not replayed: .*peer refused the session/) })));
  });
});

function captures(c: ReturnType<typeof capture>): Rec[] {
  return c.text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Rec);
}
