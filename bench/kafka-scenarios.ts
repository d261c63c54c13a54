// kafka-produce and kafka-consume (issue 32): 1,000,000 records of about 200 B through the kafka sink
// into librdkafka's mock cluster (three brokers; a topic of 64 partitions created through its C API),
// and through the kafka source from it into an NDJSON file; each engine (librdkafka, kafkajs) beside
// the peer's own C client in the same run: `kcat -P -l` (librdkafka producer, acks all) from the same
// NDJSON file, and `kcat -C -e` (every partition to its end) into a file. Every leg gets a fresh
// cluster; the legs alternate over BENCH_KAFKA_ROUNDS rounds (3) and medians are compared (goal:
// librdkafka >= 0.5x kcat each way). BENCH_KAFKA_RECORDS sets a smaller count for a quick look,
// BENCH_KAFKA_ENGINES=librdkafka leaves out the slow kafkajs legs; BENCH_KAFKA_BARE=1 adds to
// kafka-consume a leg of the native client alone (its ceiling, in the same run).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, mkdirSync, openSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loadPipelineText } from '../src/config/load.js';
import { MemoryProcessedFiles } from '../src/plugins/connector-runtime/processed-files.js';
import { runPipeline } from '../src/engine/runner.js';
import { rdkafka } from '../src/plugins/connectors/kafka/engine.js';
import { FETCH_QUEUE_BACKOFF_MS, PREFETCH_KBYTES } from '../src/plugins/connectors/kafka/native-source.js';
import { silentLogger } from '../src/observability/log.js';
import { bundledLibrdkafka, startMockCluster } from '../test/connectors/peers/kafka-mock.js';
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

type Engine = 'librdkafka' | 'kafkajs';
const ENGINES: Engine[] = ['librdkafka', 'kafkajs'];
/** Alternated rounds of each leg (kcat's consume figure moves by 2x between runs: its spread is reported). */
const ROUNDS = Number(process.env.BENCH_KAFKA_ROUNDS ?? 3);
const TOPIC = 'bench';

/**
 * The mock cluster's librdkafka: the one the native client was built with (2.15.1) when it is
 * installed, else Debian's (2.0.2), whose mock answers a produce about 45 ms late (measured: a
 * delivery wait for 100 messages takes 46 ms on it, 2 ms on 2.15.1), which a sink that waits for its
 * delivery reports per chunk pays at each chunk and kcat -P, never waiting, does not.
 * BENCH_KAFKA_MOCK=debian forces Debian's.
 */
const MOCK_LIB = process.env.BENCH_KAFKA_MOCK === 'debian' ? undefined : bundledLibrdkafka();

/** A fresh mock cluster for one leg (the mock keeps everything in memory: one topic of 64 partitions each time). */
async function withCluster<T>(f: (brokers: string[]) => Promise<T>): Promise<T> {
  const cluster = await startMockCluster(3, { [TOPIC]: PARTITIONS }, MOCK_LIB);
  try {
    return await f(cluster.brokers);
  } finally {
    await cluster.stop();
  }
}

/** `kcat -P` of the NDJSON file, spread over the partitions as the sink does (sticky partitioning off). */
const kcatProduce = (brokers: string[], input: string) =>
  timedRun('kcat', ['-P', '-b', brokers.join(','), '-t', TOPIC, '-X', 'sticky.partitioning.linger.ms=0', '-l', input]);

/** The kafka sink: local NDJSON -> one message per record (acks all), with `engine`; seconds. */
async function svcProduce(brokers: string[], input: string, engine: Engine): Promise<number> {
  const t0 = performance.now();
  const rec = await runPipeline(
    load(`version: "1"
pipeline:
  name: bench-kafka-produce
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(dirname(input))}, file_pattern: "records.ndjson" }
  serializer_in: { type: ndjson }
  serializer_out: { type: json }
  sinks: [{ type: kafka, engine: ${engine}, brokers: ${JSON.stringify(brokers)}, topic: ${TOPIC} }]
`),
    { log: silentLogger, processed: new MemoryProcessedFiles() },
  );
  const s = (performance.now() - t0) / 1000;
  if (rec.records_out !== RECORDS) throw new Error(`produce (${engine}): ${JSON.stringify(rec)}`);
  return s;
}

/** `kcat -C` of the whole topic into a file (every partition to its end); seconds. */
async function kcatConsume(brokers: string[], out: string): Promise<number> {
  const file = join(out, 'kcat.ndjson');
  const s = await timedRun('kcat', ['-C', '-b', brokers.join(','), '-t', TOPIC, '-o', 'beginning', '-e', '-q', '-f', '%s\n'], file);
  const check = await checkSequenceFile(file, RECORDS);
  if (check.lines !== RECORDS) throw new Error(`kcat -C read ${check.lines} of ${RECORDS}`);
  rmSync(file);
  return s;
}

/**
 * The kafka source (earliest, own group) into an NDJSON file, timed from the group join to the last
 * byte on disk (the mock delays a new group's first join by 3 s, which kcat -C, assigning partitions
 * without a group, does not pay); seconds.
 */
async function svcConsume(brokers: string[], out: string, inputBytes: number, engine: Engine): Promise<number> {
  const file = join(out, `svc-${engine}.ndjson`);
  const stop = new AbortController();
  let joined = 0;
  const started = performance.now();
  const done = runPipeline(
    load(`version: "1"
pipeline:
  name: bench-kafka-consume
  schedule: { type: stream }
  source: { type: kafka, engine: ${engine}, brokers: ${JSON.stringify(brokers)}, topic: ${TOPIC}, auto_offset_reset: earliest }
  serializer_in: { type: json }
  serializer_out: { type: ndjson }
  sinks: [{ type: local, path: ${JSON.stringify(out)}, filename_template: svc-${engine}.ndjson }]
`),
    {
      signal: stop.signal,
      log: silentLogger,
      processed: new MemoryProcessedFiles(),
      telemetry: { connection: (c, _t, st) => void (c === 'source' && st === 'connected' && !joined && (joined = performance.now())) },
    },
  );
  const deadline = Date.now() + 30 * 60_000;
  while (size(file) < inputBytes) {
    if (Date.now() > deadline) throw new Error(`consume (${engine}): ${size(file)} of ${inputBytes} bytes after 30 min`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const s = (performance.now() - (joined || started)) / 1000;
  stop.abort();
  const rec = await done;
  if (rec.status !== 'success') throw new Error(`consume (${engine}): ${JSON.stringify(rec)}`);
  const check = await checkSequenceFile(file, RECORDS);
  if (check.missing) throw new Error(`consume (${engine}): ${check.missing} records missing`);
  rmSync(file);
  return s;
}

/**
 * The client alone, the ceiling of the librdkafka engine's consume leg: a KafkaConsumer with the
 * source's fetch settings (its prefetch bound and fetch.queue.backoff.ms, no auto commit) assigned every
 * partition from offset 0 (no group: kcat -C has none either), read by a loop of consume(500) calls
 * that only count the messages; seconds from the assignment to the last message.
 */
async function bareConsume(brokers: string[]): Promise<number> {
  const K = await rdkafka();
  const consumer = new K.KafkaConsumer(
    {
      'bootstrap.servers': brokers.join(','),
      'group.id': 'bench-bare',
      'enable.auto.commit': false,
      'enable.auto.offset.store': false,
      'queued.max.messages.kbytes': PREFETCH_KBYTES,
      'fetch.queue.backoff.ms': FETCH_QUEUE_BACKOFF_MS,
    },
    {},
  );
  await new Promise<void>((resolve, reject) => consumer.connect({ timeout: 10_000 }, (err: Error | null) => (err ? reject(err) : resolve())));
  try {
    consumer.setDefaultConsumeTimeout(100);
    const t0 = performance.now();
    consumer.assign(Array.from({ length: PARTITIONS }, (_, partition) => ({ topic: TOPIC, partition, offset: 0 })));
    let n = 0;
    const deadline = Date.now() + 10 * 60_000;
    while (n < RECORDS) {
      if (Date.now() > deadline) throw new Error(`bare consume: ${n} of ${RECORDS} after 10 min`);
      n += await new Promise<number>((resolve, reject) =>
        consumer.consume(500, (err: Error | null | undefined, m: unknown[]) => (err && !m?.length ? reject(err) : resolve(m.length))),
      );
    }
    return (performance.now() - t0) / 1000;
  } finally {
    await new Promise<void>((resolve) => consumer.disconnect(() => resolve()));
  }
}

const rate = (s: number) => Math.round(RECORDS / s);
const median = (xs: number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
};

/**
 * Each leg (kcat, then each engine) in a fresh mock cluster, alternated over ROUNDS rounds; the
 * median rate of each and kcat's lowest and highest, with each engine's ratio of medians.
 */
async function compareLegs(legs: Record<string, () => Promise<number>>): Promise<Measured> {
  const seen: Record<string, number[]> = {};
  for (let r = 0; r < ROUNDS; r++) for (const [leg, measure] of Object.entries(legs)) (seen[leg] ??= []).push(rate(await measure()));
  const m = Object.fromEntries(Object.entries(seen).map(([leg, xs]) => [leg, median(xs)]));
  const out: Measured = {
    records: RECORDS,
    rounds: ROUNDS,
    kcat_records_per_sec: m.kcat!,
    kcat_min: Math.min(...seen.kcat!),
    kcat_max: Math.max(...seen.kcat!),
    mock: MOCK_LIB ? "librdkafka 2.15.1 (the native client's)" : "librdkafka 2.0.2 (Debian's)",
  };
  if (m.bare !== undefined) {
    out.bare_records_per_sec = m.bare;
    out.bare_all = seen.bare!.join(' ');
    out.bare_ratio = Number((m.bare / m.kcat!).toFixed(2));
  }
  for (const e of ENGINES) {
    if (m[e] === undefined) continue;
    out[`${e}_records_per_sec`] = m[e]!;
    out[`${e}_all`] = seen[e]!.join(' ');
    out[`${e}_ratio`] = Number((m[e]! / m.kcat!).toFixed(2));
  }
  // The engine the goal is about: librdkafka.
  out.records_per_sec = m.librdkafka!;
  out.seconds = Number((RECORDS / m.librdkafka!).toFixed(2));
  out.goal = '>= 0.5x kcat (librdkafka)';
  return out;
}

/** Which engines to measure beside kcat (BENCH_KAFKA_ENGINES=librdkafka skips the slow kafkajs legs). */
const engines = () => (process.env.BENCH_KAFKA_ENGINES?.split(',') as Engine[] | undefined) ?? ENGINES;

/** kafka-produce: 1M NDJSON records from a local file through the kafka sink, beside `kcat -P -l` of the same file. */
export const kafkaProduce: Scenario = {
  prepare: async () => void (await inputFile()),
  async run(): Promise<Measured> {
    const input = await inputFile();
    const legs: Record<string, () => Promise<number>> = { kcat: () => withCluster((b) => kcatProduce(b, input)) };
    for (const e of engines()) legs[e] = () => withCluster((b) => svcProduce(b, input, e));
    return compareLegs(legs);
  },
};

/** kafka-consume: the same topic (filled by `kcat -P` before the clock starts) through the kafka source into a file, beside `kcat -C -e`. */
export const kafkaConsume: Scenario = {
  prepare: async () => void (await inputFile()),
  async run(): Promise<Measured> {
    const input = await inputFile();
    const inputBytes = statSync(input).size;
    const out = join(DATA_DIR, 'out', 'kafka-consume');
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    const filled = <T>(f: (b: string[]) => Promise<T>) =>
      withCluster(async (b) => {
        await kcatProduce(b, input);
        return f(b);
      });
    const legs: Record<string, () => Promise<number>> = { kcat: () => filled((b) => kcatConsume(b, out)) };
    for (const e of engines()) legs[e] = () => filled((b) => svcConsume(b, out, inputBytes, e));
    if (process.env.BENCH_KAFKA_BARE === '1') legs.bare = () => filled(bareConsume);
    return compareLegs(legs);
  },
};
