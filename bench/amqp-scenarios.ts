// amqp-roundtrip: 200,000 interface records (about 200 B) through the amqp sink into a queue of the
// machine's RabbitMQ, then back through the amqp source into an NDJSON file; records/s each way.
// Beside them, in the same run and on the same broker, a plain amqplib script that does the least a
// correct client can (publish with confirms every 1,000 messages; consume with prefetch 1,000 and one
// multiple-ack per 1,000): the reference the figures are read against.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import amqp from 'amqplib';
import { loadPipelineText } from '../src/config/load.js';
import { runPipeline } from '../src/engine/runner.js';
import { DATA_DIR, ndjsonFile } from './data.js';
import type { Measured, Scenario } from './scenarios.js';

const RECORDS = 200_000;
const ctl = (...args: string[]) => execFileSync('rabbitmqctl', ['--quiet', ...args], { stdio: 'ignore' });

function load(yaml: string) {
  const r = loadPipelineText(yaml, { env: {} });
  if (!r.config) throw new Error(r.diagnostics.map((d) => d.message).join('\n'));
  return r.config;
}

function countLines(dir: string): number {
  let n = 0;
  for (const f of readdirSync(dir)) {
    const b = readFileSync(join(dir, f));
    for (let i = 0; i < b.length; i++) if (b[i] === 10) n++;
  }
  return n;
}

async function naive(url: string, queue: string, lines: Buffer[]): Promise<{ produce: number; consume: number }> {
  const conn = await amqp.connect(url);
  const pub = await conn.createConfirmChannel();
  await pub.assertQueue(queue, { durable: true });
  let t0 = performance.now();
  for (let i = 0; i < lines.length; i++) {
    if (!pub.sendToQueue(queue, lines[i]!, { persistent: true })) await new Promise((r) => pub.once('drain', r));
    if (i % 1000 === 999) await pub.waitForConfirms();
  }
  await pub.waitForConfirms();
  const produce = (performance.now() - t0) / 1000;
  const ch = await conn.createChannel();
  await ch.prefetch(1000);
  t0 = performance.now();
  await new Promise<void>((resolve) => {
    let n = 0;
    void ch.consume(queue, (m) => {
      if (!m) return;
      if (++n % 1000 === 0 || n === lines.length) ch.ack(m, true);
      if (n === lines.length) resolve();
    });
  });
  const consume = (performance.now() - t0) / 1000;
  await conn.close();
  return { produce, consume };
}

export const amqpRoundtrip: Scenario = {
  prepare: async () => void (await ndjsonFile(RECORDS)),
  async run(): Promise<Measured> {
    const input = await ndjsonFile(RECORDS);
    const vhost = `svc_bench_${process.pid}`;
    ctl('add_vhost', vhost);
    ctl('set_permissions', '-p', vhost, 'guest', '.*', '.*', '.*');
    const url = `amqp://guest:guest@127.0.0.1:5672/${vhost}`;
    try {
      // The sink publishes `mandatory`: the queue must exist before the first message.
      const setup = await amqp.connect(url);
      await (await setup.createChannel()).assertQueue('svc', { durable: true });
      await setup.close();
      const ref = await naive(
        url,
        'naive',
        readFileSync(input)
          .toString()
          .split('\n')
          .filter(Boolean)
          .map((l) => Buffer.from(l)),
      );

      // Produce: local NDJSON -> amqp sink (persistent, confirmed).
      let t0 = performance.now();
      const produced = await runPipeline(
        load(`version: "1"
pipeline:
  name: bench-amqp-produce
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(dirname(input))}, file_pattern: "*.ndjson" }
  serializer_in: { type: ndjson }
  serializer_out: { type: json }
  sinks: [{ type: amqp, url: "${url}", routing_key: svc }]
`),
      );
      const produce = (performance.now() - t0) / 1000;
      if (produced.records_out !== RECORDS) throw new Error(`produce: ${JSON.stringify(produced)}`);

      // Consume: amqp source (prefetch 1000) -> NDJSON file, stopped once every record is on disk.
      const out = join(DATA_DIR, 'amqp-roundtrip-out');
      rmSync(out, { recursive: true, force: true });
      mkdirSync(out, { recursive: true });
      const stop = new AbortController();
      t0 = performance.now();
      const done = runPipeline(
        load(`version: "1"
pipeline:
  name: bench-amqp-consume
  schedule: { type: stream }
  source: { type: amqp, url: "${url}", queue: svc, prefetch_count: 1000 }
  serializer_in: { type: json }
  serializer_out: { type: ndjson }
  sinks: [{ type: local, path: ${JSON.stringify(out)}, filename_template: out.ndjson }]
`),
        { signal: stop.signal },
      );
      let consumed = 0;
      while ((consumed = countLines(out)) < RECORDS) await new Promise((r) => setTimeout(r, 20));
      const consume = (performance.now() - t0) / 1000;
      stop.abort();
      await done;
      return {
        records: RECORDS,
        produce_records_per_sec: Math.round(RECORDS / produce),
        consume_records_per_sec: Math.round(consumed / consume),
        naive_produce_records_per_sec: Math.round(RECORDS / ref.produce),
        naive_consume_records_per_sec: Math.round(RECORDS / ref.consume),
        produce_ratio: Number((ref.produce / produce).toFixed(2)),
        consume_ratio: Number((ref.consume / consume).toFixed(2)),
      };
    } finally {
      ctl('delete_vhost', vhost);
    }
  },
};
