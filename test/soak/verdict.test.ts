// The soak's pass rules on made-up sample series: what a leak looks like fails, noise passes.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { openFds, type Sample } from '../../soak/sample.js';
import { FD_ALLOWANCE, kindsChanged, verdict } from '../../soak/verdict.js';

/** One sample every 10 s over `minutes`, with the daemon's own descriptor count `fds(t)` and `clients(t)` more held by the clients' connections. */
function series(minutes: number, fds: (t: number) => number, heap: (t: number) => number = () => 60, clients: (t: number) => number = () => 5): Sample[] {
  const out: Sample[] = [];
  for (let t = 10; t <= minutes * 60; t += 10) {
    out.push({
      t,
      phase: 'load',
      proc_rss_mb: 220,
      heap_used_mb: heap(t),
      fds: fds(t) + clients(t),
      fds_own: fds(t),
      eventloop_p99_ms: 12,
      control_p99_ms: 11,
    } as Sample);
  }
  return out;
}
const fdCheck = (samples: Sample[], minutes: number) => verdict(samples, minutes, {}).find((c) => c.name === 'open descriptors flat')!;

describe('soak verdict: open descriptors', () => {
  it("passes short-lived descriptors caught by some samples (a local run: the SNMP poll's UDP sockets, 2 open, 87 or 52 mid-poll)", () => {
    const c = fdCheck(
      series(3, (t) => (t % 30 === 20 ? 120 : 35)),
      3,
    );
    expect(c.pass).toBe(true);
    expect(c.detail).toMatch(/^35\.0 fds around 60 s -> 35\.0 fds/);
  });

  it("passes the clients' connections coming and going, dips included (a local run: 19 of them at 60 s, 7 from 80 s)", () => {
    const c = fdCheck(
      series(
        3,
        () => 34,
        undefined,
        (t) => (t < 80 ? 19 : t < 160 ? 7 : t === 170 ? 4 : 9),
      ),
      3,
    );
    expect(c.pass).toBe(true);
    expect(c.detail).toContain("with the clients' connections 41.0 -> 38.0 fds");
  });

  it('passes a floor that settled a little higher (within the allowance)', () => {
    const c = fdCheck(
      series(3, (t) => (t > 120 ? 38 + FD_ALLOWANCE : 38)),
      3,
    );
    expect(c.pass).toBe(true);
  });

  it('fails a floor that rose past the allowance and stayed: every sample of the last minute higher', () => {
    const c = fdCheck(
      series(3, (t) => (t > 120 ? 38 + FD_ALLOWANCE + 1 : 38)),
      3,
    );
    expect(c.pass).toBe(false);
  });

  it('fails a count that keeps growing: a leak', () => {
    const c = fdCheck(
      series(3, (t) => 38 + Math.floor(t / 20)),
      3,
    );
    expect(c.pass).toBe(false);
    expect(c.detail).toContain(`limit 5 % or ${FD_ALLOWANCE} fds`);
  });

  it('fails growth past 5 % of a large count, even when each step is small', () => {
    const c = fdCheck(
      series(60, (t) => 400 + Math.floor(t / 60)),
      60,
    );
    expect(c.pass).toBe(false);
  });
});

describe('soak verdict: descriptors by kind', () => {
  it('names the kinds that changed between the reference point and the end', () => {
    const samples = series(3, () => 40);
    samples.forEach((s) => (s.fd_kinds = { pipe: 9, 'tcp to :5432': s.t < 150 ? 1 : 3, 'anon_inode:[eventfd]': 3 }));
    expect(kindsChanged(samples, 60)).toBe('tcp to :5432 +2');
    samples.at(-1)!.fd_kinds = { pipe: 8, 'tcp to :5432': 1, 'anon_inode:[eventfd]': 3, 'file /data/spool': 1 };
    expect(kindsChanged(samples, 60)).toBe('pipe -1, file /data/spool +1');
  });
});

describe('soak sample: open descriptors of a live process', () => {
  it("counts an established connection accepted on our listener as a client's, and one its client closed (close-wait) as ours", async () => {
    // This test process is the daemon here: a server with allowHalfOpen keeps its end open after the client's FIN.
    const held: Socket[] = [];
    const server = createServer({ allowHalfOpen: true }, (s) => held.push(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const client = connect(port, '127.0.0.1');
    try {
      await new Promise((r) => client.once('connect', r));
      await vi.waitFor(() => expect(held).toHaveLength(1));
      const open = openFds(process.pid);
      expect(open.kinds[`tcp accepted on :${port}`]).toBe(1);
      expect(open.kinds[`tcp to :${port}`]).toBe(1);
      expect(open.kinds['tcp listen']).toBeGreaterThanOrEqual(1);
      expect(open.clients).toBeGreaterThanOrEqual(1);
      const before = open.clients;
      client.end();
      await vi.waitFor(() => expect(openFds(process.pid).kinds[`tcp accepted on :${port}, close-wait`]).toBe(1));
      expect(openFds(process.pid).clients).toBe(before - 1);
    } finally {
      client.destroy();
      for (const s of held) s.destroy();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('soak verdict: short-run memory', () => {
  it('fails a heap that doubles (records kept)', () => {
    const c = verdict(
      series(
        3,
        () => 40,
        (t) => 60 + t / 2,
      ),
      3,
      {},
    )[0]!;
    expect(c.name).toMatch(/heap used after GC/);
    expect(c.pass).toBe(false);
  });
});

describe('soak verdict: long-run memory', () => {
  const withRss = (rss: (t: number) => number) => series(60, () => 40).map((s) => ({ ...s, proc_rss_mb: rss(s.t) }));
  const rssCheck = (samples: Sample[]) => verdict(samples, 60, {})[0]!;

  it("passes RSS 15 % higher at every third sample (the GC's sawtooth): each minute's median is compared, the heap after GC shown beside", () => {
    const c = rssCheck(withRss((t) => (t % 30 === 0 ? 250 : 215)));
    expect(c.name).toBe('RSS flat');
    expect(c.pass).toBe(true);
    expect(c.detail).toContain('least heap used 60.0 -> 60.0 MB');
  });

  it('fails RSS that settled 10 % higher for the last minutes', () => {
    const c = rssCheck(withRss((t) => (t > 3000 ? 242 : 220)));
    expect(c.pass).toBe(false);
    expect(c.detail).toMatch(/^220\.0 MB around 600 s -> 242\.0 MB/);
  });
});
