// The elasticsearch source and sink against the wire-level test peer (test/connectors/peers/
// elasticsearch.ts; no Elasticsearch server can run here): the shared conformance suite, then what
// it does not cover. Sink: per-item refusals dead-lettered with the item's error while the rest
// lands, 429 items retried, chunk_size, a failed chunk after a landed one, index template tokens
// (run start and timestamp_field), id_field against a lost answer, the ingest pipeline, auth
// failures, the product check, the content type. Source: scroll pages and clearing (also when
// the run stops early), query, an unknown index, an expired scroll, the hit fields, ES to ES.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { loadPipelineText } from '../../src/config/load.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline, type RunTelemetry } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { expandIndex, lintIndexTemplate } from '../../src/plugins/connector-runtime/search-bulk.js';
import type { ConnectionState } from '../../src/plugins/types.js';
import { tempDir } from '../helpers/fs.js';
import { checkSequence, conformance, uniqueChannel, type Cfg, type Rec } from './conformance.js';
import { loadPipeline, outputRecords, until } from './helpers.js';
import { selfSignedCert } from './peers/http.js';
import { elasticsearchPeer, PASSWORD, startSearchPeer, USER, type SearchPeer } from './peers/elasticsearch.js';

conformance(elasticsearchPeer);

let peer: SearchPeer;
beforeAll(async () => {
  peer = await startSearchPeer({ users: { [USER]: PASSWORD } });
});
afterAll(() => peer.close());

const auth = () => ({ hosts: [peer.url], username: USER, password: PASSWORD });
const chan = () => uniqueChannel('es');
const recs = (n: number, extra: (i: number) => Rec = () => ({})) => Array.from({ length: n }, (_, i) => ({ seq: i, name: `r${i}`, ...extra(i) }));
/** The _bulk requests that wrote into `index`. */
const bulksTo = (index: string) => peer.requests.filter((r) => r.path === '/_bulk' && r.body.includes(`"_index":"${index}`));
const docsIn = (bulkBody: string) => bulkBody.split('\n').filter(Boolean).length / 2;

/** One manual run of `records` from NDJSON into one elasticsearch sink; a DLQ directory when `dlq`. */
async function sinkRun(sink: Cfg, records: Rec[], extra: Cfg = {}, opts: { dlq?: boolean; name?: string; signal?: AbortSignal } = {}) {
  const dir = tempDir('svc-es-in-');
  mkdirSync(join(dir, 'in'));
  writeFileSync(join(dir, 'in', 'r.ndjson'), records.map((r) => JSON.stringify(r) + '\n').join(''));
  const dlqDir = tempDir('svc-es-dlq-');
  const states: ConnectionState[] = [];
  const telemetry: RunTelemetry = { connection: (c, _t, s) => void (c.startsWith('sinks[0]') && states.push(s)) };
  const config = loadPipeline({
    name: opts.name ?? 'es-sink',
    schedule: { type: 'manual' },
    source: { type: 'local', path: join(dir, 'in') },
    serializer_in: { type: 'ndjson' },
    sinks: [{ type: 'elasticsearch', ...auth(), ...sink }],
    ...(opts.dlq ? { on_error: 'dlq', dlq: { type: 'local', path: dlqDir, filename_template: 'dlq.ndjson' } } : {}),
    ...extra,
  });
  const rec = await runPipeline(config, { log: silentLogger, processed: new MemoryProcessedFiles(), telemetry, signal: opts.signal });
  const dead = outputRecords(dlqDir) as unknown as { _stage: string; _error: string; record: Rec }[];
  return { rec, dead, states };
}

/** One manual run from the elasticsearch source into NDJSON files. */
async function sourceRun(source: Cfg, extra: Cfg = {}, signal?: AbortSignal) {
  const out = tempDir('svc-es-out-');
  const states: ConnectionState[] = [];
  const telemetry: RunTelemetry = { connection: (c, _t, s) => void (c === 'source' && states.push(s)) };
  const config = loadPipeline({
    name: 'es-source',
    schedule: { type: 'manual' },
    source: { type: 'elasticsearch', ...auth(), ...source },
    serializer_out: { type: 'ndjson' },
    sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
    ...extra,
  });
  const rec = await runPipeline(config, { log: silentLogger, processed: new MemoryProcessedFiles(), telemetry, signal });
  return { rec, records: outputRecords(out), states, out };
}

function diagnostics(role: 'source' | 'sink', component: Cfg): string[] {
  const comp = { type: 'elasticsearch', hosts: ['http://localhost:9200'], ...component };
  const pipeline = {
    name: 'lint',
    schedule: { type: 'manual' },
    source: role === 'source' ? comp : { type: 'local', path: '/tmp' },
    sinks: [role === 'sink' ? comp : { type: 'local', path: '/tmp' }],
  };
  return loadPipelineText(stringify({ version: '1', pipeline }), { env: {} }).diagnostics.map((d) => formatDiagnostic(d));
}

describe('elasticsearch sink: per-document answers', () => {
  it('a document the mapping refuses (400) goes to the DLQ with the item error; the others land', async () => {
    const index = chan();
    // `n` is mapped long by the first document; "abc" cannot be parsed as one.
    const input = recs(10, (i) => ({ n: i === 5 ? 'abc' : i }));
    const { rec, dead } = await sinkRun({ index_template: index }, input, {}, { dlq: true });
    expect(rec.records_out).toBe(9);
    expect(rec.dlq_count).toBe(1);
    expect(peer.documents(index).map((d) => d._source.seq)).toEqual([0, 1, 2, 3, 4, 6, 7, 8, 9]);
    expect(dead).toHaveLength(1);
    expect(dead[0]!._stage).toBe('sink');
    expect(dead[0]!.record).toEqual(input[5]);
    expect(dead[0]!._error).toMatch(
      /^sinks\[0\] \(elasticsearch\): 400 document_parsing_exception: failed to parse field \[n\] of type \[long\] in document with id '[\w-]+'\. Preview of field's value: 'abc' \(caused by illegal_argument_exception: For input string: "abc"\) \(index svc_es_\w+\)$/,
    );
    expect(bulksTo(index)).toHaveLength(1); // refused for good: not sent again
  });

  it('without a DLQ the refusal is in the run record, never dropped silently', async () => {
    const index = chan();
    peer.failItems({ status: 400, when: (d, ix) => ix === index && d.seq === 3 });
    const { rec } = await sinkRun({ index_template: index }, recs(6));
    expect(rec.records_out).toBe(5);
    expect(rec.errors.join('\n')).toMatch(
      /sinks\[0\] \(elasticsearch\): 400 document_parsing_exception: failed to parse field \[injected\].* \(1 records from r\.ndjson\)/,
    );
    expect(peer.documents(index)).toHaveLength(5);
  });

  it('429 items are written again (only they) under retry_count, and land', async () => {
    const index = chan();
    peer.failItems({ status: 429, when: (d, ix) => ix === index && (d.seq as number) % 4 === 0, times: 1 });
    const { rec, dead } = await sinkRun({ index_template: index, retry_count: 2, retry_delay_seconds: 0.05 }, recs(20), {}, { dlq: true });
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(rec.dlq_count).toBe(0);
    expect(dead).toEqual([]);
    expect(
      checkSequence(
        peer.documents(index).map((d) => d._source),
        20,
      ),
    ).toEqual({ missing: [], duplicates: 0 });
    expect(bulksTo(index).map((r) => docsIn(r.body))).toEqual([20, 5]);
  });

  it('429 items that stay refused past retry_count are dead-lettered with the 429', async () => {
    const index = chan();
    peer.failItems({ status: 429, when: (d, ix) => ix === index && d.seq === 1 });
    const { rec, dead } = await sinkRun({ index_template: index, retry_count: 1, retry_delay_seconds: 0.01 }, recs(4), {}, { dlq: true });
    expect(rec.records_out).toBe(3);
    expect(dead.map((d) => d.record.seq)).toEqual([1]);
    expect(dead[0]!._error).toMatch(/429 es_rejected_execution_exception: rejected execution of primary operation/);
    expect(bulksTo(index).map((r) => docsIn(r.body))).toEqual([4, 1]);
  });

  it('chunk_size splits a write into _bulk requests, sent in order', async () => {
    const index = chan();
    await sinkRun({ index_template: index, chunk_size: 100 }, recs(250), { record_chunk_size: 250 });
    expect(bulksTo(index).map((r) => docsIn(r.body))).toEqual([100, 100, 50]);
    expect(peer.documents(index).map((d) => d._source.seq)).toEqual(recs(250).map((r) => r.seq));
  });

  it('a request that fails after an earlier chunk landed sends only what was not written (no duplicates without id_field)', async () => {
    const index = chan();
    peer.failRequests([0, 503]);
    const { rec } = await sinkRun({ index_template: index, chunk_size: 100, retry_count: 1, retry_delay_seconds: 0.01 }, recs(250), { record_chunk_size: 250 });
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(
      checkSequence(
        peer.documents(index).map((d) => d._source),
        250,
      ),
    ).toEqual({ missing: [], duplicates: 0 });
    // 100 landed, 100 refused (503), then the 150 not written as one retried write.
    expect(bulksTo(index).map((r) => [docsIn(r.body), r.status])).toEqual([
      [100, 200],
      [100, 503],
      [100, 200],
      [50, 200],
    ]);
  });

  it('a 503 for the whole request is retried; a 413 is not, and says to lower chunk_size', async () => {
    const index = chan();
    peer.failRequests([503]);
    const ok = await sinkRun({ index_template: index, retry_count: 2, retry_delay_seconds: 0.01 }, recs(5));
    expect(ok.rec.status).toBe('success');
    expect(peer.documents(index)).toHaveLength(5);
    const index2 = chan();
    peer.failRequests([413]);
    const big = await sinkRun({ index_template: index2, retry_count: 2, retry_delay_seconds: 0.01 }, recs(5));
    expect(big.rec.records_out).toBe(0);
    expect(big.rec.errors.join('\n')).toMatch(
      /POST _bulk to http:\/\/127\.0\.0\.1:\d+: 413 Payload Too Large \(the request is larger than the server takes: lower chunk_size\)/,
    );
    expect(peer.requests.filter((r) => r.path === '/_bulk' && r.status === 413)).toHaveLength(1);
  });

  it('sends NDJSON as the Elasticsearch client does: its vendor content type, index actions, _id and _index never inside a document', async () => {
    const index = chan();
    const { rec } = await sinkRun({ index_template: index }, [{ _id: 'from-source', _index: 'elsewhere', a: 1 }]);
    expect(rec.status).toBe('success');
    const req = bulksTo(index)[0]!;
    expect(req.headers['content-type']).toBe('application/vnd.elasticsearch+x-ndjson; compatible-with=8');
    expect(req.body).toBe(`{"index":{"_index":"${index}"}}\n{"a":1}\n`);
    expect(peer.documents(index).map((d) => d._source)).toEqual([{ a: 1 }]);
  });
});

describe('elasticsearch sink: index names, ids, pipeline', () => {
  it('index_template tokens: {pipeline} lower-cased, the run start for {timestamp} {YYYY} {MM} {DD}', async () => {
    const { rec } = await sinkRun({ index_template: 'tok-{pipeline}-{YYYY}.{MM}.{DD}-{timestamp}' }, recs(3), {}, { name: 'ES-Tokens' });
    const start = new Date(rec.started_at);
    const iso = start.toISOString();
    const stamp = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}t${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}z`;
    const expected = `tok-es-tokens-${iso.slice(0, 4)}.${iso.slice(5, 7)}.${iso.slice(8, 10)}-${stamp}`;
    expect(peer.documents(expected)).toHaveLength(3);
    expect(expandIndex('a-{YYYY}{MM}{DD}', 'P', new Date('2026-03-04T05:06:07Z'))).toBe('a-20260304');
  });

  it('timestamp_field: each record goes to the index of its own date; one without a time is dead-lettered', async () => {
    const p = chan();
    const input = [
      { seq: 0, ts: '2026-01-31T23:59:59Z' },
      { seq: 1, ts: '2026-02-01T00:00:00+01:00' }, // 2026-01-31 in UTC
      { seq: 2, ts: 1772323200000 }, // epoch ms: 2026-03-01
      { seq: 3, ts: 'yesterday' },
      { seq: 4 },
    ];
    const { rec, dead } = await sinkRun({ index_template: `${p}-{YYYY}.{MM}.{DD}`, timestamp_field: 'ts' }, input, {}, { dlq: true });
    expect(rec.records_out).toBe(3);
    expect(peer.documents(`${p}-2026.01.31`).map((d) => d._source.seq)).toEqual([0, 1]);
    expect(peer.documents(`${p}-2026.03.01`).map((d) => d._source.seq)).toEqual([2]);
    expect(dead.map((d) => [d.record.seq, d._error])).toEqual([
      [3, `sinks[0] (elasticsearch): timestamp_field 'ts' is not a time: "yesterday": no index name for the record`],
      [4, "sinks[0] (elasticsearch): timestamp_field 'ts' is missing: no index name for the record"],
    ]);
  });

  it('id_field: a write whose answer was lost is sent again and overwrites (no duplicate); without it, a duplicate', async () => {
    const index = chan();
    peer.loseAnswers(1);
    const { rec, states } = await sinkRun(
      { index_template: index, id_field: 'meta.key', retry_count: 2, retry_delay_seconds: 0.01 },
      recs(5, (i) => ({ meta: { key: `k${i}` } })),
    );
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(bulksTo(index)).toHaveLength(2);
    const docs = peer.documents(index);
    expect(docs.map((d) => [d._id, d._version])).toEqual([0, 1, 2, 3, 4].map((i) => [`k${i}`, 2]));
    expect(states).toEqual(['connecting', 'disconnected', 'connecting', 'connected']);

    const plain = chan();
    peer.loseAnswers(1);
    await sinkRun({ index_template: plain, retry_count: 2, retry_delay_seconds: 0.01 }, recs(5));
    expect(
      checkSequence(
        peer.documents(plain).map((d) => d._source),
        5,
      ),
    ).toEqual({ missing: [], duplicates: 5 });
  });

  it('id_field: a record without the field is dead-lettered; numbers are ids too', async () => {
    const index = chan();
    const { rec, dead } = await sinkRun({ index_template: index, id_field: 'id' }, [{ id: 7 }, { id: '8' }, { other: 1 }, { id: { a: 1 } }], {}, { dlq: true });
    expect(rec.records_out).toBe(2);
    expect(peer.documents(index).map((d) => d._id)).toEqual(['7', '8']);
    expect(dead.map((d) => d._error)).toEqual([
      "sinks[0] (elasticsearch): id_field 'id' is missing or empty",
      "sinks[0] (elasticsearch): id_field 'id' is not a string or number (object)",
    ]);
  });

  it('pipeline: sent as the _bulk pipeline parameter, documents go through it', async () => {
    const index = chan();
    peer.addPipeline('enrich-pm');
    const { rec } = await sinkRun({ index_template: index, pipeline: 'enrich-pm' }, recs(3));
    expect(rec.status).toBe('success');
    expect(bulksTo(index)[0]!.query.get('pipeline')).toBe('enrich-pm');
    expect(peer.documents(index).map((d) => d.pipeline)).toEqual(['enrich-pm', 'enrich-pm', 'enrich-pm']);
    expect(await testConnector('sink', { type: 'elasticsearch', ...auth(), index_template: index, pipeline: 'enrich-pm' } as never)).toMatchObject({
      ok: true,
    });
  });

  it('an unknown pipeline fails the write at once (not retried, nothing indexed), and test() says so', async () => {
    const index = chan();
    const { rec } = await sinkRun({ index_template: index, pipeline: 'no-such-pipeline', retry_count: 3, retry_delay_seconds: 0.01 }, recs(4));
    expect(rec.records_out).toBe(0);
    expect(rec.errors.join('\n')).toMatch(
      /elasticsearch: ingest pipeline 'no-such-pipeline' does not exist \(pipeline with id \[no-such-pipeline\] does not exist\); create it or correct pipeline/,
    );
    expect(bulksTo(index)).toHaveLength(1);
    expect(peer.documents(index)).toEqual([]);
    const t = await testConnector('sink', { type: 'elasticsearch', ...auth(), index_template: index, pipeline: 'no-such-pipeline' } as never);
    expect(t.error).toMatch(/^elasticsearch: ingest pipeline 'no-such-pipeline' does not exist on http:\/\/127\.0\.0\.1:\d+; create it or correct pipeline$/);
  });
});

describe('elasticsearch: authentication and the server', () => {
  it('sink: a wrong password is a 401, not retried, without the password in any message', async () => {
    const index = chan();
    const { rec } = await sinkRun({ index_template: index, password: 'wrong-pass-123', retry_count: 3, retry_delay_seconds: 0.01 }, recs(3));
    expect(rec.records_out).toBe(0);
    const text = rec.errors.join('\n');
    expect(text).toMatch(
      /elasticsearch: POST _bulk to http:\/\/127\.0\.0\.1:\d+: 401 Unauthorized \(the server refused the credentials: check username and password\): security_exception: unable to authenticate user \[svc\] for REST request \[\/_bulk\]/,
    );
    expect(text).not.toContain('wrong-pass-123');
    expect(
      peer.requests.filter(
        (r) => r.path === '/_bulk' && r.status === 401 && r.headers.authorization === `Basic ${Buffer.from('svc:wrong-pass-123').toString('base64')}`,
      ),
    ).toHaveLength(1);
  });

  it('source: a wrong password fails the run with the 401; no credentials at all is refused too', async () => {
    const index = chan();
    peer.put(index, recs(3));
    const bad = await sourceRun({ index, password: 'wrong-pass-456' });
    expect(bad.rec.status).toBe('failed');
    expect(bad.rec.error).toMatch(
      /^elasticsearch: search '.+' on http:\/\/127\.0\.0\.1:\d+: 401 Unauthorized \(the server refused the credentials: check username and password\)/,
    );
    expect(bad.rec.error).not.toContain('wrong-pass-456');
    const none = await testConnector('source', { type: 'elasticsearch', hosts: [peer.url], index } as never);
    expect(none.error).toMatch(/401 Unauthorized .*missing authentication credentials for REST request/);
  });

  it('an OpenSearch server is refused: test() by the product check, a write by its content type; not retried', async () => {
    const os = await startSearchPeer({ flavor: 'opensearch' });
    try {
      const index = chan();
      const { rec } = await sinkRun({ index_template: index, hosts: [os.url], retry_count: 2, retry_delay_seconds: 0.01 }, recs(2));
      expect(rec.records_out).toBe(0);
      expect(rec.errors.join('\n')).toMatch(
        /406 Not Acceptable \(the server does not take the content type of the Elasticsearch 8 client: .*for OpenSearch use the opensearch sink\): Content-Type header \[application\/vnd\.elasticsearch\+x-ndjson; compatible-with=8\] is not supported/,
      );
      expect(os.requests.filter((r) => r.path === '/_bulk')).toHaveLength(1);
      const t = await testConnector('sink', { type: 'elasticsearch', hosts: [os.url], index_template: index } as never);
      expect(t.error).toMatch(/GET \/ on http:\/\/127\.0\.0\.1:\d+: the server is not Elasticsearch/);
    } finally {
      await os.close();
    }
  });

  it('sink: a user without write privilege is a 403, not retried', async () => {
    const guarded = await startSearchPeer({ users: { reader: 'reader-pass' }, readOnly: ['reader'] });
    try {
      const { rec } = await sinkRun(
        { index_template: chan(), hosts: [guarded.url], username: 'reader', password: 'reader-pass', retry_count: 3, retry_delay_seconds: 0.01 },
        recs(2),
      );
      expect(rec.records_out).toBe(0);
      expect(rec.errors.join('\n')).toMatch(
        /403 Forbidden \(the user lacks a privilege this needs: grant it, or use another user\): security_exception: action \[indices:data\/write\/bulk\] is unauthorized for user \[reader\]/,
      );
      expect(guarded.requests.filter((r) => r.path === '/_bulk')).toHaveLength(1);
    } finally {
      await guarded.close();
    }
  });

  it('https with a self-signed certificate: refused by default, read with verify_ssl: false (our extension)', async () => {
    const tls = await startSearchPeer({ users: { [USER]: PASSWORD }, tls: await selfSignedCert(tempDir('svc-es-cert-')) });
    try {
      const index = chan();
      tls.put(index, recs(3));
      const refused = await sourceRun({ index, hosts: [tls.url] });
      expect(refused.rec.error).toMatch(
        /^elasticsearch: search '.+' on https:\/\/127\.0\.0\.1:\d+: the server certificate is not trusted \(.+\); give the cluster a certificate from a trusted CA, or set verify_ssl: false/,
      );
      const ok = await sourceRun({ index, hosts: [tls.url], verify_ssl: false });
      expect(ok.records.map((r) => r.seq)).toEqual([0, 1, 2]);
    } finally {
      await tls.close();
    }
  }, 60_000);

  it('an unsecured cluster needs no username', async () => {
    const open = await startSearchPeer();
    try {
      const index = chan();
      const { rec } = await sinkRun({ index_template: index, hosts: [open.url], username: undefined, password: undefined }, recs(2));
      expect(rec.status).toBe('success');
      expect(open.requests.find((r) => r.path === '/_bulk')!.headers.authorization).toBeUndefined();
      expect(open.documents(index)).toHaveLength(2);
    } finally {
      await open.close();
    }
  });
});

describe('elasticsearch source', () => {
  const scrollRequests = (from: number) => peer.requests.slice(from).filter((r) => r.path.includes('_search'));

  it('scrolls through every hit, batch_size a page, and clears the scroll at the end', async () => {
    const index = chan();
    peer.put(index, recs(250));
    const mark = peer.requests.length;
    const { rec, records, states } = await sourceRun({ index, batch_size: 100, scroll: '30s' });
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(records.map((r) => r.seq)).toEqual(recs(250).map((r) => r.seq));
    const seen = scrollRequests(mark);
    expect(seen.map((r) => `${r.method} ${r.path}`)).toEqual([
      `POST /${index}/_search`,
      'POST /_search/scroll',
      'POST /_search/scroll',
      'DELETE /_search/scroll',
    ]);
    expect(seen[0]!.query.get('scroll')).toBe('30s');
    expect(JSON.parse(seen[0]!.body)).toEqual({ size: 100, sort: ['_doc'], query: { match_all: {} } });
    expect(JSON.parse(seen[1]!.body)).toMatchObject({ scroll: '30s' });
    expect(seen[3]!.status).toBe(200);
    expect(peer.openScrolls()).toBe(0);
    expect(states).toEqual(['connecting', 'connected']);
  });

  it('each hit is a record: its _source with _index and _id added (json or ndjson serializer_in)', async () => {
    const index = chan();
    peer.put(index, [{ a: 1, nested: { b: 'x' } }]);
    const id = peer.documents(index)[0]!._id;
    const json = await sourceRun({ index });
    expect(json.records).toEqual([{ a: 1, nested: { b: 'x' }, _index: index, _id: id }]);
    const nd = await sourceRun({ index }, { serializer_in: { type: 'ndjson' } });
    expect(nd.records).toEqual(json.records);
  });

  it('clears the scroll when the run stops early', async () => {
    const index = chan();
    peer.put(index, recs(500));
    const mark = peer.requests.length;
    const stop = new AbortController();
    const out = tempDir('svc-es-out-');
    // One record a second downstream: the run is stopped after the first page arrives.
    const running = sourceRun(
      { index, batch_size: 50 },
      { rate_limit_rps: 2, record_chunk_size: 10, sinks: [{ type: 'local', path: out, filename_template: 'o.ndjson' }] },
      stop.signal,
    );
    await until(() => outputRecords(out).length > 0, 10_000, 'the first records');
    stop.abort();
    const { rec } = await running;
    expect(rec.records_in).toBeLessThan(500);
    const seen = scrollRequests(mark);
    expect(seen.at(-1)!.method).toBe('DELETE');
    expect(peer.openScrolls()).toBe(0);
  });

  it('query: only the matching documents; an unknown query type fails with the server parsing error', async () => {
    const index = chan();
    peer.put(
      index,
      recs(30, (i) => ({ kind: i % 2 ? 'odd' : 'even' })),
    );
    const { records } = await sourceRun({ index, query: { bool: { filter: [{ term: { kind: 'odd' } }, { range: { seq: { gte: 10, lt: 20 } } }] } } });
    expect(records.map((r) => r.seq)).toEqual([11, 13, 15, 17, 19]);
    const bad = await sourceRun({ index, query: { no_such_query: {} } });
    expect(bad.rec.status).toBe('failed');
    expect(bad.rec.error).toMatch(/400 Bad Request: parsing_exception: unknown query \[no_such_query\]/);
  });

  it('an unknown index fails the run and test() with a clear message', async () => {
    const index = chan();
    const { rec, states } = await sourceRun({ index });
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(
      new RegExp(`^elasticsearch: search '${index}' on http://127\\.0\\.0\\.1:\\d+: index '${index}' does not exist on http://127\\.0\\.0\\.1:\\d+$`),
    );
    expect(states).toEqual(['connecting', 'connected']);
    const t = await testConnector('source', { type: 'elasticsearch', ...auth(), index } as never);
    expect(t.error).toMatch(/index '.+' does not exist/);
  });

  it('a scroll that expired between pages fails the run and says what to change', async () => {
    const index = chan();
    peer.put(index, recs(30));
    const { rec } = await sourceRun({ index, batch_size: 10, scroll: '1nanos' });
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(
      /scroll page 2 of '.+': the scroll expired before the next page was asked for \(scroll: 1nanos\); raise scroll or lower batch_size \(.*404 Not Found: search_phase_execution_exception: all shards failed/,
    );
    expect(peer.openScrolls()).toBe(0);
  });

  it('a refused connection fails the run with the address', async () => {
    const { rec, states } = await sourceRun({ index: 'x', hosts: ['http://127.0.0.1:1'] });
    expect(rec.status).toBe('failed');
    expect(rec.error).toBe("elasticsearch: search 'x' on http://127.0.0.1:1: connection refused (nothing listens there)");
    expect(states).toEqual(['connecting', 'disconnected']);
  });

  it('copies an index into another: the source ids kept with id_field _id, _index and _id not inside the documents', async () => {
    const from = chan();
    const to = chan();
    peer.put(from, recs(5));
    const ids = peer.documents(from).map((d) => d._id);
    const config = loadPipeline({
      name: 'es-copy',
      schedule: { type: 'manual' },
      source: { type: 'elasticsearch', ...auth(), index: from },
      sinks: [{ type: 'elasticsearch', ...auth(), index_template: to, id_field: '_id' }],
    });
    const rec = await runPipeline(config, { log: silentLogger, processed: new MemoryProcessedFiles() });
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(peer.documents(to).map((d) => [d._id, d._source])).toEqual(peer.documents(from).map((d, i) => [ids[i], d._source]));
  });
});

describe('elasticsearch: lint', () => {
  it('index_template: unknown tokens, uppercase, forbidden characters', () => {
    expect(lintIndexTemplate('logs-{YYYY}.{MM}', 'index_template')).toEqual([]);
    expect(lintIndexTemplate('Logs-{date}', 'index_template').map((i) => i.message)).toEqual([
      'unknown token {date}; known tokens: {pipeline}, {timestamp}, {YYYY}, {MM}, {DD}',
      'index names are lowercase',
    ]);
    expect(lintIndexTemplate('_a b', 'index_template').map((i) => i.message)).toEqual([
      `index names cannot contain ' ' (nor \\ / * ? " < > | , # : or a space)`,
      "index names cannot start with '-', '_' or '+'",
    ]);
    expect(diagnostics('sink', { index_template: 'x-{day}' }).join('\n')).toMatch(/pipeline\.sinks\[0\]\.index_template.*unknown token \{day\}/);
  });

  it('timestamp_field needs a date token in the template', () => {
    expect(diagnostics('sink', { index_template: 'x-{pipeline}', timestamp_field: 'ts' }).join('\n')).toMatch(
      /sinks\[0\]\.timestamp_field.*only the date tokens .* index_template has none/,
    );
    expect(diagnostics('sink', { index_template: 'x-{YYYY}', timestamp_field: 'ts' })).toEqual([]);
  });

  it('username and password go together; no credentials in a host URL', () => {
    expect(diagnostics('sink', { index_template: 'x', username: 'u' }).join('\n')).toMatch(/sinks\[0\]\.password.*username needs a password/);
    expect(diagnostics('source', { index: 'x', hosts: ['http://u:p@h:9200'] }).join('\n')).toMatch(/source\.hosts\[0\].*credentials in the URL are not used/);
  });

  it('query: one query type, without an outer query level; scroll is a time value', () => {
    expect(diagnostics('source', { index: 'x', query: { query: { match_all: {} } } }).join('\n')).toMatch(/remove the outer `query:` level/);
    expect(diagnostics('source', { index: 'x', query: { term: { a: 1 }, match: { b: 2 } } }).join('\n')).toMatch(
      /exactly one query type .* got term, match; combine several with bool/,
    );
    expect(diagnostics('source', { index: 'x', scroll: '2 minutes' }).join('\n')).toMatch(/source\.scroll/);
    expect(diagnostics('source', { index: 'x', query: { range: { ts: { gte: 'now-1d' } } }, scroll: '90s' })).toEqual([]);
  });
});
