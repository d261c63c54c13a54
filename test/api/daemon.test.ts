// The daemon itself (spec doc 2 section 4): GET /api/daemon/status and POST /api/daemon/stop.
import { describe, expect, it } from 'vitest';
import { testDaemon } from '../helpers/daemon.js';
import { localYaml, readNdjson, register, SLOW, webhookYaml, workArea } from './_helpers.js';

describe('daemon', () => {
  it('GET /api/daemon/status reports status, mode, uptime, active streams and runs, next runs', async () => {
    const d = await testDaemon();
    const w = workArea(6);
    await register(d, webhookYaml('st-stream', { path: 'st', outDir: w.outDir }));
    await register(d, localYaml('st-batch', { ...w, extra: SLOW }));
    await register(d, localYaml('st-cron', { ...w, schedule: '{ type: cron, cron: "0 0 1 1 *" }' }));
    const registered = Date.now();
    await register(d, localYaml('st-int', { ...w, schedule: '{ type: interval, interval_seconds: 3600 }' }));
    await register(d, localYaml('st-off', { ...w, schedule: '{ type: interval, interval_seconds: 60 }', enabled: false }));
    const t = await d.call('POST', '/api/pipelines/st-batch/run');
    expect(t.status).toBe(202);
    const r = await d.call('GET', '/api/daemon/status');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'running', mode: 'standalone' });
    expect(Number.isInteger(r.body.uptime_seconds)).toBe(true);
    expect(r.body.uptime_seconds).toBeGreaterThanOrEqual(0);
    expect(r.body.active_streams).toEqual([{ pipeline: 'st-stream', run_id: expect.any(String) }]);
    expect(r.body.active_runs).toEqual([{ pipeline: 'st-batch', run_id: t.body.run_id }]);
    // Cron and interval schedules both list their next fire time; manual, disabled and streams do not.
    const next = Object.fromEntries(r.body.next_runs.map((n: { pipeline: string; next_run: string }) => [n.pipeline, n.next_run]));
    expect(Object.keys(next).sort()).toEqual(['st-cron', 'st-int']);
    const cronAt = new Date(next['st-cron']); // croner works in local time
    expect([cronAt.getMonth(), cronAt.getDate(), cronAt.getHours(), cronAt.getMinutes()]).toEqual([0, 1, 0, 0]);
    const inOneHour = Date.parse(next['st-int']) - registered;
    expect(inOneHour).toBeGreaterThanOrEqual(3600_000 - 50);
    expect(inOneHour).toBeLessThan(3600_000 + 5000);
    await d.call('POST', '/api/pipelines/st-int/stop');
    expect((await d.call('GET', '/api/daemon/status')).body.next_runs.map((n: { pipeline: string }) => n.pipeline)).toEqual(['st-cron']);
    await d.call('POST', '/api/pipelines/st-batch/stop');
  });

  it('while the daemon drains, /api/ready is 503 and the daemon status says stopping', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, webhookYaml('draining', { path: 'dr', outDir: w.outDir, extra: ['rate_limit_rps: 4'] }));
    const accepted: unknown[] = [];
    for (let n = 0; n < 16; n++) if ((await d.call('POST', '/webhooks/dr', { body: { n } })).status === 202) accepted.push(n);
    const stopping = d.stop();
    const ready = await d.call('GET', '/api/ready');
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ status: 'not ready', db: 'ok', scheduler: 'stopping' });
    expect((await d.call('GET', '/api/daemon/status')).body.status).toBe('stopping');
    await stopping;
    expect(readNdjson(w.outFile)).toHaveLength(accepted.length);
  });

  it('POST /api/daemon/stop answers 202 and the daemon stops', async () => {
    const d = await testDaemon();
    const w = workArea(2);
    await register(d, webhookYaml('stop-stream', { path: 'stop', outDir: w.outDir }));
    const r = await d.call('POST', '/api/daemon/stop');
    expect(r.status).toBe(202);
    expect(r.body.status).toBe('stopping');
    await d.stopped;
    await expect(fetch(d.url + '/api/health')).rejects.toThrow();
  });
});
