// prom-rw-ingest: Prometheus remote-write samples decoded per second (docs/connectors/prometheus_rw.md).
// 1,000 WriteRequests of 2,000 samples each (node-exporter-like series: 40 metric names, 4-5
// labels), built before timing. Measured in the same run:
//   - snappy_mb_per_sec: snappyjs uncompress alone (the floor every decoder pays);
//   - protobufjs_samples_per_sec: the reference, snappy + protobufjs decoding the same small
//     .proto into message objects (no records yet); protobufjs_records_per_sec: the same plus the
//     mapping into the records we hand on (the design we did not take);
//   - decoder_samples_per_sec: snappy + our hand-written reader into records {name, labels,
//     value, timestamp, timestamp_ms}; ratio = decoder / protobufjs, records_ratio = decoder /
//     protobufjs_records;
//   - json_samples_per_sec: the same plus the JSON text the source hands the pipeline;
//   - pipeline_samples_per_sec: the whole stream, each body offered through the webhook hub
//     (receive-time check, spool on disk with fsync) into the prometheus_rw source, json decode,
//     NDJSON into a local file, until every sample is written.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import type { Measured, Scenario } from './scenarios.js';
import { loadPipelineText } from '../src/config/load.js';
import { runPipeline } from '../src/engine/runner.js';
import { MemoryProcessedFiles } from '../src/plugins/connector-runtime/processed-files.js';
import { WebhookHub } from '../src/plugins/connector-runtime/webhook-hub.js';
import { silentLogger } from '../src/observability/log.js';
import { decodeWriteRequest, uncompress, type SampleRecord } from '../src/plugins/connectors/prometheus_rw/decode.js';
import { sampleValue } from '../src/plugins/common/prom-value.js';
import { encodeBody, type SeriesIn } from '../src/plugins/connectors/prometheus_rw/encode.js';

const BODIES = Number(process.env.BENCH_PROM_BODIES ?? 1000);
const SAMPLES = 2000;
const ROUNDS = 3;

// The remote-write messages the reference decodes: field numbers from Prometheus' prompb.
const PROTO = `
syntax = "proto3";
message WriteRequest { repeated TimeSeries timeseries = 1; }
message TimeSeries { repeated Label labels = 1; repeated Sample samples = 2; }
message Label { string name = 1; string value = 2; }
message Sample { double value = 1; int64 timestamp = 2; }
`;

const NAMES = Array.from(
  { length: 40 },
  (_, i) => `node_metric_${['cpu_seconds_total', 'network_receive_bytes_total', 'filesystem_avail_bytes', 'memory_MemFree_bytes'][i % 4]}_${i}`,
);

/** Body `b`: 2,000 series of one sample each, as Prometheus sends a scrape's worth. */
function body(b: number): Buffer {
  const ts = 1_790_000_000_000 + b * 1000;
  const series: SeriesIn[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    series.push({
      labels: {
        __name__: NAMES[i % NAMES.length]!,
        instance: `host-${(b * 7 + i) % 250}.example.net:9100`,
        job: 'node',
        cpu: String(i % 16),
        mode: ['user', 'system', 'idle', 'iowait'][i % 4]!,
      },
      samples: [{ value: i % 10 === 0 ? Math.floor(i * 1234.5) : i * 0.731 + b, timestamp_ms: ts }],
    });
  }
  return encodeBody(series);
}

interface PbWriteRequest {
  timeseries: { labels: { name: string; value: string }[]; samples: { value: number; timestamp: number | { toNumber(): number } }[] }[];
}

const best = (xs: number[]) => Math.max(...xs);

function timed(f: () => number): number {
  const t0 = performance.now();
  const n = f();
  return n / ((performance.now() - t0) / 1000);
}

async function pipeline(bodies: Buffer[]): Promise<{ rate: number; seconds: number; bytes: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-promrw-'));
  try {
    const hub = new WebhookHub();
    const out = join(dir, 'out');
    const { config, diagnostics } = loadPipelineText(`
version: "1"
pipeline:
  name: prom-rw-bench
  schedule: { type: stream }
  source: { type: prometheus_rw, path: prom-rw, max_queue_size: 100 }
  serializer_in: { type: json }
  serializer_out: { type: ndjson }
  sinks: [{ type: local, path: ${JSON.stringify(out)}, filename_template: out.ndjson }]
`);
    if (!config) throw new Error(diagnostics.map((d) => d.message).join('\n'));
    const stop = new AbortController();
    const t0 = performance.now();
    const done = runPipeline(config, {
      signal: stop.signal,
      log: silentLogger,
      processed: new MemoryProcessedFiles(),
      services: { webhooks: hub, stateDir: join(dir, 'state') },
    });
    while (!hub.has('prom-rw')) await new Promise((r) => setTimeout(r, 1));
    // Bodies from 8 concurrent senders (Prometheus' shards); a full queue (503) is offered again.
    let next = 0;
    const sender = async () => {
      while (next < bodies.length) {
        const b = bodies[next++]!;
        for (;;) {
          const r = await hub.deliver('prom-rw', undefined, { body: b, receivedAt: new Date().toISOString() });
          if (r === 'queued') break;
          if (r !== 'full') throw new Error(`remote write refused: ${JSON.stringify(r)}`);
          await new Promise((res) => setTimeout(res, 2));
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, sender));
    stop.abort(); // the stream hands on everything accepted, then ends
    const record = await done;
    const seconds = (performance.now() - t0) / 1000;
    if (record.status !== 'success' || record.records_out !== bodies.length * SAMPLES) throw new Error(`bench run failed: ${JSON.stringify(record)}`);
    return { rate: record.records_out / seconds, seconds, bytes: statSync(join(out, 'out.ndjson')).size };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const promRwIngest: Scenario = {
  async run(): Promise<Measured> {
    const bodies = Array.from({ length: BODIES }, (_, b) => body(b));
    const compressed = bodies.reduce((n, b) => n + b.length, 0);
    const raw = bodies.map((b) => uncompress(b));
    const rawBytes = raw.reduce((n, b) => n + b.length, 0);
    const WriteRequest = protobuf.parse(PROTO).root.lookupType('WriteRequest');
    const total = BODIES * SAMPLES;

    const snappyRates: number[] = [];
    const pbjs: number[] = [];
    const pbjsRecords: number[] = [];
    const ours: number[] = [];
    const json: number[] = [];
    let sink = 0;
    for (let r = 0; r < ROUNDS; r++) {
      snappyRates.push(
        timed(() => {
          for (const b of bodies) sink += uncompress(b).length;
          return rawBytes / 1e6;
        }),
      );
      pbjs.push(
        timed(() => {
          let n = 0;
          for (const b of bodies) {
            const m = WriteRequest.decode(uncompress(b)) as unknown as { timeseries: { samples: unknown[] }[] };
            for (const ts of m.timeseries) n += ts.samples.length;
          }
          if (n !== total) throw new Error(`protobufjs decoded ${n} samples`);
          return n;
        }),
      );
      pbjsRecords.push(
        timed(() => {
          let n = 0;
          for (const b of bodies) {
            const m = WriteRequest.decode(uncompress(b)) as unknown as PbWriteRequest;
            const recs: SampleRecord[] = [];
            for (const ts of m.timeseries) {
              let name = '';
              const labels: Record<string, string> = {};
              for (const l of ts.labels) {
                if (l.name === '__name__') name = l.value;
                else labels[l.name] = l.value;
              }
              for (const smp of ts.samples) {
                const ms = typeof smp.timestamp === 'object' ? smp.timestamp.toNumber() : Number(smp.timestamp);
                recs.push({ name, labels: { ...labels }, value: sampleValue(smp.value), timestamp: new Date(ms).toISOString(), timestamp_ms: ms });
              }
            }
            n += recs.length;
          }
          return n;
        }),
      );
      ours.push(
        timed(() => {
          let n = 0;
          for (const b of bodies) {
            const recs: SampleRecord[] = [];
            decodeWriteRequest(uncompress(b), (rec) => recs.push(rec));
            n += recs.length;
          }
          if (n !== total) throw new Error(`decoded ${n} samples`);
          return n;
        }),
      );
      json.push(
        timed(() => {
          let n = 0;
          for (const b of bodies) {
            const recs: SampleRecord[] = [];
            decodeWriteRequest(uncompress(b), (rec) => recs.push(rec));
            sink += JSON.stringify(recs).length;
            n += recs.length;
          }
          return n;
        }),
      );
    }
    const p = await pipeline(bodies);
    return {
      bodies: BODIES,
      samples_per_body: SAMPLES,
      records: total,
      compressed_mb: Number((compressed / 1e6).toFixed(1)),
      uncompressed_mb: Number((rawBytes / 1e6).toFixed(1)),
      snappy_mb_per_sec: Math.round(best(snappyRates)),
      protobufjs_samples_per_sec: Math.round(best(pbjs)),
      decoder_samples_per_sec: Math.round(best(ours)),
      ratio: Number((best(ours) / best(pbjs)).toFixed(2)),
      protobufjs_records_per_sec: Math.round(best(pbjsRecords)),
      records_ratio: Number((best(ours) / best(pbjsRecords)).toFixed(2)),
      json_samples_per_sec: Math.round(best(json)),
      pipeline_samples_per_sec: Math.round(p.rate),
      seconds: Number(p.seconds.toFixed(2)),
      ndjson_mb: Number((p.bytes / 1e6).toFixed(1)),
      checksum: sink % 7,
    };
  },
};
