// Webhook alerts against a real HTTP server on loopback, with the real SQLite store.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deliverWebhook, redactUrl } from '../../src/alerts/deliver.js';
import { AlertEvaluator, type AlertEvaluatorOptions } from '../../src/alerts/evaluator.js';
import type { AlertPayload } from '../../src/alerts/message.js';
import type { RunRecord } from '../../src/engine/run-record.js';
import { openStore } from '../../src/store/index.js';
import type { AlertRule, AlertStore, SqlStore, Store } from '../../src/store/index.js';
import { loadSettings } from '../../src/settings.js';
import { tempDir } from '../helpers/fs.js';

// ---------------------------------------------------------------- peers

type Behaviour = 'ok' | 'no-content' | 'fail' | 'not-found' | 'redirect' | 'hang' | 'big-fail';

interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

interface Hook {
  base: string;
  port: number;
  requests: Received[];
  /** Per path; default from the path's first segment (/ok, /fail, /hang, ...). */
  behaviour: Record<string, Behaviour>;
  close(): Promise<void>;
}

const servers: Server[] = [];

async function listen(server: Server, port = 0): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

async function stop(server: Server) {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

async function hookServer(port = 0): Promise<Hook> {
  const requests: Received[] = [];
  const behaviour: Record<string, Behaviour> = {};
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      requests.push({ method: req.method ?? '', path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const b = behaviour[path] ?? ((path.split('/')[1] ?? 'ok') as Behaviour);
      switch (b) {
        case 'ok':
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
          return;
        case 'no-content':
          res.writeHead(204).end();
          return;
        case 'fail':
          res.writeHead(500, { 'content-type': 'text/plain' }).end('database is down');
          return;
        case 'big-fail':
          res.writeHead(503, { 'content-type': 'text/plain' }).end('x'.repeat(1_000_000));
          return;
        case 'not-found':
          res.writeHead(404).end('no such hook');
          return;
        case 'redirect':
          res.writeHead(307, { location: '/ok' }).end();
          return;
        case 'hang':
          return; // never answers
      }
    });
  });
  const p = await listen(server, port);
  return { base: `http://127.0.0.1:${p}`, port: p, requests, behaviour, close: () => stop(server) };
}

/** A port nothing listens on: connections are refused. */
async function closedPort(): Promise<number> {
  const s = createServer();
  const port = await listen(s);
  await stop(s);
  return port;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => (s.listening ? stop(s) : undefined)));
});

// ---------------------------------------------------------------- fixtures

const T0 = Date.parse('2024-05-01T12:00:00.000Z');

const run = (over: Partial<RunRecord> = {}): RunRecord => ({
  run_id: 'run-1',
  pipeline: 'ifstats',
  node_id: 'node-a',
  status: 'success',
  started_at: '2024-05-01T11:59:30.000Z',
  finished_at: '2024-05-01T11:59:42.500Z',
  records_in: 100,
  records_out: 88,
  records_filtered: 0,
  records_skipped: 12,
  bytes_in: 4096,
  bytes_out: 3000,
  dlq_count: 0,
  error: null,
  errors: ['bad value in field x (x12)'],
  ...over,
});

const rule = (over: Partial<AlertRule> = {}): AlertRule => ({
  name: 'high-errors',
  condition: 'error_rate > 0.1',
  action: 'webhook',
  webhook_url: null,
  email_to: null,
  subject: null,
  cooldown_seconds: 300,
  ...over,
});

interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

function captureLog() {
  const lines: LogLine[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) });
  return { log, lines, warnings: () => lines.filter((l) => l.level === 40), errors: () => lines.filter((l) => l.level === 50) };
}

const settings = { SMTP_HOST: '127.0.0.1', SMTP_PORT: 25, SMTP_USER: '', SMTP_PASS: '', SMTP_TLS: false, SMTP_FROM: 'svc@test' } as const;

let store: Store;
let clock: number;
let logs: ReturnType<typeof captureLog>;

beforeEach(async () => {
  store = await openStore({ path: ':memory:' });
  clock = T0;
  logs = captureLog();
});
afterEach(async () => {
  await store.close();
});

const evaluator = (over: Partial<AlertEvaluatorOptions> = {}) =>
  new AlertEvaluator({ store: store.alerts, settings, log: logs.log, now: () => clock, timeouts: { webhookMs: 300 }, ...over });

const payloads = (hook: Hook, path?: string) =>
  hook.requests.filter((r) => path === undefined || r.path === path).map((r) => JSON.parse(r.body) as AlertPayload);

// ---------------------------------------------------------------- deliverWebhook

describe('deliverWebhook', () => {
  it('POSTs JSON and succeeds on 200 and 204', async () => {
    const hook = await hookServer();
    expect(await deliverWebhook(`${hook.base}/ok`, { a: 1 })).toEqual({ ok: true, detail: 'HTTP 200 OK' });
    expect(await deliverWebhook(`${hook.base}/no-content`, { a: 2 })).toEqual({ ok: true, detail: 'HTTP 204 No Content' });
    expect(hook.requests.map((r) => [r.method, r.path, r.headers['content-type'], JSON.parse(r.body)])).toEqual([
      ['POST', '/ok', 'application/json', { a: 1 }],
      ['POST', '/no-content', 'application/json', { a: 2 }],
    ]);
  });

  it('5xx is a failure and quotes the start of the response', async () => {
    const hook = await hookServer();
    expect(await deliverWebhook(`${hook.base}/fail`, {})).toEqual({ ok: false, reason: 'HTTP 500 Internal Server Error: database is down' });
    const big = await deliverWebhook(`${hook.base}/big-fail`, {});
    expect(big.ok).toBe(false);
    expect(!big.ok && big.reason.length).toBeLessThan(400);
    expect(!big.ok && big.reason).toMatch(/^HTTP 503 Service Unavailable: x+\.\.\.$/);
  });

  it('4xx is a failure too', async () => {
    const hook = await hookServer();
    expect(await deliverWebhook(`${hook.base}/not-found`, {})).toEqual({ ok: false, reason: 'HTTP 404 Not Found: no such hook' });
  });

  it('redirects are not followed (a failure)', async () => {
    const hook = await hookServer();
    const r = await deliverWebhook(`${hook.base}/redirect`, {});
    expect(r).toEqual({ ok: false, reason: 'HTTP 307 Temporary Redirect' });
    expect(hook.requests.map((q) => q.path)).toEqual(['/redirect']);
  });

  it('a server that does not answer is a timeout failure, within the timeout', async () => {
    const hook = await hookServer();
    const t = Date.now();
    const r = await deliverWebhook(`${hook.base}/hang`, {}, { timeoutMs: 250 });
    const took = Date.now() - t;
    expect(r).toEqual({ ok: false, reason: 'timed out after 250 ms' });
    expect(took).toBeGreaterThanOrEqual(240);
    expect(took).toBeLessThan(2000);
    expect(hook.requests).toHaveLength(1);
  });

  it('a refused connection is a failure', async () => {
    const port = await closedPort();
    const r = await deliverWebhook(`http://127.0.0.1:${port}/x`, {});
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(/^connection failed: .*ECONNREFUSED/);
  });

  it('user and password in the URL become Basic authorization', async () => {
    const hook = await hookServer();
    const url = `http://al%40ice:s%3Acret@127.0.0.1:${hook.port}/ok`;
    expect((await deliverWebhook(url, {})).ok).toBe(true);
    expect(hook.requests[0]!.headers.authorization).toBe(`Basic ${Buffer.from('al@ice:s:cret').toString('base64')}`);
    expect(redactUrl(url)).toBe(`http://127.0.0.1:${hook.port}/ok`);
  });

  it('refuses other schemes and bad URLs without throwing', async () => {
    expect(await deliverWebhook('file:///etc/passwd', {})).toEqual({ ok: false, reason: 'unsupported URL scheme file:' });
    expect(await deliverWebhook('nope', {})).toEqual({ ok: false, reason: 'invalid webhook URL' });
  });
});

// ---------------------------------------------------------------- evaluator

describe('AlertEvaluator with webhooks', () => {
  it('fires a matching rule with the documented payload and starts the cooldown', async () => {
    const hook = await hookServer();
    await store.alerts.add('ifstats', rule({ webhook_url: `${hook.base}/ok` }));
    const r = run();
    const out = await evaluator().evaluate('ifstats', r);
    expect(out).toEqual([
      {
        pipeline: 'ifstats',
        rule: 'high-errors',
        action: 'webhook',
        outcome: 'fired',
        detail: 'HTTP 200 OK',
        fired_at: '2024-05-01T12:00:00.000Z',
        attempt: 1,
      },
    ]);
    expect(payloads(hook)).toEqual([
      {
        alert: 'high-errors',
        pipeline: 'ifstats',
        condition: 'error_rate > 0.1',
        action: 'webhook',
        fired_at: '2024-05-01T12:00:00.000Z',
        cooldown_seconds: 300,
        variables: {
          records_in: 100,
          records_out: 88,
          records_skipped: 12,
          error_rate: 0.12,
          status: 'success',
          failed: false,
          duration_seconds: 12.5,
        },
        run: r,
      },
    ]);
    expect(await store.alerts.lastFired('ifstats', 'high-errors')).toBe('2024-05-01T12:00:00.000Z');
    expect(logs.lines.some((l) => l.level === 30 && l.msg === 'alert fired' && l.rule === 'high-errors')).toBe(true);
  });

  it('2xx starts the cooldown; it ends after cooldown_seconds (injected clock)', async () => {
    const hook = await hookServer();
    await store.alerts.add('ifstats', rule({ webhook_url: `${hook.base}/no-content`, cooldown_seconds: 60 }));
    const ev = evaluator();
    expect((await ev.evaluate('ifstats', run()))[0]!.outcome).toBe('fired');

    clock = T0 + 59_999;
    expect(await ev.evaluate('ifstats', run())).toEqual([
      { pipeline: 'ifstats', rule: 'high-errors', action: 'webhook', outcome: 'cooldown', cooldown_until: '2024-05-01T12:01:00.000Z' },
    ]);
    expect(hook.requests).toHaveLength(1);

    clock = T0 + 60_000;
    expect((await ev.evaluate('ifstats', run()))[0]).toMatchObject({ outcome: 'fired', fired_at: '2024-05-01T12:01:00.000Z' });
    expect(hook.requests).toHaveLength(2);
    expect(await store.alerts.lastFired('ifstats', 'high-errors')).toBe('2024-05-01T12:01:00.000Z');
  });

  it('5xx does not start the cooldown: the next evaluation fires again', async () => {
    const hook = await hookServer();
    await store.alerts.add('ifstats', rule({ webhook_url: `${hook.base}/target` }));
    hook.behaviour['/target'] = 'fail';
    const ev = evaluator();
    expect(await ev.evaluate('ifstats', run())).toEqual([
      {
        pipeline: 'ifstats',
        rule: 'high-errors',
        action: 'webhook',
        outcome: 'delivery-failed',
        reason: 'HTTP 500 Internal Server Error: database is down',
        attempt: 1,
      },
    ]);
    expect(await store.alerts.lastFired('ifstats', 'high-errors')).toBeUndefined();
    expect(logs.warnings()).toEqual([expect.objectContaining({ msg: 'alert delivery failed; cooldown not started', rule: 'high-errors' })]);

    clock += 1000;
    expect((await ev.evaluate('ifstats', run()))[0]!.outcome).toBe('delivery-failed');
    hook.behaviour['/target'] = 'ok';
    clock += 1000;
    expect((await ev.evaluate('ifstats', run()))[0]!.outcome).toBe('fired');
    expect(hook.requests).toHaveLength(3);
    expect(await store.alerts.lastFired('ifstats', 'high-errors')).toBe(new Date(clock).toISOString());
  });

  it('4xx does not start the cooldown either', async () => {
    const hook = await hookServer();
    await store.alerts.add('ifstats', rule({ webhook_url: `${hook.base}/not-found` }));
    const ev = evaluator();
    expect((await ev.evaluate('ifstats', run()))[0]).toMatchObject({ outcome: 'delivery-failed', reason: 'HTTP 404 Not Found: no such hook' });
    expect((await ev.evaluate('ifstats', run()))[0]!.outcome).toBe('delivery-failed');
    expect(hook.requests).toHaveLength(2);
    expect(await store.alerts.lastFired('ifstats', 'high-errors')).toBeUndefined();
  });

  it('a timeout does not start the cooldown and does not hold the caller past the timeout', async () => {
    const hook = await hookServer();
    await store.alerts.add('ifstats', rule({ webhook_url: `${hook.base}/target` }));
    hook.behaviour['/target'] = 'hang';
    const ev = evaluator({ timeouts: { webhookMs: 300 } });
    const t = Date.now();
    expect(await ev.evaluate('ifstats', run())).toEqual([
      { pipeline: 'ifstats', rule: 'high-errors', action: 'webhook', outcome: 'delivery-failed', reason: 'timed out after 300 ms', attempt: 1 },
    ]);
    expect(Date.now() - t).toBeLessThan(2000);
    expect(await store.alerts.lastFired('ifstats', 'high-errors')).toBeUndefined();

    hook.behaviour['/target'] = 'ok';
    expect((await ev.evaluate('ifstats', run()))[0]!.outcome).toBe('fired');
    expect(hook.requests).toHaveLength(2);
  });

  it('a refused connection does not start the cooldown; the rule fires once the receiver is back', async () => {
    const port = await closedPort();
    await store.alerts.add('ifstats', rule({ webhook_url: `http://127.0.0.1:${port}/ok` }));
    const ev = evaluator();
    const first = await ev.evaluate('ifstats', run());
    expect(first[0]).toMatchObject({ outcome: 'delivery-failed', reason: expect.stringMatching(/ECONNREFUSED/) });
    expect(await store.alerts.lastFired('ifstats', 'high-errors')).toBeUndefined();

    const hook = await hookServer(port);
    expect((await ev.evaluate('ifstats', run()))[0]!.outcome).toBe('fired');
    expect(hook.requests).toHaveLength(1);
  });

  it('no-match and cooldown 0', async () => {
    const hook = await hookServer();
    await store.alerts.add('ifstats', rule({ name: 'never', condition: 'records_in > 1000', webhook_url: `${hook.base}/ok` }));
    await store.alerts.add('ifstats', rule({ name: 'always', condition: 'records_in >= 0', cooldown_seconds: 0, webhook_url: `${hook.base}/ok` }));
    const ev = evaluator();
    for (let i = 0; i < 3; i++) {
      expect((await ev.evaluate('ifstats', run())).map((o) => [o.rule, o.outcome])).toEqual([
        ['never', 'no-match'],
        ['always', 'fired'],
      ]);
    }
    expect(hook.requests).toHaveLength(3);
  });

  it('uses only the rules of the evaluated pipeline; no rules, no work', async () => {
    const hook = await hookServer();
    await store.alerts.add('other', rule({ webhook_url: `${hook.base}/ok` }));
    expect(await evaluator().evaluate('ifstats', run())).toEqual([]);
    expect(hook.requests).toHaveLength(0);
  });

  it('a condition that fails at run time is a WARNING and does not block the other rules', async () => {
    const hook = await hookServer();
    await store.alerts.add('ifstats', rule({ name: 'div', condition: 'records_skipped / (records_in - 100) > 1', webhook_url: `${hook.base}/ok` }));
    await store.alerts.add('ifstats', rule({ name: 'type', condition: 'status > 1', webhook_url: `${hook.base}/ok` }));
    await store.alerts.add('ifstats', rule({ name: 'broken', condition: 'error_rate >', webhook_url: `${hook.base}/ok` }));
    await store.alerts.add('ifstats', rule({ name: 'fine', condition: 'failed', webhook_url: `${hook.base}/ok` }));
    const out = await evaluator().evaluate('ifstats', run({ status: 'failed' }));
    expect(out.map((o) => [o.rule, o.outcome])).toEqual([
      ['div', 'condition-error'],
      ['type', 'condition-error'],
      ['broken', 'condition-error'],
      ['fine', 'fired'],
    ]);
    expect(out[0]!.reason).toMatch(/division by zero|zero/i);
    expect(out[2]!.reason).toMatch(/at column/);
    expect(logs.warnings().map((w) => [w.msg, w.rule])).toEqual([
      ['alert condition failed; rule not fired', 'div'],
      ['alert condition failed; rule not fired', 'type'],
      ['alert condition failed; rule not fired', 'broken'],
    ]);
    expect(payloads(hook).map((p) => p.alert)).toEqual(['fine']);
    for (const name of ['div', 'type', 'broken']) expect(await store.alerts.lastFired('ifstats', name)).toBeUndefined();
  });

  it('a failing or hanging delivery does not block the other rules', async () => {
    const hook = await hookServer();
    await store.alerts.add('ifstats', rule({ name: 'a-hang', webhook_url: `${hook.base}/hang` }));
    await store.alerts.add('ifstats', rule({ name: 'b-fail', webhook_url: `${hook.base}/fail` }));
    await store.alerts.add('ifstats', rule({ name: 'c-ok', webhook_url: `${hook.base}/ok` }));
    const t = Date.now();
    const out = await evaluator({ timeouts: { webhookMs: 400 } }).evaluate('ifstats', run());
    expect(Date.now() - t).toBeLessThan(2000);
    expect(out.map((o) => [o.rule, o.outcome])).toEqual([
      ['a-hang', 'delivery-failed'],
      ['b-fail', 'delivery-failed'],
      ['c-ok', 'fired'],
    ]);
    expect(await store.alerts.lastFired('ifstats', 'a-hang')).toBeUndefined();
    expect(await store.alerts.lastFired('ifstats', 'b-fail')).toBeUndefined();
    expect(await store.alerts.lastFired('ifstats', 'c-ok')).toBeDefined();
  });

  it('the cooldown survives a restart: a second evaluator on the same store', async () => {
    const hook = await hookServer();
    await store.alerts.add('ifstats', rule({ webhook_url: `${hook.base}/ok`, cooldown_seconds: 600 }));
    expect((await evaluator().evaluate('ifstats', run()))[0]!.outcome).toBe('fired');
    clock = T0 + 300_000;
    expect((await evaluator().evaluate('ifstats', run()))[0]).toMatchObject({ outcome: 'cooldown', cooldown_until: '2024-05-01T12:10:00.000Z' });
    expect(hook.requests).toHaveLength(1);
  });

  it('the cooldown survives a restart of the process: database file closed and reopened', async () => {
    const hook = await hookServer();
    const path = join(tempDir('svc-alerts-'), 'svc.db');
    const first = await openStore({ path });
    try {
      await first.alerts.add('ifstats', rule({ webhook_url: `${hook.base}/ok`, cooldown_seconds: 600 }));
      expect((await evaluator({ store: first.alerts }).evaluate('ifstats', run()))[0]!.outcome).toBe('fired');
    } finally {
      await first.close();
    }
    const second = await openStore({ path });
    try {
      clock = T0 + 599_000;
      expect((await evaluator({ store: second.alerts }).evaluate('ifstats', run()))[0]!.outcome).toBe('cooldown');
      clock = T0 + 600_000;
      expect((await evaluator({ store: second.alerts }).evaluate('ifstats', run()))[0]!.outcome).toBe('fired');
    } finally {
      await second.close();
    }
    expect(hook.requests).toHaveLength(2);
  });

  it('two runs finishing together: one delivery, one cooldown', async () => {
    const hook = await hookServer();
    await store.alerts.add('ifstats', rule({ webhook_url: `${hook.base}/ok` }));
    const ev = evaluator();
    const [a, b] = await Promise.all([ev.evaluate('ifstats', run({ run_id: 'r1' })), ev.evaluate('ifstats', run({ run_id: 'r2' }))]);
    expect([a[0]!.outcome, b[0]!.outcome]).toEqual(['fired', 'cooldown']);
    expect(payloads(hook).map((p) => p.run.run_id)).toEqual(['r1']);
  });

  it('store failures are logged, never thrown; a lost cooldown write still reports the delivery', async () => {
    const hook = await hookServer();
    await store.alerts.add('ifstats', rule({ webhook_url: `${hook.base}/ok` }));
    const real = store.alerts;
    const failing = (over: Partial<AlertStore>): AlertStore => ({
      list: (p) => real.list(p),
      add: (p, r) => real.add(p, r),
      update: (p, n, r) => real.update(p, n, r),
      remove: (p, n) => real.remove(p, n),
      removeAll: (p) => real.removeAll(p),
      lastFired: (p, r) => real.lastFired(p, r),
      setFired: (p, r, at) => real.setFired(p, r, at),
      recordDelivery: (p, r, d) => real.recordDelivery(p, r, d),
      deliveries: (p, r) => real.deliveries(p, r),
      ...over,
    });
    const boom = () => Promise.reject(new Error('database is locked'));

    expect(await evaluator({ store: failing({ list: boom }) }).evaluate('ifstats', run())).toEqual([]);
    expect(logs.warnings().at(-1)).toMatchObject({ msg: 'alert rules could not be loaded; no alerts evaluated' });

    expect((await evaluator({ store: failing({ lastFired: boom }) }).evaluate('ifstats', run()))[0]).toMatchObject({
      outcome: 'store-error',
      reason: 'cooldown state unavailable: Error: database is locked',
    });
    expect(hook.requests).toHaveLength(0);

    expect((await evaluator({ store: failing({ setFired: boom }) }).evaluate('ifstats', run()))[0]).toMatchObject({
      outcome: 'fired',
      reason: 'delivered, but the cooldown could not be saved: Error: database is locked',
    });
    expect(logs.errors()).toEqual([expect.objectContaining({ msg: 'alert delivered but its cooldown could not be saved' })]);
    expect(hook.requests).toHaveLength(1);
  });

  it('an injected deliverer that never settles is given up on after its timeout', async () => {
    await store.alerts.add('ifstats', rule({ webhook_url: 'http://127.0.0.1:9/x' }));
    const t = Date.now();
    const out = await evaluator({ timeouts: { webhookMs: 100 }, deliver: { webhook: () => new Promise(() => undefined) } }).evaluate('ifstats', run());
    expect(out[0]).toMatchObject({ outcome: 'delivery-failed', reason: 'no answer within 100 ms' });
    expect(Date.now() - t).toBeLessThan(3000);
  });

  it('a lost history write is a WARNING; the delivery and its cooldown stand', async () => {
    const hook = await hookServer();
    await store.alerts.add('ifstats', rule({ webhook_url: `${hook.base}/ok` }));
    const real = store.alerts;
    const broken: AlertStore = Object.assign(Object.create(real) as AlertStore, { recordDelivery: () => Promise.reject(new Error('disk full')) });
    const out = await evaluator({ store: broken }).evaluate('ifstats', run());
    expect(out[0]).toMatchObject({ outcome: 'fired', detail: 'HTTP 200 OK' });
    expect(out[0]!.attempt).toBeUndefined();
    expect(await store.alerts.lastFired('ifstats', 'high-errors')).toBe('2024-05-01T12:00:00.000Z');
    expect(logs.warnings()).toEqual([expect.objectContaining({ msg: 'alert delivery could not be added to its history', err: 'Error: disk full' })]);
  });

  it('credentials of a webhook URL are not logged', async () => {
    const port = await closedPort();
    await store.alerts.add('ifstats', rule({ webhook_url: `http://u:topsecret@127.0.0.1:${port}/x` }));
    await evaluator().evaluate('ifstats', run());
    expect(JSON.stringify(logs.lines)).not.toContain('topsecret');
    expect(logs.warnings()[0]).toMatchObject({ target: `http://127.0.0.1:${port}/x` });
  });
});

it('takes the daemon Settings as they are', () => {
  const all = loadSettings({ SVC_SMTP_HOST: 'mail.example.com', SVC_SMTP_TLS: 'false' });
  const ev = new AlertEvaluator({ store: store.alerts, settings: all, log: logs.log });
  expect(ev).toBeInstanceOf(AlertEvaluator);
});

// ---------------------------------------------------------------- delivery history

describe('delivery history', () => {
  const history = async (name = 'high-errors') => (await store.alerts.deliveries('ifstats', name)).get(name) ?? [];

  it('records each delivery: failed ones with their error and a growing attempt, then the confirmed one', async () => {
    const hook = await hookServer();
    await store.alerts.add('ifstats', rule({ webhook_url: `${hook.base}/target` }));
    hook.behaviour['/target'] = 'fail';
    const ev = evaluator();
    expect((await ev.evaluate('ifstats', run({ run_id: 'r1' })))[0]).toMatchObject({ outcome: 'delivery-failed', attempt: 1 });
    clock += 1000;
    expect((await ev.evaluate('ifstats', run({ run_id: 'r2' })))[0]).toMatchObject({ outcome: 'delivery-failed', attempt: 2 });
    hook.behaviour['/target'] = 'ok';
    clock += 1000;
    expect((await ev.evaluate('ifstats', run({ run_id: 'r3' })))[0]).toMatchObject({ outcome: 'fired', attempt: 3 });
    const target = `${hook.base}/target`;
    expect(await history()).toEqual([
      { at: '2024-05-01T12:00:02.000Z', run_id: 'r3', channel: 'webhook', target, outcome: 'delivered', detail: 'HTTP 200 OK', error: null, attempt: 3 },
      {
        at: '2024-05-01T12:00:01.000Z',
        run_id: 'r2',
        channel: 'webhook',
        target,
        outcome: 'failed',
        detail: null,
        error: 'HTTP 500 Internal Server Error: database is down',
        attempt: 2,
      },
      {
        at: '2024-05-01T12:00:00.000Z',
        run_id: 'r1',
        channel: 'webhook',
        target,
        outcome: 'failed',
        detail: null,
        error: 'HTTP 500 Internal Server Error: database is down',
        attempt: 1,
      },
    ]);
    // After a confirmed delivery the count starts again.
    clock += 600_000;
    hook.behaviour['/target'] = 'fail';
    expect((await ev.evaluate('ifstats', run({ run_id: 'r4' })))[0]).toMatchObject({ outcome: 'delivery-failed', attempt: 1 });
    // Cooldowns, no-matches and condition errors are not deliveries.
    await store.alerts.add('ifstats', rule({ name: 'quiet', condition: 'records_in > 1000', webhook_url: `${hook.base}/ok` }));
    await ev.evaluate('ifstats', run({ run_id: 'r5' }));
    expect(await history('quiet')).toEqual([]);
    expect((await history()).map((d) => d.run_id)).toEqual(['r5', 'r4', 'r3', 'r2', 'r1']);
  });

  it('a refused connection is recorded with its reason', async () => {
    const port = await closedPort();
    await store.alerts.add('ifstats', rule({ webhook_url: `http://127.0.0.1:${port}/x` }));
    await evaluator().evaluate('ifstats', run());
    expect(await history()).toEqual([
      expect.objectContaining({ outcome: 'failed', attempt: 1, error: expect.stringMatching(/^connection failed: .*ECONNREFUSED/) }),
    ]);
  });

  it('keeps the last 20 deliveries of a rule', async () => {
    const port = await closedPort();
    await store.alerts.add('ifstats', rule({ webhook_url: `http://127.0.0.1:${port}/x`, cooldown_seconds: 0 }));
    const ev = evaluator();
    for (let i = 1; i <= 23; i++) {
      clock = T0 + i * 1000;
      await ev.evaluate('ifstats', run({ run_id: `r${i}` }));
    }
    const kept = await history();
    expect(kept).toHaveLength(20);
    expect(kept.map((d) => d.attempt)).toEqual(Array.from({ length: 20 }, (_, i) => 23 - i));
    expect(kept[0]).toMatchObject({ run_id: 'r23', at: new Date(T0 + 23_000).toISOString() });
    // Trimmed in the table, not only in the answer.
    expect(await (store as SqlStore).db.selectFrom('alert_deliveries').select('id').execute()).toHaveLength(20);
  });

  it('masks the credentials and tokens of the URL in the target and in an error that quotes them', async () => {
    const echo = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(401).end(`rejected ${req.headers.authorization} for ${req.url}: token t0ps3cr3t-value is revoked`));
    });
    const port = await listen(echo);
    const url = `http://alerts:hunter2pw@127.0.0.1:${port}/hook?token=t0ps3cr3t-value&team=noc`;
    await store.alerts.add('ifstats', rule({ webhook_url: url }));
    const out = await evaluator().evaluate('ifstats', run());
    const [d] = await history();
    expect(d).toMatchObject({ outcome: 'failed', target: `http://127.0.0.1:${port}/hook?token=***&team=noc` });
    // The Basic credentials the peer quoted back are masked too.
    expect(d!.error).toBe('HTTP 401 Unauthorized: rejected Basic *** for /hook?token=***&team=noc: token *** is revoked');
    for (const text of [JSON.stringify(d), JSON.stringify(out), JSON.stringify(logs.lines)]) {
      expect(text).not.toContain('hunter2pw');
      expect(text).not.toContain('t0ps3cr3t');
    }
  });

  it('records email deliveries with the recipients as the target, the SMTP password masked', async () => {
    await store.alerts.add('ifstats', rule({ action: 'email', webhook_url: null, email_to: 'noc@example.com' }));
    const ev = evaluator({
      settings: { ...settings, SMTP_PASS: 'mail-pass-123' },
      deliver: { email: async () => ({ ok: false, reason: 'mail failed: auth with mail-pass-123 refused' }) },
    });
    await ev.evaluate('ifstats', run());
    expect(await history()).toEqual([
      expect.objectContaining({ channel: 'email', target: 'noc@example.com', outcome: 'failed', error: 'mail failed: auth with *** refused', attempt: 1 }),
    ]);
  });

  it('the history and its attempt count survive a restart of the process', async () => {
    const path = join(tempDir('svc-alerts-'), 'svc.db');
    const port = await closedPort();
    const first = await openStore({ path });
    try {
      await first.alerts.add('ifstats', rule({ webhook_url: `http://127.0.0.1:${port}/x`, cooldown_seconds: 0 }));
      await evaluator({ store: first.alerts }).evaluate('ifstats', run({ run_id: 'before' }));
    } finally {
      await first.close();
    }
    const second = await openStore({ path });
    try {
      expect((await evaluator({ store: second.alerts }).evaluate('ifstats', run({ run_id: 'after' })))[0]).toMatchObject({ attempt: 2 });
      expect(((await second.alerts.deliveries('ifstats')).get('high-errors') ?? []).map((d) => [d.run_id, d.attempt])).toEqual([
        ['after', 2],
        ['before', 1],
      ]);
    } finally {
      await second.close();
    }
  });
});
