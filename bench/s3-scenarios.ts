// s3-sink: objects into s3rver 3.7.1 (a child process on a free loopback port, its data in a
// temporary directory) through the s3 sink, as real pipeline runs from local files (text lines in
// and out, so the pipeline's own work per byte is small): many small objects (1,000 inputs of 10
// records, one object each) and a few large ones (3 inputs of about 24 MB, multipart uploads of
// 8 MiB parts). Beside them, in the same run and against the same server, a plain
// @aws-sdk/client-s3 script: one PutObject per file in a loop, each file read whole first (what a
// careful script does; it holds every object in memory, the sink streams it). For the large ones
// also lib-storage's own Upload of each whole file with the sink's part size and concurrency: the
// same multipart requests without the pipeline, which tells the cost of multipart at this server
// (parts stored, then joined at completion) from the sink's own. Objects/s, MB/s and our process's
// CPU seconds per leg.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { PART_SIZE, PARTS_AT_ONCE } from '../src/plugins/connectors/s3/sink.js';
import { DATA_DIR, interfaceRecord, linesFile } from './data.js';
import { timedRun } from './pipeline.js';
import type { Measured, Scenario } from './scenarios.js';
import { freePort } from '../test/helpers/net.js';
import { peerProcess } from '../test/connectors/peers/process.js';

const SMALL_FILES = 1000;
const SMALL_RECORDS = 10;
const LARGE_FILES = 3;
const LARGE_RECORDS = 200_000;
const BUCKET = 'bench';
const KEYS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const SMALL_DIR = join(DATA_DIR, 's3-small');
const LARGE_DIR = join(DATA_DIR, 's3-large');

async function prepare(): Promise<void> {
  if (!existsSync(join(SMALL_DIR, `o${SMALL_FILES - 1}.txt`))) {
    mkdirSync(SMALL_DIR, { recursive: true });
    for (let f = 0; f < SMALL_FILES; f++) {
      const lines = Array.from({ length: SMALL_RECORDS }, (_, i) => interfaceRecord(f * SMALL_RECORDS + i));
      writeFileSync(join(SMALL_DIR, `o${f}.txt`), lines.join('\n') + '\n');
    }
  }
  for (let f = 0; f < LARGE_FILES; f++) await linesFile('s3-large', `big${f}.txt`, LARGE_RECORDS, (i) => interfaceRecord(f * LARGE_RECORDS + i));
}

/** s3rver itself (its own command, no signature front), legacy OpenSSL for its DES continuation tokens. */
async function startS3rver() {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-s3-'));
  const bin = join(dirname(createRequire(import.meta.url).resolve('s3rver/package.json')), 'bin', 's3rver.js');
  const proc = peerProcess(
    process.execPath,
    ['--openssl-legacy-provider', bin, '-d', dir, '-a', '127.0.0.1', '-p', String(port), '--silent', '--configure-bucket', BUCKET],
    port,
  );
  await proc.start();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    async stop() {
      await proc.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const bytesOf = (dir: string) => readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);

async function countObjects(client: S3Client, prefix: string): Promise<{ objects: number; bytes: number }> {
  let objects = 0;
  let bytes = 0;
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) {
      objects++;
      bytes += o.Size ?? 0;
    }
    token = page.NextContinuationToken;
  } while (token);
  return { objects, bytes };
}

/** Our leg: local text files -> s3 sink, one object per input file. */
async function ours(endpoint: string, dir: string, prefix: string): Promise<{ seconds: number; cpu: number }> {
  const {
    record: rec,
    seconds,
    cpuSeconds,
  } = await timedRun(`
version: "1"
pipeline:
  name: s3-bench
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(dir)}, file_pattern: '*.txt' }
  serializer_in: { type: text, include_line_num: false }
  serializer_out: { type: text }
  sinks:
    - { type: s3, bucket: ${BUCKET}, endpoint_url: '${endpoint}', aws_access_key_id: S3RVER, aws_secret_access_key: S3RVER, key_template: '${prefix}{source_stem}.txt', content_type: text/plain }
`);
  if (rec.status !== 'success' || rec.errors.length) throw new Error(`bench run failed: ${JSON.stringify(rec)}`);
  return { seconds, cpu: cpuSeconds };
}

/** The reference: read each file whole, PutObject (or lib-storage's multipart Upload), next. */
async function plain(client: S3Client, dir: string, prefix: string, multipart = false): Promise<{ seconds: number; cpu: number }> {
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  for (const f of readdirSync(dir)
    .filter((n) => n.endsWith('.txt'))
    .sort()) {
    const params = { Bucket: BUCKET, Key: `${prefix}${f}`, Body: readFileSync(join(dir, f)), ContentType: 'text/plain' };
    if (multipart) await new Upload({ client, params, partSize: PART_SIZE, queueSize: PARTS_AT_ONCE }).done();
    else await client.send(new PutObjectCommand(params));
  }
  const cpu = process.cpuUsage(cpu0);
  return { seconds: (performance.now() - t0) / 1000, cpu: (cpu.user + cpu.system) / 1e6 };
}

export const s3Sink: Scenario = {
  prepare,
  async run(): Promise<Measured> {
    await prepare();
    const s3 = await startS3rver();
    const client = new S3Client({
      region: 'us-east-1',
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: KEYS,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    const out: Measured = {};
    try {
      for (const [leg, dir, files] of [
        ['small', SMALL_DIR, SMALL_FILES],
        ['large', LARGE_DIR, LARGE_FILES],
      ] as const) {
        const mb = bytesOf(dir) / 1e6;
        const a = await ours(s3.endpoint, dir, `ours-${leg}/`);
        const b = await plain(client, dir, `plain-${leg}/`);
        const legs = [
          ['ours', a],
          ['plain', b],
        ] as [string, { seconds: number; cpu: number }][];
        if (leg === 'large') legs.push(['libstorage', await plain(client, dir, `libstorage-${leg}/`, true)]);
        for (const [who, r] of legs) {
          const stored = await countObjects(client, `${who}-${leg}/`);
          if (stored.objects !== files || Math.abs(stored.bytes / 1e6 - mb) > 1e-6)
            throw new Error(`${who} ${leg}: ${stored.objects} objects, ${stored.bytes} bytes stored`);
          out[`${leg}_${who}_objects_per_sec`] = Number((files / r.seconds).toFixed(1));
          out[`${leg}_${who}_mb_per_sec`] = Number((mb / r.seconds).toFixed(1));
          out[`${leg}_${who}_cpu_s`] = Number(r.cpu.toFixed(2));
        }
        out[`${leg}_objects`] = files;
        out[`${leg}_mb`] = Number(mb.toFixed(1));
      }
    } finally {
      client.destroy();
      await s3.stop();
    }
    return out;
  },
};
