// "A crash never loses data that was acknowledged": a webhook body answered 202 is on disk (the
// spool) before the answer, and a daemon killed with SIGKILL delivers it after its restart
// (at-least-once: duplicates allowed, losses not). A body that cannot be stored is a 503.
import { existsSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Spool } from '../../src/plugins/connector-runtime/spool.js';
import { serveChild, testDaemon } from '../helpers/daemon.js';
import { until } from '../helpers/wait.js';
import { tempDir } from '../helpers/fs.js';
import { expectError, readNdjson, register, webhookYaml, workArea } from './_helpers.js';

afterEach(() => {
  vi.restoreAllMocks();
});

/** A real `svc serve` child process on `dir` (its SQLite file, and the state folder beside it). */
async function serve(dir: string) {
  const s = await serveChild({
    SVC_DB_PATH: join(dir, 'svc.db'),
    SVC_STATE_DIR: '', // the default: `state` beside the database
    SVC_PIPELINE_DIR: join(dir, 'pipelines'),
  });
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(s.url + path, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  return { ...s, post };
}

describe('webhook durability', () => {
  it('kill -9 with accepted bodies still queued: after the restart every accepted body is in the output', async () => {
    const dir = tempDir('svc-durable-');
    const w = workArea(0);
    // A slow sink: 5 writes per second, at most 10 bodies per write (50 bodies/s).
    const yaml = webhookYaml('durable', { path: 'in/alarms', outDir: w.outDir, maxQueue: 5000, extra: ['rate_limit_rps: 5', 'record_chunk_size: 10'] });

    const first = await serve(dir);
    const created = await fetch(first.url + '/api/pipelines', { method: 'POST', body: yaml, headers: { 'content-type': 'application/yaml' } });
    expect(created.status, await created.text()).toBe(201);
    await until(async () => (await first.post('/webhooks/in/alarms', JSON.stringify({ id: 'probe' }))).status === 202);
    const accepted = new Set<string>(['probe']);

    // 300 bodies at once: all accepted, most of them still waiting for the slow sink.
    const ids = Array.from({ length: 300 }, (_, i) => `a${i}`);
    const res = await Promise.all(ids.map((id) => first.post('/webhooks/in/alarms', JSON.stringify({ id, severity: 'major' }))));
    expect(res.map((r) => r.status)).toEqual(ids.map(() => 202));
    for (const id of ids) accepted.add(id);

    // More keep coming while the daemon is killed: every one answered 202 counts.
    let n = 0;
    let sending = true;
    const sender = (async () => {
      while (sending) {
        const id = `b${n++}`;
        const r = await first.post('/webhooks/in/alarms', JSON.stringify({ id })).catch(() => undefined);
        if (!r) break; // the daemon is gone
        if (r.status === 202) accepted.add(id);
      }
    })();
    await until(() => n >= 200 && readNdjson(w.outFile).length >= 20);
    first.child.kill('SIGKILL');
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    sending = false;
    await sender;
    const beforeRestart = readNdjson(w.outFile).length;
    // The crash really left accepted bodies unwritten (else this test proves nothing).
    expect(beforeRestart).toBeLessThan(accepted.size / 2);
    // The spool is in the state folder beside the database (SVC_STATE_DIR empty).
    expect(existsSync(join(dir, 'state', 'spool', 'durable', 'in%2Falarms'))).toBe(true);

    // Same database, same state: the stream comes back and replays what was not committed.
    const second = await serve(dir);
    // Accepted at once while the replay runs; delivered after everything replayed.
    await until(async () => (await second.post('/webhooks/in/alarms', JSON.stringify({ id: 'after-restart' }))).status === 202);
    accepted.add('after-restart');
    const written = () => new Set(readNdjson(w.outFile).map((r) => String(r.id)));
    await until(() => [...accepted].every((id) => written().has(id)), 40_000, 'every accepted body written', 250).catch((e: Error) => {
      const missing = [...accepted].filter((id) => !written().has(id));
      throw new Error(
        `${e.message}: ${missing.length} of ${accepted.size} accepted bodies missing (${missing.slice(0, 10).join(', ')}...); stderr: ${second.stderr()}`,
      );
    });
    expect(readNdjson(w.outFile).at(-1)).toEqual({ id: 'after-restart' });
    const lines = readNdjson(w.outFile).length;
    console.log(
      `durability: ${accepted.size} accepted, ${beforeRestart} written before kill -9, ${lines} lines after restart (${lines - written().size} duplicates), nothing lost`,
    );

    // A graceful stop commits everything delivered: nothing is left to replay.
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    const spool = await Spool.open(join(dir, 'state', 'spool', 'durable', 'in%2Falarms'));
    try {
      let left = 0;
      for await (const _ of spool.replay()) left++;
      expect(left).toBe(0);
    } finally {
      await spool.close();
    }
  }, 90_000);

  it('a body that cannot be stored is a 503 with a detail (the sender keeps it); SVC_STATE_DIR holds the spool', async () => {
    const state = tempDir('svc-state-');
    const d = await testDaemon({ SVC_STATE_DIR: state });
    const w = workArea(0);
    await register(d, webhookYaml('fragile', { path: 'fragile', outDir: w.outDir }));
    await until(async () => (await d.call('POST', '/webhooks/fragile', { body: { n: 1 } })).status === 202);
    expect(existsSync(join(state, 'spool', 'fragile', 'fragile'))).toBe(true);

    // The disk fails the next write (FileHandle.writev is what the spool writes with).
    const fh = await open(fileURLToPath(import.meta.url), 'r');
    const proto = Object.getPrototypeOf(fh);
    await fh.close();
    vi.spyOn(proto, 'writev').mockRejectedValueOnce(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }));
    const r = await d.call('POST', '/webhooks/fragile', { body: { n: 2 } });
    expect(expectError(r, 503)).toMatch(/could not be stored \(spool write failed \(ENOSPC\)\); retry shortly/);
    expect(r.headers.get('retry-after')).toBe('1');

    // The sender retries; the spool goes on.
    expect((await d.call('POST', '/webhooks/fragile', { body: { n: 2 } })).status).toBe(202);
    await until(() => readNdjson(w.outFile).length === 2);
    expect(readNdjson(w.outFile)).toEqual([{ n: 1 }, { n: 2 }]);
  });
});
