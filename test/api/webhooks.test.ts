// POST /webhooks/{path} (spec doc 2 sections 4, 5.6, 7, 8; doc 3 source `webhook`): queued bodies
// reach the sink, unknown paths, bearer secrets, a full queue, the body limit, nested paths.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testDaemon } from '../helpers/daemon.js';
import { until } from '../helpers/wait.js';
import { expectError, readNdjson, register, webhookYaml, workArea } from './_helpers.js';

describe('webhooks', () => {
  it('202 {status: queued}; the body reaches the sink; any content type is accepted', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, webhookYaml('hook', { path: 'alarms', outDir: w.outDir }));
    const r = await d.call('POST', '/webhooks/alarms', { body: { id: 1, severity: 'major' } });
    expect(r.status).toBe(202);
    expect(r.body).toEqual({ status: 'queued' });
    const t = await d.call('POST', '/webhooks/alarms', { body: '{"id": 2}', headers: { 'content-type': 'text/plain' } });
    expect(t.status).toBe(202);
    const o = await d.call('POST', '/webhooks/alarms', { body: '{"id": 3}', headers: { 'content-type': 'application/octet-stream' } });
    expect(o.status).toBe(202);
    await until(() => readNdjson(w.outFile).length === 3);
    expect(readNdjson(w.outFile)).toEqual([{ id: 1, severity: 'major' }, { id: 2 }, { id: 3 }]);
  });

  it('bodies that arrive together are decoded one by one: a bad one is dead-lettered with its raw bytes, the others flow in order', async () => {
    const d = await testDaemon();
    const w = workArea();
    const dlqDir = join(w.outDir, 'dlq');
    await register(
      d,
      webhookYaml('batchy', {
        path: 'batch',
        outDir: w.outDir,
        extra: ['on_error: dlq', `dlq: { type: local, path: ${JSON.stringify(dlqDir)}, filename_template: dlq.ndjson }`],
      }),
    );
    // Sent at once, so the source takes several bodies as one unit.
    const sends = Array.from({ length: 40 }, (_, i) => (i === 17 ? '{"id": 17,' : JSON.stringify({ id: i })));
    const res = await Promise.all(sends.map((b) => d.call('POST', '/webhooks/batch', { body: b })));
    expect(res.every((r) => r.status === 202)).toBe(true);
    await until(() => readNdjson(w.outFile).length === 39 && readNdjson(join(dlqDir, 'dlq.ndjson')).length === 1);
    expect(
      readNdjson(w.outFile)
        .map((r) => r.id)
        .sort((a, b) => Number(a) - Number(b)),
    ).toEqual(Array.from({ length: 40 }, (_, i) => i).filter((i) => i !== 17));
    const [env] = readNdjson(join(dlqDir, 'dlq.ndjson'));
    expect(env).toMatchObject({ _stage: 'parse', record: null, _pipeline: 'batchy' });
    expect(Buffer.from(String(env!.raw), 'base64').toString()).toBe('{"id": 17,');
  });

  it('an unknown path is 404 {detail}', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, webhookYaml('hook', { path: 'known', outDir: w.outDir }));
    expect(expectError(await d.call('POST', '/webhooks/unknown', { body: { a: 1 } }), 404)).toContain('unknown');
    expectError(await d.call('POST', '/webhooks/known/deeper', { body: { a: 1 } }), 404);
  });

  it('with a secret: missing or wrong bearer is 401, the right one 202', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, webhookYaml('sec', { path: 'sec', outDir: w.outDir, secret: 's3cret' }));
    expectError(await d.call('POST', '/webhooks/sec', { body: { n: 1 } }), 401);
    expectError(await d.call('POST', '/webhooks/sec', { body: { n: 2 }, headers: { authorization: 'Bearer wrong' } }), 401);
    expectError(await d.call('POST', '/webhooks/sec', { body: { n: 3 }, headers: { authorization: 's3cret' } }), 401);
    expectError(await d.call('POST', '/webhooks/sec', { body: { n: 4 }, headers: { authorization: 'Bearer s3cretx' } }), 401);
    const ok = await d.call('POST', '/webhooks/sec', { body: { n: 5 }, headers: { authorization: 'Bearer s3cret' } });
    expect(ok.status).toBe(202);
    expect(ok.body).toEqual({ status: 'queued' });
    // The scheme is case-insensitive (RFC 7235).
    expect((await d.call('POST', '/webhooks/sec', { body: { n: 6 }, headers: { authorization: 'bearer s3cret' } })).status).toBe(202);
    await until(() => readNdjson(w.outFile).length === 2);
    expect(readNdjson(w.outFile)).toEqual([{ n: 5 }, { n: 6 }]);
  });

  it('a full queue answers 503 with Retry-After; accepted bodies are all delivered', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, webhookYaml('full', { path: 'full', outDir: w.outDir, maxQueue: 1, extra: ['rate_limit_rps: 1'] }));
    const results = await Promise.all(Array.from({ length: 12 }, (_, n) => d.call('POST', '/webhooks/full', { body: { n } }).then((r) => ({ n, r }))));
    const accepted = results.filter((x) => x.r.status === 202).map((x) => x.n);
    const refused = results.filter((x) => x.r.status !== 202);
    expect(accepted.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    for (const { r } of refused) {
      expectError(r, 503);
      expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
    }
    await until(() => readNdjson(w.outFile).length === accepted.length, 15_000);
    expect(
      readNdjson(w.outFile)
        .map((x) => x.n)
        .sort((a, b) => Number(a) - Number(b)),
    ).toEqual(accepted);
  });

  it('a body over SVC_WEBHOOK_MAX_BODY_BYTES is 413; the API keeps its own 1 MiB limit', async () => {
    const d = await testDaemon({ SVC_WEBHOOK_MAX_BODY_BYTES: '1000' });
    const w = workArea();
    await register(d, webhookYaml('small', { path: 'small', outDir: w.outDir }));
    const big = JSON.stringify({ pad: 'x'.repeat(1200) });
    expect(expectError(await d.call('POST', '/webhooks/small', { body: big }), 413)).toContain('1000');
    expectError(await d.call('POST', '/webhooks/small', { body: big, headers: { 'content-type': 'text/plain' } }), 413);
    const fits = JSON.stringify({ pad: 'x'.repeat(900) });
    expect((await d.call('POST', '/webhooks/small', { body: fits })).status).toBe(202);
    await until(() => readNdjson(w.outFile).length === 1);
    // Pipeline YAML bodies above the webhook limit are still fine.
    const r = await d.call('POST', '/api/pipelines/dry-run', { yaml: webhookYaml('x', { path: 'x', outDir: w.outDir }) + '#' + 'y'.repeat(5000) + '\n' });
    expect(r.status).toBe(200);
    expect(r.body.valid).toBe(true);
  });

  it('nested paths (a/b/c) work', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, webhookYaml('nested', { path: 'a/b/c', outDir: w.outDir }));
    expect((await d.call('POST', '/webhooks/a/b/c', { body: { deep: true } })).status).toBe(202);
    expectError(await d.call('POST', '/webhooks/a/b', { body: { deep: false } }), 404);
    await until(() => readNdjson(w.outFile).length === 1);
    expect(readNdjson(w.outFile)).toEqual([{ deep: true }]);
  });

  it('two streams cannot serve the same path', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, webhookYaml('first', { path: 'shared', outDir: w.outDir }));
    await register(d, webhookYaml('second', { path: 'shared', outDir: w.outDir }));
    // The first keeps the path; the second fails to start.
    await until(async () => (await d.call('GET', '/api/pipelines/second')).body.status === 'error');
    expect((await d.call('GET', '/api/pipelines/second')).body.error).toContain('shared');
    expect((await d.call('GET', '/api/pipelines/first')).body.status).toBe('running');
    expect((await d.call('POST', '/webhooks/shared', { body: { who: 1 } })).status).toBe(202);
  });
});
