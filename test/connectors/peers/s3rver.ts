// Peer fixture for the s3 connector: s3rver 3.7.1 (devDependency) as a child process
// (s3rver-server.ts: s3rver behind a front that checks Signature V4 as S3 does, answers
// AbortMultipartUpload and If-Match, and logs each request) on a free loopback port with its data
// in a temporary directory. disrupt() kills it (SIGKILL) and starts it again on the same port and
// data; before each start, metadata files a kill tore are removed (tornMetadata). The fixture's own reads and writes use @aws-sdk/client-s3; `objectFile` gives the bytes as
// s3rver stored them on disk, for byte-for-byte comparisons.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { freePort } from '../../helpers/net.js';
import type { Collector, Peer, PeerFixture, Rec } from '../conformance.js';
import { peerProcess } from './process.js';
import { pace } from '../../helpers/wait.js';

export const BUCKET = 'svc-test';
/** s3rver's one account. */
export const KEYS = { aws_access_key_id: 'S3RVER', aws_secret_access_key: 'S3RVER' };
const SERVER = fileURLToPath(new URL('./s3rver-server.ts', import.meta.url));

export interface S3rverPeer {
  endpoint: string;
  port: number;
  /** A client of the fixture's own (path-style, checksums only when required). */
  client: S3Client;
  /** The stored bytes of `key`, read from s3rver's data directory. */
  objectFile(key: string, bucket?: string): string;
  /** Requests received since the last call ("METHOD /bucket/key?query"). */
  takeRequests(): string[];
  kill(): Promise<void>;
  start(): Promise<void>;
  /** SIGKILL, then the same port and data. */
  restart(): Promise<void>;
  /** Kills it; the returned function starts it again on the same port and data. */
  down(): Promise<() => Promise<void>>;
  stop(): Promise<void>;
}

/**
 * Removes the metadata files under `data` that do not parse. s3rver writes an object's metadata
 * after its body with a plain writeFile, so a SIGKILL between the open and the write leaves an empty
 * file, and from then on every listing of its bucket is an InternalError (JSON.parse throws; only a
 * missing file is tolerated). Real S3 never shows an object its failed PUT left; without the file,
 * s3rver lists that object with no stored metadata, and the tests count it as the one leftover.
 */
function tornMetadata(data: string): void {
  for (const e of readdirSync(data, { recursive: true, withFileTypes: true })) {
    if (!e.isFile() || !e.name.endsWith('._S3rver_metadata.json')) continue;
    const file = join(e.parentPath, e.name);
    try {
      JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      rmSync(file);
    }
  }
}

export async function s3rverPeer(buckets: string[] = [BUCKET]): Promise<S3rverPeer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'svc-s3rver-'));
  const data = join(dir, 'data');
  const log = join(dir, 'requests.log');
  const proc = peerProcess(
    process.execPath,
    ['--openssl-legacy-provider', '--no-warnings', '--import', 'tsx', SERVER, String(port), data, buckets.join(','), log],
    port,
  );
  await proc.start();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    region: 'us-east-1',
    endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: KEYS.aws_access_key_id, secretAccessKey: KEYS.aws_secret_access_key },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  let seen = 0;
  const start = async () => {
    tornMetadata(data);
    await proc.start();
  };
  return {
    endpoint,
    port,
    client,
    objectFile: (key, bucket = BUCKET) => join(data, bucket, ...key.split('/').slice(0, -1), `${key.split('/').pop()}._S3rver_object`),
    takeRequests() {
      let text: string;
      try {
        text = readFileSync(log, 'utf8');
      } catch {
        return [];
      }
      const lines = text.split('\n').filter(Boolean);
      const fresh = lines.slice(seen);
      seen = lines.length;
      return fresh;
    },
    kill: () => proc.kill(),
    start,
    async restart() {
      await proc.kill();
      await start();
    },
    async down() {
      await proc.kill();
      return start;
    },
    async stop() {
      client.destroy();
      await proc.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Every key under `prefix`, with its ETag (ListObjectsV2, all pages). */
export async function listKeys(client: S3Client, prefix: string, bucket = BUCKET): Promise<{ key: string; etag: string; size: number }[]> {
  const out: { key: string; etag: string; size: number }[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) out.push({ key: o.Key!, etag: o.ETag!, size: o.Size ?? 0 });
    token = page.NextContinuationToken;
  } while (token);
  return out;
}

export async function getObject(client: S3Client, key: string, bucket = BUCKET): Promise<{ body: Buffer; contentType?: string; etag?: string }> {
  const r = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return { body: Buffer.from(await r.Body!.transformToByteArray()), contentType: r.ContentType, etag: r.ETag };
}

export const putObject = (client: S3Client, key: string, body: Buffer | string, bucket = BUCKET) =>
  client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));

/** Bodies as JSON-array objects of up to `per` bodies each under `prefix` (part-000.json, ...). */
export async function putJsonArrays(client: S3Client, prefix: string, bodies: Buffer[], per = 250) {
  for (let i = 0, n = 0; i < bodies.length; i += per, n++) {
    await putObject(client, `${prefix}part-${String(n).padStart(3, '0')}.json`, `[${bodies.slice(i, i + per).join(',')}]`);
  }
}

/** Reads every object under `prefix` (JSON arrays) every 100 ms until closed; each version is fetched once. */
function poll(client: S3Client, prefix: string): Collector {
  const seen = new Map<string, { etag: string; records: Rec[] }>();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        for (const o of await listKeys(client, prefix)) {
          if (seen.get(o.key)?.etag === o.etag) continue;
          seen.set(o.key, { etag: o.etag, records: JSON.parse((await getObject(client, o.key)).body.toString('utf8')) as Rec[] });
        }
      } catch {
        // the peer restarting: next round
      }
      await pace(100); // one listing round every 100 ms
    }
  })();
  return {
    records: () => [...seen.keys()].sort().flatMap((k) => seen.get(k)!.records),
    async close() {
      stopped = true;
      await loop;
    },
  };
}

export const s3Fixture: PeerFixture = {
  type: 's3',
  badConfig: { role: 'source', set: { bucket: `${BUCKET}/in` }, path: 'bucket' },
  async start(): Promise<Peer> {
    const peer = await s3rverPeer();
    const base = { type: 's3', bucket: BUCKET, endpoint_url: peer.endpoint, ...KEYS };
    return {
      source: {
        config: (ch) => ({ ...base, prefix: `${ch}/` }),
        publish: (ch, bodies) => putJsonArrays(peer.client, `${ch}/`, bodies),
      },
      sink: {
        config: (ch) => ({ ...base, key_template: `${ch}/{run_id}.json`, content_type: 'application/json' }),
        collect: async (ch) => poll(peer.client, `${ch}/`),
      },
      wrongPort: (cfg) => ({ ...cfg, endpoint_url: 'http://127.0.0.1:1' }),
      wrongCredentials: (cfg) => ({ ...cfg, aws_secret_access_key: 'wrong-secret' }),
      disrupt: () => peer.restart(),
      down: () => peer.down(),
      stop: () => peer.stop(),
    };
  },
};
