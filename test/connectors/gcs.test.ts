// The gcs connector: the shared conformance suite against the test peer (peers/gcs.ts: the JSON API
// subset the client uses, with a real OAuth2 service-account token exchange), then what the suite
// does not cover: bytes stored and read back unchanged, listing across pages, skip_processed keyed
// on generation, content_type, blob_template tokens and part suffixes, credentials refused or
// lacking a role, a download cut mid-object (the object stays unmarked and the next run reads it
// once), a large object streamed while it is written and published only whole, and an upload cut
// mid-object (nothing half-written is trusted, the input stays, the next run delivers it).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { UPLOAD_START_BYTES } from '../../src/plugins/connectors/gcs/sink.js';
import type { ProcessedFiles } from '../../src/plugins/types.js';
import { tempDir } from '../helpers/fs.js';
import { checkSequence, conformance, type Cfg, type Rec } from './conformance.js';
import { directSink as directSinkOf, loadPipeline, manualReadRun, manualWriteRun, ndjsonText, siteRecs, until } from './helpers.js';
import { gcsFixture, serviceAccount, startGcsPeer, type GcsPeer } from './peers/gcs.js';

conformance(gcsFixture);

const BUCKET = 'svc-own-tests';
let peer: GcsPeer;
let keys: string;
let base: Cfg;
let seq = 0;
const prefix = () => `t${process.pid}-${++seq}`;
const recs = siteRecs;
const ndjson = ndjsonText;

beforeAll(async () => {
  peer = await startGcsPeer();
  peer.createBucket(BUCKET);
  keys = mkdtempSync(join(tmpdir(), 'svc-gcs-keys-'));
  const sa = serviceAccount(peer, keys);
  base = { type: 'gcs', bucket: BUCKET, service_account_json: sa.keyFile, endpoint_url: peer.url };
});
afterAll(async () => {
  await peer.close();
  rmSync(keys, { recursive: true, force: true });
});

/** One manual run of the gcs source into a local NDJSON file (out.bin with another serializer_out). */
const readRun = (source: Cfg, opts: { processed?: ProcessedFiles; name?: string; serializer_in?: Cfg; serializer_out?: Cfg } = {}) =>
  manualReadRun(
    opts.name ?? 'gcs-read',
    { ...base, ...source },
    { ...opts, outPrefix: 'svc-gcs-out-', filename: opts.serializer_out ? 'out.bin' : 'out.ndjson' },
  );
/** One manual run of NDJSON files (one per entry; 'again': those of an earlier run, untouched) into the given sinks. */
const writeRun = (
  files: Rec[][] | 'again',
  sinks: Cfg[],
  extra: Cfg = {},
  processed: ProcessedFiles = new MemoryProcessedFiles(),
  dir = tempDir('svc-gcs-in-'),
) => manualWriteRun('gcs-write', files, sinks, extra, processed, dir);
/** A gcs sink driven directly, as the runtime drives it: records in, flush, close. */
const directSink = (cfg: Cfg, serializer: string) => directSinkOf('gcs', 'gcs-direct', cfg, serializer);

const objectRecords = (p: string) => peer.objects(BUCKET, p).flatMap((o) => JSON.parse(o.data.toString('utf8')) as Rec[]);

describe('gcs: bytes, listing, skip_processed', () => {
  it('stores exactly the bytes the serializer produced, and reads an object back byte for byte', async () => {
    const p = prefix();
    const out = tempDir('svc-gcs-local-');
    const { rec } = await writeRun(
      [recs(500)],
      [
        { ...base, blob_template: `${p}/out.json` },
        { type: 'local', path: out, filename_template: 'out.json', file_mode: 'single' },
      ],
    );
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    const stored = peer.object(BUCKET, `${p}/out.json`)!;
    expect(stored.data.equals(readFileSync(join(out, 'out.json')))).toBe(true);

    // Arbitrary binary content through the source and back into another object, unchanged.
    const binary = randomBytes(300_000);
    peer.put(BUCKET, `${p}/in/blob.bin`, binary);
    const copy = await runPipeline(
      loadPipeline({
        name: 'gcs-copy',
        schedule: { type: 'manual' },
        source: { ...base, prefix: `${p}/in/` },
        serializer_in: { type: 'bytes' },
        serializer_out: { type: 'bytes' },
        sinks: [{ ...base, blob_template: `${p}/copy/{source_stem}.bin` }],
      }),
      { log: silentLogger, processed: new MemoryProcessedFiles() },
    );
    expect(copy.status, JSON.stringify(copy)).toBe('success');
    expect(peer.object(BUCKET, `${p}/copy/blob.bin`)!.data.equals(binary)).toBe(true);
  });

  it('lists every page (pageToken) and reads only the objects under the prefix, in name order', async () => {
    const p = prefix();
    for (let i = 0; i < 50; i++) peer.put(BUCKET, `${p}/in/${String(i).padStart(3, '0')}.json`, JSON.stringify([{ seq: i }]));
    peer.put(BUCKET, `${p}/other/x.json`, JSON.stringify([{ seq: 999 }]));
    peer.put(BUCKET, `${p}/in/folder/`, ''); // a folder placeholder: no data, not a unit
    peer.maxPageSize = 7;
    const before = peer.requests.length;
    try {
      const { rec, records } = await readRun({ prefix: `${p}/in/` });
      expect(rec.status, JSON.stringify(rec)).toBe('success');
      expect(records().map((r) => r.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    } finally {
      peer.maxPageSize = 1000;
    }
    const lists = peer.requests.slice(before).filter((r) => r.method === 'GET' && r.path === `/storage/v1/b/${BUCKET}/o`);
    expect(lists.length).toBe(8); // 51 names at 7 a page
    expect(lists[0]!.query.get('pageToken')).toBeNull();
    expect(lists.slice(1).every((r) => r.query.get('pageToken'))).toBe(true);
    expect(lists.every((r) => r.query.get('prefix') === `${p}/in/`)).toBe(true);
  });

  it('skip_processed: a delivered object is skipped, a rewritten one (new generation) is read again', async () => {
    const p = prefix();
    for (const n of ['a', 'b', 'c']) peer.put(BUCKET, `${p}/${n}.json`, JSON.stringify([{ seq: n }]));
    const processed = new MemoryProcessedFiles();
    const source = { prefix: `${p}/`, skip_processed: true };
    expect((await readRun(source, { processed })).rec.records_in).toBe(3);
    const again = await readRun(source, { processed });
    expect(again.rec.records_in).toBe(0);
    expect(again.rec.errors).toContain('skipped 3 files already processed');
    const oldGen = peer.object(BUCKET, `${p}/b.json`)!.generation;
    peer.put(BUCKET, `${p}/b.json`, JSON.stringify([{ seq: 'b2' }]));
    expect(peer.object(BUCKET, `${p}/b.json`)!.generation).not.toBe(oldGen);
    const third = await readRun(source, { processed });
    expect(third.records()).toEqual([{ seq: 'b2' }]);
    // Without skip_processed everything is read every run.
    expect((await readRun({ prefix: `${p}/` }, { processed })).rec.records_in).toBe(3);
  });

  it('each unit carries the object name, generation and bucket as metadata', async () => {
    const p = prefix();
    const o = peer.put(BUCKET, `${p}/sub/dir/cells.json`, JSON.stringify([{ v: 1 }]));
    const withMeta = await runPipeline(
      loadPipeline({
        name: 'gcs-meta',
        schedule: { type: 'manual' },
        source: { ...base, prefix: `${p}/` },
        transforms: [
          {
            type: 'inject_meta',
            fields: { source_filename: 'source_filename', source_path: 'source_path', gcs_bucket: 'gcs_bucket', gcs_generation: 'gcs_generation' },
          },
        ],
        serializer_out: { type: 'json' },
        sinks: [{ ...base, blob_template: `${p}-copy/{source_path}/{source_stem}.json` }],
      }),
      { log: silentLogger, processed: new MemoryProcessedFiles() },
    );
    expect(withMeta.status, JSON.stringify(withMeta)).toBe('success');
    // {source_path} is the directory below the prefix's directory.
    const copy = peer.object(BUCKET, `${p}-copy/sub/dir/cells.json`);
    expect(
      copy,
      peer
        .objects(BUCKET, `${p}-copy`)
        .map((x) => x.name)
        .join(', '),
    ).toBeDefined();
    const [r] = JSON.parse(copy!.data.toString()) as Rec[];
    expect(r).toMatchObject({ v: 1, source_filename: 'cells.json', source_path: `${p}/sub/dir/cells.json`, gcs_bucket: BUCKET, gcs_generation: o.generation });
  });
});

describe('gcs sink: names and metadata', () => {
  it('stores content_type (default application/octet-stream)', async () => {
    const p = prefix();
    await writeRun(
      [recs(3)],
      [
        { ...base, blob_template: `${p}/typed.json`, content_type: 'application/json' },
        { ...base, blob_template: `${p}/plain.json` },
      ],
    );
    expect(peer.object(BUCKET, `${p}/typed.json`)!.contentType).toBe('application/json');
    expect(peer.object(BUCKET, `${p}/plain.json`)!.contentType).toBe('application/octet-stream');
  });

  it('expands the template tokens per input file and first record', async () => {
    const p = prefix();
    const { rec } = await writeRun([recs(4, 0), recs(4, 100)], [{ ...base, blob_template: `${p}/{pipeline}/{source_stem}-{field.site}.json` }]);
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(peer.objects(BUCKET, `${p}/`).map((o) => o.name)).toEqual([`${p}/gcs-write/f0-s0.json`, `${p}/gcs-write/f1-s1.json`]);
  });

  it('a name published earlier in the run gets the next part suffix at the next flush', async () => {
    const p = prefix();
    const sink = directSink({ ...base, blob_template: `${p}/fixed.json` }, 'json');
    await sink.open();
    await sink.write(recs(2, 0));
    await sink.flush();
    await sink.write(recs(2, 10));
    await sink.flush();
    await sink.write(recs(1, 20));
    await sink.close();
    expect(peer.objects(BUCKET, `${p}/`).map((o) => o.name)).toEqual([`${p}/fixed.json`, `${p}/fixed_00001.json`, `${p}/fixed_00002.json`]);
    expect(objectRecords(`${p}/`).map((r) => r.seq)).toEqual([0, 1, 10, 11, 20]);
  });

  it('default blob_template {pipeline}/{timestamp}', async () => {
    const { rec } = await writeRun([recs(2)], [{ ...base }]);
    expect(rec.status).toBe('success');
    expect(
      peer
        .objects(BUCKET, 'gcs-write/')
        .map((o) => o.name)
        .some((n) => /^gcs-write\/\d{8}T\d{6}Z$/.test(n)),
    ).toBe(true);
  });
});

describe('gcs: credentials', () => {
  it('a key the token endpoint refuses fails the check and the run, naming the cause, never the key', async () => {
    const email = JSON.parse(readFileSync(base.service_account_json as string, 'utf8')).client_email as string;
    const forged = serviceAccount(peer, keys, { email, register: false, file: 'forged.json' });
    const privateKey = JSON.parse(readFileSync(forged.keyFile, 'utf8')).private_key as string;
    for (const role of ['source', 'sink'] as const) {
      const r = await testConnector(role, { ...base, service_account_json: forged.keyFile } as never);
      expect(r.ok).toBe(false);
      expect(r.error).toMatch(/^gcs: .*invalid_grant: Invalid JWT Signature.*check service_account_json/);
      expect(r.error).not.toContain(privateKey.slice(40, 80));
    }
    const run = await readRun({ service_account_json: forged.keyFile, prefix: 'x/' });
    expect(run.rec.status).toBe('failed');
    expect(run.rec.error).toMatch(/gcs: listing gs:\/\/svc-own-tests\/x\/: the token endpoint refused the service account/);
  });

  it('a missing or malformed key file is named in the error', async () => {
    expect((await testConnector('source', { ...base, service_account_json: join(keys, 'nope.json') } as never)).error).toBe(
      `gcs: service_account_json ${join(keys, 'nope.json')} does not exist`,
    );
    const bad = join(keys, 'user.json');
    writeFileSync(bad, JSON.stringify({ type: 'authorized_user', client_id: 'x' }));
    expect((await testConnector('sink', { ...base, service_account_json: bad } as never)).error).toMatch(
      /is not a service account key \(type "authorized_user"/,
    );
  });

  it('an account without write access: the source reads, the sink fails at once (403, not retried)', async () => {
    const reader = serviceAccount(peer, keys, { role: 'reader' });
    const p = prefix();
    peer.put(BUCKET, `${p}/r.json`, JSON.stringify([{ seq: 1 }]));
    const read = await readRun({ prefix: `${p}/`, service_account_json: reader.keyFile });
    expect(read.records()).toEqual([{ seq: 1 }]);
    // A small object goes up when it is published, at the flush: the run keeps its input.
    const { rec } = await writeRun([recs(3)], [{ ...base, service_account_json: reader.keyFile, blob_template: `${p}/w.json` }]);
    expect(rec.errors.join('\n')).toMatch(/flush failed, inputs kept for the next run: .*403 .*storage\.objects\.create.*lacks a role on bucket svc-own-tests/);
    expect(peer.object(BUCKET, `${p}/w.json`)).toBeUndefined();
    // A large one fails at the write that starts its upload, and is not retried.
    const big = recs(80_000);
    const t0 = Date.now();
    const large = (
      await writeRun([big], [{ ...base, service_account_json: reader.keyFile, blob_template: `${p}/w2.json`, retry_count: 5, retry_delay_seconds: 1 }], {
        record_chunk_size: 20_000,
      })
    ).rec;
    expect(Date.now() - t0).toBeLessThan(4000);
    expect(large.errors.join('\n')).toMatch(/403 .*lacks a role/);
    expect(peer.object(BUCKET, `${p}/w2.json`)).toBeUndefined();
  });

  it('a bucket that does not exist is named; every storage request carried a bearer token from the token endpoint', async () => {
    const r = await testConnector('sink', { ...base, bucket: 'no-such-bucket' } as never);
    expect(r.error).toMatch(/^gcs: reading bucket no-such-bucket: 404 The specified bucket does not exist/);
    const storage = peer.requests.filter((q) => q.path.startsWith('/storage/') || q.path.startsWith('/upload/'));
    expect(storage.length).toBeGreaterThan(10);
    expect(storage.every((q) => /^Bearer ya29\.peer-/.test(q.authorization ?? '') || q.status === 401)).toBe(true);
  });
});

describe('gcs: cut connections', () => {
  it('a download cut mid-object leaves it unmarked; the next run reads it once', async () => {
    const p = prefix();
    const n = 20_000;
    const name = `${p}/big.ndjson`;
    peer.put(BUCKET, name, ndjson(recs(n)));
    const processed = new MemoryProcessedFiles();
    const source = { prefix: `${p}/`, skip_processed: true, read_timeout_seconds: 1 };
    peer.dropDownload(name, 300_000);
    const first = await readRun(source, { processed, serializer_in: { type: 'ndjson' } });
    expect(first.rec.errors.join('\n')).toMatch(/read failed: gcs: reading gs:\/\/svc-own-tests\/.*big\.ndjson: no data for 1 s \(read_timeout_seconds\)/);
    expect(first.rec.records_in).toBeLessThan(n);
    const second = await readRun(source, { processed, serializer_in: { type: 'ndjson' } });
    expect(second.rec.status).toBe('success');
    expect(second.rec.errors).toEqual([]);
    expect(checkSequence(second.records(), n)).toEqual({ missing: [], duplicates: 0 });
    expect((await readRun(source, { processed, serializer_in: { type: 'ndjson' } })).rec.records_in).toBe(0);
  });

  it('a large object is streamed while it is written and appears only when published whole', async () => {
    const p = prefix();
    const sink = directSink({ ...base, blob_template: `${p}/large.bin` }, 'bytes');
    await sink.open();
    const mib = Buffer.alloc(1024 * 1024, 7);
    const total = 24;
    // Below UPLOAD_START_BYTES nothing is sent yet.
    await sink.writeBytes(mib);
    expect(peer.uploadingBytes()).toBe(0);
    for (let i = 1; i < total; i++) await sink.writeBytes(mib);
    await until(() => peer.uploadingBytes() > 16 * 1024 * 1024, 10_000, 'the upload to be streaming');
    expect(UPLOAD_START_BYTES).toBeLessThan(16 * 1024 * 1024);
    expect(peer.object(BUCKET, `${p}/large.bin`)).toBeUndefined();
    await sink.flush();
    await sink.close();
    const o = peer.object(BUCKET, `${p}/large.bin`)!;
    expect(o.data.length).toBe(total * mib.length);
    expect(o.data.every((b) => b === 7)).toBe(true);
  });

  it('an upload cut mid-object: the input stays, and with the next run every record is in the bucket', async () => {
    const p = prefix();
    const n = 120_000; // about 6 MiB of JSON: the object streams
    const processed = new MemoryProcessedFiles();
    const dir = tempDir('svc-gcs-cut-');
    const sink = { ...base, blob_template: `${p}/{run_id}.json`, retry_count: 3, retry_delay_seconds: 0.2 };
    const running = writeRun([recs(n)], [sink], { record_chunk_size: 5000, rate_limit_rps: 10 }, processed, dir);
    await until(() => peer.uploadingBytes() > 0, 20_000, 'an upload in flight');
    await peer.restart(100);
    const first = (await running).rec;
    expect(first.errors.join('\n')).toMatch(/flush failed, inputs kept for the next run/);
    const second = (await writeRun('again', [sink], {}, processed, dir)).rec;
    expect(second.status, JSON.stringify(second)).toBe('success');
    expect(second.records_in).toBe(n); // the input was not finalized by the first run
    const { missing, duplicates } = checkSequence(objectRecords(`${p}/`), n);
    console.log(`[gcs] upload cut mid-object: ${n} records, ${missing.length} missing after the next run, ${duplicates} duplicates`);
    expect(missing).toEqual([]);
  }, 60_000);
});
