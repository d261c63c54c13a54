// Honest run figures (issue 29): the records a filter drops are in the run record (API, CSV, `svc
// runs`) and in svc_records_filtered_total; a run with dead letters says so by its dlq_count, and its
// dead letters are listed by run_id.
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { svc } from '../helpers/cli.js';
import { testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { until } from '../helpers/wait.js';
import { finishedRun, localYaml, readNdjson, register, RUN_FIELDS, webhookYaml, workArea, writeInput } from './_helpers.js';

async function runOnce(d: TestDaemon, name: string) {
  const t = await d.call('POST', `/api/pipelines/${name}/run`);
  expect(t.status, t.text).toBe(202);
  return finishedRun(d, t.body.run_id);
}

const metric = (text: string, name: string, pipeline: string) => {
  const m = new RegExp(`^${name}\\{pipeline="${pipeline}"\\} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
};

describe('records_filtered in the run record and the metrics', () => {
  for (const threads of [1, 2]) {
    it(`a filter that drops 29 of 200: 200 in, 171 out, 29 filtered, in the API, the CSV, svc runs and /metrics (thread_workers ${threads})`, async () => {
      const d = await testDaemon();
      const w = workArea(200);
      const name = `interfaces-up-${threads}`;
      await register(d, localYaml(name, { ...w, extra: [`thread_workers: ${threads}`, 'transforms:', '  - { type: filter, expression: "i % 7 != 0" }'] }));
      const run = await runOnce(d, name);
      expect(run).toMatchObject({ status: 'success', records_in: 200, records_out: 171, records_filtered: 29, records_skipped: 0, dlq_count: 0 });
      expect(readNdjson(w.outFile)).toHaveLength(171);
      expect(run.records_out + run.records_filtered + run.records_skipped).toBe(run.records_in);

      const list = await d.call('GET', `/api/runs?pipeline=${name}`);
      expect(list.body).toEqual([run]);
      expect(Object.keys(run).sort()).toEqual([...RUN_FIELDS].sort());

      const csv = await d.call('GET', `/api/runs?pipeline=${name}&format=csv`);
      const [header, row] = parse(csv.text) as string[][];
      expect(header).toEqual(RUN_FIELDS);
      expect(row![header!.indexOf('records_filtered')]).toBe('29');

      const m = await d.call('GET', '/metrics');
      expect(m.text).toContain('# TYPE svc_records_filtered_total counter');
      expect(metric(m.text, 'svc_records_filtered_total', name)).toBe(29);
      expect(metric(m.text, 'svc_records_in_total', name)).toBe(200);
      expect(metric(m.text, 'svc_records_out_total', name)).toBe(171);

      // svc runs shows the column.
      const cli = await svc(['runs', '--pipeline', name], { SVC_API_URL: d.url });
      expect(cli.code, cli.stderr).toBe(0);
      const [head, line] = cli.stdout.trim().split('\n');
      const cols = head!.split(/\s+/);
      expect(cols).toContain('RECORDS_FILTERED');
      expect(line!.split(/\s+/)[cols.indexOf('RECORDS_FILTERED')]).toBe('29');

      // A second run (the input stays where it is, and one more file: i = 0..13 drops 0 and 7) adds to the counter.
      writeInput(w.inDir, 'b.ndjson', 14);
      const again = await runOnce(d, name);
      expect(again).toMatchObject({ records_in: 214, records_out: 183, records_filtered: 31 });
      expect(metric((await d.call('GET', '/metrics')).text, 'svc_records_filtered_total', name)).toBe(60);
    });
  }

  it('a stream counts its drops in the metric as it goes, and its run record when stopped', async () => {
    const d = await testDaemon();
    const w = workArea(0);
    await register(
      d,
      webhookYaml('hooked', { path: 'alarms', outDir: w.outDir, extra: ['transforms:', '  - { type: filter, expression: "severity != \'info\'" }'] }),
    );
    const sent = ['major', 'info', 'minor', 'info', 'info', 'critical'];
    for (const [i, severity] of sent.entries()) expect((await d.call('POST', '/webhooks/alarms', { body: { i, severity } })).status).toBe(202);
    await until(() => readNdjson(w.outFile).length === 3, 15_000, 'the three alarms that are not info');
    await until(
      async () => metric((await d.call('GET', '/metrics')).text, 'svc_records_filtered_total', 'hooked') === 3,
      15_000,
      'three filtered in the metric',
    );
    const runId = (await d.call('GET', '/api/runs?pipeline=hooked')).body[0].run_id as string;
    expect((await d.call('POST', '/api/pipelines/hooked/stop')).status).toBe(200);
    const run = await finishedRun(d, runId);
    expect(run).toMatchObject({ records_in: 6, records_out: 3, records_filtered: 3, records_skipped: 0 });
  });
});

describe('a run with dead letters', () => {
  it('has its dlq_count in the list, and its dead letters are listed by its run_id', async () => {
    const d = await testDaemon();
    const w = workArea(0);
    writeInput(w.inDir, 'a.ndjson', 4);
    const dlqDir = join(w.root, 'dlq');
    await register(
      d,
      localYaml('halfway', {
        ...w,
        extra: [
          'on_error: dlq',
          'transforms:',
          '  - { type: filter, expression: "i != 0" }',
          '  - { type: add_field, fields: { n: "host + 1" } }',
          `dlq: { type: local, path: ${JSON.stringify(dlqDir)}, filename_template: "dlq_{timestamp}.ndjson" }`,
        ],
      }),
    );
    const run = await runOnce(d, 'halfway');
    // i = 0 is filtered; add_field fails on the other three (a string + 1): dead-lettered.
    expect(run).toMatchObject({ status: 'success', records_in: 4, records_out: 0, records_filtered: 1, records_skipped: 3, dlq_count: 3 });
    const tidy = workArea(2);
    await register(d, localYaml('tidy', tidy));
    const clean = await runOnce(d, 'tidy');
    expect(clean).toMatchObject({ status: 'success', records_out: 2, dlq_count: 0 });
    const listed = (await d.call('GET', '/api/runs')).body as { run_id: string; dlq_count: number }[];
    expect(listed.map((r) => [r.run_id, r.dlq_count])).toEqual([
      [clean.run_id, 0],
      [run.run_id, 3],
    ]);
    const letters = await d.call('GET', `/api/pipelines/halfway/dlq?run_id=${run.run_id}`);
    expect(letters.status, letters.text).toBe(200);
    expect(letters.body).toHaveLength(3);
    expect(letters.body.every((i: { envelope: { _run_id: string } }) => i.envelope._run_id === run.run_id)).toBe(true);
    expect((await d.call('GET', `/api/pipelines/halfway/dlq?run_id=${clean.run_id}`)).body).toEqual([]);
    expect((await d.call('GET', `/api/pipelines/halfway/dlq?run_id=${run.run_id}&stage=parse`)).body).toEqual([]);
  });
});
