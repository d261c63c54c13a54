// Stage figures and taps in the engine (issue 29): each stage is counted where chunks are processed
// (inline and on worker threads, with a holding transform that moves the chain's end to the main
// thread), and a tap gets copies at its stage without changing what the sinks get.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runPipeline, type RunProgress } from '../../src/engine/runner.js';
import { TapHub } from '../../src/engine/tap.js';
import { capture, testRegistry } from '../helpers/plugins.js';
import { pipeline } from '../helpers/pipeline.js';
import { tempDir } from '../helpers/fs.js';

function input(n: number) {
  const dir = tempDir();
  const lines = Array.from({ length: n }, (_, i) => JSON.stringify({ i, kind: i % 2 ? 'odd' : 'even', tags: ['a', 'b'] }));
  lines.splice(5, 0, '{"broken":');
  writeFileSync(join(dir, 'in.ndjson'), lines.join('\n') + '\n');
  return dir;
}

const yaml = (src: string, extra: string, transforms: string) => `
version: "1"
pipeline:
  name: staged
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(src)} }
  serializer_in: { type: ndjson }
  serializer_out: { type: ndjson }
  on_error: dlq
${extra}
  transforms:
${transforms}
  sinks:
    - { type: memory, id: evens, condition: "kind == 'even'" }
    - { type: memory, id: all, retry_count: 1, retry_delay_seconds: 0 }
  dlq: { type: memory, id: dead }
`;

const CHAIN = `    - { type: filter, expression: 'i % 10 != 9' }
    - { type: explode, field: tags }`;

async function run(extra: string, transforms = CHAIN, tap?: TapHub) {
  capture('evens');
  const all = capture('all', { failFirst: 2 }); // the first write and its one retry fail: its records are dead-lettered
  capture('dead');
  let last: RunProgress | undefined;
  const record = await runPipeline(pipeline(yaml(input(200), extra, transforms)), {
    registry: testRegistry,
    chunkBytes: 1500,
    onProgress: (p) => (last = p),
    tap,
  });
  return { record, stages: structuredClone(last!.stages!), all };
}

describe('stage figures', () => {
  it('count the source, each transform, each sink and the DLQ, the same inline and on worker threads', async () => {
    const inline = await run('  thread_workers: 1');
    const s = inline.stages;
    // 200 records and one line that does not parse; 20 dropped by the filter; unnest doubles the rest.
    expect(s.source).toMatchObject({ type: 'local', records: 201, parse_errors: 1 });
    expect(s.source.bytes).toBeGreaterThan(0);
    expect(s.transforms).toEqual([
      { label: 'transforms[0] (filter)', type: 'filter', in: 200, out: 180, errors: 0 },
      { label: 'transforms[1] (explode)', type: 'explode', in: 180, out: 360, errors: 0 },
    ]);
    const [evens, all] = s.sinks;
    expect(evens).toMatchObject({ label: 'sinks[0] (memory)', matched: 200, written: 200, failed: 0, retries: 0, circuit: 'closed' });
    // The first write of `all` fails twice (retry_count 1): its records are dead-lettered, the rest written.
    expect(all!.writes).toBeGreaterThan(all!.retries);
    expect(all!.retries).toBe(1);
    expect(all!.matched).toBe(360);
    expect(all!.written + all!.failed).toBe(360);
    expect(all!.failed).toBeGreaterThan(0);
    expect(s.dlq).toMatchObject({ records: 1 + all!.failed, parse: 1, transform: 0, sink: all!.failed, failed: 0 });
    expect(inline.record).toMatchObject({ records_in: 201, dlq_count: s.dlq!.records, records_filtered: 20 });

    const threads = await run('  thread_workers: 2');
    expect(threads.stages.transforms).toEqual(s.transforms);
    expect(threads.stages.source).toMatchObject({ records: 201, parse_errors: 1 });
    expect(threads.stages.sinks.map((k) => k.matched)).toEqual([200, 360]);
  });

  it('count a holding transform whose records come out at the drain, on worker threads too', async () => {
    const chain = `${CHAIN}
    - { type: sort, by: [{ field: i }] }`;
    for (const workers of [1, 2]) {
      const { stages } = await run(`  thread_workers: ${workers}`, chain);
      expect(stages.transforms[2]).toEqual({ label: 'transforms[2] (sort)', type: 'sort', in: 360, out: 360, errors: 0 });
      expect(stages.sinks[0]!.matched).toBe(200);
    }
  });
});

describe('tap in the engine', () => {
  it('copies records at its stage without changing what the sinks get, on worker threads too', async () => {
    for (const workers of [1, 2]) {
      const hub = new TapHub();
      const got: Record<string, string[]> = { source: [], transforms: [], sink: [], dlq: [] };
      const ends: string[] = [];
      const attach = (stage: Parameters<TapHub['attach']>[0]['stage'], key: string, filter?: string) =>
        hub.attach(
          { stage, rate: 1000, limit: 5, filter },
          (lines) => got[key]!.push(...lines),
          (why) => ends.push(why),
        );
      attach('source', 'source');
      attach('transforms', 'transforms', "tags == 'b'");
      attach(0, 'sink');
      attach('dlq', 'dlq');
      const { record } = await run(`  thread_workers: ${workers}`, CHAIN, hub);
      expect(record.status).toBe('success');
      const parsed = (k: string) => got[k]!.map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(parsed('source')).toEqual([0, 1, 2, 3, 4].map((i) => ({ i, kind: i % 2 ? 'odd' : 'even', tags: ['a', 'b'] })));
      expect(parsed('transforms').every((r) => r.tags === 'b')).toBe(true);
      expect(parsed('transforms')).toHaveLength(5);
      expect(parsed('sink').every((r) => r.kind === 'even')).toBe(true);
      expect(parsed('dlq')[0]).toMatchObject({ _stage: 'parse', record: null });
      // Four taps of limit 5 ended; the dead-letter one saw fewer than 5 envelopes only if the run had fewer.
      expect(ends.filter((e) => e === 'limit of 5 records reached').length).toBeGreaterThanOrEqual(3);
      expect(hub.active).toBe(ends.length < 4);
    }
  });
});

describe('tap budget', () => {
  it('keeps its limit whatever the chunks in flight copied, and masks what it hands on', () => {
    const hub = new TapHub();
    const shown: string[] = [];
    const ends: string[] = [];
    hub.attach(
      { stage: 'source', rate: 1000, limit: 5 },
      (lines) => shown.push(...lines),
      (why) => ends.push(why),
    );
    // Two chunks asked before either is delivered are each asked for what is left of the limit.
    const first = hub.requests()!;
    const inFlight = hub.requests()!;
    expect([first[0]!.max, inFlight[0]!.max]).toEqual([5, 5]);
    hub.deliver([{ id: 1, lines: ['a', 'b', 'c', 'd'] }], (t) => t.toUpperCase());
    expect(shown).toEqual(['A', 'B', 'C', 'D']);
    expect(hub.requests()![0]!.max).toBe(1);
    hub.deliver([{ id: 1, lines: ['e', 'f', 'g', 'h'] }], (t) => t.toUpperCase());
    expect(shown).toEqual(['A', 'B', 'C', 'D', 'E']);
    expect(ends).toEqual(['limit of 5 records reached']);
    expect(hub.active).toBe(false);
  });
});
