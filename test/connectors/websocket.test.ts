// The websocket source and sink: the shared conformance suite against a real `ws` server, then what
// it does not cover: extra_headers at the handshake, reconnect after a dropped connection (and
// reconnect: false, max_reconnect_attempts), binary frames, backpressure through pause/resume, the
// close handshake, the sink's connect-send-close per batch and its retries, wss with an untrusted
// certificate.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { loadPipelineText } from '../../src/config/load.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline, type RunTelemetry } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { registry } from '../../src/plugins/registry.js';
import type { SourcePlugin } from '../../src/plugins/types.js';
import { tempDir } from '../helpers/fs.js';
import { conformance, type Cfg, type Rec } from './conformance.js';
import { selfSignedCert } from './peers/http.js';
import { startWsPeer, wsPeer, type WsPeer } from './peers/ws.js';
import { quiet, until } from '../helpers/wait.js';

conformance(wsPeer);

let seq = 0;
const chan = () => `ws_${process.pid}_${++seq}`;
const bodies = (n: number, from = 0) => Array.from({ length: n }, (_, i) => Buffer.from(JSON.stringify({ seq: from + i })));
const auth = { Authorization: 'Bearer t0ken-ws' };

function load(pipeline: Cfg) {
  const r = loadPipelineText(stringify({ version: '1', pipeline }), { env: {} });
  if (!r.config) throw new Error(r.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
  return r.config;
}

function ndjsonIn(dir: string): Rec[] {
  const out: Rec[] = [];
  for (const n of readdirSync(dir).sort()) for (const l of readFileSync(join(dir, n), 'utf8').split('\n')) if (l.trim()) out.push(JSON.parse(l) as Rec);
  return out;
}

/** A stream run of the websocket source into a local NDJSON file. */
function startSource(source: Cfg) {
  const out = tempDir('svc-ws-out-');
  const states: string[] = [];
  const telemetry: RunTelemetry = { connection: (_c, _t, s) => void states.push(s) };
  const stop = new AbortController();
  const config = load({
    name: 'ws-source',
    schedule: { type: 'stream' },
    source: { type: 'websocket', ...source },
    serializer_out: { type: 'ndjson' },
    sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
  });
  const done = runPipeline(config, { signal: stop.signal, log: silentLogger, processed: new MemoryProcessedFiles(), telemetry });
  return { stop, done, states, records: () => ndjsonIn(out) };
}

async function runSink(sink: Cfg, n: number, extra: Cfg = {}) {
  const dir = tempDir('svc-ws-in-');
  mkdirSync(join(dir, 'in'));
  writeFileSync(
    join(dir, 'in', 'r.ndjson'),
    bodies(n)
      .map((b) => b.toString() + '\n')
      .join(''),
  );
  const states: string[] = [];
  const telemetry: RunTelemetry = { connection: (_c, _t, s) => void states.push(s) };
  const config = load({
    name: 'ws-sink',
    schedule: { type: 'manual' },
    source: { type: 'local', path: join(dir, 'in') },
    serializer_in: { type: 'ndjson' },
    sinks: [{ type: 'websocket', ...sink }],
    ...extra,
  });
  const rec = await runPipeline(config, { log: silentLogger, processed: new MemoryProcessedFiles(), telemetry });
  return { rec, states };
}

describe('websocket source', () => {
  let peer: WsPeer;
  beforeAll(async () => {
    peer = await startWsPeer({ token: 't0ken-ws' });
  });
  afterAll(() => peer.close());

  it('sends extra_headers with the handshake, and closes with the close handshake when stopped', async () => {
    const ch = chan();
    const run = startSource({ url: `${peer.url}/${ch}?feed=alarms`, extra_headers: { ...auth, 'X-Tenant': 'tenant-7' } });
    await until(() => run.states.at(-1) === 'connected', 10_000, 'connected');
    const hs = peer.handshakes.filter((h) => h.path === `/${ch}`);
    expect(hs).toHaveLength(1);
    expect(hs[0]!.headers['x-tenant']).toBe('tenant-7');
    expect(hs[0]!.headers.authorization).toBe(auth.Authorization);
    await peer.send(ch, bodies(3));
    await until(() => run.records().length === 3, 10_000, '3 records');
    run.stop.abort();
    const rec = await run.done;
    expect(rec.status).toBe('success');
    await until(() => peer.closes(ch).length === 1, 5_000, 'the close');
    expect(peer.closes(ch)).toEqual([1000]);
  });

  it('reconnects after the server drops the connection; messages sent after it arrive', async () => {
    const ch = chan();
    const run = startSource({ url: `${peer.url}/${ch}`, extra_headers: auth, reconnect_delay: 0.1 });
    await until(() => run.states.at(-1) === 'connected', 10_000, 'connected');
    await peer.send(ch, bodies(5));
    await until(() => run.records().length === 5, 10_000, 'the first 5 records');
    peer.dropAll();
    await until(() => run.states.filter((s) => s === 'connected').length === 2, 10_000, 'connected again');
    await peer.send(ch, bodies(5, 5));
    await until(() => run.records().length === 10, 10_000, '10 records');
    run.stop.abort();
    const rec = await run.done;
    expect(rec.status).toBe('success');
    expect(run.records().map((r) => r.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(run.states).toEqual(['connecting', 'connected', 'disconnected', 'connecting', 'connected']);
    expect(peer.handshakes.filter((h) => h.path === `/${ch}`)).toHaveLength(2);
  });

  it('reconnect: false ends the stream with an error at the first loss (the pipeline goes to error)', async () => {
    const ch = chan();
    const run = startSource({ url: `${peer.url}/${ch}`, extra_headers: auth, reconnect: false, reconnect_delay: 0.05 });
    await until(() => run.states.at(-1) === 'connected', 10_000, 'connected');
    await peer.send(ch, bodies(2));
    await until(() => run.records().length === 2, 10_000, '2 records');
    peer.dropAll();
    const rec = await run.done;
    expect(rec.status).toBe('failed');
    expect(rec.gave_up).toBe(true);
    expect(rec.error).toMatch(/^websocket: ws:\/\/127\.0\.0\.1:\d+\/\S+: connection closed \(code 1006\); not reconnecting \(reconnect is off\)$/);
    expect(run.states).toEqual(['connecting', 'connected', 'disconnected', 'failed']);
    await quiet(200);
    expect(peer.handshakes.filter((h) => h.path === `/${ch}`)).toHaveLength(1);
  });

  it('reconnect: false fails at once when the first connect is refused (no reconnect_delay wait)', async () => {
    const t0 = Date.now();
    const run = startSource({ url: `${peer.url}/${chan()}`, extra_headers: { Authorization: 'Bearer wrong-ws-token' }, reconnect: false, reconnect_delay: 5 });
    const rec = await run.done;
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(/refused the WebSocket upgrade with 401 Unauthorized \(check the credentials in extra_headers\); not reconnecting/);
    expect(rec.error).not.toContain('wrong-ws-token');
  });

  it('max_reconnect_attempts bounds the attempts once the server is gone', async () => {
    const gone = await startWsPeer();
    const ch = chan();
    const run = startSource({ url: `${gone.url}/${ch}`, reconnect_delay: 0.05, max_reconnect_attempts: 2 });
    await until(() => run.states.at(-1) === 'connected', 10_000, 'connected');
    await gone.close();
    const rec = await run.done;
    expect(rec.status).toBe('failed');
    expect(rec.gave_up).toBe(true);
    expect(rec.error).toMatch(/gave up after 2 reconnect attempts: .*connection refused/);
    expect(run.states.at(-1)).toBe('failed');
  });

  it('a refused handshake is retried with reconnect true (wrong credentials), and never shows them', async () => {
    const ch = chan();
    const run = startSource({ url: `${peer.url}/${ch}`, extra_headers: { Authorization: 'Bearer wrong-ws-token' }, reconnect_delay: 0.05 });
    await until(() => peer.handshakes.filter((h) => h.path === `/${ch}`).length >= 3, 10_000, '3 attempts');
    run.stop.abort();
    const rec = await run.done;
    expect(rec.status).toBe('success');
    expect(run.states).not.toContain('connected');
    expect(peer.handshakes.filter((h) => h.path === `/${ch}`).every((h) => h.status === 401)).toBe(true);
    const t = await testConnector('source', {
      type: 'websocket',
      url: `${peer.url}/${ch}`,
      extra_headers: { Authorization: 'Bearer wrong-ws-token' },
    } as never);
    expect(t.error).toMatch(/^websocket: ws:\/\/127\.0\.0\.1:\d+\/\S+: the server refused the WebSocket upgrade with 401 Unauthorized/);
    expect(t.error).not.toContain('wrong-ws-token');
    const notFound = await testConnector('source', { type: 'websocket', url: `${peer.url}/a/b`, extra_headers: auth } as never);
    expect(notFound.error).toMatch(/refused the WebSocket upgrade with 404 Not Found$/);
  });

  it('binary frames are bodies too', async () => {
    const ch = chan();
    const run = startSource({ url: `${peer.url}/${ch}`, extra_headers: auth });
    await until(() => run.states.at(-1) === 'connected', 10_000, 'connected');
    await peer.send(ch, bodies(3), true);
    await until(() => run.records().length === 3, 10_000, '3 records');
    run.stop.abort();
    await run.done;
    expect(run.records()).toEqual([{ seq: 0 }, { seq: 1 }, { seq: 2 }]);
  });

  it('backpressure: an unread stream stops reading the socket (the server buffers), and resumes without loss', async () => {
    const ch = chan();
    const config = load({
      name: 'ws-bp',
      schedule: { type: 'stream' },
      source: { type: 'websocket', url: `${peer.url}/${ch}`, extra_headers: auth },
      sinks: [{ type: 'local', path: '/tmp' }],
    });
    const plugin = registry.source.get('websocket') as SourcePlugin;
    const stop = new AbortController();
    const src = plugin.create(config.source as never, {
      pipeline: 'ws-bp',
      log: silentLogger,
      signal: stop.signal,
      processed: new MemoryProcessedFiles(),
      skipProcessed: false,
    });
    const units = src.units(stop.signal)[Symbol.asyncIterator]();
    const first = units.next();
    await until(() => peer.clients(ch).length === 1, 10_000, 'the connection');
    const n = 20_000;
    const pad = 'x'.repeat(1000);
    const sent = peer.send(
      ch,
      Array.from({ length: n }, (_, i) => Buffer.from(JSON.stringify({ seq: i, pad }))),
    );
    const firstCount = (await first).value!.meta.messages as number;
    // Nothing is read now: the source queue fills to its mark, ws pauses the socket, TCP fills up.
    const server = peer.clients(ch)[0]!;
    await until(() => server.bufferedAmount > 2_000_000, 10_000, 'the server to buffer what the paused client does not read');
    const held = server.bufferedAmount;
    await quiet(300);
    expect(server.bufferedAmount).toBeGreaterThan(held * 0.9); // still (almost) not read
    const seqs: number[] = [];
    while (seqs.at(-1) !== n - 1) {
      const u = await units.next();
      for await (const b of u.value!.read()) seqs.push((JSON.parse(b.toString()) as { seq: number }).seq);
    }
    await sent;
    stop.abort();
    await src.close?.();
    // The first unit's messages were taken above without reading them; the rest arrive in order.
    expect(seqs[0]).toBe(firstCount);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => seqs[0]! + i));
    expect(seqs.at(-1)).toBe(n - 1);
  }, 60_000);
});

describe('websocket sink', () => {
  let peer: WsPeer;
  beforeAll(async () => {
    peer = await startWsPeer({ token: 't0ken-ws' });
  });
  afterAll(() => peer.close());

  it('per batch: connects (with extra_headers), sends one text message per record, closes with the handshake', async () => {
    const ch = chan();
    const { rec, states } = await runSink({ url: `${peer.url}/${ch}`, extra_headers: { ...auth, 'X-Tenant': 'tenant-9' } }, 250, { record_chunk_size: 100 });
    expect(rec.errors).toEqual([]);
    expect(rec.records_out).toBe(250);
    const hs = peer.handshakes.filter((h) => h.path === `/${ch}`);
    expect(hs.map((h) => h.status)).toEqual([101, 101, 101]);
    expect(hs.every((h) => h.headers['x-tenant'] === 'tenant-9')).toBe(true);
    expect(peer.closes(ch)).toEqual([1000, 1000, 1000]);
    const got = peer.received(ch);
    expect(got.every((m) => !m.binary)).toBe(true);
    expect(got.map((m) => (JSON.parse(m.body.toString()) as Rec).seq)).toEqual(Array.from({ length: 250 }, (_, i) => i));
    expect(states).toEqual(['connecting', 'connected']);
  });

  it('binary serializers (msgpack) go out as binary frames', async () => {
    const ch = chan();
    const { rec } = await runSink({ url: `${peer.url}/${ch}`, extra_headers: auth, serializer_out: { type: 'msgpack' } }, 3);
    expect(rec.errors).toEqual([]);
    expect(peer.received(ch)).toHaveLength(3);
    expect(peer.received(ch).every((m) => m.binary)).toBe(true);
  });

  it('a refused handshake is a retryable failure (retry_count), named with its status', async () => {
    const ch = chan();
    const { rec, states } = await runSink(
      { url: `${peer.url}/${ch}`, extra_headers: { Authorization: 'Bearer wrong-ws-token' }, retry_count: 1, retry_delay_seconds: 0.02 },
      3,
    );
    expect(rec.records_out).toBe(0);
    expect(rec.errors.join('\n')).toMatch(/refused the WebSocket upgrade with 401 Unauthorized/);
    expect(rec.errors.join('\n')).not.toContain('wrong-ws-token');
    expect(peer.handshakes.filter((h) => h.path === `/${ch}`).map((h) => h.status)).toEqual([401, 401]);
    expect(states).toEqual(['connecting', 'disconnected', 'connecting', 'disconnected']);
  });

  it('a connection cut mid-batch fails the batch; the retry sends it whole again (duplicates possible)', async () => {
    const ch = chan();
    peer.cutAfter(ch, 4);
    const { rec, states } = await runSink({ url: `${peer.url}/${ch}`, extra_headers: auth, retry_count: 2, retry_delay_seconds: 0.02 }, 10);
    expect(rec.errors).toEqual([]);
    expect(rec.records_out).toBe(10);
    const seqs = peer.received(ch).map((m) => (JSON.parse(m.body.toString()) as Rec).seq);
    // The first connection took at least the 4 messages before the cut; the retry all 10.
    expect(seqs.slice(-10)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(seqs.length).toBeGreaterThanOrEqual(14);
    expect(states).toEqual(['connecting', 'connected', 'disconnected', 'connecting', 'connected']);
  });

  it('a refused port fails clearly (test() and write)', async () => {
    const t = await testConnector('sink', { type: 'websocket', url: 'ws://127.0.0.1:1/x' } as never);
    expect(t.error).toBe('websocket: ws://127.0.0.1:1/x: connection refused (nothing listens there)');
    const { rec } = await runSink({ url: 'ws://127.0.0.1:1/x' }, 1);
    expect(rec.errors.join('\n')).toMatch(/connection refused/);
  });
});

describe('websocket: wss and config', () => {
  let peer: WsPeer;
  beforeAll(async () => {
    peer = await startWsPeer({ tls: await selfSignedCert(tempDir('svc-ws-tls-')) });
  }, 60_000);
  afterAll(() => peer.close());

  it('wss:// goes through TLS: an untrusted (self-signed) certificate is refused clearly', async () => {
    expect(peer.url).toMatch(/^wss:/);
    for (const role of ['source', 'sink'] as const) {
      const r = await testConnector(role, { type: 'websocket', url: `${peer.url}/x` } as never);
      expect(r.error).toMatch(/the server certificate is not trusted \((DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN)\)/);
    }
  });

  it('url must be ws:// or wss://', () => {
    for (const role of ['source', 'sink'] as const) {
      const comp = { type: 'websocket', url: 'https://h/x' };
      const pipeline = {
        name: 'lint',
        schedule: { type: role === 'source' ? 'stream' : 'manual' },
        source: role === 'source' ? comp : { type: 'local', path: '/tmp' },
        sinks: [role === 'sink' ? comp : { type: 'local', path: '/tmp' }],
      };
      const d = loadPipelineText(stringify({ version: '1', pipeline }), { env: {} }).diagnostics.map((x) => formatDiagnostic(x));
      expect(d.join('\n')).toMatch(role === 'source' ? /pipeline\.source\.url/ : /pipeline\.sinks\[0\]\.url/);
    }
  });
});
