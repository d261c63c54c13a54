// The manager's tap relay (src/cluster/tap-relay.ts) against fake worker agents (WebSocket servers
// that answer as /agent/pipelines/{name}/tap does): each holder's tap is opened with the key and the
// epoch, records come tagged with their worker, the rate and the limit hold over all workers
// together, holders that come and go are followed, a worker's tap that closes is opened again, and
// every worker tap is closed when the tap ends.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { TapRelay, type TapHolder } from '../../src/cluster/tap-relay.js';
import type { TapOptions } from '../../src/engine/tap.js';
import { silentLogger } from '../../src/observability/log.js';
import { until } from '../helpers/wait.js';

interface FakeWorker extends TapHolder {
  server: Server;
  /** Every tap opened here: its URL, headers and socket, and whether it closed. */
  taps: { url: URL; headers: Record<string, unknown>; socket: WebSocket; closed: boolean }[];
  open(): FakeWorker['taps'];
  send(...records: object[]): void;
}

const workers: FakeWorker[] = [];
afterEach(async () => {
  for (const w of workers.splice(0)) {
    for (const t of w.taps) t.socket.terminate();
    await new Promise((r) => w.server.close(r));
  }
});

async function fakeWorker(id: string): Promise<FakeWorker> {
  const server = createServer();
  const wss = new WebSocketServer({ server });
  const taps: FakeWorker['taps'] = [];
  wss.on('connection', (socket, req) => {
    const t = { url: new URL(req.url!, 'http://x'), headers: req.headers, socket, closed: false };
    taps.push(t);
    socket.on('close', () => (t.closed = true));
    socket.send(JSON.stringify({ type: 'tap', pipeline: 'p', stage: t.url.searchParams.get('stage') }));
    socket.send(JSON.stringify({ type: 'status', running: true }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const w: FakeWorker = {
    id,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    taps,
    open: () => taps.filter((t) => !t.closed),
    send: (...records) => {
      for (const t of w.open()) t.socket.send(JSON.stringify({ type: 'records', stage: 'transforms', records }));
    },
  };
  workers.push(w);
  return w;
}

/** A relayed tap: what the client got. */
function relayed(holders: () => TapHolder[], opts: Partial<TapOptions> = {}, exists = () => true) {
  const relay = new TapRelay({ holders: () => holders(), exists: () => exists(), call: () => ({ apiKey: 'k-1', epoch: 3 }), log: silentLogger, syncMs: 50 });
  const got: { records: { lines: string[]; worker?: string }[]; frames: object[]; ended?: string } = { records: [], frames: [] };
  const detach = relay.feed('p').attach(
    { stage: 'transforms', rate: 1000, limit: 100, ...opts },
    {
      records: (lines, worker) => got.records.push({ lines, worker }),
      frame: (f) => got.frames.push(f),
      end: (reason) => (got.ended = reason),
    },
  );
  const lines = () => got.records.flatMap((r) => r.lines.map((l) => ({ ...(JSON.parse(l) as object), worker: r.worker })));
  return { got, lines, detach };
}

describe('tap relay', () => {
  it("opens each holder's tap with the key and epoch, tags records, keeps the limit over all of them and then closes them", async () => {
    const [a, b] = [await fakeWorker('wa'), await fakeWorker('wb')];
    const t = relayed(() => [a, b], { stage: 1, limit: 5, filter: 'n > 0' });
    await until(() => a.open().length === 1 && b.open().length === 1, 5000, 'both worker taps');
    const [ta] = a.taps;
    expect(ta!.url.pathname).toBe('/agent/pipelines/p/tap');
    expect(Object.fromEntries(ta!.url.searchParams)).toEqual({ stage: 'sinks[1]', rate: '1000', limit: '5', filter: 'n > 0' });
    expect(ta!.headers).toMatchObject({ 'x-api-key': 'k-1', 'x-svc-epoch': '3' });
    await until(() => t.got.frames.filter((f) => 'running' in f).length === 2, 5000, "both workers' status");
    expect(t.got.frames).toContainEqual({ type: 'status', worker: 'wa', running: true });

    a.send({ n: 1 }, { n: 2 }, { n: 3 });
    await until(() => t.lines().length === 3, 5000, "wa's records");
    b.send({ n: 4 }, { n: 5 }, { n: 6 });
    await until(() => t.got.ended, 5000, 'the limit');
    expect(t.got.ended).toBe('limit of 5 records reached');
    expect(t.lines()).toEqual([
      { n: 1, worker: 'wa' },
      { n: 2, worker: 'wa' },
      { n: 3, worker: 'wa' },
      { n: 4, worker: 'wb' },
      { n: 5, worker: 'wb' },
    ]);
    await until(() => a.open().length === 0 && b.open().length === 0, 5000, 'every worker tap to be closed');
  });

  it('keeps to the rate over all workers together', async () => {
    const [a, b] = [await fakeWorker('wa'), await fakeWorker('wb')];
    const t = relayed(() => [a, b], { rate: 2 });
    await until(() => a.open().length === 1 && b.open().length === 1, 5000, 'both worker taps');
    // Each worker sends at the full rate it was asked for; the manager's bucket holds one second's worth.
    expect(a.taps[0]!.url.searchParams.get('rate')).toBe('2');
    a.send({ n: 1 }, { n: 2 });
    b.send({ n: 3 }, { n: 4 });
    await until(() => t.lines().length >= 2, 5000, 'the first samples');
    expect(t.lines().length).toBeLessThanOrEqual(3);
    t.detach();
  });

  it('follows holders that come and go, opens a closed worker tap again, and closes all when the client leaves', async () => {
    const [a, b] = [await fakeWorker('wa'), await fakeWorker('wb')];
    let holders: TapHolder[] = [a];
    const t = relayed(() => holders, { limit: 10 });
    await until(() => a.open().length === 1, 5000, "wa's tap");
    expect(b.taps).toHaveLength(0);
    // wb gets a slot: tapped too.
    holders = [a, b];
    await until(() => b.open().length === 1, 5000, "wb's tap");
    // wa loses its slot: let go, and the client is told.
    holders = [b];
    await until(() => a.open().length === 0, 5000, "wa's tap to be closed");
    await until(() => t.got.frames.some((f) => 'detached' in f), 5000, 'the detached status');
    expect(t.got.frames).toContainEqual(expect.objectContaining({ type: 'status', worker: 'wa', running: false }));
    // wb's tap closes on its side (its worker restarted the run, a cut): opened again, asking for what is left of the limit.
    b.send({ n: 1 });
    await until(() => t.lines().length === 1, 5000, "wb's record");
    b.taps[0]!.socket.close(1000);
    await until(() => b.taps.length === 2 && b.open().length === 1, 5000, "wb's tap to be opened again");
    expect(b.taps[1]!.url.searchParams.get('limit')).toBe('9');
    t.detach();
    await until(() => b.open().length === 0, 5000, 'every worker tap to be closed');
  });

  it('ends when the pipeline is deleted, and tells when a worker refuses its tap', async () => {
    // A worker that refuses the upgrade with {detail}, as its agent does without the key.
    const server = createServer();
    server.on('upgrade', (_req, socket) => {
      const body = JSON.stringify({ detail: 'missing X-API-Key header' });
      socket.end(`HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const locked = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    let exists = true;
    const t = relayed(
      () => [
        { id: 'gone', url: 'http://127.0.0.1:9' },
        { id: 'locked', url: locked },
      ],
      {},
      () => exists,
    );
    await until(() => t.got.frames.filter((f) => 'error' in f).length === 2, 5000, 'both refusals');
    expect(t.got.frames).toContainEqual({ type: 'status', worker: 'gone', running: false, error: expect.stringMatching(/ECONNREFUSED/) });
    expect(t.got.frames).toContainEqual({ type: 'status', worker: 'locked', running: false, error: 'HTTP 401: missing X-API-Key header' });
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    exists = false;
    await until(() => t.got.ended, 5000, 'the tap to end');
    expect(t.got.ended).toBe("pipeline 'p' was deleted");
  });
});
