// The rest source and sink: the shared conformance suite against a real HTTP server, then what the
// suite does not cover: every auth type against a server that checks it, both pagination styles
// and their stop rules, response_path, TLS with a self-signed certificate, timeouts,
// expected_status and what the runtime retries.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { loadPipelineText } from '../../src/config/load.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline, type RunTelemetry } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { atPath, pageUrl } from '../../src/plugins/connectors/rest/source.js';
import { tempDir } from '../helpers/fs.js';
import { conformance, type Cfg, type Rec } from './conformance.js';
import { httpPeer, selfSignedCert, startHttpPeer, type HttpAuth, type HttpPeer } from './peers/http.js';
import { until } from '../helpers/wait.js';

conformance(httpPeer);

let seq = 0;
const chan = () => `rest_${process.pid}_${++seq}`;
const recs = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ seq: from + i, name: `cell-${from + i}` }));

function load(pipeline: Cfg) {
  const r = loadPipelineText(stringify({ version: '1', pipeline }), { env: {} });
  if (!r.config) throw new Error(r.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
  return r.config;
}

function ndjsonIn(dir: string): Rec[] {
  const out: Rec[] = [];
  for (const n of readdirSync(dir).sort()) for (const l of readFileSync(join(dir, n), 'utf8').split('\n')) if (l.trim()) out.push(JSON.parse(l) as Rec);
  return out;
}

/** One manual run of the rest source into a local NDJSON file. */
async function runSource(source: Cfg, extra: Cfg = {}) {
  const out = tempDir('svc-rest-out-');
  const states: string[] = [];
  const telemetry: RunTelemetry = { connection: (_c, _t, s) => void states.push(s) };
  const config = load({
    name: 'rest-source',
    schedule: { type: 'manual' },
    source: { type: 'rest', ...source },
    serializer_out: { type: 'ndjson' },
    sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
    ...extra,
  });
  const rec = await runPipeline(config, { log: silentLogger, processed: new MemoryProcessedFiles(), telemetry });
  return { rec, records: ndjsonIn(out), states };
}

/** One manual run of `n` records `{seq, name}` from NDJSON into the rest sink. */
async function runSink(sink: Cfg, n: number, extra: Cfg = {}) {
  const dir = tempDir('svc-rest-in-');
  mkdirSync(join(dir, 'in'));
  writeFileSync(
    join(dir, 'in', 'r.ndjson'),
    recs(n)
      .map((r) => JSON.stringify(r) + '\n')
      .join(''),
  );
  const states: string[] = [];
  const telemetry: RunTelemetry = { connection: (_c, _t, s) => void states.push(s) };
  const config = load({
    name: 'rest-sink',
    schedule: { type: 'manual' },
    source: { type: 'local', path: join(dir, 'in') },
    serializer_in: { type: 'ndjson' },
    sinks: [{ type: 'rest', ...sink }],
    ...extra,
  });
  const rec = await runPipeline(config, { log: silentLogger, processed: new MemoryProcessedFiles(), telemetry });
  return { rec, states };
}

function diagnostics(role: 'source' | 'sink', component: Cfg): string[] {
  const comp = { type: 'rest', ...component };
  const pipeline = {
    name: 'lint',
    schedule: { type: 'manual' },
    source: role === 'source' ? comp : { type: 'local', path: '/tmp' },
    sinks: [role === 'sink' ? comp : { type: 'local', path: '/tmp' }],
  };
  return loadPipelineText(stringify({ version: '1', pipeline }), { env: {} }).diagnostics.map((d) => formatDiagnostic(d));
}

const AUTHS: { name: string; server: HttpAuth; right: Cfg; wrong: Cfg; header: (h: Record<string, unknown>) => unknown; expected: string }[] = [
  { name: 'none', server: { type: 'none' }, right: {}, wrong: {}, header: (h) => h.authorization, expected: '' },
  {
    name: 'basic',
    server: { type: 'basic', username: 'svc', password: 'basic-pass' },
    right: { auth_type: 'basic', username: 'svc', password: 'basic-pass' },
    wrong: { auth_type: 'basic', username: 'svc', password: 'wrong-basic-pass' },
    header: (h) => h.authorization,
    expected: `Basic ${Buffer.from('svc:basic-pass').toString('base64')}`,
  },
  {
    name: 'bearer',
    server: { type: 'bearer', token: 'bearer-token-1' },
    right: { auth_type: 'bearer', token: 'bearer-token-1' },
    wrong: { auth_type: 'bearer', token: 'wrong-bearer-token' },
    header: (h) => h.authorization,
    expected: 'Bearer bearer-token-1',
  },
  {
    name: 'apikey',
    server: { type: 'apikey', header: 'X-Custom-Key', key: 'key-12345' },
    right: { auth_type: 'apikey', api_key: 'key-12345', api_key_header: 'X-Custom-Key' },
    wrong: { auth_type: 'apikey', api_key: 'wrong-key-999', api_key_header: 'X-Custom-Key' },
    header: (h) => h['x-custom-key'],
    expected: 'key-12345',
  },
];

describe('rest: auth types against a server that checks them', () => {
  for (const a of AUTHS) {
    describe(a.name, () => {
      let peer: HttpPeer;
      beforeAll(async () => {
        peer = await startHttpPeer({ auth: a.server });
      });
      afterAll(() => peer.close());

      it('source: reads with the right credentials, fails with the server status and no secret on wrong ones', async () => {
        const ch = chan();
        peer.serve(ch, recs(3));
        const ok = await runSource({ url: `${peer.url}/${ch}`, response_path: 'data.items', ...a.right });
        expect(ok.rec.status, JSON.stringify(ok.rec)).toBe('success');
        expect(ok.records).toEqual(recs(3));
        const seen = peer.requests.filter((r) => r.path === `/${ch}`);
        expect(seen[0]!.headers[a.name === 'apikey' ? 'x-custom-key' : 'authorization'] ?? '').toBe(a.expected);
        if (a.name === 'none') return;
        const bad = await runSource({ url: `${peer.url}/${ch}`, response_path: 'data.items', ...a.wrong });
        expect(bad.rec.status).toBe('failed');
        expect(bad.rec.error).toMatch(/returned 401 Unauthorized \(check auth_type and the credentials\)/);
        for (const v of Object.values(a.wrong)) if (typeof v === 'string' && /wrong/.test(v)) expect(bad.rec.error).not.toContain(v);
        expect(bad.records).toEqual([]);
      });

      it('sink: writes with the right credentials; a 401 is not retried', async () => {
        const ch = chan();
        const ok = await runSink({ url: `${peer.url}/${ch}`, ...a.right }, 5);
        expect(ok.rec.status, JSON.stringify(ok.rec)).toBe('success');
        expect(ok.rec.errors).toEqual([]);
        expect(peer.received(ch)).toEqual(recs(5));
        const post = peer.requests.find((r) => r.path === `/${ch}` && r.method === 'POST')!;
        expect(a.header(post.headers) ?? '').toBe(a.expected);
        if (a.name === 'none') return;
        const ch2 = chan();
        const bad = await runSink({ url: `${peer.url}/${ch2}`, ...a.wrong, retry_count: 3, retry_delay_seconds: 0.01 }, 5);
        expect(bad.rec.records_out).toBe(0);
        expect(bad.rec.errors.join('\n')).toMatch(/returned 401 Unauthorized/);
        expect(peer.requests.filter((r) => r.path === `/${ch2}`)).toHaveLength(1);
        for (const v of Object.values(a.wrong)) if (typeof v === 'string' && /wrong/.test(v)) expect(bad.rec.errors.join('\n')).not.toContain(v);
      });

      it('test(): ok with the right credentials, fails on wrong ones (source GET, sink OPTIONS)', async () => {
        const ch = chan();
        peer.serve(ch, []);
        for (const role of ['source', 'sink'] as const) {
          const ok = await testConnector(role, { type: 'rest', url: `${peer.url}/${ch}`, ...a.right } as never);
          expect(ok, `${role} ${JSON.stringify(ok)}`).toMatchObject({ ok: true });
          if (a.name === 'none') continue;
          const bad = await testConnector(role, { type: 'rest', url: `${peer.url}/${ch}`, ...a.wrong } as never);
          expect(bad.ok).toBe(false);
          expect(bad.error).toMatch(/^rest: (GET|OPTIONS) http:\/\/127\.0\.0\.1:\d+\/\S+ returned 401 Unauthorized/);
        }
        expect(peer.requests.filter((r) => r.path === `/${ch}`).map((r) => r.method)).toContain('OPTIONS');
        expect(peer.received(ch)).toEqual([]); // the sink's check wrote nothing
      });
    });
  }
});

describe('rest source', () => {
  let peer: HttpPeer;
  beforeAll(async () => {
    peer = await startHttpPeer({ maxPageSize: 1000 });
  });
  afterAll(() => peer.close());
  const reads = (ch: string) => peer.requests.filter((r) => r.path === `/${ch}` && r.method === 'GET');

  it('paginates by offset (offset=0,100,200 & limit=100) and stops on the short page', async () => {
    const ch = chan();
    peer.serve(ch, recs(250));
    const { rec, records } = await runSource({ url: `${peer.url}/${ch}`, response_path: 'data.items', paginate: true });
    expect(rec.status).toBe('success');
    expect(records).toEqual(recs(250));
    expect(reads(ch).map((r) => `${r.query.get('offset')}/${r.query.get('limit')}`)).toEqual(['0/100', '100/100', '200/100']);
  });

  it('without total_path, a full last page costs one more (empty) request; total_path saves it', async () => {
    const ch = chan();
    peer.serve(ch, recs(200));
    const plain = await runSource({ url: `${peer.url}/${ch}`, response_path: 'data.items', paginate: true });
    expect(plain.records).toHaveLength(200);
    expect(reads(ch).map((r) => r.query.get('offset'))).toEqual(['0', '100', '200']);
    const ch2 = chan();
    peer.serve(ch2, recs(200));
    const total = await runSource({ url: `${peer.url}/${ch2}`, response_path: 'data.items', paginate: true, total_path: 'meta.total' });
    expect(total.records).toEqual(recs(200));
    expect(reads(ch2).map((r) => r.query.get('offset'))).toEqual(['0', '100']);
  });

  it('total_path stops at the total even when the API has more (and a short page stops before it)', async () => {
    const ch = chan();
    peer.serve(ch, recs(500));
    // The server reports total 500; ask for pages of 50 and check it reads exactly 10 pages.
    const { records } = await runSource({ url: `${peer.url}/${ch}`, response_path: 'data.items', paginate: true, page_size: 50, total_path: 'meta.total' });
    expect(records).toEqual(recs(500));
    expect(reads(ch)).toHaveLength(10);
  });

  it('paginates by page number (page=1,2,3 & per_page) for any other page_param', async () => {
    const ch = chan();
    peer.serve(ch, recs(25), { shape: 'array' });
    const { rec, records } = await runSource({ url: `${peer.url}/${ch}`, paginate: true, page_param: 'page', page_size: 10, page_size_param: 'per_page' });
    expect(rec.status).toBe('success');
    expect(records).toEqual(recs(25));
    expect(reads(ch).map((r) => [...r.query.entries()])).toEqual([
      [
        ['page', '1'],
        ['per_page', '10'],
      ],
      [
        ['page', '2'],
        ['per_page', '10'],
      ],
      [
        ['page', '3'],
        ['per_page', '10'],
      ],
    ]);
  });

  it("page_size_param '' sends no size parameter", async () => {
    const u = pageUrl({ url: 'http://h/x?a=1', params: { b: [1, 2] }, page_param: 'offset', page_size: 5, page_size_param: '' } as never, {
      offset: 10,
      number: 3,
    });
    expect(u.search).toBe('?a=1&b=1&b=2&offset=10');
  });

  it('fails, instead of looping, when the API ignores the page parameter', async () => {
    const ch = chan();
    peer.serve(ch, recs(30), { ignorePaging: true });
    const { rec } = await runSource({ url: `${peer.url}/${ch}`, response_path: 'data.items', paginate: true, page_size: 10, page_param: 'page' });
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(/page 2 is the same as page 1: the API ignores page/);
    expect(reads(ch)).toHaveLength(2);
  });

  it('response_path: a nested list, a single object, a list index, and a clear error when missing', async () => {
    const ch = chan();
    peer.serve(ch, recs(4));
    expect((await runSource({ url: `${peer.url}/${ch}`, response_path: 'data.items' })).records).toEqual(recs(4));
    expect((await runSource({ url: `${peer.url}/${ch}`, response_path: 'meta' })).records).toEqual([{ total: 4, offset: 0 }]);
    expect((await runSource({ url: `${peer.url}/${ch}`, response_path: 'data.items.2' })).records).toEqual([recs(4)[2]]);
    const missing = await runSource({ url: `${peer.url}/${ch}`, response_path: 'result.rows' });
    expect(missing.rec.status).toBe('failed');
    expect(missing.rec.error).toMatch(/response_path 'result\.rows' is not in the response \(keys: data, meta\)/);
    expect(atPath({ a: [{ b: 1 }] }, 'a.0.b')).toBe(1);
    expect(atPath({ a: 1 }, 'a.b')).toBeUndefined();
  });

  it('without response_path the body goes to serializer_in as is (CSV)', async () => {
    const ch = chan();
    peer.serve(ch, [], { raw: { body: 'cell,rsrp\nA1,-95\nB2,-101\n', contentType: 'text/csv' } });
    const { rec, records } = await runSource({ url: `${peer.url}/${ch}` }, { serializer_in: { type: 'csv' } });
    expect(rec.status).toBe('success');
    expect(records).toEqual([
      { cell: 'A1', rsrp: '-95' },
      { cell: 'B2', rsrp: '-101' },
    ]);
    expect(reads(ch)[0]!.headers.accept).toBe('*/*');
  });

  it('a non-2xx answer fails the run with the status and the start of the body', async () => {
    const { rec, states } = await runSource({ url: `${peer.url}/no_such_collection`, params: { api_key: 'query-secret-42' } });
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(
      /^rest: GET http:\/\/127\.0\.0\.1:\d+\/no_such_collection returned 404 Not Found: \{"error":"no collection 'no_such_collection'"\}$/,
    );
    expect(rec.error).not.toContain('query-secret-42');
    expect(states).toEqual(['connecting', 'connected']);
  });

  it('a 503 in the middle of paging fails the run (the next run starts again; no source retries)', async () => {
    const ch = chan();
    peer.serve(ch, recs(30));
    peer.failNext(ch, [0, 503]);
    const { rec } = await runSource({ url: `${peer.url}/${ch}`, response_path: 'data.items', paginate: true, page_size: 10 });
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(/returned 503 Service Unavailable: \{"error":"injected failure"\}/);
    expect(reads(ch).map((r) => r.query.get('offset'))).toEqual(['0', '10']);
    const again = await runSource({ url: `${peer.url}/${ch}`, response_path: 'data.items', paginate: true, page_size: 10 });
    expect(again.records).toEqual(recs(30));
  });

  it('sends method, body, params and headers as configured (a POST query endpoint)', async () => {
    const ch = chan();
    peer.serve(ch, recs(2), { postQuery: true });
    const { rec, records } = await runSource({
      url: `${peer.url}/${ch}?fixed=1`,
      method: 'POST',
      body: { filter: { severity: 'major' } },
      params: { region: 'north', tag: ['a', 'b'] },
      headers: { 'X-Tenant': 't-7' },
      response_path: 'data.items',
    });
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(records).toEqual(recs(2));
    const r = peer.requests.filter((x) => x.path === `/${ch}`).at(-1)!;
    expect(r.method).toBe('POST');
    expect(JSON.parse(r.body)).toEqual({ filter: { severity: 'major' } });
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.headers['x-tenant']).toBe('t-7');
    expect(r.headers.accept).toBe('application/json');
    expect([...r.query.entries()]).toEqual([
      ['fixed', '1'],
      ['region', 'north'],
      ['tag', 'a'],
      ['tag', 'b'],
    ]);
  });

  it('times out a slow answer with the configured timeout', async () => {
    const ch = chan();
    peer.serve(ch, recs(1));
    peer.delay(ch, 3000, 1);
    const t0 = Date.now();
    const { rec, states } = await runSource({ url: `${peer.url}/${ch}`, timeout: 0.5 });
    expect(Date.now() - t0).toBeLessThan(2500);
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(/no complete response within 0\.5 s \(timeout\)/);
    expect(states).toEqual(['connecting', 'disconnected']);
  });

  it('a refused connection fails the run clearly', async () => {
    const { rec } = await runSource({ url: 'http://127.0.0.1:1/x' });
    expect(rec.status).toBe('failed');
    expect(rec.error).toBe('rest: GET http://127.0.0.1:1/x: connection refused (nothing listens there)');
  });

  it('test() checks response_path and that paging finds a list', async () => {
    const ch = chan();
    peer.serve(ch, recs(3));
    expect(await testConnector('source', { type: 'rest', url: `${peer.url}/${ch}`, response_path: 'data.items', paginate: true } as never)).toMatchObject({
      ok: true,
    });
    const wrongPath = await testConnector('source', { type: 'rest', url: `${peer.url}/${ch}`, response_path: 'data.rows' } as never);
    expect(wrongPath.error).toMatch(/response_path 'data\.rows' is not in the response \(keys: data, meta\)$/);
    const notList = await testConnector('source', { type: 'rest', url: `${peer.url}/${ch}`, response_path: 'meta', paginate: true } as never);
    expect(notList.error).toMatch(/paginate needs a list at meta/);
  });
});

describe('rest source and sink over https with a self-signed certificate', () => {
  let peer: HttpPeer;
  beforeAll(async () => {
    peer = await startHttpPeer({ tls: await selfSignedCert(tempDirOnce()), auth: { type: 'bearer', token: 'tls-token' } });
  }, 60_000);
  afterAll(() => peer.close());
  const auth = { auth_type: 'bearer', token: 'tls-token' };

  it('verify_ssl true (default) refuses the certificate and says how to accept it', async () => {
    const ch = chan();
    peer.serve(ch, recs(2));
    const { rec } = await runSource({ url: `${peer.url}/${ch}`, response_path: 'data.items', ...auth });
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(/the server certificate is not trusted \((DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN)\); .*set verify_ssl: false/);
    const t = await testConnector('sink', { type: 'rest', url: `${peer.url}/${ch}`, ...auth } as never);
    expect(t.error).toMatch(/not trusted/);
  });

  it('verify_ssl false reads and writes', async () => {
    const ch = chan();
    peer.serve(ch, recs(2));
    const { rec, records } = await runSource({ url: `${peer.url}/${ch}`, response_path: 'data.items', verify_ssl: false, ...auth });
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(records).toEqual(recs(2));
    const w = await runSink({ url: `${peer.url}/${ch}`, verify_ssl: false, ...auth }, 3);
    expect(w.rec.errors).toEqual([]);
    expect(peer.received(ch)).toEqual(recs(3));
  });
});

let tlsDir: string | undefined;
function tempDirOnce() {
  // tempDir() removes its directories after each test; the certificate is read into memory at once.
  tlsDir ??= tempDir('svc-rest-tls-');
  return tlsDir;
}

describe('rest sink', () => {
  let peer: HttpPeer;
  beforeAll(async () => {
    peer = await startHttpPeer();
  });
  afterAll(() => peer.close());
  const at = (ch: string) => peer.requests.filter((r) => r.path === `/${ch}`);

  it('one request per batch, a JSON array with Content-Type application/json', async () => {
    const ch = chan();
    const { rec } = await runSink({ url: `${peer.url}/${ch}` }, 250, { record_chunk_size: 100 });
    expect(rec.records_out).toBe(250);
    expect(at(ch).map((r) => JSON.parse(r.body).length)).toEqual([100, 100, 50]);
    expect(at(ch)[0]!.headers['content-type']).toBe('application/json');
    expect(peer.received(ch)).toEqual(recs(250));
  });

  it('a 500 then a 201: retried by the runtime (retry_count), stored once', async () => {
    const ch = chan();
    peer.failNext(ch, [500]);
    const { rec } = await runSink({ url: `${peer.url}/${ch}`, retry_count: 2, retry_delay_seconds: 0.05 }, 10);
    expect(rec.status).toBe('success');
    expect(rec.errors).toEqual([]);
    expect(rec.records_out).toBe(10);
    expect(at(ch).map((r) => r.status)).toEqual([500, 201]);
    expect(peer.received(ch)).toEqual(recs(10));
  });

  it('429 and 503 are retried too; without retry_count the first failure is the sink error', async () => {
    const ch = chan();
    peer.failNext(ch, [429, 503]);
    const ok = await runSink({ url: `${peer.url}/${ch}`, retry_count: 3, retry_delay_seconds: 0.02 }, 3);
    expect(ok.rec.errors).toEqual([]);
    expect(at(ch).map((r) => r.status)).toEqual([429, 503, 201]);
    const ch2 = chan();
    peer.failNext(ch2, [500]);
    const bad = await runSink({ url: `${peer.url}/${ch2}` }, 3);
    expect(bad.rec.records_out).toBe(0);
    expect(bad.rec.errors.join('\n')).toMatch(/returned 500 Internal Server Error \(expected 200, 201, 202, 204\): \{"error":"injected failure"\}/);
  });

  it('a 400 is not retried', async () => {
    const ch = chan();
    peer.failNext(ch, [400]);
    const { rec } = await runSink({ url: `${peer.url}/${ch}`, retry_count: 3, retry_delay_seconds: 0.02 }, 3);
    expect(rec.records_out).toBe(0);
    expect(rec.errors.join('\n')).toMatch(/returned 400 Bad Request/);
    expect(at(ch)).toHaveLength(1);
    expect(peer.received(ch)).toEqual([]);
  });

  it('expected_status decides: a 201 fails when only 202 is expected', async () => {
    const ch = chan();
    const { rec } = await runSink({ url: `${peer.url}/${ch}`, expected_status: [202], retry_count: 2, retry_delay_seconds: 0.02 }, 2);
    expect(rec.records_out).toBe(0);
    expect(rec.errors.join('\n')).toMatch(/returned 201 Created \(expected 202\)/);
    expect(at(ch)).toHaveLength(1);
  });

  it('method PUT and PATCH, content_type with the ndjson serializer; a type the server refuses is a 415, not retried', async () => {
    const ch = chan();
    const put = await runSink({ url: `${peer.url}/${ch}`, method: 'PUT', content_type: 'application/x-ndjson', serializer_out: { type: 'ndjson' } }, 4);
    expect(put.rec.errors).toEqual([]);
    const patch = await runSink({ url: `${peer.url}/${ch}`, method: 'PATCH' }, 2);
    expect(patch.rec.errors).toEqual([]);
    expect(at(ch).map((r) => `${r.method} ${r.headers['content-type']}`)).toEqual(['PUT application/x-ndjson', 'PATCH application/json']);
    expect(at(ch)[0]!.body.split('\n').filter(Boolean)).toHaveLength(4);
    expect(peer.received(ch)).toEqual([...recs(4), ...recs(2)]);
    const ch2 = chan();
    const bad = await runSink({ url: `${peer.url}/${ch2}`, content_type: 'text/plain', retry_count: 2, retry_delay_seconds: 0.02 }, 2);
    expect(bad.rec.errors.join('\n')).toMatch(/returned 415 Unsupported Media Type/);
    expect(at(ch2)).toHaveLength(1);
  });

  it('headers reach the server', async () => {
    const ch = chan();
    await runSink({ url: `${peer.url}/${ch}`, headers: { 'X-Source-System': 'svc-test' } }, 1);
    expect(at(ch)[0]!.headers['x-source-system']).toBe('svc-test');
  });

  it('a timeout is retried; the server that stored the slow request gets the batch twice (at-least-once)', async () => {
    const ch = chan();
    peer.delay(ch, 800, 1);
    const t0 = Date.now();
    const { rec, states } = await runSink({ url: `${peer.url}/${ch}`, timeout: 0.3, retry_count: 1, retry_delay_seconds: 0.05 }, 3);
    expect(rec.errors).toEqual([]);
    expect(Date.now() - t0).toBeLessThan(3000);
    await until(() => peer.received(ch).length >= 6, 5000, 'the slow request to land after the retry');
    expect(peer.received(ch)).toEqual([...recs(3), ...recs(3)]);
    expect(states).toEqual(['connecting', 'disconnected', 'connecting', 'connected']);
  });

  it('a timeout with no retries left is the sink error, naming the timeout', async () => {
    const ch = chan();
    peer.delay(ch, 1500, 1);
    const { rec } = await runSink({ url: `${peer.url}/${ch}`, timeout: 0.3 }, 1);
    expect(rec.records_out).toBe(0);
    expect(rec.errors.join('\n')).toMatch(/POST http:\/\/127\.0\.0\.1:\d+\/\S+: no complete response within 0\.3 s \(timeout\)/);
  });
});

describe('rest: config lint', () => {
  it('flags auth fields that do not match auth_type, header clashes, and paging fields without paginate', () => {
    expect(diagnostics('source', { url: 'http://h/x', auth_type: 'basic' }).join('\n')).toMatch(/pipeline\.source\.username: auth_type basic needs a username/);
    expect(diagnostics('source', { url: 'http://h/x', auth_type: 'bearer' }).join('\n')).toMatch(/source\.token: auth_type bearer needs a token/);
    expect(diagnostics('sink', { url: 'http://h/x', auth_type: 'apikey' }).join('\n')).toMatch(/sinks\[0\]\.api_key: auth_type apikey needs an api_key/);
    expect(diagnostics('source', { url: 'http://h/x', token: 'abc' }).join('\n')).toMatch(
      /source\.token: token is only used with auth_type bearer \(auth_type is none\)/,
    );
    expect(diagnostics('source', { url: 'http://u:p@h/x' }).join('\n')).toMatch(/source\.url: credentials in the URL are not sent/);
    expect(diagnostics('source', { url: 'http://h/x', auth_type: 'bearer', token: 't', headers: { Authorization: 'x' } }).join('\n')).toMatch(
      /headers\.Authorization: header Authorization is set by auth_type bearer/,
    );
    expect(diagnostics('source', { url: 'http://h/x', total_path: 'meta.total' }).join('\n')).toMatch(
      /source\.total_path: total_path is only used with paginate: true/,
    );
    expect(diagnostics('source', { url: 'http://h/x', paginate: true, params: { offset: 5 } }).join('\n')).toMatch(/params\.offset is set by pagination/);
    expect(diagnostics('sink', { url: 'http://h/x', headers: { 'Content-Type': 'text/csv' } }).join('\n')).toMatch(/set the body type with content_type/);
    expect(diagnostics('sink', { url: 'http://h/x', method: 'GET' }).join('\n')).toMatch(/sinks\[0\]\.method/);
    expect(diagnostics('source', { url: 'ftp://h/x' }).join('\n')).toMatch(/source\.url/);
    expect(
      diagnostics('source', {
        url: 'http://h/x',
        auth_type: 'basic',
        username: 'u',
        password: 'p',
        paginate: true,
        page_param: 'page',
        page_size_param: 'per_page',
        total_path: 'meta.total',
      }),
    ).toEqual([]);
  });
});
