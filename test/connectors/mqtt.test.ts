// The mqtt connector: the shared conformance suite (a private Mosquitto with a user, persistence and
// restarts), then what it does not cover: QoS 0/1/2 both ways, acknowledgement after delivery
// (redelivery of what was not acknowledged, the receive window), wildcards with the topic in the
// metadata, persistent sessions resumed under the same client id, retain, MQTT 3.1.1, wrong
// credentials, TLS with a CA (and a wrong CA), the broker refusing a publish, and config lint.
// Most cases use the shared Mosquitto at 127.0.0.1:1883 (anonymous); auth, TLS, ACL and restarts
// use private brokers started here and stopped by PID.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadPipelineText } from '../../src/config/load.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline, type RunTelemetry } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { Subscriber, type Incoming, type QoS } from '../../src/plugins/connectors/mqtt/subscriber.js';
import type { ConnectionState } from '../../src/plugins/types.js';
import { tempDir } from '../helpers/fs.js';
import { checkSequence, conformance, uniqueChannel, type Cfg, type Rec } from './conformance.js';
import { loadPipeline as load, outputRecords, until } from './helpers.js';
import { elapse, quiet } from '../helpers/wait.js';
import { mosquitto, PASSWORD, publish, startBroker, subscribe, USER, type Broker, type ClientAuth } from './peers/mosquitto.js';

conformance(mosquitto);

const exec = promisify(execFile);
const SHARED: ClientAuth = { port: 1883 };
const shared = { host: '127.0.0.1', port: 1883 };

const bodies = (from: number, n: number, extra: Rec = {}) => Array.from({ length: n }, (_, i) => Buffer.from(JSON.stringify({ seq: from + i, ...extra })));

/** A stream pipeline from an mqtt source into NDJSON files in `out` (topic, qos, retain copied into each record). */
function streamRun(name: string, source: Cfg, opts: { out?: string; extra?: Cfg } = {}) {
  const out = opts.out ?? tempDir('svc-mqtt-out-');
  const states: ConnectionState[] = [];
  const telemetry: RunTelemetry = { connection: (component, _t, s) => void (component === 'source' && states.push(s)) };
  const stop = new AbortController();
  const cfg = load({
    name,
    schedule: { type: 'stream' },
    source: { type: 'mqtt', ...shared, ...source },
    serializer_in: { type: 'json' },
    transforms: [{ type: 'inject_meta', fields: { _topic: 'topic', _qos: 'qos', _retain: 'retain' } }],
    serializer_out: { type: 'ndjson' },
    sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
    ...opts.extra,
  });
  const done = runPipeline(cfg, { signal: stop.signal, telemetry, log: silentLogger, processed: new MemoryProcessedFiles() });
  const connected = (n = 1) => until(() => states.filter((s) => s === 'connected').length >= n, 15_000, `connected x${n}`);
  return {
    out,
    states,
    done,
    connected,
    records: () => outputRecords(out),
    async end(opts: { keepSession?: boolean } = {}) {
      stop.abort();
      const rec = await done;
      // A persistent session on the shared broker would stay there for ever: a clean connect under its id ends it.
      if (!opts.keepSession && Number(source.qos ?? 0) > 0 && (source.port ?? 1883) === 1883)
        await (await rawSession(String(source.client_id ?? `svc-${name}`), String(source.topic), 0, { clean: true })).s.close();
      return rec;
    },
  };
}

/** A manual run writing `records` into one mqtt sink. */
async function sinkRun(name: string, sink: Cfg, records: Rec[], extra: Cfg = {}) {
  const dir = tempDir('svc-mqtt-in-');
  mkdirSync(join(dir, 'in'));
  writeFileSync(join(dir, 'in', 'r.ndjson'), records.map((r) => JSON.stringify(r) + '\n').join(''));
  const cfg = load({
    name,
    schedule: { type: 'manual' },
    source: { type: 'local', path: join(dir, 'in') },
    serializer_in: { type: 'ndjson' },
    serializer_out: { type: 'json' },
    sinks: [{ type: 'mqtt', ...shared, ...sink }],
    ...extra,
  });
  return runPipeline(cfg, { log: silentLogger, processed: new MemoryProcessedFiles() });
}

/** A raw subscriber session (the source's own) on the shared broker, collecting what comes. */
async function rawSession(clientId: string, topic: string, qos: QoS, opts: { clean?: boolean; receiveMaximum?: number; port?: number } = {}) {
  const got: Incoming[] = [];
  const s = await Subscriber.open(
    {
      ...shared,
      port: opts.port ?? 1883,
      tls: false,
      protocol_version: 5,
      clientId,
      clean: opts.clean ?? false,
      topic,
      qos,
      receiveMaximum: opts.receiveMaximum ?? 100,
    },
    { message: (m) => void got.push(m), lost() {} },
  );
  return { s, got };
}

const brokers: Broker[] = [];
afterEach(async () => {
  for (const b of brokers.splice(0)) await b.stop();
});
async function privateBroker(...a: Parameters<typeof startBroker>) {
  const b = await startBroker(...a);
  brokers.push(b);
  return b;
}

describe('mqtt source: acknowledgement after delivery (the session, on the wire)', () => {
  for (const qos of [1, 2] as const) {
    it(`QoS ${qos}: what was not acknowledged comes again (dup) under the same client id; what was, does not`, async () => {
      const topic = uniqueChannel('mqtt');
      const id = `svc-test-ack-${qos}-${process.pid}-${Date.now().toString(36)}`;
      const seqs = (got: Incoming[]) => got.map((m) => JSON.parse(m.payload.toString()).seq);
      const first = await rawSession(id, topic, qos);
      await publish(SHARED, topic, bodies(0, 10), { qos });
      await until(() => first.got.length === 10, 10_000, '10 messages');
      first.s.ack(first.got.slice(0, 4)); // the first four delivered; six not
      await first.s.close(); // the acknowledgements go out before the DISCONNECT

      const second = await rawSession(id, topic, qos);
      expect(second.s.sessionPresent).toBe(true);
      await until(() => second.got.length === 6, 10_000, 'the six unacknowledged messages again');
      expect(second.got.map((m) => JSON.parse(m.payload.toString()).seq)).toEqual([4, 5, 6, 7, 8, 9]);
      expect(second.got.every((m) => m.dup && m.qos === qos)).toBe(true);
      second.s.ack(second.got.slice(0, 3)); // 4, 5, 6 delivered; 7, 8, 9 not
      await second.s.close();

      // The same session again: only what the second session did not acknowledge comes back.
      const third = await rawSession(id, topic, qos);
      expect(third.s.sessionPresent).toBe(true);
      await until(() => third.got.length >= 3, 10_000, 'the three messages the second session did not acknowledge');
      await quiet(300);
      expect(seqs(third.got)).toEqual([7, 8, 9]);
      expect(third.got.every((m) => m.dup && m.qos === qos)).toBe(true);
      third.s.ack(third.got);
      await third.s.close();

      // Everything acknowledged now: the session is still there, and nothing comes again.
      const fourth = await rawSession(id, topic, qos);
      expect(fourth.s.sessionPresent).toBe(true);
      await quiet(300);
      expect(fourth.got).toEqual([]);
      await fourth.s.close();
      await (await rawSession(id, topic, 0, { clean: true })).s.close(); // a clean connect ends the session
    });
  }

  it('QoS 1: the broker sends no more unacknowledged messages than the receive maximum at first; acknowledgements let more come', async () => {
    const topic = uniqueChannel('mqtt');
    const { s, got } = await rawSession(`svc-test-window-${process.pid}`, topic, 1, { clean: true, receiveMaximum: 5 });
    await publish(SHARED, topic, bodies(0, 20), { qos: 1 });
    await until(() => got.length === 5, 10_000, '5 messages');
    await quiet(300);
    expect(got.length).toBe(5); // nothing more without acknowledgements
    let acked = 0;
    await until(
      () => {
        s.ack(got.slice(acked));
        acked = got.length;
        return got.length === 20;
      },
      10_000,
      'all 20 as acknowledgements go out',
    );
    await s.close();
  });
});

describe('mqtt source: the session', () => {
  it('pause() stops reading (QoS 0 has no other flow control); resume() reads what waited', async () => {
    const topic = uniqueChannel('mqtt');
    const { s, got } = await rawSession(`svc-test-pause-${process.pid}`, topic, 0, { clean: true });
    s.pause();
    // Published at QoS 1 (mosquitto_pub -l at QoS 0 can miss the end of its input and hang): the
    // subscription's QoS 0 is what the broker delivers at.
    await publish(SHARED, topic, bodies(0, 50), { qos: 1 });
    await quiet(300);
    expect(got.length).toBe(0);
    s.resume();
    await until(() => got.length === 50, 10_000, '50 messages after resume');
    await s.close();
  });

  for (const protocol_version of [5, 4] as const) {
    it(`MQTT ${protocol_version === 5 ? '5' : '3.1.1'}: messages of every size arrive whole, however the socket cuts them (1- to 4-byte lengths)`, async () => {
      const topic = uniqueChannel('mqtt');
      const got: Incoming[] = [];
      const s = await Subscriber.open(
        { ...shared, tls: false, protocol_version, clientId: `svc-test-sizes-${process.pid}`, clean: true, topic, qos: 2, receiveMaximum: 100 },
        { message: (m) => void got.push(m), lost() {} },
      );
      const sizes = [0, 1, 100, 127, 128, 16_383, 16_384, 300_000, 2_097_152];
      const sent = sizes.map((n, i) => Buffer.concat([Buffer.from(`${i}:`), Buffer.alloc(n, 65 + (i % 26))]));
      for (const [i, b] of sent.entries()) {
        await new Promise<void>((resolve, reject) => {
          const p = execFile('mosquitto_pub', ['-h', '127.0.0.1', '-p', '1883', '-t', topic, '-q', String(i % 3), '-s'], (e) => (e ? reject(e) : resolve()));
          p.stdin!.end(b);
        });
      }
      await until(() => got.length === sent.length, 20_000, `${sent.length} messages`);
      expect(got.map((m) => m.payload.length)).toEqual(sent.map((b) => b.length));
      expect(got.every((m, i) => m.payload.equals(sent[i]!) && m.topic === topic && m.qos === i % 3)).toBe(true);
      s.ack(got);
      await s.close();
    });
  }

  it('a broker that stops answering is detected by the keepalive ping and reported as lost', async () => {
    const b = await privateBroker();
    const lost: Error[] = [];
    const s = await Subscriber.open(
      {
        host: '127.0.0.1',
        port: b.port,
        tls: false,
        protocol_version: 5,
        clientId: 'svc-test-keepalive',
        clean: true,
        topic: 't',
        qos: 1,
        receiveMaximum: 10,
        keepaliveS: 1,
      },
      { message() {}, lost: (e) => void lost.push(e) },
    );
    await elapse(2500); // two keepalive intervals
    expect(lost).toEqual([]); // pings answered
    b.freeze();
    try {
      await until(() => lost.length > 0, 5000, 'the session reported lost');
      expect(lost[0]!.message).toBe(`127.0.0.1:${b.port} did not answer a keepalive ping within 1 s`);
    } finally {
      b.thaw();
      await s.close();
    }
  });
});

describe('mqtt source', () => {
  for (const qos of [0, 1, 2] as const) {
    it(`QoS ${qos}: every message, with topic and qos in the metadata`, async () => {
      const topic = uniqueChannel('mqtt');
      const r = streamRun(`mqtt-qos${qos}-${process.pid}`, { topic, qos });
      await r.connected();
      await publish(SHARED, topic, bodies(0, 300), { qos });
      await until(() => r.records().length >= 300, 20_000, '300 records');
      const rec = await r.end();
      expect(rec.status).toBe('success');
      expect(checkSequence(r.records(), 300)).toEqual({ missing: [], duplicates: 0 });
      expect(new Set(r.records().map((x) => `${x._topic} ${x._qos} ${x._retain}`))).toEqual(new Set([`${topic} ${qos} false`]));
    });
  }

  it("wildcards '+' and '#': each record carries its own message's topic, also when topics interleave", async () => {
    const base = uniqueChannel('mqtt');
    const plus = streamRun(`mqtt-plus-${process.pid}`, { topic: `${base}/+/alarm`, qos: 1 });
    const hash = streamRun(`mqtt-hash-${process.pid}`, { topic: `${base}/#`, qos: 1 });
    await Promise.all([plus.connected(), hash.connected()]);
    const topics = [`${base}/a/alarm`, `${base}/b/alarm`, `${base}/b/state`, `${base}/c/d/alarm`];
    // Interleaved: 4 rounds of 25 messages per topic, the topic written into each body.
    let seq = 0;
    for (let round = 0; round < 4; round++) {
      await Promise.all(topics.map((t, i) => publish(SHARED, t, bodies(seq + i * 25, 25, { t }), { qos: 1 })));
      seq += 100;
    }
    await until(() => hash.records().length >= 400, 20_000, '400 records through #');
    await until(() => plus.records().length >= 200, 20_000, '200 records through +');
    await quiet(200);
    await Promise.all([plus.end(), hash.end()]);
    expect(hash.records().length).toBe(400);
    expect(plus.records().length).toBe(200);
    for (const r of [...hash.records(), ...plus.records()]) expect(r._topic).toBe(r.t);
    expect(new Set(plus.records().map((r) => r._topic))).toEqual(new Set([`${base}/a/alarm`, `${base}/b/alarm`]));
    // Order within one topic is kept.
    for (const t of topics) {
      const seqs = hash
        .records()
        .filter((r) => r.t === t)
        .map((r) => r.seq as number);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    }
  });

  it('QoS 1 resumes its persistent session: messages published while the pipeline was stopped arrive when it starts again (default client id svc-<pipeline>)', async () => {
    const topic = uniqueChannel('mqtt');
    const name = `mqtt-resume-${process.pid}-${Date.now().toString(36)}`;
    const out = tempDir('svc-mqtt-out-');
    const a = streamRun(name, { topic, qos: 1 }, { out });
    await a.connected();
    await publish(SHARED, topic, bodies(0, 50), { qos: 1 });
    await until(() => a.records().length >= 50, 10_000, 'the first 50');
    expect((await a.end({ keepSession: true })).status).toBe('success');
    await publish(SHARED, topic, bodies(50, 50), { qos: 1 }); // nobody connected
    const b = streamRun(name, { topic, qos: 1 }, { out });
    await until(() => b.records().length >= 100, 10_000, 'the 50 published while stopped');
    await b.end();
    expect(checkSequence(b.records(), 100)).toEqual({ missing: [], duplicates: 0 });
  });

  it('QoS 0 has no session: what is published while the pipeline is stopped is not delivered later (at-most-once)', async () => {
    const topic = uniqueChannel('mqtt');
    const name = `mqtt-qos0-gap-${process.pid}`;
    const out = tempDir('svc-mqtt-out-');
    const a = streamRun(name, { topic, qos: 0 }, { out });
    await a.connected();
    await publish(SHARED, topic, bodies(0, 10), { qos: 1 });
    await until(() => a.records().length >= 10, 10_000, 'the first 10');
    await a.end();
    await publish(SHARED, topic, bodies(10, 10), { qos: 1 });
    const b = streamRun(name, { topic, qos: 0 }, { out });
    await b.connected();
    await publish(SHARED, topic, bodies(20, 10), { qos: 1 });
    await until(() => b.records().length >= 20, 10_000, 'the 10 published after the restart');
    await b.end();
    expect(checkSequence(b.records(), 30).missing).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
  });

  it('messages of a batch that was not delivered come again (the sink failed, then recovered): nothing lost', async () => {
    const topic = uniqueChannel('mqtt');
    const dir = tempDir('svc-mqtt-out-');
    const out = join(dir, 'out');
    writeFileSync(out, 'a file where the sink wants a directory: every write fails'); // the local sink cannot mkdir
    const r = streamRun(`mqtt-redeliver-${process.pid}-${Date.now().toString(36)}`, { topic, qos: 1, reconnect_delay_seconds: 0.2 }, { out });
    await r.connected();
    await publish(SHARED, topic, bodies(0, 100), { qos: 1 });
    await until(() => r.states.filter((s) => s === 'connected').length >= 3, 15_000, 'reconnects after undelivered batches');
    rmSync(out);
    await until(() => checkSequence(r.records(), 100).missing.length === 0, 20_000, 'all 100 after the sink recovered');
    const rec = await r.end();
    expect(rec.status).toBe('success');
    expect(r.states).toContain('disconnected');
  });

  it("test() does not take over a running pipeline's session", async () => {
    const topic = uniqueChannel('mqtt');
    const r = streamRun(`mqtt-test-while-running-${process.pid}`, { topic, qos: 1 });
    await r.connected();
    const t = await testConnector('source', { type: 'mqtt', ...shared, topic, qos: 1 } as never);
    expect(t).toMatchObject({ ok: true, error: null });
    await publish(SHARED, topic, bodies(0, 20), { qos: 1 });
    await until(() => r.records().length >= 20, 10_000, '20 records');
    await r.end();
    expect(r.states).not.toContain('disconnected');
  });

  it('protocol_version 4 (MQTT 3.1.1): QoS 1 both ways', async () => {
    const topic = uniqueChannel('mqtt');
    const r = streamRun(`mqtt-v4-${process.pid}`, { topic, qos: 1, protocol_version: 4 });
    await r.connected();
    const rec = await sinkRun(
      'mqtt-v4-sink',
      { topic, qos: 1, protocol_version: 4 },
      bodies(0, 200).map((b) => JSON.parse(b.toString()) as Rec),
    );
    expect(rec.status).toBe('success');
    await until(() => r.records().length >= 200, 20_000, '200 records');
    await r.end();
    expect(checkSequence(r.records(), 200)).toEqual({ missing: [], duplicates: 0 });
  });
});

describe('mqtt sink', () => {
  for (const qos of [0, 1, 2] as const) {
    it(`QoS ${qos}: one message per record`, async () => {
      const topic = uniqueChannel('mqtt');
      const sub = await subscribe(SHARED, topic, { qos: 2, format: '%q %p' });
      try {
        const rec = await sinkRun(
          `mqtt-sink-qos${qos}`,
          { topic, qos },
          bodies(0, 300).map((b) => JSON.parse(b.toString()) as Rec),
        );
        expect(rec.status).toBe('success');
        expect(rec.records_out).toBe(300);
        await until(() => sub.lines().length >= 300, 10_000, '300 messages');
        const lines = sub.lines().map((l) => [Number(l.slice(0, 1)), JSON.parse(l.slice(2)) as Rec] as const);
        expect(
          checkSequence(
            lines.map(([, r]) => r),
            300,
          ),
        ).toEqual({ missing: [], duplicates: 0 });
        expect(new Set(lines.map(([q]) => q))).toEqual(new Set([qos])); // delivered at the QoS it was published with
      } finally {
        await sub.close();
      }
    });
  }

  it('retain: a later subscriber gets the last retained message; without retain, nothing', async () => {
    const retained = uniqueChannel('mqtt');
    const plain = uniqueChannel('mqtt');
    try {
      expect((await sinkRun('mqtt-retain', { topic: retained, qos: 1, retain: true }, [{ seq: 0 }, { seq: 1 }, { seq: 2 }])).status).toBe('success');
      expect((await sinkRun('mqtt-no-retain', { topic: plain, qos: 1 }, [{ seq: 0 }])).status).toBe('success');
      // Subscribed only now: -F '%r %p' prints the retain flag and the payload.
      const got = await exec('mosquitto_sub', ['-h', '127.0.0.1', '-p', '1883', '-t', retained, '-C', '1', '-W', '5', '-F', '%r %p']);
      expect(got.stdout.trim()).toBe('1 {"seq":2}');
      const none = await exec('mosquitto_sub', ['-h', '127.0.0.1', '-p', '1883', '-t', plain, '-C', '1', '-W', '1']).catch(
        (e: { code: number; stdout: string }) => e,
      );
      expect(none.stdout).toBe('');
    } finally {
      await exec('mosquitto_pub', ['-h', '127.0.0.1', '-p', '1883', '-t', retained, '-r', '-n']); // clear the retained message
    }
  });

  it('a publish the broker refuses (MQTT 5: not authorized by its ACL) fails the write with the reason, not retried', async () => {
    const b = await privateBroker({ users: { [USER]: PASSWORD }, extra: [] });
    // An ACL file: the user may write only under allowed/.
    writeFileSync(join(b.dir, 'acl'), `user ${USER}\ntopic readwrite allowed/#\n`);
    writeFileSync(join(b.dir, 'mosquitto.conf'), readFileSync(join(b.dir, 'mosquitto.conf'), 'utf8') + `acl_file ${join(b.dir, 'acl')}\n`);
    await b.restart();
    const creds = { host: '127.0.0.1', port: b.port, username: USER, password: PASSWORD, qos: 1 };
    const ok = await sinkRun('mqtt-acl-ok', { ...creds, topic: 'allowed/x' }, [{ seq: 0 }]);
    expect(ok.status).toBe('success');
    const denied = await sinkRun('mqtt-acl-denied', { ...creds, topic: 'denied/x', retry_count: 3, retry_delay_seconds: 0.1 }, [{ seq: 0 }, { seq: 1 }]);
    expect(denied.records_out).toBe(0);
    const text = JSON.stringify(denied);
    expect(text).toMatch(/refused a message on 'denied\/x': not authorized \(code 135\)/);
    expect(text).not.toContain(PASSWORD);
  });
});

describe('mqtt: credentials and TLS', () => {
  let b: Broker;
  beforeAll(async () => {
    b = await startBroker({ users: { [USER]: PASSWORD }, tls: true });
  }, 60_000);
  afterAll(async () => {
    await b?.stop();
  });
  const cfg = (extra: Cfg = {}): Cfg => ({ type: 'mqtt', host: '127.0.0.1', port: b.port, topic: 'svc/t', username: USER, password: PASSWORD, ...extra });

  for (const protocol_version of [5, 4] as const) {
    it(`a wrong password is named as such (MQTT ${protocol_version === 5 ? '5' : '3.1.1'}), source and sink, without the password`, async () => {
      for (const role of ['source', 'sink'] as const) {
        const r = await testConnector(role, cfg({ password: 'wrong-secret', protocol_version }) as never);
        expect(r.ok).toBe(false);
        expect(r.error).toMatch(
          /^mqtt: the broker refused the connection: (bad user name or password|not authorized) \(code \d+\): check username and password/,
        );
        expect(r.error).not.toContain('wrong-secret');
      }
    });
  }

  it('a stream that cannot log in gives up after max_reconnect_attempts with the reason', async () => {
    const rec = await runPipeline(
      load({
        name: 'mqtt-auth-gives-up',
        schedule: { type: 'stream' },
        source: cfg({ password: 'wrong-secret', qos: 1, reconnect_delay_seconds: 0.1, max_reconnect_attempts: 1 }),
        sinks: [{ type: 'local', path: tempDir() }],
      }),
      { log: silentLogger, processed: new MemoryProcessedFiles() },
    );
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(/gave up after 1 reconnect attempts: the broker refused the connection: (bad user name or password|not authorized)/);
    expect(JSON.stringify(rec)).not.toContain('wrong-secret');
  });

  it('TLS with the CA: source and sink deliver', async () => {
    const topic = uniqueChannel('mqtt');
    const tls = { port: b.tlsPort, tls: true, tls_ca_certs: b.certs!.ca, username: USER, password: PASSWORD };
    expect(await testConnector('source', cfg({ ...tls, topic }) as never)).toMatchObject({ ok: true });
    expect(await testConnector('sink', cfg({ ...tls, topic }) as never)).toMatchObject({ ok: true });
    const r = streamRun(`mqtt-tls-${process.pid}`, { ...tls, topic, qos: 1 });
    await r.connected();
    expect(
      (
        await sinkRun(
          'mqtt-tls-sink',
          { ...tls, topic, qos: 1 },
          bodies(0, 100).map((x) => JSON.parse(x.toString()) as Rec),
        )
      ).status,
    ).toBe('success');
    await until(() => r.records().length >= 100, 10_000, '100 records over TLS');
    await r.end();
    expect(checkSequence(r.records(), 100)).toEqual({ missing: [], duplicates: 0 });
  });

  it('TLS with a CA that did not sign the broker certificate: a clear error naming tls_ca_certs', async () => {
    for (const role of ['source', 'sink'] as const) {
      const r = await testConnector(role, cfg({ port: b.tlsPort, tls: true, tls_ca_certs: b.certs!.otherCa }) as never);
      expect(r.ok).toBe(false);
      expect(r.error).toContain(`mqtt: TLS with 127.0.0.1:${b.tlsPort} failed:`);
      expect(r.error).toMatch(/certificate/);
      expect(r.error).toContain(`is ${b.certs!.otherCa} the CA that signed the broker certificate?`);
    }
  });

  it('TLS without tls_ca_certs (system CAs) fails on the private CA; a missing CA file and a plain connect to a TLS port are named', async () => {
    const noCa = await testConnector('source', cfg({ port: b.tlsPort, tls: true }) as never);
    expect(noCa.error).toMatch(/TLS with .* failed: .*\(set tls_ca_certs to the CA that signed the broker certificate\)/);
    const missing = await testConnector('sink', cfg({ port: b.tlsPort, tls: true, tls_ca_certs: '/nonexistent/ca.pem' }) as never);
    expect(missing.error).toBe("mqtt: cannot read tls_ca_certs '/nonexistent/ca.pem': ENOENT");
    for (const role of ['source', 'sink'] as const) {
      const plain = await testConnector(role, cfg({ port: b.tlsPort }) as never);
      expect(plain.error).toBe(`mqtt: 127.0.0.1:${b.tlsPort} closed the connection before answering CONNECT (a TLS listener? then set tls: true)`);
    }
  });
});

describe('mqtt: config lint', () => {
  const diag = (role: 'source' | 'sink', component: Cfg) => {
    const pipeline = {
      name: 'mqtt-lint',
      schedule: { type: role === 'source' ? 'stream' : 'manual' },
      source: role === 'source' ? { type: 'mqtt', ...shared, ...component } : { type: 'local', path: '/tmp' },
      sinks: [role === 'sink' ? { type: 'mqtt', ...shared, ...component } : { type: 'local', path: '/tmp' }],
    };
    return loadPipelineText(stringify({ version: '1', pipeline }), { env: {} }).diagnostics.map((d) => `${d.path}: ${d.message}`);
  };

  it('wildcards: malformed filters in the source, any wildcard in the sink topic', () => {
    expect(diag('source', { topic: 'a/#/b' })).toEqual([expect.stringMatching(/^pipeline\.source\.topic: '#' must be a whole level and the last one/)]);
    expect(diag('source', { topic: 'a/b+/c' })).toEqual([expect.stringMatching(/^pipeline\.source\.topic: '\+' must be a whole level/)]);
    expect(diag('source', { topic: '+/a/#' })).toEqual([]);
    expect(diag('sink', { topic: 'a/+/c' })).toEqual([
      expect.stringMatching(/^pipeline\.sinks\[0\]\.topic: a topic to publish to may not contain the wildcards/),
    ]);
  });

  it('tls_ca_certs without tls, qos out of range', () => {
    expect(diag('sink', { topic: 'a', tls_ca_certs: '/ca.pem' })).toEqual(['pipeline.sinks[0].tls_ca_certs: applies with tls: true only']);
    expect(diag('source', { topic: 'a', qos: 3 }).some((d) => d.startsWith('pipeline.source.qos'))).toBe(true);
  });
});
