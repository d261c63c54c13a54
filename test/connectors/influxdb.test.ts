// The influxdb connector: the shared conformance suite against the v2 API test peer
// (peers/influxdb-v2.ts: no InfluxDB 2.x runs here), then its own cases: line protocol (types,
// escaping, timestamps and precision) read back from a real InfluxDB 1.6.7 (peers/influxdb-v1.ts,
// `api: v1`), refused lines mapped to records (real 1.6.7 partial writes, the v2 peer's 422 and
// 400), retries on 5xx, credentials, buckets and retention policies, a real server restart, and
// the source's records and failures.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpError, InfluxDB } from '@influxdata/influxdb-client';
import { loadComponent } from '../../src/config/load.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline, type RunTelemetry } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { serverMessage } from '../../src/plugins/connectors/influxdb/client.js';
import { loadLineProtocol, timestampOf, toLine, type Line, type LineOptions } from '../../src/plugins/connectors/influxdb/line-protocol.js';
import { refusedLines } from '../../src/plugins/connectors/influxdb/partial-write.js';
import type { ConnectionState } from '../../src/plugins/types.js';
import { tempDir } from '../helpers/fs.js';
import { checkSequence, conformance, uniqueChannel, type Cfg, type Rec } from './conformance.js';
import { loadPipeline, outputRecords } from './helpers.js';
import { influx1, influxdbV1SinkFixture, type Influx1 } from './peers/influxdb-v1.js';
import { influxdbFixture, influxV2Peer, queryRecords, type InfluxV2Peer } from './peers/influxdb-v2.js';
import { pace } from '../helpers/wait.js';

conformance(influxdbFixture);
conformance(influxdbV1SinkFixture);

let v1: Influx1;
let v2: InfluxV2Peer;
beforeAll(async () => {
  [v1, v2] = await Promise.all([influx1({ auth: true }), influxV2Peer()]);
  await v1.query('CREATE DATABASE svc');
}, 60_000);
afterAll(async () => {
  await Promise.all([v1?.stop(), v2?.stop()]);
}, 30_000);

const sinkV1 = (extra: Cfg = {}): Cfg => ({ type: 'influxdb', api: 'v1', url: v1.url, token: v1.token, org: 'unused', bucket: 'svc', ...extra });
const sinkV2 = (extra: Cfg = {}): Cfg => ({ type: 'influxdb', url: v2.url, token: v2.token, org: v2.org, bucket: 'svc', ...extra });

/** A manual run of `records` into one influxdb sink, with a local DLQ. */
async function write(sink: Cfg, records: Rec[], extra: Cfg = {}) {
  const dir = tempDir('svc-influx-in-');
  mkdirSync(join(dir, 'in'));
  writeFileSync(join(dir, 'in', 'r.ndjson'), records.map((r) => JSON.stringify(r) + '\n').join(''));
  const dlq = join(dir, 'dlq');
  const states: ConnectionState[] = [];
  const telemetry: RunTelemetry = { connection: (c, _t, s) => void (c.startsWith('sinks[0]') && states.push(s)) };
  const rec = await runPipeline(
    loadPipeline({
      name: 'influx-write',
      schedule: { type: 'manual' },
      source: { type: 'local', path: join(dir, 'in') },
      serializer_in: { type: 'ndjson' },
      sinks: [sink],
      on_error: 'dlq',
      dlq: { type: 'local', path: dlq, filename_template: 'dlq.ndjson', serializer_out: { type: 'ndjson' } },
      ...extra,
    }),
    { log: silentLogger, processed: new MemoryProcessedFiles(), telemetry },
  );
  return { rec, dead: outputRecords(dlq), states };
}

/** A manual run of an influxdb source into NDJSON. */
async function read(source: Cfg) {
  const out = tempDir('svc-influx-out-');
  const rec = await runPipeline(
    loadPipeline({
      name: 'influx-read',
      schedule: { type: 'manual' },
      source,
      serializer_out: { type: 'ndjson' },
      sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
    }),
    { log: silentLogger, processed: new MemoryProcessedFiles() },
  );
  return { rec, records: outputRecords(out) };
}

const lintOf = (cfg: Cfg) => loadComponent('sink', cfg, { env: {} }).diagnostics.map((d) => `${d.path}: ${d.message}`);
const fieldTypes = async (m: string) => Object.fromEntries((await v1.rows(`SHOW FIELD KEYS FROM "${m}"`, 'svc')).map((r) => [r.fieldKey, r.fieldType]));

describe('influxdb sink: line protocol, read back from InfluxDB 1.6.7', () => {
  it('tags, typed fields and the time: whole numbers are integers, float_fields and fractions floats', async () => {
    const { rec } = await write(sinkV1({ measurement: 'types', tag_fields: ['site'], timestamp_field: 'at', float_fields: ['load'] }), [
      { site: 'par-1', at: 1_700_000_000, count: 5, ratio: 0.5, load: 2, up: true, name: 'r1', nested: { a: [1] }, missing: null },
    ]);
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(await fieldTypes('types')).toEqual({ count: 'integer', ratio: 'float', load: 'float', up: 'boolean', name: 'string', nested: 'string' });
    expect(await v1.rows('SELECT * FROM types', 'svc')).toEqual([
      { time: '2023-11-14T22:13:20Z', site: 'par-1', count: 5, ratio: 0.5, load: 2, up: true, name: 'r1', nested: '{"a":[1]}' },
    ]);
  });

  it('escapes measurement, tag keys and values, field keys and string values as the spec says', async () => {
    const odd = ['a b', 'a,b', 'a=b', 'back\\slash', 'quote"d', 'é ü ✓', 'multi\nline'];
    const records = odd.map((v, i) => ({ 'tag key, odd=': odd[i]!.replace('\n', ' '), 'field key=, odd': v, n: i, t: i + 1 }));
    const { rec } = await write(sinkV1({ measurement: 'esc m,1', tag_fields: ['tag key, odd='], timestamp_field: 't' }), records);
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    const rows = await v1.rows('SELECT * FROM "esc m,1"', 'svc');
    expect(rows.map((r) => [r['field key=, odd'], r['tag key, odd=']])).toEqual(odd.map((v) => [v, v.replace('\n', ' ')]));
  });

  it('precision s, ms, us and ns: numbers in that unit, date-times truncated to it', async () => {
    const at = '2024-03-01T12:00:00.123456789Z';
    const cases = [
      ['s', 1_709_294_400, '2024-03-01T12:00:00Z'],
      ['ms', 1_709_294_400_123, '2024-03-01T12:00:00.123Z'],
      ['us', '1709294400123456', '2024-03-01T12:00:00.123456Z'],
      ['ns', '1709294400123456789', '2024-03-01T12:00:00.123456789Z'],
    ] as const;
    for (const [precision, number, expected] of cases) {
      const m = `prec_${precision}`;
      const { rec } = await write(sinkV1({ measurement: m, timestamp_field: 'at', tag_fields: ['kind'], precision }), [
        { kind: 'number', at: number, v: 1 },
        { kind: 'date', at, v: 1 },
      ]);
      expect(rec.status, JSON.stringify(rec)).toBe('success');
      expect((await v1.rows(`SELECT v FROM ${m} GROUP BY kind`, 'svc')).map((r) => r.time)).toEqual([expected]);
      expect((await v1.query(`SELECT v FROM ${m} GROUP BY kind`, 'svc')).results[0]!.series!.map((s) => s.values[0]![0])).toEqual([expected, expected]);
    }
  });

  it('without timestamp_field the server stamps the points', async () => {
    const before = Date.now();
    await write(sinkV1({ measurement: 'stamped' }), [{ v: 1 }]);
    const [row] = await v1.rows('SELECT v FROM stamped', 'svc');
    expect(Date.parse(row!.time as string)).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
  });

  it('bucket database/retention_policy writes into that retention policy', async () => {
    await v1.query('CREATE RETENTION POLICY short ON svc DURATION 1h REPLICATION 1');
    const { rec } = await write(sinkV1({ bucket: 'svc/short', measurement: 'in_rp' }), [{ v: 1 }]);
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(await v1.rows('SELECT v FROM svc.short.in_rp', 'svc')).toHaveLength(1);
    expect(await v1.rows('SELECT v FROM svc.autogen.in_rp', 'svc')).toHaveLength(0);
  });
});

describe('influxdb sink: refused records and lines', () => {
  it('what cannot be a line is dead-lettered before sending; the rest is written', async () => {
    const { rec, dead } = await write(sinkV1({ measurement: 'local', tag_fields: ['site'], timestamp_field: 'at' }), [
      { site: 'a', at: 1, v: 1 },
      { site: 'b', at: 2 },
      { site: 'c', at: 'yesterday', v: 1 },
      { site: 'd', at: 99_999_999_999, v: 1 },
      { site: 'e', at: 3, time: 5 },
      { site: 'f\\', at: 4, v: 1 },
      { site: 'g', v: 1 },
    ]);
    expect(rec.records_out).toBe(1);
    expect(dead.map((d) => d._error)).toEqual([
      'sinks[0] (influxdb): influxdb: the record has no field value to write (line protocol needs at least one field besides tags and time)',
      'sinks[0] (influxdb): influxdb: timestamp_field \'at\' is not a date-time or epoch number: "yesterday"',
      "sinks[0] (influxdb): influxdb: timestamp_field 'at' is outside InfluxDB's time range (1677-09-21 to 2262-04-11) in precision s",
      "sinks[0] (influxdb): influxdb: field 'time' is reserved by InfluxDB: rename it, or set timestamp_field: time",
      'sinks[0] (influxdb): influxdb: tag site = "f\\\\" ends with a backslash, which line protocol cannot carry',
      "sinks[0] (influxdb): influxdb: the record has no value in timestamp_field 'at'",
    ]);
    expect(await v1.rows('SELECT * FROM local', 'svc')).toHaveLength(1);
  });

  it('InfluxDB 1.6.7: a field type conflict dead-letters exactly the refused lines (400 partial write); the others land', async () => {
    await write(sinkV1({ measurement: 'conflict', tag_fields: ['id'] }), [{ id: 0, v: 1 }]);
    const { rec, dead } = await write(sinkV1({ measurement: 'conflict', tag_fields: ['id'] }), [
      { id: 1, v: 2.5 },
      { id: 2, v: 3 },
      { id: 3, v: 4.5 },
      { id: 4, w: 'x' },
    ]);
    expect(rec.records_out).toBe(2);
    expect(dead.map((d) => (d.record as Rec).id)).toEqual([1, 3]);
    expect(dead[0]!._error).toBe(
      'sinks[0] (influxdb): influxdb refused the line: field type conflict: input field "v" on measurement "conflict" is type float, already exists as type integer',
    );
    expect((await v1.rows('SELECT * FROM conflict', 'svc')).map((r) => r.id).sort()).toEqual(['0', '2', '4']);
  });

  it('float_fields keeps a field a float whatever the value', async () => {
    const { rec } = await write(sinkV1({ measurement: 'floats', tag_fields: ['id'], float_fields: ['v'] }), [
      { id: 1, v: 1 },
      { id: 2, v: 2.5 },
    ]);
    expect(rec.records_out).toBe(2);
    expect(await fieldTypes('floats')).toEqual({ v: 'float' });
  });

  it('InfluxDB 1.6.7: lines refused without being named (retention policy) dead-letter the whole batch', async () => {
    const { rec, dead } = await write(sinkV1({ bucket: 'svc/short', measurement: 'old', timestamp_field: 'at', tag_fields: ['id'] }), [
      { id: 1, at: 1, v: 1 },
      { id: 2, at: Math.floor(Date.now() / 1000), v: 1 },
    ]);
    expect(rec.records_out).toBe(0);
    expect(dead).toHaveLength(2);
    expect(dead[0]!._error).toContain(
      'the server refused some lines of the batch without naming them (partial write: points beyond retention policy dropped=1)',
    );
  });

  it('the v2 peer: a 422 partial write dead-letters the conflicting lines, the others are written', async () => {
    const m = uniqueChannel('influxdb');
    await write(sinkV2({ measurement: m, tag_fields: ['id'] }), [{ id: 0, v: 1 }]);
    const { rec, dead } = await write(sinkV2({ measurement: m, tag_fields: ['id'] }), [
      { id: 1, v: 1.5 },
      { id: 2, v: 2 },
    ]);
    expect(rec.records_out).toBe(1);
    expect(dead.map((d) => (d.record as Rec).id)).toEqual([1]);
    expect(dead[0]!._error).toContain('field type conflict: input field "v" on measurement');
    expect((await queryRecords(v2, m)).map((r) => r.id).sort()).toEqual(['0', '2']);
  });

  describe('answers as the servers send them', () => {
    const opts: LineOptions = { measurement: 'm', tagFields: new Set(['t']), precision: 's', floatFields: new Set() };
    const lines = (rs: Rec[]) => rs.map((r) => toLine(r, opts) as Line);
    beforeAll(() => loadLineProtocol());
    /** The HttpError of posting `body` as it is. */
    const refusal = async (url: string, path: string, body: string, headers: Record<string, string>) => {
      try {
        await new InfluxDB({ url, headers }).transport.request(path, body, { method: 'POST', headers: { 'content-type': 'text/plain' } });
      } catch (e) {
        if (e instanceof HttpError) return { status: e.statusCode, message: serverMessage(e), json: e.json };
        throw e;
      }
      throw new Error('the write was taken');
    };
    const basic = () => ({ authorization: `Basic ${Buffer.from(v1.token).toString('base64')}` });

    it('InfluxDB 1.6.7: a line that does not parse is named, the others were written', async () => {
      const ls = lines([
        { t: 'a', v: 1 },
        { t: 'b', v: 2 },
      ]);
      const body = [ls[0]!.text, 'm,t=x v=', ls[1]!.text].join('\n');
      const answer = await refusal(v1.url, '/write?db=svc&precision=s', body, basic());
      expect(answer.status).toBe(400);
      const bad = { text: 'm,t=x v=', fields: new Map() } as Line;
      const r = refusedLines([ls[0]!, bad, ls[1]!], answer);
      expect(r).toEqual({ lines: new Map([[1, 'unable to parse the line: missing field value']]), othersWritten: true });
    });

    it('the v2 peer: a line that does not parse refuses the batch (400 invalid): the others are to be written again', async () => {
      const ls = lines([{ t: 'a', v: 1 }]);
      const bad = { text: 'm,t=x v=1 notatime', fields: new Map() } as Line;
      const answer = await refusal(v2.url, `/api/v2/write?org=${v2.org}&bucket=svc&precision=s`, [ls[0]!.text, bad.text].join('\n'), {
        authorization: `Token ${v2.token}`,
      });
      expect(answer).toMatchObject({ status: 400, json: { code: 'invalid', message: "unable to parse 'm,t=x v=1 notatime': bad timestamp" } });
      expect(refusedLines([ls[0]!, bad], answer)).toEqual({ lines: new Map([[1, 'unable to parse the line: bad timestamp']]), othersWritten: false });
    });

    it('InfluxDB 3 (`data[].line_number`) and the v2 LineProtocolError `line`', () => {
      const ls = lines([
        { t: 'a', v: 1 },
        { t: 'b', v: 2 },
        { t: 'c', v: 3 },
      ]);
      const v3 = {
        status: 400,
        message: 'partial write of line protocol occurred',
        json: { error: 'partial write of line protocol occurred', data: [{ original_line: 'x', line_number: 2, error_message: 'invalid column type' }] },
      };
      expect(refusedLines(ls, v3)).toEqual({ lines: new Map([[1, 'invalid column type']]), othersWritten: true });
      expect(refusedLines(ls, { status: 400, message: 'bad line', json: { code: 'invalid', message: 'bad line', line: 3 } })).toEqual({
        lines: new Map([[2, 'bad line']]),
        othersWritten: false,
      });
      expect(refusedLines(ls, { status: 400, message: 'something else' })).toBeUndefined();
    });
  });
});

describe('influxdb sink: failures', () => {
  it('a 503 or 429 is retried (retry_count); without retries the batch fails', async () => {
    const m = uniqueChannel('influxdb');
    await v2.failWrites(2, 503);
    const retried = await write(sinkV2({ measurement: m, retry_count: 2, retry_delay_seconds: 0.05 }), [{ v: 1 }]);
    expect(retried.rec.records_out).toBe(1);
    await v2.failWrites(1, 429);
    const once = await write(sinkV2({ measurement: m }), [{ v: 2 }]);
    expect(once.rec.records_out).toBe(0);
    expect(once.dead[0]!._error).toMatch(/answered 429: the peer was told to refuse this write/);
  });

  it('wrong credentials fail at once (no retries) and test() says so without the secret', async () => {
    const v1Bad = await write(sinkV1({ measurement: 'x', token: 'admin:wrong-secret', retry_count: 3, retry_delay_seconds: 5 }), [{ v: 1 }]);
    expect(v1Bad.dead[0]!._error).toMatch(/\/write answered 401: authorization failed \(check the token \(username:password\) and its write permission\)/);
    const v2Bad = await testConnector('sink', sinkV2({ measurement: 'x', token: 'wrong-token' }) as never);
    expect(v2Bad.error).toMatch(/^influxdb: http:\/\/127\.0\.0\.1:\d+\/api\/v2\/write answered 401: unauthorized access \(check the token/);
    expect(v2Bad.error).not.toContain('wrong-token');
  }, 20_000);

  it('test() names a missing database, bucket or org', async () => {
    expect((await testConnector('sink', sinkV1({ measurement: 'x' }) as never)).ok).toBe(true);
    expect((await testConnector('sink', sinkV2({ measurement: 'x' }) as never)).ok).toBe(true);
    expect((await testConnector('sink', sinkV1({ measurement: 'x', bucket: 'nope' }) as never)).error).toMatch(
      /answered 404: database not found: "nope" \(check bucket \(the database\)\)/,
    );
    expect((await testConnector('sink', sinkV2({ measurement: 'x', bucket: 'nope' }) as never)).error).toMatch(
      /answered 404: bucket "nope" not found \(check org and bucket\)/,
    );
    expect((await testConnector('sink', sinkV2({ measurement: 'x', org: 'nope' }) as never)).error).toMatch(/answered 404: organization name "nope" not found/);
    expect((await testConnector('sink', sinkV1({ measurement: 'x', bucket: 'svc/nope' }) as never)).error).toMatch(
      /retention policy not found: nope \(check bucket/,
    );
  });

  it('the v2 API against InfluxDB 1.6.7 says to set api: v1', async () => {
    const r = await testConnector('sink', sinkV1({ api: 'v2', measurement: 'x' }) as never);
    expect(r.error).toMatch(/\/api\/v2\/write answered 404 \(404 page not found\): the server \(InfluxDB 1\.6\.7~rc0\) has no v2 API: set api: v1$/);
  });

  it('lint: api v1 needs username:password; tag, float and timestamp fields do not overlap; the measurement', () => {
    expect(lintOf({ ...sinkV1({ measurement: 'x' }), token: 'abc' })).toEqual([
      'token: with api: v1 the token is username:password (any pair, for a server without authentication)',
    ]);
    expect(lintOf(sinkV2({ measurement: 'x', tag_fields: ['a', 'b'], timestamp_field: 'a', float_fields: ['b'] }))).toEqual([
      "timestamp_field: 'a' is also in tag_fields: a field is either the time or a tag",
      "float_fields: 'b' is in tag_fields: tags are text, not floats",
    ]);
    expect(lintOf(sinkV2({ measurement: 'x\\' }))).toEqual(['measurement: ends with a backslash, which line protocol cannot carry']);
  });

  it('timestamps: epoch numbers and digit strings in precision units, RFC 3339 with offsets, floor before 1970', () => {
    expect(timestampOf(1.9, 't', 's')).toBe(1n);
    expect(timestampOf('1700000000000', 't', 'ms')).toBe(1_700_000_000_000n);
    expect(timestampOf('2024-01-01T01:00:00+01:00', 't', 's')).toBe(1_704_067_200n);
    expect(timestampOf('2024-01-01 00:00:00.5', 't', 'ms')).toBe(1_704_067_200_500n);
    expect(timestampOf('2024-01-01', 't', 's')).toBe(1_704_067_200n);
    expect(timestampOf('1969-12-31T23:59:59.5Z', 't', 's')).toBe(-1n);
  });

  it('loses nothing while InfluxDB 1.6.7 restarts (the runtime retries; duplicates possible)', async () => {
    const m = 'restart';
    const dir = tempDir('svc-influx-in-');
    mkdirSync(join(dir, 'in'));
    writeFileSync(join(dir, 'in', 'r.ndjson'), Array.from({ length: 1000 }, (_, i) => JSON.stringify({ seq: i, v: 1 }) + '\n').join(''));
    const states: ConnectionState[] = [];
    const running = runPipeline(
      loadPipeline({
        name: 'influx-restart',
        schedule: { type: 'manual' },
        source: { type: 'local', path: join(dir, 'in') },
        serializer_in: { type: 'ndjson' },
        sinks: [sinkV1({ measurement: m, tag_fields: ['seq'], retry_count: 10, retry_delay_seconds: 0.2 })],
        record_chunk_size: 50,
        rate_limit_rps: 5,
      }),
      { log: silentLogger, processed: new MemoryProcessedFiles(), telemetry: { connection: (_c, _t, s) => void states.push(s) } },
    );
    await pace(500); // the restart lands mid-run
    await v1.restart(1500);
    const rec = await running;
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(rec.records_out).toBe(1000);
    const seqs = (await v1.query(`SELECT count(v) FROM ${m} GROUP BY seq`, 'svc')).results[0]!.series!.map((s) => ({
      seq: Number((s as unknown as { tags: { seq: string } }).tags.seq),
    }));
    expect(checkSequence(seqs, 1000).missing).toEqual([]);
    expect(states).toContain('disconnected');
    expect(states.at(-1)).toBe('connected');
  }, 60_000);
});

describe('influxdb source', () => {
  const m = uniqueChannel('influxdb');
  beforeAll(async () => {
    const { rec } = await write(sinkV2({ measurement: m, tag_fields: ['host'], timestamp_field: 't' }), [
      { host: 'a', t: 1, n: 1, x: 0.5, ok: true, s: 'one, "quoted"' },
      { host: 'a', t: 2, n: 2, x: 1.5, ok: false, s: 'two' },
      { host: 'b', t: 1, n: 3, x: 2.5, ok: true, s: 'three' },
    ]);
    expect(rec.records_out).toBe(3);
  });
  const src = (query: string, extra: Cfg = {}): Cfg => ({ type: 'influxdb', url: v2.url, token: v2.token, org: v2.org, query, ...extra });

  it('one record per row, every column but result and table, typed by #datatype', async () => {
    const r = await read(
      src(
        `from(bucket: "svc") |> range(start: 0) |> filter(fn: (r) => r._measurement == "${m}") |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")`,
      ),
    );
    expect(r.rec.status, JSON.stringify(r.rec)).toBe('success');
    expect(r.records).toHaveLength(3);
    expect(r.records[0]).toEqual({
      _start: '1970-01-01T00:00:00Z',
      _stop: expect.any(String),
      _time: '1970-01-01T00:00:01Z',
      _measurement: m,
      host: 'a',
      n: 1,
      ok: true,
      s: 'one, "quoted"',
      x: 0.5,
    });
    expect(r.records.map((x) => [x.host, x.n])).toEqual([
      ['a', 1],
      ['a', 2],
      ['b', 3],
    ]);
  });

  it('an unpivoted query: one record per field value (_field, _value)', async () => {
    const r = await read(src(`from(bucket: "svc") |> range(start: 0) |> filter(fn: (r) => r._measurement == "${m}") |> filter(fn: (r) => r._field == "x")`));
    expect(r.records.map((x) => [x.host, x._field, x._value])).toEqual([
      ['a', 'x', 0.5],
      ['a', 'x', 1.5],
      ['b', 'x', 2.5],
    ]);
  });

  it('an empty result is a successful run without records', async () => {
    const r = await read(src(`from(bucket: "svc") |> range(start: 0) |> filter(fn: (r) => r._measurement == "nothing")`));
    expect(r.rec.status).toBe('success');
    expect(r.rec.records_in).toBe(0);
  });

  it("a refused query fails the run with the server's message", async () => {
    const r = await read(src('from(bucket: "svc") |> mean()'));
    expect(r.rec.status).toBe('failed');
    expect(r.rec.error).toMatch(/^influxdb: http:\/\/127\.0\.0\.1:\d+\/api\/v2\/query answered 400: compilation failed/);
    const unbounded = await read(src('from(bucket: "svc")'));
    expect(unbounded.rec.error).toContain(`cannot submit unbounded read to "svc"; try bounding 'from' with a call to 'range'`);
  });

  it('test() checks token, org and the Flux API; InfluxDB 1.6.7 has none', async () => {
    expect((await testConnector('source', src('x') as never)).ok).toBe(true);
    expect((await testConnector('source', src('x', { org: 'nope' }) as never)).error).toMatch(/answered 404: organization name "nope" not found/);
    const old = await testConnector('source', src('x', { url: v1.url, token: v1.token }) as never);
    expect(old.error).toMatch(
      /\/api\/v2\/query answered 404: the server \(InfluxDB 1\.6\.7~rc0\) has no Flux query API: Flux needs InfluxDB 2\.x, or 1\.8\+ with flux-enabled = true$/,
    );
  });

  it('reads what the sink wrote through a real server round trip of types', async () => {
    const r = await read(
      src(
        `from(bucket: "svc") |> range(start: 0) |> filter(fn: (r) => r._measurement == "${m}") |> filter(fn: (r) => r.host == "b") |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")`,
      ),
    );
    expect(r.records.map(({ n, x, ok, s }) => ({ n, x, ok, s }))).toEqual([{ n: 3, x: 2.5, ok: true, s: 'three' }]);
  });
});
