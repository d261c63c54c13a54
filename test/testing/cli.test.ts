// `svc test` as CI runs it: the real command as a child process, its exit codes, the human report on
// stderr and the --json document on stdout.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/fs.js';
import { svc } from '../helpers/cli.js';

const PIPELINE = `version: "1"
pipeline:
  name: ifaces
  schedule: { type: interval, interval_seconds: 60 }
  source: { type: local, path: /nonexistent/in }
  serializer_in: { type: ndjson }
  transforms:
    - type: filter
      expression: ifOperStatus == 1
  serializer_out: { type: ndjson }
  sinks:
    - { type: mqtt, host: 127.0.0.1, port: 1, topic: ifaces }
`;

const PASSING = `cases:
  - name: up interfaces pass
    input:
      raw: |
        {"ifIndex": 1, "ifOperStatus": 1}
        {"ifIndex": 2, "ifOperStatus": 2}
    expect:
      sinks: [{ sink: 0, records: [{ifIndex: 1, ifOperStatus: 1}] }]
`;

const FAILING = `cases:
  - name: still passes
    input: { records: [{ifIndex: 3, ifOperStatus: 1}] }
    expect: { sinks: [{ sink: mqtt, count: 1 }] }
  - name: expects the down one too
    input: { records: [{ifIndex: 1, ifOperStatus: 1}, {ifIndex: 2, ifOperStatus: 2}] }
    expect:
      sinks: [{ sink: 0, records: [{ifIndex: 1, ifOperStatus: 1}, {ifIndex: 2, ifOperStatus: 2}] }]
`;

/** dir/ok.yaml + ok.test.yaml (passing), dir/sub/bad.yaml + bad.test.yaml (one failing case), dir/broken.yaml + broken.test.yaml (invalid). */
function workspace() {
  const dir = tempDir('svc-test-cli-');
  mkdirSync(join(dir, 'sub'));
  writeFileSync(join(dir, 'ok.yaml'), PIPELINE);
  writeFileSync(join(dir, 'ok.test.yaml'), PASSING);
  writeFileSync(join(dir, 'sub', 'bad.yaml'), PIPELINE);
  writeFileSync(join(dir, 'sub', 'bad.test.yaml'), FAILING);
  writeFileSync(join(dir, 'broken.yaml'), PIPELINE);
  writeFileSync(join(dir, 'broken.test.yaml'), 'cases:\n  - name: x\n    input: { records: [] }\n    expect: { sinks: [{ sink: 0, cuont: 1 }] }\n');
  return dir;
}

describe('svc test (the command)', () => {
  it('exits 0 when every case passes (FILE.yaml finds FILE.test.yaml beside it), 1 on a failing case, with a diff on stderr', async () => {
    const dir = workspace();
    const [ok, bad] = await Promise.all([svc(['test', join(dir, 'ok.yaml')]), svc(['test', join(dir, 'sub', 'bad.test.yaml')])]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toBe('');
    expect(ok.stderr).toBe(`${join(dir, 'ok.test.yaml')} (pipeline ${join(dir, 'ok.yaml')})\n  ✓ up interfaces pass\n1 case in 1 file: 1 passed, 0 failed\n`);

    expect(bad.code).toBe(1);
    expect(bad.stderr.split('\n')).toEqual([
      `${join(dir, 'sub', 'bad.test.yaml')} (pipeline ${join(dir, 'sub', 'bad.yaml')})`,
      '  ✓ still passes',
      '  ✗ expects the down one too',
      '      sinks[0] (mqtt): records differ (expected 2, got 1)',
      '        - [1] missing: {"ifIndex":2,"ifOperStatus":2}',
      '2 cases in 1 file: 1 passed, 1 failed',
      '',
    ]);
  });

  it('runs every *.test.yaml under a folder; --json prints one document; an invalid file fails the run', async () => {
    const dir = workspace();
    const [human, json] = await Promise.all([svc(['test', dir]), svc(['test', '--json', dir])]);
    expect(human.code).toBe(1);
    expect(human.stderr).toContain(
      `${join(dir, 'broken.test.yaml')}\n  invalid:\n    ${join(dir, 'broken.test.yaml')}:4:34 cases[0].expect.sinks[0].cuont: unknown key 'cuont' (did you mean 'count'?) [CFG_UNKNOWN_KEY]\n`,
    );
    expect(human.stderr).toMatch(/3 cases in 3 files: 2 passed, 1 failed, 1 invalid file\n$/);

    expect(json.code).toBe(1);
    const doc = JSON.parse(json.stdout) as {
      ok: boolean;
      files: number;
      cases: number;
      passed: number;
      failed: number;
      invalid_files: number;
      results: { file: string; invalid?: string[]; cases: { name: string; ok: boolean; failures: { where: string; message: string; diff: string[] }[] }[] }[];
    };
    expect(json.stderr).toBe('');
    expect(doc).toMatchObject({ ok: false, files: 3, cases: 3, passed: 2, failed: 1, invalid_files: 1 });
    // Sorted by path: broken, ok, sub/bad.
    expect(doc.results.map((r) => r.file)).toEqual([join(dir, 'broken.test.yaml'), join(dir, 'ok.test.yaml'), join(dir, 'sub', 'bad.test.yaml')]);
    expect(doc.results[0]!.invalid).toHaveLength(1);
    expect(doc.results[2]!.cases[1]).toEqual({
      name: 'expects the down one too',
      line: 5,
      ok: false,
      failures: [{ where: 'sinks[0] (mqtt)', message: 'records differ (expected 2, got 1)', diff: ['- [1] missing: {"ifIndex":2,"ifOperStatus":2}'] }],
    });
  });

  it('exits 64 without a path, and 1 for a pipeline with no test file beside it', async () => {
    const dir = workspace();
    writeFileSync(join(dir, 'lonely.yaml'), PIPELINE);
    const [none, lonely] = await Promise.all([svc(['test']), svc(['test', join(dir, 'lonely.yaml')])]);
    expect(none.code).toBe(64);
    expect(none.stderr).toContain('svc: missing test FILE or DIR');
    expect(lonely.code).toBe(1);
    expect(lonely.stderr).toContain(`${join(dir, 'lonely.yaml')}: no test file beside it (expected ${join(dir, 'lonely.test.yaml')})`);
  });
});
