// The redis connector in list mode: the shared conformance suite (against a private, persistent
// redis-server that disrupt() restarts), then what it does not cover: a killed run loses nothing
// (the processing list), identical payloads, an undelivered batch, stream-mode positions and
// stream_id, stream entry bodies, authentication, db, a key of the wrong type, maxlen, lint, and
// acknowledgements that do not wait behind a blocking read. Stream mode's conformance run is in
// redis-stream.test.ts.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { Redis } from 'ioredis';
import { loadPipelineText } from '../../src/config/load.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline, type RunTelemetry } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { lastIdKey, processingKey } from '../../src/plugins/connectors/redis/source.js';
import type { ConnectionState } from '../../src/plugins/types.js';
import { tempDir } from '../helpers/fs.js';
import { checkSequence, conformance, uniqueChannel, type Cfg, type Rec } from './conformance.js';
import { loadPipeline as load, outputRecords, until } from './helpers.js';
import { admin, contents, put, redisList, redisServer, SHARED, type RedisServer } from './peers/redis.js';

conformance(redisList);

const root = fileURLToPath(new URL('../../', import.meta.url));
const bodies = (from: number, n: number) => Array.from({ length: n }, (_, i) => Buffer.from(JSON.stringify({ seq: from + i, pad: 'x'.repeat(16) })));

const pipelineOf = (name: string, source: Cfg, out: string, extra: Cfg = {}): Cfg => ({
  name,
  schedule: { type: 'manual' },
  source: { type: 'redis', host: SHARED.host, port: SHARED.port, ...source },
  serializer_in: { type: 'json' },
  serializer_out: { type: 'ndjson' },
  sinks: [{ type: 'local', path: out, filename_template: 'out-{run_id}.ndjson' }],
  ...extra,
});

/** One batch run (manual schedule) from a redis source into an NDJSON directory. */
async function batchRun(name: string, source: Cfg, extra: Cfg = {}, out = tempDir('svc-redis-out-')) {
  const states: ConnectionState[] = [];
  const telemetry: RunTelemetry = { connection: (c, _t, s) => void (c === 'source' && states.push(s)) };
  const rec = await runPipeline(load(pipelineOf(name, source, out, extra)), { telemetry, log: silentLogger, processed: new MemoryProcessedFiles() });
  return { rec, out, states, records: () => outputRecords(out) };
}

/** A batch run from NDJSON records into one redis sink. */
async function sinkRun(name: string, sink: Cfg, records: Rec[]) {
  const dir = tempDir('svc-redis-in-');
  mkdirSync(join(dir, 'in'));
  writeFileSync(join(dir, 'in', 'r.ndjson'), records.map((r) => JSON.stringify(r) + '\n').join(''));
  const cfg = load({
    name,
    schedule: { type: 'manual' },
    source: { type: 'local', path: join(dir, 'in') },
    serializer_in: { type: 'ndjson' },
    serializer_out: { type: 'json' },
    sinks: [{ type: 'redis', host: SHARED.host, port: SHARED.port, ...sink }],
  });
  return runPipeline(cfg, { log: silentLogger, processed: new MemoryProcessedFiles() });
}

let r: Redis;
const keys: string[] = [];
/** A key of this test alone; it, its processing lists and stored IDs are deleted after the file. */
const newKey = () => {
  const k = uniqueChannel('redis');
  keys.push(k);
  return k;
};
beforeAll(() => {
  r = admin(SHARED);
});
afterAll(async () => {
  for (const k of keys) {
    const related = await r.keys(`${k}*`);
    if (related.length) await r.del(...related);
  }
  r.disconnect();
});
const servers: RedisServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
});

describe('redis list: a crash loses nothing', () => {
  it('items a killed `svc run` left in the processing list are delivered at the next start', async () => {
    const key = newKey();
    const name = `redis-crash-${process.pid}`;
    const n = 2000;
    await put(r, key, 'list', bodies(0, n));
    const out1 = tempDir('svc-redis-out-');
    const dir = tempDir('svc-redis-cli-');
    const file = join(dir, 'p.yaml');
    // Slow on purpose (50-record chunks, 10 writes/s): the run is mid-way when it is killed.
    writeFileSync(file, stringify({ version: '1', pipeline: pipelineOf(name, { key, count: 50 }, out1, { record_chunk_size: 50, rate_limit_rps: 10 }) }));
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'run', file], {
      cwd: root,
      env: { ...process.env, SVC_STATE_DIR: dir, SVC_LOG_LEVEL: 'ERROR' },
      stdio: 'ignore',
    });
    const exited = once(child, 'exit');
    try {
      await until(() => outputRecords(out1).length >= 200, 30_000, 'the killed run to deliver some records');
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    const first = outputRecords(out1);
    const left = await r.llen(processingKey(key, name));
    expect(left, 'the killed run left items in its processing list').toBeGreaterThan(0);
    expect(first.length).toBeLessThan(n);

    const second = await batchRun(name, { key });
    expect(second.rec.status, JSON.stringify(second.rec)).toBe('success');
    // Everything not acknowledged by the killed run comes again: its processing list, then the rest of the list.
    expect(second.rec.records_in).toBeGreaterThanOrEqual(n - first.length);
    const { missing, duplicates } = checkSequence([...first, ...second.records()], n);
    console.log(`[redis] killed run: ${first.length} delivered, ${left} in the processing list; next run: ${second.rec.records_in} (${duplicates} duplicates)`);
    expect(missing).toEqual([]);
    expect(await r.llen(processingKey(key, name))).toBe(0);
    expect(await r.llen(key)).toBe(0);
  }, 60_000);

  it('identical payloads: every copy is delivered once and the processing list ends empty', async () => {
    const key = newKey();
    const items = ['{"v":1}', '{"v":1}', '{"v":2}', '{"v":1}', '{"v":2}'];
    await r.rpush(key, ...items);
    const run = await batchRun('redis-dups', { key, count: 2 });
    expect(run.rec.records_in).toBe(5);
    expect(run.records().map((x) => x.v)).toEqual([1, 1, 2, 1, 2]);
    expect(await r.llen(processingKey(key, 'redis-dups'))).toBe(0);
  });

  it('a batch that was not delivered stays in the processing list and is delivered first by the next run', async () => {
    const key = newKey();
    await put(r, key, 'list', bodies(0, 30));
    const blocked = tempDir('svc-redis-blocked-');
    writeFileSync(join(blocked, 'file'), 'not a directory');
    const failed = await batchRun('redis-undelivered', { key, count: 10 }, {}, join(blocked, 'file'));
    expect(failed.rec.records_out).toBe(0);
    const kept = await r.lrange(processingKey(key, 'redis-undelivered'), 0, -1);
    expect(kept.length).toBeGreaterThan(0);
    const again = await batchRun('redis-undelivered', { key, count: 10 });
    expect(again.rec.status).toBe('success');
    expect(checkSequence(again.records(), 30)).toEqual({ missing: [], duplicates: 0 });
    expect(
      again
        .records()
        .slice(0, kept.length)
        .map((x) => JSON.stringify(x)),
    ).toEqual(kept);
    expect(await r.llen(processingKey(key, 'redis-undelivered'))).toBe(0);
  });
});

describe('redis stream mode: positions', () => {
  it('stores the last delivered ID at <key>:last-id:<pipeline> and resumes after it', async () => {
    const key = newKey();
    await put(r, key, 'stream', bodies(0, 100));
    const one = await batchRun('redis-resume', { key, mode: 'stream', count: 30 });
    expect(one.rec.records_in).toBe(100);
    const ids = (await r.xrange(key, '-', '+')).map(([id]) => id);
    expect(await r.get(lastIdKey(key, 'redis-resume'))).toBe(ids[99]);
    await put(r, key, 'stream', bodies(100, 50));
    const two = await batchRun('redis-resume', { key, mode: 'stream' });
    expect(two.records().map((x) => x.seq)).toEqual(Array.from({ length: 50 }, (_, i) => 100 + i));
    const three = await batchRun('redis-resume', { key, mode: 'stream' });
    expect(three.rec.records_in).toBe(0);
    expect(three.rec.status).toBe('success');
    // Another pipeline has its own position: it reads everything.
    expect((await batchRun('redis-resume-other', { key, mode: 'stream' })).rec.records_in).toBe(150);
  });

  it("stream_id: '$' skips what exists at the first start; an ID starts after that entry", async () => {
    const key = newKey();
    await put(r, key, 'stream', bodies(0, 10));
    expect((await batchRun('redis-dollar', { key, mode: 'stream', stream_id: '$' })).rec.records_in).toBe(0);
    await put(r, key, 'stream', bodies(10, 5));
    expect((await batchRun('redis-dollar', { key, mode: 'stream', stream_id: '$' })).records().map((x) => x.seq)).toEqual([10, 11, 12, 13, 14]);
    const fifth = (await r.xrange(key, '-', '+'))[4]![0];
    expect((await batchRun('redis-from-id', { key, mode: 'stream', stream_id: fifth })).records().map((x) => x.seq)).toEqual([
      5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
    ]);
  });

  it('an entry with a `data` field is that message; any other entry is its fields as a JSON object', async () => {
    const key = newKey();
    await r.xadd(key, '*', 'data', '{"seq":1,"from":"data"}', 'ignored', 'x');
    await r.xadd(key, '*', 'seq', '2', 'host', 'rtr-1');
    const run = await batchRun('redis-fields', { key, mode: 'stream' });
    expect(run.records()).toEqual([
      { seq: 1, from: 'data' },
      { seq: '2', host: 'rtr-1' },
    ]);
  });
});

describe('redis: configuration and failures', () => {
  it('password: the right one connects; a wrong or missing one fails the check without showing it', async () => {
    const srv = await redisServer({ args: ['--requirepass', 'pw-good-1'] });
    servers.push(srv);
    const key = newKey();
    const good = { type: 'redis', host: srv.host, port: srv.port, password: 'pw-good-1', key, mode: 'list', db: 0 };
    expect(await testConnector('source', good as never)).toMatchObject({ ok: true });
    expect(await testConnector('sink', good as never)).toMatchObject({ ok: true });
    const wrong = await testConnector('sink', { ...good, password: 'pw-bad-2' } as never);
    expect(wrong.error).toMatch(/^redis: WRONGPASS/);
    expect(wrong.error).not.toContain('pw-bad-2');
    const none = await testConnector('source', { ...good, password: undefined } as never);
    expect(none.error).toMatch(/^redis: NOAUTH/);
    const written = await sinkRun('redis-auth', { host: srv.host, port: srv.port, password: 'pw-good-1', key }, [{ seq: 1 }]);
    expect(written.records_out).toBe(1);
  });

  it('bytes_out is what the sink sent: the encoded messages, not a batch payload', async () => {
    const key = newKey();
    const rec = await sinkRun('redis-bytes', { key }, [
      { seq: 1, host: 'r1' },
      { seq: 2, host: 'router-two' },
    ]);
    const stored = await r.lrangeBuffer(key, 0, -1);
    expect(stored.map((b) => JSON.parse(b.toString()).seq)).toEqual([1, 2]);
    expect(rec.bytes_out).toBe(stored.reduce((n, b) => n + b.length, 0));
  });

  it('db selects the database; one out of range fails the check instead of using database 0', async () => {
    const key = newKey();
    expect((await sinkRun('redis-db', { key, db: 3 }, [{ seq: 7 }])).records_out).toBe(1);
    expect(await r.exists(key)).toBe(0);
    const r3 = admin({ ...SHARED, db: 3 });
    try {
      expect(await contents(r3, key, 'list')).toEqual([{ seq: 7 }]);
      const run = await batchRun('redis-db-read', { key, db: 3 });
      expect(run.records()).toEqual([{ seq: 7 }]);
      await r3.del(key, processingKey(key, 'redis-db-read'));
    } finally {
      r3.disconnect();
    }
    const bad = await testConnector('source', { type: 'redis', host: SHARED.host, port: SHARED.port, key, db: 100000, mode: 'list' } as never);
    expect(bad.error).toMatch(/^redis: .*DB index is out of range/);
  });

  it('a key of another type fails the check, and a write at once (not retried)', async () => {
    const key = newKey();
    await r.set(key, 'a string');
    const check = await testConnector('source', { type: 'redis', host: SHARED.host, port: SHARED.port, key, mode: 'list', db: 0 } as never);
    expect(check.error).toBe(`redis: key '${key}' holds a string, not a list (mode: list)`);
    const t0 = Date.now();
    const rec = await sinkRun('redis-wrongtype', { key, mode: 'stream', retry_count: 5, retry_delay_seconds: 0.5 }, [{ seq: 1 }, { seq: 2 }]);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(rec.records_out).toBe(0);
    expect(rec.errors.join('\n')).toMatch(/is not a stream: WRONGTYPE/);
  });

  it('sink maxlen trims the stream (XADD MAXLEN ~); without it the stream keeps everything', async () => {
    const capped = newKey();
    const all = newKey();
    const records = Array.from({ length: 3000 }, (_, i) => ({ seq: i }));
    expect((await sinkRun('redis-maxlen', { key: capped, mode: 'stream', maxlen: 100 }, records)).records_out).toBe(3000);
    expect((await sinkRun('redis-nomaxlen', { key: all, mode: 'stream' }, records)).records_out).toBe(3000);
    const len = await r.xlen(capped);
    expect(len).toBeGreaterThanOrEqual(100);
    expect(len).toBeLessThan(1000); // ~: trimmed by whole nodes, so about 100
    expect(await r.xlen(all)).toBe(3000);
    // The newest entries are the ones kept.
    expect((await contents(r, capped, 'stream')).at(-1)).toEqual({ seq: 2999 });
  });

  it('lint: stream_id and maxlen apply to mode stream only; mode must be list or stream', () => {
    const res = loadPipelineText(
      stringify({
        version: '1',
        pipeline: {
          name: 'redis-lint',
          schedule: { type: 'manual' },
          source: { type: 'redis', key: 'k', stream_id: '$' },
          sinks: [
            { type: 'redis', key: 'k', maxlen: 10 },
            { type: 'redis', key: 'k', mode: 'queue' },
          ],
        },
      }),
      { env: {} },
    );
    expect(res.diagnostics.map((d) => d.path).sort()).toEqual(['pipeline.sinks[0].maxlen', 'pipeline.sinks[1].mode', 'pipeline.source.stream_id']);
  });
});

describe('redis: stream schedule', () => {
  it('acknowledges at once although a read blocks (block_ms 5000): the processing list empties while the next BLMOVE waits', async () => {
    const key = newKey();
    const out = tempDir('svc-redis-out-');
    const stop = new AbortController();
    const states: ConnectionState[] = [];
    const telemetry: RunTelemetry = { connection: (c, _t, s) => void (c === 'source' && states.push(s)) };
    const done = runPipeline(load({ ...pipelineOf('redis-block', { key, block_ms: 5000 }, out), schedule: { type: 'stream' } }), {
      signal: stop.signal,
      telemetry,
      log: silentLogger,
      processed: new MemoryProcessedFiles(),
    });
    await until(() => states.includes('connected'), 10_000, 'connected');
    await until(async () => /cmd=blmove/.test(String(await r.client('LIST'))), 5000, 'the first BLMOVE to wait');
    const t0 = Date.now();
    await put(r, key, 'list', bodies(0, 3));
    await until(() => outputRecords(out).length >= 3, 5000, '3 records');
    await until(async () => (await r.llen(processingKey(key, 'redis-block'))) === 0, 5000, 'the processing list emptied');
    expect(Date.now() - t0).toBeLessThan(3000);
    stop.abort();
    const rec = await done;
    expect(rec.status).toBe('success');
    expect(rec.records_in).toBe(3);
  });
});
