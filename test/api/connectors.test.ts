// Connector checks of spec doc 2: POST /api/connectors/test ({ok, latency_ms, error}),
// POST /api/connectors/test-pipeline ({source, sinks}), dry-run instantiating connectors without
// I/O, and a stream that exhausts max_reconnect_attempts staying in `error`. Against the real
// RabbitMQ of the machine (a vhost and user of this file's own).
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, testDaemon } from '../helpers/daemon.js';
import { quiet, until } from '../helpers/wait.js';

const ctl = (...args: string[]) => promisify(execFile)('rabbitmqctl', ['--quiet', ...args], { timeout: 60_000 });
const vhost = `svc_api_${process.pid}`;
const password = 'api-right-secret';
const url = `amqp://${vhost}:${password}@127.0.0.1:5672/${vhost}`;

beforeAll(async () => {
  await ctl('add_vhost', vhost);
  await ctl('add_user', vhost, password);
  await ctl('set_permissions', '-p', vhost, vhost, '.*', '.*', '.*');
}, 60_000);
afterAll(async () => {
  await ctl('delete_vhost', vhost).catch(() => {});
  await ctl('delete_user', vhost).catch(() => {});
}, 60_000);

const pipelineYaml = (sinks: string) => `version: "1"
pipeline:
  name: checked
  schedule: { type: stream }
  source: { type: amqp, url: "${url}", queue: in }
  sinks:
${sinks}
`;

describe('POST /api/connectors/test', () => {
  it('answers {ok: true, latency_ms, error: null} for a reachable source', async () => {
    const d = await testDaemon();
    const r = await d.call('POST', '/api/connectors/test', { body: { type: 'amqp', url, queue: 'in' } });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ ok: true, latency_ms: expect.any(Number), error: null });
    expect(Number.isInteger(r.body.latency_ms)).toBe(true);
  });

  it('wrong credentials: ok false, and neither the password nor the URL credentials appear', async () => {
    const d = await testDaemon();
    const bad = url.replace(password, 'wrong-horse-battery');
    const r = await d.call('POST', '/api/connectors/test', { body: { type: 'amqp', url: bad, queue: 'in' } });
    expect(r.status).toBe(200);
    expect(r.body.ok).toBe(false);
    expect(r.body.latency_ms).toBeNull();
    expect(r.body.error).toMatch(/^amqp: .*ACCESS_REFUSED/);
    expect(r.text).not.toContain('wrong-horse-battery');
  });

  it('a sink role is checked as a sink: a missing exchange is named', async () => {
    const d = await testDaemon();
    const r = await d.call('POST', '/api/connectors/test', { body: { type: 'amqp', role: 'sink', url, exchange: 'no-such-exchange', routing_key: 'k' } });
    expect(r.body.ok).toBe(false);
    expect(r.body.error).toMatch(/no-such-exchange/);
    expect(r.text).not.toContain(password);
  });

  it('a peer that accepts but never answers fails within timeout_seconds', async () => {
    const silent: Server = createServer(() => {}); // accepts TCP, says nothing
    await new Promise<void>((res) => silent.listen(0, '127.0.0.1', res));
    try {
      const d = await testDaemon();
      const port = (silent.address() as { port: number }).port;
      const t0 = Date.now();
      const r = await d.call('POST', '/api/connectors/test?timeout_seconds=1', { body: { type: 'amqp', url: `amqp://127.0.0.1:${port}`, queue: 'q' } });
      expect(r.body).toEqual({ ok: false, latency_ms: null, error: 'amqp: no answer within 1 s' });
      expect(Date.now() - t0).toBeLessThan(5000);
    } finally {
      silent.close();
    }
  });

  it('invalid configs are 400 {detail} naming the field; unknown types 400; a non-object body 422', async () => {
    const d = await testDaemon();
    const inv = await d.call('POST', '/api/connectors/test', { body: { type: 'amqp', queue: 'q', prefetch_count: 0 } });
    expect(inv.status).toBe(400);
    expect(inv.body.detail).toMatch(/prefetch_count/);
    const unk = await d.call('POST', '/api/connectors/test', { body: { type: 'amqpp', queue: 'q' } });
    expect(unk.status).toBe(400);
    expect(unk.body.detail).toMatch(/unknown connector type 'amqpp'/);
    const arr = await d.call('POST', '/api/connectors/test', { body: [1] });
    expect(arr.status).toBe(422);
    expect(arr.body.detail).toBeTruthy();
    const role = await d.call('POST', '/api/connectors/test', { body: { type: 'amqp', role: 'both', queue: 'q' } });
    expect(role.status).toBe(422);
  });
});

describe('POST /api/connectors/test-pipeline', () => {
  it('checks the source and every sink', async () => {
    const d = await testDaemon();
    const closed = await freePort();
    const yaml = pipelineYaml(`    - { type: amqp, url: "${url}", routing_key: out }
    - { type: amqp, url: "amqp://${vhost}:${password}@127.0.0.1:${closed}/${vhost}", routing_key: out }
    - { type: local, path: ${d.dir}/out }`);
    const r = await d.call('POST', '/api/connectors/test-pipeline', { yaml });
    expect(r.status, r.text).toBe(200);
    expect(r.body.source).toMatchObject({ type: 'amqp', ok: true, error: null });
    expect(r.body.sinks).toHaveLength(3);
    expect(r.body.sinks[0]).toMatchObject({ type: 'amqp', ok: true });
    expect(r.body.sinks[1]).toMatchObject({ type: 'amqp', ok: false, latency_ms: null });
    expect(r.body.sinks[1].error).toMatch(/ECONNREFUSED/);
    expect(r.body.sinks[2]).toMatchObject({ type: 'local', ok: true });
    expect(r.text).not.toContain(password);
  });

  it('invalid YAML is a 400 with the path and line', async () => {
    const d = await testDaemon();
    const r = await d.call('POST', '/api/connectors/test-pipeline', { yaml: pipelineYaml('    - { type: amqp, routing_key: out, delivery_mode: 7 }') });
    expect(r.status).toBe(400);
    expect(r.body.detail).toMatch(/pipeline\.sinks\[0\]\.delivery_mode.*\(line 7\)/);
  });
});

describe('connectors in the pipeline lifecycle', () => {
  it('dry-run instantiates connectors without connecting (an unreachable broker is still valid)', async () => {
    const d = await testDaemon();
    const closed = await freePort();
    const r = await d.call('POST', '/api/pipelines/dry-run', {
      yaml: pipelineYaml(`    - { type: amqp, url: "amqp://127.0.0.1:${closed}", routing_key: out }`),
    });
    expect(r.body).toEqual({ valid: true, issues: [] });
  });

  it('a stream that exhausts max_reconnect_attempts goes to error with the reason and is not restarted', async () => {
    const d = await testDaemon();
    const closed = await freePort();
    const yaml = `version: "1"
pipeline:
  name: gives-up
  schedule: { type: stream }
  source: { type: amqp, url: "amqp://127.0.0.1:${closed}", queue: q, reconnect_delay_seconds: 0.05, max_reconnect_attempts: 2 }
  sinks: [{ type: local, path: ${d.dir}/out }]
`;
    expect((await d.call('POST', '/api/pipelines', { yaml })).status).toBe(201);
    const p = await until(async () => {
      const g = await d.call('GET', '/api/pipelines/gives-up');
      return g.body.status === 'error' ? g.body : undefined;
    });
    expect(p.error).toMatch(/gave up after 2 reconnect attempts: .*ECONNREFUSED/);
    await quiet(1500); // a restart would come after 1 s
    const runs = await d.call('GET', '/api/runs?pipeline=gives-up');
    expect(runs.body).toHaveLength(1);
    expect(runs.body[0]).toMatchObject({ status: 'failed' });
    expect((await d.call('GET', '/api/pipelines/gives-up')).body.status).toBe('error');
    const m = await d.call('GET', '/metrics');
    expect(m.text).toContain('svc_connector_state{pipeline="gives-up",component="source",type="amqp",state="failed"} 1');
  });
});
