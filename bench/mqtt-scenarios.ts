// MQTT ingest side by side with Mosquitto's own subscriber in the same run (issue 12):
// 200,000 QoS 1 messages drained from a persistent session by the mqtt source into an NDJSON file
// (acknowledged after delivery), next to `mosquitto_sub -q 1 > file` draining the same messages
// from its own session on the same private broker. Both sessions are filled before either
// subscriber starts, so the figures are the subscribers' speed, not the publisher's.
//
// The private broker: max_queued_messages 0 (no limit: Mosquitto's default of 1000 would drop
// everything above it for an offline session) and max_inflight_messages 2000 (the window of
// unacknowledged messages it sends a MQTT 3.1.1 client such as mosquitto_sub; our source announces
// the same number as its MQTT 5 Receive Maximum, which Mosquitto uses instead for MQTT 5 clients).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Registry } from '../src/config/load.js';
import type { RunOptions } from '../src/engine/runner.js';
import { publish, startBroker, type Broker } from '../test/connectors/peers/mosquitto.js';
import type { Measured, Scenario } from './scenarios.js';
import { checkSequenceFile } from './sequence.js';
import { startStreamIngest } from './pipeline.js';

const MESSAGES = Number(process.env.BENCH_MQTT_MESSAGES ?? 200_000);
const WINDOW = 2000;
const TOPIC = 'bench/ingest';

const body = (seq: number) => JSON.stringify({ seq, site: 'site-042', kind: 'pm', value: seq * 3, pad: 'x'.repeat(48) });

/** Waits until `file` holds at least `bytes` (polling its size). */
async function grown(file: string, bytes: number, timeoutMs: number) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    let size = 0;
    try {
      size = statSync(file).size;
    } catch {
      /* not yet created */
    }
    if (size >= bytes) return;
    if (Date.now() > end) throw new Error(`${file}: ${size} of ${bytes} bytes after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const pipelineYaml = (name: string, broker: Broker, clientId: string, out: string, protocol: 4 | 5) => `version: "1"
pipeline:
  name: ${name}
  schedule: { type: stream }
  source: { type: mqtt, host: 127.0.0.1, port: ${broker.port}, topic: ${TOPIC}, qos: 1, client_id: ${clientId}, protocol_version: ${protocol} }
  serializer_in: { type: json }
  serializer_out: { type: ndjson }
  sinks: [{ type: local, path: ${JSON.stringify(out)}, filename_template: ingest.ndjson }]
`;

/**
 * One measurement of the mqtt source: its persistent session (made before the messages were
 * published) drained into an NDJSON file; seconds from start to the last byte written.
 */
export async function measureSource(
  broker: Broker,
  clientId: string,
  dir: string,
  expectedBytes: number,
  opts: { protocol?: 4 | 5; registry?: Registry; type?: string; run?: Pick<RunOptions, 'tap' | 'onProgress'> } = {},
) {
  const out = join(dir, clientId);
  let yaml = pipelineYaml(`bench-${clientId}`, broker, clientId, out, opts.protocol ?? 5);
  if (opts.type) yaml = yaml.replace('type: mqtt', `type: ${opts.type}`);
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const run = startStreamIngest(yaml, { registry: opts.registry, ...opts.run });
  await grown(join(out, 'ingest.ndjson'), expectedBytes, 600_000);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const rec = await run.stop();
  if (rec.status !== 'success') throw new Error(`mqtt ingest run failed: ${JSON.stringify(rec)}`);
  return { seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6, file: join(out, 'ingest.ndjson') };
}

/** Creates the persistent session of the mqtt source (connect, subscribe, stop). */
export async function makeSourceSession(broker: Broker, clientId: string, dir: string, opts: { protocol?: 4 | 5; registry?: Registry; type?: string } = {}) {
  let yaml = pipelineYaml(`bench-${clientId}`, broker, clientId, join(dir, `${clientId}-setup`), opts.protocol ?? 5);
  if (opts.type) yaml = yaml.replace('type: mqtt', `type: ${opts.type}`);
  const run = startStreamIngest(yaml, { registry: opts.registry });
  await run.ready;
  await run.stop();
}

export function runProcess(cmd: string, args: string[], stdoutFile?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn('sh', ['-c', `exec "$0" "$@"${stdoutFile ? ` > '${stdoutFile}'` : ''}`, cmd, ...args], {
      stdio: ['ignore', stdoutFile ? 'inherit' : 'ignore', 'pipe'],
    });
    let err = '';
    p.stderr!.setEncoding('utf8').on('data', (s: string) => (err += s));
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited ${code}: ${err}`))));
  });
}

/** A private broker for the bench (see the header for why these two limits). */
export const benchBroker = () => startBroker({ persistence: false, extra: ['max_queued_messages 0', `max_inflight_messages ${WINDOW}`] });

/** Publishes `n` bench messages at QoS 1 (mosquitto_pub -l, in pieces); returns the NDJSON bytes they make. */
export async function fill(broker: Broker, n: number): Promise<number> {
  let bytes = 0;
  const piece = 50_000;
  for (let from = 0; from < n; from += piece) {
    const bodies = Array.from({ length: Math.min(piece, n - from) }, (_, i) => Buffer.from(body(from + i)));
    for (const b of bodies) bytes += b.length + 1;
    await publish({ port: broker.port }, TOPIC, bodies, { qos: 1 });
  }
  return bytes;
}

export const mqttIngest: Scenario = {
  async run(): Promise<Measured> {
    const dir = mkdtempSync(join(tmpdir(), 'svc-bench-mqtt-'));
    const broker = await benchBroker();
    try {
      const ours = 'svc-bench-ingest';
      const theirs = 'bench-mosquitto-sub';
      await makeSourceSession(broker, ours, dir);
      await runProcess('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(broker.port), '-c', '-i', theirs, '-q', '1', '-t', TOPIC, '-E']);
      const p0 = performance.now();
      const expectedBytes = await fill(broker, MESSAGES);
      const publishSeconds = (performance.now() - p0) / 1000;

      // mosquitto_sub first (it prints each payload and a newline: the same bytes as our NDJSON).
      const subFile = join(dir, 'mosquitto_sub.ndjson');
      const s0 = performance.now();
      await runProcess(
        'mosquitto_sub',
        ['-h', '127.0.0.1', '-p', String(broker.port), '-c', '-i', theirs, '-q', '1', '-t', TOPIC, '-C', String(MESSAGES)],
        subFile,
      );
      const subSeconds = (performance.now() - s0) / 1000;
      const sub = await checkSequenceFile(subFile, MESSAGES);

      const r = await measureSource(broker, ours, dir, expectedBytes);
      const got = await checkSequenceFile(r.file, MESSAGES);
      const oursRate = MESSAGES / r.seconds;
      const subRate = MESSAGES / subSeconds;
      return {
        messages: MESSAGES,
        qos: 1,
        broker_max_inflight_messages: WINDOW,
        publish_msgs_per_sec: Math.round(MESSAGES / publishSeconds),
        ours_seconds: Number(r.seconds.toFixed(3)),
        ours_msgs_per_sec: Math.round(oursRate),
        ours_cpu_seconds: Number(r.cpuSeconds.toFixed(2)),
        ours_lost: got.missing,
        ours_duplicates: got.duplicates,
        mosquitto_sub_seconds: Number(subSeconds.toFixed(3)),
        mosquitto_sub_msgs_per_sec: Math.round(subRate),
        mosquitto_sub_lost: sub.missing,
        ratio: Number((oursRate / subRate).toFixed(2)),
      };
    } finally {
      await broker.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
