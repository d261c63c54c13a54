// The amqp source and sink: the conformance suite, then what is particular to AMQP (manual acks and
// redelivery of what a sink refused, auto_ack, prefetch, exchanges and delivery modes, the DLQ),
// against the machine's RabbitMQ.
import { readFileSync, readdirSync, writeFileSync, mkdirSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { GetMessage } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadPipelineText } from '../../src/config/load.js';
import { runPipeline } from '../../src/engine/runner.js';
import type { RunRecord } from '../../src/engine/run-record.js';
import { tempDir } from '../helpers/fs.js';
import { conformance, uniqueChannel } from './conformance.js';
import { rabbitmq, rabbitVhost } from './peers/rabbitmq.js';
import { until } from '../helpers/wait.js';

conformance(rabbitmq);

describe('amqp specifics', () => {
  let v: Awaited<ReturnType<typeof rabbitVhost>>;
  beforeAll(async () => {
    v = await rabbitVhost();
  }, 60_000);
  afterAll(async () => v?.stop(), 60_000);

  const publish = async (queue: string, n: number, from = 0) => {
    const ch = await v.admin.createConfirmChannel();
    await ch.assertQueue(queue, { durable: true });
    for (let i = from; i < from + n; i++) ch.sendToQueue(queue, Buffer.from(JSON.stringify({ seq: i })), { persistent: true });
    await ch.waitForConfirms();
    await ch.close();
  };
  /** Messages left in a queue (taken off it). */
  const drainQueue = async (queue: string): Promise<GetMessage[]> => {
    const ch = await v.admin.createChannel();
    const out: GetMessage[] = [];
    for (let m = await ch.get(queue, { noAck: true }); m; m = await ch.get(queue, { noAck: true })) out.push(m);
    await ch.close();
    return out;
  };
  const config = (p: Record<string, unknown>) => {
    const r = loadPipelineText(stringify({ version: '1', pipeline: p }), { env: {} });
    if (!r.config) throw new Error(JSON.stringify(r.diagnostics));
    return r.config;
  };
  const lines = (dir: string) =>
    readdirSync(dir).flatMap((f) =>
      readFileSync(join(dir, f), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { seq: number }),
    );
  /** Runs a stream from `queue` until `enough` holds (or 10 s: the test's assertions then say what is missing), then stops it. */
  const stream = async (source: Record<string, unknown>, sinks: unknown[], enough: () => boolean, extra: Record<string, unknown> = {}): Promise<RunRecord> => {
    const stop = new AbortController();
    const done = runPipeline(
      config({
        name: 'amqp-spec',
        schedule: { type: 'stream' },
        source: { type: 'amqp', url: v.url, ...source },
        serializer_in: { type: 'json' },
        sinks,
        ...extra,
      }),
      { signal: stop.signal },
    );
    await until(enough, 10_000, 'the stream to have what the test needs').catch(() => undefined);
    stop.abort();
    return done;
  };

  it('a batch a sink refused is not acknowledged: it stays in the queue (nothing after it is acknowledged either)', async () => {
    const q = uniqueChannel('amqp');
    await publish(q, 30);
    const blocker = join(tempDir(), 'a-file');
    writeFileSync(blocker, 'not a directory');
    const rec = await stream({ queue: q, reconnect_delay_seconds: 0.1 }, [{ type: 'local', path: join(blocker, 'out') }], () => false);
    expect(rec.records_out).toBe(0);
    expect(rec.errors.join('\n')).toMatch(/no sink wrote the batch/);
    const left = await drainQueue(q);
    expect(left.map((m) => JSON.parse(m.content.toString()).seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    // Redelivered, since the runtime reconnected to get them again.
    expect(left.some((m) => m.fields.redelivered)).toBe(true);
  });

  it('with a DLQ, refused records are dead-lettered and then acknowledged', async () => {
    const q = uniqueChannel('amqp');
    await publish(q, 10);
    const dir = tempDir();
    const rec = await stream(
      { queue: q },
      [{ type: 'amqp', url: v.url, exchange: 'no-such-exchange', routing_key: 'x' }],
      () => readdirSync(dir).length > 0 && lines(dir).length >= 10,
      { on_error: 'dlq', dlq: { type: 'local', path: dir, filename_template: 'dlq.ndjson' } },
    );
    expect(rec.dlq_count).toBe(10);
    const dead = lines(dir) as unknown as { _stage: string; _error: string; record: { seq: number } }[];
    expect(dead.map((d) => d.record.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => i));
    expect(dead[0]!._stage).toBe('sink');
    expect(dead[0]!._error).toMatch(/no-such-exchange/);
    expect(dead[0]!._error).not.toContain(v.password);
    expect(await drainQueue(q)).toHaveLength(0);
  });

  it('auto_ack is at-most-once: refused records are gone from the queue', async () => {
    const q = uniqueChannel('amqp');
    await publish(q, 20);
    const blocker = join(tempDir(), 'a-file');
    writeFileSync(blocker, '');
    let seen = 0;
    await stream({ queue: q, auto_ack: true }, [{ type: 'local', path: join(blocker, 'out') }], () => ++seen > 40);
    expect(await drainQueue(q)).toHaveLength(0);
  });

  it('prefetch_count bounds the unacknowledged messages at the broker', async () => {
    const q = uniqueChannel('amqp');
    await publish(q, 50);
    const out = tempDir();
    const stop = new AbortController();
    // Two writes a second: the stream holds what the broker sent, unacknowledged, while it waits.
    const cfg = config({
      name: 'prefetch',
      schedule: { type: 'stream' },
      source: { type: 'amqp', url: v.url, queue: q, prefetch_count: 7 },
      serializer_in: { type: 'json' },
      sinks: [{ type: 'local', path: out, filename_template: 'o.ndjson' }],
      serializer_out: { type: 'ndjson' },
      rate_limit_rps: 2,
    });
    const done = runPipeline(cfg, { signal: stop.signal });
    const unacknowledged = async () => {
      const { stdout } = await promisify(execFile)('rabbitmqctl', [
        '--quiet',
        'list_queues',
        '-p',
        v.vhost,
        'name',
        'messages_unacknowledged',
        'messages_ready',
      ]);
      return Number(
        stdout
          .split('\n')
          .find((l) => l.startsWith(q + '\t'))
          ?.split('\t')[1] ?? 0,
      );
    };
    const unacked = await until(unacknowledged, 10_000, 'unacknowledged messages at the broker', 200);
    expect(unacked).toBeGreaterThan(0);
    expect(unacked).toBeLessThanOrEqual(7);
    stop.abort();
    await done;
    const got = lines(out).map((r) => r.seq);
    expect(got).toEqual(Array.from({ length: got.length }, (_, i) => i));
  });

  it('sink: a message no queue receives fails the write (mandatory), it is not dropped in silence', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'in'));
    writeFileSync(join(dir, 'in', 'r.ndjson'), '{"a":1}\n{"a":2}\n');
    const rec = await runPipeline(
      config({
        name: 'amqp-unroutable',
        schedule: { type: 'manual' },
        source: { type: 'local', path: join(dir, 'in') },
        serializer_in: { type: 'ndjson' },
        sinks: [{ type: 'amqp', url: v.url, routing_key: 'no-such-queue' }],
      }),
    );
    expect(rec.records_out).toBe(0);
    expect(rec.errors.join('\n')).toMatch(/2 of 2 messages unroutable: no queue is bound to the default exchange for routing key 'no-such-queue'/);
    // The input stays for the next run.
    expect(readdirSync(join(dir, 'in'))).toEqual(['r.ndjson']);
  });

  it('sink: exchange, routing_key and delivery_mode reach the broker', async () => {
    const ch = await v.admin.createChannel();
    await ch.assertExchange('svc-topic', 'topic', { durable: false });
    const q = uniqueChannel('amqp');
    await ch.assertQueue(q, { durable: false });
    await ch.bindQueue(q, 'svc-topic', 'pm.#');
    const dir = tempDir();
    mkdirSync(join(dir, 'in'));
    writeFileSync(join(dir, 'in', 'r.ndjson'), '{"a":1}\n{"a":2}\n');
    for (const mode of [1, 2] as const) {
      const rec = await runPipeline(
        config({
          name: 'amqp-sink',
          schedule: { type: 'manual' },
          source: { type: 'local', path: join(dir, 'in') },
          serializer_in: { type: 'ndjson' },
          sinks: [{ type: 'amqp', url: v.url, exchange: 'svc-topic', routing_key: 'pm.du.1', delivery_mode: mode }],
        }),
      );
      expect(rec.records_out).toBe(2);
      const got = await drainQueue(q);
      expect(got.map((m) => JSON.parse(m.content.toString()))).toEqual([{ a: 1 }, { a: 2 }]);
      expect(got.every((m) => m.fields.routingKey === 'pm.du.1' && m.properties.deliveryMode === mode)).toBe(true);
    }
    await ch.close();
  });
});
