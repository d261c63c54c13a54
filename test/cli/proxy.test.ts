// `svc pipelines` and `svc runs` against a real daemon.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testDaemon } from '../helpers/daemon.js';
import { until } from '../helpers/wait.js';
import { tempDir } from '../helpers/fs.js';
import { svc } from '../helpers/cli.js';

const pipelineYaml = (name: string, dir: string, extra = '') => `version: "1"
pipeline:
  name: ${name}
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(join(dir, 'in'))} }
  serializer_in: { type: ndjson }
  serializer_out: { type: ndjson }
  sinks: [{ type: local, path: ${JSON.stringify(join(dir, 'out'))} }]
${extra}`;

describe('svc pipelines / svc runs (proxy commands)', () => {
  // Twelve CLI processes in a row, each starting tsx: slow on a loaded machine, hence its own timeout.
  it('creates, lists, runs, shows runs, versions, rolls back and deletes, with tables and --json', { timeout: 120_000 }, async () => {
    const d = await testDaemon({ SVC_API_KEY: 'k3y' });
    const env = { SVC_API_URL: d.url, SVC_API_KEY: 'k3y' };
    const dir = tempDir();
    const file = join(dir, 'p.yaml');
    writeFileSync(file, pipelineYaml('proxied', dir));
    writeFileSync(join(tempDir(), 'x'), '');

    const created = await svc(['pipelines', 'create', file], env);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^NAME\s+STATUS\s+VERSION\nproxied\s+stopped\s+1\n$/);

    const list = await svc(['pipelines', '--json'], env);
    expect(JSON.parse(list.stdout)).toEqual([
      { name: 'proxied', enabled: true, status: 'stopped', desired: 'running', schedule_type: 'manual', last_run: null, last_run_status: null, live: null },
    ]);

    const triggered = await svc(['pipelines', 'run', 'proxied', '--json'], env);
    expect(JSON.parse(triggered.stdout)).toMatchObject({ name: 'proxied', status: 'triggered' });
    await until(async () => (await d.call('GET', '/api/runs', { headers: { 'X-API-Key': 'k3y' } })).body[0]?.status !== 'running');

    const runs = await svc(['runs', '--pipeline', 'proxied'], env);
    expect(runs.stdout.split('\n')[0]).toMatch(/^RUN_ID\s+PIPELINE\s+STATUS\s+STARTED_AT/);
    expect(runs.stdout).toContain('proxied');

    writeFileSync(file, pipelineYaml('proxied', dir, '  description: second'));
    expect((await svc(['pipelines', 'update', 'proxied', file], env)).code).toBe(0);
    const versions = JSON.parse((await svc(['pipelines', 'versions', 'proxied', '--json'], env)).stdout);
    expect(versions.map((v: { version: number }) => v.version)).toEqual([2, 1]);
    const rb = await svc(['pipelines', 'rollback', 'proxied', '1', '--json'], env);
    expect(JSON.parse(rb.stdout)).toEqual({ name: 'proxied', status: 'stopped', rolled_back_to_version: 1 });

    expect((await svc(['pipelines', 'delete', 'proxied'], env)).stdout).toBe('deleted proxied\n');
    const missing = await svc(['pipelines', 'get', 'proxied'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("svc: GET /api/pipelines/proxied: 404 pipeline 'proxied' not found\n");
  });

  it('finds the daemon at SVC_HOST:SVC_PORT when SVC_API_URL is unset (the environment `svc serve` was given)', async () => {
    const d = await testDaemon();
    const port = new URL(d.url).port;
    const found = await svc(['pipelines', '--json'], { SVC_API_URL: '', SVC_HOST: '127.0.0.1', SVC_PORT: port });
    expect(found.stderr).toBe('');
    expect(JSON.parse(found.stdout)).toEqual([]);
    const down = await svc(['runs'], { SVC_API_URL: '', SVC_HOST: '127.0.0.1', SVC_PORT: '9' });
    expect(down.stderr).toMatch(/^svc: cannot reach the daemon at http:\/\/127\.0\.0\.1:9 /);
  });

  it('says what to do when the daemon cannot be reached or the key is wrong', async () => {
    const down = await svc(['pipelines'], { SVC_API_URL: 'http://127.0.0.1:9' });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^svc: cannot reach the daemon at http:\/\/127\.0\.0\.1:9 .*is `svc serve` running\? Set SVC_API_URL/);
    const d = await testDaemon({ SVC_API_KEY: 'right' });
    const wrong = await svc(['runs'], { SVC_API_URL: d.url, SVC_API_KEY: 'wrong' });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^svc: GET \/api\/runs: 401 /);
  });
});
