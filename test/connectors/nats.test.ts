// The nats connector: the shared conformance suite, then what it does not cover: queue groups (the
// pipeline name by default, '' broadcasts), user/password and token authentication, wildcard
// subjects with the subject in the metadata, a server restart (the source reconnects and receives
// again), backpressure (the subscription is dropped above the high-water mark and taken again),
// and the sink's permanent failures (publish permission, max_payload).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, headers } from '@nats-io/transport-node';
import { stringify } from 'yaml';
import { loadPipelineText } from '../../src/config/load.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline, type RunTelemetry } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { HIGH_WATER } from '../../src/plugins/connectors/nats/source.js';
import type { ConnectionState } from '../../src/plugins/types.js';
import { tempDir } from '../helpers/fs.js';
import { checkSequence, conformance, uniqueChannel, type Cfg, type Rec } from './conformance.js';
import { loadPipeline as load, outputRecords, until } from './helpers.js';
import { collectSubject, nats, natsServer, publishAll, SHARED_URL, subscriptionsOf, type NatsServer } from './peers/nats.js';
import { elapse, quiet } from '../helpers/wait.js';

conformance(nats);

const bodies = (from: number, n: number, pad = 8) => Array.from({ length: n }, (_, i) => Buffer.from(JSON.stringify({ seq: from + i, pad: 'x'.repeat(pad) })));

/** A stream pipeline from a nats source into one NDJSON directory. */
function streamRun(name: string, source: Cfg, extra: Cfg = {}) {
  const out = tempDir('svc-nats-out-');
  const states: ConnectionState[] = [];
  const telemetry: RunTelemetry = { connection: (component, _t, s) => void (component === 'source' && states.push(s)) };
  const stop = new AbortController();
  const cfg = load({
    name,
    schedule: { type: 'stream' },
    source: { type: 'nats', ...source },
    serializer_in: { type: 'json' },
    serializer_out: { type: 'ndjson' },
    sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
    ...extra,
  });
  const done = runPipeline(cfg, { signal: stop.signal, telemetry, log: silentLogger, processed: new MemoryProcessedFiles() });
  const connected = (n = 1) => until(() => states.filter((s) => s === 'connected').length >= n, 15_000, `connected x${n}`);
  const records = () => {
    try {
      return outputRecords(out);
    } catch {
      return [];
    }
  };
  return {
    out,
    states,
    stop,
    done,
    connected,
    records,
    async end() {
      stop.abort();
      return done;
    },
  };
}

/** A manual run from NDJSON records into one nats sink. */
async function sinkRun(name: string, sink: Cfg, records: Rec[]) {
  const dir = tempDir('svc-nats-in-');
  mkdirSync(join(dir, 'in'));
  writeFileSync(join(dir, 'in', 'r.ndjson'), records.map((r) => JSON.stringify(r) + '\n').join(''));
  const cfg = load({
    name,
    schedule: { type: 'manual' },
    source: { type: 'local', path: join(dir, 'in') },
    serializer_in: { type: 'ndjson' },
    serializer_out: { type: 'json' },
    sinks: [{ type: 'nats', ...sink }],
  });
  return runPipeline(cfg, { log: silentLogger, processed: new MemoryProcessedFiles() });
}

const servers: NatsServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
});
async function privateServer(args: string[] = [], opts: { monitor?: boolean } = {}) {
  const s = await natsServer(args, opts);
  servers.push(s);
  return s;
}

describe('nats: queue groups', () => {
  it('two sources of one pipeline (default group: the pipeline name) share the messages: each message exactly once', async () => {
    const ch = uniqueChannel('nats');
    const name = `nats-qg-${process.pid}`;
    const a = streamRun(name, { servers: [SHARED_URL], subject: ch });
    const b = streamRun(name, { servers: [SHARED_URL], subject: ch });
    await Promise.all([a.connected(), b.connected()]);
    await publishAll(SHARED_URL, ch, bodies(0, 400));
    await until(() => a.records().length + b.records().length >= 400, 20_000, '400 records in the two outputs');
    await quiet(300); // nothing more may come
    await Promise.all([a.end(), b.end()]);
    expect(checkSequence([...a.records(), ...b.records()], 400)).toEqual({ missing: [], duplicates: 0 });
    expect(a.records().length).toBeGreaterThan(0);
    expect(b.records().length).toBeGreaterThan(0);
  });

  it('an explicit queue_group is shared across pipelines', async () => {
    const ch = uniqueChannel('nats');
    const a = streamRun('nats-qg-a', { servers: [SHARED_URL], subject: ch, queue_group: 'shared-workers' });
    const b = streamRun('nats-qg-b', { servers: [SHARED_URL], subject: ch, queue_group: 'shared-workers' });
    await Promise.all([a.connected(), b.connected()]);
    await publishAll(SHARED_URL, ch, bodies(0, 200));
    await until(() => a.records().length + b.records().length >= 200, 20_000, '200 records');
    await quiet(300);
    await Promise.all([a.end(), b.end()]);
    expect(checkSequence([...a.records(), ...b.records()], 200)).toEqual({ missing: [], duplicates: 0 });
    expect(Math.min(a.records().length, b.records().length)).toBeGreaterThan(0);
  });

  it("queue_group '' broadcasts: both sources of one pipeline get every message", async () => {
    const ch = uniqueChannel('nats');
    const name = `nats-bc-${process.pid}`;
    const a = streamRun(name, { servers: [SHARED_URL], subject: ch, queue_group: '' });
    const b = streamRun(name, { servers: [SHARED_URL], subject: ch, queue_group: '' });
    await Promise.all([a.connected(), b.connected()]);
    await publishAll(SHARED_URL, ch, bodies(0, 200));
    await until(() => a.records().length >= 200 && b.records().length >= 200, 20_000, '200 records in each output');
    await Promise.all([a.end(), b.end()]);
    expect(checkSequence(a.records(), 200)).toEqual({ missing: [], duplicates: 0 });
    expect(checkSequence(b.records(), 200)).toEqual({ missing: [], duplicates: 0 });
  });
});

describe('nats: subjects', () => {
  it('a wildcard subject receives every matching subject, and each record can carry its subject (metadata `subject`)', async () => {
    const ch = uniqueChannel('nats');
    const run = streamRun(
      'nats-wild',
      { servers: [SHARED_URL], subject: `${ch}.*.>` },
      { transforms: [{ type: 'inject_meta', fields: { subject: 'subject' } }] },
    );
    await run.connected();
    const subjects = [`${ch}.site1.alarm`, `${ch}.site2.pm.counters`, `${ch}.site3`, `${ch}`];
    await publishAll(SHARED_URL, (i) => subjects[i % 4]!, bodies(0, 8));
    await until(() => run.records().length >= 4, 10_000, '4 matching records');
    await quiet(300);
    await run.end();
    const got = run.records();
    // `*.>` needs at least two more tokens: `<ch>.site3` and `<ch>` do not match.
    expect(got.map((r) => r.seq).sort((x, y) => Number(x) - Number(y))).toEqual([0, 1, 4, 5]);
    for (const r of got) expect(r.subject).toBe(subjects[Number(r.seq) % 4]);
  });

  it('headers and the reply subject of a message are in its metadata', async () => {
    const ch = uniqueChannel('nats');
    const run = streamRun('nats-headers', { servers: [SHARED_URL], subject: ch }, { transforms: [{ type: 'inject_meta', all: true, prefix: 'm_' }] });
    await run.connected();
    const nc = await connect({ servers: SHARED_URL });
    const h = headers();
    h.append('site', 'paris');
    h.append('site', 'lyon');
    nc.publish(ch, JSON.stringify({ seq: 0 }), { headers: h, reply: `${ch}.reply` });
    await nc.flush();
    await nc.close();
    await until(() => run.records().length >= 1, 10_000, 'the record');
    await run.end();
    expect(run.records()[0]).toMatchObject({ seq: 0, m_subject: ch, m_reply: `${ch}.reply`, m_headers: { site: 'paris, lyon' } });
  });

  it('the sink refuses a wildcard subject, and the source a subject with spaces, with their YAML path', () => {
    const base = { name: 'nats-bad', schedule: { type: 'stream' }, sinks: [{ type: 'local', path: '/tmp' }] };
    const sink = loadPipelineText(
      stringify({
        version: '1',
        pipeline: { ...base, schedule: { type: 'manual' }, source: { type: 'local', path: '/tmp' }, sinks: [{ type: 'nats', subject: 'a.*.b' }] },
      }),
      { env: {} },
    );
    expect(sink.diagnostics.map((d) => `${d.path}: ${d.message}`)).toEqual([expect.stringMatching(/^pipeline\.sinks\[0\]\.subject: .*wildcard/)]);
    const src = loadPipelineText(stringify({ version: '1', pipeline: { ...base, source: { type: 'nats', subject: 'a b' } } }), { env: {} });
    expect(src.diagnostics.map((d) => d.path)).toEqual(['pipeline.source.subject']);
  });
});

describe('nats: authentication', () => {
  it('user/password: the right pair connects and delivers; a wrong or missing password fails the check without showing it', async () => {
    const srv = await privateServer(['--user', 'svc', '--pass', 'pass-good-1']);
    const ch = uniqueChannel('nats');
    const good = { type: 'nats', servers: [srv.url], subject: ch, username: 'svc', password: 'pass-good-1' };
    expect(await testConnector('source', good as never)).toMatchObject({ ok: true });
    expect(await testConnector('sink', good as never)).toMatchObject({ ok: true });
    for (const bad of [
      { ...good, password: 'pass-bad-2' },
      { ...good, username: undefined, password: undefined },
    ]) {
      for (const role of ['source', 'sink'] as const) {
        const r = await testConnector(role, bad as never, { timeoutMs: 8000 });
        expect(r.ok).toBe(false);
        expect(r.error).toMatch(/^nats: .*Authorization Violation/);
        expect(r.error).not.toContain('pass-bad-2');
      }
    }
    const run = streamRun('nats-auth-user', { servers: [srv.url], subject: ch, username: 'svc', password: 'pass-good-1' });
    await run.connected();
    await publishAll(srv.url, ch, bodies(0, 5), { user: 'svc', pass: 'pass-good-1' });
    await until(() => run.records().length >= 5, 10_000, '5 records');
    expect((await run.end()).status).toBe('success');
  });

  it('token: the right token connects and delivers; a wrong one fails; the source keeps retrying with backoff while refused', async () => {
    const srv = await privateServer(['--auth', 'token-good-1']);
    const ch = uniqueChannel('nats');
    const good = { type: 'nats', servers: [srv.url], subject: ch, token: 'token-good-1' };
    expect(await testConnector('source', good as never)).toMatchObject({ ok: true });
    const bad = await testConnector('sink', { ...good, token: 'token-bad-2' } as never, { timeoutMs: 8000 });
    expect(bad.ok).toBe(false);
    expect(bad.error).toMatch(/Authorization Violation/);
    expect(bad.error).not.toContain('token-bad-2');

    const refused = streamRun('nats-auth-token-bad', {
      servers: [srv.url],
      subject: ch,
      token: 'token-bad-2',
      reconnect_delay_seconds: 0.1,
      max_reconnect_attempts: 2,
    });
    const rec = await refused.done;
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(/gave up after 2 reconnect attempts: .*Authorization Violation/);
    expect(rec.error).not.toContain('token-bad-2');
    expect(refused.states.at(-1)).toBe('failed');
    expect(refused.states).not.toContain('connected');
    expect(refused.states.filter((s) => s === 'connecting')).toHaveLength(3); // the first attempt and two reconnects

    const run = streamRun('nats-auth-token', { servers: [srv.url], subject: ch, token: 'token-good-1' });
    await run.connected();
    await publishAll(srv.url, ch, bodies(0, 5), { token: 'token-good-1' });
    await until(() => run.records().length >= 5, 10_000, '5 records');
    await run.end();
  });

  it('lint: a token with a username, or a password without one, is refused', () => {
    const r = loadPipelineText(
      stringify({
        version: '1',
        pipeline: {
          name: 'nats-lint',
          schedule: { type: 'stream' },
          source: { type: 'nats', subject: 'a', username: 'u', token: 't1234' },
          sinks: [{ type: 'nats', subject: 'b', password: 'p1234' }],
        },
      }),
      { env: {} },
    );
    expect(r.diagnostics.map((d) => d.path).sort()).toEqual(['pipeline.sinks[0].password', 'pipeline.source.token']);
  });
});

describe('nats: reconnect', () => {
  it('a server restart: the source reports disconnected, connects again and receives what is published after', async () => {
    const srv = await privateServer();
    const ch = uniqueChannel('nats');
    const run = streamRun('nats-restart', { servers: [srv.url], subject: ch, reconnect_delay_seconds: 0.2 });
    await run.connected();
    await publishAll(srv.url, ch, bodies(0, 50));
    await until(() => run.records().length >= 50, 10_000, 'the first 50 records');
    const pid = srv.pid();
    await srv.restart();
    expect(srv.pid()).not.toBe(pid);
    await run.connected(2);
    await elapse(100); // the resubscription reaches the restarted server (core NATS keeps nothing for a subject nobody has subscribed to yet)
    await publishAll(srv.url, ch, bodies(50, 50));
    await until(() => run.records().length >= 100, 10_000, 'the records published after the restart');
    const rec = await run.end();
    expect(rec.status).toBe('success');
    expect(checkSequence(run.records(), 100)).toEqual({ missing: [], duplicates: 0 });
    expect(run.states.slice(0, 4)).toEqual(['connecting', 'connected', 'disconnected', 'connecting']);
    expect(run.states.at(-1)).toBe('connected');
  }, 60_000);

  it('the sink writes again after a server restart (the runtime retries on a new connection)', async () => {
    const srv = await privateServer();
    const ch = uniqueChannel('nats');
    const collector = await collectSubject(srv.url, ch);
    expect((await sinkRun('nats-sink-r1', { servers: [srv.url], subject: ch }, [{ seq: 0 }])).status).toBe('success');
    await collector.close();
    await srv.restart();
    const again = await collectSubject(srv.url, ch);
    try {
      const rec = await sinkRun('nats-sink-r2', { servers: [srv.url], subject: ch, retry_count: 3, retry_delay_seconds: 0.1 }, [{ seq: 1 }, { seq: 2 }]);
      expect(rec.status).toBe('success');
      expect(rec.records_out).toBe(2);
      await until(() => again.records().length >= 2, 5000, 'two records');
    } finally {
      await again.close();
    }
  });
});

describe('nats: backpressure', () => {
  it(`drops the subscription ${HIGH_WATER} messages behind and takes it again once caught up (memory bounded; what was published meanwhile is not received)`, async () => {
    const srv = await privateServer([], { monitor: true });
    const ch = uniqueChannel('nats');
    // 100-record chunks at 20 writes/s: 2,000 records/s out, far below what is published.
    const run = streamRun('nats-slow', { servers: [srv.url], subject: ch }, { record_chunk_size: 100, rate_limit_rps: 20 });
    await run.connected();
    const subs = () => subscriptionsOf(srv, 'svc nats-slow source');
    expect(await subs()).toBe(1);
    const total = 3 * HIGH_WATER;
    await publishAll(srv.url, ch, bodies(0, total));
    await until(async () => (await subs()) === 0, 10_000, 'the subscription dropped');
    await until(async () => (await subs()) === 1, 30_000, 'the subscription taken again');
    // Once subscribed again it receives new messages.
    await publishAll(srv.url, ch, bodies(total, 10));
    await until(() => run.records().some((r) => r.seq === total + 9), 30_000, 'the records published after the resume');
    const rec = await run.end();
    expect(rec.status).toBe('success');
    const got = run.records();
    const { missing, duplicates } = checkSequence(got, total);
    expect(duplicates).toBe(0);
    expect(missing.length).toBeGreaterThan(0); // at-most-once: what came while unsubscribed is gone
    expect(got.filter((r) => (r.seq as number) < total).length).toBeGreaterThanOrEqual(HIGH_WATER);
  }, 90_000);
});

describe('nats: sink failures that retrying cannot fix', () => {
  it('a publish the server refuses (permissions) fails the batch at once; a record above max_payload too', async () => {
    const dir = tempDir('svc-nats-conf-');
    const conf = join(dir, 'server.conf');
    writeFileSync(
      conf,
      `max_payload: 512\nauthorization {\n  users = [\n    { user: limited, password: limited-pass, permissions: { publish: "allowed.>", subscribe: "allowed.>" } }\n  ]\n}\n`,
    );
    const srv = await privateServer(['-c', conf]);
    const auth = { servers: [srv.url], username: 'limited', password: 'limited-pass' };

    const denied = await sinkRun('nats-sink-denied', { ...auth, subject: 'denied.x', retry_count: 5, retry_delay_seconds: 0.5 }, [{ seq: 0 }]);
    expect(denied.records_out).toBe(0);
    expect(denied.errors.join('\n')).toMatch(/Permissions Violation for Publish to "denied\.x"/);
    expect(denied.errors.join('\n')).not.toContain('limited-pass');

    const t0 = Date.now();
    const big = await sinkRun('nats-sink-big', { ...auth, subject: 'allowed.x', retry_count: 5, retry_delay_seconds: 0.5 }, [
      { seq: 0, pad: 'x'.repeat(1000) },
    ]);
    expect(Date.now() - t0).toBeLessThan(2000); // not retried
    expect(big.records_out).toBe(0);
    expect(big.errors.join('\n')).toMatch(/max_payload of 512 bytes/);

    const ok = await sinkRun('nats-sink-allowed', { ...auth, subject: 'allowed.x' }, [{ seq: 0 }]);
    expect(ok.records_out).toBe(1);

    // The source: a subject it may not subscribe to fails the check.
    const r = await testConnector('source', { type: 'nats', ...auth, subject: 'denied.>' } as never, { timeoutMs: 8000 });
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/Permissions Violation for Subscription to "denied\.>"/);
  });
});
