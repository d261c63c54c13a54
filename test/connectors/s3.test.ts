// The s3 source and sink: the shared conformance suite against s3rver (a child process behind a
// Signature V4 check, test/connectors/peers/s3rver.ts), then what the suite does not cover: the
// stored bytes are exactly the bytes sent (no aws-chunked framing), listing through several pages,
// skip_processed by key and ETag, an object rewritten between listing and reading, multipart
// uploads of a large object streamed with bounded memory and their abort, a peer killed mid-upload,
// key_template tokens and parts, content_type, a peer killed mid-object on the source side (the
// object is not remembered and the next run reads it once), the default credential chain, and
// clear errors for a wrong bucket, endpoint or credentials.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadPipelineText } from '../../src/config/load.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline, type RunTelemetry } from '../../src/engine/runner.js';
import { WriteError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/observability/log.js';
import { s3Client } from '../../src/plugins/connectors/s3/client.js';
import s3Sink, { PART_SIZE, PARTS_AT_ONCE, S3Upload } from '../../src/plugins/connectors/s3/sink.js';
import s3Source, { listing } from '../../src/plugins/connectors/s3/source.js';
import { registry } from '../../src/plugins/registry.js';
import { encoderFor } from '../../src/engine/plan.js';
import type { ConnectionState, ProcessedFiles, SourceUnit } from '../../src/plugins/types.js';
import { tempDir } from '../helpers/fs.js';
import { checkSequence, conformance, type Cfg, type Rec } from './conformance.js';
import { loadPipeline, outputRecords, until } from './helpers.js';
import { BUCKET, getObject, KEYS, listKeys, putObject, s3Fixture, s3rverPeer, type S3rverPeer } from './peers/s3rver.js';

conformance(s3Fixture);

let peer: S3rverPeer;
beforeAll(async () => {
  peer = await s3rverPeer([BUCKET, 'svc-other']);
}, 60_000);
afterAll(async () => {
  await peer?.stop();
});

let seq = 0;
const prefix = (what: string) => `own/${process.pid}-${++seq}-${what}/`;
const base = () => ({ type: 's3', bucket: BUCKET, endpoint_url: peer.endpoint, ...KEYS });
const ndjson = (from: number, n: number, pad = 16) =>
  Array.from({ length: n }, (_, i) => JSON.stringify({ seq: from + i, pad: 'x'.repeat(pad) }) + '\n').join('');

const load = loadPipeline;

/** One manual run of the s3 source into local NDJSON. */
async function runSource(source: Cfg, opts: { processed?: ProcessedFiles; extra?: Cfg; signal?: AbortSignal } = {}) {
  const out = tempDir('svc-s3-out-');
  const states: ConnectionState[] = [];
  const telemetry: RunTelemetry = { connection: (c, _t, s) => void (c === 'source' && states.push(s)) };
  const config = load({
    name: 's3-source',
    schedule: { type: 'manual' },
    source: { ...base(), ...source },
    serializer_in: { type: 'ndjson' },
    serializer_out: { type: 'ndjson' },
    sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
    ...opts.extra,
  });
  const rec = await runPipeline(config, { log: silentLogger, processed: opts.processed ?? new MemoryProcessedFiles(), telemetry, signal: opts.signal });
  return { rec, out, states, records: () => outputRecords(out) };
}

/** One manual run from local files (name -> content) into the s3 sink. */
async function runSink(sink: Cfg, files: Record<string, string>, extra: Cfg = {}) {
  const dir = tempDir('svc-s3-in-');
  mkdirSync(join(dir, 'in'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, 'in', name), text);
  const config = load({
    name: 's3-sink',
    schedule: { type: 'manual' },
    source: { type: 'local', path: join(dir, 'in') },
    serializer_in: { type: 'ndjson' },
    serializer_out: { type: 'ndjson' },
    sinks: [{ ...base(), ...sink }],
    ...extra,
  });
  return runPipeline(config, { log: silentLogger, processed: new MemoryProcessedFiles() });
}

const ctx = () => ({ pipeline: 'p', log: silentLogger, signal: new AbortController().signal, processed: new MemoryProcessedFiles(), skipProcessed: false });

describe('s3 sink: what is stored', () => {
  it('stores exactly the bytes sent: no aws-chunked framing, no checksum trailer (read back raw from the peer)', async () => {
    const p = prefix('bytes');
    const text = ndjson(0, 500);
    const rec = await runSink({ key_template: `${p}{source_stem}.ndjson` }, { 'a.ndjson': text });
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(readFileSync(peer.objectFile(`${p}a.ndjson`)).equals(Buffer.from(text))).toBe(true);
    // Binary content through an upload of its own, compared byte for byte.
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7919) % 256));
    const { client } = await s3Client({ bucket: BUCKET, endpoint_url: peer.endpoint, ...KEYS });
    const up = await S3Upload.start(client, { bucket: BUCKET, content_type: 'application/octet-stream' }, `${p}binary`, (e) => new WriteError(String(e)));
    await up.write(bytes.subarray(0, 30_000));
    await up.write(bytes.subarray(30_000));
    await up.finish();
    client.destroy();
    expect(readFileSync(peer.objectFile(`${p}binary`)).equals(bytes)).toBe(true);
    const puts = peer.takeRequests().filter((r) => r.startsWith('PUT '));
    expect(puts.length).toBeGreaterThan(0);
  });

  it('key_template: tokens expand per source unit; a key written again in the run gets the next part; content_type is stored', async () => {
    const p = prefix('keys');
    const rec = await runSink(
      { key_template: `${p}{pipeline}/{source_stem}/{field.site}.json`, content_type: 'application/x-ndjson' },
      { 'cells.ndjson': '{"site":"lyon","v":1}\n{"site":"paris","v":2}\n', 'links.ndjson': '{"site":"nice","v":3}\n' },
    );
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    // {field.site} comes from the first record of each batch (one batch per file here).
    const keys = (await listKeys(peer.client, p)).map((o) => o.key).sort();
    expect(keys).toEqual([`${p}s3-sink/cells/lyon.json`, `${p}s3-sink/links/nice.json`]);
    const cells = await getObject(peer.client, `${p}s3-sink/cells/lyon.json`);
    expect(cells.contentType).toBe('application/x-ndjson');
    expect(cells.body.toString()).toBe('{"site":"lyon","v":1}\n{"site":"paris","v":2}\n');
    // One key for the whole run: every flush (one per input here) publishes it, then the next part.
    const q = prefix('parts');
    const again = await runSink({ key_template: `${q}{pipeline}.ndjson` }, { 'a.ndjson': ndjson(0, 3), 'b.ndjson': ndjson(3, 3) });
    expect(again.status).toBe('success');
    const parts = await listKeys(peer.client, q);
    expect(parts.map((o) => o.key).sort()).toEqual([`${q}s3-sink.ndjson`, `${q}s3-sink_00001.ndjson`]);
    expect((await getObject(peer.client, `${q}s3-sink.ndjson`)).contentType).toBe('application/octet-stream');
    // The default template: {pipeline}/{timestamp}.
    const def = await runSink({}, { 'c.ndjson': ndjson(0, 2) });
    expect(def.status).toBe('success');
    expect((await listKeys(peer.client, 's3-sink/')).some((o) => /^s3-sink\/\d{8}T\d{6}Z$/.test(o.key))).toBe(true);
  });
});

describe('s3 sink: at-least-once across runs', () => {
  it('the peer fixture: metadata a kill tore (s3rver left it empty) is removed when the peer starts again, so the bucket lists again', async () => {
    const p = prefix('torn');
    await putObject(peer.client, `${p}a.json`, '[1]');
    // What a SIGKILL between s3rver's open and write of the metadata leaves.
    writeFileSync(peer.objectFile(`${p}a.json`).replace(/_object$/, '_metadata.json'), '');
    await expect(listKeys(peer.client, p)).rejects.toThrow(/internal error/);
    await peer.restart();
    expect((await listKeys(peer.client, p)).map((o) => o.key)).toEqual([`${p}a.json`]);
  });

  it('a peer restarted mid-run: the inputs of uploads that failed stay, and the next run delivers them', async () => {
    const p = prefix('restart');
    const dir = tempDir('svc-s3-restart-');
    mkdirSync(join(dir, 'in'));
    for (let f = 0; f < 20; f++) writeFileSync(join(dir, 'in', `f${String(f).padStart(2, '0')}.ndjson`), ndjson(f * 50, 50));
    const processed = new MemoryProcessedFiles();
    const config = load({
      name: 's3-restart',
      schedule: { type: 'manual' },
      source: { type: 'local', path: join(dir, 'in'), skip_processed: true },
      serializer_in: { type: 'ndjson' },
      serializer_out: { type: 'json' },
      sinks: [{ ...base(), key_template: `${p}{source_stem}_{run_id}.json`, retry_count: 2, retry_delay_seconds: 0.2 }],
      record_chunk_size: 50,
      rate_limit_rps: 5, // one input (one object) every 200 ms: the restart lands on uploads
    });
    const states: ConnectionState[] = [];
    const telemetry: RunTelemetry = { connection: (_c, _t, s) => void states.push(s) };
    const running = runPipeline(config, { log: silentLogger, processed, telemetry });
    await until(async () => (await listKeys(peer.client, p)).length >= 3, 20_000, 'the first objects');
    // Down until an upload has failed on it, then up again on the same port and data.
    await peer.kill();
    await until(() => states.includes('disconnected'), 20_000, 'an upload to fail');
    await peer.start();
    const first = await running;
    expect(first.errors.join('\n')).toMatch(/flush failed, inputs kept for the next run/);
    expect(states).toContain('disconnected');
    const second = await runPipeline(config, { log: silentLogger, processed });
    expect(second.status, JSON.stringify(second)).toBe('success');
    expect(second.records_in).toBeGreaterThan(0);
    expect(second.records_in).toBeLessThan(1000);
    // s3rver writes an object's file in place: killed in the middle of a PUT, it can keep that object
    // cut short, or listed without its metadata so that reading it is an InternalError (real S3
    // never shows a partial object). The upload it belonged to failed and its input was read again,
    // so such a leftover is not counted, and at most the one in flight can exist.
    const bodies = await Promise.all(
      (await listKeys(peer.client, p)).map(async (o) => (await getObject(peer.client, o.key).catch(() => ({ body: Buffer.from('') }))).body.toString()),
    );
    const whole = bodies.filter((b) => {
      try {
        JSON.parse(b);
        return true;
      } catch {
        return false;
      }
    });
    expect(bodies.length - whole.length).toBeLessThanOrEqual(1);
    const records = whole.flatMap((b) => JSON.parse(b) as Rec[]);
    const { missing, duplicates } = checkSequence(records, 1000);
    console.log(
      `[s3] sink through a restart: first run ${first.errors.length} notes, next run re-read ${second.records_in} records; ${missing.length} missing, ${duplicates} duplicates`,
    );
    expect(missing).toEqual([]);
  }, 60_000);
});

describe('s3 sink: multipart uploads', () => {
  // A forced GC before each reading, so that what is measured is what the upload holds.
  setFlagsFromString('--expose_gc');
  const gc = runInNewContext('gc') as () => void;

  it(`uploads a large object as parts of ${PART_SIZE >> 20} MiB while it is written, holding a bounded amount of memory`, async () => {
    const p = prefix('large');
    const key = `${p}big.bin`;
    const { client } = await s3Client({ bucket: BUCKET, endpoint_url: peer.endpoint, ...KEYS });
    peer.takeRequests();
    const MiB = 1024 * 1024;
    const total = 64;
    const chunk = (i: number) => Buffer.alloc(MiB, i % 251);
    gc();
    const before = process.memoryUsage().arrayBuffers;
    let peak = 0;
    const up = await S3Upload.start(client, { bucket: BUCKET, content_type: 'application/octet-stream' }, key, (e) => new WriteError(String(e)));
    let partsWhileWriting = 0;
    for (let i = 0; i < total; i++) {
      await up.write(chunk(i));
      if (i % 8 === 7) {
        gc();
        peak = Math.max(peak, process.memoryUsage().arrayBuffers - before);
      }
      if (i === total - 1) partsWhileWriting = peer.takeRequests().filter((r) => /^PUT .*partNumber=/.test(r)).length;
    }
    await up.finish();
    client.destroy();
    const requests = peer.takeRequests();
    // Parts went out before the end of the data: it was streamed, not held whole.
    expect(partsWhileWriting).toBeGreaterThanOrEqual(4);
    expect(requests.some((r) => r.startsWith('POST ') && r.includes('uploadId='))).toBe(true); // CompleteMultipartUpload
    console.log(`[s3] ${total} MiB multipart upload: peak retained ${(peak / MiB).toFixed(1)} MiB, ${partsWhileWriting} parts sent before the last write`);
    // What an upload may hold: the write buffer, the part being gathered (and the rest of the
    // previous one, a slice of the same buffer) and the parts in flight, each up to a write larger
    // than a part; and some slack. Well below the object's size: it was not held whole.
    const bound = (PARTS_AT_ONCE + 2) * (PART_SIZE + MiB) + 16 * MiB;
    expect(peak).toBeLessThan(bound);
    expect(bound).toBeLessThan(total * MiB);
    const stored = readFileSync(peer.objectFile(key));
    expect(stored.length).toBe(total * MiB);
    for (let i = 0; i < total; i++) expect(stored.subarray(i * MiB, (i + 1) * MiB).equals(chunk(i)), `MiB ${i}`).toBe(true);
  }, 60_000);

  it('abort() cancels a multipart upload: AbortMultipartUpload, its parts removed, no object', async () => {
    const p = prefix('abort');
    const key = `${p}cancelled.bin`;
    const { client } = await s3Client({ bucket: BUCKET, endpoint_url: peer.endpoint, ...KEYS });
    peer.takeRequests();
    const up = await S3Upload.start(client, { bucket: BUCKET, content_type: 'application/octet-stream' }, key, (e) => new WriteError(String(e)));
    for (let i = 0; i < 12; i++) await up.write(Buffer.alloc(1024 * 1024, i));
    await until(() => peer.takeRequests().some((r) => /^PUT .*partNumber=1/.test(r)), 10_000, 'the first part');
    await up.abort();
    client.destroy();
    expect(peer.takeRequests().some((r) => /^DELETE .*uploadId=/.test(r))).toBe(true);
    expect(await listKeys(peer.client, p)).toEqual([]);
    const uploads = join(peer.objectFile('x').replace(/x\._S3rver_object$/, ''), '._S3rver_uploads');
    expect(existsSync(uploads) ? readdirSync(uploads) : []).toEqual([]);
  });

  it('a peer killed mid-upload: the write fails (retryable) and nothing is published', async () => {
    const p = prefix('killed');
    const key = `${p}half.bin`;
    const { client } = await s3Client({ bucket: BUCKET, endpoint_url: peer.endpoint, ...KEYS });
    const problem = (e: unknown) => new WriteError(`failed: ${String(e)}`, true);
    const up = await S3Upload.start(client, { bucket: BUCKET, content_type: 'application/octet-stream' }, key, problem);
    for (let i = 0; i < 10; i++) await up.write(Buffer.alloc(1024 * 1024, i));
    await peer.kill();
    let failure: unknown;
    try {
      for (let i = 0; i < 64; i++) await up.write(Buffer.alloc(1024 * 1024, i));
      await up.finish();
    } catch (e) {
      failure = e;
    }
    await up.abort();
    client.destroy();
    await peer.start();
    expect(failure).toBeInstanceOf(WriteError);
    expect((failure as WriteError).retryable).toBe(true);
    expect(await listKeys(peer.client, p)).toEqual([]);
  }, 60_000);
});

describe('s3 source', () => {
  it('pages through a listing (ListObjectsV2 continuation tokens) and reads every object once, in key order', async () => {
    const p = prefix('paging');
    for (let i = 0; i < 10; i++) await putObject(peer.client, `${p}f${String(i).padStart(2, '0')}.ndjson`, ndjson(i * 3, 3));
    await putObject(peer.client, `${p}folder/`, Buffer.alloc(0)); // a folder marker: skipped
    const saved = listing.maxKeys;
    listing.maxKeys = 3;
    peer.takeRequests();
    try {
      const run = await runSource({ prefix: p });
      expect(run.rec.status, JSON.stringify(run.rec)).toBe('success');
      expect(run.rec.records_in).toBe(30);
      expect(run.records().map((r) => r.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i));
      const lists = peer.takeRequests().filter((r) => r.startsWith('GET ') && r.includes('list-type=2'));
      expect(lists.length).toBe(4); // 3 + 3 + 3 + 2 keys (the marker is the 11th)
      expect(lists.filter((r) => r.includes('continuation-token=')).length).toBe(3);
      expect(run.states).toContain('connected');
    } finally {
      listing.maxKeys = saved;
    }
  });

  it('metadata: source_filename, source_path (the key), source_relative_dir (below the prefix), s3_bucket, s3_etag', async () => {
    const p = prefix('meta');
    await putObject(peer.client, `${p}2024/01/a.ndjson`, '{"v":1}\n');
    const out = tempDir('svc-s3-meta-');
    const config = load({
      name: 's3-meta',
      schedule: { type: 'manual' },
      source: { ...base(), prefix: `${p}20` },
      serializer_in: { type: 'ndjson' },
      transforms: [{ type: 'inject_meta', all: true, prefix: 'm_' }],
      serializer_out: { type: 'ndjson' },
      sinks: [{ type: 'local', path: out, filename_template: '{source_path}/{source_filename}' }],
    });
    const rec = await runPipeline(config, { log: silentLogger, processed: new MemoryProcessedFiles() });
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    // {source_path} is the key's directory below the prefix's own directory (prefix ".../20" lists 2024/).
    expect(existsSync(join(out, '2024', '01', 'a.ndjson'))).toBe(true);
    const [r] = outputRecords(join(out, '2024', '01'));
    const etag = (await listKeys(peer.client, p))[0]!.etag;
    expect(r).toMatchObject({
      v: 1,
      m_source_filename: 'a.ndjson',
      m_source_path: `${p}2024/01/a.ndjson`,
      m_source_relative_dir: '2024/01',
      m_source_size: 8,
      m_s3_bucket: BUCKET,
      m_s3_etag: etag,
    });
  });

  it('skip_processed: an object is remembered by key and ETag after delivery; a rewritten object is read again', async () => {
    const p = prefix('skip');
    await putObject(peer.client, `${p}a.ndjson`, ndjson(0, 2));
    await putObject(peer.client, `${p}b.ndjson`, ndjson(2, 2));
    const processed = new MemoryProcessedFiles();
    const first = await runSource({ prefix: p, skip_processed: true }, { processed });
    expect(first.rec.records_in).toBe(4);
    const etag = (await listKeys(peer.client, `${p}a`))[0]!.etag;
    expect(await processed.has(`s3://${BUCKET}/${p}a.ndjson|${etag}`)).toBe(true);
    const second = await runSource({ prefix: p, skip_processed: true }, { processed });
    expect(second.rec.records_in).toBe(0);
    expect(second.rec.status).toBe('success');
    // New content, new ETag: read again. The other object stays skipped.
    await putObject(peer.client, `${p}a.ndjson`, ndjson(10, 3));
    const third = await runSource({ prefix: p, skip_processed: true }, { processed });
    expect(third.records().map((r) => r.seq)).toEqual([10, 11, 12]);
    // Without skip_processed every run reads everything (the source never changes the bucket).
    expect((await runSource({ prefix: p }, { processed })).rec.records_in).toBe(5);
  });

  it('an object rewritten between listing and reading is not read (If-Match) and not remembered', async () => {
    const p = prefix('ifmatch');
    await putObject(peer.client, `${p}a.ndjson`, ndjson(0, 2));
    const source = s3Source.create({ ...base(), prefix: p, skip_processed: true } as never, ctx());
    const it = source.units(new AbortController().signal)[Symbol.asyncIterator]();
    const unit = (await it.next()).value as SourceUnit;
    await putObject(peer.client, `${p}a.ndjson`, ndjson(5, 2));
    const read = async () => {
      for await (const _ of unit.read());
    };
    await expect(read()).rejects.toThrow(/changed since it was listed/);
    await source.close?.();
  });

  it('a peer killed mid-object: the object is not remembered, and the next run reads it whole, once', async () => {
    const p = prefix('drop');
    const n = 150_000;
    await putObject(peer.client, `${p}big.ndjson`, ndjson(0, n, 60)); // about 12 MB
    const processed = new MemoryProcessedFiles();
    const out = tempDir('svc-s3-drop-');
    const config = load({
      name: 's3-drop',
      schedule: { type: 'manual' },
      source: { ...base(), prefix: p, skip_processed: true },
      serializer_in: { type: 'ndjson' },
      serializer_out: { type: 'ndjson' },
      sinks: [{ type: 'local', path: out, filename_template: 'first.ndjson' }],
      record_chunk_size: 500,
      rate_limit_rps: 40, // slow: the object is still being read when the peer dies
    });
    const states: ConnectionState[] = [];
    const telemetry: RunTelemetry = { connection: (c, _t, s) => void (c === 'source' && states.push(s)) };
    const running = runPipeline(config, { log: silentLogger, processed, telemetry });
    await until(() => outputRecords(out).length >= 1000, 20_000, 'the first records');
    await peer.kill();
    const first = await running;
    await peer.start();
    expect(first.records_in).toBeLessThan(n);
    expect(first.errors.join('\n')).toMatch(/big\.ndjson.*broke off after \d+ of \d+ bytes.*read again at the next run/);
    expect(states).toContain('disconnected');
    const etag = (await listKeys(peer.client, p))[0]!.etag;
    expect(await processed.has(`s3://${BUCKET}/${p}big.ndjson|${etag}`)).toBe(false);
    const second = await runSource({ prefix: p, skip_processed: true }, { processed });
    expect(second.rec.status, JSON.stringify(second.rec)).toBe('success');
    expect(second.rec.records_in).toBe(n);
    expect(checkSequence(second.records(), n)).toEqual({ missing: [], duplicates: 0 });
    console.log(`[s3] peer killed mid-object: first run ${first.records_in} of ${n} records (${first.errors[0]}); next run ${second.rec.records_in}`);
    expect((await runSource({ prefix: p, skip_processed: true }, { processed })).rec.records_in).toBe(0);
  }, 90_000);
});

describe('s3: credentials, errors and lint', () => {
  const check = (role: 'source' | 'sink', cfg: Cfg) => testConnector(role, { ...base(), ...cfg } as never, { timeoutMs: 8000 });

  it('test() names a missing bucket, an unreachable endpoint, a wrong secret and an unknown key ID', async () => {
    const nobucket = await check('source', { bucket: 'no-such-bucket' });
    expect(nobucket.error).toBe(`s3: bucket 'no-such-bucket' does not exist at ${peer.endpoint}; create it or correct 'bucket'`);
    expect((await check('sink', { bucket: 'no-such-bucket' })).error).toMatch(/does not exist/);
    const port = await check('sink', { endpoint_url: 'http://127.0.0.1:1' });
    expect(port.error).toMatch(/^s3: cannot reach http:\/\/127\.0\.0\.1:1 while listing bucket 'svc-test': .*ECONNREFUSED.*; check endpoint_url$/);
    const secret = await check('source', { aws_secret_access_key: 'wrong-secret-1' });
    expect(secret.error).toMatch(/SignatureDoesNotMatch.*check aws_secret_access_key/);
    expect(secret.error).not.toContain('wrong-secret-1');
    const keyId = await check('sink', { aws_access_key_id: 'NOBODY' });
    expect(keyId.error).toMatch(/does not know the access key ID \(InvalidAccessKeyId\); check aws_access_key_id/);
    expect((await check('source', { bucket: 'svc-other' })).ok).toBe(true);
  });

  it('without keys, the default credential chain applies (here: the environment)', async () => {
    const saved = { ...process.env };
    try {
      Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' });
      const ok = await testConnector('source', { type: 's3', bucket: BUCKET, endpoint_url: peer.endpoint } as never);
      expect(ok, JSON.stringify(ok)).toMatchObject({ ok: true });
      // Nothing anywhere in the chain (instance metadata switched off: no request leaves the machine).
      const empty = tempDir('svc-s3-aws-');
      for (const k of Object.keys(process.env)) if (k.startsWith('AWS_')) delete process.env[k];
      Object.assign(process.env, {
        AWS_EC2_METADATA_DISABLED: 'true',
        AWS_SHARED_CREDENTIALS_FILE: join(empty, 'credentials'),
        AWS_CONFIG_FILE: join(empty, 'config'),
      });
      const none = await testConnector('sink', { type: 's3', bucket: BUCKET, endpoint_url: peer.endpoint } as never);
      expect(none.error).toMatch(/^s3: no credentials: set aws_access_key_id and aws_secret_access_key, or provide them through the AWS default chain/);
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });

  it('a run against a missing bucket fails with the reason; a sink write into one is not retried', async () => {
    const run = await runSource({ bucket: 'no-such-bucket' });
    expect(run.rec.status).toBe('failed');
    expect(run.rec.error).toMatch(/bucket 'no-such-bucket' does not exist/);
    const sink = s3Sink.create({ ...base(), bucket: 'no-such-bucket', key_template: 'k', content_type: 'application/json' } as never, {
      ...ctx(),
      encoder: encoderFor(registry, { type: 'json' }),
    });
    await sink.open?.({ runId: 'r', pipeline: 'p', startedAt: new Date() });
    await sink.write({ payload: Buffer.from('{"a":1}'), head: '[', count: 1, meta: {} });
    const failure = await sink.flush!().then(
      () => undefined,
      (e: unknown) => e,
    );
    await sink.close?.().catch(() => undefined);
    expect(failure).toBeInstanceOf(WriteError);
    expect((failure as WriteError).retryable).toBe(false);
    expect((failure as WriteError).message).toMatch(/^s3 sink: bucket 'no-such-bucket' does not exist/);
  });

  it('lint: bucket with a path, one key without the other, an endpoint that is not a URL, an unknown template token', () => {
    const issues = (role: 'source' | 'sink', cfg: Cfg) => {
      const comp = { ...base(), ...cfg };
      const pipeline = {
        name: 'lint',
        schedule: { type: 'manual' },
        source: role === 'source' ? comp : { type: 'local', path: '/tmp' },
        sinks: [role === 'sink' ? comp : { type: 'local', path: '/tmp' }],
      };
      return loadPipelineText(stringify({ version: '1', pipeline }), { env: {} }).diagnostics.map((d) => `${d.path}: ${d.message}`);
    };
    expect(issues('source', { bucket: 'b/in' }).join()).toMatch(/pipeline\.source\.bucket: .*put the path inside it into prefix/);
    expect(issues('source', { aws_secret_access_key: undefined }).join()).toMatch(
      /pipeline\.source\.aws_secret_access_key: set aws_access_key_id and aws_secret_access_key together/,
    );
    expect(issues('sink', { endpoint_url: 'minio:9000' }).join()).toMatch(/pipeline\.sinks\[0\]\.endpoint_url: .*http:\/\/ or https:\/\//);
    expect(issues('sink', { key_template: '{pipeline}/{day}' }).join()).toMatch(/pipeline\.sinks\[0\]\.key_template: unknown token \{day\}/);
    expect(issues('sink', { key_template: 'a/{part}.json', content_type: 'text/csv' })).toEqual([]);
  });
});
