// The opensearch sink against the wire-level test peer in its OpenSearch flavour (test/connectors/
// peers/elasticsearch.ts; no OpenSearch server can run here): the shared conformance suite, then
// what it does not cover. The _bulk write is the elasticsearch sink's (connector-runtime/search-bulk.ts,
// tested in depth in elasticsearch.test.ts); here: OpenSearch's own answers (mapper_parsing_exception,
// rejected_execution_exception, the text 401), its client's content type, the index tokens,
// id_field, and verify_ssl against an https peer with a self-signed certificate.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { tempDir } from '../helpers/fs.js';
import { checkSequence, conformance, uniqueChannel, type Cfg, type Rec } from './conformance.js';
import { loadPipeline, outputRecords } from './helpers.js';
import { selfSignedCert } from './peers/http.js';
import { opensearchPeer, PASSWORD, startSearchPeer, USER, type SearchPeer } from './peers/elasticsearch.js';

conformance(opensearchPeer);

let peer: SearchPeer;
beforeAll(async () => {
  peer = await startSearchPeer({ flavor: 'opensearch', users: { [USER]: PASSWORD } });
});
afterAll(() => peer.close());

const chan = () => uniqueChannel('os');
const recs = (n: number, extra: (i: number) => Rec = () => ({})) => Array.from({ length: n }, (_, i) => ({ seq: i, ...extra(i) }));
const bulksTo = (p: SearchPeer, index: string) => p.requests.filter((r) => r.path === '/_bulk' && r.body.includes(`"_index":"${index}`));

async function sinkRun(sink: Cfg, records: Rec[], opts: { dlq?: boolean; name?: string; target?: SearchPeer } = {}) {
  const dir = tempDir('svc-os-in-');
  mkdirSync(join(dir, 'in'));
  writeFileSync(join(dir, 'in', 'r.ndjson'), records.map((r) => JSON.stringify(r) + '\n').join(''));
  const dlqDir = tempDir('svc-os-dlq-');
  const config = loadPipeline({
    name: opts.name ?? 'os-sink',
    schedule: { type: 'manual' },
    source: { type: 'local', path: join(dir, 'in') },
    serializer_in: { type: 'ndjson' },
    sinks: [{ type: 'opensearch', hosts: [(opts.target ?? peer).url], username: USER, password: PASSWORD, ...sink }],
    ...(opts.dlq ? { on_error: 'dlq', dlq: { type: 'local', path: dlqDir, filename_template: 'dlq.ndjson' } } : {}),
  });
  const rec = await runPipeline(config, { log: silentLogger, processed: new MemoryProcessedFiles() });
  return { rec, dead: outputRecords(dlqDir) as unknown as { _stage: string; _error: string; record: Rec }[] };
}

describe('opensearch sink', () => {
  it('a document the mapping refuses goes to the DLQ with mapper_parsing_exception; the others land', async () => {
    const index = chan();
    const input = recs(6, (i) => ({ up: i === 2 ? 'maybe' : i % 2 === 0 }));
    const { rec, dead } = await sinkRun({ index }, input, { dlq: true });
    expect(rec.records_out).toBe(5);
    expect(peer.documents(index).map((d) => d._source.seq)).toEqual([0, 1, 3, 4, 5]);
    expect(dead.map((d) => d.record)).toEqual([input[2]]);
    expect(dead[0]!._error).toMatch(
      /^sinks\[0\] \(opensearch\): 400 mapper_parsing_exception: failed to parse field \[up\] of type \[boolean\] in document with id '[\w-]+'\. Preview of field's value: 'maybe' \(caused by illegal_argument_exception: Failed to parse value \[maybe\] as only \[true\] or \[false\] are allowed\.\)/,
    );
  });

  it('429 items (rejected_execution_exception) are written again and land', async () => {
    const index = chan();
    peer.failItems({ status: 429, when: (d, ix) => ix === index && (d.seq as number) < 3, times: 2 });
    const { rec } = await sinkRun({ index, retry_count: 3, retry_delay_seconds: 0.02 }, recs(10));
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(
      checkSequence(
        peer.documents(index).map((d) => d._source),
        10,
      ),
    ).toEqual({ missing: [], duplicates: 0 });
    expect(bulksTo(peer, index).map((r) => r.body.split('\n').filter(Boolean).length / 2)).toEqual([10, 3, 3]);
  });

  it('sends application/x-ndjson, as the OpenSearch client does', async () => {
    const index = chan();
    await sinkRun({ index }, recs(1));
    expect(bulksTo(peer, index)[0]!.headers['content-type']).toBe('application/x-ndjson');
  });

  it('index tokens: {pipeline} and the run date, or the record date with timestamp_field', async () => {
    const { rec } = await sinkRun({ index: '{pipeline}-{YYYY}.{MM}.{DD}' }, recs(2), { name: 'OS-Daily' });
    const d = rec.started_at.slice(0, 10).split('-');
    expect(peer.documents(`os-daily-${d[0]}.${d[1]}.${d[2]}`)).toHaveLength(2);
    const p = chan();
    await sinkRun({ index: `${p}-{YYYY}{MM}`, timestamp_field: 'at' }, [{ at: '2025-12-31T23:00:00-02:00' }, { at: 1767225600 }]);
    expect(peer.documents(`${p}-202601`)).toHaveLength(2);
  });

  it('id_field: a write whose answer was lost overwrites on the retry', async () => {
    const index = chan();
    peer.loseAnswers(1);
    const { rec } = await sinkRun(
      { index, id_field: 'key', retry_count: 2, retry_delay_seconds: 0.01 },
      recs(4, (i) => ({ key: `cell-${i}` })),
    );
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(peer.documents(index).map((x) => [x._id, x._version])).toEqual([0, 1, 2, 3].map((i) => [`cell-${i}`, 2]));
  });

  it('a wrong password: 401 from the security plugin, not retried, the password in no message', async () => {
    const index = chan();
    const { rec } = await sinkRun({ index, password: 'wrong-os-pass', retry_count: 3, retry_delay_seconds: 0.01 }, recs(2));
    expect(rec.records_out).toBe(0);
    const text = rec.errors.join('\n');
    expect(text).toMatch(
      /opensearch: POST _bulk to http:\/\/127\.0\.0\.1:\d+: 401 Unauthorized \(the server refused the credentials: check username and password\): Unauthorized/,
    );
    expect(text).not.toContain('wrong-os-pass');
    expect(peer.requests.filter((r) => r.path === '/_bulk' && r.status === 401)).toHaveLength(1);
  });
});

describe('opensearch sink over https (self-signed certificate)', () => {
  let tls: SearchPeer;
  beforeAll(async () => {
    tls = await startSearchPeer({ flavor: 'opensearch', users: { [USER]: PASSWORD }, tls: await selfSignedCert(tempDir('svc-os-cert-')) });
  }, 60_000);
  afterAll(() => tls.close());

  it('verify_ssl true (the default) refuses the certificate with a message that says what to do', async () => {
    // Node 24 adds its own hint inside the parentheses (--use-system-ca).
    const index = chan();
    const t = await testConnector('sink', { type: 'opensearch', hosts: [tls.url], username: USER, password: PASSWORD, index } as never);
    expect(t.error).toMatch(
      /^opensearch: GET \/ on https:\/\/127\.0\.0\.1:\d+: the server certificate is not trusted \(self-signed certificate[^)]*\); give the cluster a certificate from a trusted CA, or set verify_ssl: false/,
    );
    const { rec } = await sinkRun({ index }, recs(2), { target: tls });
    expect(rec.records_out).toBe(0);
    expect(rec.errors.join('\n')).toMatch(/the server certificate is not trusted/);
  });

  it('verify_ssl false accepts it', async () => {
    const index = chan();
    expect(
      await testConnector('sink', { type: 'opensearch', hosts: [tls.url], username: USER, password: PASSWORD, index, verify_ssl: false } as never),
    ).toMatchObject({ ok: true });
    const { rec } = await sinkRun({ index, verify_ssl: false }, recs(3), { target: tls });
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(tls.documents(index)).toHaveLength(3);
  });
});
