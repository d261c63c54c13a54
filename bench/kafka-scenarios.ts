// kafka-roundtrip: 1,000,000 records of about 200 B through the kafka sink into librdkafka's mock
// cluster (three brokers; topics of 64 partitions created through its C API), then back through the kafka source into an NDJSON
// file; records/s each way. Beside them, in the same run and on the same cluster, the peer's own C
// client: `kcat -P -l` (librdkafka producer, acks all) from the same NDJSON file, and `kcat -C -e`
// (every partition to its end) into a file. Ratios are ours / kcat (goal >= 0.5 each way).
//
// The consume figure starts when the source has joined its consumer group (the mock delays a new
// group's first join by 3 s, which kcat -C, assigning partitions without a group, does not pay); the
// join time is printed apart. BENCH_KAFKA_RECORDS sets a smaller count for a quick look.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, mkdirSync, openSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loadPipelineText } from '../src/config/load.js';
import { MemoryProcessedFiles } from '../src/plugins/connector-runtime/processed-files.js';
import { runPipeline } from '../src/engine/runner.js';
import { silentLogger } from '../src/observability/log.js';
import { startMockCluster } from '../test/connectors/peers/kafka-mock.js';
import { DATA_DIR, linesFile } from './data.js';
import type { Measured, Scenario } from './scenarios.js';
import { checkSequenceFile } from './sequence.js';

const RECORDS = Number(process.env.BENCH_KAFKA_RECORDS ?? 1_000_000);
const PARTITIONS = 64;

/** About 200 bytes, written as JSON.stringify writes it (so the NDJSON output has the same bytes). */
const record = (i: number) =>
  JSON.stringify({
    seq: i,
    host: `rtr-${String(i % 500).padStart(3, '0')}.site-${String(i % 97).padStart(3, '0')}.example.net`,
    ifIndex: (i % 48) + 1,
    ifDescr: `GigabitEthernet0/0/${i % 48}`,
    ifAlias: `uplink to agg-${String(i % 64).padStart(2, '0')}`,
    ifInOctets: (i * 7919) % 4294967296,
    ifOutOctets: (i * 104729) % 4294967296,
    ifOperStatus: i % 10 === 0 ? 2 : 1,
    ts: 1763715600 + Math.floor(i / 1000),
  });

const inputFile = () => linesFile(`kafka-${RECORDS}`, 'records.ndjson', RECORDS, record);

function load(yaml: string) {
  const r = loadPipelineText(yaml, { env: {} });
  if (!r.config) throw new Error(r.diagnostics.map((d) => d.message).join('\n'));
  return r.config;
}

/** Runs a command to its end; its wall time in seconds. */
async function timedRun(cmd: string, args: string[], stdout?: string): Promise<number> {
  const fd = stdout ? openSync(stdout, 'w') : 'ignore';
  const t0 = performance.now();
  const p = spawn(cmd, args, { stdio: ['ignore', fd, 'pipe'] });
  let err = '';
  p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const [code] = (await once(p, 'exit')) as [number | null];
  const s = (performance.now() - t0) / 1000;
  if (typeof fd === 'number') closeSync(fd);
  if (code !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${code}): ${err.slice(0, 500)}`);
  return s;
}

const size = (f: string) => {
  try {
    return statSync(f).size;
  } catch {
    return 0;
  }
};

export const kafkaRoundtrip: Scenario = {
  prepare: async () => void (await inputFile()),
  async run(): Promise<Measured> {
    const input = await inputFile();
    const inputBytes = statSync(input).size;
    const out = join(DATA_DIR, 'out', 'kafka-roundtrip');
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    // The mock keeps at most 5 MB per partition: both topics get 64 partitions (3 MB each here).
    const cluster = await startMockCluster(3, { kcat: PARTITIONS, svc: PARTITIONS });
    const brokers = cluster.brokers.join(',');
    try {
      // The reference: librdkafka's own producer and consumer (kcat), same file, same cluster.
      // No sticky partitioning: unkeyed messages spread evenly, as kafkajs's round robin does
      // (stuck partitions would pass the mock's 5 MB per partition and lose their oldest messages).
      const kcatProduce = await timedRun('kcat', ['-P', '-b', brokers, '-t', 'kcat', '-X', 'sticky.partitioning.linger.ms=0', '-l', input]);
      const kcatOut = join(out, 'kcat.ndjson');
      const kcatConsume = await timedRun('kcat', ['-C', '-b', brokers, '-t', 'kcat', '-o', 'beginning', '-e', '-q', '-f', '%s\n'], kcatOut);
      const kcatCheck = await checkSequenceFile(kcatOut, RECORDS);
      if (kcatCheck.lines !== RECORDS) throw new Error(`kcat -C read ${kcatCheck.lines} of ${RECORDS}`);
      rmSync(kcatOut);

      // Produce: local NDJSON -> kafka sink (one message per record, acks -1).
      const t0 = performance.now();
      const produced = await runPipeline(
        load(`version: "1"
pipeline:
  name: bench-kafka-produce
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(dirname(input))}, file_pattern: "records.ndjson" }
  serializer_in: { type: ndjson }
  serializer_out: { type: json }
  sinks: [{ type: kafka, brokers: ${JSON.stringify(cluster.brokers)}, topic: svc }]
`),
        { log: silentLogger, processed: new MemoryProcessedFiles() },
      );
      const produce = (performance.now() - t0) / 1000;
      if (produced.records_out !== RECORDS) throw new Error(`produce: ${JSON.stringify(produced)}`);

      // Consume: kafka source (earliest, own group) -> NDJSON file, timed from the group join to
      // the last byte on disk (the output has the input's bytes: same JSON, same order of keys).
      const file = join(out, 'svc.ndjson');
      const stop = new AbortController();
      let joined = 0;
      const started = performance.now();
      const done = runPipeline(
        load(`version: "1"
pipeline:
  name: bench-kafka-consume
  schedule: { type: stream }
  source: { type: kafka, brokers: ${JSON.stringify(cluster.brokers)}, topic: svc, auto_offset_reset: earliest }
  serializer_in: { type: json }
  serializer_out: { type: ndjson }
  sinks: [{ type: local, path: ${JSON.stringify(out)}, filename_template: svc.ndjson }]
`),
        {
          signal: stop.signal,
          log: silentLogger,
          processed: new MemoryProcessedFiles(),
          telemetry: { connection: (c, _t, s) => void (c === 'source' && s === 'connected' && !joined && (joined = performance.now())) },
        },
      );
      const deadline = Date.now() + 30 * 60_000;
      while (size(file) < inputBytes) {
        if (Date.now() > deadline) throw new Error(`consume: ${size(file)} of ${inputBytes} bytes after 30 min`);
        await new Promise((r) => setTimeout(r, 20));
      }
      const consume = (performance.now() - (joined || started)) / 1000;
      stop.abort();
      const rec = await done;
      if (rec.status !== 'success') throw new Error(`consume: ${JSON.stringify(rec)}`);
      const ours = await checkSequenceFile(file, RECORDS);
      if (ours.missing) throw new Error(`consume: ${ours.missing} records missing`);

      const r = (n: number, s: number) => Math.round(n / s);
      return {
        records: RECORDS,
        record_bytes: Math.round(inputBytes / RECORDS),
        produce_records_per_sec: r(RECORDS, produce),
        consume_records_per_sec: r(RECORDS, consume),
        kcat_produce_records_per_sec: r(RECORDS, kcatProduce),
        kcat_consume_records_per_sec: r(RECORDS, kcatConsume),
        produce_ratio: Number((kcatProduce / produce).toFixed(2)),
        consume_ratio: Number((kcatConsume / consume).toFixed(2)),
        group_join_seconds: Number(((joined - started) / 1000).toFixed(2)),
        consume_duplicates: ours.duplicates,
      };
    } finally {
      await cluster.stop();
    }
  },
};
