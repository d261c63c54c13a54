// Stage figures and the tap in manager mode (issue 29, items 2 and 3), with real processes: a
// webhook stream placed on every worker shows on the manager the stage figures summed over its
// slots; a tap through the manager relays the records of every worker that holds a slot (one that
// gets its slot while the tap is open too), each frame tagged with its worker, keeps its limit and
// ends cleanly; a worker's own tap (/agent/pipelines/{name}/tap) needs the key under
// SVC_INTERNAL_AUTH_MODE=enforce.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { until } from '../helpers/wait.js';
import { tempDir } from '../helpers/fs.js';
import { startCluster, type Cluster } from './processes.js';

const KEY = 'live-tap-key-0123456789';
const auth = { 'x-api-key': KEY };

interface Frame {
  type: string;
  [k: string]: any;
}

/** A tap's socket with every frame it got. */
async function tap(url: string, headers: Record<string, string>) {
  const ws = new WebSocket(url.replace(/^http/, 'ws'), { headers });
  const frames: Frame[] = [];
  let closed: { code: number } | undefined;
  ws.on('message', (m) => frames.push(JSON.parse(String(m as Buffer)) as Frame));
  ws.on('close', (code) => (closed = { code }));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  await until(() => frames.some((f) => f.type === 'status'), 5000, 'the tap to say hello');
  const records = () =>
    frames
      .filter((f) => f.type === 'records')
      .flatMap((f) => (f.records as Record<string, unknown>[]).map((r): Record<string, unknown> => ({ ...r, _worker: f.worker })));
  return { ws, frames, records, closed: () => closed };
}

/** The HTTP status of an upgrade that is refused. */
function refused(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), { headers });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.on('open', () => {
      ws.close();
      reject(new Error(`${url} was upgraded`));
    });
    ws.on('error', () => {});
  });
}

async function postAcked(url: string, n: number) {
  const post = () =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) }).then(
      (r) => r.status === 202,
      () => false,
    );
  await until(post, 15_000, `record ${n} to be acknowledged`, 100);
}

const yaml = (name: string, out: string) =>
  [
    'version: "1"',
    'pipeline:',
    `  name: ${name}`,
    '  schedule: { type: stream }',
    `  source: { type: webhook, path: ${name} }`,
    '  serializer_in: { type: json }',
    '  serializer_out: { type: ndjson }',
    '  transforms:',
    "    - { type: filter, expression: 'n != 3' }",
    '    - { type: add_field, fields: { seen: "\'yes\'" } }',
    '  sinks:',
    `    - { type: local, path: ${JSON.stringify(out)}, filename_template: "{run_id}.ndjson" }`,
    '',
  ].join('\n');

describe('live operations in manager mode', () => {
  let c: Cluster;
  const hook = (i: number, name: string) => `${c.workers[i]!.ingressUrl}/webhooks/${name}`;

  beforeAll(async () => {
    const secured = { SVC_API_KEY: KEY, SVC_INTERNAL_AUTH_MODE: 'enforce' };
    // The reconciler every 2 s, so that a worker that joins gets its slot soon.
    c = await startCluster(2, { manager: { ...secured, SVC_STATS_INTERVAL: '2' }, worker: secured });
    await c.startWorker(0);
    await c.startManager();
  }, 90_000);
  afterAll(async () => {
    await c?.stop();
  });

  it('relays the taps of the workers that hold the slots, tagged, to its limit, and ends them', { timeout: 120_000 }, async () => {
    expect((await c.call('POST', '/api/pipelines', yaml('tapped', tempDir('svc-live-tap-')), auth)).status).toBe(201);
    await until(async () => (await c.call('GET', '/api/pipelines/tapped/placement', undefined, auth)).body?.slot_count === 1, 20_000, 'one slot', 200);
    const t = await tap(`${c.managerUrl}/api/pipelines/tapped/tap?stage=0&limit=6&rate=1000`, auth);
    expect(t.frames[0]).toMatchObject({ type: 'tap', pipeline: 'tapped', stage: 'sinks[0]', limit: 6, rate: 1000 });
    expect(t.frames[1]).toEqual({ type: 'status', running: true });
    const slotWorkers = async () =>
      ((await c.call('GET', '/api/pipelines/tapped/placement', undefined, auth)).body.slots as { worker_id: string }[]).map((s) => s.worker_id);
    const [first] = await slotWorkers();
    const workerRunning = (id: string) => t.frames.some((f) => f.type === 'status' && f.worker === id && f.running === true);
    await until(() => workerRunning(first!), 10_000, "the first worker's tap to be open");

    // A worker that joins while the tap is open gets a slot, and is tapped too.
    await c.startWorker(1);
    const both = await until(async () => ((await slotWorkers()).length === 2 ? slotWorkers() : undefined), 30_000, 'a slot on the new worker', 200);
    const second = both.find((id) => id !== first)!;
    await until(() => workerRunning(second), 15_000, "the second worker's tap to be open");

    // 4 records through each worker; n 3 is filtered out before the sink, so 7 reach it: the tap stops at 6.
    for (let n = 0; n < 8; n++) await postAcked(hook(n % 2, 'tapped'), n);
    await until(() => t.closed(), 15_000, 'the tap to end at its limit');
    expect(t.closed()!.code).toBe(1000);
    expect(t.frames.at(-1)).toEqual({ type: 'end', reason: 'limit of 6 records reached' });
    const got = t.records();
    expect(got).toHaveLength(6);
    for (const r of got) expect(r).toMatchObject({ seen: 'yes' });
    expect(got.map((r) => r.n)).not.toContain(3);
    // Each records frame says which worker it comes from: both of them here.
    expect(new Set(got.map((r) => r._worker))).toEqual(new Set([first, second]));
  });

  it("shows the stage figures summed over the stream's slots", { timeout: 60_000 }, async () => {
    await until(
      async () => (await c.call('GET', '/api/cluster/nodes', undefined, auth)).body?.workers?.filter((w: { ok: boolean }) => w.ok).length === 2,
      20_000,
      'two healthy workers',
      200,
    );
    expect((await c.call('POST', '/api/pipelines', yaml('staged', tempDir('svc-live-stages-')), auth)).status).toBe(201);
    await until(async () => (await c.call('GET', '/api/pipelines/staged/placement', undefined, auth)).body?.slot_count === 2, 20_000, 'two slots', 200);
    // 10 records, 5 through each worker; the filter drops n 3.
    for (let n = 0; n < 10; n++) await postAcked(hook(n % 2, 'staged'), n);
    const live = await until(
      async () => {
        const l = (await c.call('GET', '/api/pipelines/staged', undefined, auth)).body.live;
        return l?.stages?.source.records === 10 && l.stages.sinks[0].written === 9 && l;
      },
      10_000,
      "the manager's stages to hold both slots' figures",
      200,
    );
    expect(live.stages.source).toMatchObject({ type: 'webhook', records: 10, parse_errors: 0 });
    expect(live.stages.transforms).toEqual([
      expect.objectContaining({ label: 'transforms[0] (filter)', in: 10, out: 9, errors: 0 }),
      expect.objectContaining({ label: 'transforms[1] (add_field)', in: 9, out: 9, errors: 0 }),
    ]);
    expect(live.stages.sinks[0]).toMatchObject({ label: 'sinks[0] (local)', matched: 9, written: 9, failed: 0, circuit: 'closed' });
    expect(live.stages.dlq).toBeNull();
    expect(live.stages.source.per_sec).toBeGreaterThan(0);
    expect(live).toMatchObject({ records_in: 10, records_out: 9, records_filtered: 1 });
    // Each slot reported its own part.
    const slots = (await c.call('GET', '/api/pipelines/staged/placement', undefined, auth)).body.slots as { stats: { records_in: number } }[];
    expect(slots.map((s) => s.stats.records_in)).toEqual([5, 5]);
  });

  it("a worker's own tap needs the key under SVC_INTERNAL_AUTH_MODE=enforce", { timeout: 30_000 }, async () => {
    const url = `${c.workers[0]!.agentUrl}/agent/pipelines/staged/tap?stage=source`;
    expect((await refused(url)).status).toBe(401);
    const wrong = await refused(url, { 'x-api-key': 'not-the-key' });
    expect(wrong.status).toBe(401);
    expect(Object.keys(JSON.parse(wrong.body) as object)).toEqual(['detail']);
    const t = await tap(url, auth);
    expect(t.frames[0]).toMatchObject({ type: 'tap', pipeline: 'staged', stage: 'source' });
    expect(t.frames[1]).toEqual({ type: 'status', running: true });
    await postAcked(hook(0, 'staged'), 42);
    await until(() => t.records().length === 1, 10_000, 'the record on the worker tap');
    expect(t.records()[0]).toMatchObject({ n: 42 });
    t.ws.close();
  });
});
