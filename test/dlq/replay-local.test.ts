// Dead letters end to end on a real daemon with a `local` DLQ: a pipeline whose records fail at
// each stage, the listing (filters, paging, marks) and replays (edits, a fixed sink, a changed
// serializer_in), each a run of its own that is counted and marks only what it delivered.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TestDaemon } from '../helpers/daemon.js';
import { expectError, finishedRun, q, readNdjson, register, webhookYaml, workArea } from '../api/_helpers.js';
import { testDaemon } from '../helpers/daemon.js';
import { until } from '../helpers/wait.js';
import { lines, pipelineYaml, setUp } from './_local.js';

const replay = async (d: TestDaemon, body: object) => {
  const r = await d.call('POST', '/api/pipelines/dl/dlq/replay', { body });
  expect(r.status, r.text).toBe(200);
  return r.body;
};

describe('dead letters of a local DLQ', () => {
  it('lists the envelopes of each stage with ids, filters, paging and the total', async () => {
    const { d, root, first } = await setUp();
    expect(first).toMatchObject({ records_in: 4, dlq_count: 3 });
    const all = await d.call('GET', '/api/pipelines/dl/dlq');
    expect(all.status, all.text).toBe(200);
    expect(all.headers.get('x-total-count')).toBe('3');
    expect(all.body.map((e: any) => e.envelope._stage).sort()).toEqual(['parse', 'sink', 'transform']);
    for (const e of all.body) {
      expect(e.id).toMatch(/^[0-9a-f]{32}$/);
      expect(e.location).toMatch(/^dlq_.*\.ndjson#\d$/);
      expect(e).toMatchObject({ replayed: false, replayed_at: null, replayed_run_id: null });
      expect(e.envelope).toMatchObject({ _pipeline: 'dl', _run_id: first.run_id });
    }
    const parse = all.body.find((e: any) => e.envelope._stage === 'parse');
    expect(Buffer.from(parse.envelope.raw, 'base64').toString()).toBe('[1, 2]');
    expect(parse.envelope.record).toBeNull();
    // The same listing gives the same ids (content, not position).
    expect((await d.call('GET', '/api/pipelines/dl/dlq')).body.map((e: any) => e.id)).toEqual(all.body.map((e: any) => e.id));

    const byStage = await d.call('GET', '/api/pipelines/dl/dlq?stage=sink');
    expect(byStage.body).toHaveLength(1);
    expect(byStage.body[0].envelope.record).toMatchObject({ host: 'c' });
    expect(byStage.body[0].envelope._error).toMatch(/^sinks\[1\] \(local\)/);
    const byError = await d.call('GET', '/api/pipelines/dl/dlq?error=ADD_FIELD');
    expect(byError.body.map((e: any) => e.envelope.record.host)).toEqual(['a']);
    const page = await d.call('GET', '/api/pipelines/dl/dlq?limit=1&offset=1');
    expect(page.headers.get('x-total-count')).toBe('3');
    expect(page.body.map((e: any) => e.id)).toEqual([all.body[1].id]);
    const later = new Date(Date.now() + 60_000).toISOString();
    expect((await d.call('GET', `/api/pipelines/dl/dlq?since=${later}`)).body).toEqual([]);
    expect((await d.call('GET', `/api/pipelines/dl/dlq?until=${later}`)).body).toHaveLength(3);
    expectError(await d.call('GET', '/api/pipelines/dl/dlq?stage=write'), 422);
    expectError(await d.call('GET', '/api/pipelines/nope/dlq'), 404);
    // Stored items that are not envelopes are skipped and counted, not listed.
    writeFileSync(join(root, 'dlq', 'junk.ndjson'), '{"a": 1}\nnot json\n');
    const withJunk = await d.call('GET', '/api/pipelines/dl/dlq');
    expect(withJunk.headers.get('x-total-count')).toBe('3');
    expect(withJunk.headers.get('x-dlq-skipped')).toBe('2');
    const paths = (await d.call('GET', '/openapi.json')).body.paths;
    expect(Object.keys(paths)).toEqual(expect.arrayContaining(['/api/pipelines/{name}/dlq', '/api/pipelines/{name}/dlq/replay']));
  });

  it('replays each stage where it failed, counts the run, marks only what it delivered, and skips marked ones unless forced', async () => {
    const { d, root } = await setUp();
    const out = join(root, 'out', 'out.ndjson');
    expect(lines(out).map((r) => r.host)).toEqual(['b', 'c']);
    const idOf = async (stage: string) => (await d.call('GET', `/api/pipelines/dl/dlq?stage=${stage}`)).body[0].id as string;
    const [tId, sId, pId] = [await idOf('transform'), await idOf('sink'), await idOf('parse')];

    // transform: the record goes through the transforms again, after an edit that fixes it.
    const t = await replay(d, { ids: [tId], set: { octets: 'int(octets)' } });
    expect(t).toMatchObject({ status: 'success', records_in: 1, records_out: 1, replayed: [tId], failed: [], selected: 1 });
    expect(lines(out).at(-1)).toEqual({ host: 'a', octets: 10, next: 11 });
    const run = await finishedRun(d, t.run_id);
    expect(run).toMatchObject({ pipeline: 'dl', status: 'success', records_in: 1, records_out: 1, dlq_count: 0 });
    expect(run.errors[0]).toBe('replay of 1 dead letter (transform 1)');

    // sink: still refused -> not marked, counted as skipped, nothing new in the DLQ.
    const again = await replay(d, { stage: 'sink' });
    expect(again).toMatchObject({ status: 'success', records_in: 1, records_out: 0, records_skipped: 1, replayed: [] });
    expect(again.failed).toEqual([{ id: sId, error: expect.stringMatching(/^failed again: sinks\[0\] \(local\)/) }]);
    expect((await d.call('GET', `/api/pipelines/dl/dlq?stage=sink`)).body[0]).toMatchObject({ replayed: false });
    expect((await d.call('GET', '/api/pipelines/dl/dlq')).headers.get('x-total-count')).toBe('3');

    // The sink accepts now: the record goes to that sink only (sinks[0] had it already).
    rmSync(join(root, 'blocked', 'dir'));
    const s = await replay(d, { stage: 'sink' });
    expect(s).toMatchObject({ replayed: [sId], failed: [] });
    expect(lines(join(root, 'blocked', 'dir', 'c.ndjson'))).toEqual([{ host: 'c', octets: 7, route: 'blocked', next: 8 }]);
    expect(lines(out).map((r) => r.host)).toEqual(['b', 'c', 'a']);

    // parse: raw bytes go through serializer_in: refused under strict, taken once the pipeline is fixed.
    expect((await replay(d, { stage: 'parse' })).failed).toEqual([{ id: pId, error: expect.stringContaining('failed again') }]);
    const put = await d.call('PUT', '/api/pipelines/dl', { yaml: pipelineYaml(root, false) });
    expect(put.status, put.text).toBe(200);
    expect(await replay(d, { stage: 'parse' })).toMatchObject({ replayed: [pId], records_out: 1 });
    expect(lines(out).at(-1)).toEqual({ _value: [1, 2], next: 1 });

    // Everything is marked: a second replay replays nothing and starts no run.
    const listed = (await d.call('GET', '/api/pipelines/dl/dlq')).body;
    expect(listed.every((e: any) => e.replayed && e.replayed_run_id)).toBe(true);
    expect(listed.find((e: any) => e.id === tId).replayed_run_id).toBe(t.run_id);
    const none = await replay(d, {});
    expect(none).toMatchObject({ run_id: null, replayed: [], selected: 3 });
    expect(none.already_replayed.sort()).toEqual([tId, sId, pId].sort());
    expect((await d.call('GET', '/api/pipelines/dl/dlq?replayed=false')).body).toEqual([]);

    // force replays again, under a new run that the mark now names.
    const forced = await replay(d, { ids: [tId], force: true, set: { octets: 'int(octets)' } });
    expect(forced).toMatchObject({ replayed: [tId] });
    expect(forced.run_id).not.toBe(t.run_id);
    expect((await d.call('GET', '/api/pipelines/dl/dlq?stage=transform')).body[0].replayed_run_id).toBe(forced.run_id);
    expect(lines(out).filter((r) => r.host === 'a')).toHaveLength(2);

    // A deleted pipeline's marks go with it: registered again, its DLQ is unreplayed.
    expect((await d.call('DELETE', '/api/pipelines/dl')).status).toBe(204);
    await register(d, pipelineYaml(root, false));
    expect((await d.call('GET', '/api/pipelines/dl/dlq?replayed=false')).headers.get('x-total-count')).toBe('3');
  });

  it('reports a failed edit and an unknown id instead of dropping them; refuses bad edits and unreadable DLQs', async () => {
    const { d, root } = await setUp();
    const tId = (await d.call('GET', '/api/pipelines/dl/dlq?stage=transform')).body[0].id;
    const r = await replay(d, { ids: [tId, 'f'.repeat(32)], patch: [{ op: 'test', path: '/host', value: 'zz' }] });
    expect(r).toMatchObject({ run_id: null, replayed: [], unknown_ids: ['f'.repeat(32)] });
    expect(r.failed).toEqual([{ id: tId, error: expect.stringMatching(/^edit failed: patch\[0\] \(test \/host\): the value differs/) }]);
    const p = await replay(d, {
      ids: [tId],
      patch: [
        { op: 'replace', path: '/octets', value: 4 },
        { op: 'add', path: '/tags', value: ['x'] },
      ],
    });
    expect(p).toMatchObject({ replayed: [tId] });
    expect(lines(join(root, 'out', 'out.ndjson')).at(-1)).toEqual({ host: 'a', octets: 4, tags: ['x'], next: 5 });
    expect(expectError(await d.call('POST', '/api/pipelines/dl/dlq/replay', { body: { set: { x: 'octets +' } } }), 422)).toMatch(/^set: /);
    expectError(await d.call('POST', '/api/pipelines/dl/dlq/replay', { body: { patch: [{ op: 'nope', path: '/a' }] } }), 422);

    const other = (dlq: string) =>
      [
        'version: "1"',
        'pipeline:',
        '  name: other',
        '  schedule: { type: manual }',
        `  source: { type: local, path: ${q(root)} }`,
        '  serializer_in: { type: ndjson }',
        `  sinks: [{ type: local, path: ${q(root)} }]`,
        dlq,
      ].join('\n');
    await register(d, other(''));
    expect(expectError(await d.call('GET', '/api/pipelines/other/dlq'), 409)).toMatch(/has no dlq sink/);
    expect((await d.call('PUT', '/api/pipelines/other', { yaml: other('  dlq: { type: mqtt, host: 127.0.0.1, topic: dead }') })).status).toBe(200);
    expect(expectError(await d.call('GET', '/api/pipelines/other/dlq'), 409)).toMatch(
      /'mqtt' sink, which svc cannot read back.*DLQ sinks that can be read: .*local/,
    );
    expect(
      (await d.call('PUT', '/api/pipelines/other', { yaml: other(`  dlq: { type: local, path: ${q(root)}, serializer_out: { type: csv } }`) })).status,
    ).toBe(200);
    expect(expectError(await d.call('GET', '/api/pipelines/other/dlq'), 409)).toMatch(/serializer_out 'csv'/);
    // The DLQ's peer fails the read: 502, its secrets masked.
    expect(
      (
        await d.call('PUT', '/api/pipelines/other', {
          yaml: other('  dlq: { type: sql, connection_url: "postgresql://svc:s3cret-pw@127.0.0.1:1/db", table: dead }'),
        })
      ).status,
    ).toBe(200);
    const down = expectError(await d.call('GET', '/api/pipelines/other/dlq'), 502);
    expect(down).toMatch(/^reading the DLQ of pipeline 'other' \(sql\) failed: .*127\.0\.0\.1:1/);
    expect(down).not.toContain('s3cret-pw');
    // A DLQ shared with another pipeline: each lists its own envelopes only.
    expect((await d.call('PUT', '/api/pipelines/other', { yaml: other(`  dlq: { type: local, path: ${q(join(root, 'dlq'))} }`) })).status).toBe(200);
    expect((await d.call('GET', '/api/pipelines/other/dlq')).body).toEqual([]);
    expect((await d.call('GET', '/api/pipelines/dl/dlq')).headers.get('x-total-count')).toBe('3');
  });

  it('replays a stream only while it is stopped, and leaves it stopped', async () => {
    const d = await testDaemon();
    const w = workArea();
    const dlqDir = join(w.root, 'dlq');
    const extra = ['on_error: dlq', 'transforms: [{ type: add_field, fields: { next: "id + 1" } }]', `dlq: { type: local, path: ${q(dlqDir)} }`];
    await register(d, webhookYaml('hook', { path: 'h', outDir: w.outDir, extra }));
    for (const body of [{ id: 1 }, { id: 'two' }]) expect((await d.call('POST', '/webhooks/h', { body })).status).toBe(202);
    await until(async () => (await d.call('GET', '/api/pipelines/hook/dlq')).body?.length === 1);
    const refused = await d.call('POST', '/api/pipelines/hook/dlq/replay', { body: { set: { id: '2' } } });
    expect(expectError(refused, 409)).toMatch(/has a run in progress .*POST \/api\/pipelines\/hook\/stop first/);
    expect((await d.call('POST', '/api/pipelines/hook/stop')).status).toBe(200);
    const r = await d.call('POST', '/api/pipelines/hook/dlq/replay', { body: { set: { id: '2' } } });
    expect(r.body, r.text).toMatchObject({ status: 'success', records_in: 1, records_out: 1, failed: [] });
    expect(readNdjson(w.outFile)).toEqual([
      { id: 1, next: 2 },
      { id: 2, next: 3 },
    ]);
    expect((await d.call('GET', '/api/pipelines/hook')).body).toMatchObject({ status: 'stopped', active_run_id: null });
    expect((await d.call('GET', `/api/runs?pipeline=hook`)).body.map((x: any) => x.run_id)).toContain(r.body.run_id);
  });
});
