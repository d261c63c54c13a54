// The corba source against omniORB (a private omniNames and the C++ test servant of
// peers/corba-servant, built once per machine): the conformance suite, then what it does not cover:
// addressing by IOR, corbaloc and NameService name (nested, with kinds); every argument and result
// type through the servant's echo; records from a sequence of structs, a struct, a scalar, void and
// json strings; 64-bit values beyond 2^53 kept exact; user and system exceptions named with their
// repository id and minor code; a reply that does not match returns; LOCATION_FORWARD followed and a
// forwarding loop cut after 5 hops; a name that is not bound; the timeout against a server that
// never answers; a stop during a call; a wrong port; a peer answering CloseConnection, MessageError
// or not GIOP at all; test()'s LocateRequest; skip_processed with its dedupe window, the key
// remembered only after delivery (and for a void call); and config lint (exclusive fields, types,
// values, references).
import type { CdrWriter } from '../../src/plugins/connectors/corba/cdr.js';
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadComponent, loadPipelineText } from '../../src/config/load.js';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { dedupeKey } from '../../src/plugins/connectors/corba/source.js';
import { conformance, uniqueChannel, type Cfg } from './conformance.js';
import { manualReadRun } from './helpers.js';
import { OBJECT_NAME, omniOrbFixture, startOmniOrb, takeConfig, type OmniOrb } from './peers/omniorb.js';
import { elapse, until } from '../helpers/wait.js';

conformance(omniOrbFixture);

let orb: OmniOrb;
beforeAll(async () => {
  orb = await startOmniOrb();
}, 120_000);
afterAll(async () => {
  await orb?.stop();
});

const byName = (extra: Cfg): Cfg => ({ type: 'corba', naming_service: orb.nameService, object_name: OBJECT_NAME, timeout_seconds: 10, ...extra });
const read = (name: string, source: Cfg, processed = new MemoryProcessedFiles()) => manualReadRun(name, source, { processed });

/** corbaloc of the servant's object: its object key %-escaped byte by byte. */
const corbalocOf = (o: OmniOrb) =>
  `corbaloc:iiop:1.2@127.0.0.1:${o.servantPort}/${[...o.pm.profiles[0]!.key].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')}`;

const ECHO_TYPE = {
  struct: {
    flag: 'boolean',
    o: 'octet',
    c: 'char',
    s: 'short',
    us: 'unsigned short',
    l: 'long',
    ul: 'ulong',
    ll: 'long long',
    ull: 'ulonglong',
    f: 'float',
    d: 'double',
    str: 'string',
    level: { enum: ['LOW', 'MEDIUM', 'HIGH'] },
    longs: { sequence: 'long' },
  },
};
const SAMPLE = {
  flag: true,
  o: 255,
  c: 'z',
  s: -32768,
  us: 65535,
  l: -2147483648,
  ul: 4294967295,
  ll: '-9223372036854775808',
  ull: '18446744073709551615',
  f: 1.5,
  d: Math.PI,
  str: 'héllo wörld ✓',
  level: 'HIGH',
  longs: [1, -2, 3],
};

/** A TCP server that accepts connections and never answers (for the timeout). */
async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets: Socket[] = [];
  const srv: Server = createServer((s) => sockets.push(s));
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  return {
    port: (srv.address() as { port: number }).port,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => srv.close(r));
    },
  };
}

function checked(cfg: Cfg) {
  const r = loadComponent('source', cfg, { env: {} });
  if (!r.config) throw new Error(r.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
  return r.config;
}

/** The diagnostics of a manual pipeline around `source`, as "path: message". */
function diagnostics(source: Cfg): string[] {
  const r = loadPipelineText(
    stringify({ version: '1', pipeline: { name: 'lint', schedule: { type: 'manual' }, source, sinks: [{ type: 'local', path: '/tmp' }] } }),
    { env: {} },
  );
  return r.diagnostics.map((d) => `${d.path}: ${d.message}`);
}

describe('corba source against omniORB', () => {
  it('reads a sequence of structs as one record per element, 64-bit values beyond 2^53 as exact strings', async () => {
    const { rec, records } = await read(
      'corba-counters',
      byName({
        operation: 'counters',
        args: [
          { type: 'string', value: 'ne42' },
          { type: 'long', value: 4 },
        ],
        returns: { sequence: { struct: { name: 'string', value: 'longlong' } } },
      }),
    );
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(records()).toEqual([
      { name: 'ne42.c0', value: 0 },
      { name: 'ne42.c1', value: 1000 },
      { name: 'ne42.c2', value: '9007199254742992' },
      { name: 'ne42.c3', value: '9007199254743992' },
    ]);
  });

  it('addresses the object by IOR: a string result is one record {result}', async () => {
    const { rec, records } = await read('corba-ior', { type: 'corba', ior: orb.pmIor, operation: 'version', returns: 'string' });
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(records()).toEqual([{ result: 'svc-test-servant 1.0 (omniORB)' }]);
  });

  it('addresses the object by corbaloc (version, %-escaped key): a long result', async () => {
    const { rec, records } = await read('corba-corbaloc', {
      type: 'corba',
      ior: corbalocOf(orb),
      operation: 'add',
      args: [
        { type: 'long', value: 2 },
        { type: 'long', value: 40 },
      ],
      returns: 'long',
    });
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(records()).toEqual([{ result: 42 }]);
  });

  it('encodes and decodes every primitive, an enum and a sequence in a struct (echoed by the servant), UTF-8 strings both ways', async () => {
    const { rec, records } = await read('corba-echo', byName({ operation: 'echo', args: [{ type: ECHO_TYPE, value: SAMPLE }], returns: ECHO_TYPE }));
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(records()).toEqual([SAMPLE]);
  });

  it('big-endian requests are understood by omniORB too (the client in either byte order)', async () => {
    const { CorbaClient } = await import('../../src/plugins/connectors/corba/client.js');
    const { decodeValue, encodeValue, parseType } = await import('../../src/plugins/connectors/corba/cdr.js');
    const t = parseType(ECHO_TYPE);
    for (const le of [false, true]) {
      const client = new CorbaClient(le);
      try {
        const { result } = await client.invoke(orb.pm, 'echo', (w: CdrWriter) => encodeValue(w, t, SAMPLE), { timeoutMs: 10_000 });
        expect(decodeValue(result, t)).toEqual(SAMPLE);
      } finally {
        client.close();
      }
    }
  });

  it('a void operation yields no records and says so in a note', async () => {
    const ch = uniqueChannel('corba');
    const { rec, records } = await read(
      'corba-void',
      byName({
        operation: 'put',
        args: [
          { type: 'string', value: ch },
          { type: 'string', value: '{"seq":1}' },
        ],
      }),
    );
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(records()).toEqual([]);
    expect(rec.errors.join('\n')).toContain("'put' returns void");
    const again = await read('corba-void-take', takeConfig(orb, ch));
    expect(again.records()).toEqual([{ seq: 1 }]);
  });

  it('a json element that is not JSON is a record error, the others pass', async () => {
    const ch = uniqueChannel('corba');
    await orb.put(ch, ['{"seq":0}', 'not json', '{"seq":2}']);
    const { rec, records } = await read('corba-badjson', takeConfig(orb, ch));
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(records()).toEqual([{ seq: 0 }, { seq: 2 }]);
    expect(rec.records_skipped).toBe(1);
  });

  it('a user exception fails the run naming its repository id', async () => {
    const { rec } = await read('corba-user-exc', byName({ operation: 'fail' }));
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(/^corba: 'fail' raised the user exception IDL:Svc\/Refused:1\.0 at 127\.0\.0\.1:\d+/);
  });

  it('a system exception fails the run naming its repository id, minor code and what to check', async () => {
    const { rec } = await read('corba-sys-exc', byName({ operation: 'no_such_operation' }));
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(
      /'no_such_operation' raised the system exception IDL:omg\.org\/CORBA\/BAD_OPERATION:1\.0 \(minor code 0x[0-9a-f]{8}, completed NO\)/,
    );
    expect(rec.error).toContain('check operation');
  });

  it('a reply that does not match returns fails clearly', async () => {
    const { rec } = await read('corba-mismatch', byName({ operation: 'version', returns: { sequence: { struct: { a: 'double', b: 'double' } } } }));
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(/does not decode as returns .*check returns against the IDL/);
  });

  it('follows LOCATION_FORWARD (a name bound to a forwarding object, and its IOR)', async () => {
    const named = await read(
      'corba-fwd-name',
      byName({
        object_name: 'forward.test',
        operation: 'add',
        args: [
          { type: 'long', value: 1 },
          { type: 'long', value: 2 },
        ],
        returns: 'long',
      }),
    );
    expect(named.rec.status, JSON.stringify(named.rec)).toBe('success');
    expect(named.records()).toEqual([{ result: 3 }]);
    const byIor = await read('corba-fwd-ior', { type: 'corba', ior: orb.forwardIor, operation: 'version', returns: 'string' });
    expect(byIor.records()).toEqual([{ result: 'svc-test-servant 1.0 (omniORB)' }]);
    // The forward is to the servant's port, as the unit's meta says.
    expect(orb.forwardIor).not.toBe(orb.pmIor);
  });

  it('stops following LOCATION_FORWARD after 5 hops (an object that forwards to itself)', async () => {
    const { rec } = await read('corba-fwd-loop', byName({ object_name: 'loop.test', operation: 'version', returns: 'string' }));
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(/'version' was forwarded more than 5 times .*a forwarding loop\?/);
  });

  it('a name that is not bound fails with the NotFound reason', async () => {
    const { rec } = await read('corba-notfound', byName({ object_name: 'svc.test/missing.object', operation: 'version', returns: 'string' }));
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(
      /'svc\.test\/missing\.object' is not bound in the naming service at 127\.0\.0\.1:\d+ \(NotFound: missing_node at 'missing\.object'\): check object_name/,
    );
    const t = await testConnector('source', checked(byName({ object_name: 'nope', operation: 'version' })));
    expect(t.ok).toBe(false);
    expect(t.error).toContain("'nope' is not bound");
  });

  it('timeout_seconds bounds a call to a server that never answers', async () => {
    const silent = await silentServer();
    try {
      const started = Date.now();
      const { rec } = await read('corba-timeout', {
        type: 'corba',
        ior: `corbaloc:iiop:127.0.0.1:${silent.port}/Obj`,
        operation: 'version',
        returns: 'string',
        timeout_seconds: 1,
      });
      expect(rec.status).toBe('failed');
      expect(rec.error).toMatch(/no reply within timeout_seconds \(1 s\)/);
      expect(Date.now() - started).toBeLessThan(5000);
      const t = await testConnector(
        'source',
        checked({
          type: 'corba',
          naming_service: `corbaloc:iiop:127.0.0.1:${silent.port}/NameService`,
          object_name: 'x',
          operation: 'version',
          timeout_seconds: 1,
        }),
      );
      expect(t.ok).toBe(false);
      expect(t.error).toMatch(/^corba: .*no reply within timeout_seconds \(1 s\)/);
    } finally {
      await silent.close();
    }
  });

  it('a port where nothing listens fails the run with the address; test() says so too', async () => {
    const { rec } = await read('corba-refused', { type: 'corba', ior: 'corbaloc:iiop:127.0.0.1:1/Obj', operation: 'version', returns: 'string' });
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(/^corba: cannot connect to 127\.0\.0\.1:1: .*ECONNREFUSED/);
  });

  it('test() checks the object with a LocateRequest: an unknown object key fails, the real one passes', async () => {
    const ok = await testConnector('source', checked({ type: 'corba', ior: corbalocOf(orb), operation: 'version' }));
    expect(ok, JSON.stringify(ok)).toMatchObject({ ok: true });
    const bad = await testConnector('source', checked({ type: 'corba', ior: `corbaloc:iiop:127.0.0.1:${orb.servantPort}/NoSuchKey`, operation: 'version' }));
    expect(bad.ok).toBe(false);
    expect(bad.error).toMatch(/no object with this key at 127\.0\.0\.1:\d+ .*UNKNOWN_OBJECT/);
  });

  it('skip_processed: a second run in the same window invokes nothing and notes it; the next window invokes again', async () => {
    const ch = uniqueChannel('corba');
    const processed = new MemoryProcessedFiles();
    await orb.put(ch, ['{"seq":0}', '{"seq":1}']);
    // A 3-second window, started just after a boundary so the first two runs share it.
    const win = 3;
    await until(() => Math.floor(Date.now() / 1000) % win === 0 && Date.now() % 1000 <= 300, 2 * win * 1000, 'the start of a window');
    const cfg = { ...takeConfig(orb, ch), skip_processed: true, dedupe_window_seconds: win };
    const first = await read('corba-skip', cfg, processed);
    expect(first.records()).toEqual([{ seq: 0 }, { seq: 1 }]);
    await orb.put(ch, ['{"seq":2}']);
    const second = await read('corba-skip', cfg, processed);
    expect(second.rec.status).toBe('success');
    expect(second.records()).toEqual([]);
    expect(second.rec.errors.join('\n')).toMatch(/'take' with these args was already delivered in this 3-second window \(skip_processed\): not invoked again/);
    expect(await orb.takes(ch)).toBe(1);
    await elapse(win * 1000); // the next window
    const third = await read('corba-skip', cfg, processed);
    expect(third.records()).toEqual([{ seq: 2 }]);
    expect(await orb.takes(ch)).toBe(2);
  });

  it('skip_processed remembers the key only after delivery: a run whose sink fails leaves the next run to invoke again', async () => {
    const ch = uniqueChannel('corba');
    const processed = new MemoryProcessedFiles();
    await orb.put(ch, ['{"seq":0}']);
    const cfg: Cfg = { ...takeConfig(orb, ch), skip_processed: true, dedupe_window_seconds: 3600 };
    const { writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tempDir } = await import('../helpers/fs.js');
    const { loadPipeline } = await import('./helpers.js');
    const { runPipeline } = await import('../../src/engine/runner.js');
    const { silentLogger } = await import('../../src/observability/log.js');
    const blocker = join(tempDir('svc-corba-block-'), 'file');
    writeFileSync(blocker, 'not a directory');
    const failing = await runPipeline(
      loadPipeline({
        name: 'corba-undelivered',
        schedule: { type: 'manual' },
        source: cfg,
        serializer_in: { type: 'json' },
        serializer_out: { type: 'ndjson' },
        sinks: [{ type: 'local', path: join(blocker, 'sub'), filename_template: 'out.ndjson' }],
      }),
      { log: silentLogger, processed },
    );
    expect(failing.records_out, JSON.stringify(failing)).toBe(0);
    expect(failing.errors.join('\n')).toMatch(/127\.0\.0\.1:\d+\/take left in place: 1 records were not delivered/);
    expect(await processed.has(dedupeKey({ operation: 'take', args: cfg.args as never, dedupe_window_seconds: 3600 }, Date.now()))).toBe(false);
    const retry = await read('corba-undelivered', cfg, processed);
    expect(retry.rec.status).toBe('success');
    expect(await orb.takes(ch)).toBe(2);
    expect(await processed.has(dedupeKey({ operation: 'take', args: cfg.args as never, dedupe_window_seconds: 3600 }, Date.now()))).toBe(true);
  });

  it('skip_processed also remembers a call that returned no records (void)', async () => {
    const ch = uniqueChannel('corba');
    const processed = new MemoryProcessedFiles();
    const cfg = byName({
      operation: 'put',
      args: [
        { type: 'string', value: ch },
        { type: 'string', value: '{"seq":0}' },
      ],
      skip_processed: true,
      dedupe_window_seconds: 3600,
    });
    expect((await read('corba-skip-void', cfg, processed)).rec.status).toBe('success');
    const second = await read('corba-skip-void', cfg, processed);
    expect(second.rec.errors.join('\n')).toContain('not invoked again');
    expect((await read('corba-skip-void-take', takeConfig(orb, ch))).records()).toEqual([{ seq: 0 }]); // put ran once
  });

  it('a stop during a call ends the run at once, without waiting for timeout_seconds', async () => {
    const silent = await silentServer();
    try {
      const { runPipeline } = await import('../../src/engine/runner.js');
      const { silentLogger } = await import('../../src/observability/log.js');
      const { loadPipeline } = await import('./helpers.js');
      const { tempDir } = await import('../helpers/fs.js');
      const stop = new AbortController();
      const started = Date.now();
      const running = runPipeline(
        loadPipeline({
          name: 'corba-stop',
          schedule: { type: 'manual' },
          source: { type: 'corba', ior: `corbaloc:iiop:127.0.0.1:${silent.port}/Obj`, operation: 'version', returns: 'string', timeout_seconds: 30 },
          sinks: [{ type: 'local', path: tempDir('svc-corba-stop-') }],
        }),
        { log: silentLogger, processed: new MemoryProcessedFiles(), signal: stop.signal },
      );
      setTimeout(() => stop.abort(), 300);
      const rec = await running;
      expect(Date.now() - started).toBeLessThan(5000);
      expect(rec.records_in).toBe(0);
      expect(rec.error ?? '').not.toMatch(/timeout_seconds/);
    } finally {
      await silent.close();
    }
  });

  it('a server that answers CloseConnection, MessageError or something that is not GIOP fails the run saying so', async () => {
    const { encodeSimple, MSG } = await import('../../src/plugins/connectors/corba/giop.js');
    const answers: [Buffer, RegExp][] = [
      [encodeSimple(MSG.CloseConnection), /closed the connection \(GIOP CloseConnection\): the request was not processed/],
      [encodeSimple(MSG.MessageError, false), /answered MessageError: it could not parse our GIOP message/],
      [Buffer.from('HTTP/1.1 400 Bad Request\r\n\r\n'), /not a GIOP message \(starts with "HTTP"\): is this port an IIOP endpoint\?/],
    ];
    for (const [answer, expected] of answers) {
      const socks: Socket[] = [];
      const srv = createServer((sock) => {
        socks.push(sock);
        sock.once('data', () => sock.write(answer));
      });
      srv.listen(0, '127.0.0.1');
      await once(srv, 'listening');
      try {
        const port = (srv.address() as { port: number }).port;
        const { rec } = await read('corba-bad-peer', {
          type: 'corba',
          ior: `corbaloc:iiop:127.0.0.1:${port}/Obj`,
          operation: 'version',
          returns: 'string',
          timeout_seconds: 5,
        });
        expect(rec.status).toBe('failed');
        expect(rec.error).toMatch(expected);
      } finally {
        for (const k of socks) k.destroy();
        srv.close();
      }
    }
  });

  it('the dedupe key is the operation, the args and the window number', () => {
    const base = { operation: 'take', args: [{ type: 'string', value: 'a' }], dedupe_window_seconds: 300 };
    const t = 1_700_000_100_000; // 300 s windows: [1699999800, 1700000100) then [1700000100, 1700000400)
    expect(dedupeKey(base, t)).toBe(dedupeKey(base, t + 299_999));
    expect(dedupeKey(base, t)).not.toBe(dedupeKey(base, t + 300_000));
    expect(dedupeKey(base, t)).not.toBe(dedupeKey({ ...base, operation: 'other' }, t));
    expect(dedupeKey(base, t)).not.toBe(dedupeKey({ ...base, args: [{ type: 'string', value: 'b' }] }, t));
  });

  it('lint: ior and naming_service exclusive, one of them required, object_name with naming_service, types, values and references checked', () => {
    const base = { type: 'corba', operation: 'version' };
    expect(diagnostics({ ...base, ior: orb.pmIor, naming_service: orb.nameService, object_name: 'a' })).toEqual(
      expect.arrayContaining([expect.stringMatching(/^pipeline\.source\.naming_service: ior and naming_service are mutually exclusive/)]),
    );
    expect(diagnostics(base)).toEqual([expect.stringMatching(/^pipeline\.source\.ior: give the object/)]);
    expect(diagnostics({ ...base, naming_service: orb.nameService })).toEqual([
      expect.stringMatching(/^pipeline\.source\.object_name: naming_service needs object_name/),
    ]);
    expect(diagnostics({ ...base, ior: orb.pmIor, object_name: 'a' })).toEqual([
      expect.stringMatching(/^pipeline\.source\.object_name: object_name is resolved in naming_service/),
    ]);
    expect(diagnostics({ ...base, ior: 'IOR:zz' })).toEqual([
      expect.stringMatching(/^pipeline\.source\.ior: an IOR is "IOR:" followed by an even number of hex digits/),
    ]);
    expect(diagnostics({ ...base, ior: 'corbaloc:http:h:1/k' })).toEqual([expect.stringMatching(/^pipeline\.source\.ior: unsupported corbaloc address/)]);
    expect(diagnostics({ ...base, naming_service: orb.nameService, object_name: 'a/' })).toEqual([
      expect.stringMatching(/^pipeline\.source\.object_name: .*empty component/),
    ]);
    expect(diagnostics({ ...base, ior: orb.pmIor, args: [{ type: 'integer', value: 1 }] })).toEqual([
      expect.stringMatching(/^pipeline\.source\.args\[0\]\.type: unknown type 'integer'/),
    ]);
    expect(diagnostics({ ...base, ior: orb.pmIor, args: [{ type: 'ushort', value: 70000 }] })).toEqual([
      expect.stringMatching(/^pipeline\.source\.args\[0\]\.value: ushort needs an integer from 0 to 65535/),
    ]);
    expect(diagnostics({ ...base, ior: orb.pmIor, args: [{ type: { sequence: { struct: { a: 'long' } } }, value: [{ a: 1 }, { a: 'x' }] }] })).toEqual([
      expect.stringMatching(/^pipeline\.source\.args\[0\]\.value\[1\]\.a: long needs an integer/),
    ]);
    expect(diagnostics({ ...base, ior: orb.pmIor, returns: { sequence: { struct: { a: 'longer' } } } })).toEqual([
      expect.stringMatching(/^pipeline\.source\.returns\.sequence\.struct\.a: unknown type 'longer'/),
    ]);
    expect(diagnostics({ ...base, ior: orb.pmIor, args: [{ type: 'longlong', value: '9223372036854775808' }] })).toEqual([
      expect.stringMatching(/out of range for longlong/),
    ]);
  });
});
