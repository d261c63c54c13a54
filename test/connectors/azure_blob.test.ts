// The azure_blob connector: the shared conformance suite against Azurite (peers/azurite.ts), then
// what the suite does not cover: bytes stored and read back unchanged, listing across pages,
// skip_processed keyed on the ETag, unit metadata, content_type, blob_template tokens and part
// suffixes, account name and key with endpoint_url, credentials refused, a missing container, lint,
// a download cut mid-blob (the blob stays unmarked and the next run reads it once), a large blob
// staged block by block while it is written and committed only whole, and an upload cut mid-blob.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ContainerSASPermissions, generateBlobSASQueryParameters, StorageSharedKeyCredential, type ContainerClient } from '@azure/storage-blob';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { loadPipelineText } from '../../src/config/load.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { BLOCK_BYTES } from '../../src/plugins/connectors/azure_blob/sink.js';
import type { ProcessedFiles } from '../../src/plugins/types.js';
import { tempDir } from '../helpers/fs.js';
import { checkSequence, conformance, type Cfg, type Rec } from './conformance.js';
import { directSink as directSinkOf, loadPipeline, manualReadRun, manualWriteRun, ndjsonText, siteRecs, until } from './helpers.js';
import { azuriteFixture, blobsUnder, DEV_ACCOUNT, DEV_KEY, rewritingProxy, startAzurite, type Azurite } from './peers/azurite.js';
import { tcpProxy } from './peers/tcp-proxy.js';

conformance(azuriteFixture);

const CONTAINER = 'svc-own-tests';
let az: Azurite;
let cc: ContainerClient;
let base: Cfg;
let seq = 0;
const prefix = () => `t${process.pid}-${++seq}`;
const recs = siteRecs;
const ndjson = ndjsonText;
const put = (name: string, body: string | Buffer) => cc.getBlockBlobClient(name).upload(body, Buffer.byteLength(body));

beforeAll(async () => {
  az = await startAzurite();
  cc = az.admin().getContainerClient(CONTAINER);
  await cc.createIfNotExists();
  base = { type: 'azure_blob', container: CONTAINER, connection_string: az.connectionString() };
}, 60_000);
afterAll(async () => {
  await az?.stop();
});

/** One manual run of the azure_blob source into a local file. */
const readRun = (source: Cfg, opts: { processed?: ProcessedFiles; serializer_in?: Cfg; serializer_out?: Cfg } = {}) =>
  manualReadRun('az-read', { ...base, ...source }, { ...opts, outPrefix: 'svc-az-out-' });
/** One manual run of NDJSON files (one per entry; 'again': those of an earlier run, untouched) into the given sinks. */
const writeRun = (
  files: Rec[][] | 'again',
  sinks: Cfg[],
  extra: Cfg = {},
  processed: ProcessedFiles = new MemoryProcessedFiles(),
  dir = tempDir('svc-az-in-'),
) => manualWriteRun('az-write', files, sinks, extra, processed, dir);
/** An azure_blob sink driven directly, as the runtime drives it. */
const directSink = (cfg: Cfg, serializer: string) => directSinkOf('azure_blob', 'az-direct', cfg, serializer);

const names = async (p: string) => (await blobsUnder(cc, p)).map((b) => b.name);
const blobRecords = async (p: string) => (await blobsUnder(cc, p)).flatMap((b) => JSON.parse(b.data.toString('utf8')) as Rec[]);

function diagnostics(role: 'source' | 'sink', component: Cfg): string[] {
  const comp = { type: 'azure_blob', container: CONTAINER, ...component };
  const pipeline = {
    name: 'lint',
    schedule: { type: 'manual' },
    source: role === 'source' ? comp : { type: 'local', path: '/tmp' },
    sinks: [role === 'sink' ? comp : { type: 'local', path: '/tmp' }],
  };
  return loadPipelineText(stringify({ version: '1', pipeline }), { env: {} }).diagnostics.map((d) => formatDiagnostic(d));
}

describe('azure_blob: bytes, listing, skip_processed', () => {
  it('stores exactly the bytes the serializer produced, and reads a blob back byte for byte', async () => {
    const p = prefix();
    const out = tempDir('svc-az-local-');
    const { rec } = await writeRun(
      [recs(500)],
      [
        { ...base, blob_template: `${p}/out.json` },
        { type: 'local', path: out, filename_template: 'out.json', file_mode: 'single' },
      ],
    );
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    const [stored] = await blobsUnder(cc, `${p}/`);
    expect(stored!.data.equals(readFileSync(join(out, 'out.json')))).toBe(true);

    const binary = randomBytes(300_000);
    await put(`${p}/in/blob.bin`, binary);
    const copy = await runPipeline(
      loadPipeline({
        name: 'az-copy',
        schedule: { type: 'manual' },
        source: { ...base, prefix: `${p}/in/` },
        serializer_in: { type: 'bytes' },
        serializer_out: { type: 'bytes' },
        sinks: [{ ...base, blob_template: `${p}/copy/{source_stem}.bin` }],
      }),
      { log: silentLogger, processed: new MemoryProcessedFiles() },
    );
    expect(copy.status, JSON.stringify(copy)).toBe('success');
    expect((await cc.getBlobClient(`${p}/copy/blob.bin`).downloadToBuffer()).equals(binary)).toBe(true);
  });

  it('lists every page (continuation markers) and reads only the blobs under the prefix, in name order (SAS connection string)', async () => {
    const p = prefix();
    for (let i = 0; i < 20; i++) await put(`${p}/in/${String(i).padStart(3, '0')}.json`, JSON.stringify([{ seq: i }]));
    await put(`${p}/other/x.json`, JSON.stringify([{ seq: 999 }]));
    await put(`${p}/in/folder/`, ''); // a directory marker: no data, not a unit
    // Azurite answers at most 5,000 blobs a page: a proxy asks it for 3 (a SAS does not sign maxresults).
    const proxy = await rewritingProxy(az.port, (u) => u.replace(/([?&]maxresults=)\d+/, '$13'));
    try {
      const sas = generateBlobSASQueryParameters(
        { containerName: CONTAINER, permissions: ContainerSASPermissions.parse('rl'), expiresOn: new Date(Date.now() + 3600_000) },
        new StorageSharedKeyCredential(DEV_ACCOUNT, DEV_KEY),
      ).toString();
      const connection_string = `BlobEndpoint=http://127.0.0.1:${proxy.port}/${DEV_ACCOUNT};SharedAccessSignature=${sas}`;
      const { rec, records } = await readRun({ connection_string, prefix: `${p}/in/` });
      expect(rec.status, JSON.stringify(rec)).toBe('success');
      expect(records().map((r) => r.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      const lists = proxy.urls.filter((u) => u.includes('comp=list'));
      expect(lists.length).toBe(7); // 21 names at 3 a page
      expect(lists.slice(1).every((u) => /[?&]marker=/.test(u))).toBe(true);
    } finally {
      await proxy.close();
    }
  });

  it('skip_processed: a delivered blob is skipped, a rewritten one (new ETag) is read again', async () => {
    const p = prefix();
    for (const n of ['a', 'b', 'c']) await put(`${p}/${n}.json`, JSON.stringify([{ seq: n }]));
    const processed = new MemoryProcessedFiles();
    const source = { prefix: `${p}/`, skip_processed: true };
    expect((await readRun(source, { processed })).rec.records_in).toBe(3);
    const again = await readRun(source, { processed });
    expect(again.rec.records_in).toBe(0);
    expect(again.rec.errors).toContain('skipped 3 files already processed');
    await put(`${p}/b.json`, JSON.stringify([{ seq: 'b2' }]));
    expect((await readRun(source, { processed })).records()).toEqual([{ seq: 'b2' }]);
    expect((await readRun({ prefix: `${p}/` }, { processed })).rec.records_in).toBe(3);
  });

  it('each unit carries the blob name, ETag and container as metadata; {source_path} mirrors the tree below the prefix', async () => {
    const p = prefix();
    const up = await put(`${p}/sub/dir/cells.json`, JSON.stringify([{ v: 1 }]));
    const rec = await runPipeline(
      loadPipeline({
        name: 'az-meta',
        schedule: { type: 'manual' },
        source: { ...base, prefix: `${p}/` },
        transforms: [
          {
            type: 'inject_meta',
            fields: { source_filename: 'source_filename', source_path: 'source_path', azure_container: 'azure_container', azure_etag: 'azure_etag' },
          },
        ],
        serializer_out: { type: 'json' },
        sinks: [{ ...base, blob_template: `${p}-copy/{source_path}/{source_stem}.json` }],
      }),
      { log: silentLogger, processed: new MemoryProcessedFiles() },
    );
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    const [r] = JSON.parse((await cc.getBlobClient(`${p}-copy/sub/dir/cells.json`).downloadToBuffer()).toString()) as Rec[];
    expect(r).toMatchObject({
      v: 1,
      source_filename: 'cells.json',
      source_path: `${p}/sub/dir/cells.json`,
      azure_container: CONTAINER,
      azure_etag: up.etag!.replace(/"/g, ''),
    });
  });
});

describe('azure_blob sink: names and metadata', () => {
  it('stores content_type (default application/octet-stream)', async () => {
    const p = prefix();
    await writeRun(
      [recs(3)],
      [
        { ...base, blob_template: `${p}/typed.json`, content_type: 'application/json' },
        { ...base, blob_template: `${p}/plain.json` },
      ],
    );
    expect((await cc.getBlobClient(`${p}/typed.json`).getProperties()).contentType).toBe('application/json');
    expect((await cc.getBlobClient(`${p}/plain.json`).getProperties()).contentType).toBe('application/octet-stream');
  });

  it('expands the template tokens per input file and first record; default {pipeline}/{timestamp}', async () => {
    const p = prefix();
    const { rec } = await writeRun([recs(4, 0), recs(4, 100)], [{ ...base, blob_template: `${p}/{pipeline}/{source_stem}-{field.site}.json` }, { ...base }]);
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(await names(`${p}/`)).toEqual([`${p}/az-write/f0-s0.json`, `${p}/az-write/f1-s1.json`]);
    expect((await names('az-write/')).some((n) => /^az-write\/\d{8}T\d{6}Z$/.test(n))).toBe(true);
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
    expect(await names(`${p}/`)).toEqual([`${p}/fixed.json`, `${p}/fixed_00001.json`, `${p}/fixed_00002.json`]);
    expect((await blobRecords(`${p}/`)).map((r) => r.seq)).toEqual([0, 1, 10, 11, 20]);
  });
});

describe('azure_blob: credentials and configuration', () => {
  it('account_name and account_key with endpoint_url read and write', async () => {
    const p = prefix();
    const keyed = { type: 'azure_blob', container: CONTAINER, account_name: DEV_ACCOUNT, account_key: DEV_KEY, endpoint_url: az.url };
    expect(await testConnector('source', keyed as never)).toMatchObject({ ok: true });
    expect(await testConnector('sink', keyed as never)).toMatchObject({ ok: true });
    await writeRun([recs(5)], [{ ...keyed, blob_template: `${p}/k.json` }]);
    const { records } = await readRun({ connection_string: undefined, account_name: DEV_ACCOUNT, account_key: DEV_KEY, endpoint_url: az.url, prefix: `${p}/` });
    expect(records().map((r) => r.seq)).toEqual([0, 1, 2, 3, 4]);
  });

  it('a wrong key fails the check and the run with the service code, never the key', async () => {
    const wrongKey = Buffer.from('an-entirely-different-account-key-of-64-bytes-for-this-test-case').toString('base64');
    for (const role of ['source', 'sink'] as const) {
      const r = await testConnector(role, {
        type: 'azure_blob',
        container: CONTAINER,
        account_name: DEV_ACCOUNT,
        account_key: wrongKey,
        endpoint_url: az.url,
      } as never);
      expect(r.error).toMatch(/^azure_blob: .*403 AuthorizationFailure: Server failed to authenticate the request.*check account_name and account_key/);
      expect(r.error).not.toContain(wrongKey);
    }
    const run = await readRun({ connection_string: az.connectionString({ key: wrongKey }), prefix: 'x/' });
    expect(run.rec.status).toBe('failed');
    expect(run.rec.error).toMatch(/azure_blob: listing container svc-own-tests under 'x\/': 403 AuthorizationFailure.*check connection_string/);
    expect(run.rec.error).not.toContain(wrongKey);
  });

  it('a container that does not exist is named; a malformed connection string is refused', async () => {
    const r = await testConnector('sink', { ...base, container: 'no-such-container' } as never);
    expect(r.error).toMatch(/^azure_blob: reading container no-such-container: 404 ContainerNotFound: container no-such-container does not exist/);
    const bad = await testConnector('source', { ...base, connection_string: 'this is not a connection string' } as never);
    expect(bad.error).toMatch(/^azure_blob: listing container svc-own-tests: the credentials cannot be used: .*check connection_string/);
  });

  it('lint: exactly one way to authenticate', () => {
    expect(diagnostics('source', {})).toEqual([expect.stringContaining('pipeline.source.connection_string')]);
    expect(diagnostics('sink', { connection_string: 'x', account_name: 'a' }).join('\n')).toMatch(
      /pipeline\.sinks\[0\]\.account_name.*not used with connection_string/,
    );
    expect(diagnostics('sink', { account_name: 'a' }).join('\n')).toMatch(/pipeline\.sinks\[0\]\.account_key.*needs account_key/);
    expect(diagnostics('source', { account_key: 'k' }).join('\n')).toMatch(/pipeline\.source\.account_name.*needs account_name/);
    expect(diagnostics('sink', { connection_string: 'x', blob_template: '{nope}' }).join('\n')).toMatch(/blob_template.*unknown token \{nope\}/);
    expect(diagnostics('sink', { connection_string: 'x' })).toEqual([]);
  });
});

describe('azure_blob: cut connections', () => {
  it('a download cut mid-blob leaves it unmarked; the next run reads it once', async () => {
    const p = prefix();
    const n = 20_000;
    await put(`${p}/big.ndjson`, ndjson(recs(n)));
    const proxy = await tcpProxy(az.port);
    try {
      const processed = new MemoryProcessedFiles();
      const source = { connection_string: az.connectionString({ port: proxy.port }), prefix: `${p}/`, skip_processed: true };
      proxy.dropAfter(300_000);
      const first = await readRun(source, { processed, serializer_in: { type: 'ndjson' } });
      expect(first.rec.errors.join('\n')).toMatch(/read failed: azure_blob: reading svc-own-tests\/.*big\.ndjson/);
      expect(first.rec.records_in).toBeLessThan(n);
      const second = await readRun(source, { processed, serializer_in: { type: 'ndjson' } });
      expect(second.rec.status).toBe('success');
      expect(second.rec.errors).toEqual([]);
      expect(checkSequence(second.records(), n)).toEqual({ missing: [], duplicates: 0 });
      expect((await readRun(source, { processed, serializer_in: { type: 'ndjson' } })).rec.records_in).toBe(0);
    } finally {
      await proxy.close();
    }
  });

  it('a large blob is staged block by block while it is written and appears only when committed', async () => {
    const p = prefix();
    const sink = directSink({ ...base, blob_template: `${p}/large.bin` }, 'bytes');
    await sink.open();
    const mib = Buffer.alloc(1024 * 1024, 7);
    const total = 24;
    for (let i = 0; i < total; i++) await sink.writeBytes(mib);
    const blob = cc.getBlockBlobClient(`${p}/large.bin`);
    const staged = await until(
      async () => {
        const list = await blob.getBlockList('uncommitted').catch(() => undefined);
        const bytes = (list?.uncommittedBlocks ?? []).reduce((s, b) => s + b.size, 0);
        return bytes >= 16 * 1024 * 1024 ? bytes : undefined;
      },
      10_000,
      'blocks staged before the commit',
    );
    expect(staged % BLOCK_BYTES).toBe(0);
    expect(await names(`${p}/`)).toEqual([]); // not visible before the commit
    await sink.flush();
    await sink.close();
    const data = await blob.downloadToBuffer();
    expect(data.length).toBe(total * mib.length);
    expect(data.every((b) => b === 7)).toBe(true);
  });

  it('an upload cut mid-blob: the input stays, and with the next run every record is in the container', async () => {
    const p = prefix();
    const n = 160_000; // about 8 MiB of JSON: blocks are staged during the run
    const proxy = await tcpProxy(az.port);
    try {
      const processed = new MemoryProcessedFiles();
      const dir = tempDir('svc-az-cut-');
      const sink = {
        ...base,
        connection_string: az.connectionString({ port: proxy.port }),
        blob_template: `${p}/{run_id}.json`,
        retry_count: 3,
        retry_delay_seconds: 0.2,
      };
      // Cut every connection in the middle of the second block.
      proxy.dropAfter(BLOCK_BYTES + BLOCK_BYTES / 2, 'up');
      const first = (await writeRun([recs(n)], [sink], { record_chunk_size: 5000 }, processed, dir)).rec;
      expect(first.errors.join('\n')).toMatch(/flush failed, inputs kept for the next run/);
      const second = (await writeRun('again', [sink], {}, processed, dir)).rec;
      expect(second.status, JSON.stringify(second)).toBe('success');
      expect(second.records_in).toBe(n); // the input was not finalized by the first run
      const { missing, duplicates } = checkSequence(await blobRecords(`${p}/`), n);
      console.log(
        `[azure_blob] upload cut mid-blob: ${n} records, first run ${first.errors.length} errors, ${missing.length} missing after the next run, ${duplicates} duplicates`,
      );
      expect(missing).toEqual([]);
    } finally {
      await proxy.close();
    }
  }, 90_000);
});
