// Probes and metadata (spec doc 2 sections 2 and 4): health, ready, meta, plugins, metrics,
// OpenAPI document, docs page, templates.
import { describe, expect, it } from 'vitest';
import { testDaemon } from '../helpers/daemon.js';
import { connectorMetrics } from '../../src/plugins/registry.js';
import { expectError, finishedRun, ISO, localYaml, register, workArea } from './_helpers.js';

describe('probes and meta', () => {
  it('GET /api/health answers 200 {status}', async () => {
    const d = await testDaemon();
    const r = await d.call('GET', '/api/health');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/application\/json/);
    expect(Object.keys(r.body)).toEqual(['status']);
    expect(typeof r.body.status).toBe('string');
  });

  it('GET /api/ready reports database, scheduler, cluster, pipelines and uptime', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, localYaml('ready-a', w));
    const r = await d.call('GET', '/api/ready');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      status: 'ready',
      db: 'ok',
      db_engine: 'sqlite',
      db_path: d.settings.DB_PATH,
      scheduler: 'running',
      cluster: 'standalone',
      pipelines_loaded: 1,
    });
    expect(typeof r.body.uptime).toBe('string');
    expect(r.body.uptime).toMatch(/^(\d+d )?(\d+h )?(\d+m )?\d+s$/);
  });

  it('GET /api/meta gives version, ISO build_time and python_version', async () => {
    const d = await testDaemon();
    const r = await d.call('GET', '/api/meta');
    expect(r.status).toBe(200);
    expect(typeof r.body.version).toBe('string');
    expect(r.body.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(r.body.build_time).toMatch(ISO);
    expect(Number.isNaN(Date.parse(r.body.build_time))).toBe(false);
    expect(typeof r.body.python_version).toBe('string');
    expect(r.body.python_version.length).toBeGreaterThan(0);
  });

  it('GET /api/plugins lists the four categories', async () => {
    const d = await testDaemon();
    const r = await d.call('GET', '/api/plugins');
    expect(r.status).toBe(200);
    for (const k of ['sources', 'sinks', 'serializers', 'transforms']) {
      expect(Array.isArray(r.body[k]), k).toBe(true);
      for (const v of r.body[k]) expect(typeof v).toBe('string');
    }
    expect(r.body.sources).toEqual(expect.arrayContaining(['local', 'webhook']));
    expect(r.body.sinks).toContain('local');
    expect(r.body.serializers).toEqual(expect.arrayContaining(['json', 'ndjson', 'csv']));
    expect(r.body.transforms).toEqual(expect.arrayContaining(['filter', 'rename']));
  });

  it('GET /metrics is the text exposition format and counts records per pipeline after a run', async () => {
    const d = await testDaemon();
    const w = workArea(4);
    await register(d, localYaml('metered', w));
    const t = await d.call('POST', '/api/pipelines/metered/run');
    expect(t.status).toBe(202);
    const run = await finishedRun(d, t.body.run_id);
    expect(run.status).toBe('success');
    const m = await d.call('GET', '/metrics');
    expect(m.status).toBe(200);
    expect(m.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(m.text).toMatch(/^svc_records_in_total\{pipeline="metered"\} 4$/m);
    expect(m.text).toMatch(/^svc_records_out_total\{pipeline="metered"\} 4$/m);
    expect(m.text).toContain('# TYPE svc_records_in_total counter');
    // The daemon registers what the connectors declare, used by a pipeline or not.
    for (const decl of connectorMetrics()) expect(m.text).toContain(`# TYPE ${decl.name} ${decl.kind}`);
  });

  it('GET /openapi.json is an OpenAPI document listing the pipeline paths', async () => {
    const d = await testDaemon();
    const r = await d.call('GET', '/openapi.json');
    expect(r.status).toBe(200);
    expect(typeof r.body.openapi).toBe('string');
    expect(r.body.openapi).toMatch(/^3\./);
    expect(r.body.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(Object.keys(r.body.paths)).toEqual(expect.arrayContaining(['/api/pipelines', '/api/runs', '/api/health']));
    expect(Object.keys(r.body.paths['/api/pipelines'])).toEqual(expect.arrayContaining(['get', 'post']));
  });

  it('GET /docs serves an HTML page', async () => {
    const d = await testDaemon();
    const r = await d.call('GET', '/docs');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/text\/html/);
    expect(r.text).toMatch(/<html/i);
  });

  it('GET /api/templates: every template has name, description, yaml and passes dry-run', async () => {
    const d = await testDaemon();
    const r = await d.call('GET', '/api/templates');
    expect(r.status).toBe(200);
    expect(Array.isArray(r.body)).toBe(true);
    expect(r.body.length).toBeGreaterThan(0);
    for (const t of r.body) {
      expect(Object.keys(t).sort()).toEqual(['description', 'name', 'yaml']);
      expect(typeof t.name).toBe('string');
      expect(typeof t.description).toBe('string');
      expect(t.description.length).toBeGreaterThan(0);
      const dr = await d.call('POST', '/api/pipelines/dry-run', { yaml: t.yaml });
      expect(dr.status).toBe(200);
      expect(dr.body, t.name).toEqual({ valid: true, issues: [] });
    }
  });

  it('unknown routes answer 404 {detail}', async () => {
    const d = await testDaemon();
    expectError(await d.call('GET', '/api/nope'), 404);
  });
});
