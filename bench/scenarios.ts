// Benchmark scenarios. Each runs in its own child process (see run.ts) so peak RSS is its own.
import { dirname } from 'node:path';
import { counterSamplesFile, ndjsonFile } from './data.js';
import { rate, runBench } from './pipeline.js';
import { alternate, childMeasure, median, ratio, scriptMeasure } from './compare.js';

/** The figures of one measurement; run.ts adds scenario, thread_workers and peak_rss_mb. */
export type Measured = Record<string, number | string>;

export interface Scenario {
  /** thread_workers values to run with (one JSON line each); omitted when threads do not apply. */
  threads?: number[];
  /** Makes the input; runs in the parent so it does not count. */
  prepare?(): Promise<void>;
  run(threads: number): Promise<Measured>;
  /** A building block that a comparison scenario runs in its own process; not run by default. */
  hidden?: boolean;
}

/** Alternations of a comparison scenario (each leg in a fresh process); the median is reported. */
const ROUNDS = Number(process.env.SVC_BENCH_ROUNDS ?? 3);

const NDJSON_RECORDS = 1_000_000;

/** Runs `transforms` (YAML list items) over the 1M-record interface file (or `file`) into an NDJSON file. */
async function runInterfaces(name: string, threads: number, transforms: string, file?: Promise<string>): Promise<Measured> {
  const input = await (file ?? ndjsonFile(NDJSON_RECORDS));
  const r = await runBench({ name, threads, dir: dirname(input), pattern: '*.ndjson', serializerIn: '{ type: ndjson }', transforms, expected: NDJSON_RECORDS });
  return rate(r);
}

export const scenarios: Record<string, Scenario> = {
  // Eight common transforms on one thread, next to bench/naive-transforms.mjs (issue 18: >= 2x).
  'transforms-chain': {
    prepare: async () => void (await ndjsonFile(NDJSON_RECORDS)),
    run: async () => {
      const { medians, seen, last } = alternate(ROUNDS, {
        naive: () => scriptMeasure('bench/naive-transforms.mjs'),
        svc: () => childMeasure('transforms-chain-svc', 1),
      });
      return {
        records: NDJSON_RECORDS,
        records_per_sec: medians.svc!,
        naive_records_per_sec: medians.naive!,
        ratio_vs_naive: ratio(medians.svc!, medians.naive!),
        goal_vs_naive: 2,
        runs: JSON.stringify(seen),
        svc_peak_rss_mb: last.svc!.peak_rss_mb!,
      };
    },
  },
  'transforms-chain-svc': {
    hidden: true,
    threads: [1],
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
  // 1M samples over 100k interfaces through counter_delta with rates (issue target: >= 500,000 records/s).
  'counter_delta-1m': {
    threads: [1],
    prepare: async () => void (await counterSamplesFile(1_000_000, 100_000)),
    run: (threads) =>
      runInterfaces(
        'counter_delta-1m',
        threads,
        '    - { type: counter_delta, key_fields: [host, ifIndex], counters: [ifInOctets, ifOutOctets], time_field: ts, rate: true }',
        counterSamplesFile(1_000_000, 100_000),
      ),
  },
  // Loaded on demand: the daemon's modules would otherwise weigh on every scenario's peak RSS.
  'api-read': { run: async () => (await import('./daemon-scenarios.js')).apiRead.run(1) },
  // Whole-process start-up of svc --version / --help / validate and of svc serve until ready, beside a bare node start (issue 18).
  'cli-start': { run: async () => (await import('./startup-scenarios.js')).cliStart.run(1) },
  'serve-ready': { run: async () => (await import('./startup-scenarios.js')).serveReadyScenario.run(1) },
  'asn1-cdr': {
    threads: [1, 2],
    prepare: async () => (await import('./asn1-scenarios.js')).asn1Cdr.prepare!(),
    run: async (threads) => (await import('./asn1-scenarios.js')).asn1Cdr.run(threads),
  },
  'webhook-ingest': { run: async () => (await import('./daemon-scenarios.js')).webhookIngest.run(1) },
  // The net-snmp MIB corpus compiled from scratch vs smidump on the same files (issue 6).
  'mib-compile': { run: async () => (await import('./mib-scenarios.js')).mibCompile.run(1) },
  // SNMP core vs Debian's net-snmp in the same run (bench/snmp-scenarios.ts, docs/snmp.md).
  'snmp-walk': { run: async () => (await import('./snmp-scenarios.js')).snmpWalk.run(1) },
  'snmp-agent': { run: async () => (await import('./snmp-scenarios.js')).snmpAgent.run(1) },
  'snmp-agent-walk': { run: async () => (await import('./snmp-scenarios.js')).snmpAgentWalk.run(1) },
  'trap-receive': { run: async () => (await import('./snmp-scenarios.js')).trapReceive.run(1) },
  'trap-pipeline': { run: async () => (await import('./trap-scenarios.js')).trapPipeline.run(1) },
  'snmp-poll-fleet': { run: async () => (await import('./snmp-fleet-scenarios.js')).snmpPollFleet.run(1) },
  'cluster-dispatch': { run: async () => (await import('./cluster-scenarios.js')).clusterDispatch.run(1) },
  // 10,000 simulated SNMP agents polled as a sharded run on 1, 2 and 3 workers: CPU per target and dispatch per shard (bench/fleet-sharded-scenarios.ts).
  'fleet-sharded': { run: async () => (await import('./fleet-sharded-scenarios.js')).fleetSharded.run(1) },
  // Webhook ingest through 2 workers' ingress beside one standalone daemon, nothing accepted lost.
  'webhook-cluster': { run: async () => (await import('./cluster-scenarios.js')).webhookCluster.run(1) },
  // Connectors against the machine's brokers, beside a plain client script or the peer's own tool (docs/benchmarks.md).
  // 1M records through the kafka sink, and through the kafka source, on librdkafka's mock cluster: each engine beside kcat -P / kcat -C (bench/kafka-scenarios.ts).
  'kafka-produce': {
    prepare: async () => (await import('./kafka-scenarios.js')).kafkaProduce.prepare!(),
    run: async () => (await import('./kafka-scenarios.js')).kafkaProduce.run(1),
  },
  'kafka-consume': {
    prepare: async () => (await import('./kafka-scenarios.js')).kafkaConsume.prepare!(),
    run: async () => (await import('./kafka-scenarios.js')).kafkaConsume.run(1),
  },
  'mqtt-ingest': { run: async () => (await import('./mqtt-scenarios.js')).mqttIngest.run(1) },
  // mqtt-ingest's stream with one tap attached against none, in the same run (issue 29: >= 0.95x; bench/tap-scenarios.ts).
  'tap-overhead': { run: async () => (await import('./tap-scenarios.js')).tapOverhead() },
  'syslog-ingest': { threads: [1], run: async (threads) => (await import('./syslog-scenarios.js')).syslogIngest.run(threads) },
  'flow-ingest': { run: async () => (await import('./flow-scenarios.js')).flowIngest.run(1) },
  'flow-enrich': { run: async () => (await import('./flow-scenarios.js')).flowEnrich.run(1) },
  // 400 OTLP/HTTP protobuf metrics bodies (1,000 points each) through the otlp source into NDJSON, beside a bare node:http server decoding them (with protobufjs, and with the source's own decoder); each side in its own process, the sender in a third (bench/otlp-scenarios.ts).
  'otlp-ingest': { run: async () => (await import('./otlp-scenarios.js')).otlpIngest.run(1) },
  'otlp-ingest-svc': { hidden: true, threads: [1], run: async () => (await import('./otlp-scenarios.js')).otlpIngestSvc.run(1) },
  'otlp-ingest-ref': { hidden: true, threads: [1], run: async () => (await import('./otlp-scenarios.js')).otlpIngestRef.run(1) },
  'otlp-ingest-ref-scan': { hidden: true, threads: [1], run: async () => (await import('./otlp-scenarios.js')).otlpIngestRefScan.run(1) },
  'otlp-ingest-floor': { hidden: true, threads: [1], run: async () => (await import('./otlp-scenarios.js')).otlpIngestFloor.run(1) },
  // 200,000 gauge points through the otlp sink to the test collector, beside the OpenTelemetry JS SDK's proto exporter sending the same points (bench/otlp-scenarios.ts).
  'otlp-export': { run: async () => (await import('./otlp-scenarios.js')).otlpExport.run(1) },
  'otlp-export-svc': { hidden: true, threads: [1], run: async () => (await import('./otlp-scenarios.js')).otlpExportSvc.run(1) },
  'otlp-export-sdk': { hidden: true, threads: [1], run: async () => (await import('./otlp-scenarios.js')).otlpExportSdk.run(1) },
  'otlp-export-floor': { hidden: true, threads: [1], run: async () => (await import('./otlp-scenarios.js')).otlpExportFloor.run(1) },
  'prom-rw-ingest': { run: async () => (await import('./prom-rw-scenarios.js')).promRwIngest.run(1) },
  // 400k samples through the prometheus_rw sink into Debian's Prometheus, beside the same WriteRequests POSTed bare (bench/prom-rw-export-scenarios.ts).
  'prom-rw-export': { run: async () => (await import('./prom-rw-export-scenarios.js')).promRwExport.run(1) },
  'prom-rw-export-svc': { hidden: true, threads: [1], run: async () => (await import('./prom-rw-export-scenarios.js')).promRwExportSvc.run(1) },
  'prom-rw-export-naive': { hidden: true, threads: [1], run: async () => (await import('./prom-rw-export-scenarios.js')).promRwExportNaive.run(1) },
  // ~1 GB of 5 MB PM XML files from a private sshd through the sftp source, beside OpenSSH's sftp client (bench/sftp-scenarios.ts).
  'sftp-transfer': {
    prepare: async () => (await import('./sftp-scenarios.js')).sftpTransfer.prepare!(),
    run: async () => (await import('./sftp-scenarios.js')).sftpTransfer.run(1),
  },
  'redis-roundtrip': {
    prepare: async () => (await import('./redis-scenarios.js')).redisRoundtrip.prepare!(),
    run: async () => (await import('./redis-scenarios.js')).redisRoundtrip.run(1),
  },
  'amqp-roundtrip': {
    prepare: async () => (await import('./amqp-scenarios.js')).amqpRoundtrip.prepare!(),
    run: async () => (await import('./amqp-scenarios.js')).amqpRoundtrip.run(1),
  },
  // 1M records into PostgreSQL and MariaDB through the sql sink, beside \copy and LOAD DATA (bench/sql-scenarios.ts).
  'sql-sink': {
    prepare: async () => (await import('./sql-scenarios.js')).sqlSink.prepare!(),
    run: async () => (await import('./sql-scenarios.js')).sqlSink.run(1),
  },
  // Small and large objects into s3rver through the s3 sink, beside a plain PutObject loop (bench/s3-scenarios.ts).
  's3-sink': {
    prepare: async () => (await import('./s3-scenarios.js')).s3Sink.prepare!(),
    run: async () => (await import('./s3-scenarios.js')).s3Sink.run(1),
  },
  // NDJSON -> Avro container (deflate) -> NDJSON, two pipeline runs (bench/avro-scenarios.ts).
  'avro-roundtrip': {
    threads: [1, 2],
    prepare: async () => void (await ndjsonFile(NDJSON_RECORDS)),
    run: async (threads) => (await import('./avro-scenarios.js')).avroRoundtrip.run(threads),
  },
  'parquet-roundtrip': {
    threads: [1, 2],
    prepare: async () => (await import('./parquet-scenarios.js')).parquetRoundtrip.prepare!(),
    run: async (threads) => (await import('./parquet-scenarios.js')).parquetRoundtrip.run(threads),
  },
  'parquet-read-large': {
    threads: [1],
    prepare: async () => (await import('./parquet-scenarios.js')).parquetReadLarge.prepare!(),
    run: async (threads) => (await import('./parquet-scenarios.js')).parquetReadLarge.run(threads),
  },
  // 32.435 PM XML: a generated ~1 GB file to NDJSON (bench/pm-xml-scenarios.ts).
  'pm_xml-large': {
    threads: [1, 2],
    prepare: async () => (await import('./pm-xml-scenarios.js')).pmXmlLarge.prepare!(),
    run: async (threads) => (await import('./pm-xml-scenarios.js')).pmXmlLarge.run(threads),
  },
  // The same file through the PM XML splitter and decoder alone: what the format costs apart from output.
  'pm_xml-decode': {
    prepare: async () => (await import('./pm-xml-scenarios.js')).pmXmlDecode.prepare!(),
    run: async () => (await import('./pm-xml-scenarios.js')).pmXmlDecode.run(1),
  },
  // 1M interface records as CSV, XML and MessagePack files to NDJSON (bench/format-scenarios.ts).
  'csv-parse': {
    threads: [1, 2],
    prepare: async () => (await import('./format-scenarios.js')).csvParse.prepare!(),
    run: async (threads) => (await import('./format-scenarios.js')).csvParse.run(threads),
  },
  'xml-parse': {
    threads: [1, 2],
    prepare: async () => (await import('./format-scenarios.js')).xmlParse.prepare!(),
    run: async (threads) => (await import('./format-scenarios.js')).xmlParse.run(threads),
  },
  'msgpack-parse': {
    threads: [1, 2],
    prepare: async () => (await import('./format-scenarios.js')).msgpackParse.prepare!(),
    run: async (threads) => (await import('./format-scenarios.js')).msgpackParse.run(threads),
  },
  // rename + cast + filter: 1 thread next to bench/naive-ndjson.mjs (issue 18: >= 2.5x) and 2 threads
  // next to 1 (>= 1.6x), alternated in one run.
  'ndjson-basic': {
    prepare: async () => void (await ndjsonFile(NDJSON_RECORDS)),
    run: async () => {
      const { medians, seen, last } = alternate(ROUNDS, {
        naive: () => scriptMeasure('bench/naive-ndjson.mjs'),
        threads_1: () => childMeasure('ndjson-basic-svc', 1),
        threads_2: () => childMeasure('ndjson-basic-svc', 2),
      });
      return {
        records: NDJSON_RECORDS,
        naive_records_per_sec: medians.naive!,
        records_per_sec_1_thread: medians.threads_1!,
        records_per_sec_2_threads: medians.threads_2!,
        ratio_1_thread_vs_naive: ratio(medians.threads_1!, medians.naive!),
        goal_1_thread_vs_naive: 2.5,
        ratio_2_threads_vs_1: ratio(medians.threads_2!, medians.threads_1!),
        goal_2_threads_vs_1: 1.6,
        runs: JSON.stringify(seen),
        peak_rss_mb_1_thread: last.threads_1!.peak_rss_mb!,
        peak_rss_mb_2_threads: last.threads_2!.peak_rss_mb!,
      };
    },
  },
  // ndjson-basic through a daemon's pipeline manager, live counters on against off (issue 29: >= 0.98x).
  'live-counters': {
    prepare: async () => void (await ndjsonFile(NDJSON_RECORDS)),
    run: async () => {
      const legs: Record<'on' | 'off', Measured[]> = { on: [], off: [] };
      for (let r = 0; r < ROUNDS; r++) {
        legs.on.push(childMeasure('live-counters-on', 1));
        legs.off.push(childMeasure('live-counters-off', 1));
      }
      const med = (leg: 'on' | 'off', field: string) => median(legs[leg].map((m) => Number(m[field])));
      return {
        records: NDJSON_RECORDS,
        records_per_sec_live_on: med('on', 'records_per_sec'),
        records_per_sec_live_off: med('off', 'records_per_sec'),
        ratio_on_vs_off: ratio(med('on', 'records_per_sec'), med('off', 'records_per_sec')),
        records_per_cpu_sec_live_on: med('on', 'records_per_cpu_sec'),
        records_per_cpu_sec_live_off: med('off', 'records_per_cpu_sec'),
        cpu_ratio_on_vs_off: ratio(med('on', 'records_per_cpu_sec'), med('off', 'records_per_cpu_sec')),
        goal_on_vs_off: 0.98,
        runs: JSON.stringify({ on: legs.on.map((m) => m.records_per_sec), off: legs.off.map((m) => m.records_per_sec) }),
      };
    },
  },
  'live-counters-on': {
    hidden: true,
    threads: [1],
    run: async () => (await import('./live-scenarios.js')).liveCountersLeg(true),
  },
  'live-counters-off': {
    hidden: true,
    threads: [1],
    run: async () => (await import('./live-scenarios.js')).liveCountersLeg(false),
  },
  'ndjson-basic-svc': {
    hidden: true,
    threads: [1, 2],
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
