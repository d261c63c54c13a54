// prom-rw-export: records through the prometheus_rw sink into Debian's Prometheus 2.42 (a private
// server with --web.enable-remote-write-receiver on a free loopback port, its own data directory,
// killed by its PID at the end), beside a reference sender: the same WriteRequests (the same bytes,
// built before timing with the sink's own mapping and encoder), POSTed one after the other over one
// keep-alive connection, nothing else. The reference is Prometheus' ingest ceiling for one sender
// that does no work of its own (docs/connectors/prometheus_rw.md says why it is the fair one).
//
// 400,000 samples: 2,000 node-exporter-like series (40 names, 50 instances), 200 steps of 1 s,
// NDJSON records step by step; record_chunk_size 2,000, so each request holds one step of every
// series (2,000 series of one sample), as Prometheus' own remote write sends a scrape's worth. Every
// leg writes series of its own (a `leg` label), so no leg's samples are out of order for another.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Measured, Scenario } from './scenarios.js';
import { alternate, childMeasure, ratio } from './compare.js';
import { timedRun } from './pipeline.js';
import { MemoryProcessedFiles } from '../src/plugins/connector-runtime/processed-files.js';
import { silentLogger } from '../src/observability/log.js';
import { encodeWriteRequest, REMOTE_WRITE_HEADERS, snappyBlock } from '../src/plugins/connectors/prometheus_rw/encode.js';
import { SeriesMapper } from '../src/plugins/connectors/prometheus_rw/series.js';
import { seriesOf } from '../src/plugins/connectors/prometheus_rw/sink.js';
import type { Rec } from '../src/plugins/types.js';

const SERIES = 2000;
const STEPS = Number(process.env.BENCH_PROM_STEPS ?? 200);
const ROUNDS = Number(process.env.SVC_BENCH_ROUNDS ?? 3);
const NAMES = Array.from(
  { length: 40 },
  (_, i) => `node_metric_${['cpu_seconds_total', 'network_receive_bytes_total', 'filesystem_avail_bytes', 'memory_MemFree_bytes'][i % 4]}_${i}`,
);

/** The records of one leg, step by step: {name, instance, job, cpu, mode, leg, value, timestamp}. */
function records(leg: string, t0: number): Rec[] {
  const out: Rec[] = [];
  for (let s = 0; s < STEPS; s++) {
    for (let i = 0; i < SERIES; i++) {
      out.push({
        name: NAMES[i % NAMES.length]!,
        instance: `host-${Math.floor(i / NAMES.length)}.example.net:9100`,
        job: 'node',
        cpu: String(i % 16),
        mode: ['user', 'system', 'idle', 'iowait'][i % 4]!,
        leg,
        value: i * 0.731 + s,
        timestamp: t0 + s * 1000,
      });
    }
  }
  return out;
}

const legOf = () => {
  const leg = process.env.BENCH_PROM_LEG;
  const url = process.env.BENCH_PROM_URL;
  const t0 = Number(process.env.BENCH_PROM_T0);
  if (!leg || !url || !t0) throw new Error('prom-rw-export legs run under prom-rw-export (BENCH_PROM_URL, BENCH_PROM_LEG, BENCH_PROM_T0)');
  return { leg, url, t0 };
};

/** The sink's leg: NDJSON files -> prometheus_rw, timed from the run's start to its end. */
export const promRwExportSvc: Scenario = {
  hidden: true,
  threads: [1],
  async run(): Promise<Measured> {
    const { leg, url, t0 } = legOf();
    const dir = mkdtempSync(join(tmpdir(), 'svc-bench-promrw-export-'));
    try {
      mkdirSync(join(dir, 'in'));
      // Written and let go before timing: the timed run holds only what the pipeline holds.
      let recs: Rec[] | undefined = records(leg, t0);
      const total = recs.length;
      writeFileSync(join(dir, 'in', 'samples.ndjson'), recs.map((r) => JSON.stringify(r)).join('\n') + '\n');
      recs = undefined;
      const { record, seconds, cpuSeconds } = await timedRun(
        `
version: "1"
pipeline:
  name: prom-rw-export
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(join(dir, 'in'))} }
  serializer_in: { type: ndjson }
  record_chunk_size: ${SERIES}
  sinks:
    - { type: prometheus_rw, url: ${JSON.stringify(url)}, max_samples_per_send: ${SERIES} }
`,
        { log: silentLogger, processed: new MemoryProcessedFiles() },
      );
      if (record.status !== 'success' || record.records_out !== total || record.dlq_count)
        throw new Error(`prom-rw-export: the sink's run did not write every sample: ${JSON.stringify(record)}`);
      return {
        records: total,
        seconds: Number(seconds.toFixed(2)),
        records_per_sec: Math.round(total / seconds),
        cpu_seconds: Number(cpuSeconds.toFixed(2)),
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

/** The reference leg: the same WriteRequests, built before timing, POSTed in order on one keep-alive connection. */
export const promRwExportNaive: Scenario = {
  hidden: true,
  threads: [1],
  async run(): Promise<Measured> {
    const { leg, url, t0 } = legOf();
    const recs = records(leg, t0);
    // The very bytes the sink sends: its mapping (defaults) and encoder, one request per step.
    const mapper = new SeriesMapper({
      nameField: 'name',
      valueFields: ['value'],
      excludeLabels: ['timestamp_ms', 'stale', 'type', 'help', 'unit'],
      staticLabels: {},
      timestampField: 'timestamp',
      counterFields: [],
      totalSuffix: true,
      snmpWraps: 'unwrap',
      maxSeries: 1_000_000,
    });
    const bodies: Buffer[] = [];
    for (let s = 0; s < STEPS; s++) {
      const samples = recs.slice(s * SERIES, (s + 1) * SERIES).flatMap((r) => {
        const m = mapper.map(r, 0);
        if (!('samples' in m)) throw new Error(m.refused);
        return m.samples;
      });
      bodies.push(snappyBlock(encodeWriteRequest(seriesOf(samples))));
    }
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const post = (body: Buffer) =>
      new Promise<void>((resolve, reject) => {
        const req = http.request(url, { method: 'POST', agent, headers: { ...REMOTE_WRITE_HEADERS, 'content-length': body.length } }, (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 204 || res.statusCode === 200 ? resolve() : reject(new Error(`reference: ${res.statusCode}`))));
        });
        req.on('error', reject);
        req.end(body);
      });
    const t = performance.now();
    for (const b of bodies) await post(b);
    const seconds = (performance.now() - t) / 1000;
    agent.destroy();
    return {
      records: recs.length,
      seconds: Number(seconds.toFixed(2)),
      records_per_sec: Math.round(recs.length / seconds),
      mb_sent: Number((bodies.reduce((n, b) => n + b.length, 0) / 1e6).toFixed(1)),
    };
  },
};

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });

/** Prometheus 2.42 as a remote-write receiver, private to this run. */
async function startPrometheus(): Promise<{ url: string; samples(): Promise<number>; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-prom-'));
  const port = await freePort();
  writeFileSync(join(dir, 'prometheus.yml'), 'global: {}\n');
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--web.enable-remote-write-receiver',
      '--log.level=warn',
    ],
    { stdio: 'ignore' },
  );
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const ok = await fetch(`${base}/-/ready`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    if (child.exitCode !== null || i > 300) throw new Error('prometheus did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: `${base}/api/v1/write`,
    async samples() {
      const text = await (await fetch(`${base}/metrics`)).text();
      return Number(/^prometheus_tsdb_head_samples_appended_total(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1] ?? NaN);
    },
    async stop() {
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const promRwExport: Scenario = {
  async run(): Promise<Measured> {
    const prom = await startPrometheus();
    try {
      process.env.BENCH_PROM_URL = prom.url;
      let n = 0;
      const leg = (kind: string) => () => {
        process.env.BENCH_PROM_LEG = `${kind}-${n++}`;
        // Recent, and a fresh window for each leg's series: within what Prometheus' head takes.
        process.env.BENCH_PROM_T0 = String(Date.now() - 20 * 60_000);
        return childMeasure(`prom-rw-export-${kind}`, 1);
      };
      const { medians, seen } = alternate(ROUNDS, { naive: leg('naive'), svc: leg('svc') });
      const appended = await prom.samples();
      const expected = ROUNDS * 2 * SERIES * STEPS;
      if (appended !== expected) throw new Error(`Prometheus appended ${appended} samples, expected ${expected}`);
      return {
        records: SERIES * STEPS,
        samples_per_request: SERIES,
        records_per_sec: medians.svc!,
        reference_records_per_sec: medians.naive!,
        ratio_vs_reference: ratio(medians.svc!, medians.naive!),
        prometheus_samples_appended: appended,
        runs: JSON.stringify(seen),
      };
    } finally {
      await prom.stop();
    }
  },
};
