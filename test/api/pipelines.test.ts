// Pipelines CRUD (spec doc 2 sections 2, 4, 7): create in the three body forms, conflicts,
// validation errors with path and line, content types, size limit, read, replace, delete, list;
// plus dry-run (always 200 {valid, issues}).
import { describe, expect, it } from 'vitest';
import { testDaemon } from '../helpers/daemon.js';
import { expectError, localYaml, q, register, workArea } from './_helpers.js';

describe('POST /api/pipelines', () => {
  it('accepts text/plain, application/yaml and JSON {yaml_text} and answers 201 with the state', async () => {
    const d = await testDaemon();
    const w = workArea();
    const forms: [string, Parameters<typeof d.call>[2]][] = [
      ['p-text', { yaml: localYaml('p-text', w), headers: { 'content-type': 'text/plain' } }],
      ['p-yaml', { yaml: localYaml('p-yaml', w), headers: { 'content-type': 'application/yaml' } }],
      ['p-json', { body: { yaml_text: localYaml('p-json', w) } }],
    ];
    for (const [name, opts] of forms) {
      const r = await d.call('POST', '/api/pipelines', opts);
      expect(r.status, r.text).toBe(201);
      expect(r.headers.get('content-type')).toMatch(/application\/json/);
      expect(r.body).toMatchObject({ name, enabled: true, status: 'stopped', schedule_type: 'manual', last_run: null, last_run_status: null });
      const g = await d.call('GET', `/api/pipelines/${name}`);
      expect(g.status).toBe(200);
      expect(g.body).toMatchObject({ name, status: 'stopped', schedule_type: 'manual' });
    }
    const list = await d.call('GET', '/api/pipelines');
    expect(list.body.map((p: { name: string }) => p.name)).toEqual(['p-json', 'p-text', 'p-yaml']);
  });

  it('a second pipeline of the same name is 409', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, localYaml('dup', w));
    const detail = expectError(await d.call('POST', '/api/pipelines', { yaml: localYaml('dup', { ...w, description: 'other' }) }), 409);
    expect(detail).toContain('dup');
    // The first registration is untouched.
    expect((await d.call('GET', '/api/pipelines/dup')).body.description).toBeNull();
  });

  it('YAML syntax errors are 400 with path and line', async () => {
    const d = await testDaemon();
    const yaml = 'version: "1"\npipeline:\n  name: broken\n  schedule: { type: manual\n  sinks: []\n';
    const detail = expectError(await d.call('POST', '/api/pipelines', { yaml }), 400);
    expect(detail).toMatch(/\(line \d+\)/);
    expect(detail).toContain('CFG_YAML');
    expect((await d.call('GET', '/api/pipelines')).body).toEqual([]);
  });

  it('an unknown key is 400 naming the key path and its line', async () => {
    const d = await testDaemon();
    const w = workArea();
    const yaml = localYaml('typo', w).replace('filename_template:', 'filename_templte:');
    const detail = expectError(await d.call('POST', '/api/pipelines', { yaml }), 400);
    expect(detail).toContain('pipeline.sinks[0].filename_templte');
    const line = yaml.split('\n').findIndex((l) => l.includes('filename_templte')) + 1;
    expect(detail).toContain(`(line ${line})`);
    expect(detail).toContain('CFG_UNKNOWN_KEY');
  });

  it('a value of the wrong type is 400 naming the path and its line', async () => {
    const d = await testDaemon();
    const w = workArea();
    const yaml = localYaml('badtype', { ...w, schedule: '{ type: manual }', extra: ['batch_size: lots'] });
    const detail = expectError(await d.call('POST', '/api/pipelines', { yaml }), 400);
    expect(detail).toContain('pipeline.batch_size');
    const line = yaml.split('\n').findIndex((l) => l.includes('batch_size')) + 1;
    expect(detail).toContain(`(line ${line})`);
    expect(detail).toContain('CFG_TYPE');
  });

  it('an unsupported content type is 415 {detail}', async () => {
    const d = await testDaemon();
    const w = workArea();
    const r = await d.call('POST', '/api/pipelines', { yaml: localYaml('xml', w), headers: { 'content-type': 'application/xml' } });
    const detail = expectError(r, 415);
    expect(detail).toContain('application/xml');
    expect((await d.call('GET', '/api/pipelines')).body).toEqual([]);
  });

  it('JSON without yaml_text (or with a non-string) is 422', async () => {
    const d = await testDaemon();
    expect(expectError(await d.call('POST', '/api/pipelines', { body: {} }), 422)).toContain('yaml_text');
    expectError(await d.call('POST', '/api/pipelines', { body: { yaml: 'x' } }), 422);
    expectError(await d.call('POST', '/api/pipelines', { body: { yaml_text: 5 } }), 422);
  });

  it('malformed JSON is 400 {detail}', async () => {
    const d = await testDaemon();
    expectError(await d.call('POST', '/api/pipelines', { body: '{"yaml_text": ', headers: { 'content-type': 'application/json' } }), 400);
  });

  it('a body over 1 MiB is 413 {detail}', async () => {
    const d = await testDaemon();
    const w = workArea();
    const yaml = localYaml('huge', { ...w, description: 'x'.repeat((1 << 20) + 10) });
    const detail = expectError(await d.call('POST', '/api/pipelines', { yaml }), 413);
    expect(detail).toContain(String(1 << 20));
    const json = await d.call('POST', '/api/pipelines', { body: { yaml_text: yaml } });
    expectError(json, 413);
  });
});

describe('GET, PUT, DELETE /api/pipelines/{name}', () => {
  it('GET of an unknown pipeline is 404', async () => {
    const d = await testDaemon();
    expect(expectError(await d.call('GET', '/api/pipelines/ghost'), 404)).toContain('ghost');
    expectError(await d.call('PUT', '/api/pipelines/ghost', { yaml: localYaml('ghost', workArea()) }), 404);
    expectError(await d.call('DELETE', '/api/pipelines/ghost'), 404);
  });

  it('PUT replaces the config as a new version', async () => {
    const d = await testDaemon();
    const w = workArea();
    const v1 = await register(d, localYaml('rep', { ...w, description: 'one' }));
    expect(v1.version).toBe(1);
    const r = await d.call('PUT', '/api/pipelines/rep', { yaml: localYaml('rep', { ...w, description: 'two' }) });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ name: 'rep', description: 'two', version: 2, status: 'stopped' });
    expect((await d.call('GET', '/api/pipelines/rep')).body).toMatchObject({ description: 'two', version: 2 });
    const versions = await d.call('GET', '/api/pipelines/rep/versions');
    expect(versions.body.map((v: { version: number }) => v.version)).toEqual([2, 1]);
  });

  it('PUT as JSON {yaml_text} works too; PUT of invalid YAML is 400 and changes nothing', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, localYaml('rep2', { ...w, description: 'one' }));
    const bad = await d.call('PUT', '/api/pipelines/rep2', { yaml: localYaml('rep2', w).replace('type: ndjson', 'type: nope') });
    expect(expectError(bad, 400)).toMatch(/\(line \d+\)/);
    expect((await d.call('GET', '/api/pipelines/rep2')).body).toMatchObject({ description: 'one', version: 1 });
    const ok = await d.call('PUT', '/api/pipelines/rep2', { body: { yaml_text: localYaml('rep2', { ...w, description: 'json' }) } });
    expect(ok.status).toBe(200);
    expect(ok.body.description).toBe('json');
  });

  it('PUT with another name in the YAML is 400', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, localYaml('keep', w));
    const detail = expectError(await d.call('PUT', '/api/pipelines/keep', { yaml: localYaml('renamed', w) }), 400);
    expect(detail).toContain('renamed');
    expectError(await d.call('GET', '/api/pipelines/renamed'), 404);
    expect((await d.call('GET', '/api/pipelines/keep')).status).toBe(200);
  });

  it('DELETE is 204 with no body, then the pipeline is 404 and the name is free again', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, localYaml('gone', w));
    const r = await d.call('DELETE', '/api/pipelines/gone');
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    expectError(await d.call('GET', '/api/pipelines/gone'), 404);
    expectError(await d.call('DELETE', '/api/pipelines/gone'), 404);
    expect((await d.call('GET', '/api/pipelines')).body).toEqual([]);
    await register(d, localYaml('gone', w));
  });

  it('the list has the summary fields', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, localYaml('sum-manual', w));
    await register(d, localYaml('sum-off', { ...w, schedule: '{ type: interval, interval_seconds: 3600 }', enabled: false }));
    await register(d, localYaml('sum-cron', { ...w, schedule: '{ type: cron, cron: "0 0 1 1 *" }' }));
    const t = await d.call('POST', '/api/pipelines/sum-manual/run');
    expect(t.status).toBe(202);
    const r = await d.call('GET', '/api/pipelines');
    expect(r.status).toBe(200);
    for (const p of r.body)
      expect(Object.keys(p).sort()).toEqual(['desired', 'enabled', 'last_run', 'last_run_status', 'live', 'name', 'schedule_type', 'status']);
    const by = Object.fromEntries(r.body.map((p: { name: string }) => [p.name, p]));
    expect(by['sum-off']).toEqual({
      name: 'sum-off',
      enabled: false,
      status: 'stopped',
      desired: 'stopped',
      schedule_type: 'interval',
      last_run: null,
      last_run_status: null,
      live: null,
    });
    expect(by['sum-cron']).toMatchObject({ enabled: true, status: 'scheduled', schedule_type: 'cron', last_run: null });
    expect(by['sum-manual']).toMatchObject({ enabled: true, schedule_type: 'manual' });
    expect(typeof by['sum-manual'].last_run).toBe('string');
    expect(['running', 'success']).toContain(by['sum-manual'].last_run_status);
  });
});

describe('POST /api/pipelines/dry-run', () => {
  it('valid YAML: 200 {valid: true, issues: []}, nothing registered', async () => {
    const d = await testDaemon();
    const w = workArea();
    const r = await d.call('POST', '/api/pipelines/dry-run', { yaml: localYaml('dry', w) });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ valid: true, issues: [] });
    expectError(await d.call('GET', '/api/pipelines/dry'), 404);
    const j = await d.call('POST', '/api/pipelines/dry-run', { body: { yaml_text: localYaml('dry', w) } });
    expect(j.body).toEqual({ valid: true, issues: [] });
  });

  it('invalid config: 200 {valid: false} with issues naming path and line', async () => {
    const d = await testDaemon();
    const w = workArea();
    const yaml = localYaml('dry', w).replace('file_pattern:', 'file_patern:');
    const r = await d.call('POST', '/api/pipelines/dry-run', { yaml });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['issues', 'valid']);
    expect(r.body.valid).toBe(false);
    const line = yaml.split('\n').findIndex((l) => l.includes('file_patern')) + 1;
    expect(r.body.issues.some((i: string) => i.includes('pipeline.source.file_patern') && i.includes(`(line ${line})`))).toBe(true);
  });

  it('garbage text: 200 {valid: false}', async () => {
    const d = await testDaemon();
    for (const yaml of ['::: {{{ not yaml', 'just a sentence', '']) {
      const r = await d.call('POST', '/api/pipelines/dry-run', { yaml, headers: { 'content-type': 'text/plain' } });
      expect(r.status, JSON.stringify(yaml)).toBe(200);
      expect(r.body.valid).toBe(false);
      expect(r.body.issues.length).toBeGreaterThan(0);
    }
    const j = await d.call('POST', '/api/pipelines/dry-run', { body: { nope: 1 } });
    expect(j.status).toBe(200);
    expect(j.body.valid).toBe(false);
  });

  it('a sink that cannot be instantiated (unknown filename token) is not valid', async () => {
    const d = await testDaemon();
    const w = workArea();
    const r = await d.call('POST', '/api/pipelines/dry-run', { yaml: localYaml('dry-tok', { ...w, filename: 'out_{bogus_token}.ndjson' }) });
    expect(r.status).toBe(200);
    expect(r.body.valid).toBe(false);
    expect(r.body.issues.join('\n')).toContain('bogus_token');
  });

  it('a webhook source with a bad path is not valid', async () => {
    const d = await testDaemon();
    const w = workArea();
    const yaml = `version: "1"\npipeline:\n  name: wh\n  schedule: { type: stream }\n  source: { type: webhook, path: ${q('bad path!')} }\n  sinks:\n    - { type: local, path: ${q(w.outDir)} }\n`;
    const r = await d.call('POST', '/api/pipelines/dry-run', { yaml });
    expect(r.status).toBe(200);
    expect(r.body.valid).toBe(false);
    expect(r.body.issues.join('\n')).toContain('pipeline.source.path');
  });
});
