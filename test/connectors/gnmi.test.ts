// The gnmi source: the shared conformance suite against the test target (a grpc-js gNMI server,
// test/connectors/peers/gnmi-target.ts), then what it does not cover: every TypedValue kind and the
// record shape (prefix joined, keys, origin, target, timestamps, deletes), STREAM with SAMPLE and
// ON_CHANGE, POLL and ONCE, credentials as metadata, TLS with a CA, a target restart (the source
// subscribes again), the target's refusals (INVALID_ARGUMENT, UNIMPLEMENTED) as clear errors, the
// lint rules, and the embedded descriptor against gnmi.proto.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as loader from '@grpc/proto-loader';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadComponent, loadPipelineText } from '../../src/config/load.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline, type RunTelemetry } from '../../src/engine/runner.js';
import { silentLogger, type Logger } from '../../src/observability/log.js';
import { LOADER_OPTIONS } from '../../src/plugins/connectors/gnmi/client.js';
import { GNMI_DESCRIPTOR } from '../../src/plugins/connectors/gnmi/gnmi-descriptor.js';
import { formatPath, parsePath } from '../../src/plugins/connectors/gnmi/path.js';
import { decimal64, float32, quoteBigIntegers } from '../../src/plugins/connectors/gnmi/typed-value.js';
import type { ConnectionState } from '../../src/plugins/types.js';
import { tempDir } from '../helpers/fs.js';
import { conformance, type Cfg, type Rec } from './conformance.js';
import { loadPipeline, outputRecords, until } from './helpers.js';
import { gnmi, PROTO_FILE, startTarget, type GnmiTarget, type TargetOptions } from './peers/gnmi-target.js';
import { makeCerts } from '../helpers/certs.js';

conformance(gnmi);

const targets: GnmiTarget[] = [];
const runs: { stop: AbortController; done: Promise<unknown> }[] = [];
afterEach(async () => {
  for (const r of runs.splice(0)) {
    r.stop.abort();
    await r.done;
  }
  for (const t of targets.splice(0)) await t.stop();
});

async function target(opts: TargetOptions = {}) {
  const t = await startTarget(opts);
  targets.push(t);
  return t;
}

const base = (t: GnmiTarget, extra: Cfg = {}): Cfg => ({ type: 'gnmi', host: '127.0.0.1', port: t.port, tls: false, ...extra });

/** A stream pipeline from a gnmi source into one NDJSON directory. */
function streamRun(name: string, source: Cfg, extra: Cfg = {}, log: Logger = silentLogger) {
  const out = tempDir('svc-gnmi-out-');
  const states: ConnectionState[] = [];
  const telemetry: RunTelemetry = { connection: (component, _t, s) => void (component === 'source' && states.push(s)) };
  const stop = new AbortController();
  const cfg = loadPipeline({
    name,
    schedule: { type: 'stream' },
    source,
    serializer_in: { type: 'json' },
    serializer_out: { type: 'ndjson' },
    sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
    ...extra,
  });
  const done = runPipeline(cfg, { signal: stop.signal, telemetry, log, processed: new MemoryProcessedFiles() });
  const run = {
    states,
    done,
    stop,
    records: (): Rec[] => outputRecords(out),
    connected: (n = 1) => until(() => states.filter((s) => s === 'connected').length >= n, 15_000, `connected x${n}`),
    async end() {
      stop.abort();
      return done;
    },
  };
  runs.push(run);
  return run;
}

const checked = (cfg: Cfg) => {
  const r = loadComponent('source', cfg, { env: {} });
  if (!r.config) throw new Error(JSON.stringify(r.diagnostics));
  return r.config;
};

describe('gnmi: gnmi.proto and the embedded descriptor', () => {
  it('load to the same messages, enums and service (the client uses the descriptor; the test target the .proto)', () => {
    const fromFile = loader.loadSync(PROTO_FILE, LOADER_OPTIONS);
    const fromTs = loader.fromJSON(GNMI_DESCRIPTOR as never, LOADER_OPTIONS);
    expect(Object.keys(fromTs).sort()).toEqual(Object.keys(fromFile).sort());
    for (const k of Object.keys(fromFile)) {
      const a = fromFile[k] as Record<string, unknown>;
      const b = fromTs[k] as Record<string, unknown>;
      if ('type' in a) expect(b.type, k).toEqual(a.type);
      else {
        // A service: its methods (serializers are closures, compared through the message types).
        const shape = (m: Record<string, unknown>) => ({
          ...m,
          requestSerialize: 0,
          requestDeserialize: 0,
          responseSerialize: 0,
          responseDeserialize: 0,
          requestType: (m.requestType as { type: unknown }).type,
          responseType: (m.responseType as { type: unknown }).type,
        });
        for (const m of Object.keys(a)) expect(shape(b[m] as Record<string, unknown>), `${k}.${m}`).toEqual(shape(a[m] as Record<string, unknown>));
      }
    }
    expect(Object.keys(fromFile['gnmi.gNMI'] as object)).toEqual(['Capabilities', 'Subscribe']);
  });
});

describe('gnmi: paths and values', () => {
  it('parses origin, elements and keys (escaped ] and \\ in values, / allowed inside them) and writes them back', () => {
    expect(parsePath('openconfig:/interfaces/interface[name=Ethernet1/1]/state')).toEqual({
      origin: 'openconfig',
      elem: [{ name: 'interfaces' }, { name: 'interface', key: { name: 'Ethernet1/1' } }, { name: 'state' }],
    });
    expect(parsePath('/')).toEqual({ elem: [] });
    expect(parsePath('a/b[k=x\\]y][j=1]/')).toEqual({ elem: [{ name: 'a' }, { name: 'b', key: { k: 'x]y', j: '1' } }] });
    for (const p of ['openconfig:/interfaces/interface[name=Ethernet1/1]/state', '/a/b[j=1][k=x\\]y\\\\z]/c', '/'])
      expect(formatPath(undefined, parsePath(p))).toBe(p);
    expect(formatPath({ origin: 'oc', elem: [{ name: 'a' }] }, { elem: [{ name: 'b', key: { z: '1', a: '2' } }] })).toBe('oc:/a/b[a=2][z=1]');
    for (const bad of ['/a[k', '/a//b', '/a[=v]', '/a]b', '/a[k=v]x']) expect(() => parsePath(bad), bad).toThrow();
  });

  it('numbers stay exact: float32 shortest, Decimal64, JSON integers beyond 2^53 quoted', () => {
    expect(float32(Math.fround(1.1))).toBe(1.1);
    expect(float32(Math.fround(3.4e38))).toBe(3.4e38);
    expect(decimal64('-12345', 2)).toBe(-123.45);
    expect(decimal64('5', 3)).toBe(0.005);
    expect(decimal64('100', 2)).toBe(1);
    expect(decimal64('12345678901234567890', 4)).toBe('1234567890123456.789');
    expect(quoteBigIntegers('{"a":18446744073709551615,"b":"12345678901234567890","c":1.5e300,"d":9007199254740991}')).toBe(
      '{"a":"18446744073709551615","b":"12345678901234567890","c":1.5e300,"d":9007199254740991}',
    );
  });
});

describe('gnmi: records', () => {
  it('one record per update, every TypedValue kind decoded, the prefix joined, the target named; a delete is a record with deleted: true', async () => {
    const t = await target({ name: 'rtr1' });
    const big = '{"counters":{"in-octets":18446744073709551615,"name":"eth0"}}';
    const kinds: [string, Record<string, unknown>, unknown, string][] = [
      ['string', { string_val: 'up' }, 'up', 'string'],
      ['int', { int_val: '-9223372036854775808' }, '-9223372036854775808', 'int'],
      ['small-int', { int_val: '-42' }, -42, 'int'],
      ['uint', { uint_val: '18446744073709551615' }, '18446744073709551615', 'uint'],
      ['safe-uint', { uint_val: '9007199254740991' }, 9007199254740991, 'uint'],
      ['bool', { bool_val: false }, false, 'bool'],
      ['bytes', { bytes_val: Buffer.from([0, 1, 254, 255]) }, 'AAH+/w==', 'bytes'],
      ['float', { float_val: 1.1 }, 1.1, 'float'],
      ['double', { double_val: 0.1 + 0.2 }, 0.30000000000000004, 'double'],
      ['decimal', { decimal_val: { digits: '-12345', precision: 2 } }, -123.45, 'decimal'],
      ['leaflist', { leaflist_val: { element: [{ string_val: 'a' }, { uint_val: '7' }, { bool_val: true }] } }, ['a', 7, true], 'leaflist'],
      ['any', { any_val: { type_url: 'type.googleapis.com/x.Y', value: Buffer.from('hi') } }, { type_url: 'type.googleapis.com/x.Y', value: 'aGk=' }, 'any'],
      ['json', { json_val: Buffer.from(big) }, { counters: { 'in-octets': '18446744073709551615', name: 'eth0' } }, 'json'],
      ['json-ietf', { json_ietf_val: Buffer.from('{"openconfig-interfaces:enabled":true}') }, { 'openconfig-interfaces:enabled': true }, 'json_ietf'],
      ['ascii', { ascii_val: 'hostname rtr1' }, 'hostname rtr1', 'ascii'],
      ['proto', { proto_bytes: Buffer.from([8, 150, 1]) }, 'CJYB', 'proto_bytes'],
    ];
    const ns = 1_764_000_000_123_456_789n;
    for (const [leaf, v] of kinds) t.set(`openconfig:/kinds/leaf[name=${leaf}]/value`, v, ns);
    const run = streamRun('gnmi-kinds', base(t, { subscriptions: [{ path: 'openconfig:/kinds' }] }));
    await run.connected();
    await until(() => run.records().length >= kinds.length, 10_000, 'one record per leaf');
    const byPath = new Map(run.records().map((r) => [r.path as string, r]));
    for (const [leaf, , value, type] of kinds) {
      expect(byPath.get(`openconfig:/kinds/leaf[name=${leaf}]/value`), leaf).toEqual({
        timestamp: '2025-11-24T16:00:00.123Z',
        timestamp_ns: ns.toString(),
        target: 'rtr1',
        path: `openconfig:/kinds/leaf[name=${leaf}]/value`,
        type,
        value,
      });
    }
    t.delete('openconfig:/kinds/leaf[name=string]/value');
    await until(() => run.records().some((r) => r.deleted), 5000, 'the delete');
    const del = run.records().find((r) => r.deleted)!;
    expect(del).toMatchObject({ target: 'rtr1', path: 'openconfig:/kinds/leaf[name=string]/value', deleted: true });
    expect(del).not.toHaveProperty('value');
    expect(t.subscribes[0]!.request).toMatchObject({
      mode: 'STREAM',
      encoding: 'JSON',
      subscription: [{ path: { origin: 'openconfig', elem: [{ name: 'kinds' }] }, mode: 'TARGET_DEFINED' }],
    });
  });

  it('without a target name in the prefix, records name host:port; encoding is sent as configured', async () => {
    const t = await target();
    t.set('/system/state/hostname', { string_val: 'rtr2' });
    const run = streamRun('gnmi-addr', base(t, { encoding: 'json_ietf', subscriptions: [{ path: '/system' }] }));
    await until(() => run.records().length >= 1, 10_000, 'the record');
    expect(run.records()[0]).toMatchObject({ target: `127.0.0.1:${t.port}`, path: '/system/state/hostname', value: 'rtr2' });
    expect(t.subscribes[0]!.request!.encoding).toBe('JSON_IETF');
  });
});

describe('gnmi: subscription modes', () => {
  it('STREAM: SAMPLE leaves come every sample_interval, ON_CHANGE leaves only when they change', async () => {
    const t = await target();
    t.set('/if/counters/in', { uint_val: '1' });
    t.set('/if/state/oper', { string_val: 'UP' });
    const run = streamRun(
      'gnmi-stream',
      base(t, {
        subscriptions: [
          { path: '/if/counters', mode: 'SAMPLE', sample_interval: 100_000_000 },
          { path: '/if/state', mode: 'ON_CHANGE' },
        ],
      }),
    );
    await run.connected();
    await until(() => run.records().filter((r) => r.path === '/if/counters/in').length >= 5, 10_000, '5 samples');
    const oper = () => run.records().filter((r) => r.path === '/if/state/oper');
    expect(oper()).toHaveLength(1); // the initial state only
    t.set('/if/state/oper', { string_val: 'DOWN' });
    await until(() => oper().length === 2, 5000, 'the change');
    expect(oper().map((r) => r.value)).toEqual(['UP', 'DOWN']);
    const samples = run.records().filter((r) => r.path === '/if/counters/in');
    const ts = samples.map((r) => BigInt(r.timestamp_ns as string));
    expect(ts.every((x, i) => i === 0 || x >= ts[i - 1]!)).toBe(true);
    expect(t.subscribes[0]!.request!.subscription).toMatchObject([
      { mode: 'SAMPLE', sample_interval: '100000000' },
      { mode: 'ON_CHANGE', sample_interval: '0' },
    ]);
  });

  it('POLL: one RPC, a Poll every poll_interval_seconds, each answered with a snapshot', async () => {
    const t = await target();
    t.set('/sys/uptime', { uint_val: '10' });
    const run = streamRun('gnmi-poll', base(t, { subscription_mode: 'poll', poll_interval_seconds: 0.2, subscriptions: [{ path: '/sys' }] }));
    await run.connected();
    await until(() => t.subscribes[0] && t.subscribes[0].polls >= 3, 10_000, '3 polls');
    t.set('/sys/uptime', { uint_val: '11' });
    await until(() => run.records().some((r) => r.value === 11), 5000, 'the polled new value');
    expect(t.subscribes).toHaveLength(1);
    expect(t.subscribes[0]!.request!.mode).toBe('POLL');
    expect(run.records().filter((r) => r.value === 10).length).toBeGreaterThanOrEqual(3); // the first answer and each poll before the change
    expect(run.states).toEqual(['connecting', 'connected']);
  });

  it('ONCE: a snapshot RPC, made again every poll_interval_seconds on the same session', async () => {
    const t = await target();
    t.set('/sys/hostname', { string_val: 'a' });
    const run = streamRun('gnmi-once', base(t, { subscription_mode: 'once', poll_interval_seconds: 0.2, subscriptions: [{ path: '/sys' }] }));
    await run.connected();
    await until(() => t.subscribes.length >= 3, 10_000, '3 ONCE subscriptions');
    await until(() => run.records().length >= 3, 5000, '3 snapshots');
    expect(t.subscribes.every((s) => s.request!.mode === 'ONCE')).toBe(true);
    expect(run.records().every((r) => r.value === 'a')).toBe(true);
    expect(run.states).toEqual(['connecting', 'connected']);
    expect((await run.end()).status).toBe('success');
  });
});

describe('gnmi: credentials and TLS', () => {
  it('username and password travel as metadata; a wrong password is UNAUTHENTICATED, for test() and for the stream, never shown', async () => {
    const t = await target({ users: { svc: 'pw-right-1' } });
    t.set('/a/b', { string_val: 'x' });
    const good = base(t, { username: 'svc', password: 'pw-right-1', subscriptions: [{ path: '/a' }] });
    expect(await testConnector('source', checked(good))).toMatchObject({ ok: true });
    const bad = await testConnector('source', checked({ ...good, password: 'pw-wrong-2' }));
    expect(bad.ok).toBe(false);
    expect(bad.error).toMatch(
      /^gnmi: the target 127\.0\.0\.1:\d+ refused the credentials \(UNAUTHENTICATED: authentication failed for user 'svc'\); check username and password$/,
    );
    expect(bad.error).not.toContain('pw-wrong-2');
    const none = await testConnector('source', checked({ ...good, username: undefined, password: undefined }));
    expect(none.error).toMatch(/UNAUTHENTICATED: no username/);

    const refused = streamRun('gnmi-auth-bad', { ...good, password: 'pw-wrong-2', reconnect_delay_seconds: 0.05, max_reconnect_attempts: 2 });
    const rec = (await refused.done) as { status: string; error: string };
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(/gave up after 2 reconnect attempts: .*UNAUTHENTICATED/);
    expect(rec.error).not.toContain('pw-wrong-2');
    expect(refused.states.filter((s) => s === 'connecting')).toHaveLength(3);

    const run = streamRun('gnmi-auth', good);
    await until(() => run.records().length >= 1, 10_000, 'the record');
    expect(t.subscribes.at(-1)!.username).toBe('svc');
  });

  it('TLS: tls_ca trusts the target, tls_server_name is the name checked, tls_skip_verify trusts any certificate; the system CAs, another CA, a wrong name, an insecure channel, an unreadable tls_ca fail clearly', async () => {
    const dir = tempDir('svc-gnmi-tls-');
    const certs = await makeCerts(dir);
    const t = await target({ tls: { key: readFileSync(certs.serverKey), cert: readFileSync(certs.serverCert) } });
    t.set('/a/b', { string_val: 'tls' });
    const cfg = { type: 'gnmi', host: '127.0.0.1', port: t.port, tls_ca: certs.ca, subscriptions: [{ path: '/a' }] };
    expect(await testConnector('source', checked(cfg))).toMatchObject({ ok: true });
    for (const wrong of [
      { ...cfg, tls_ca: undefined },
      { ...cfg, tls_ca: certs.otherCa },
    ]) {
      const r = await testConnector('source', checked(wrong), { timeoutMs: 8000 });
      expect(r.ok).toBe(false);
      expect(r.error).toMatch(/^gnmi: cannot reach 127\.0\.0\.1:\d+ \(UNAVAILABLE: .*certificate/);
    }
    const plain = await testConnector('source', checked({ ...cfg, tls: false, tls_ca: undefined }), { timeoutMs: 8000 });
    expect(plain.ok).toBe(false);
    expect(plain.error).toMatch(/^gnmi: cannot reach/);
    // The certificate names 127.0.0.1 and localhost: tls_server_name is checked instead of host.
    expect(await testConnector('source', checked({ ...cfg, tls_server_name: 'localhost' }))).toMatchObject({ ok: true });
    const wrongName = await testConnector('source', checked({ ...cfg, tls_server_name: 'rtr9.example.net' }), { timeoutMs: 8000 });
    expect(wrongName.error).toMatch(/^gnmi: cannot reach .*UNAVAILABLE: .*(rtr9\.example\.net|altnames)/);
    // tls_skip_verify: any certificate (here, one no known CA signed).
    expect(await testConnector('source', checked({ ...cfg, tls_ca: undefined, tls_skip_verify: true }))).toMatchObject({ ok: true });
    const missing = await testConnector('source', checked({ ...cfg, tls_ca: join(dir, 'nope.pem') }));
    expect(missing.error).toMatch(/^gnmi: cannot read tls_ca '.*nope\.pem': ENOENT/);

    const run = streamRun('gnmi-tls', cfg);
    await until(() => run.records().length >= 1, 10_000, 'the record over TLS');
    expect(run.records()[0]).toMatchObject({ path: '/a/b', value: 'tls' });
  });
});

describe('gnmi: reconnect', () => {
  it('a target restart: the source reconnects with backoff and subscribes again; the target sends its state again, then the changes', async () => {
    const t = await target();
    t.set('/if/state/oper', { string_val: 'UP' });
    const run = streamRun('gnmi-restart', base(t, { reconnect_delay_seconds: 0.2, subscriptions: [{ path: '/if', mode: 'ON_CHANGE' }] }));
    await run.connected();
    await until(() => run.records().length >= 1, 5000, 'the initial state');
    await t.restart(300);
    await run.connected(2);
    expect(t.subscribes).toHaveLength(2);
    await until(() => run.records().length >= 2, 5000, 'the state sent again');
    t.set('/if/state/oper', { string_val: 'DOWN' });
    await until(() => run.records().length >= 3, 5000, 'the change after the restart');
    expect(run.records().map((r) => r.value)).toEqual(['UP', 'UP', 'DOWN']);
    expect(run.states.slice(0, 4)).toEqual(['connecting', 'connected', 'disconnected', 'connecting']);
    expect(run.states.at(-1)).toBe('connected');
    expect(((await run.end()) as { status: string }).status).toBe('success');
  });

  it('a target that ends a STREAM subscription (status OK): the session counts as lost and the source subscribes again', async () => {
    const t = await target();
    t.set('/a/b', { string_val: 'v1' });
    const run = streamRun('gnmi-ended', base(t, { reconnect_delay_seconds: 0.1, subscriptions: [{ path: '/a', mode: 'ON_CHANGE' }] }));
    await run.connected();
    await until(() => run.records().length >= 1, 5000, 'the initial state');
    t.endStreams();
    await run.connected(2);
    expect(t.subscribes).toHaveLength(2);
    t.set('/a/b', { string_val: 'v2' });
    await until(() => run.records().some((r) => r.value === 'v2'), 5000, 'the change on the new subscription');
    expect(run.states.slice(0, 5)).toEqual(['connecting', 'connected', 'disconnected', 'connecting', 'connected']);
  });

  it('a target that is down at the start: the source keeps trying (reconnect_delay_seconds, doubling) and subscribes once it is up', async () => {
    const t = await target();
    const port = t.port;
    await t.stop();
    t.set('/a/b', { string_val: 'late' });
    const run = streamRun('gnmi-late', base(t, { port, reconnect_delay_seconds: 0.1, subscriptions: [{ path: '/a' }] }));
    await until(() => run.states.filter((s) => s === 'connecting').length >= 3, 10_000, 'three attempts');
    expect(run.states).not.toContain('connected');
    await t.start();
    expect(t.port).toBe(port);
    await until(() => run.records().length >= 1, 15_000, 'the record');
  });
});

describe('gnmi: backpressure', () => {
  it('a slow pipeline stops reading the RPC above the high-water mark (HTTP/2 flow control holds the target back) and reads again: every update of the session arrives, once, in order', async () => {
    const t = await target();
    const lines: Rec[] = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as Rec) }) as unknown as Logger;
    const run = streamRun(
      'gnmi-slow',
      base(t, { subscriptions: [{ path: '/svc/bp', mode: 'ON_CHANGE' }] }),
      { record_chunk_size: 100, rate_limit_rps: 50 },
      log,
    );
    await run.connected();
    const n = 10_000; // five times the source's high-water mark (2,000 queued messages), 500 updates to a notification
    t.publish(
      'bp',
      Array.from({ length: n }, (_, i) => Buffer.from(JSON.stringify({ seq: i }))),
      500,
    );
    await until(() => run.records().length >= n, 60_000, `${n} records`);
    const seqs = run.records().map((r) => (r.value as { seq: number }).seq);
    expect(seqs).toEqual(Array.from({ length: n }, (_, i) => i));
    const msgs = lines.map((l) => l.msg as string);
    expect(msgs.filter((m) => m.startsWith('gnmi: the pipeline is behind')).length).toBeGreaterThan(0);
    expect(msgs.filter((m) => m === 'gnmi: reading the subscription again').length).toBeGreaterThan(0);
  }, 90_000);
});

describe('gnmi: refusals', () => {
  it('the target refuses a too small sample_interval (INVALID_ARGUMENT) and an unsupported encoding (UNIMPLEMENTED): the stream fails with what to check', async () => {
    const t = await target();
    const cases: [Cfg, RegExp][] = [
      [
        { subscriptions: [{ path: '/a', mode: 'SAMPLE', sample_interval: 500 }] },
        /refused the request \(INVALID_ARGUMENT: subscription 0: sample_interval 500 ns is below .*\); check subscriptions/,
      ],
      [{ encoding: 'ascii', subscriptions: [{ path: '/a' }] }, /does not support this request \(UNIMPLEMENTED: unsupported encoding: ASCII\); check encoding/],
    ];
    for (const [extra, msg] of cases) {
      const run = streamRun('gnmi-refused', base(t, { reconnect_delay_seconds: 0.05, max_reconnect_attempts: 1, ...extra }));
      const rec = (await run.done) as { status: string; error: string };
      expect(rec.status).toBe('failed');
      expect(rec.error).toMatch(msg);
    }
  });

  it('the test target is strict as a real one: a Poll first, a subscription without path, a Poll on a STREAM subscription are INVALID_ARGUMENT', async () => {
    const t = await target();
    const pkg = grpc.loadPackageDefinition(loader.loadSync(PROTO_FILE, LOADER_OPTIONS)) as unknown as { gnmi: { gNMI: grpc.ServiceClientConstructor } };
    const client = new pkg.gnmi.gNMI(t.address, grpc.credentials.createInsecure()) as unknown as {
      Subscribe(): grpc.ClientDuplexStream<object, object>;
      close(): void;
    };
    const statusOf = (reqs: object[]) =>
      new Promise<grpc.StatusObject>((resolve) => {
        const call = client.Subscribe();
        call.on('data', () => {});
        call.on('error', () => {});
        call.on('status', resolve);
        for (const r of reqs) call.write(r);
      });
    const cases: [object[], string][] = [
      [[{ poll: {} }], 'a Poll before the SubscriptionList'],
      [[{ subscribe: { subscription: [{ mode: 'ON_CHANGE' }] } }], 'subscription 0 has no path'],
      [[{ subscribe: { subscription: [] } }], 'a SubscriptionList without subscriptions'],
      [[{ subscribe: { subscription: [{ path: { elem: [{ name: 'a' }] } }] } }, { poll: {} }], 'a Poll on a STREAM subscription'],
    ];
    try {
      for (const [reqs, details] of cases) expect(await statusOf(reqs)).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details });
    } finally {
      client.close();
    }
  });
});

describe('gnmi: config', () => {
  const diag = (source: Cfg) =>
    loadPipelineText(
      stringify({ version: '1', pipeline: { name: 'gnmi-lint', schedule: { type: 'stream' }, source, sinks: [{ type: 'local', path: '/tmp' }] } }),
      { env: {} },
    ).diagnostics.map((d) => `${d.path}: ${d.message}`);

  it('defaults: port 57400, tls on, stream mode, 60 s polls, 5 s reconnect delay, infinite attempts, json, TARGET_DEFINED every 0 ns', () => {
    expect(checked({ type: 'gnmi', host: 'rtr1', subscriptions: [{ path: '/a' }] })).toEqual({
      type: 'gnmi',
      host: 'rtr1',
      port: 57400,
      tls: true,
      tls_skip_verify: false,
      subscription_mode: 'stream',
      poll_interval_seconds: 60,
      encoding: 'json',
      reconnect_delay_seconds: 5,
      max_reconnect_attempts: 0,
      subscriptions: [{ path: '/a', mode: 'TARGET_DEFINED', sample_interval: 0 }],
    });
  });

  it('host and subscriptions are required; a bad path, a password without username, TLS options without tls, tls_skip_verify with tls_ca are refused with their path', () => {
    expect(diag({ type: 'gnmi' }).sort()).toEqual(['pipeline.source.host: is required', 'pipeline.source.subscriptions: is required']);
    expect(diag({ type: 'gnmi', host: 'r', subscriptions: [] })).toEqual([expect.stringMatching(/^pipeline\.source\.subscriptions: /)]);
    expect(
      diag({ type: 'gnmi', host: 'r', subscriptions: [{ path: '/a' }, { path: '/b[k=v' }], password: 'p1234', tls: false, tls_ca: '/x.pem' }).sort(),
    ).toEqual([
      'pipeline.source.password: password needs a username',
      expect.stringMatching(/^pipeline\.source\.subscriptions\[1\]\.path: invalid gNMI path '\/b\[k=v': '\[' without its closing '\]'/),
      'pipeline.source.tls_ca: tls_ca is used only with tls: true',
    ]);
    expect(diag({ type: 'gnmi', host: 'r', subscriptions: [{ path: '/a' }], tls: false, tls_server_name: 'x', tls_skip_verify: true }).sort()).toEqual([
      'pipeline.source.tls_server_name: tls_server_name is used only with tls: true',
      'pipeline.source.tls_skip_verify: tls_skip_verify is used only with tls: true',
    ]);
    expect(diag({ type: 'gnmi', host: 'r', subscriptions: [{ path: '/a' }], tls_ca: '/ca.pem', tls_skip_verify: true })).toEqual([
      expect.stringMatching(/^pipeline\.source\.tls_skip_verify: tls_skip_verify checks nothing/),
    ]);
    expect(diag({ type: 'gnmi', host: 'r', subscriptions: [{ path: '/a', mode: 'sample' }] })[0]).toMatch(/^pipeline\.source\.subscriptions\[0\]\.mode: /);
  });
});
