// Per-stage figures and the tap (issue 29, items 2 and 3): GET /api/pipelines/{name} shows each
// stage's counts and rates while a stream runs; GET /api/pipelines/{name}/tap is a WebSocket of
// sampled records at a stage (filtered, limited, masked), refused before the upgrade when the
// request is wrong, and behind the API's authentication.
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { until } from '../helpers/wait.js';
import { readNdjson, register, stagedExtra, webhookYaml, workArea } from './_helpers.js';

interface Frame {
  type: string;
  [k: string]: any;
}

/** A tap's socket with every frame it got. */
async function tap(d: TestDaemon, name: string, query = '', headers: Record<string, string> = {}) {
  const ws = new WebSocket(`${d.url.replace(/^http/, 'ws')}/api/pipelines/${name}/tap${query}`, { headers });
  const frames: Frame[] = [];
  let closed: { code: number } | undefined;
  ws.on('message', (m) => frames.push(JSON.parse(m.toString()) as Frame));
  ws.on('close', (code) => (closed = { code }));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  await until(async () => frames.some((f) => f.type === 'status'), 5000, 'the tap to say hello');
  const records = () => frames.filter((f) => f.type === 'records').flatMap((f) => f.records as Record<string, unknown>[]);
  return { ws, frames, records, closed: () => closed };
}

/** The HTTP answer to an upgrade that is refused. */
function refused(d: TestDaemon, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${d.url.replace(/^http/, 'ws')}${path}`, { headers });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.on('open', () => reject(new Error(`${path} was upgraded`)));
    ws.on('error', () => {});
  });
}

async function post(d: TestDaemon, path: string, bodies: string[]) {
  for (const b of bodies) expect((await d.call('POST', `/webhooks/${path}`, { body: b, headers: { 'content-type': 'application/json' } })).status).toBe(202);
}

const SECRET = 'tap-s3cret-value-42';

async function stream(d: TestDaemon, name: string) {
  const w = workArea(0);
  await register(
    d,
    webhookYaml(name, {
      path: name,
      secret: SECRET,
      outDir: w.outDir,
      extra: stagedExtra(w.outDir),
    }),
  );
  await d.call('POST', `/api/pipelines/${name}/start`);
  await until(async () => (await d.call('GET', `/api/pipelines/${name}`)).body.active_run_id, 10_000, 'the stream to start');
  return w;
}

const hooked = (d: TestDaemon, path: string, bodies: string[]) =>
  (async () => {
    for (const b of bodies)
      expect(
        (await d.call('POST', `/webhooks/${path}`, { body: b, headers: { 'content-type': 'application/json', authorization: `Bearer ${SECRET}` } })).status,
      ).toBe(202);
  })();

describe('stage figures', () => {
  it('count every stage of a running stream, with rates, and sum to the run figures', { timeout: 60_000 }, async () => {
    const d = await testDaemon();
    const w = await stream(d, 'staged');
    await hooked(d, 'staged', [...Array.from({ length: 6 }, (_, n) => JSON.stringify({ n })), '{"n": 9,']);
    const live = await until(
      async () => {
        const l = (await d.call('GET', '/api/pipelines/staged')).body.live;
        return l?.records_in === 7 && l.stages?.dlq?.records === 1 && l;
      },
      10_000,
      'the stages to show 7 in and 1 dead letter',
      100,
    );
    const s = live.stages;
    expect(s.source).toMatchObject({ type: 'webhook', records: 7, parse_errors: 1 });
    expect(s.source.bytes).toBeGreaterThan(0);
    expect(s.transforms).toEqual([
      expect.objectContaining({ label: 'transforms[0] (filter)', type: 'filter', in: 6, out: 5, errors: 0 }),
      expect.objectContaining({ label: 'transforms[1] (add_field)', type: 'add_field', in: 5, out: 5, errors: 0 }),
    ]);
    expect(s.sinks).toEqual([
      expect.objectContaining({ label: 'sinks[0] (local)', type: 'local', matched: 5, written: 5, failed: 0, retries: 0, circuit: 'closed' }),
    ]);
    expect(s.sinks[0].writes).toBeGreaterThanOrEqual(1);
    expect(s.dlq).toMatchObject({ type: 'local', records: 1, parse: 1, transform: 0, sink: 0, failed: 0 });
    expect(s.source.per_sec).toBeGreaterThan(0);
    expect(live).toMatchObject({ records_out: s.sinks[0].written, dlq_count: s.dlq.records, records_filtered: 1 });
    // The list carries them too (svc top reads the list).
    const listed = (await d.call('GET', '/api/pipelines')).body.find((p: { name: string }) => p.name === 'staged');
    expect(listed.live.stages.sinks[0].written).toBe(5);
    expect(readNdjson(w.outFile)).toHaveLength(5);
  });
});

describe('tap', () => {
  it('samples records at a stage, filtered and limited, with secrets masked', { timeout: 60_000 }, async () => {
    const d = await testDaemon();
    await stream(d, 'tapped');
    const src = await tap(d, 'tapped', '?stage=source&limit=3');
    const out = await tap(d, 'tapped', `?stage=0&filter=${encodeURIComponent('n >= 2')}`);
    const dlq = await tap(d, 'tapped', '?stage=dlq');
    expect(src.frames[0]).toMatchObject({ type: 'tap', pipeline: 'tapped', stage: 'source', limit: 3, rate: 10, filter: null });
    expect(src.frames[1]).toEqual({ type: 'status', running: true });
    expect(out.frames[0]).toMatchObject({ stage: 'sinks[0]', filter: 'n >= 2', limit: 100 });

    await hooked(d, 'tapped', [...Array.from({ length: 5 }, (_, n) => JSON.stringify({ n, note: `key ${SECRET} inside` })), `{"n": 99, "broken": "${SECRET}"`]);
    // Source: the first 3 records as decoded (before the filter), then the tap ends at its limit.
    await until(async () => src.closed(), 10_000, 'the source tap to end at its limit');
    expect(src.records().map((r) => r.n)).toEqual([0, 1, 2]);
    expect(src.records()[0]).toEqual({ n: 0, note: 'key *** inside' });
    expect(src.frames.at(-1)).toEqual({ type: 'end', reason: 'limit of 3 records reached' });
    expect(src.closed()!.code).toBe(1000);
    // The sink's records: after the transforms, only those the tap's filter keeps.
    await until(async () => out.records().length === 2, 10_000, 'the sink tap to show n 2 and 4');
    expect(out.records()).toEqual([
      { n: 2, note: 'key *** inside', seen: 'yes' },
      { n: 4, note: 'key *** inside', seen: 'yes' },
    ]);
    // The dead-letter envelope, its raw input base64 (the secret inside it is not plain text there).
    const [envelope] = await until(async () => (dlq.records().length === 1 ? dlq.records() : undefined), 10_000, 'the dlq tap to show the envelope');
    expect(envelope).toMatchObject({ _stage: 'parse', _pipeline: 'tapped', record: null });
    expect(JSON.stringify(envelope)).not.toContain(SECRET);
    for (const t of [out, dlq]) t.ws.close();
  });

  it('keeps to its rate', { timeout: 60_000 }, async () => {
    const d = await testDaemon();
    await stream(d, 'rated');
    const t = await tap(d, 'rated', '?stage=transforms&rate=1&limit=1000');
    // 40 records in one burst: a rate of 1/s lets 1 through (its bucket holds one second).
    await hooked(
      d,
      'rated',
      Array.from({ length: 40 }, (_, n) => JSON.stringify({ n: n + 10 })),
    );
    await until(async () => (await d.call('GET', '/api/pipelines/rated')).body.live?.records_out === 40, 10_000, 'all 40 to be written');
    await until(async () => t.records().length >= 1, 5000, 'a first sample');
    expect(t.records().length).toBeLessThanOrEqual(2);
    t.ws.close();
  });

  it('waits for a pipeline that is not running, and says when it runs', { timeout: 60_000 }, async () => {
    const d = await testDaemon();
    const w = workArea(0);
    await register(d, webhookYaml('later', { path: 'later', outDir: w.outDir, extra: ['enabled: false'] }));
    const t = await tap(d, 'later', '?stage=source');
    expect(t.frames[1]).toEqual({ type: 'status', running: false });
    await d.call('POST', '/api/pipelines/later/start');
    await until(async () => t.frames.some((f) => f.type === 'status' && f.running === true), 10_000, 'the tap to say the pipeline runs');
    await post(d, 'later', ['{"a": 1}']);
    await until(async () => t.records().length === 1, 10_000, 'the record');
    expect(t.records()).toEqual([{ a: 1 }]);
    // Deleting the pipeline ends the tap.
    await d.call('DELETE', '/api/pipelines/later');
    await until(async () => t.closed(), 10_000, 'the tap to end with the pipeline');
    expect(t.frames.at(-1)).toEqual({ type: 'end', reason: "pipeline 'later' was deleted" });
  });

  it('refuses a wrong request before the upgrade, with {detail}', { timeout: 60_000 }, async () => {
    const d = await testDaemon();
    const w = workArea(0);
    await register(d, webhookYaml('checked', { path: 'checked', outDir: w.outDir }));
    const cases: [string, number, RegExp][] = [
      ['/api/pipelines/nope/tap', 404, /pipeline 'nope' not found/],
      ['/api/pipelines/checked/tap?stage=7', 400, /the pipeline has 1 sinks \(0 to 0\)/],
      ['/api/pipelines/checked/tap?stage=kafka', 400, /unknown stage 'kafka': use source, transforms, dlq or a sink: 0 \(local\)/],
      ['/api/pipelines/checked/tap?stage=dlq', 400, /no dlq sink/],
      ['/api/pipelines/checked/tap?filter=n%20%3E%3E%201', 400, /^\{"detail":"filter: /],
      ['/api/pipelines/checked/tap?limit=0', 422, /limit/],
    ];
    for (const [path, status, detail] of cases) {
      const r = await refused(d, path);
      expect({ path, status: r.status }).toEqual({ path, status });
      expect(r.body).toMatch(detail);
      expect(Object.keys(JSON.parse(r.body) as object)).toEqual(['detail']);
    }
  });

  it('needs the API key or a session token (a browser sends it as ?token=)', { timeout: 60_000 }, async () => {
    const d = await testDaemon({ SVC_API_KEY: 'k-123456789', SVC_AUTH_USERS: 'ops:pw-123456' });
    const w = workArea(0);
    const made = await d.call('POST', '/api/pipelines', {
      yaml: webhookYaml('guarded', { path: 'guarded', outDir: w.outDir }),
      headers: { 'x-api-key': 'k-123456789' },
    });
    expect(made.status).toBe(201);
    expect((await refused(d, '/api/pipelines/guarded/tap')).status).toBe(401);
    expect((await refused(d, '/api/pipelines/guarded/tap?api_key=k-123456789')).status).toBe(401);
    const byKey = await tap(d, 'guarded', '', { 'x-api-key': 'k-123456789' });
    byKey.ws.close();
    const login = await d.call('POST', '/api/auth/login', { body: { username: 'ops', password: 'pw-123456' } });
    expect(login.status).toBe(200);
    const byToken = await tap(d, 'guarded', `?token=${encodeURIComponent(login.body.token)}`);
    expect(byToken.frames[0]).toMatchObject({ type: 'tap', pipeline: 'guarded' });
    byToken.ws.close();
    expect((await refused(d, '/api/pipelines/guarded/tap?token=forged')).status).toBe(401);
  });
});

describe('tap at full rate', () => {
  it('samples a stream at full speed without holding records back or losing any', { timeout: 120_000 }, async () => {
    const d = await testDaemon();
    const w = workArea(0);
    await register(d, webhookYaml('flood', { path: 'flood', outDir: w.outDir, maxQueue: 100_000 }));
    await until(async () => (await d.call('GET', '/api/pipelines/flood')).body.active_run_id, 10_000, 'the stream to start');
    const t = await tap(d, 'flood', '?stage=source&rate=50&limit=100000');
    const t0 = Date.now();
    // 40 bodies of 1,000 records each, sent as fast as the webhook takes them.
    const bodies = Array.from({ length: 40 }, (_, b) => JSON.stringify(Array.from({ length: 1000 }, (_, i) => ({ n: b * 1000 + i }))));
    await post(d, 'flood', bodies);
    await until(async () => (await d.call('GET', '/api/pipelines/flood')).body.live?.records_out === 40_000, 60_000, 'all 40,000 records written', 100);
    const seconds = (Date.now() - t0) / 1000;
    const lines = readNdjson(w.outFile);
    expect(lines).toHaveLength(40_000);
    expect(new Set(lines.map((l) => l.n)).size).toBe(40_000);
    // The tap saw some, within its rate (a one-second burst on top).
    await until(async () => t.records().length > 0, 5000, 'samples');
    expect(t.records().length).toBeLessThanOrEqual(Math.ceil(50 * (seconds + 2)));
    expect(t.records().every((r) => typeof r.n === 'number')).toBe(true);
    t.ws.close();
  });
});
