// The real `svc` command, spawned as a child process (node --import tsx src/cli/main.ts ...).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { pluginKeys } from '../../src/plugins/registry.js';
import type { RunRecord } from '../../src/engine/run-record.js';
import { tempDir } from '../helpers/fs.js';
import { svc as runSvc, type SvcResult } from '../helpers/cli.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SVC = ['--import', 'tsx', 'src/cli/main.ts'];

type Result = SvcResult;

/** Runs `svc ...args` to completion, with a state directory of its own. */
const svc = (args: string[], env: Record<string, string> = {}) => runSvc(args, { SVC_STATE_DIR: tempDir('svc-cli-state-'), ...env });

const runRecord = (r: Result) => JSON.parse(r.stdout) as RunRecord;

/** A temp dir with in/ holding `files` and a pipeline file written from `yaml` ({dir} = the temp dir). */
function workspace(files: Record<string, string>, yaml: string) {
  const dir = tempDir('svc-cli-');
  mkdirSync(join(dir, 'in'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, 'in', name), text);
  const file = join(dir, 'p.yaml');
  writeFileSync(file, yaml.replaceAll('{dir}', dir));
  return { dir, file };
}

const pipelineYaml = (extra = '', source = '') => `version: "1"
pipeline:
  name: cli-test
  schedule: { type: manual }
  source: { type: local, path: "{dir}/in", file_pattern: "*.ndjson"${source} }
  serializer_in: { type: ndjson }
  serializer_out: { type: ndjson }
${extra}
  sinks:
    - { type: local, path: "{dir}/out", filename_template: out.ndjson }
`;

/** `s` as a literal inside a RegExp. */
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const ndjson = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

describe('svc: help, version, usage errors', () => {
  it('--help prints usage with the commands and exits 0', async () => {
    for (const flag of ['--help', '-h']) {
      const r = await svc([flag]);
      expect(r.code).toBe(0);
      for (const cmd of ['svc run FILE', 'svc validate FILE', 'svc plugins']) expect(r.stdout).toContain(cmd);
      expect(r.stderr).toBe('');
    }
  });

  it('`svc help` prints the same text', async () => {
    const [a, b] = await Promise.all([svc(['help']), svc(['--help'])]);
    expect(a.code).toBe(0);
    expect(a.stdout).toBe(b.stdout);
  });

  it('--version prints the package.json version', async () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const r = await svc(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(pkg.version + '\n');
  });

  it('an unknown command exits 64 with a message on stderr', async () => {
    const r = await svc(['frobnicate']);
    expect(r.code).toBe(64);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain("svc: unknown command 'frobnicate'");
    expect(r.stderr).toContain("Run 'svc --help' for usage.");
  });

  it('an unknown option exits 64', async () => {
    const r = await svc(['--bogus']);
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(/^svc: .*--bogus/);
  });

  it('no command prints the usage and exits 64', async () => {
    const r = await svc([]);
    expect(r.code).toBe(64);
    expect(r.stdout).toContain('Usage:');
  });

  it('run and validate without FILE exit 64', async () => {
    for (const cmd of ['run', 'validate']) {
      const r = await svc([cmd]);
      expect(r.code).toBe(64);
      expect(r.stderr).toContain('svc: missing pipeline FILE');
    }
  });
});

describe('svc plugins', () => {
  it('lists every registered plugin by kind, with its summary', async () => {
    const r = await svc(['plugins']);
    expect(r.code).toBe(0);
    const keys = pluginKeys();
    for (const kind of ['sources', 'sinks', 'serializers', 'transforms'] as const) {
      expect(r.stdout).toContain(`${kind}:\n`);
      for (const key of keys[kind]) expect(r.stdout).toMatch(new RegExp(`^  ${key} +\\S`, 'm'));
    }
    expect(r.stdout).toMatch(/^ {2}cast +Convert field values to int, float, string or bool\.$/m);
  });

  it('--json prints an object of key arrays', async () => {
    const r = await svc(['plugins', '--json']);
    expect(r.code).toBe(0);
    const body = JSON.parse(r.stdout) as Record<string, string[]>;
    expect(Object.keys(body).sort()).toEqual(['engines', 'serializers', 'sinks', 'sources', 'transforms']);
    expect(body).toEqual(pluginKeys());
    expect(body.sources).toContain('local');
    expect(body.sinks).toContain('local');
    expect(body.serializers).toEqual(expect.arrayContaining(['ndjson', 'csv', 'json', 'text', 'bytes']));
    expect(body.transforms).toEqual(expect.arrayContaining(['add_field', 'cast', 'drop', 'filter', 'rename', 'value_map']));
  });
});

describe('svc validate', () => {
  it('accepts a valid file: exit 0', async () => {
    const { file } = workspace({}, pipelineYaml());
    const r = await svc(['validate', file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${file}: valid (pipeline 'cli-test')\n`);
    expect(r.stderr).toBe('');
  });

  it('lists every error as file:line:col path: message [CODE], exit 1', async () => {
    const { file } = workspace(
      {},
      `version: "1"
pipeline:
  name: bad
  schedule: { type: manual }
  on_eror: dlq
  source: { type: local, path: /tmp/x, file_pater: "*.ndjson" }
  serializer_in: { type: ndjson }
  transforms:
    - { type: filter, expression: "x ==" }
    - { type: castt, fields: { a: int } }
  sinks:
    - type: local
      path: /tmp/out
      retry_count: three
`,
    );
    const r = await svc(['validate', file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trimEnd().split('\n');
    const diags = lines.slice(0, -1);
    expect(lines.at(-1)).toBe(`${file}: 5 errors`);
    for (const l of diags) expect(l).toMatch(new RegExp(`^${esc(file)}:\\d+:\\d+ \\S+: .+ \\[CFG_[A-Z_]+\\]$`));
    expect(diags).toEqual([
      `${file}:5:3 pipeline.on_eror: unknown key 'on_eror' (did you mean 'on_error'?) [CFG_UNKNOWN_KEY]`,
      `${file}:6:40 pipeline.source.file_pater: unknown key 'file_pater' (did you mean 'file_pattern'?) [CFG_UNKNOWN_KEY]`,
      expect.stringMatching(new RegExp(`^${esc(file)}:9:35 pipeline\\.transforms\\[0\\]\\.expression: invalid expression: .+ \\[CFG_EXPRESSION\\]$`)),
      expect.stringMatching(/:10:15 pipeline\.transforms\[1\]\.type: unknown transform type 'castt' \(did you mean 'cast'\?\).* \[CFG_UNKNOWN_PLUGIN\]$/),
      `${file}:14:20 pipeline.sinks[0].retry_count: expected integer, got "three" [CFG_TYPE]`,
    ]);
  });

  it('reports a single error with the singular form', async () => {
    const { file } = workspace({}, pipelineYaml('  on_error: dlq'));
    const r = await svc(['validate', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/\[CFG_INVALID\]\n/);
    expect(r.stderr.trimEnd().split('\n').at(-1)).toBe(`${file}: 1 error`);
  });

  it('prints warnings but still exits 0', async () => {
    const { file } = workspace({}, pipelineYaml('  thread_workers: 2\n  record_chunk_size: 100'));
    const r = await svc(['validate', file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${file}: valid (pipeline 'cli-test')\n`);
    expect(r.stderr).toMatch(new RegExp(`^${esc(file)}:\\d+:\\d+ warning: pipeline\\.record_chunk_size: .+ \\[CFG_[A-Z_]+\\]\n$`));
  });

  it('reports YAML that does not parse', async () => {
    const { file } = workspace({}, 'version: "1"\npipeline: { name: [\n');
    const r = await svc(['validate', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('[CFG_YAML]');
  });

  it('a missing file: exit 1 with a clear message', async () => {
    const missing = join(tempDir(), 'nope.yaml');
    const r = await svc(['validate', missing]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(new RegExp(`^svc: cannot read ${esc(missing)}: ENOENT`));
  });
});

describe('svc run', () => {
  it('runs a good pipeline: exit 0, the run record on stdout, the output written', async () => {
    const input = ndjson([
      { i: '1', s: 1 },
      { i: '2', s: 2 },
      { i: '3', s: 1 },
    ]);
    const { dir, file } = workspace(
      { 'a.ndjson': input },
      pipelineYaml(`  transforms:
    - { type: cast, fields: { i: int } }
    - { type: filter, expression: s == 1 }`),
    );
    const r = await svc(['run', file]);
    expect(r.code).toBe(0);
    const rec = runRecord(r);
    expect(rec).toMatchObject({
      pipeline: 'cli-test',
      status: 'success',
      records_in: 3,
      records_out: 2,
      records_skipped: 0,
      dlq_count: 0,
      bytes_in: Buffer.byteLength(input),
      error: null,
      errors: [],
    });
    expect(rec.run_id).toMatch(/^[0-9a-f-]{36}$/);
    const out = readFileSync(join(dir, 'out', 'out.ndjson'), 'utf8');
    expect(out).toBe('{"i":1,"s":1}\n{"i":3,"s":1}\n');
    expect(rec.bytes_out).toBe(Buffer.byteLength(out));
  });

  it('an invalid config: exit 1, diagnostics on stderr, nothing run', async () => {
    const { dir, file } = workspace({ 'a.ndjson': ndjson([{ a: 1 }]) }, pipelineYaml('  on_eror: continue'));
    const r = await svc(['run', file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`${file}:8:3 pipeline.on_eror: unknown key 'on_eror' (did you mean 'on_error'?) [CFG_UNKNOWN_KEY]`);
    expect(existsSync(join(dir, 'out'))).toBe(false);
  });

  it('a source path that does not exist: exit 1, status failed, the error names the path', async () => {
    const { dir, file } = workspace({}, pipelineYaml().replace('"{dir}/in"', '"{dir}/missing"'));
    const r = await svc(['run', file]);
    expect(r.code).toBe(1);
    const rec = runRecord(r);
    expect(rec.status).toBe('failed');
    expect(rec.error).toContain(join(dir, 'missing'));
    expect(rec.records_in).toBe(0);
  });

  it('on_error: abort with a bad line: exit 2, status aborted, the input stays', async () => {
    const { dir, file } = workspace({ 'a.ndjson': '{"a":1}\nnot json\n{"a":3}\n' }, pipelineYaml('  on_error: abort', `, move_after_read: "{dir}/done"`));
    const r = await svc(['run', file]);
    expect(r.code).toBe(2);
    const rec = runRecord(r);
    expect(rec.status).toBe('aborted');
    expect(rec.error).toMatch(/^parse error in a\.ndjson: invalid JSON/);
    expect(existsSync(join(dir, 'in', 'a.ndjson'))).toBe(true);
    expect(existsSync(join(dir, 'done', 'a.ndjson'))).toBe(false);
  });

  it('a bad line under on_error continue: exit 0, counted as skipped', async () => {
    const { file } = workspace({ 'a.ndjson': '{"a":1}\nnot json\n{"a":3}\n' }, pipelineYaml());
    const r = await svc(['run', file]);
    expect(r.code).toBe(0);
    const rec = runRecord(r);
    expect(rec).toMatchObject({ status: 'success', records_in: 3, records_out: 2, records_skipped: 1 });
    expect(rec.errors).toEqual([expect.stringMatching(/^parse error in a\.ndjson: invalid JSON/)]);
  });

  it('skip_processed: the second run reads nothing; the memory lives in SVC_STATE_DIR', async () => {
    const state = tempDir('svc-cli-state-');
    const { dir, file } = workspace({ 'a.ndjson': ndjson([{ a: 1 }, { a: 2 }]) }, pipelineYaml('  skip_processed: true'));
    const first = await svc(['run', file], { SVC_STATE_DIR: state });
    expect(first.code).toBe(0);
    expect(runRecord(first)).toMatchObject({ status: 'success', records_in: 2, records_out: 2 });
    expect(readdirSync(state)).toEqual(['cli-test.processed.jsonl']);
    const keys = readFileSync(join(state, 'cli-test.processed.jsonl'), 'utf8').trim().split('\n');
    expect(keys).toHaveLength(1);
    expect(JSON.parse(keys[0]!)).toMatch(new RegExp(`^${esc(join(dir, 'in', 'a.ndjson'))}\\|\\d+\\|`));

    const second = await svc(['run', file], { SVC_STATE_DIR: state });
    expect(second.code).toBe(0);
    const rec = runRecord(second);
    expect(rec).toMatchObject({ status: 'success', records_in: 0, records_out: 0, records_skipped: 0, bytes_in: 0 });
    expect(rec.errors).toEqual([expect.stringMatching(/skipped 1 file already processed/)]);
    expect(readFileSync(join(dir, 'out', 'out.ndjson'), 'utf8')).toBe('{"a":1}\n{"a":2}\n');

    // Another state dir has no memory: the file is read again.
    const other = await svc(['run', file], { SVC_STATE_DIR: tempDir('svc-cli-state-') });
    expect(runRecord(other)).toMatchObject({ records_in: 2 });
  });

  it('without a TTY on stderr, prints no progress line: stderr holds log lines only', async () => {
    const rows = Array.from({ length: 200 }, (_, i) => ({ i }));
    const { file } = workspace({ 'a.ndjson': ndjson(rows), 'b.ndjson': 'bad\n' }, pipelineYaml('  record_chunk_size: 10\n  rate_limit_rps: 10'));
    const r = await svc(['run', file], { SVC_LOG_LEVEL: 'DEBUG' });
    expect(r.code).toBe(0);
    expect(runRecord(r)).toMatchObject({ records_in: 201, records_out: 200 });
    expect(r.stderr).not.toContain('\r');
    expect(r.stderr).not.toMatch(/ in · /);
    for (const line of r.stderr.split('\n').filter(Boolean)) expect(() => JSON.parse(line), line).not.toThrow();
  });

  const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;
  it.skipIf(!hasScript)('on a TTY, shows a progress line on stderr (script -qec)', async () => {
    const rows = Array.from({ length: 100 }, (_, i) => ({ i }));
    // 10 chunks at 5 writes/s after the first 5: the run lasts about a second, long enough for an update.
    const { file } = workspace({ 'a.ndjson': ndjson(rows) }, pipelineYaml('  record_chunk_size: 10\n  rate_limit_rps: 5'));
    const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
    const cmd = [process.execPath, ...SVC, 'run', file].map(q).join(' ');
    const r = await new Promise<Result>((resolve, reject) => {
      const child = spawn('script', ['-qec', cmd, '/dev/null'], {
        cwd: ROOT,
        env: { ...process.env, SVC_STATE_DIR: tempDir('svc-cli-state-'), SVC_LOG_LEVEL: 'ERROR', COLUMNS: '100' },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr: '' }));
      child.stdin.end();
    });
    expect(r.code).toBe(0);
    // stdout and stderr share the terminal: a carriage return starts the progress line.
    expect(r.stdout).toMatch(/\r\d+(\.\dk)? in · \d+(\.\dk)? out · [\d.]+ MB read · 1 unit \(a\.ndjson\)/);
    expect(r.stdout).toContain('"status": "success"');
  });
});
