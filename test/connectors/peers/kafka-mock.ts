// Peer fixture for the kafka connector: librdkafka's mock cluster (three brokers, in memory; the
// only Kafka that runs here), held by a small Python process on Debian's librdkafka (or by kcat),
// stopped in stop() (a small sh wrapper also ends a kcat if the test process dies). Messages go in
// with `kcat -P` and come out with `kcat -C` (the peer's own C client), so a bug in either engine
// of the connector cannot hide itself in both ends. kafkaMockFor(engine) gives the fixture for one
// engine: the conformance suite runs once for librdkafka and once for kafkajs.
//
// The mock has no SASL and no TLS (no wrong-credentials case), and it advertises its own broker
// addresses in its metadata, so a TCP proxy would only cover the bootstrap connection. disrupt()
// stops every broker and starts them again (rd_kafka_mock_broker_set_down/up through the Python
// process: connections closed, new ones refused, topics and offsets kept); cut() instead aborts
// this process's established TCP connections to the brokers in the kernel (`ss -K`, needs
// CAP_NET_ADMIN).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { Collector, Peer, PeerFixture, Rec } from '../conformance.js';
import { elapse } from '../../helpers/wait.js';

const run = promisify(execFile);

export interface MockCluster {
  /** Bootstrap list, host:port each. */
  brokers: string[];
  /**
   * Cuts every established connection between this process (the connectors under test) and the
   * brokers, at both ends; returns how many were cut. kcat's own connections are left alone: kcat
   * exits when all its brokers are down, and the mock cluster lives inside it.
   */
  cut(): Promise<number>;
  /** Stops every broker (the Python-held cluster only); resolves to the function that starts them again. */
  down(): Promise<() => Promise<void>>;
  /**
   * Answers the next `requests` Produce requests with the Kafka error `code` (the Python-held cluster
   * only; rd_kafka_mock_push_request_errors): every message of those requests is refused.
   */
  refuse(code: number, requests: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The same mock cluster created through librdkafka's C API (Python ctypes on Debian's
 * librdkafka.so.1, the library kcat uses), for topics that need more partitions than the 4 an
 * auto-created topic gets: the mock keeps at most 5 MB per partition, so a million 200-byte
 * messages need about 40. It prints the bootstrap list and lives until its stdin closes; a line
 * `down` or `up` on its stdin stops or starts every broker (rd_kafka_mock_broker_set_down/up: the
 * connections are closed and new ones refused; the topics and offsets stay); a line `refuse CODE N`
 * answers the next N Produce requests with that Kafka error (rd_kafka_mock_push_request_errors_array).
 */
const MOCK_PY = `
import ctypes, os, sys
rk = ctypes.CDLL(os.environ.get('MOCK_LIBRDKAFKA') or 'librdkafka.so.1')
rk.rd_kafka_conf_new.restype = ctypes.c_void_p
rk.rd_kafka_new.restype = ctypes.c_void_p
rk.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
rk.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
rk.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
rk.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
rk.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
rk.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
err = ctypes.create_string_buffer(512)
h = rk.rd_kafka_new(0, rk.rd_kafka_conf_new(), err, 512)
mc = rk.rd_kafka_mock_cluster_new(h, int(sys.argv[1]))
for spec in sys.argv[2:]:
    name, parts = spec.rsplit(':', 1)
    if rk.rd_kafka_mock_topic_create(mc, name.encode(), int(parts), min(3, int(sys.argv[1]))) != 0:
        sys.exit('cannot create mock topic ' + name)
rk.rd_kafka_mock_broker_set_down.argtypes = [ctypes.c_void_p, ctypes.c_int32]
rk.rd_kafka_mock_broker_set_up.argtypes = [ctypes.c_void_p, ctypes.c_int32]
rk.rd_kafka_mock_push_request_errors_array.argtypes = [ctypes.c_void_p, ctypes.c_int16, ctypes.c_size_t, ctypes.c_void_p]
print('bootstrap.servers=' + rk.rd_kafka_mock_cluster_bootstraps(mc).decode(), file=sys.stderr, flush=True)
for line in sys.stdin:
    cmd = line.strip()
    if cmd.startswith('refuse '):
        # refuse <error code> <requests>: the next Produce requests (ApiKey 0) are answered with that error
        _, code, count = cmd.split()
        errs = (ctypes.c_int * int(count))(*([int(code)] * int(count)))
        rk.rd_kafka_mock_push_request_errors_array(mc, 0, int(count), errs)
        print('brokers ' + cmd, file=sys.stderr, flush=True)
        continue
    for b in range(1, int(sys.argv[1]) + 1):
        (rk.rd_kafka_mock_broker_set_down if cmd == 'down' else rk.rd_kafka_mock_broker_set_up)(mc, b)
    print('brokers ' + cmd, file=sys.stderr, flush=True)
`;

/**
 * Runs a long-lived command tied to this process: a small sh wrapper kills it when its stdin
 * closes, so a test worker that dies (a timeout, a crash) leaves no kcat behind. end() closes
 * stdin, which stops it.
 */
function tied(cmd: string, args: string[], stdout: 'ignore' | 'pipe', stderr: 'ignore' | 'pipe'): ChildProcess {
  const script = 'exec 3<&0; "$@" & c=$!; (read _ <&3; kill $c 2>/dev/null) & w=$!; wait $c; r=$?; kill $w 2>/dev/null; exit $r';
  return spawn('/bin/sh', ['-c', script, 'sh', cmd, ...args], { stdio: ['pipe', stdout, stderr] });
}

/** Stops a tied() or stdin-bound process: closes its stdin, then kills it if it is still there after 5 s. */
async function endProcess(p: ChildProcess) {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = once(p, 'exit');
  p.stdin?.end();
  const t = setTimeout(() => p.exitCode === null && p.signalCode === null && process.kill(p.pid!, 'SIGKILL'), 5000);
  await exited;
  clearTimeout(t);
}

/**
 * The librdkafka that @confluentinc/kafka-javascript was built with (2.15.1, a shared library when
 * built with CKJS_LINKING=dynamic), when it is installed: its mock cluster answers a produce request
 * in about 2 ms, where Debian's 2.0.2 mock takes about 45 ms (measured here: 100 messages per
 * delivery wait, 46 ms against 2 ms). The benchmark runs its clusters on it (both legs, kcat too).
 */
export function bundledLibrdkafka(): string | undefined {
  try {
    const require = createRequire(import.meta.url);
    const lib = join(dirname(require.resolve('@confluentinc/kafka-javascript/package.json')), 'build', 'deps', 'librdkafka.so.1');
    return existsSync(lib) ? lib : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Starts a librdkafka mock cluster with `brokers` brokers: kept alive by kcat, or, when `topics`
 * (name to partition count) must be created up front, by a Python ctypes process (see MOCK_PY) on
 * Debian's librdkafka.so.1, or on `library` (a path: bundledLibrdkafka()).
 */
export async function startMockCluster(brokers = 3, topics?: Record<string, number>, library?: string): Promise<MockCluster> {
  let said = '';
  const p: ChildProcess = topics
    ? spawn('/usr/bin/python3', ['-c', MOCK_PY, String(brokers), ...Object.entries(topics).map(([t, n]) => `${t}:${n}`)], {
        stdio: ['pipe', 'ignore', 'pipe'],
        env: { ...process.env, MOCK_LIBRDKAFKA: library ?? '' },
      })
    : tied('kcat', ['-C', '-q', '-t', '__svc_mock_keepalive', '-X', `test.mock.num.brokers=${brokers}`, '-b', 'dummy:9092'], 'ignore', 'pipe');
  const list = await new Promise<string[]>((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`no mock bootstrap address printed: ${buf}`)), 10_000);
    p.once('error', reject);
    p.once('exit', (code) => reject(new Error(`the mock cluster's process exited (${code}) before it started: ${buf}`)));
    p.stderr!.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = /replaced with (\S+)/.exec(buf) ?? /bootstrap\.servers=(\S+)/.exec(buf);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!.split(','));
      }
    });
  });
  p.removeAllListeners('exit');
  p.stderr!.removeAllListeners('data');
  p.stderr!.on('data', (d: Buffer) => (said += d.toString())); // its answers to down/up (and rare log lines)
  const tell = async (cmd: string) => {
    if (!topics) throw new Error('down(): only a cluster started with a topics map (the Python-held one) can stop its brokers');
    const mark = said.length;
    p.stdin!.write(`${cmd}\n`);
    const t0 = Date.now();
    while (!said.slice(mark).includes(`brokers ${cmd}`)) {
      if (Date.now() - t0 > 5000) throw new Error(`the mock cluster did not answer ${cmd}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const ports = list.map((b) => b.split(':').at(-1)!);
  return {
    brokers: list,
    async cut() {
      const toBrokers = ports.flatMap((port, i) => [...(i ? ['or'] : []), 'dport', '=', `:${port}`]);
      const { stdout } = await run('ss', ['-t', '-n', '-p', '-H', 'state', 'established', '(', ...toBrokers, ')']);
      // Local Address:Port is the 3rd column without a State column (Recv-Q Send-Q Local Peer Process).
      const mine = stdout
        .split('\n')
        .filter((l) => l.includes(`pid=${process.pid},`))
        .map((l) => l.trim().split(/\s+/)[2]!.split(':').at(-1)!);
      if (mine.length === 0) return 0;
      const filter = mine.flatMap((port, i) => [...(i ? ['or'] : []), 'sport', '=', `:${port}`, 'or', 'dport', '=', `:${port}`]);
      await run('ss', ['-K', '-t', '-n', 'state', 'established', '(', ...filter, ')']);
      return mine.length;
    },
    async down() {
      await tell('down');
      return () => tell('up');
    },
    refuse: (code, requests) => tell(`refuse ${code} ${requests}`),
    stop: () => endProcess(p),
  };
}

/** Publishes `bodies` (one message each, no newline inside) with `kcat -P`; `keys` optional. */
export async function kcatPublish(brokers: string[], topic: string, bodies: Buffer[], keys?: string[]) {
  const args = ['-P', '-b', brokers.join(','), '-t', topic, ...(keys ? ['-K', '\t'] : [])];
  const p = spawn('kcat', args, { stdio: ['pipe', 'ignore', 'pipe'] });
  let err = '';
  p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const lines = bodies.map((b, i) => (keys ? `${keys[i]}\t${b.toString()}` : b.toString()));
  p.stdin!.end(lines.join('\n') + '\n');
  const [code] = (await once(p, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`kcat -P failed (${code}): ${err}`);
}

export interface KafkaRecord {
  key: string;
  partition: number;
  offset: number;
  value: string;
}

/** Reads `topic` from the beginning with `kcat -C` until closed; every message with its partition and key. */
export function kcatCollect(brokers: string[], topic: string) {
  // -E: kcat stays through the brokers' restarts (down()) instead of exiting when all are down.
  const args = ['-C', '-E', '-b', brokers.join(','), '-t', topic, '-o', 'beginning', '-q', '-u', '-f', '%p\t%o\t%k\t%s\n'];
  const p = tied('kcat', args, 'pipe', 'ignore');
  const got: KafkaRecord[] = [];
  let rest = '';
  p.stdout!.on('data', (d: Buffer) => {
    rest += d.toString();
    const lines = rest.split('\n');
    rest = lines.pop()!;
    for (const l of lines) {
      const [partition, offset, key, ...value] = l.split('\t');
      got.push({ partition: Number(partition), offset: Number(offset), key: key!, value: value.join('\t') });
    }
  });
  return {
    messages: () => got,
    close: () => endProcess(p),
  };
}

/** The fixture for one engine (librdkafka or kafkajs): the same peer, the engine named in every config. */
export const kafkaMockFor = (engine: 'librdkafka' | 'kafkajs'): PeerFixture => ({
  label: engine,
  type: 'kafka',
  badConfig: { role: 'source', set: { security_protocol: 'SASL_PLAINTEXT' }, path: 'sasl_mechanism' },
  async start(): Promise<Peer> {
    // Held by Python (an empty topics map) rather than kcat, so that down() can stop its brokers.
    const cluster = await startMockCluster(3, {});
    const brokers = cluster.brokers;
    return {
      source: {
        // session_timeout_ms 6000: the mock holds a group that a member left in its join state for
        // the session timeout less a second before it takes the next member (a real broker
        // rebalances as soon as the known members rejoined), so a reconnect would wait 29 s.
        config: (topic) => ({ type: 'kafka', brokers, topic, max_poll_records: 200, session_timeout_ms: 6000, engine }),
        publish: (topic, bodies) => kcatPublish(brokers, topic, bodies),
        // auto_offset_reset latest: the group is joined when `connected` is reported; a moment more for the first fetch.
        settleMs: 300,
      },
      sink: {
        config: (topic) => ({ type: 'kafka', brokers, topic, engine }),
        async collect(topic): Promise<Collector> {
          const c = kcatCollect(brokers, topic);
          return { records: () => c.messages().map((m) => JSON.parse(m.value) as Rec), close: () => c.close() };
        },
      },
      wrongPort: (cfg) => ({ ...cfg, brokers: ['127.0.0.1:1'] }),
      noCredentials:
        "librdkafka's mock cluster has no SASL or TLS listener: it takes no credentials. The SASL and SSL fields are validated (lint) and a SASL login against it is shown to fail clearly; see test/connectors/kafka.test.ts.",
      // The restart: every broker stopped and, a moment later, started again (the data stays).
      async disrupt() {
        const up = await cluster.down();
        await elapse(1500); // long enough for the clients to see every broker gone
        await up();
      },
      // The brokers stopped and started: connections closed, new ones refused, the data kept.
      down: () => cluster.down(),
      stop: () => cluster.stop(),
    };
  },
});

export const kafkaMock = kafkaMockFor('kafkajs');
