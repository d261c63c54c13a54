// The syslog source: the shared conformance suite over UDP and over TCP (octet-counted), then what
// it does not cover, against the real senders: util-linux `logger` (RFC 5424 and RFC 3164, UDP,
// TCP LF-framed and octet-counted, structured data), Debian's rsyslogd forwarding octet-counted
// TCP (omfwd), raw sockets for the framing cases that Fluent Bit and Telegraf users hit (a frame
// split across writes, several frames in one write, a length prefix split in the middle),
// max_message_size, max_connections, encoding, unparsable messages, backpressure (TCP senders
// wait; UDP datagrams are dropped and counted), buffer_size, and test() on a port in use, an
// address not of this machine and a privileged port.
import { spawnSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { connect, type Socket } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { loadComponent } from '../../src/config/load.js';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline, type RunTelemetry } from '../../src/engine/runner.js';
import { silentLogger, type Logger } from '../../src/observability/log.js';
import syslogSource, { HIGH_WATER, type SyslogStats } from '../../src/plugins/connectors/syslog/source.js';
import type { ConnectionState, Source, SourceUnit } from '../../src/plugins/types.js';
import { tempDir } from '../helpers/fs.js';
import { checkSequence, conformance, type Cfg, type Rec } from './conformance.js';
import { loadPipeline, outputRecords, until } from './helpers.js';
import { bodyTransforms, freeSyslogPort, holdPort, logger, startRsyslog, syslogTcp, syslogUdp, type Rsyslog } from './peers/syslog.js';
import { elapse, pace, quiet } from '../helpers/wait.js';

conformance(syslogUdp);
conformance(syslogTcp);

/** A logger that keeps its lines (warnings are part of the contract: truncation, refusals, drops). */
function captureLog() {
  const lines: Rec[] = [];
  return { log: pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as Rec) }) as unknown as Logger, lines };
}

/** A stream pipeline from a syslog source on a free port into one NDJSON directory. */
async function streamRun(source: Cfg, opts: { transforms?: Cfg[]; log?: Logger; extra?: Cfg } = {}) {
  const port = (source.port as number | undefined) ?? (await freeSyslogPort());
  const out = tempDir('svc-syslog-out-');
  const states: ConnectionState[] = [];
  const telemetry: RunTelemetry = { connection: (component, _t, s) => void (component === 'source' && states.push(s)) };
  const stop = new AbortController();
  const cfg = loadPipeline({
    name: 'syslog-test',
    schedule: { type: 'stream' },
    source: { type: 'syslog', host: '127.0.0.1', ...source, port },
    serializer_in: { type: 'json' },
    ...(opts.transforms ? { transforms: opts.transforms } : {}),
    serializer_out: { type: 'ndjson' },
    sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
    ...opts.extra,
  });
  const done = runPipeline(cfg, { signal: stop.signal, telemetry, log: opts.log ?? silentLogger, processed: new MemoryProcessedFiles() });
  await until(() => states.includes('connected') || states.includes('disconnected'), 15_000, 'the source listening');
  return {
    port,
    out,
    states,
    done,
    records: () => outputRecords(out),
    async end() {
      stop.abort();
      return done;
    },
  };
}

type Run = Awaited<ReturnType<typeof streamRun>>;
const runs: Run[] = [];
const peers: Rsyslog[] = [];
afterEach(async () => {
  for (const r of runs.splice(0)) await r.end();
  for (const p of peers.splice(0)) await p.stop();
});
async function started(source: Cfg, opts: Parameters<typeof streamRun>[1] = {}) {
  const r = await streamRun(source, opts);
  runs.push(r);
  return r;
}

/** A TCP connection to the source; write() resolves once the bytes left (and waits `gapMs` so each write is its own read). */
async function tcpClient(port: number) {
  const s: Socket = connect({ host: '127.0.0.1', port, noDelay: true });
  await new Promise<void>((r, j) => s.once('connect', () => r()).once('error', j));
  return {
    socket: s,
    async write(data: string | Buffer, gapMs = 60) {
      await new Promise<void>((r) => s.write(data, () => r()));
      await pace(gapMs);
    },
    end: () => new Promise<void>((r) => s.end(() => r())),
  };
}

async function udpSend(port: number, datagrams: (string | Buffer)[]) {
  const s = createSocket('udp4');
  for (const d of datagrams) await new Promise<void>((r, j) => s.send(d, port, '127.0.0.1', (e) => (e ? j(e) : r())));
  await new Promise<void>((r) => s.close(() => r()));
}

const oc = (m: string | Buffer) => Buffer.concat([Buffer.from(`${Buffer.byteLength(m)} `), Buffer.from(m)]);
const msg5424 = (i: number, text = `event ${i}`) =>
  `<165>1 2026-11-26T10:00:${String(i % 60).padStart(2, '0')}.123Z rtr${i} app 42 ID${i} [meta@32473 seq="${i}"] ${text}`;

describe('syslog: records from util-linux logger', () => {
  it('RFC 5424 over UDP: every field, structured data as {sd-id: {param: value}}, peer and protocol', async () => {
    const run = await started({ protocol: 'udp' });
    await logger(run.port, ['hello from logger'], {
      protocol: 'udp',
      tag: 'myapp',
      extra: [
        '-p',
        'local3.warning',
        '--id=4711',
        '--msgid',
        'LINKDOWN',
        '--sd-id',
        'origin@32473',
        '--sd-param',
        'ip="192.0.2.1"',
        '--sd-param',
        'software="svc \\"test\\""',
      ],
    });
    await until(() => run.records().length >= 1, 10_000, 'one record');
    const [r] = run.records();
    expect(r).toMatchObject({
      facility: 19,
      facility_name: 'local3',
      severity: 4,
      severity_name: 'warning',
      format: 'rfc5424',
      app_name: 'myapp',
      procid: '4711',
      msgid: 'LINKDOWN',
      message: 'hello from logger',
      protocol: 'udp',
    });
    expect(r!.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+[+-]\d\d:\d\d$/);
    expect(r!.hostname).toBeTruthy();
    expect(r!.peer).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(r!.structured_data).toMatchObject({ 'origin@32473': { ip: '192.0.2.1', software: 'svc "test"' } });
    expect(r).not.toHaveProperty('parse_error');
  });

  it("RFC 3164 over UDP: hostname, tag, pid, and the timestamp with the receiver's year and zone", async () => {
    const run = await started({ protocol: 'udp' });
    await logger(run.port, ['old style'], { protocol: 'udp', format: 'rfc3164', tag: 'bsdapp', extra: ['-p', 'auth.err', '--id=99'] });
    await until(() => run.records().length >= 1, 10_000, 'one record');
    const [r] = run.records();
    expect(r).toMatchObject({
      facility: 4,
      facility_name: 'auth',
      severity: 3,
      severity_name: 'err',
      format: 'rfc3164',
      app_name: 'bsdapp',
      procid: '99',
      msgid: null,
      structured_data: null,
      message: 'old style',
      protocol: 'udp',
    });
    expect(r!.hostname).toBeTruthy();
    expect(r!.timestamp).toMatch(new RegExp(`^${new Date().getFullYear()}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d[+-]\\d\\d:\\d\\d$`));
  });

  for (const octetCount of [false, true]) {
    it(`TCP with ${octetCount ? 'octet counting' : 'LF framing'} (logger --tcp${octetCount ? ' --octet-count' : ''}): 500 messages, in order, none lost`, async () => {
      const run = await started({ protocol: 'tcp' }, { transforms: bodyTransforms });
      const bodies = Array.from({ length: 500 }, (_, seq) => JSON.stringify({ seq, text: `line ${seq} with spaces` }));
      await logger(run.port, bodies, { protocol: 'tcp', octetCount });
      await until(() => run.records().length >= 500, 15_000, '500 records');
      const recs = run.records();
      expect(checkSequence(recs, 500)).toEqual({ missing: [], duplicates: 0 });
      expect(recs.map((r) => r.seq)).toEqual(recs.map((_, i) => i));
      expect(recs[0]).toMatchObject({ format: 'rfc5424', app_name: 'conf', protocol: 'tcp', text: 'line 0 with spaces' });
    });
  }
});

describe('syslog: rsyslogd forwarding to us (omfwd, TCP, octet-counted)', () => {
  it('logger -> rsyslogd imtcp -> omfwd octet-counted -> syslog source: every message, fields intact', async () => {
    const run = await started({ protocol: 'tcp' }, { transforms: bodyTransforms });
    const rs = await startRsyslog(run.port);
    peers.push(rs);
    const bodies = Array.from({ length: 200 }, (_, seq) => JSON.stringify({ seq, note: 'via rsyslog' }));
    await logger(rs.inPort, bodies, { protocol: 'tcp', tag: 'relayed', extra: ['-p', 'daemon.notice', '--msgid', 'FWD'] });
    await until(() => checkSequence(run.records(), 200).missing.length === 0, 20_000, '200 records through rsyslogd');
    const recs = run.records();
    expect(checkSequence(recs, 200)).toEqual({ missing: [], duplicates: 0 });
    expect(recs[0]).toMatchObject({
      format: 'rfc5424',
      facility_name: 'daemon',
      severity_name: 'notice',
      app_name: 'relayed',
      msgid: 'FWD',
      note: 'via rsyslog',
      protocol: 'tcp',
    });
    expect(recs.every((r) => !('parse_error' in r))).toBe(true);
  });

  it('rsyslogd with traditional (LF) framing is read as well', async () => {
    const run = await started({ protocol: 'tcp' }, { transforms: bodyTransforms });
    const rs = await startRsyslog(run.port, { framing: 'traditional' });
    peers.push(rs);
    await logger(
      rs.inPort,
      Array.from({ length: 50 }, (_, seq) => JSON.stringify({ seq })),
      { protocol: 'tcp' },
    );
    await until(() => checkSequence(run.records(), 50).missing.length === 0, 20_000, '50 records through rsyslogd');
    expect(checkSequence(run.records(), 50)).toEqual({ missing: [], duplicates: 0 });
  });
});

describe('syslog: how records reach the pipeline', () => {
  it('serializer_in json takes the parsed records as they are; another serializer_in gets their JSON; bytes_in counts the bytes received', async () => {
    const datagrams = [msg5424(1), msg5424(2, 'caf\u00e9 ünïcode'), 'not syslog at all'];
    const results = [];
    for (const serializer of ['json', 'ndjson']) {
      const run = await streamRun({ protocol: 'udp' }, { extra: { serializer_in: { type: serializer } } });
      await udpSend(run.port, datagrams);
      await until(() => run.records().length >= 3, 10_000, 'three records');
      const rec = await run.end();
      results.push({ records: run.records().map(({ peer: _peer, ...r }) => r), rec });
    }
    const [direct, viaJson] = results;
    expect(direct!.records).toEqual(viaJson!.records);
    expect(direct!.records.map((r) => r.message)).toEqual(['event 1', 'caf\u00e9 ünïcode', 'not syslog at all']);
    expect(direct!.rec).toMatchObject({ status: 'success', records_in: 3, records_out: 3 });
    // Received bytes (the datagrams), not the size of some JSON form of the records.
    expect(direct!.rec.bytes_in).toBe(datagrams.reduce((n, d) => n + Buffer.byteLength(d), 0));
    expect(viaJson!.rec.records_in).toBe(3);
  });
});

describe('syslog: TCP framing across reads (fluent/fluent-bit#10910, #8455, influxdata/telegraf#17155)', () => {
  it('an octet-counted frame split across writes, several frames in one write, a length prefix split in the middle', async () => {
    const run = await started({ protocol: 'tcp' });
    const c = await tcpClient(run.port);
    const long = msg5424(0, 'x'.repeat(3000));
    const f0 = oc(long); // "30xx <165>1 ..."
    // 1. A frame split across three writes (inside the message).
    await c.write(f0.subarray(0, 100));
    await c.write(f0.subarray(100, 2000));
    await c.write(f0.subarray(2000));
    // 2. Several frames in one write.
    await c.write(Buffer.concat([oc(msg5424(1)), oc(msg5424(2)), oc(msg5424(3))]));
    // 3. The length prefix split in the middle ("1" | "00 <165>..."), then the end of one frame and a whole one in one write.
    const f4 = oc(msg5424(4, 'y'.repeat(40)));
    expect(f4.toString('latin1', 0, 4)).toMatch(/^\d{3} $/);
    await c.write(f4.subarray(0, 1));
    await c.write(f4.subarray(1, 2));
    await c.write(f4.subarray(2, 50));
    await c.write(Buffer.concat([f4.subarray(50), oc(msg5424(5))]));
    // 4. A frame split right after its prefix's space.
    const f6 = oc(msg5424(6));
    const sp = f6.indexOf(32);
    await c.write(f6.subarray(0, sp + 1));
    await c.write(f6.subarray(sp + 1));
    await c.end();
    await until(() => run.records().length >= 7, 10_000, '7 records');
    const recs = run.records();
    expect(recs.map((r) => r.hostname)).toEqual(['rtr0', 'rtr1', 'rtr2', 'rtr3', 'rtr4', 'rtr5', 'rtr6']);
    expect(recs[0]!.message).toBe('x'.repeat(3000));
    expect(recs[4]!.message).toBe('y'.repeat(40));
    expect(recs.every((r) => r.format === 'rfc5424' && !('parse_error' in r))).toBe(true);
    expect(recs[1]!.structured_data).toEqual({ 'meta@32473': { seq: '1' } });
  });

  it('LF framing: a message split across writes, several in one write, CRLF; the last one without LF is handed on at close', async () => {
    const run = await started({ protocol: 'tcp' });
    const c = await tcpClient(run.port);
    const m0 = msg5424(0);
    await c.write(m0.slice(0, 7));
    await c.write(m0.slice(7) + '\n' + msg5424(1) + '\r\n' + msg5424(2).slice(0, 30));
    await c.write(msg5424(2).slice(30) + '\n');
    await c.write(msg5424(3)); // no LF: the sender closes after it
    await c.end();
    await until(() => run.records().length >= 4, 10_000, '4 records');
    expect(run.records().map((r) => r.hostname)).toEqual(['rtr0', 'rtr1', 'rtr2', 'rtr3']);
    expect(run.records().map((r) => r.message)).toEqual(['event 0', 'event 1', 'event 2', 'event 3']);
  });

  it('each connection detects its own framing: an octet-counted and an LF-framed sender at once', async () => {
    const run = await started({ protocol: 'tcp' });
    const a = await tcpClient(run.port);
    const b = await tcpClient(run.port);
    await a.write(oc(msg5424(1)), 0);
    await b.write(msg5424(2) + '\n', 0);
    await a.write(oc(msg5424(3)), 0);
    await b.write(msg5424(4) + '\n', 0);
    await Promise.all([a.end(), b.end()]);
    await until(() => run.records().length >= 4, 10_000, '4 records');
    expect(
      run
        .records()
        .map((r) => r.hostname)
        .sort(),
    ).toEqual(['rtr1', 'rtr2', 'rtr3', 'rtr4']);
  });
});

describe('syslog: limits, encoding and what cannot be parsed', () => {
  it('max_message_size: an oversized TCP message is truncated and logged; the next frame is intact', async () => {
    const cap = captureLog();
    const run = await started({ protocol: 'tcp', max_message_size: 200 }, { log: cap.log });
    const c = await tcpClient(run.port);
    const big = msg5424(0, 'z'.repeat(1000));
    await c.write(Buffer.concat([oc(big), oc(msg5424(1))]));
    await c.write(msg5424(2, 'w'.repeat(500)).slice(0, 100), 0); // not reached: the connection stays octet-counted
    await c.end();
    await until(() => run.records().length >= 2, 10_000, '2 records');
    const [first, second] = run.records();
    // Cut at 200 bytes: the header survives, the message keeps its first bytes.
    expect(first).toMatchObject({ hostname: 'rtr0', format: 'rfc5424' });
    expect(first!.message).toBe('z'.repeat(200 - big.indexOf('zzz')));
    expect(second).toMatchObject({ hostname: 'rtr1', message: 'event 1' });
    await until(() => cap.lines.some((l) => /truncated/.test(String(l.msg))), 12_000, 'the truncation warning');
    const w = cap.lines.find((l) => /truncated/.test(String(l.msg)))!;
    expect(w).toMatchObject({ level: 40, max_message_size: 200 });
    expect(String(w.msg)).toContain('max_message_size (200 bytes)');
  });

  it('max_message_size applies to UDP datagrams too', async () => {
    const run = await started({ protocol: 'udp', max_message_size: 100 });
    await udpSend(run.port, [msg5424(7, 'q'.repeat(500))]);
    await until(() => run.records().length >= 1, 10_000, 'one record');
    expect(Buffer.byteLength(JSON.stringify(run.records()[0]!.message))).toBeLessThan(100);
    expect(run.records()[0]).toMatchObject({ hostname: 'rtr7' });
  });

  it('max_connections: the connections above it are refused and logged; the others deliver', async () => {
    const cap = captureLog();
    const run = await started({ protocol: 'tcp', max_connections: 2 }, { log: cap.log });
    const a = await tcpClient(run.port);
    const b = await tcpClient(run.port);
    await pace(100); // the source accepts both before the third comes
    const c = connect({ host: '127.0.0.1', port: run.port });
    const closed = await new Promise<string>((resolve) => {
      c.on('error', (e) => resolve(`error ${(e as NodeJS.ErrnoException).code}`));
      c.on('close', () => resolve('closed'));
      c.on('data', () => {});
    });
    expect(closed).toMatch(/closed|ECONNRESET|EPIPE/);
    await a.write(msg5424(1) + '\n', 0);
    await b.write(msg5424(2) + '\n', 0);
    await Promise.all([a.end(), b.end()]);
    await until(() => run.records().length >= 2, 10_000, '2 records');
    await until(() => cap.lines.some((l) => /refused: max_connections \(2\)/.test(String(l.msg))), 12_000, 'the refusal warning');
    // A slot frees when a connection closes.
    await elapse(100); // the source sees the two closes
    const d = await tcpClient(run.port);
    await d.write(msg5424(3) + '\n', 0);
    await d.end();
    await until(() => run.records().length >= 3, 10_000, '3 records');
  });

  it('encoding: latin1 bytes decoded as Latin-1; UTF-8 by default', async () => {
    const run = await started({ protocol: 'udp', encoding: 'latin1' });
    await udpSend(run.port, [Buffer.concat([Buffer.from('<13>1 - host app - - - caf'), Buffer.from([0xe9])])]);
    await until(() => run.records().length >= 1, 10_000, 'one record');
    expect(run.records()[0]!.message).toBe('café');
    const utf = await started({ protocol: 'udp' });
    await udpSend(utf.port, [Buffer.from('<13>1 - host app - - - café ✓')]);
    await until(() => utf.records().length >= 1, 10_000, 'one record');
    expect(utf.records()[0]!.message).toBe('café ✓');
  });

  it('an unknown encoding is a config error at its path', () => {
    const r = loadComponent('source', { type: 'syslog', encoding: 'klingon-8' }, { env: {} });
    expect(r.config).toBeUndefined();
    expect(r.diagnostics.map((d) => formatDiagnostic(d)).join('\n')).toMatch(/encoding.*unknown encoding 'klingon-8'/);
  });

  it('an unparsable message is kept raw with parse_error, never lost (UDP and TCP)', async () => {
    const udp = await started({ protocol: 'udp' });
    await udpSend(udp.port, ['this is not syslog', '<999>nor this', msg5424(1)]);
    await until(() => udp.records().length >= 3, 10_000, '3 records');
    const [a, b, c] = udp.records();
    expect(a).toMatchObject({ message: 'this is not syslog', facility: null, format: null, protocol: 'udp' });
    expect(a!.parse_error).toMatch(/no <PRI>/);
    expect(b).toMatchObject({ message: '<999>nor this' });
    expect(b!.parse_error).toMatch(/PRI/);
    expect(c).toMatchObject({ hostname: 'rtr1' });
    const tcp = await started({ protocol: 'tcp' });
    const cl = await tcpClient(tcp.port);
    await cl.write('<34>1 not-a-time host app - - - text\n', 0);
    await cl.end();
    await until(() => tcp.records().length >= 1, 10_000, 'one record');
    expect(tcp.records()[0]).toMatchObject({ message: '<34>1 not-a-time host app - - - text', facility: 4, severity: 2, format: null });
    expect(tcp.records()[0]!.parse_error).toMatch(/not RFC 3339/);
  });
});

/** The source driven directly (no pipeline): units are taken only when the test says so. */
function directSource(cfg: Cfg, opts: { log?: Logger; dropped?: (reason: string, n: number) => void } = {}) {
  const checked = loadComponent('source', { type: 'syslog', host: '127.0.0.1', ...cfg }, { env: {} });
  if (!checked.config) throw new Error(checked.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
  const ac = new AbortController();
  const states: ConnectionState[] = [];
  const telemetry = { connection: (s: ConnectionState) => void states.push(s), dropped: opts.dropped };
  const source = syslogSource.create(checked.config as never, {
    pipeline: 'direct',
    log: opts.log ?? silentLogger,
    signal: ac.signal,
    processed: new MemoryProcessedFiles(),
    skipProcessed: false,
    telemetry,
  }) as Source & { stats: SyslogStats };
  const it = source.units(ac.signal)[Symbol.asyncIterator]();
  /** Reads units until `n` messages were taken (their bodies counted, not parsed). */
  const take = async (n: number) => {
    let got = 0;
    const units: SourceUnit[] = [];
    while (got < n) {
      const r = await it.next();
      if (r.done) break;
      for await (const _ of r.value.read()) got++;
      units.push(r.value);
      await r.value.done?.(true);
    }
    return got;
  };
  return {
    stats: source.stats,
    states,
    take,
    /** Starts the session: the first next() connects; resolves once listening. */
    async listen() {
      const first = it.next();
      await until(() => states.includes('connected'), 10_000, 'listening');
      return first;
    },
    async stop() {
      ac.abort();
      await source.close?.();
    },
  };
}

describe('syslog: backpressure', () => {
  it('TCP: above the high-water mark the connections stop being read, the sender waits, and nothing is lost', { timeout: 120_000 }, async () => {
    const port = await freeSyslogPort();
    const src = directSource({ protocol: 'tcp', port });
    const pending = src.listen(); // the first unit, not taken yet
    const c = await tcpClient(port);
    const total = 150_000;
    const line = (i: number) => oc(msg5424(i, 'p'.repeat(100)));
    let written = 0;
    let blocked = false;
    // Write until the socket refuses more (the kernel buffers on both sides are full).
    const writer = (async () => {
      for (let i = 0; i < total; i++) {
        if (!c.socket.write(line(i))) {
          blocked = true;
          await new Promise((r) => c.socket.once('drain', r));
        }
        written++;
      }
      await c.end();
    })();
    // The source took messages up to its high-water mark and stopped reading.
    await until(() => src.stats.received >= HIGH_WATER, 30_000, 'the high-water mark');
    await elapse(1000); // what was in flight is read
    const atPause = src.stats.received;
    await quiet(1000);
    expect(src.stats.received).toBe(atPause); // not reading while the queue is full
    expect(atPause).toBeLessThan(total);
    expect(blocked).toBe(true);
    expect(written).toBeLessThan(total); // the sender waits
    // The pipeline catches up: everything arrives.
    const first = await pending;
    let got = 0;
    if (!first.done) {
      for await (const _ of first.value.read()) got++;
      await first.value.done?.(true);
    }
    got += await src.take(total - got);
    await writer;
    expect(got).toBe(total);
    expect(src.stats.dropped).toBe(0);
    await src.stop();
  });

  it('UDP: datagrams that arrive while the queue is full are dropped, counted (metric hook) and logged', { timeout: 60_000 }, async () => {
    const port = await freeSyslogPort();
    const cap = captureLog();
    let hooked = 0;
    const src = directSource(
      { protocol: 'udp', port, buffer_size: 4 * 1024 * 1024 },
      { log: cap.log, dropped: (reason, n) => void (reason === 'queue_full' && (hooked += n)) },
    );
    const pending = src.listen();
    const sent = HIGH_WATER + 5000;
    const s = createSocket('udp4');
    for (let i = 0; i < sent; i++) {
      await new Promise<void>((r) => s.send(msg5424(i), port, '127.0.0.1', () => r()));
      if (i % 50 === 0) await pace(1); // let the receiver read
    }
    s.close();
    // Settled: nothing more arrives (the kernel may drop some too when its buffer overflows: not ours to count).
    let seen = -1;
    while (src.stats.received + src.stats.dropped !== seen) {
      seen = src.stats.received + src.stats.dropped;
      await quiet(300);
    }
    expect(src.stats.received).toBeGreaterThanOrEqual(HIGH_WATER);
    expect(src.stats.received + src.stats.dropped).toBeLessThanOrEqual(sent);
    console.log(
      `[syslog] UDP backpressure: ${sent} sent, ${src.stats.received} queued, ${src.stats.dropped} dropped by the source, ${sent - src.stats.received - src.stats.dropped} by the kernel`,
    );
    expect(src.stats.dropped).toBeGreaterThan(0);
    expect(hooked).toBe(src.stats.dropped);
    await until(() => cap.lines.some((l) => /UDP datagram\(s\) dropped/.test(String(l.msg))), 12_000, 'the drop warning');
    // Draining resumes reception.
    const first = await pending;
    if (!first.done) {
      for await (const _ of first.value.read());
      await first.value.done?.(true);
    }
    await src.take(src.stats.received - 1000);
    const before = src.stats.received;
    await udpSend(port, [msg5424(1)]);
    await until(() => src.stats.received === before + 1, 5000, 'a datagram after draining');
    await src.stop();
  });
});

describe('syslog: buffer_size', () => {
  it('is the UDP receive buffer; a size above net.core.rmem_max is granted smaller, with a warning saying how to raise it', async () => {
    const cap = captureLog();
    const ok = directSource({ protocol: 'udp', port: await freeSyslogPort(), buffer_size: 262144 }, { log: cap.log });
    void ok.listen();
    await until(() => ok.states.includes('connected'), 10_000, 'listening');
    await ok.stop();
    expect(cap.lines.filter((l) => /receive buffer/.test(String(l.msg)))).toEqual([]);
    const big = directSource({ protocol: 'udp', port: await freeSyslogPort(), buffer_size: 1024 * 1024 * 1024 }, { log: cap.log });
    void big.listen();
    await until(() => big.states.includes('connected'), 10_000, 'listening');
    await big.stop();
    const w = cap.lines.find((l) => /receive buffer/.test(String(l.msg)));
    expect(w, 'a warning about the capped buffer').toBeDefined();
    expect(String(w!.msg)).toContain('net.core.rmem_max');
    expect(w!.granted as number).toBeLessThan(1024 * 1024 * 1024);
  });
});

describe('syslog: test()', () => {
  const check = (cfg: Cfg) => {
    const r = loadComponent('source', { type: 'syslog', ...cfg }, { env: {} });
    if (!r.config) throw new Error(r.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
    return testConnector('source', r.config, { timeoutMs: 5000 });
  };

  it('binds briefly and releases the port (UDP and TCP)', async () => {
    for (const protocol of ['udp', 'tcp']) {
      const port = await freeSyslogPort();
      expect(await check({ host: '127.0.0.1', port, protocol })).toMatchObject({ ok: true, error: null });
      // Released: the pipeline can bind it now.
      const run = await started({ port, protocol });
      expect(run.states).toContain('connected');
    }
  });

  it('a port in use: the error names protocol, host:port and what to do', async () => {
    const held = await holdPort();
    try {
      for (const protocol of ['udp', 'tcp']) {
        const r = await check({ host: '127.0.0.1', port: held.port, protocol });
        expect(r.ok).toBe(false);
        expect(r.error).toBe(
          `syslog: cannot listen on ${protocol} 127.0.0.1:${held.port}: the port is already in use (another syslog daemon such as rsyslogd, or another pipeline); stop it or choose another port`,
        );
      }
    } finally {
      await held.release();
    }
  });

  it('an address that is not of this machine', async () => {
    const r = await check({ host: '192.0.2.77', port: 5514, protocol: 'udp' });
    expect(r.ok).toBe(false);
    expect(r.error).toContain('192.0.2.77 is not an address of this machine');
  });

  const setpriv = spawnSync('setpriv', ['--version']).status === 0 && process.getuid?.() === 0;
  it.runIf(setpriv)('a privileged port without the privilege (run as nobody): says how to grant it or which port to use', () => {
    const script = `import('./src/plugins/connectors/syslog/source.ts').then((m) => m.default.test({ host: '127.0.0.1', port: 514, protocol: 'udp', buffer_size: 65535, encoding: 'utf-8', max_message_size: 65535, max_connections: 64, reconnect_delay_seconds: 5, max_reconnect_attempts: 0 }, {})).then(() => console.log('OK'), (e) => console.log('ERR ' + e.message))`;
    const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '--import', 'tsx', '-e', script], {
      encoding: 'utf8',
      env: { ...process.env, HOME: '/tmp' },
    });
    expect(r.stdout.trim(), r.stderr).toBe(
      'ERR cannot listen on udp 127.0.0.1:514: ports below 1024 need privileges; run svc with CAP_NET_BIND_SERVICE (setcap cap_net_bind_service=+ep "$(command -v node)") or listen on a port >= 1024 and point the senders (or a port forward) at it',
    );
  });

  it('a pipeline whose port is taken reports disconnected and retries (max_reconnect_attempts bounds it)', async () => {
    const held = await holdPort();
    try {
      const run = await streamRun({ port: held.port, protocol: 'udp', reconnect_delay_seconds: 0.05, max_reconnect_attempts: 2 });
      const rec = await run.done;
      expect(rec.status).toBe('failed');
      expect(rec.error).toMatch(/gave up after 2 reconnect attempts: cannot listen on udp 127\.0\.0\.1:\d+: the port is already in use/);
      expect(run.states.filter((s) => s === 'disconnected').length).toBeGreaterThanOrEqual(1);
    } finally {
      await held.release();
    }
  });
});
