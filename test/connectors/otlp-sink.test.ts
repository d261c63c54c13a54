// The otlp sink against the test collector (peers/otlp.ts, on the official opentelemetry-proto
// definitions): the conformance suite over gRPC, HTTP protobuf and HTTP JSON (its restart test
// stops and starts the collector); the mapping of SNMP-like records (counters as cumulative
// monotonic Sums with a start time, a new start time after a reset, gauges), syslog severities and
// hex ids; the retryable answers (HTTP 503 with Retry-After, gRPC UNAVAILABLE, RESOURCE_EXHAUSTED
// only with RetryInfo) retried by the runtime, the others and partial successes dead-lettered with
// the collector's message; a round trip sink → otlp source gives the same records back; and TLS
// (tls_ca, verify_ssl, mutual TLS with tls_cert/tls_key) against the collector serving TLS.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadComponent, loadPipelineText } from '../../src/config/load.js';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { runPipeline } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { tempDir } from '../helpers/fs.js';
import { makeCerts, type Certs } from '../helpers/certs.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { conformance } from './conformance.js';
import { loadPipeline, outputRecords, type Cfg, type Rec } from './helpers.js';
import { otlpSinkFixture, receivedItems, startOtlpCollector, startOtlpToFile, type OtlpCollector } from './peers/otlp.js';

conformance(otlpSinkFixture('http/protobuf'));
conformance(otlpSinkFixture('grpc'));
conformance(otlpSinkFixture('http/json'));

const collectors: OtlpCollector[] = [];
afterEach(async () => {
  for (const c of collectors.splice(0)) await c.stop();
});
async function collector() {
  const c = await startOtlpCollector();
  collectors.push(c);
  return c;
}

/** One manual run of `records` (NDJSON in a file) into the sink `sink`, DLQ to a directory. */
async function writeRun(records: Rec[], sink: Cfg, extra: Cfg = {}) {
  const dir = tempDir('svc-otlp-in-');
  const dlq = tempDir('svc-otlp-dlq-');
  writeFileSync(join(dir, 'in.ndjson'), records.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const rec = await runPipeline(
    loadPipeline({
      name: 'otlp-sink-test',
      schedule: { type: 'manual' },
      source: { type: 'local', path: dir },
      serializer_in: { type: 'ndjson' },
      serializer_out: { type: 'json' },
      sinks: [{ retry_count: 3, retry_delay_seconds: 0.1, ...sink }],
      on_error: 'dlq',
      dlq: { type: 'local', path: dlq, filename_template: 'dlq.ndjson' },
      ...extra,
    }),
    { log: silentLogger, processed: new MemoryProcessedFiles() },
  );
  return { rec, dead: outputRecords(dlq) };
}

const T0 = '2026-01-02T03:00:00.000Z';
const T1 = '2026-01-02T03:05:00.000Z';
const T2 = '2026-01-02T03:10:00.000Z';

describe('otlp sink: the mapping', () => {
  it('sends SNMP counters as cumulative monotonic Sums (start time kept, renewed after a reset) and gauges as Gauges', async () => {
    const c = await collector();
    const rows = [
      {
        _target: 'rtr1',
        sysName: 'rtr1.example.net',
        ifIndex: 1,
        ifName: 'ge-0/0/0',
        ifHCInOctets: '18446744073709551000',
        ifOperStatus: 1,
        poll_time: T0,
        _snmp_widths: { ifHCInOctets: 64 },
      },
      {
        _target: 'rtr1',
        sysName: 'rtr1.example.net',
        ifIndex: 1,
        ifName: 'ge-0/0/0',
        ifHCInOctets: '18446744073709551600',
        ifOperStatus: 1,
        poll_time: T1,
        _snmp_widths: { ifHCInOctets: 64 },
      },
      {
        _target: 'rtr1',
        sysName: 'rtr1.example.net',
        ifIndex: 1,
        ifName: 'ge-0/0/0',
        ifHCInOctets: '5',
        ifOperStatus: 2,
        poll_time: T2,
        _snmp_widths: { ifHCInOctets: 64 },
      },
    ];
    const { rec, dead } = await writeRun(
      rows,
      {
        type: 'otlp',
        endpoint: c.httpUrl,
        value_fields: ['ifHCInOctets', 'ifOperStatus'],
        timestamp_field: 'poll_time',
        attribute_fields: ['ifIndex', 'ifName'],
        resource_attributes: { 'service.name': 'svc-snmp' },
      },
      { batch_size: 1, record_chunk_size: 1 },
    );
    expect(dead).toEqual([]);
    expect(rec.status).toBe('success');
    const items = receivedItems(c, 'metrics');
    const octets = items.filter((x) => x.metric!.name === 'ifHCInOctets');
    expect(octets).toHaveLength(3);
    for (const o of octets) {
      expect(o.metric!.sum).toMatchObject({ aggregation_temporality: 2, is_monotonic: true });
      expect(o.resource).toEqual({ 'service.name': 'svc-snmp', 'host.name': 'rtr1.example.net', 'svc.target': 'rtr1' });
      expect(o.attributes).toEqual({ ifIndex: 1, ifName: 'ge-0/0/0' });
    }
    // uint64 values beyond int64 go as doubles; within int64 exactly as integers.
    expect(octets.map((o) => o.item.as_double ?? o.item.as_int)).toEqual([Number('18446744073709551000'), Number('18446744073709551600'), '5']);
    const ns = (iso: string) => String(BigInt(Date.parse(iso)) * 1_000_000n);
    expect(octets.map((o) => o.item.time_unix_nano)).toEqual([ns(T0), ns(T1), ns(T2)]);
    // The start time: the first point's time, then a new one at the reset (the value went down).
    expect(octets.map((o) => o.item.start_time_unix_nano)).toEqual([ns(T0), ns(T0), ns(T2)]);
    const status = items.filter((x) => x.metric!.name === 'ifOperStatus');
    expect(status.map((s) => [s.metric!.gauge !== undefined, s.item.as_int])).toEqual([
      [true, '1'],
      [true, '1'],
      [true, '2'],
    ]);
  }, 60_000);

  it('sends syslog records as LogRecords with the OpenTelemetry syslog severities, hostname as host.name', async () => {
    const c = await collector();
    const sev = [0, 1, 2, 3, 4, 5, 6, 7];
    const { dead } = await writeRun(
      sev.map((s) => ({ timestamp: T0, facility: 4, severity: s, hostname: 'sw1', app_name: 'sshd', message: `m${s}` })),
      { type: 'otlp', endpoint: c.httpUrl, protocol: 'http/json', signal: 'logs' },
    );
    expect(dead).toEqual([]);
    const items = receivedItems(c, 'logs');
    expect(items.map((x) => x.item.severity_number)).toEqual([21, 19, 18, 17, 13, 10, 9, 5]);
    expect(items.map((x) => x.item.body)).toEqual(sev.map((s) => ({ string_value: `m${s}` })));
    expect(items[0]!.resource).toEqual({ 'host.name': 'sw1' });
    expect(items[0]!.attributes).toMatchObject({ facility: 4, severity: 0, app_name: 'sshd' });
    expect(c.received[0]!.transport).toBe('http/json');
    expect(c.received[0]!.gzip).toBe(true);
  }, 60_000);

  it('dead-letters what it cannot map, with the reason', async () => {
    const c = await collector();
    const { dead } = await writeRun([{ name: 'ok', value: 1 }, { name: 'bad', value: 'many' }, { value: 3 }], {
      type: 'otlp',
      endpoint: c.grpcUrl,
      protocol: 'grpc',
    });
    expect(dead, JSON.stringify(dead)).toHaveLength(2);
    expect(JSON.stringify(dead)).toMatch(/not a number/);
    expect(JSON.stringify(dead)).toMatch(/no metric name/);
    expect(receivedItems(c, 'metrics').map((x) => x.metric!.name)).toEqual(['ok']);
  }, 60_000);
});

describe('otlp sink: answers', () => {
  it('retries HTTP 503 honouring Retry-After, and gRPC UNAVAILABLE; nothing is lost', async () => {
    const c = await collector();
    c.answers.push({ status: 503, retryAfterSeconds: 1 });
    const t0 = Date.now();
    const r1 = await writeRun([{ name: 'a', value: 1 }], { type: 'otlp', endpoint: c.httpUrl });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1000);
    expect(r1.dead).toEqual([]);
    expect(c.refused.map((x) => x.status)).toEqual([503]);
    c.answers.push({ grpcCode: 14 });
    const r2 = await writeRun([{ name: 'b', value: 2 }], { type: 'otlp', endpoint: c.grpcUrl, protocol: 'grpc' });
    expect(r2.dead).toEqual([]);
    expect(receivedItems(c, 'metrics').map((x) => x.metric!.name)).toEqual(['a', 'b']);
  }, 60_000);

  it('retries gRPC RESOURCE_EXHAUSTED only with RetryInfo; without it, and on HTTP 400, dead-letters with the message', async () => {
    const c = await collector();
    c.answers.push({ grpcCode: 8, retryAfterSeconds: 1 });
    const r1 = await writeRun([{ name: 'a', value: 1 }], { type: 'otlp', endpoint: c.grpcUrl, protocol: 'grpc' });
    expect(r1.dead).toEqual([]);
    c.answers.push({ grpcCode: 8 });
    const r2 = await writeRun([{ name: 'b', value: 2 }], { type: 'otlp', endpoint: c.grpcUrl, protocol: 'grpc' });
    expect(JSON.stringify(r2.dead)).toMatch(/RESOURCE_EXHAUSTED/);
    c.answers.push({ status: 400 });
    const r3 = await writeRun([{ name: 'c', value: 3 }], { type: 'otlp', endpoint: c.httpUrl });
    expect(JSON.stringify(r3.dead)).toMatch(/400 Bad Request: the test collector refuses for now/);
    expect(receivedItems(c, 'metrics').map((x) => x.metric!.name)).toEqual(['a']);
  }, 60_000);

  it("dead-letters the records of a request answered with a partial success, with the server's message", async () => {
    const c = await collector();
    c.answers.push({ partial: { rejected: 1, message: 'metric name too long' } });
    const { dead } = await writeRun(
      [
        { name: 'a', value: 1 },
        { name: 'b', value: 2 },
      ],
      { type: 'otlp', endpoint: c.httpUrl },
    );
    expect(dead).toHaveLength(2);
    expect(JSON.stringify(dead)).toMatch(/refused 1 data points.*metric name too long/);
  }, 60_000);
});

describe('otlp sink: a batch of several requests', () => {
  it('sends them in order; a retryable answer sends again that request and those after it only; a partial success dead-letters its own request only', async () => {
    const c = await collector();
    // Requests of 2 records: [a, b], [c, d], [e, f] (the record without a number is refused alone).
    // The second is answered 503: [c, d] and [e, f] go again; then [c, d] is partly refused.
    c.answers.push({}, { status: 503 }, { partial: { rejected: 1, message: 'value out of range' } });
    const names = ['a', 'b', 'c', 'bad', 'd', 'e', 'f'];
    const { rec, dead } = await writeRun(
      names.map((name, i) => ({ name, value: name === 'bad' ? 'not a number' : i })),
      { type: 'otlp', endpoint: c.httpUrl, max_records_per_request: 2 },
    );
    expect(c.refused.map((x) => x.status)).toEqual([503]);
    expect(receivedItems(c, 'metrics').map((x) => x.metric!.name)).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(c.received).toHaveLength(3);
    const reasons = Object.fromEntries(dead.map((d) => [(d.record as { name: string }).name, JSON.stringify(d)]));
    expect(Object.keys(reasons).sort()).toEqual(['bad', 'c', 'd']);
    expect(reasons.bad).toMatch(/not a number/);
    expect(reasons.c).toMatch(/refused 1 data points.*value out of range/);
    expect(rec.records_out).toBe(4);
  }, 60_000);
});

describe('otlp sink → otlp source', () => {
  it('a metric, a log record and a span out and back are the same records', async () => {
    const { until } = await import('../helpers/wait.js');
    const { port, out, stop } = await startOtlpToFile('otlp-rt-in', tempDir('svc-otlp-rt-in-'), 'http');
    try {
      const metric = {
        signal: 'metrics',
        name: 'ifHCInOctets',
        unit: 'By',
        type: 'sum',
        temporality: 'cumulative',
        monotonic: true,
        value: 123456789012,
        timestamp: '2026-01-02T03:00:00.000Z',
        time_unix_nano: '1767322800000000001',
        start_time_unix_nano: '1767322700000000000',
        ifName: 'ge-0/0/0',
        ifIndex: 1,
        'resource.host.name': 'rtr1',
        'scope.name': 'svc',
        'scope.version': '1',
      };
      const gauge = {
        ...metric,
        name: 'ifOperStatus',
        type: 'gauge',
        value: 1.5,
        unit: undefined,
        temporality: undefined,
        monotonic: undefined,
        start_time_unix_nano: undefined,
      };
      const log = {
        signal: 'logs',
        timestamp: '2026-01-02T03:00:00.123Z',
        time_unix_nano: '1767322800123000000',
        observed_time_unix_nano: '1767322800200000000',
        severity_number: 17,
        severity_text: 'ERROR',
        body: { text: 'link down', if: [1, 2] },
        trace_id: '5b8efff798038103d269b633813fc60c',
        span_id: 'eee19b7ec3c1b174',
        facility: 'local4',
        'resource.host.name': 'sw1',
        'scope.name': 'svc',
        'scope.version': '1',
      };
      const span = {
        signal: 'traces',
        name: 'poll',
        timestamp: '2026-01-02T03:00:00.000Z',
        trace_id: '5b8efff798038103d269b633813fc60c',
        span_id: 'eee19b7ec3c1b174',
        parent_span_id: '0102030405060708',
        kind: 'client',
        start_time_unix_nano: '1767322800000000000',
        end_time_unix_nano: '1767322800500000000',
        status_code: 'error',
        status_message: 'timeout',
        events: [{ time_unix_nano: '1767322800100000000', name: 'retry', attributes: { n: 1 } }],
        target: 'rtr1',
        'resource.service.name': 'svc',
        'scope.name': 'svc',
        'scope.version': '1',
      };
      const strip = (r: Rec) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined));
      const endpoint = `http://127.0.0.1:${port}`;
      await until(
        async () =>
          (
            await fetch(`${endpoint}/v1/metrics`, { method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body: new Uint8Array(0) }).catch(
              () => undefined,
            )
          )?.status === 200,
        20_000,
        'the source',
      );
      await writeRun([strip(metric), strip(gauge)], { type: 'otlp', endpoint, type_field: 'type' });
      await writeRun([log], { type: 'otlp', endpoint, signal: 'logs', protocol: 'http/json' });
      await writeRun([span], { type: 'otlp', endpoint, signal: 'traces' });
      await until(() => outputRecords(out).length >= 4, 20_000, 'four records back');
      const back = outputRecords(out);
      expect(back.find((r) => r.name === 'ifHCInOctets')).toEqual(strip(metric));
      expect(back.find((r) => r.name === 'ifOperStatus')).toEqual(strip(gauge));
      expect(back.find((r) => r.signal === 'logs')).toEqual(log);
      expect(back.find((r) => r.signal === 'traces')).toEqual(span);
    } finally {
      await stop();
    }
  }, 90_000);

  it('pm_xml → otlp → otlp: every numeric counter comes back as a delta Sum named from its measType, with measObjLdn', async () => {
    const { until } = await import('../helpers/wait.js');
    const { copyFileSync } = await import('node:fs');
    const { port, out, stop } = await startOtlpToFile('otlp-pm-in', tempDir('svc-otlp-pm-in-'));
    try {
      const name = 'A20261126.1000+0100-1015+0100_gNB-Paris-01.xml';
      const pmDir = tempDir('svc-otlp-pmin-');
      copyFileSync(new URL(`../../templates/testdata/${name}`, import.meta.url), join(pmDir, name));
      // The PM records as pm_xml makes them, for comparison.
      const direct = tempDir('svc-otlp-pmdirect-');
      await runPipeline(
        loadPipeline({
          name: 'pm-direct',
          schedule: { type: 'manual' },
          source: { type: 'local', path: pmDir },
          serializer_in: { type: 'pm_xml' },
          serializer_out: { type: 'ndjson' },
          sinks: [{ type: 'local', path: direct, filename_template: 'pm.ndjson' }],
        }),
        { log: silentLogger, processed: new MemoryProcessedFiles() },
      );
      const want: Rec[] = [];
      for (const r of outputRecords(direct))
        for (const [k, v] of Object.entries(r))
          if (typeof v === 'number') want.push({ name: k, value: v, meas_obj_ldn: r.meas_obj_ldn, meas_info_id: r.meas_info_id });
      expect(want.length).toBeGreaterThan(3);
      const pmSink = {
        type: 'otlp',
        endpoint: `http://127.0.0.1:${port}`,
        protocol: 'grpc',
        value_fields: ['*'],
        counter_fields: ['*'],
        sum_temporality: 'delta',
        timestamp_field: 'gran_end_time',
        start_time_field: 'begin_time',
        attribute_fields: ['meas_obj_ldn', 'meas_info_id'],
        resource_fields: { managed_element: 'svc.managed_element' },
      };
      await until(
        async () => {
          const r = await runPipeline(
            loadPipeline({
              name: 'pm-out',
              schedule: { type: 'manual' },
              source: { type: 'local', path: pmDir },
              serializer_in: { type: 'pm_xml' },
              serializer_out: { type: 'json' },
              sinks: [{ ...pmSink, retry_count: 0 }],
            }),
            { log: silentLogger, processed: new MemoryProcessedFiles() },
          );
          return r.status === 'success';
        },
        20_000,
        'the PM file sent',
      );
      await until(() => outputRecords(out).length >= want.length, 20_000, 'the counters back');
      const back = outputRecords(out);
      const key = (r: Rec) => `${r.name}|${r.meas_obj_ldn}`;
      expect(new Map(back.map((r) => [key(r), r.value]))).toEqual(new Map(want.map((r) => [key(r), r.value])));
      for (const r of back) {
        expect(r).toMatchObject({ type: 'sum', temporality: 'delta', monotonic: true, 'resource.svc.managed_element': 'ManagedElement=gNB-Paris-01' });
        expect(r.timestamp).toBe('2026-11-26T09:15:00.000Z');
        expect(r.start_time_unix_nano).toBe(String(BigInt(Date.parse('2026-11-26T09:00:00.000Z')) * 1_000_000n));
      }
    } finally {
      await stop();
    }
  }, 90_000);
});

describe('otlp sink: TLS (certificates made by openssl in the test; the test collector serves them)', () => {
  let certs: Certs;
  // Not tempDir(): that is removed after each test, and the certificates serve all of them.
  const certDir = mkdtempSync(join(tmpdir(), 'svc-otlp-sink-certs-'));
  afterAll(() => rmSync(certDir, { recursive: true, force: true }));
  beforeAll(async () => {
    certs = await makeCerts(certDir);
  }, 60_000);
  const check = async (cfg: Cfg) => {
    const r = loadComponent('sink', cfg, { env: {} });
    if (!r.config) throw new Error(r.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
    return testConnector('sink', r.config, { timeoutMs: 8000 });
  };
  const logs = [
    { seq: 1, body: 'link up' },
    { seq: 2, body: 'link down' },
  ];

  for (const protocol of ['http/protobuf', 'grpc'] as const) {
    it(`${protocol}: tls_ca trusts a receiver whose certificate it signed; the system CAs and another CA refuse it clearly; verify_ssl: false accepts it`, async () => {
      const c = await startOtlpCollector({ tls: { cert: certs.serverCert, key: certs.serverKey } });
      collectors.push(c);
      const base = { type: 'otlp', endpoint: protocol === 'grpc' ? c.grpcUrl : c.httpUrl, protocol, signal: 'logs' };
      expect(base.endpoint).toMatch(/^https:/);
      expect(await check({ ...base, tls_ca: certs.ca })).toMatchObject({ ok: true, error: null });
      for (const untrusting of [base, { ...base, tls_ca: certs.otherCa }]) {
        const r = await check(untrusting);
        expect(r.ok).toBe(false);
        expect(r.error).toMatch(/certificate|UNABLE_TO_VERIFY|self.signed/i);
      }
      expect(await check({ ...base, verify_ssl: false })).toMatchObject({ ok: true });
      const { rec, dead } = await writeRun(logs, { ...base, tls_ca: certs.ca });
      expect(rec.status, JSON.stringify(rec)).toBe('success');
      expect(dead).toEqual([]);
      expect(receivedItems(c, 'logs').map((x) => x.attributes.seq)).toEqual([1, 2]);
    });

    it(`${protocol}: mutual TLS: tls_cert and tls_key present the client certificate a receiver requires; without them it refuses`, async () => {
      const c = await startOtlpCollector({ tls: { cert: certs.serverCert, key: certs.serverKey, clientCa: certs.ca } });
      collectors.push(c);
      const base = { type: 'otlp', endpoint: protocol === 'grpc' ? c.grpcUrl : c.httpUrl, protocol, signal: 'logs', tls_ca: certs.ca };
      expect((await check(base)).ok).toBe(false);
      const mutual = { ...base, tls_cert: certs.clientCert, tls_key: certs.clientKey };
      expect(await check(mutual)).toMatchObject({ ok: true, error: null });
      const { rec } = await writeRun(logs, mutual);
      expect(rec.status, JSON.stringify(rec)).toBe('success');
      expect(receivedItems(c, 'logs').map((x) => x.attributes.seq)).toEqual([1, 2]);
    });

    it(`${protocol}: a TLS file that cannot be read fails the check, names the file, and is not retried`, async () => {
      const c = await startOtlpCollector({ tls: { cert: certs.serverCert, key: certs.serverKey } });
      collectors.push(c);
      const cfg = { type: 'otlp', endpoint: protocol === 'grpc' ? c.grpcUrl : c.httpUrl, protocol, signal: 'logs', tls_ca: '/nonexistent/ca.pem' };
      const r = await check(cfg);
      expect(r.ok).toBe(false);
      expect(r.error).toMatch(/^otlp: .*cannot read the TLS CA file \/nonexistent\/ca\.pem/);
      const { dead } = await writeRun(logs, { ...cfg, retry_count: 5, retry_delay_seconds: 30 });
      expect(dead).toHaveLength(2);
      expect(JSON.stringify(dead)).toContain('cannot read the TLS CA file');
      expect(c.received).toEqual([]);
    });
  }

  it('lint: TLS files need an https:// endpoint, tls_cert and tls_key go together, tls_ca with verify_ssl: false is refused', () => {
    const diag = (sink: Cfg) =>
      loadPipelineText(
        stringify({ version: '1', pipeline: { name: 'x', schedule: { type: 'manual' }, source: { type: 'local', path: '/tmp' }, sinks: [sink] } }),
        {
          env: {},
        },
      ).diagnostics.map((d) => d.path);
    expect(diag({ type: 'otlp', endpoint: 'http://c:4318', tls_ca: '/ca.pem' })).toContain('pipeline.sinks[0].tls_ca');
    expect(diag({ type: 'otlp', endpoint: 'https://c:4318', tls_cert: '/c.pem' })).toContain('pipeline.sinks[0].tls_key');
    expect(diag({ type: 'otlp', endpoint: 'https://c:4318', tls_ca: '/ca.pem', verify_ssl: false })).toContain('pipeline.sinks[0].tls_ca');
    expect(diag({ type: 'otlp', endpoint: 'https://c:4318', tls_ca: '/ca.pem', tls_cert: '/c.pem', tls_key: '/k.pem' })).toEqual([]);
  });
});
