// Issue 28, finding 6: a session user could read every environment secret. A pipeline posted with a
// login token with `add_field: {k: '"${SVC_API_KEY}"'}` showed the key in GET /api/pipelines/{name}
// and in its output, and the key opens /api/internal/*. The daemon runs in this process, so the
// variables below are the environment its `${VAR}`s read, SVC_API_KEY included, as in the report.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/log.js';
import { testDaemon } from '../helpers/daemon.js';
import { until } from '../helpers/wait.js';
import { tempDir } from '../helpers/fs.js';
import { localYaml, q, readNdjson, workArea } from '../api/_helpers.js';

const API_KEY = 'k3y-of-the-daemon-0b8e';
const MY_VALUE = 'my-value-7f3a';
const SINK_TOKEN = 'sink-token-c41d9e';

const ENV: Record<string, string> = { SVC_API_KEY: API_KEY, MY_VAR: MY_VALUE, OTHER: 'other-value', MY_SINK_TOKEN: SINK_TOKEN };
const saved = Object.fromEntries(Object.keys(ENV).map((k) => [k, process.env[k]]));
beforeAll(() => void Object.assign(process.env, ENV));
afterAll(() => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

/** A daemon with the API key, a login user and a JSON log file; calls go with the login token. */
async function daemon(env: Record<string, string> = {}, dir = tempDir('svc-secrets-')) {
  const logFile = join(dir, 'svc.log');
  const d = await testDaemon(
    { SVC_API_KEY: API_KEY, SVC_AUTH_USERS: 'ops:pa55', ...env },
    { dir, log: createLogger({ level: 'DEBUG', destination: logFile }) },
  );
  const login = await d.call('POST', '/api/auth/login', { body: { username: 'ops', password: 'pa55' } });
  expect(login.status).toBe(200);
  // Every call below is the session user's: a login token, never the key.
  const headers = { authorization: `Bearer ${login.body.token}` };
  const call = (method: string, path: string, yaml?: string) => d.call(method, path, { headers, ...(yaml ? { yaml } : {}) });
  return { stop: () => d.stop(), call, log: () => readFileSync(logFile, 'utf8') };
}

/** local -> local with one add_field; `sink` replaces the sink's line, `extra` adds pipeline lines. */
function pipeline(name: string, expr: string, w: ReturnType<typeof workArea>, o: { sink?: string; extra?: string[] } = {}) {
  const yaml = localYaml(name, {
    inDir: w.inDir,
    outDir: w.outDir,
    extra: [...(o.extra ?? []), 'transforms:', `  - { type: add_field, fields: { k: ${q(expr)} } }`],
  });
  return o.sink ? yaml.replace(/ {4}- \{ type: local, path: .*\n/, `    - ${o.sink}\n`) : yaml;
}

async function runToEnd(d: Awaited<ReturnType<typeof daemon>>, name: string) {
  const started = await d.call('POST', `/api/pipelines/${name}/run`);
  expect(started.status, started.text).toBe(202);
  return until(async () => {
    const r = await d.call('GET', `/api/runs/${started.body.run_id}`);
    return r.status === 200 && r.body.status !== 'running' ? r.body : undefined;
  }, 20_000);
}

describe('environment variables in pipelines (issue 28, finding 6)', () => {
  it('the reproduction: ${SVC_API_KEY} posted with a login token is a 400 naming the variable, path and line; the key is shown nowhere', async () => {
    const d = await daemon();
    const w = workArea(1);
    const yaml = pipeline('leak', '"${SVC_API_KEY}"', w);
    const line = yaml.split('\n').findIndex((l) => l.includes('SVC_API_KEY')) + 1;
    const r = await d.call('POST', '/api/pipelines', yaml);
    expect(r.status, r.text).toBe(400);
    expect(r.body.detail).toContain('pipeline.transforms[0].fields.k: environment variable SVC_API_KEY may not be read by a pipeline');
    expect(r.body.detail).toContain(`(line ${line}) [CFG_ENV_DENIED]`);
    expect(r.text).not.toContain(API_KEY);
    expect((await d.call('GET', '/api/pipelines/leak')).status).toBe(404);
    // The editor's check says the same, with the line.
    const dry = await d.call('POST', '/api/pipelines/dry-run?diagnostics=true', yaml);
    expect(dry.body).toMatchObject({ valid: false, diagnostics: [{ code: 'CFG_ENV_DENIED', path: 'pipeline.transforms[0].fields.k', line }] });
    // A default does not open the door either.
    expect((await d.call('POST', '/api/pipelines', pipeline('leak', '"${SVC_API_KEY:-x}"', w))).status).toBe(400);
  });

  it('an allowed ${MY_VAR}: the API shows the pipeline as written, a run uses the value, and so after a restart', async () => {
    const dir = tempDir('svc-secrets-');
    const d = await daemon({}, dir);
    const w = workArea(2);
    const created = await d.call('POST', '/api/pipelines', pipeline('mine', '"${MY_VAR}"', w, { extra: ['description: "reads ${MY_VAR}"'] }));
    expect(created.status, created.text).toBe(201);
    const shown = async (d: Awaited<ReturnType<typeof daemon>>) => {
      const one = await d.call('GET', '/api/pipelines/mine');
      expect(one.body.config.transforms[0].fields.k).toBe('"${MY_VAR}"');
      expect(one.body.description).toBe('reads ${MY_VAR}');
      expect(one.body.yaml).toContain('${MY_VAR}');
      const version = await d.call('GET', '/api/pipelines/mine/versions/1');
      for (const text of [
        created.text,
        one.text,
        version.text,
        (await d.call('GET', '/api/pipelines')).text,
        (await d.call('GET', '/api/pipelines/mine/versions')).text,
      ])
        expect(text).not.toContain(MY_VALUE);
    };
    await shown(d);
    expect((await runToEnd(d, 'mine')).status).toBe('success');
    expect(readNdjson(w.outFile).map((r) => r.k)).toEqual([MY_VALUE, MY_VALUE]);

    // The stored pipeline loads again at the next start, still as written.
    await d.stop();
    const again = await daemon({}, dir);
    await shown(again);
    expect((await runToEnd(again, 'mine')).status).toBe('success');
    expect(readNdjson(w.outFile)).toHaveLength(4);
  });

  it('SVC_CONFIG_ENV_ALLOW=MY_* allows MY_VAR and refuses OTHER and SVC_API_KEY', async () => {
    const d = await daemon({ SVC_CONFIG_ENV_ALLOW: 'MY_*' });
    const w = workArea(1);
    expect((await d.call('POST', '/api/pipelines', pipeline('mine', '"${MY_VAR}"', w))).status).toBe(201);
    for (const name of ['OTHER', 'SVC_API_KEY']) {
      const r = await d.call('POST', '/api/pipelines', pipeline('theirs', `"\${${name}}"`, w));
      expect(r.status, r.text).toBe(400);
      expect(r.body.detail).toContain(`environment variable ${name} may not be read by a pipeline (SVC_CONFIG_ENV_ALLOW is MY_*)`);
    }
  });

  it('a secret-named value in a failing sink or transform is *** in the dead letter, the run and the log; the record keeps it', async () => {
    const d = await daemon();
    const w = workArea(1);
    // A sink folder below a regular file: every write fails with an error that quotes the path.
    const blocker = join(w.root, 'blocker');
    writeFileSync(blocker, 'not a folder');
    const dlqDir = join(w.root, 'dlq');
    mkdirSync(dlqDir);
    const yaml = pipeline('masked', '"${MY_SINK_TOKEN}"', w, {
      sink: `{ type: local, path: ${q(join(blocker, '${MY_SINK_TOKEN}'))}, filename_template: out.ndjson }`,
      extra: ['on_error: dlq', `dlq: { type: local, path: ${q(dlqDir)}, filename_template: dlq.ndjson }`],
    });
    expect((await d.call('POST', '/api/pipelines', yaml)).status).toBe(201);
    const run = await runToEnd(d, 'masked');
    expect(run.dlq_count).toBe(1);
    const [dead] = readdirSync(dlqDir).flatMap((f) => readNdjson(join(dlqDir, f)));
    expect(dead).toMatchObject({ _stage: 'sink', record: { k: SINK_TOKEN } });
    expect(dead!._error).toContain(join(blocker, '***'));
    expect(dead!._error).not.toContain(SINK_TOKEN);
    expect(JSON.stringify(run)).not.toContain(SINK_TOKEN);

    // A transform's error that quotes the value: masked in the dead letter's reason and the run record too.
    const dlq2 = join(w.root, 'dlq2');
    mkdirSync(dlq2);
    const yaml2 = pipeline('masked2', "int('${MY_SINK_TOKEN}')", w, {
      extra: ['on_error: dlq', `dlq: { type: local, path: ${q(dlq2)}, filename_template: dlq.ndjson }`],
    });
    expect((await d.call('POST', '/api/pipelines', yaml2)).status).toBe(201);
    const run2 = await runToEnd(d, 'masked2');
    expect(run2.dlq_count).toBe(1);
    const [dead2] = readNdjson(join(dlq2, 'dlq.ndjson'));
    expect(dead2).toMatchObject({ _stage: 'transform', _error: expect.stringContaining("invalid literal for base 10: '***'") });
    expect(JSON.stringify(run2)).not.toContain(SINK_TOKEN);

    const logged = d.log();
    expect(logged).toContain(join(blocker, '***'));
    expect(logged).not.toContain(SINK_TOKEN);
  });
});
