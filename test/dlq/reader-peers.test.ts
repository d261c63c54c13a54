// The DLQ readers of redis (list and stream), s3 (s3rver), sftp (a private sshd) and kafka
// (librdkafka's mock cluster): envelopes written by the engine's DLQ through the real sink are
// read back whole, twice with the same ids, without consuming anything.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readDlq } from '../../src/dlq/reader.js';
import { silentLogger } from '../../src/observability/log.js';
import { kafkaDlqReader } from '../../src/plugins/connectors/kafka/dlq-reader.js';
import { kcatPublish, startMockCluster, type MockCluster } from '../connectors/peers/kafka-mock.js';
import { admin, SHARED } from '../connectors/peers/redis.js';
import { BUCKET, KEYS, s3rverPeer, type S3rverPeer } from '../connectors/peers/s3rver.js';
import { sshdServer, type SshdServer } from '../connectors/peers/sshd.js';
import { deadLetterAndRead, expectEnvelopes, failingInput, pipelineWithDlq } from './_write.js';

const stops: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => {});
});

const read = (config: Parameters<typeof readDlq>[0]) => readDlq(config, { log: silentLogger, signal: AbortSignal.timeout(30_000) });
const flow = (o: Record<string, unknown>) => JSON.stringify(o);

/** Dead-letters `bad` of `total` records into the DLQ sink `dlq`, reads it back twice. */
async function roundTrip(dlq: Record<string, unknown>, total: number, bad: number) {
  const config = pipelineWithDlq(failingInput(total, bad), flow(dlq));
  const { run, read: first } = await deadLetterAndRead(config, bad);
  expectEnvelopes(first, run.run_id, bad);
  const second = await read(config);
  expect(second.entries.map((e) => e.id)).toEqual(first.entries.map((e) => e.id));
  return first;
}

describe('redis DLQ reader', () => {
  it.each(['list', 'stream'] as const)('reads a %s page by page without consuming it', async (mode) => {
    const key = `svc:dlq-test:${process.pid}:${mode}`;
    const r = admin(SHARED);
    stops.push(async () => {
      await r.del(key);
      r.disconnect();
    });
    await r.del(key);
    // More than one page (500) of envelopes.
    const first = await roundTrip({ type: 'redis', host: SHARED.host, port: SHARED.port, key, mode }, 1210, 1203);
    expect(first.entries[0]!.location).toMatch(mode === 'list' ? new RegExp(`^${key}\\[0\\]$`) : new RegExp(`^${key}@\\d+-\\d+$`));
    expect(mode === 'list' ? await r.llen(key) : await r.xlen(key)).toBe(1203);
  });

  it('refuses a key of another type, naming it', async () => {
    const key = `svc:dlq-test:${process.pid}:hash`;
    const r = admin(SHARED);
    stops.push(async () => {
      await r.del(key);
      r.disconnect();
    });
    await r.hset(key, 'a', '1');
    const config = pipelineWithDlq(failingInput(1, 1), flow({ type: 'redis', host: SHARED.host, port: SHARED.port, key }));
    await expect(read(config)).rejects.toThrow(/reading the DLQ of pipeline 'dlqr' \(redis\) failed: key '.*:hash' holds a hash, not a list/);
  });
});

describe('s3 DLQ reader', () => {
  let peer: S3rverPeer;
  it('reads the objects under the fixed prefix of key_template, not the rest of the bucket', async () => {
    peer = await s3rverPeer();
    stops.push(() => peer.stop());
    const { PutObjectCommand } = await import('@aws-sdk/client-s3');
    await peer.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'data/other.ndjson', Body: '{"not": "an envelope"}\n' }));
    const dlq = { type: 's3', bucket: BUCKET, endpoint_url: peer.endpoint, ...KEYS, key_template: 'dead/{pipeline}/{timestamp}.ndjson' };
    const first = await roundTrip(dlq, 30, 11);
    // The other object of the bucket was not read (it is outside the prefix): nothing skipped.
    expect((await read(pipelineWithDlq(failingInput(1, 1), flow(dlq)))).skipped).toBe(0);
    expect(first.entries[0]!.location).toMatch(/^dlqr\/.*\.ndjson#\d+$/);
  });
});

describe('sftp DLQ reader', () => {
  let server: SshdServer;
  it('reads every file under remote_path, subdirectories too', async () => {
    server = await sshdServer();
    stops.push(() => server.stop());
    const dlq = {
      type: 'sftp',
      host: server.host,
      port: server.port,
      username: server.user,
      password: server.password,
      host_key_fingerprint: server.fingerprint(),
      remote_path: join(server.root, `dlq-${process.pid}`),
      filename_template: '{pipeline}/dead_{timestamp}.ndjson',
    };
    const first = await roundTrip(dlq, 25, 9);
    expect(first.entries[0]!.location).toMatch(/^dlqr\/dead_.*\.ndjson#\d+$/);
  });
});

describe('kafka DLQ reader', () => {
  let cluster: MockCluster;
  it('reads each partition up to its end offsets at the time of the call, in a stable order', async () => {
    cluster = await startMockCluster(1, { dead: 3 });
    stops.push(() => cluster.stop());
    const dlq = { type: 'kafka', brokers: cluster.brokers, topic: 'dead', key_field: 'i' };
    const empty = pipelineWithDlq(failingInput(1, 1), flow(dlq));
    expect((await read(empty)).entries).toEqual([]);
    const first = await roundTrip(dlq, 40, 17);
    expect(first.entries.every((e) => /^dead\/[0-2]\/\d+$/.test(e.location))).toBe(true);
    // Bounded: the end offsets are taken when the read begins; what is published meanwhile waits for the next read.
    const reader = kafkaDlqReader(
      { brokers: cluster.brokers, topic: 'dead', security_protocol: 'PLAINTEXT' },
      { pipeline: 'dlqr', log: silentLogger, signal: AbortSignal.timeout(30_000) },
    );
    const it = reader.read()[Symbol.asyncIterator]();
    let n = (await it.next()).done ? 0 : 1;
    const late = first.entries.slice(0, 5).map((e) => Buffer.from(JSON.stringify({ ...e.envelope, _error: `late ${e.id}` })));
    await kcatPublish(cluster.brokers, 'dead', late);
    while (!(await it.next()).done) n++;
    await reader.close?.();
    expect(n).toBe(17);
    const after = await read(empty);
    expect(after.entries).toHaveLength(22);
    expect(after.entries.filter((e) => e.envelope._error.startsWith('late '))).toHaveLength(5);
  });
});
