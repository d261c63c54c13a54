// prometheus_rw: the remote-write decoder, the served path under a real `svc serve` (204, 401,
// 400 for bad snappy and bad protobuf, 503 while the queue is full, replay from the spool), and
// Debian's real Prometheus 2.42 in agent mode scraping the daemon's /metrics and remote-writing it
// back (records with real metric names, labels and values; a full queue answered 503 and re-sent
// by Prometheus without loss).
// Plus the conformance suite, with the product's webhook route serving the fixture's hub.
import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import * as snappy from 'snappyjs';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { serveChild, testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/fs.js';
import { loadPipeline, outputRecords, until, type Cfg, type Rec } from './helpers.js';
import { runPipeline } from '../../src/engine/runner.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { silentLogger } from '../../src/observability/log.js';
import { checkWriteRequest, decodeBody, RemoteWriteError, uncompress } from '../../src/plugins/connectors/prometheus_rw/decode.js';
import { encodeBody, encodeWriteRequest, STALE_NAN } from '../../src/plugins/connectors/prometheus_rw/encode.js';
import { holdingServer, prometheusAgent, prometheusRwFixture, RW_HEADERS } from './peers/prometheus.js';
import { conformance } from './conformance.js';
import { pace, quiet } from '../helpers/wait.js';

conformance(prometheusRwFixture);

const T0 = Date.UTC(2026, 0, 2, 3, 4, 5, 678);

/** A stream pipeline reading prometheus_rw `source` into `sink` (default: NDJSON files in `out`). */
async function servePipeline(d: TestDaemon, name: string, source: Cfg, out: string, sink?: Cfg) {
  const yamlText = stringify({
    version: '1',
    pipeline: {
      name,
      schedule: { type: 'stream' },
      source: { type: 'prometheus_rw', ...source },
      serializer_in: { type: 'json' },
      serializer_out: { type: 'ndjson' },
      sinks: [sink ?? { type: 'local', path: out, filename_template: 'out.ndjson' }],
    },
  });
  const r = await d.call('POST', '/api/pipelines', { yaml: yamlText });
  expect(r.status, r.text).toBe(201);
  const path = (source.path as string | undefined) ?? 'prom-rw';
  // Served once the stream runs: an empty WriteRequest is a valid body (no samples).
  await until(async () => (await post(d, path, encodeBody([]), source.secret as string | undefined)).status === 204, 15_000);
}

/** The records written so far; none while a line is half written (read again on the next poll). */
function settledRecords(dir: string): Rec[] {
  try {
    return outputRecords(dir);
  } catch {
    return [];
  }
}

const post = (d: TestDaemon, path: string, body: Buffer, secret?: string, headers: Record<string, string> = RW_HEADERS) =>
  fetch(`${d.url}/webhooks/${path}`, { method: 'POST', headers: { ...headers, ...(secret ? { authorization: `Bearer ${secret}` } : {}) }, body });

describe('prometheus_rw: the remote-write decoder', () => {
  it('turns every sample into a record: name, labels, value, ISO timestamp and timestamp_ms', () => {
    const body = encodeBody([
      {
        labels: { __name__: 'ifHCInOctets', instance: 'rtr1:9116', ifName: 'ge-0/0/0', site: 'Zürich' },
        samples: [
          { value: 1234.5, timestamp_ms: T0 },
          { value: 1300, timestamp_ms: T0 + 15_000 },
        ],
      },
      { labels: { __name__: 'up', job: 'snmp' }, samples: [{ value: 1, timestamp_ms: T0 }] },
    ]);
    const { records } = decodeBody(body);
    expect(records).toEqual([
      {
        name: 'ifHCInOctets',
        labels: { instance: 'rtr1:9116', ifName: 'ge-0/0/0', site: 'Zürich' },
        value: 1234.5,
        timestamp: '2026-01-02T03:04:05.678Z',
        timestamp_ms: T0,
      },
      {
        name: 'ifHCInOctets',
        labels: { instance: 'rtr1:9116', ifName: 'ge-0/0/0', site: 'Zürich' },
        value: 1300,
        timestamp: '2026-01-02T03:04:20.678Z',
        timestamp_ms: T0 + 15_000,
      },
      { name: 'up', labels: { job: 'snmp' }, value: 1, timestamp: '2026-01-02T03:04:05.678Z', timestamp_ms: T0 },
    ]);
    // Records of one series do not share their labels object (transforms change records in place).
    expect(records[0]!.labels).not.toBe(records[1]!.labels);
  });

  it('writes NaN and the infinities as "NaN", "+Inf", "-Inf", a stale marker as value null with stale: true', () => {
    const { records } = decodeBody(
      encodeBody([
        {
          labels: { __name__: 'm' },
          samples: [
            { value: NaN, timestamp_ms: T0 },
            { value: Infinity, timestamp_ms: T0 },
            { value: -Infinity, timestamp_ms: T0 },
            { value: STALE_NAN, timestamp_ms: T0 },
            { value: -0.25, timestamp_ms: T0 },
          ],
        },
      ]),
    );
    expect(records.map((r) => r.value)).toEqual(['NaN', '+Inf', '-Inf', null, -0.25]);
    expect(records.map((r) => r.stale)).toEqual([undefined, undefined, undefined, true, undefined]);
    // JSON carries them all.
    expect(JSON.parse(JSON.stringify(records)).map((r: Rec) => r.value)).toEqual(['NaN', '+Inf', '-Inf', null, -0.25]);
  });

  it('keeps float64 values exact through JSON, reads negative (pre-1970) timestamps, and a series without __name__', () => {
    // eslint-disable-next-line no-loss-of-precision -- uint64's maximum as a sender writes it: the double it parses to
    const values = [2 ** 53 + 2, 2 ** 64, 1e-300, 0.1 + 0.2, 18446744073709551615];
    const { records } = decodeBody(encodeBody([{ labels: { job: 'x' }, samples: values.map((value, i) => ({ value, timestamp_ms: -1000 * (i + 1) })) }]));
    expect(JSON.parse(JSON.stringify(records)).map((r: Rec) => r.value)).toEqual(values);
    expect(records[0]).toMatchObject({ name: '', labels: { job: 'x' }, timestamp: '1969-12-31T23:59:59.000Z', timestamp_ms: -1000 });
  });

  it('skips unknown fields, and counts metadata, exemplars and native histograms without making records of them', () => {
    // A TimeSeries with an exemplar (field 3) and a histogram (field 4), a WriteRequest with a
    // metadata entry (field 3) and an unknown varint field 15: built from raw protobuf bytes.
    const series = encodeWriteRequest([{ labels: { __name__: 'h' }, samples: [{ value: 7, timestamp_ms: T0 }] }]);
    const inner = series.subarray(2); // the TimeSeries bytes (tag 0x0a + 1-byte length before)
    expect(series[0]).toBe(0x0a);
    const extra = Buffer.from([0x1a, 0x00, 0x22, 0x00]); // exemplars=3 (empty), histograms=4 (empty)
    const ts = Buffer.concat([inner, extra]);
    const req = Buffer.concat([Buffer.from([0x0a, ts.length]), ts, Buffer.from([0x1a, 0x02, 0x08, 0x01, 0x78, 0x05])]);
    const { records, ignored } = decodeBody(Buffer.from(snappy.compress(req)));
    expect(records.map((r) => [r.name, r.value])).toEqual([['h', 7]]);
    expect(ignored).toEqual({ exemplars: 1, histograms: 1, metadata: 1 });
    expect(checkWriteRequest(req)).toBe(1);
  });

  it('refuses a body that is not a snappy block, and protobuf that is truncated or of the wrong wire types', () => {
    expect(() => uncompress(Buffer.from('{"seq":1}'))).toThrow(RemoteWriteError);
    expect(() => uncompress(Buffer.alloc(0))).toThrow(/empty body/);
    // A snappy block that declares 2^31 bytes: refused before anything is allocated.
    expect(() => uncompress(Buffer.from([0x80, 0x80, 0x80, 0x80, 0x08]))).toThrow(/too big|snappy/);
    const good = encodeWriteRequest([{ labels: { __name__: 'x' }, samples: [{ value: 1, timestamp_ms: T0 }] }]);
    expect(() => checkWriteRequest(good.subarray(0, good.length - 3))).toThrow(/malformed protobuf WriteRequest/);
    expect(() => checkWriteRequest(Buffer.from([0x08, 0x01]))).toThrow(/wrong wire type/); // timeseries as a varint
    expect(() => checkWriteRequest(Buffer.from([0x0a, 0x02, 0x08, 0x01]))).toThrow(/wrong wire type/); // labels as a varint
    expect(() => checkWriteRequest(Buffer.from([0x0a, 0x04, 0x12, 0x02, 0x08, 0x01]))).toThrow(/wrong wire type/); // sample value as a varint
    expect(() => checkWriteRequest(Buffer.from([0x1b]))).toThrow(/unsupported wire type 3/); // a group (proto2), never in remote write
    // A timestamp no Date holds is refused on arrival, not dead-lettered later.
    expect(() => checkWriteRequest(encodeWriteRequest([{ labels: {}, samples: [{ value: 1, timestamp_ms: 2 ** 60 }] }]))).toThrow(/out of range/);
  });
});

describe('prometheus_rw: the served path (svc serve)', () => {
  it('answers 204 and hands each sample on as a record; 401 without or with a wrong bearer token', async () => {
    const d = await testDaemon();
    const out = tempDir('svc-prw-out-');
    await servePipeline(d, 'prw-basic', { path: 'prom/dc1', secret: 's3cret-token' }, out);
    const body = encodeBody([
      { labels: { __name__: 'node_load1', instance: 'a:9100' }, samples: [{ value: 0.5, timestamp_ms: T0 }] },
      { labels: { __name__: 'node_up', instance: 'a:9100' }, samples: [{ value: STALE_NAN, timestamp_ms: T0 + 1 }] },
    ]);
    const ok = await post(d, 'prom/dc1', body, 's3cret-token');
    expect(ok.status).toBe(204);
    expect(await ok.text()).toBe('');
    await until(() => outputRecords(out).length >= 2, 15_000, 'two records');
    expect(outputRecords(out)).toEqual([
      { name: 'node_load1', labels: { instance: 'a:9100' }, value: 0.5, timestamp: '2026-01-02T03:04:05.678Z', timestamp_ms: T0 },
      { name: 'node_up', labels: { instance: 'a:9100' }, value: null, timestamp: '2026-01-02T03:04:05.679Z', timestamp_ms: T0 + 1, stale: true },
    ]);
    for (const secret of [undefined, 'wrong-token']) {
      const r = await post(d, 'prom/dc1', body, secret);
      expect(r.status).toBe(401);
      expect(await r.text()).not.toContain('s3cret-token');
    }
    expect(outputRecords(out)).toHaveLength(2);
  });

  it('answers 400 to a body that is not snappy protobuf (Prometheus drops it) and queues nothing of it', async () => {
    const d = await testDaemon();
    const out = tempDir('svc-prw-out-');
    await servePipeline(d, 'prw-bad', { path: 'prom-bad' }, out);
    const notSnappy = await post(d, 'prom-bad', Buffer.from('{"seq": 1}'));
    expect(notSnappy.status).toBe(400);
    expect(((await notSnappy.json()) as { detail: string }).detail).toMatch(/not a snappy block/);
    const notProtobuf = await post(d, 'prom-bad', Buffer.from(snappy.compress(Buffer.from([0x0a, 0x09, 0x01]))));
    expect(notProtobuf.status).toBe(400);
    expect(((await notProtobuf.json()) as { detail: string }).detail).toMatch(/malformed protobuf WriteRequest/);
    // A good body afterwards goes through alone: nothing of the bad ones was queued.
    expect((await post(d, 'prom-bad', encodeBody([{ labels: { __name__: 'after' }, samples: [{ value: 3, timestamp_ms: T0 }] }]))).status).toBe(204);
    await until(() => outputRecords(out).length >= 1, 15_000, 'the good record');
    await quiet(300);
    expect(outputRecords(out).map((r) => r.name)).toEqual(['after']);
    const runs = await d.call('GET', '/api/pipelines/prw-bad/runs');
    expect(JSON.stringify(runs.body)).not.toMatch(/dead|dlq_records":[1-9]/);
  });

  it('answers 503 while max_queue_size requests wait (a blocked sink), and delivers every accepted one after', async () => {
    const d = await testDaemon();
    const sink = await holdingServer();
    try {
      await servePipeline(d, 'prw-full', { path: 'prom-full', max_queue_size: 2 }, '', {
        type: 'rest',
        url: sink.url,
        content_type: 'application/x-ndjson',
        timeout: 60,
      });
      sink.block();
      let accepted = 0;
      let full = 0;
      let retryAfter: string | null = null;
      for (let i = 0; i < 40 && full === 0; i++) {
        const r = await post(d, 'prom-full', encodeBody([{ labels: { __name__: 'q', i: String(i) }, samples: [{ value: i, timestamp_ms: T0 + i }] }]));
        if (r.status === 204) accepted++;
        else if (r.status === 503) {
          full++;
          retryAfter = r.headers.get('retry-after');
          expect(((await r.json()) as { detail: string }).detail).toMatch(/queue .* is full/);
        } else throw new Error(`unexpected ${r.status}`);
      }
      expect(full).toBe(1);
      expect(retryAfter).toBe('1');
      // While full, even a malformed body is a 503 (no decoding work for a full queue): it is checked when sent again.
      expect((await post(d, 'prom-full', Buffer.from('not snappy'))).status).toBe(503);
      // Held by the runner (in flight) plus the 2 the queue holds.
      expect(accepted).toBeGreaterThanOrEqual(2);
      expect(accepted).toBeLessThan(40);
      sink.release();
      await until(() => sink.lines.length >= accepted, 20_000, `${accepted} records at the sink`);
      const values = sink.lines.map((l) => (JSON.parse(l) as Rec).value as number).sort((a, b) => a - b);
      expect(values).toEqual(Array.from({ length: accepted }, (_, i) => i));
    } finally {
      sink.release();
      await sink.close();
    }
  }, 60_000);

  it('spools the compressed body before answering: after kill -9 the restarted daemon decodes and delivers it', async () => {
    const dir = tempDir('svc-prw-daemon-');
    const env = { SVC_DB_PATH: join(dir, 'svc.db'), SVC_STATE_DIR: '', SVC_PIPELINE_DIR: join(dir, 'pipelines') };
    const sink = await holdingServer();
    try {
      const first = await serveChild(env);
      const yamlText = stringify({
        version: '1',
        pipeline: {
          name: 'prw-spool',
          schedule: { type: 'stream' },
          source: { type: 'prometheus_rw', path: 'prom-spool' },
          sinks: [{ type: 'rest', url: sink.url, content_type: 'application/x-ndjson' }],
          serializer_out: { type: 'ndjson' },
        },
      });
      const created = await fetch(first.url + '/api/pipelines', { method: 'POST', body: yamlText, headers: { 'content-type': 'application/yaml' } });
      expect(created.status, await created.text()).toBe(201);
      const postTo = (url: string, body: Buffer) => fetch(`${url}/webhooks/prom-spool`, { method: 'POST', headers: RW_HEADERS, body });
      await until(async () => (await postTo(first.url, encodeBody([]))).status === 204, 15_000);
      // The downstream holds its answer: the sample is accepted (204) and not delivered when the daemon dies.
      sink.block();
      expect((await postTo(first.url, encodeBody([{ labels: { __name__: 'spooled', host: 'h1' }, samples: [{ value: 42, timestamp_ms: T0 }] }]))).status).toBe(
        204,
      );
      first.child.kill('SIGKILL');
      await first.exited;
      sink.lines.splice(0);
      sink.release();
      // The spool holds the body as Prometheus sent it (snappy), not decoded records.
      const seg = readdirSync(join(dir, 'state', 'spool', 'prw-spool', 'prom-spool')).find((f) => f.endsWith('.seg'))!;
      expect(readFileSync(join(dir, 'state', 'spool', 'prw-spool', 'prom-spool', seg)).includes(Buffer.from('"spooled"'))).toBe(false);
      const second = await serveChild(env);
      await until(
        () => sink.lines.some((l) => (JSON.parse(l) as Rec).name === 'spooled'),
        20_000,
        `the spooled sample after the restart; stderr: ${second.stderr()}`,
      );
      const rec = sink.lines.map((l) => JSON.parse(l) as Rec).find((r) => r.name === 'spooled');
      expect(rec).toEqual({ name: 'spooled', labels: { host: 'h1' }, value: 42, timestamp: '2026-01-02T03:04:05.678Z', timestamp_ms: T0 });
      second.child.kill('SIGKILL');
      await second.exited;
    } finally {
      sink.release();
      await sink.close();
    }
  }, 60_000);

  it('needs the daemon: under `svc run` (no webhook hub) the source fails with what to do', async () => {
    const rec = await runPipeline(
      loadPipeline({
        name: 'prw-cli',
        schedule: { type: 'stream' },
        source: { type: 'prometheus_rw' },
        sinks: [{ type: 'local', path: tempDir('svc-prw-out-') }],
      }),
      { log: silentLogger, processed: new MemoryProcessedFiles() },
    );
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(/prometheus_rw source needs the daemon: run the pipeline with `svc serve`/);
  });
});

describe('prometheus_rw: with Prometheus 2.42 in agent mode', () => {
  it('receives what Prometheus scraped from the daemon /metrics: real metric names, labels and values', async () => {
    const d = await testDaemon();
    const out = tempDir('svc-prw-out-');
    await servePipeline(d, 'prw-prom', { path: 'prom-rw', secret: 'agent-token' }, out);
    const target = new URL(d.url).host;
    const prom = await prometheusAgent({ target, remoteWriteUrl: `${d.url}/webhooks/prom-rw`, secret: 'agent-token' });
    try {
      const recs = await until(
        () => {
          const r = settledRecords(out);
          return r.some((x) => x.name === 'up') &&
            r.some((x) => x.name === 'svc_process_process_cpu_seconds_total') &&
            r.some((x) => x.name === 'svc_records_in_total')
            ? r
            : undefined;
        },
        45_000,
        'up, svc_process_process_cpu_seconds_total and svc_records_in_total from Prometheus',
      );
      const up = recs.find((r) => r.name === 'up')!;
      expect(up).toMatchObject({ labels: { job: 'svc', instance: target }, value: 1 });
      expect(Math.abs((up.timestamp_ms as number) - Date.now())).toBeLessThan(60_000);
      expect(new Date(up.timestamp as string).getTime()).toBe(up.timestamp_ms);
      const cpu = recs.find((r) => r.name === 'svc_process_process_cpu_seconds_total')!;
      expect(typeof cpu.value).toBe('number');
      expect(cpu.value as number).toBeGreaterThan(0);
      // Our own pipeline counter (it counts these very records), labelled with the pipeline, as scraped.
      const own = recs.find((r) => r.name === 'svc_records_in_total' && (r.labels as Rec).pipeline === 'prw-prom');
      expect(own).toBeDefined();
      expect((own!.labels as Rec).job).toBe('svc');
      // Prometheus sent nothing we refused.
      expect(await prom.value('prometheus_remote_storage_samples_failed_total')).toBe(0);
    } finally {
      await prom.stop();
    }
  }, 90_000);

  it('a wrong bearer token is refused (401) and Prometheus counts the samples as failed', async () => {
    const d = await testDaemon();
    const out = tempDir('svc-prw-out-');
    await servePipeline(d, 'prw-prom-401', { path: 'prom-401', secret: 'right-token' }, out);
    const prom = await prometheusAgent({ target: new URL(d.url).host, remoteWriteUrl: `${d.url}/webhooks/prom-401`, secret: 'wrong-token' });
    try {
      await until(async () => (await prom.value('prometheus_remote_storage_samples_failed_total')) > 0, 45_000, 'failed samples at Prometheus');
      expect(outputRecords(out)).toEqual([]);
    } finally {
      await prom.stop();
    }
  }, 90_000);

  it('a full queue answers 503, Prometheus re-sends, and no scrape is lost across the outage', async () => {
    const d = await testDaemon();
    const sink = await holdingServer();
    const prom = { stop: async () => {} } as Awaited<ReturnType<typeof prometheusAgent>>;
    let agent = prom;
    try {
      await servePipeline(d, 'prw-prom-503', { path: 'prom-503', secret: 'agent-token', max_queue_size: 1 }, '', {
        type: 'rest',
        url: sink.url,
        content_type: 'application/x-ndjson',
        timeout: 60,
      });
      const target = new URL(d.url).host;
      agent = await prometheusAgent({ target, remoteWriteUrl: `${d.url}/webhooks/prom-503`, secret: 'agent-token' });
      const upTimes = () =>
        [
          ...new Set(
            sink.lines
              .map((l) => JSON.parse(l) as Rec)
              .filter((r) => r.name === 'up')
              .map((r) => r.timestamp_ms as number),
          ),
        ].sort((a, b) => a - b);
      await until(() => upTimes().length >= 2, 45_000, 'the first scrapes');
      // Outage: the downstream stops answering; the queue (1 request) fills and the path answers 503.
      sink.block();
      await until(async () => (await agent.value('prometheus_remote_storage_samples_retried_total')) > 0, 45_000, 'Prometheus retrying after 503s');
      await pace(3000); // the outage lasts 3 s
      const releasedAt = Date.now();
      sink.release();
      // Every scrape (one `up` sample a second) from before the outage to after it arrived.
      await until(() => upTimes().some((t) => t > releasedAt + 2000), 45_000, 'scrapes after the outage');
      const times = upTimes();
      const gaps = times.slice(1).map((t, i) => t - times[i]!);
      console.log(
        `[prometheus_rw] outage: ${times.length} scrapes received, largest gap ${Math.max(...gaps)} ms, retried samples ${await agent.value('prometheus_remote_storage_samples_retried_total')}`,
      );
      expect(Math.max(...gaps)).toBeLessThan(1900);
      expect(await agent.value('prometheus_remote_storage_samples_failed_total')).toBe(0);
      expect(await agent.value('prometheus_remote_storage_samples_dropped_total')).toBe(0);
      // The same sample may come twice (a request answered 503 is sent again whole): counted, not lost.
      const all = sink.lines.map((l) => JSON.parse(l) as Rec).filter((r) => r.name === 'up');
      console.log(`[prometheus_rw] outage: ${all.length} up samples for ${times.length} scrapes (${all.length - times.length} duplicates)`);
    } finally {
      sink.release();
      await agent.stop();
      await sink.close();
    }
  }, 120_000);

  it('promtool check metrics accepts the daemon /metrics', async () => {
    const d = await testDaemon();
    const text = (await d.call('GET', '/metrics')).text;
    const child = execFile('promtool', ['check', 'metrics']);
    const done = new Promise<{ code: number | null; out: string }>((resolve) => {
      let outText = '';
      child.stdout!.on('data', (s: Buffer) => (outText += s.toString()));
      child.stderr!.on('data', (s: Buffer) => (outText += s.toString()));
      child.on('close', (code) => resolve({ code, out: outText }));
    });
    child.stdin!.end(text);
    const r = await done;
    // promtool 2.42 exits 1 on lint advice too (it has no --lint=none). The exposition parses (a
    // parse error reads "error while linting"); the only advice is about three gauges of
    // prom-client's default Node.js metrics whose names end in _total.
    expect(r.out).not.toMatch(/error while linting/);
    const advice = r.out.split('\n').filter((l) => l.trim());
    for (const l of advice)
      expect(l).toMatch(/^svc_process_nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/);
  });
});
