// The worker pool against real HTTP servers on loopback that answer GET /agent/health as the
// worker agent does, and check X-API-Key as the agent does.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import type { WorkerEndpoint } from '../../src/cluster/discovery.js';
import { WorkerPool, type WorkerChange, type WorkerPoolOptions } from '../../src/cluster/worker-pool.js';
import { freePort } from '../helpers/net.js';
import { quiet, until } from '../helpers/wait.js';

interface FakeAgent {
  url: string;
  /** What the next health checks answer. */
  health: { ok: boolean; active_runs: number; running_pipelines: string[]; ingress_up: boolean; draining?: boolean };
  /** Answer this status instead (with an error body), or this raw body, or only after delayMs. */
  status?: number;
  rawBody?: string;
  delayMs?: number;
  /** The headers of each health request received. */
  requests: { apiKey?: string; epoch?: string }[];
  stop(): Promise<void>;
}

const agents: FakeAgent[] = [];
const pools: WorkerPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.stop()));
  await Promise.all(agents.splice(0).map((a) => a.stop()));
});

async function fakeAgent(apiKey?: string): Promise<FakeAgent> {
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    if (req.method !== 'GET' || req.url !== '/agent/health') return json(404, { detail: 'not found' });
    agent.requests.push({ apiKey: req.headers['x-api-key'] as string | undefined, epoch: req.headers['x-svc-epoch'] as string | undefined });
    // Like the agent: /agent/* needs the key when SVC_API_KEY is set.
    if (apiKey && req.headers['x-api-key'] !== apiKey) return json(401, { detail: 'invalid or missing API key' });
    const answer = () => {
      if (agent.status) return json(agent.status, { detail: 'unavailable' });
      // The agent also says who it is and whether it drains (fields the pool does not need).
      json(200, agent.rawBody ?? { worker_id: `worker-${port}`, draining: false, ...agent.health });
    };
    if (!agent.delayMs) return answer();
    const t = setTimeout(() => {
      timers.delete(t);
      answer();
    }, agent.delayMs);
    timers.add(t);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  const agent: FakeAgent = {
    url: `http://127.0.0.1:${port}`,
    health: { ok: true, active_runs: 0, running_pipelines: [], ingress_up: true },
    requests: [],
    async stop() {
      for (const t of timers) clearTimeout(t);
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
  agents.push(agent);
  return agent;
}

/** A discovery whose list the test sets (the pool's input, not a peer). */
function listed(endpoints: WorkerEndpoint[]) {
  const d = { endpoints, list: async () => d.endpoints.map((e) => ({ ...e })) };
  return d;
}
const explicit = (...a: FakeAgent[]) => listed(a.map((x) => ({ id: x.url, url: x.url })));

function pool(opts: Partial<WorkerPoolOptions> & Pick<WorkerPoolOptions, 'discovery'>) {
  const changes: Pick<WorkerChange, 'change' | 'healthy' | 'total'>[] = [];
  const changedIds: string[] = [];
  const p = new WorkerPool({
    intervalMs: 60_000, // the tests drive the rounds with pollNow() unless they test the loop
    timeoutMs: 1000,
    epoch: () => 7,
    onChange: (c) => {
      changes.push({ change: c.change, healthy: c.healthy, total: c.total });
      changedIds.push(c.worker.id);
    },
    ...opts,
  });
  pools.push(p);
  return { p, changes, changedIds };
}

describe('health polls', () => {
  it('GET /agent/health carries X-API-Key and X-Svc-Epoch; a good answer brings the worker up', async () => {
    const a = await fakeAgent('k3y');
    a.health = { ok: true, active_runs: 2, running_pipelines: ['pm-ingest', 'fm-stream'], ingress_up: true };
    let epoch = 7;
    const { p, changes } = pool({ discovery: explicit(a), apiKey: 'k3y', epoch: () => epoch });
    await p.pollNow();
    epoch = 8;
    await p.pollNow();
    expect(a.requests).toEqual([
      { apiKey: 'k3y', epoch: '7' },
      { apiKey: 'k3y', epoch: '8' },
    ]);
    expect(p.get(a.url)).toEqual({
      id: a.url,
      url: a.url,
      ok: true,
      consecutiveFailures: 0,
      active_runs: 2,
      running_pipelines: ['pm-ingest', 'fm-stream'],
      ingress_up: true,
      draining: false,
      dispatched: 0,
      assigned: [],
      lastError: null,
    });
    expect(changes).toEqual([
      { change: 'added', healthy: 0, total: 1 },
      { change: 'up', healthy: 1, total: 1 },
    ]);
  });

  it('a wrong API key is a failed poll (the agent answers 401)', async () => {
    const a = await fakeAgent('k3y');
    const { p } = pool({ discovery: explicit(a), apiKey: 'wrong' });
    await p.pollNow();
    await p.pollNow();
    expect(p.get(a.url)).toMatchObject({ ok: false, consecutiveFailures: 2, lastError: 'health check answered HTTP 401' });
    // Without a key configured, none is sent.
    const { p: p2 } = pool({ discovery: explicit(a) });
    await p2.pollNow();
    expect(a.requests.at(-1)).toEqual({ apiKey: undefined, epoch: '7' });
    expect(p2.get(a.url)!.ok).toBe(false);
  });

  it('down after exactly 2 consecutive failed polls (not 1), announced once; up again after one good poll', async () => {
    const a = await fakeAgent();
    const { p, changes } = pool({ discovery: explicit(a) });
    await p.pollNow();
    expect(p.get(a.url)!.ok).toBe(true);

    a.status = 503;
    await p.pollNow();
    expect(p.get(a.url)).toMatchObject({ ok: true, consecutiveFailures: 1, lastError: 'health check answered HTTP 503' });
    expect(p.healthy().map((w) => w.id)).toEqual([a.url]);

    // A good poll in between starts the count again.
    a.status = undefined;
    await p.pollNow();
    a.status = 503;
    await p.pollNow();
    expect(p.get(a.url)).toMatchObject({ ok: true, consecutiveFailures: 1 });

    await p.pollNow();
    expect(p.get(a.url)).toMatchObject({ ok: false, consecutiveFailures: 2 });
    expect(p.healthy()).toEqual([]);
    await p.pollNow();
    expect(p.get(a.url)).toMatchObject({ ok: false, consecutiveFailures: 3 });

    a.status = undefined;
    await p.pollNow();
    expect(p.get(a.url)).toMatchObject({ ok: true, consecutiveFailures: 0, lastError: null });
    expect(changes.map((c) => c.change)).toEqual(['added', 'up', 'down', 'up']);
    expect(changes[2]).toEqual({ change: 'down', healthy: 0, total: 1 });
  });

  it('a worker that never answers is announced down at its second failed poll', async () => {
    const port = await freePort(); // nothing listens there
    const url = `http://127.0.0.1:${port}`;
    const { p, changes } = pool({ discovery: listed([{ id: url, url }]) });
    await p.pollNow();
    expect(p.get(url)).toMatchObject({ ok: false, consecutiveFailures: 1 });
    expect(p.get(url)!.lastError).toMatch(/ECONNREFUSED/);
    expect(changes.map((c) => c.change)).toEqual(['added']);
    await p.pollNow();
    expect(changes.map((c) => c.change)).toEqual(['added', 'down']);
  });

  it('ok: false, a body that is not the health shape and a non-JSON body are failed polls', async () => {
    const a = await fakeAgent();
    const { p } = pool({ discovery: explicit(a), failuresToDown: 1 });
    const cases: [string, () => void, string | RegExp][] = [
      ['ok false', () => (a.health = { ok: false, active_runs: 1, running_pipelines: ['x'], ingress_up: false }), 'agent reports not ok (ingress down)'],
      // A count as a string, and no ingress_up.
      [
        'wrong shape',
        () => (a.rawBody = JSON.stringify({ ok: true, active_runs: '3', running_pipelines: [] })),
        'health check answered a body that is not the agent health shape',
      ],
      ['not JSON', () => (a.rawBody = '<html>proxy error</html>'), /JSON/],
    ];
    for (const [label, answerBadly, lastError] of cases) {
      a.health = { ok: true, active_runs: 0, running_pipelines: [], ingress_up: true };
      a.rawBody = undefined;
      await p.pollNow();
      expect(p.get(a.url)!.ok, label).toBe(true);
      answerBadly();
      await p.pollNow();
      expect(p.get(a.url)!.ok, label).toBe(false);
      expect(p.get(a.url)!.lastError, label).toMatch(lastError);
    }
  });

  it('a health check slower than timeoutMs is a failed poll', async () => {
    const a = await fakeAgent();
    a.delayMs = 1500;
    const { p } = pool({ discovery: explicit(a), timeoutMs: 150 });
    const t0 = Date.now();
    await p.pollNow();
    await p.pollNow();
    expect(Date.now() - t0).toBeLessThan(1400);
    expect(p.get(a.url)).toMatchObject({ ok: false, consecutiveFailures: 2, lastError: 'health check timed out' });
    a.delayMs = 0;
    await p.pollNow();
    expect(p.get(a.url)!.ok).toBe(true);
  });

  it('a name that does not resolve is a failed poll; the last url is kept for display but not polled', async () => {
    const a = await fakeAgent();
    const d = listed([{ id: 'svc-worker-0.svc-worker.default.svc', url: a.url }]);
    const { p } = pool({ discovery: d });
    await p.pollNow();
    expect(a.requests).toHaveLength(1);
    d.endpoints = [{ id: 'svc-worker-0.svc-worker.default.svc', url: null, error: 'svc-worker-0.svc-worker.default.svc does not resolve: ENOTFOUND' }];
    await p.pollNow();
    await p.pollNow();
    expect(a.requests).toHaveLength(1);
    expect(p.get('svc-worker-0.svc-worker.default.svc')).toMatchObject({
      ok: false,
      url: a.url,
      consecutiveFailures: 2,
      lastError: expect.stringMatching(/does not resolve/),
    });
    expect(p.nodes().workers[0]!.url).toBe(a.url);
  });

  it('workers that discovery adds or drops are added or removed, with the counts for the gauges', async () => {
    const [a, b] = [await fakeAgent(), await fakeAgent()];
    const d = explicit(a);
    const { p, changes, changedIds } = pool({ discovery: d });
    await p.pollNow();
    d.endpoints = [...d.endpoints, { id: b.url, url: b.url }];
    await p.pollNow();
    d.endpoints = [{ id: b.url, url: b.url }];
    await p.pollNow();
    expect(changes).toEqual([
      { change: 'added', healthy: 0, total: 1 },
      { change: 'up', healthy: 1, total: 1 },
      { change: 'added', healthy: 1, total: 2 },
      { change: 'up', healthy: 2, total: 2 },
      { change: 'removed', healthy: 1, total: 1 },
    ]);
    expect(changedIds).toEqual([a.url, a.url, b.url, b.url, a.url]);
    expect(p.workers().map((w) => w.id)).toEqual([b.url]);
  });
});

describe('pick()', () => {
  it('the least-loaded healthy worker, round-robin among ties, counting runs dispatched since the last poll', async () => {
    const [a, b, c, down] = [await fakeAgent(), await fakeAgent(), await fakeAgent(), await fakeAgent()];
    a.health.active_runs = 2;
    down.status = 500;
    const { p } = pool({ discovery: explicit(a, b, c, down), failuresToDown: 1 });
    expect(p.pick()).toBeUndefined(); // nothing polled yet
    await p.pollNow();

    // b and c tie at 0 (a has 2, `down` is down): alternate between them.
    expect([1, 2, 3, 4].map(() => p.pick()!.id)).toEqual([b.url, c.url, b.url, c.url]);

    p.noteDispatched(b.url);
    expect(p.pick()!.id).toBe(c.url); // b: 0 + 1 dispatched
    p.noteDispatched(c.url);
    expect([1, 2].map(() => p.pick()!.id)).toEqual([b.url, c.url]); // b and c at 1 each
    p.noteDispatched(b.url);
    p.noteDispatched(c.url);
    expect(p.pick()!.id).toBe(a.url); // a: 2, b and c: 2 each: a comes after c in the rotation
    expect(p.get(b.url)!.dispatched).toBe(2);

    // The next poll reports the runs; the dispatched counts are folded into active_runs.
    b.health.active_runs = 2;
    c.health.active_runs = 1; // one of c's runs already finished
    await p.pollNow();
    expect(p.get(b.url)).toMatchObject({ active_runs: 2, dispatched: 0 });
    expect(p.pick()!.id).toBe(c.url);

    // exclude: the workers a dispatch already tried.
    expect(p.pick(new Set([c.url]))!.id).toBe(a.url);
    expect(p.pick(new Set([a.url, b.url, c.url]))).toBeUndefined();

    // A draining worker (SIGTERM) is alive and healthy, but gets nothing new.
    a.health.draining = true;
    await p.pollNow();
    expect(p.get(a.url)).toMatchObject({ ok: true, draining: true });
    expect(p.pick(new Set([c.url]))!.id).toBe(b.url);
    expect(p.pick(new Set([b.url, c.url]))).toBeUndefined();

    // Nobody healthy: undefined.
    for (const x of [a, b, c]) x.status = 503;
    await p.pollNow();
    expect(p.healthy()).toEqual([]);
    expect(p.pick()).toBeUndefined();
  });

  it('a dispatch noted while a poll is in flight still counts after that poll', async () => {
    const [a, b] = [await fakeAgent(), await fakeAgent()];
    const { p } = pool({ discovery: explicit(a, b) });
    await p.pollNow();
    a.delayMs = 200;
    const polling = p.pollNow();
    await until(() => a.requests.length === 2);
    p.noteDispatched(a.url); // after the request left: its answer cannot include this run
    await polling;
    expect(p.get(a.url)!.dispatched).toBe(1);
    expect(p.pick()!.id).toBe(b.url);
  });
});

describe('nodes() and the poll loop', () => {
  it('nodes() is the body of GET /api/cluster/nodes', async () => {
    const [a, b] = [await fakeAgent(), await fakeAgent()];
    a.health = { ok: true, active_runs: 1, running_pipelines: ['pm-ingest'], ingress_up: true };
    b.status = 503;
    const { p } = pool({ discovery: explicit(a, b), failuresToDown: 1 });
    p.setAssigned(a.url, ['pm-ingest', 'ves-stream']);
    await p.pollNow();
    expect(p.nodes()).toEqual({
      mode: 'manager',
      workers: [
        { url: a.url, ok: true, active_runs: 1, running_pipelines: ['pm-ingest'], assigned_pipelines: ['pm-ingest', 'ves-stream'] },
        { url: b.url, ok: false, active_runs: 0, running_pipelines: [], assigned_pipelines: [] },
      ],
    });
  });

  it('start() polls at once, then every intervalMs; stop() ends the loop', async () => {
    const a = await fakeAgent();
    const { p } = pool({ discovery: explicit(a), intervalMs: 100 });
    await p.start();
    expect(a.requests).toHaveLength(1);
    expect(p.get(a.url)!.ok).toBe(true);
    await until(() => a.requests.length >= 3, 2000);
    await p.stop();
    const n = a.requests.length;
    await quiet(300);
    expect(a.requests).toHaveLength(n);
  });

  it('stop() aborts a poll in flight without counting it as a failure', async () => {
    const a = await fakeAgent();
    const { p } = pool({ discovery: explicit(a), timeoutMs: 5000 });
    await p.start();
    a.delayMs = 3000;
    const polling = p.pollNow();
    await until(() => a.requests.length === 2);
    const t0 = Date.now();
    await p.stop();
    await polling;
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(p.get(a.url)).toMatchObject({ ok: true, consecutiveFailures: 0 });
  });
});
