import { existsSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runPipeline } from '../../src/engine/runner.js';
import { CircuitBreaker } from '../../src/engine/reliability.js';
import { capture, testRegistry } from '../helpers/plugins.js';
import { pipeline } from '../helpers/pipeline.js';
import { tempDir } from '../helpers/fs.js';

const run = (yaml: string, opts: Parameters<typeof runPipeline>[1] = {}) => runPipeline(pipeline(yaml), { registry: testRegistry, ...opts });

function ndjsonInput(lines: string[], name = 'in.ndjson') {
  const dir = tempDir();
  writeFileSync(join(dir, name), lines.join('\n') + '\n');
  return dir;
}

const rows = (n: number, f: (i: number) => object = (i) => ({ i })) => Array.from({ length: n }, (_, i) => JSON.stringify(f(i)));
const parseNdjson = (text: string) =>
  text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

const base = (src: string, extra = '', sinks = '    - { type: memory, id: out }') => `
version: "1"
pipeline:
  name: t
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(src)} }
  serializer_in: { type: ndjson }
  serializer_out: { type: ndjson }
${extra}
  sinks:
${sinks}
`;

describe('record flow (rule 1)', () => {
  it('runs source -> serializer_in -> global transforms -> per-sink condition, transforms, serializer_out -> write', async () => {
    const src = ndjsonInput(rows(6, (i) => ({ ifIndex: String(i), ifOperStatus: i % 2 ? 1 : 2, ifInOctets: i * 10 })));
    const up = capture('up');
    const down = capture('down');
    const rec = await run(
      base(
        src,
        `  transforms:
    - { type: rename, fields: { ifInOctets: in_octets } }
    - { type: cast, fields: { ifIndex: int } }`,
        `    - type: memory
      id: up
      condition: ifOperStatus == 1
      transforms: [{ type: drop, fields: [ifOperStatus] }]
    - type: memory
      id: down
      condition: ifOperStatus == 2
      serializer_out: { type: csv }`,
      ),
    );
    expect(rec.status).toBe('success');
    expect(parseNdjson(up.text)).toEqual([
      { ifIndex: 1, in_octets: 10 },
      { ifIndex: 3, in_octets: 30 },
      { ifIndex: 5, in_octets: 50 },
    ]);
    expect(down.batches[0]!.head).toBe('ifIndex,ifOperStatus,in_octets\n');
    expect(down.text).toBe('0,2,0\n2,2,20\n4,2,40\n');
    expect(rec).toMatchObject({ records_in: 6, records_out: 6, records_skipped: 0, dlq_count: 0, error: null, errors: [] });
    expect(rec.bytes_in).toBe(readFileSync(join(src, 'in.ndjson')).length);
    expect(rec.bytes_out).toBe(Buffer.byteLength(up.text) + Buffer.byteLength(down.text));
  });

  it('gives each sink its own copy when sink transforms change records', async () => {
    const src = ndjsonInput(rows(2));
    const a = capture('a');
    const b = capture('b');
    await run(base(src, '', `    - { type: memory, id: a, transforms: [{ type: rename, fields: { i: n } }] }\n    - { type: memory, id: b }`));
    expect(parseNdjson(a.text)).toEqual([{ n: 0 }, { n: 1 }]);
    expect(parseNdjson(b.text)).toEqual([{ i: 0 }, { i: 1 }]);
  });

  it('counts records_out as records written to at least one sink and notes a batch no sink wrote', async () => {
    const src = ndjsonInput(rows(4));
    capture('a');
    capture('b', { failFirst: -1 });
    const rec = await run(base(src, '', `    - { type: memory, id: a, condition: i < 2 }\n    - { type: memory, id: b }`));
    // 0 and 1 reached sink a; 2 and 3 only went to the failing sink b.
    expect(rec).toMatchObject({ records_in: 4, records_out: 2, records_skipped: 2 });

    const none = capture('none');
    const rec2 = await run(base(src, '', `    - { type: memory, id: none, condition: i > 100 }`));
    expect(none.batches).toHaveLength(0);
    expect(rec2).toMatchObject({ records_in: 4, records_out: 0, records_skipped: 0, status: 'success' });
    expect(rec2.errors).toEqual(['no sink wrote the batch of 4 records from in.ndjson: no record matched a sink condition']);
  });
});

describe('on_error and the DLQ (rules 2 and 6)', () => {
  const bad = ['{"i":0}', '{"i":1', '{"i":2}', '{"i":"x"}', '{"i":4}'];
  const castInt = `  transforms:\n    - { type: cast, fields: { i: int } }`;

  it('continue: a bad line and a bad record are recorded errors; the other lines flow', async () => {
    const out = capture('out');
    const rec = await run(base(ndjsonInput(bad), castInt));
    expect(parseNdjson(out.text)).toEqual([{ i: 0 }, { i: 2 }, { i: 4 }]);
    expect(rec).toMatchObject({ status: 'success', records_in: 5, records_out: 3, records_skipped: 2, dlq_count: 0 });
    expect(rec.errors).toHaveLength(2);
    expect(rec.errors[0]).toMatch(/^parse error in in\.ndjson: invalid JSON/);
    expect(rec.errors[1]).toBe(`transform error in in.ndjson: transforms[0] (cast): cast: field 'i' value "x" is not a valid int`);
  });

  it('dlq: envelopes carry exactly the spec fields; raw is the bad line in base64 at the parse stage only', async () => {
    const out = capture('out');
    const dead = capture('dead');
    const rec = await run(base(ndjsonInput(bad), `${castInt}\n  on_error: dlq\n  dlq: { type: memory, id: dead }`));
    expect(parseNdjson(out.text)).toEqual([{ i: 0 }, { i: 2 }, { i: 4 }]);
    expect(rec).toMatchObject({ records_out: 3, records_skipped: 2, dlq_count: 2 });
    const envs = parseNdjson(dead.text);
    expect(envs).toHaveLength(2);
    for (const e of envs) {
      expect(Object.keys(e).sort()).toEqual(['_error', '_pipeline', '_run_id', '_stage', '_timestamp', 'raw', 'record']);
      expect(e._pipeline).toBe('t');
      expect(e._run_id).toBe(rec.run_id);
      expect(new Date(e._timestamp).toISOString()).toBe(e._timestamp);
    }
    expect(envs[0]).toMatchObject({ _stage: 'parse', record: null });
    expect(Buffer.from(envs[0].raw, 'base64').toString()).toBe('{"i":1');
    expect(envs[1]).toMatchObject({ _stage: 'transform', record: { i: 'x' }, raw: null });
  });

  it('dlq: a failed write sends its records with stage sink', async () => {
    capture('out', { failFirst: -1 });
    const dead = capture('dead');
    const rec = await run(base(ndjsonInput(rows(3)), `  on_error: dlq\n  dlq: { type: memory, id: dead }`));
    const envs = parseNdjson(dead.text);
    expect(envs.map((e) => [e._stage, e.record, e.raw])).toEqual([
      ['sink', { i: 0 }, null],
      ['sink', { i: 1 }, null],
      ['sink', { i: 2 }, null],
    ]);
    expect(envs[0]._error).toBe('sinks[0] (memory): memory sink out refused the write');
    expect(rec).toMatchObject({ status: 'success', records_out: 0, records_skipped: 3, dlq_count: 3 });
  });

  it('dlq: a DLQ that cannot be written is logged and swallowed, and the input stays in place', async () => {
    const src = ndjsonInput(bad);
    const moved = tempDir();
    capture('out');
    capture('dead', { failFirst: -1 });
    const rec = await run(
      base(src, `${castInt}\n  on_error: dlq\n  dlq: { type: memory, id: dead }`).replace('path: ', `move_after_read: ${JSON.stringify(moved)}, path: `),
    );
    expect(rec.status).toBe('success');
    expect(rec.dlq_count).toBe(0);
    expect(rec.errors.some((e) => e.startsWith('dead-letter write failed: 2 records kept in in.ndjson'))).toBe(true);
    expect(existsSync(join(src, 'in.ndjson'))).toBe(true);
    expect(readdirSync(moved)).toEqual([]);
  });

  it('abort: the first error stops the run with status aborted and the input in place', async () => {
    const src = ndjsonInput(bad);
    const moved = tempDir();
    capture('out');
    const rec = await run(base(src, `  on_error: abort`).replace('path: ', `move_after_read: ${JSON.stringify(moved)}, path: `));
    expect(rec.status).toBe('aborted');
    expect(rec.error).toMatch(/^parse error in in\.ndjson: invalid JSON/);
    expect(existsSync(join(src, 'in.ndjson'))).toBe(true);
  });

  it('abort: a sink failure after its retries aborts', async () => {
    capture('out', { failFirst: -1 });
    const rec = await run(base(ndjsonInput(rows(2)), `  on_error: abort`));
    expect(rec).toMatchObject({ status: 'aborted', error: 'sinks[0] (memory): memory sink out refused the write' });
  });

  it('retry: a failing sink is retried past retry_count until it succeeds, losing nothing', async () => {
    const out = capture('out', { failFirst: 3 });
    const rec = await run(base(ndjsonInput(rows(3)), `  on_error: retry`, `    - { type: memory, id: out, retry_count: 0, retry_delay_seconds: 0.01 }`));
    expect(out.attempts).toHaveLength(4);
    expect(parseNdjson(out.text)).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }]);
    expect(rec).toMatchObject({ status: 'success', records_out: 3, records_skipped: 0 });
  });

  it('continue: a sink write failure skips its records and leaves the file for the next run', async () => {
    const src = ndjsonInput(rows(2));
    const moved = tempDir();
    capture('out', { failFirst: -1 });
    const rec = await run(base(src).replace('path: ', `move_after_read: ${JSON.stringify(moved)}, path: `));
    expect(rec).toMatchObject({ status: 'success', records_out: 0, records_skipped: 2 });
    expect(rec.errors).toContain('in.ndjson left in place: 2 records were not delivered');
    expect(existsSync(join(src, 'in.ndjson'))).toBe(true);
  });
});

describe('sink reliability', () => {
  it('retries retry_count times with retry_delay_seconds doubling', async () => {
    const out = capture('out', { failFirst: 3 });
    const rec = await run(base(ndjsonInput(rows(1)), '', `    - { type: memory, id: out, retry_count: 3, retry_delay_seconds: 0.1 }`));
    expect(rec.records_out).toBe(1);
    const gaps = out.attempts.slice(1).map((t, i) => t - out.attempts[i]!);
    expect(gaps).toHaveLength(3);
    // 100, 200, 400 ms (timers never fire early; allow scheduling slack above)
    [100, 200, 400].forEach((want, i) => {
      expect(gaps[i]).toBeGreaterThanOrEqual(want - 2);
      expect(gaps[i]).toBeLessThan(want + 400);
    });
  });

  it('gives up after retry_count retries', async () => {
    const out = capture('out', { failFirst: -1 });
    const rec = await run(base(ndjsonInput(rows(1)), '', `    - { type: memory, id: out, retry_count: 2, retry_delay_seconds: 0 }`));
    expect(out.attempts).toHaveLength(3);
    expect(rec.records_skipped).toBe(1);
  });

  it('opens the circuit after N consecutive failures and skips the sink for 60 s, across runs', async () => {
    const out = capture('out', { failFirst: -1 });
    const breakers = new Map<string, CircuitBreaker>();
    const yaml = base(ndjsonInput(rows(30)), '', `    - { type: memory, id: out, circuit_breaker_threshold: 2 }`);
    const rec = await run(yaml, { breakers, chunkBytes: 8 }); // one chunk (write) per line
    expect(out.attempts).toHaveLength(2);
    expect(rec.records_skipped).toBe(30);
    expect(rec.errors.some((e) => /circuit open \(skipped for (59|60) s more after 2 consecutive failures\)/.test(e))).toBe(true);
    // The breaker outlives the run: the next run skips the sink without trying.
    out.failFirst = 0;
    const rec2 = await run(yaml, { breakers });
    expect(out.attempts).toHaveLength(2);
    expect(rec2.records_out).toBe(0);
  });

  it('closes the circuit after the open period and tries again', async () => {
    let now = 0;
    const b = new CircuitBreaker(2, () => now);
    b.failure();
    expect(b.isOpen()).toBe(false);
    b.failure();
    expect(b.isOpen()).toBe(true);
    now = 59_999;
    expect(b.isOpen()).toBe(true);
    now = 60_000;
    expect(b.isOpen()).toBe(false);
    b.failure(); // a failed trial re-opens at once
    expect(b.isOpen()).toBe(true);
    now = 120_000;
    b.success();
    b.failure();
    expect(b.isOpen()).toBe(false);
  });

  it('rate_limit_rps takes one token per sink write and blocks when the bucket is empty', async () => {
    const out = capture('out');
    await run(base(ndjsonInput(rows(25)), '  rate_limit_rps: 10'), { chunkBytes: 8 });
    expect(out.batches).toHaveLength(25);
    // A bucket of 10 tokens refilled at 10/s: writes 11..25 wait 100 ms each.
    const span = out.attempts[24]! - out.attempts[0]!;
    expect(span).toBeGreaterThanOrEqual(1400);
    const firstTen = out.attempts[9]! - out.attempts[0]!;
    expect(firstTen).toBeLessThan(600);
  });

  it('parallel_sinks writes to all sinks at once; otherwise one after the other', async () => {
    const yaml = (parallel: boolean) =>
      base(ndjsonInput(rows(1)), `  parallel_sinks: ${parallel}`, `    - { type: memory, id: a }\n    - { type: memory, id: b }`);
    for (const parallel of [true, false]) {
      const a = capture('a', { delayMs: 100 });
      const b = capture('b', { delayMs: 100 });
      await run(yaml(parallel));
      const overlap = b.attempts[0]! < a.attempts[0]! + 100;
      expect(overlap).toBe(parallel);
    }
  });
});

describe('chunks, threads and finalize (rules 3 and 5)', () => {
  it('record_chunk_size bounds the records per decode window', async () => {
    const out = capture('out');
    const rec = await run(base(ndjsonInput(rows(95)), '  record_chunk_size: 10'));
    expect(out.batches.map((b) => b.count)).toEqual([10, 10, 10, 10, 10, 10, 10, 10, 10, 5]);
    expect(rec.records_out).toBe(95);
  });

  it.each([2, 3])('thread_workers %i keeps input order and caps chunks in flight at 2 x thread_workers', async (threads) => {
    const out = capture('out', { delayMs: 5 });
    const n = 4000;
    const depth: number[] = [];
    const rec = await run(
      base(
        ndjsonInput(rows(n, (i) => ({ i, pad: 'x'.repeat(40) }))),
        `  thread_workers: ${threads}\n  transforms:\n    - { type: filter, expression: i % 3 != 0 }`,
      ),
      { chunkBytes: 4096, onQueueDepth: (d) => depth.push(d) },
    );
    expect(rec).toMatchObject({ status: 'success', records_in: n });
    const got = parseNdjson(out.text).map((r) => r.i);
    expect(got).toEqual(Array.from({ length: n }, (_, i) => i).filter((i) => i % 3 !== 0));
    expect(Math.max(...depth)).toBe(2 * threads);
    // The gauge follows deliveries too: it ends at 0, not at the last submit's depth.
    expect(depth.at(-1)).toBe(0);
  });

  it('thread_workers: a failed write is dead-lettered with its records rebuilt on the main thread', async () => {
    capture('out', { failFirst: -1 });
    const dead = capture('dead');
    const rec = await run(base(ndjsonInput(rows(50)), `  thread_workers: 2\n  on_error: dlq\n  dlq: { type: memory, id: dead }`), { chunkBytes: 64 });
    expect(parseNdjson(dead.text).map((e) => e.record.i)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(rec.dlq_count).toBe(50);
  });

  it('finalizes a file (move) only after all of its chunks are written, and after the sinks closed the unit', async () => {
    const src = ndjsonInput(rows(200));
    writeFileSync(join(src, 'b.ndjson'), rows(50).join('\n') + '\n');
    const moved = tempDir();
    const seen: boolean[] = [];
    const out = capture('out', { delayMs: 2 });
    out.onWrite = (b) => {
      if (b.meta.source_filename === 'in.ndjson') seen.push(existsSync(join(src, 'in.ndjson')));
    };
    const rec = await run(base(src, '  thread_workers: 2').replace('path: ', `move_after_read: ${JSON.stringify(moved)}, path: `), { chunkBytes: 256 });
    expect(rec.records_out).toBe(250);
    expect(seen.length).toBeGreaterThan(5);
    expect(seen.every(Boolean)).toBe(true);
    expect(readdirSync(moved).sort()).toEqual(['b.ndjson', 'in.ndjson']);
    expect(out.ends).toBe(2);
  });

  it('a stopped run delivers what is in flight, leaves the unfinished file in place and is aborted', async () => {
    const src = ndjsonInput(rows(500));
    const moved = tempDir();
    const ac = new AbortController();
    const out = capture('out');
    out.onWrite = () => {
      if (out.batches.length === 3) ac.abort();
    };
    const rec = await run(base(src).replace('path: ', `move_after_read: ${JSON.stringify(moved)}, path: `), { chunkBytes: 64, signal: ac.signal });
    expect(rec.status).toBe('aborted');
    expect(rec.records_out).toBe(parseNdjson(out.text).length);
    expect(rec.records_out).toBeLessThan(500);
    expect(existsSync(join(src, 'in.ndjson'))).toBe(true);
  });

  it('batch_size stops taking new files once reached (a file is never cut in half)', async () => {
    const src = tempDir();
    for (const f of ['a', 'b', 'c']) writeFileSync(join(src, `${f}.ndjson`), rows(10).join('\n') + '\n');
    const moved = tempDir();
    capture('out');
    const rec = await run(base(src, '  batch_size: 15').replace('path: ', `move_after_read: ${JSON.stringify(moved)}, path: `));
    expect(rec.records_in).toBe(20);
    expect(readdirSync(moved).sort()).toEqual(['a.ndjson', 'b.ndjson']);
    expect(readdirSync(src)).toEqual(['c.ndjson']);
  });

  it('fails the run with a clear error when the source cannot be read', async () => {
    capture('out');
    const missing = join(tempDir(), 'nope');
    const rec = await run(base(missing));
    expect(rec.status).toBe('failed');
    expect(rec.error).toContain(missing);
  });

  it('CSV chunks never split a quoted field across a chunk boundary', async () => {
    const src = tempDir();
    const lines = ['id,text'];
    for (let i = 0; i < 200; i++) lines.push(`${i},"line one\nline two, with ""quotes"""`);
    writeFileSync(join(src, 'x.csv'), lines.join('\n') + '\n');
    const out = capture('out');
    mkdirSync(join(src, 'sub'));
    const rec = await run(base(src).replace('{ type: ndjson }\n  serializer_out', '{ type: csv }\n  serializer_out'), { chunkBytes: 100 });
    expect(rec).toMatchObject({ records_in: 200, records_out: 200, records_skipped: 0 });
    expect(parseNdjson(out.text)[199]).toEqual({ id: '199', text: 'line one\nline two, with "quotes"' });
    expect(out.batches.length).toBeGreaterThan(10);
  });
});

describe('stream mode', () => {
  it('bounds the queue between source and sink at 2 x thread_workers, acks only delivered messages, and ends with success when stopped', async () => {
    const out = capture('out', { delayMs: 20 });
    const acked = capture('acked');
    const ac = new AbortController();
    const depth: number[] = [];
    out.onWrite = () => {
      if (out.attempts.length === 15) ac.abort();
    };
    const rec = await runPipeline(
      pipeline(`
version: "1"
pipeline:
  name: s
  schedule: { type: stream }
  thread_workers: 2
  source: { type: counter, acked: acked }
  serializer_in: { type: ndjson }
  serializer_out: { type: ndjson }
  sinks: [{ type: memory, id: out }]
`),
      { registry: testRegistry, signal: ac.signal, onQueueDepth: (d) => depth.push(d) },
    );
    expect(rec.status).toBe('success');
    expect(Math.max(...depth)).toBe(4);
    // A slow sink slowed the source: it produced only what the bounded queue let through.
    expect(rec.records_in).toBeLessThanOrEqual(15 + 4);
    const written = parseNdjson(out.text).map((r) => r.n);
    expect(written).toEqual(Array.from({ length: written.length }, (_, i) => i));
    expect(acked.batches.map((b) => Number(b.payload.toString()))).toEqual(written);
  });
});
