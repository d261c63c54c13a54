// The ves sink against the VES 7.1 collector test peer (test/connectors/peers/ves-collector.ts; no
// VES collector can be installed here): the shared conformance suite, then what it does not cover.
// Every body the sink sends is validated by the collector against the published schema
// (CommonEventFormat_30.1.1.json), so each accepted event below is a valid VES 7.1.1 event.
// Covered: the commonEventHeader fields and what a record overrides, each supported domain's block
// and its required fields (records without them dead-lettered alone), the single and batch forms,
// sequence and eventId across batches and retries, a body the collector refuses (400: the whole body
// dead-lettered with its reason), 503 retried under retry_count, auth basic/bearer/none and wrong
// credentials (401, secret not shown), test(), unsupported domains, lint, version, timestamp_field,
// timeout and verify_ssl.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { loadPipelineText } from '../../src/config/load.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { tempDir } from '../helpers/fs.js';
import { conformance, uniqueChannel, type Cfg, type Rec } from './conformance.js';
import { loadPipeline, outputRecords } from './helpers.js';
import { selfSignedCert } from './peers/http.js';
import { startVesCollector, VES_PASSWORD, VES_USER, vesPeer, type VesCollector, type VesEvent } from './peers/ves-collector.js';
import { until } from '../helpers/wait.js';

conformance(vesPeer);

let col: VesCollector;
beforeAll(async () => {
  col = await startVesCollector({ auth: { type: 'basic', username: VES_USER, password: VES_PASSWORD } });
});
afterAll(() => col.close());

const basic = () => ({ type: 'ves', url: col.url, auth_type: 'basic', username: VES_USER, password: VES_PASSWORD });
const name = () => uniqueChannel('ves');
type Dead = { _stage: string; _error: string; record: Rec };

/** One manual run of `records` (NDJSON in) into one ves sink; a DLQ directory when `dlq`. */
async function sinkRun(sink: Cfg, records: Rec[], extra: Cfg = {}, opts: { dlq?: boolean } = {}) {
  const dir = tempDir('svc-ves-in-');
  mkdirSync(join(dir, 'in'));
  writeFileSync(join(dir, 'in', 'r.ndjson'), records.map((r) => JSON.stringify(r) + '\n').join(''));
  const dlqDir = tempDir('svc-ves-dlq-');
  const config = loadPipeline({
    name: 'ves-sink',
    schedule: { type: 'manual' },
    source: { type: 'local', path: join(dir, 'in') },
    serializer_in: { type: 'ndjson' },
    sinks: [sink],
    ...(opts.dlq ? { on_error: 'dlq', dlq: { type: 'local', path: dlqDir, filename_template: 'dlq.ndjson' } } : {}),
    ...extra,
  });
  const started = Date.now();
  const rec = await runPipeline(config, { log: silentLogger, processed: new MemoryProcessedFiles() });
  const dead = outputRecords(dlqDir) as unknown as Dead[];
  return { rec, dead, started, ended: Date.now(), runId: rec.run_id as string };
}

/** The requests that carried events of `source` (its reportingEntityName). */
const requestsOf = (c: VesCollector, source: string) => c.requests.filter((r) => r.body.includes(`"reportingEntityName":"${source}"`));

function diagnostics(component: Cfg): string[] {
  const pipeline = {
    name: 'lint',
    schedule: { type: 'manual' },
    source: { type: 'local', path: '/tmp' },
    sinks: [{ type: 'ves', url: 'http://127.0.0.1:1', source_name: 'x', domain: 'other', ...component }],
  };
  return loadPipelineText(stringify({ version: '1', pipeline }), { env: {} }).diagnostics.map((d) => formatDiagnostic(d));
}

describe('ves sink: commonEventHeader and faultFields', () => {
  it('fills every header field as documented and maps a fault record into faultFields (single form)', async () => {
    const src = name();
    const { rec, started, ended } = await sinkRun({ ...basic(), domain: 'fault', source_name: src }, [
      { alarmCondition: 'linkDown', eventSeverity: 'major', specificProblem: 'Loss of signal', site: 'paris-1', port: 3, up: false, tags: ['a', 'b'] },
    ]);
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    const reqs = requestsOf(col, src);
    expect(reqs.map((r) => [r.method, r.path, r.status])).toEqual([['POST', '/eventListener/v7', 202]]);
    expect(reqs[0]!.headers['content-type']).toBe('application/json');
    const body = JSON.parse(reqs[0]!.body) as { event: VesEvent };
    const h = body.event.commonEventHeader;
    expect(h).toMatchObject({
      domain: 'fault',
      eventName: `fault_${src}`,
      priority: 'Normal',
      sequence: 0,
      sourceName: src,
      reportingEntityName: src,
      version: '4.1',
      vesEventListenerVersion: '7.1.1',
    });
    expect(h.eventId).toBe(`${src}-${rec.run_id}-0`);
    expect(h.startEpochMicrosec).toBeGreaterThanOrEqual(started * 1000);
    expect(h.startEpochMicrosec).toBeLessThanOrEqual(ended * 1000);
    expect(h.lastEpochMicrosec).toBe(h.startEpochMicrosec);
    expect(body.event.faultFields).toEqual({
      alarmCondition: 'linkDown',
      eventSeverity: 'MAJOR',
      specificProblem: 'Loss of signal',
      eventSourceType: 'other',
      vfStatus: 'Active',
      faultFieldsVersion: '4.0',
      alarmAdditionalInformation: { site: 'paris-1', port: '3', up: 'false', tags: '["a","b"]' },
    });
  });

  it('a record may set the header fields it names; priority and severity are matched without case', async () => {
    const src = name();
    const { rec } = await sinkRun({ ...basic(), domain: 'fault', source_name: src }, [
      {
        eventId: 'alarm-4711',
        eventName: 'Fault_Router_LinkDown',
        eventType: 'platform',
        priority: 'high',
        sourceName: 'router-7',
        sourceId: 'uuid-7',
        nfVendorName: 'ACME',
        nfNamingCode: 'rtr1',
        nfcNamingCode: 'lc1',
        reportingEntityId: 'ems-uuid',
        timeZoneOffset: 'UTC+01.00',
        startEpochMicrosec: 1767268800000000,
        lastEpochMicrosec: 1767268860000000,
        alarmCondition: 'linkDown',
        eventSeverity: 'Critical',
        specificProblem: 'LOS',
        eventSourceType: 'router',
        vfStatus: 'idle',
        alarmInterfaceA: 'ge-0/0/1',
        eventCategory: 'link',
      },
    ]);
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    const [e] = col.eventsOf(src);
    expect(e!.commonEventHeader).toMatchObject({
      eventId: 'alarm-4711',
      eventName: 'Fault_Router_LinkDown',
      eventType: 'platform',
      priority: 'High',
      sourceName: 'router-7',
      reportingEntityName: src,
      sourceId: 'uuid-7',
      nfVendorName: 'ACME',
      nfNamingCode: 'rtr1',
      nfcNamingCode: 'lc1',
      reportingEntityId: 'ems-uuid',
      timeZoneOffset: 'UTC+01.00',
      startEpochMicrosec: 1767268800000000,
      lastEpochMicrosec: 1767268860000000,
      sequence: 0,
      domain: 'fault',
    });
    expect(e!.faultFields).toEqual({
      alarmCondition: 'linkDown',
      eventSeverity: 'CRITICAL',
      specificProblem: 'LOS',
      eventSourceType: 'router',
      vfStatus: 'Idle',
      alarmInterfaceA: 'ge-0/0/1',
      eventCategory: 'link',
      faultFieldsVersion: '4.0',
    });
  });

  it('records missing what fault requires, or with a bad priority or severity, are dead-lettered alone; the others land as one eventBatch', async () => {
    const src = name();
    const ok = (i: number) => ({ seq: i, alarmCondition: 'c', eventSeverity: 'MINOR', specificProblem: 'p' });
    const input = [
      ok(0),
      { seq: 1, eventSeverity: 'MINOR', specificProblem: 'p' },
      ok(2),
      { ...ok(3), priority: 'urgent' },
      { ...ok(4), eventSeverity: 'BAD' },
      ok(5),
    ];
    const { rec, dead } = await sinkRun({ ...basic(), domain: 'fault', source_name: src }, input, {}, { dlq: true });
    expect(rec.records_out).toBe(3);
    expect(rec.dlq_count).toBe(3);
    expect(dead.map((d) => [d._stage, d.record.seq])).toEqual([
      ['sink', 1],
      ['sink', 3],
      ['sink', 4],
    ]);
    expect(dead[0]!._error).toBe(
      'sinks[0] (ves): ves: not a valid fault event: a fault event needs faultFields.alarmCondition: the record has no field alarmCondition',
    );
    expect(dead[1]!._error).toContain('priority must be one of High, Medium, Normal, Low (got string "urgent")');
    expect(dead[2]!._error).toContain('eventSeverity must be one of CRITICAL, MAJOR, MINOR, WARNING, NORMAL (got string "BAD")');
    const reqs = requestsOf(col, src);
    expect(reqs.map((r) => [r.path, r.status])).toEqual([['/eventListener/v7/eventBatch', 202]]);
    expect((JSON.parse(reqs[0]!.body) as { eventList: VesEvent[] }).eventList.map((e) => (e.faultFields as Rec).alarmAdditionalInformation)).toEqual([
      { seq: '0' },
      { seq: '2' },
      { seq: '5' },
    ]);
  });

  it('without a DLQ a refused record is in the run record and keeps its input', async () => {
    const src = name();
    const { rec } = await sinkRun({ ...basic(), domain: 'fault', source_name: src }, [{ seq: 1, eventSeverity: 'MINOR', specificProblem: 'p' }]);
    expect(rec.records_out).toBe(0);
    expect(rec.errors.join('\n')).toContain('needs faultFields.alarmCondition');
    expect(requestsOf(col, src)).toEqual([]);
  });
});

describe('ves sink: the other domains', () => {
  it('measurement: measurementInterval and typed fields, objects of scalars as additionalMeasurements, the rest as additionalFields', async () => {
    const src = name();
    const { rec, dead } = await sinkRun(
      { ...basic(), domain: 'measurement', source_name: src },
      [
        {
          measurementInterval: 900,
          requestRate: '12.5',
          concurrentSessions: '40',
          cpu: { user: 1.5, system: 2 },
          host: 'node-1',
          ifHCInOctets: '18446744073709551615',
        },
        { host: 'node-2' },
        { measurementInterval: 60, concurrentSessions: 'many' },
      ],
      {},
      { dlq: true },
    );
    expect(rec.records_out).toBe(1);
    expect(dead.map((d) => d._error)).toEqual([
      'sinks[0] (ves): ves: not a valid measurement event: a measurement event needs measurementFields.measurementInterval: the record has no field measurementInterval',
      'sinks[0] (ves): ves: not a valid measurement event: concurrentSessions must be an integer (got string "many")',
    ]);
    const [e] = col.eventsOf(src);
    expect(e!.commonEventHeader.eventName).toBe(`measurement_${src}`);
    expect(e!.measurementFields).toEqual({
      measurementInterval: 900,
      requestRate: 12.5,
      concurrentSessions: 40,
      additionalMeasurements: [{ name: 'cpu', hashMap: { user: '1.5', system: '2' } }],
      additionalFields: { host: 'node-1', ifHCInOctets: '18446744073709551615' },
      measurementFieldsVersion: '4.0',
    });
  });

  it('heartbeat: heartbeatInterval required and an integer', async () => {
    const src = name();
    const { rec, dead } = await sinkRun(
      { ...basic(), domain: 'heartbeat', source_name: src },
      [{ heartbeatInterval: 60, state: 'up' }, { state: 'up' }, { heartbeatInterval: 1.5 }],
      {},
      { dlq: true },
    );
    expect(rec.records_out).toBe(1);
    expect(dead.map((d) => d._error.replace(/^.*event: /, ''))).toEqual([
      'a heartbeat event needs heartbeatFields.heartbeatInterval: the record has no field heartbeatInterval',
      'heartbeatInterval must be an integer (got number 1.5)',
    ]);
    expect(col.eventsOf(src)[0]!.heartbeatFields).toEqual({ heartbeatInterval: 60, additionalFields: { state: 'up' }, heartbeatFieldsVersion: '3.0' });
  });

  it('other: scalars in hashMap, objects of scalars in arrayOfNamedHashMap, deeper values as JSON text', async () => {
    const src = name();
    const { rec } = await sinkRun({ ...basic(), domain: 'other', source_name: src }, [
      { seq: 7, name: 'x', ok: true, gone: null, cell: { id: 4, band: 'n78' }, list: [1, { a: 2 }], deep: { a: { b: 1 } } },
    ]);
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(col.eventsOf(src)[0]!.otherFields).toEqual({
      hashMap: { seq: '7', name: 'x', ok: 'true', list: '[1,{"a":2}]', deep: '{"a":{"b":1}}' },
      arrayOfNamedHashMap: [{ name: 'cell', hashMap: { id: '4', band: 'n78' } }],
      otherFieldsVersion: '3.0',
    });
  });

  it('a record may carry the fields block itself; its fields are checked against the block', async () => {
    const src = name();
    const { rec, dead } = await sinkRun(
      { ...basic(), domain: 'other', source_name: src },
      [{ otherFields: { hashMap: { a: 1 }, jsonObjects: [] }, seq: 1 }, { otherFields: { nope: 1 } }],
      {},
      { dlq: true },
    );
    expect(rec.records_out).toBe(1);
    expect(dead[0]!._error).toContain('otherFields.nope is not a field of otherFields; its fields are arrayOfNamedHashMap, hashMap, jsonObjects');
    expect(col.eventsOf(src)[0]!.otherFields).toEqual({ hashMap: { a: '1', seq: '1' }, jsonObjects: [], otherFieldsVersion: '3.0' });
  });

  const cases: [string, string, Rec, Rec, string][] = [
    [
      'stateChange',
      'stateChangeFields',
      { newState: 'outofservice', oldState: 'inService', stateInterface: 'eth0', why: 'maint' },
      { newState: 'inService', oldState: 'inService' },
      'stateChangeFields.stateInterface',
    ],
    [
      'syslog',
      'syslogFields',
      { syslogMsg: 'link down', syslogTag: 'kernel', syslogSev: 'error', syslogPri: '187', host: 'r1' },
      { syslogTag: 'kernel' },
      'syslogFields.syslogMsg',
    ],
    [
      'notification',
      'notificationFields',
      { changeIdentifier: 'cfg-1', changeType: 'configuration', meta: { by: 'ops' } },
      { changeType: 'x' },
      'notificationFields.changeIdentifier',
    ],
    [
      'pnfRegistration',
      'pnfRegistrationFields',
      { serialNumber: 'SN1', vendorName: 'ACME', oamV4IpAddress: '10.0.0.1', rack: 4 },
      { serialNumber: { a: 1 } },
      'serialNumber must be a string',
    ],
  ];
  for (const [domain, block, good, bad, why] of cases) {
    it(`${domain}: a valid record is accepted by the collector, a record without what the block needs is dead-lettered`, async () => {
      const src = name();
      const { rec, dead } = await sinkRun({ ...basic(), domain, source_name: src }, [good, bad], {}, { dlq: true });
      expect(rec.records_out, JSON.stringify(rec)).toBe(1);
      expect(dead).toHaveLength(1);
      expect(dead[0]!._error).toContain(why);
      const [e] = col.eventsOf(src);
      expect(e!.commonEventHeader.domain).toBe(domain);
      expect(Object.keys(e!)).toEqual(['commonEventHeader', block]);
    });
  }

  it('the block fields are typed and normalized (stateChange states, syslog severity and integers)', async () => {
    const a = name();
    const b = name();
    await sinkRun({ ...basic(), domain: 'stateChange', source_name: a }, [cases[0]![2]]);
    await sinkRun({ ...basic(), domain: 'syslog', source_name: b }, [cases[1]![2]]);
    expect(col.eventsOf(a)[0]!.stateChangeFields).toEqual({
      newState: 'outOfService',
      oldState: 'inService',
      stateInterface: 'eth0',
      additionalFields: { why: 'maint' },
      stateChangeFieldsVersion: '4.0',
    });
    expect(col.eventsOf(b)[0]!.syslogFields).toEqual({
      syslogMsg: 'link down',
      syslogTag: 'kernel',
      syslogSev: 'Error',
      syslogPri: 187,
      eventSourceType: 'other',
      additionalFields: { host: 'r1' },
      syslogFieldsVersion: '4.0',
    });
  });

  it('rejects the schema domains it does not build at config time, naming the allowed ones', () => {
    for (const domain of ['perf3gpp', 'mobileFlow', 'thresholdCrossingAlert', 'bogus']) {
      const d = diagnostics({ domain });
      expect(d.join('\n')).toMatch(/pipeline\.sinks\[0\]\.domain: .*fault.*heartbeat.*measurement.*notification.*other.*pnfRegistration.*stateChange.*syslog/);
    }
  });
});

describe('ves sink: batches, sequence and answers', () => {
  it('a batch of one is the single form, larger ones eventBatch; sequence counts across batches from 0', async () => {
    const src = name();
    const { rec } = await sinkRun(
      { ...basic(), domain: 'other', source_name: src },
      Array.from({ length: 5 }, (_, i) => ({ seq: i })),
      { record_chunk_size: 2 },
    );
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    const reqs = requestsOf(col, src);
    expect(reqs.map((r) => r.path)).toEqual(['/eventListener/v7/eventBatch', '/eventListener/v7/eventBatch', '/eventListener/v7']);
    expect(Object.keys(JSON.parse(reqs[0]!.body) as Rec)).toEqual(['eventList']);
    expect(Object.keys(JSON.parse(reqs[2]!.body) as Rec)).toEqual(['event']);
    const events = col.eventsOf(src);
    expect(events.map((e) => e.commonEventHeader.sequence)).toEqual([0, 1, 2, 3, 4]);
    expect(events.map((e) => e.commonEventHeader.eventId)).toEqual([0, 1, 2, 3, 4].map((i) => `${src}-${rec.run_id}-${i}`));
  });

  it('503 is retried under retry_count with the same eventIds and sequences', async () => {
    const src = name();
    col.failNext([503, 503]);
    const { rec } = await sinkRun({ ...basic(), domain: 'other', source_name: src, retry_count: 2, retry_delay_seconds: 0.05 }, [{ seq: 0 }, { seq: 1 }]);
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    const reqs = requestsOf(col, src);
    expect(reqs.map((r) => r.status)).toEqual([503, 503, 202]);
    expect(new Set(reqs.map((r) => r.body)).size).toBe(1); // the same events each time
  });

  it('a collector unavailable past retry_count fails the write: records dead-lettered with the 503', async () => {
    const src = name();
    col.unavailable = true;
    try {
      const { rec, dead } = await sinkRun(
        { ...basic(), domain: 'other', source_name: src, retry_count: 1, retry_delay_seconds: 0.05 },
        [{ seq: 0 }, { seq: 1 }],
        {},
        { dlq: true },
      );
      expect(rec.records_out).toBe(0);
      expect(dead.map((d) => d.record.seq)).toEqual([0, 1]);
      expect(dead[0]!._error).toMatch(
        /POST http:\/\/127\.0\.0\.1:\d+\/eventListener\/v7\/eventBatch returned 503 Service Unavailable \(SVC2000: The following service error occurred: Service Unavailable\. Error code is 503\)/,
      );
    } finally {
      col.unavailable = false;
    }
    expect(requestsOf(col, src).map((r) => r.status)).toEqual([503, 503]); // the first attempt and one retry
  });

  it('a record refused by the sink and a 503 in one batch: only the others are sent again, and land', async () => {
    const src = name();
    col.failNext([503]);
    const { rec, dead } = await sinkRun(
      { ...basic(), domain: 'fault', source_name: src, retry_count: 2, retry_delay_seconds: 0.05 },
      [
        { seq: 0, alarmCondition: 'a', eventSeverity: 'MAJOR', specificProblem: 'p' },
        { seq: 1 },
        { seq: 2, alarmCondition: 'a', eventSeverity: 'MAJOR', specificProblem: 'p' },
      ],
      {},
      { dlq: true },
    );
    expect(rec.records_out).toBe(2);
    expect(dead.map((d) => d.record.seq)).toEqual([1]);
    const reqs = requestsOf(col, src);
    expect(reqs.map((r) => r.status)).toEqual([503, 202]);
    expect(reqs[1]!.body).toBe(reqs[0]!.body); // the same two events again
    // a refused record takes no sequence number
    expect(
      col.eventsOf(src).map((e) => [e.commonEventHeader.sequence, (e.faultFields as { alarmAdditionalInformation: Rec }).alarmAdditionalInformation.seq]),
    ).toEqual([
      [0, '0'],
      [1, '2'],
    ]);
  });

  it('a body the collector refuses (400, schema) is dead-lettered whole with the collector reason', async () => {
    const src = name();
    // cpuUsageArray is passed as the record has it; the collector's schema check refuses the body.
    const { rec, dead } = await sinkRun(
      { ...basic(), domain: 'measurement', source_name: src },
      [
        { seq: 0, measurementInterval: 60 },
        { seq: 1, measurementInterval: 60, cpuUsageArray: [{ percentUsage: 5 }] },
      ],
      {},
      { dlq: true },
    );
    expect(rec.records_out).toBe(0);
    expect(dead.map((d) => d.record.seq)).toEqual([0, 1]);
    expect(dead[0]!._error).toMatch(
      /^sinks\[0\] \(ves\): ves: the collector refused the batch of 2 events \(POST http:\/\/127\.0\.0\.1:\d+\/eventListener\/v7\/eventBatch returned 400 Bad Request\): SVC0002: Bad Parameter \(schema CommonEventFormat_30\.1\.1: \/eventList\/1\/measurementFields\/cpuUsageArray\/0 must have required property 'cpuIdentifier'/,
    );
    expect(col.eventsOf(src)).toEqual([]);
  });
});

describe('ves sink: auth and test()', () => {
  let bearer: VesCollector;
  beforeAll(async () => {
    bearer = await startVesCollector({ auth: { type: 'bearer', token: 'right-bearer-token' }, prefix: '/ves' });
  });
  afterAll(() => bearer.close());

  it('bearer: events land under the collector path prefix; test() is ok', async () => {
    const src = name();
    const cfg = { type: 'ves', url: bearer.url, domain: 'other', source_name: src, auth_type: 'bearer', token: 'right-bearer-token' };
    expect(await testConnector('sink', cfg as never)).toMatchObject({ ok: true, error: null });
    const { rec } = await sinkRun(cfg, [{ seq: 1 }]);
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(requestsOf(bearer, src).map((r) => [r.path, r.headers.authorization])).toEqual([['/ves/eventListener/v7', 'Bearer right-bearer-token']]);
    // test() sent no event: a GET the collector answered 405 after checking the token
    expect(bearer.requests.filter((r) => r.method === 'GET').map((r) => r.status)).toContain(405);
  });

  it('a wrong token is a 401: test() and the write fail clearly, without the token', async () => {
    const src = name();
    const cfg = { type: 'ves', url: bearer.url, domain: 'other', source_name: src, auth_type: 'bearer', token: 'wrong-bearer-token' };
    const t = await testConnector('sink', cfg as never);
    expect(t.ok).toBe(false);
    expect(t.error).toMatch(
      /^ves: GET http:\/\/127\.0\.0\.1:\d+\/ves\/eventListener\/v7 returned 401 Unauthorized: the collector refused the credentials \(check auth_type and username\/password or token\)$/,
    );
    const { rec } = await sinkRun({ ...cfg, retry_count: 3, retry_delay_seconds: 0.05 }, [{ seq: 1 }]);
    expect(rec.records_out).toBe(0);
    const text = JSON.stringify(rec);
    expect(text).toContain('returned 401 Unauthorized: the collector refused the credentials');
    expect(text).not.toContain('wrong-bearer-token');
    expect(requestsOf(bearer, src)).toHaveLength(1); // not retried: a 401 is a config problem
  });

  it('basic credentials against a bearer collector, and none against a basic one, are refused (401)', async () => {
    const a = await testConnector('sink', {
      type: 'ves',
      url: bearer.url,
      domain: 'other',
      source_name: 'x',
      auth_type: 'basic',
      username: 'u',
      password: 'some-password',
    } as never);
    expect(a.error).toContain('401 Unauthorized');
    expect(a.error).not.toContain('some-password');
    const b = await testConnector('sink', { type: 'ves', url: col.url, domain: 'other', source_name: 'x' } as never);
    expect(b.error).toContain('401 Unauthorized');
  });

  it('test(): a url that is not the collector base (404), an unavailable collector (503), nothing listening', async () => {
    const wrong = await testConnector('sink', { ...basic(), url: `${col.url}/nope`, domain: 'other', source_name: 'x' } as never);
    expect(wrong.error).toMatch(
      /returned 404 Not Found: no VES event listener there; url must be the collector base URL \(the sink adds \/eventListener\/v7\)/,
    );
    col.unavailable = true;
    try {
      const down = await testConnector('sink', { ...basic(), domain: 'other', source_name: 'x' } as never);
      expect(down.error).toMatch(/returned 503 Service Unavailable: the collector is not available/);
    } finally {
      col.unavailable = false;
    }
    const none = await testConnector('sink', { ...basic(), url: 'http://127.0.0.1:9', domain: 'other', source_name: 'x' } as never);
    expect(none.error).toMatch(/^ves: GET http:\/\/127\.0\.0\.1:9\/eventListener\/v7: connection refused/);
  });
});

describe('ves sink: config', () => {
  it('lint: url with /eventListener or credentials, missing and unused credentials', () => {
    expect(diagnostics({ url: 'http://h:8080/eventListener/v7' }).join('\n')).toContain(
      'pipeline.sinks[0].url: url is the collector base: the sink adds /eventListener/v7 itself',
    );
    expect(diagnostics({ url: 'http://u:p@h:8080' }).join('\n')).toContain('credentials in the URL are not sent');
    expect(diagnostics({ url: 'http://h:8080/ves?x=1' }).join('\n')).toContain('url cannot carry a query or fragment');
    expect(diagnostics({ auth_type: 'bearer' }).join('\n')).toContain('pipeline.sinks[0].token: auth_type bearer needs a token');
    expect(diagnostics({ auth_type: 'basic' }).join('\n')).toContain('pipeline.sinks[0].username: auth_type basic needs a username');
    expect(diagnostics({ password: 'pw' }).join('\n')).toContain('pipeline.sinks[0].password: password is only used with auth_type basic (auth_type is none)');
    expect(diagnostics({ auth_type: 'digest' }).join('\n')).toContain('pipeline.sinks[0].auth_type');
    expect(diagnostics({ source_name: '' }).join('\n')).toContain('pipeline.sinks[0].source_name');
    expect(diagnostics({})).toEqual([]);
  });

  it("version: '7.1' (the default; a YAML number 7.1 too); any other is refused", () => {
    expect(diagnostics({ version: '7.1' })).toEqual([]);
    expect(diagnostics({ version: 7.1 })).toEqual([]);
    expect(diagnostics({ version: '7.0' }).join('\n')).toContain('pipeline.sinks[0].version');
  });

  it('timestamp_field: ISO 8601 or epoch by magnitude into startEpochMicrosec; a record without a readable time is dead-lettered', async () => {
    const src = name();
    const { rec, dead } = await sinkRun(
      { ...basic(), domain: 'other', source_name: src, timestamp_field: 'at' },
      [
        { seq: 0, at: '2026-01-01T12:00:00.250Z' },
        { seq: 1, at: 1767268800 },
        { seq: 2, at: 1767268800123 },
        { seq: 3 },
        { seq: 4, at: 'soon' },
        { seq: 5, at: 1, startEpochMicrosec: 5 },
      ],
      {},
      { dlq: true },
    );
    expect(rec.records_out).toBe(4);
    expect(dead.map((d) => [d.record.seq, d._error.replace(/^.*event: /, '')])).toEqual([
      [3, "timestamp_field 'at' is missing"],
      [4, 'timestamp_field \'at\' is not a time (string "soon")'],
    ]);
    expect(col.eventsOf(src).map((e) => [e.commonEventHeader.startEpochMicrosec, e.commonEventHeader.lastEpochMicrosec])).toEqual([
      [1767268800250000, 1767268800250000],
      [1767268800000000, 1767268800000000],
      [1767268800123000, 1767268800123000],
      [5, 5],
    ]);
  });

  it('timeout: an answer slower than timeout fails the attempt (retryable), the retry lands', async () => {
    const src = name();
    col.delay(1500, 1);
    const { rec } = await sinkRun({ ...basic(), domain: 'other', source_name: src, timeout: 0.5, retry_count: 2, retry_delay_seconds: 0.05 }, [{ seq: 0 }]);
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    await until(() => col.eventsOf(src).length >= 1, 5000, "the slow request's answer");
    expect(col.eventsOf(src).length).toBeGreaterThanOrEqual(1);
    const noRetry = name();
    col.delay(1500, 1);
    const { rec: failed } = await sinkRun({ ...basic(), domain: 'other', source_name: noRetry, timeout: 0.5 }, [{ seq: 0 }]);
    expect(failed.errors.join('\n')).toMatch(/no complete response within 0\.5 s \(timeout\)/);
  });

  describe('verify_ssl', () => {
    let tls: VesCollector;
    beforeAll(async () => {
      tls = await startVesCollector({ tls: await selfSignedCert(tempDir('svc-ves-tls-')) });
    }, 60_000);
    afterAll(() => tls.close());

    it('true (default) refuses a self-signed certificate and says how to accept it; false sends', async () => {
      const cfg = { type: 'ves', url: tls.url, domain: 'other', source_name: name() };
      const t = await testConnector('sink', cfg as never);
      expect(t.error).toMatch(/the server certificate is not trusted .*set verify_ssl: false/);
      const { rec } = await sinkRun({ ...cfg, verify_ssl: false }, [{ seq: 0 }]);
      expect(rec.status, JSON.stringify(rec)).toBe('success');
      expect(tls.eventsOf(cfg.source_name)).toHaveLength(1);
    });
  });
});

describe('the test collector refuses what a VES collector refuses', () => {
  const post = (path: string, body: unknown, type = 'application/json') =>
    fetch(`${col.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': type, authorization: `Basic ${Buffer.from(`${VES_USER}:${VES_PASSWORD}`).toString('base64')}` },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const header = (domain: string, extra: Rec = {}) => ({
    domain,
    eventId: 'e1',
    eventName: 'n',
    lastEpochMicrosec: 1,
    priority: 'Normal',
    reportingEntityName: 'collector-selftest',
    sequence: 0,
    sourceName: 's',
    startEpochMicrosec: 1,
    version: '4.1',
    vesEventListenerVersion: '7.1.1',
    ...extra,
  });
  const other = (extra: Rec = {}) => ({ commonEventHeader: header('other', extra), otherFields: { otherFieldsVersion: '3.0' } });

  it('accepts a valid event (202), refuses schema violations, mixed-domain batches, wrong forms and content types', async () => {
    expect((await post('/eventListener/v7', { event: other() })).status).toBe(202);
    const bad = await post('/eventListener/v7', { event: other({ priority: 'Urgent' }) });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).toContain('/event/commonEventHeader/priority must be equal to one of the allowed values');
    const missing = await post('/eventListener/v7', { event: { commonEventHeader: header('fault'), faultFields: { faultFieldsVersion: '4.0' } } });
    expect(JSON.stringify(await missing.json())).toContain("must have required property 'alarmCondition'");
    const mixed = await post('/eventListener/v7/eventBatch', {
      eventList: [other(), { commonEventHeader: header('heartbeat'), heartbeatFields: { heartbeatFieldsVersion: '3.0', heartbeatInterval: 5 } }],
    });
    expect(JSON.stringify(await mixed.json())).toContain('the events of a batch must share one domain');
    expect((await post('/eventListener/v7/eventBatch', { event: other() })).status).toBe(400);
    expect((await post('/eventListener/v7', { event: other() }, 'text/plain')).status).toBe(400);
    expect((await fetch(`${col.url}/eventListener/v7`)).status).toBe(401);
  });
});
