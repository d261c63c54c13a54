// The connector runtime on its own: secrets masking, the reconnect policy, the stream source
// (units, acknowledgement after delivery, redelivery of what was not delivered, backpressure,
// reconnects, giving up) and the sink connection. The connectors' own suites run it against real
// peers; here a scripted connector drives every branch deterministically.
import { describe, expect, it } from 'vitest';
import { Type } from '@sinclair/typebox';
import { WriteError } from '../../../src/core/errors.js';
import { silentLogger } from '../../../src/observability/log.js';
import { Connection } from '../../../src/plugins/connector-runtime/connection.js';
import { GaveUpError, reconnectDelayMs } from '../../../src/plugins/connector-runtime/reconnect.js';
import { redactor, secret, secretsOf } from '../../../src/core/secrets.js';
import { streamSource, type Message, type Session, type SessionHandlers } from '../../../src/plugins/connector-runtime/stream-source.js';
import type { ConnectionState, PluginContext, SourceUnit } from '../../../src/plugins/types.js';
import { MemoryProcessedFiles } from '../../../src/plugins/connector-runtime/processed-files.js';
import { pace, until } from '../../helpers/wait.js';

describe('secrets', () => {
  const schema = Type.Object({ user: Type.String(), pw: secret('x'), headers: Type.Record(Type.String(), Type.String()), url: Type.String() });

  it('finds writeOnly fields, secret-looking names (header maps too) and URL credentials', () => {
    const s = secretsOf(schema, {
      user: 'ops',
      pw: 'hunter22',
      headers: { Authorization: 'Bearer abc.def', Accept: 'json' },
      url: 'amqp://u:p4ss@h/v',
      nested: { api_key: 'k-123' },
    });
    expect([...s].sort()).toEqual(['Bearer abc.def', 'hunter22', 'k-123', 'p4ss']);
  });

  it('masks each secret and every URL credential, longest first', () => {
    const r = redactor(['hunter22', 'hunter2222']);
    expect(r('login hunter2222 failed, then hunter22; see https://a:b-c@host/x and amqp://guest:guest@h')).toBe(
      'login *** failed, then ***; see https://a:***@host/x and amqp://guest:***@h',
    );
    expect(redactor(['ab'])('ab stays: too short to search for')).toBe('ab stays: too short to search for');
  });
});

describe('reconnect delay', () => {
  it('doubles from the base and stops at a minute (or the base when it is longer)', () => {
    expect([1, 2, 3, 4].map((a) => reconnectDelayMs(a, 5))).toEqual([5000, 10_000, 20_000, 40_000]);
    expect(reconnectDelayMs(10, 5)).toBe(60_000);
    expect(reconnectDelayMs(3, 120)).toBe(120_000);
  });
});

/** A connector whose sessions the test drives: push messages, break connections, fail connects. */
function scripted(opts: { failConnects?: number; acknowledges?: boolean; maxBatch?: number; highWater?: number; maxAttempts?: number } = {}) {
  const log: string[] = [];
  const sessions: { h: SessionHandlers<Message>; acks: number[][]; paused: boolean }[] = [];
  let failures = opts.failConnects ?? 0;
  const states: ConnectionState[] = [];
  const ctx = {
    pipeline: 'p',
    log: silentLogger,
    signal: new AbortController().signal,
    processed: new MemoryProcessedFiles(),
    skipProcessed: false,
    telemetry: { connection: (s: ConnectionState) => states.push(s) },
  } as PluginContext;
  const source = streamSource<Message>(ctx, {
    type: 'fake',
    reconnect: { reconnect_delay_seconds: 0.001, max_reconnect_attempts: opts.maxAttempts ?? 0 },
    acknowledges: opts.acknowledges ?? true,
    maxBatch: opts.maxBatch,
    highWater: opts.highWater,
    async connect(h) {
      if (failures > 0) {
        failures--;
        throw new Error('ECONNREFUSED');
      }
      const s = { h, acks: [] as number[][], paused: false };
      sessions.push(s);
      const session: Session<Message> = {
        pause: () => ((s.paused = true), log.push('pause')),
        resume: () => ((s.paused = false), log.push('resume')),
        ack: async (batch) => void s.acks.push(batch.map((m) => Number(m.body.toString()))),
        close: async () => void log.push(`close ${sessions.indexOf(s)}`),
      };
      return session;
    },
  });
  const push = (from: number, n: number, s = sessions.at(-1)!) => {
    for (let i = from; i < from + n; i++) s.h.push({ body: Buffer.from(String(i)), meta: { topic: 't' } });
  };
  return { source, sessions, push, log, states };
}

const seqs = async (u: SourceUnit) => {
  const out: number[] = [];
  for await (const b of u.read()) out.push(Number(b.toString()));
  return out;
};
/** Until the source has opened its `n`th session (connects and reconnects take their time on a loaded machine). */
const connected = (f: ReturnType<typeof scripted>, n = 1) => until(() => f.sessions.length >= n && f.states.at(-1) === 'connected');

/** Starts reading units (the first one asked for) and waits for the first session. */
async function reading(f: ReturnType<typeof scripted>) {
  const stop = new AbortController();
  const it = f.source.units(stop.signal)[Symbol.asyncIterator]();
  const first = it.next();
  await connected(f);
  return { stop, it, first };
}

describe('streamSource', () => {
  it('hands waiting messages on as units and acknowledges each only after delivery, in order', async () => {
    const f = scripted({ maxBatch: 3 });
    const { stop, it, first } = await reading(f);
    f.push(0, 5);
    const u1 = (await first).value as SourceUnit;
    const u2 = (await it.next()).value as SourceUnit;
    expect(await seqs(u1)).toEqual([0, 1, 2]);
    expect(await seqs(u2)).toEqual([3, 4]);
    // The same messages in one array, for the runner to take without an await per message.
    expect(u1.bodies?.map((b) => Number(b.toString()))).toEqual([0, 1, 2]);
    expect(u1.messages).toBe(true);
    expect(u1.meta).toMatchObject({ topic: 't', messages: 3 });
    expect(f.sessions[0]!.acks).toEqual([]);
    await u1.done!(true);
    await u2.done!(true);
    expect(f.sessions[0]!.acks).toEqual([
      [0, 1, 2],
      [3, 4],
    ]);
    expect(f.states).toEqual(['connecting', 'connected']);
    stop.abort();
    expect((await it.next()).done).toBe(true);
    await f.source.close!();
    expect(f.log).toContain('close 0');
  });

  it('under a steady flow a unit waits a moment to fill; the first message after a quiet spell goes at once', async () => {
    const f = scripted({ maxBatch: 1000 });
    const { stop, it, first } = await reading(f);
    // A quiet spell: the first message is handed on alone, although more follow.
    f.push(0, 1);
    expect(await seqs((await first).value as SourceUnit)).toEqual([0]);
    // Then a steady flow, one message per turn of the event loop, taken as fast as it comes: a
    // unit each time would be 200 units of one message.
    let sent = 1;
    const flow = (async () => {
      while (sent < 201) {
        f.push(sent++, 1);
        await new Promise((r) => setImmediate(r));
      }
    })();
    const sizes: number[] = [];
    let got = 1;
    while (got < 201) {
      const u = (await it.next()).value as SourceUnit;
      const n = (await seqs(u)).length;
      sizes.push(n);
      got += n;
    }
    await flow;
    expect(got).toBe(201);
    expect(sizes.length).toBeLessThan(40);
    stop.abort();
    await it.next();
    await f.source.close!();
  });

  it('an undelivered unit ends the session unacknowledged, and nothing after it is acknowledged; then it reconnects', async () => {
    const f = scripted({ maxBatch: 2 });
    const { stop, it, first } = await reading(f);
    f.push(0, 4);
    const u1 = (await first).value as SourceUnit;
    const u2 = (await it.next()).value as SourceUnit;
    await u1.done!(false);
    await u2.done!(true); // later: must not be acknowledged (the peer redelivers both)
    const next = it.next();
    await connected(f, 2);
    expect(f.sessions).toHaveLength(2);
    expect(f.sessions[0]!.acks).toEqual([]);
    expect(f.log).toContain('close 0');
    expect(f.states).toEqual(['connecting', 'connected', 'disconnected', 'connecting', 'connected']);
    f.push(0, 2); // the redelivery
    const again = (await next).value as SourceUnit;
    expect(await seqs(again)).toEqual([0, 1]);
    await again.done!(true);
    expect(f.sessions[1]!.acks).toEqual([[0, 1]]);
    stop.abort();
    await it.next();
  });

  it('a batch is cut into one unit per metadata (a wildcard never mislabels a record), acknowledged whole once all are delivered', async () => {
    const f = scripted();
    const { stop, it, first } = await reading(f);
    const s = f.sessions[0]!;
    for (const [i, topic] of ['a', 'a', 'b', 'a'].entries()) s.h.push({ body: Buffer.from(String(i)), meta: { topic } });
    const units = [(await first).value as SourceUnit, (await it.next()).value as SourceUnit];
    expect(await Promise.all(units.map(seqs))).toEqual([[0, 1, 3], [2]]);
    expect(units.map((u) => u.meta)).toEqual([
      { topic: 'a', messages: 3 },
      { topic: 'b', messages: 1 },
    ]);
    await units[0]!.done!(true);
    expect(s.acks).toEqual([]);
    await units[1]!.done!(true);
    expect(s.acks).toEqual([[0, 1, 2, 3]]);
    stop.abort();
    await it.next();
  });

  it('pauses the session above highWater and resumes below half of it', async () => {
    const f = scripted({ maxBatch: 2, highWater: 4 });
    const { stop, it, first } = await reading(f);
    f.push(0, 6);
    expect(f.sessions[0]!.paused).toBe(true);
    await first; // takes 2: 4 left, still at the mark
    expect(f.sessions[0]!.paused).toBe(true);
    await it.next(); // 2 left: below half of 4? not yet (2 is not < 2)
    expect(f.sessions[0]!.paused).toBe(true);
    await it.next(); // 0 left
    expect(f.sessions[0]!.paused).toBe(false);
    expect(f.log.filter((l) => l === 'pause' || l === 'resume')).toEqual(['pause', 'resume']);
    stop.abort();
    await it.next();
  });

  it('a lost connection reconnects; acknowledgements of the old session are dropped', async () => {
    const f = scripted();
    const { stop, it, first } = await reading(f);
    f.push(0, 2);
    const u1 = (await first).value as SourceUnit;
    f.sessions[0]!.h.lost(new Error('socket hang up'));
    const next = it.next();
    await connected(f, 2);
    await u1.done!(true);
    expect(f.sessions[0]!.acks).toEqual([]);
    expect(f.sessions).toHaveLength(2);
    f.push(5, 1);
    expect(await seqs((await next).value as SourceUnit)).toEqual([5]);
    stop.abort();
    await it.next();
  });

  it('connect failures are retried, and give up after max_reconnect_attempts with the reason', async () => {
    const ok = scripted({ failConnects: 2 });
    const { stop, first } = await reading(ok);
    expect(ok.sessions).toHaveLength(1);
    ok.push(0, 1);
    await first;
    stop.abort();

    const bad = scripted({ failConnects: 10, maxAttempts: 3 });
    const units = bad.source.units(new AbortController().signal);
    const err = await units[Symbol.asyncIterator]()
      .next()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GaveUpError);
    expect((err as Error).message).toBe('fake: gave up after 3 reconnect attempts: ECONNREFUSED');
    expect(bad.states.at(-1)).toBe('failed');
  });

  it('messages the connector could not decode go apart as undecodable (reason and bytes); the others stay records, all counted in size', async () => {
    const f = scripted({ acknowledges: false });
    const { stop, it, first } = await reading(f);
    const h = f.sessions[0]!.h;
    const meta = { topic: 't' };
    h.push({ body: Buffer.from('aa'), record: { n: 1 }, meta });
    h.push({ body: Buffer.from('bad!'), error: 'truncated: 4 bytes', meta });
    h.push({ body: Buffer.alloc(0), record: { n: 2 }, meta });
    const u = (await first).value as SourceUnit;
    expect(u.records).toEqual([{ n: 1 }, { n: 2 }]);
    expect(u.undecodable).toEqual([{ raw: Buffer.from('bad!'), why: 'truncated: 4 bytes' }]);
    expect(u.size).toBe(6);
    expect(u.meta.messages).toBe(3);
    const read: string[] = [];
    for await (const b of u.read()) read.push(b.toString());
    expect(read).toEqual(['{"n":1}', '{"n":2}']);
    // Parsed records are not handed over as bodies (read() gives them as JSON, the bodies are not that).
    expect(u.bodies).toBeUndefined();
    stop.abort();
    await it.next();
  });

  it('at-most-once connectors acknowledge nothing and do not reconnect for an undelivered unit', async () => {
    const f = scripted({ acknowledges: false });
    const { stop, it, first } = await reading(f);
    f.push(0, 2);
    const u = (await first).value as SourceUnit;
    await u.done!(false);
    const next = it.next();
    f.push(2, 1);
    expect(await seqs((await next).value as SourceUnit)).toEqual([2]);
    expect(f.sessions).toHaveLength(1);
    expect(f.sessions[0]!.acks).toEqual([]);
    stop.abort();
    await it.next();
  });

  it('a stop hands on what is queued, pauses the peer, and keeps the session for the last acknowledgements', async () => {
    const f = scripted({ maxBatch: 10 });
    const { stop, it, first } = await reading(f);
    f.push(0, 3);
    await first;
    f.push(3, 2);
    stop.abort();
    const last = (await it.next()).value as SourceUnit;
    expect(await seqs(last)).toEqual([3, 4]);
    expect((await it.next()).done).toBe(true);
    expect(f.log).toContain('pause');
    await last.done!(true);
    expect(f.sessions[0]!.acks).toEqual([[3, 4]]);
    expect(f.log).not.toContain('close 0');
    await f.source.close!();
    expect(f.log).toContain('close 0');
  });
});

describe('Connection (sinks)', () => {
  it('connects at first use, drops a broken connection and reconnects on the next use', async () => {
    let opened = 0;
    let closed = 0;
    const states: ConnectionState[] = [];
    const c = new Connection<{ id: number }>(
      { log: silentLogger, telemetry: { connection: (s) => states.push(s) }, redact: (t) => t.replace('s3cret', '***') },
      'fake',
      async () => ({ id: ++opened }),
      async () => void closed++,
    );
    expect(opened).toBe(0);
    expect(await c.use(async (x) => x.id)).toBe(1);
    expect(await c.use(async (x) => x.id)).toBe(1);
    const err = await c.use(async () => Promise.reject(new Error('broken pipe with s3cret'))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WriteError);
    expect((err as WriteError).retryable).toBe(true);
    expect((err as Error).message).toBe('fake: broken pipe with ***');
    expect(closed).toBe(1);
    expect(await c.use(async (x) => x.id)).toBe(2);
    expect(states).toEqual(['connecting', 'connected', 'disconnected', 'connecting', 'connected']);
    // A data error (broken() false) keeps the connection.
    await c
      .use(
        async () => Promise.reject(new Error('bad record')),
        () => false,
      )
      .catch(() => {});
    expect(await c.use(async (x) => x.id)).toBe(2);
    await c.end();
    expect(closed).toBe(2);
  });

  it('a failed connect is a retryable WriteError with the secrets masked; concurrent uses share one connect', async () => {
    let attempts = 0;
    const c = new Connection<number>(
      { log: silentLogger, redact: (t) => t.replace('pw', '**') },
      'fake',
      async () => {
        attempts++;
        await pace(10); // a connect that takes a moment: the uses overlap
        if (attempts === 1) throw new Error('refused for pw');
        return attempts;
      },
      async () => {},
    );
    const e = await c.get().catch((x: unknown) => x);
    expect((e as Error).message).toBe('fake: cannot connect: refused for **');
    const both = await Promise.all([c.get(), c.get()]);
    expect(both).toEqual([2, 2]);
    expect(attempts).toBe(2);
  });
});
