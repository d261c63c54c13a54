// Benchmark scenarios. Each runs in its own child process (see run.ts) so peak RSS is its own.
import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loadPipelineText } from '../src/config/load.js';
import { runPipeline } from '../src/engine/runner.js';
import { DATA_DIR, ndjsonFile } from './data.js';

/** The figures of one measurement; run.ts adds scenario, thread_workers and peak_rss_mb. */
export type Measured = Record<string, number | string>;

export interface Scenario {
  /** thread_workers values to run with (one JSON line each); omitted when threads do not apply. */
  threads?: number[];
  /** Makes the input; runs in the parent so it does not count. */
  prepare?(): Promise<void>;
  run(threads: number): Promise<Measured>;
}

const NDJSON_RECORDS = 1_000_000;

/** Runs `transforms` (YAML list items) over the 1M-record interface file into an NDJSON file. */
async function runInterfaces(name: string, threads: number, transforms: string): Promise<Measured> {
  const input = await ndjsonFile(NDJSON_RECORDS);
  const out = join(DATA_DIR, 'out', `${name}-${threads}`);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const { config, diagnostics } = loadPipelineText(`
version: "1"
pipeline:
  name: bench-${name}
  schedule: { type: manual }
  thread_workers: ${threads}
  source: { type: local, path: ${JSON.stringify(dirname(input))}, file_pattern: "*.ndjson" }
  serializer_in: { type: ndjson }
  transforms:
${transforms}
  serializer_out: { type: ndjson }
  sinks:
    - type: local
      path: ${JSON.stringify(out)}
      filename_template: "{pipeline}.ndjson"
`);
  if (!config) throw new Error(diagnostics.map((d) => d.message).join('\n'));
  const t0 = performance.now();
  const rec = await runPipeline(config);
  const seconds = (performance.now() - t0) / 1000;
  if (rec.status !== 'success' || rec.records_in !== NDJSON_RECORDS || rec.records_skipped) throw new Error(`bench run failed: ${JSON.stringify(rec)}`);
  return { records: rec.records_in, seconds: Number(seconds.toFixed(3)), records_per_sec: Math.round(rec.records_in / seconds) };
}

export const scenarios: Record<string, Scenario> = {
  // Eight common transforms on one thread (issue target: >= 400,000 records/s).
  'transforms-chain': {
    threads: [1],
    prepare: async () => void (await ndjsonFile(NDJSON_RECORDS)),
    run: (threads) =>
      runInterfaces(
        'transforms-chain',
        threads,
        `    - { type: rename, fields: { ifInOctets: in_octets } }
    - { type: cast, fields: { ifIndex: int } }
    - { type: add_field, fields: { in_bits: in_octets * 8 } }
    - { type: filter, expression: ifOperStatus == 1 }
    - { type: timestamp_normalize, fields: [ts], unit: s }
    - { type: mask, fields: [host], mode: partial, keep_first: 4, keep_last: 0 }
    - { type: value_map, field: ifOperStatus, target: oper_status, mapping: { '1': up, '2': down } }
    - { type: project, fields: [host, ifIndex, in_bits, ts, oper_status] }`,
      ),
  },
  // Loaded on demand: the daemon's modules would otherwise weigh on every scenario's peak RSS.
  'api-read': { run: async () => (await import('./daemon-scenarios.js')).apiRead.run(1) },
  'webhook-ingest': { run: async () => (await import('./daemon-scenarios.js')).webhookIngest.run(1) },
  'ndjson-basic': {
    threads: [1, 2],
    prepare: async () => void (await ndjsonFile(NDJSON_RECORDS)),
    run: (threads) =>
      runInterfaces(
        'ndjson-basic',
        threads,
        `    - { type: rename, fields: { ifInOctets: in_octets, ifOutOctets: out_octets } }
    - { type: cast, fields: { ifIndex: int } }
    - { type: filter, expression: ifOperStatus == 1 }`,
      ),
  },
};
