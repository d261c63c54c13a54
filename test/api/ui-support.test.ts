// What the web UI needs beyond spec doc 2 (docs/ui.md): each plugin's JSON Schema (GET
// /api/plugins/schemas, GET /api/plugins/{kind}/{key}) for the editor and the plugin reference,
// dry-run's `diagnostics=true` (line and column for editors), one version's YAML (the diff); and the
// cluster view of spec doc 2 in standalone mode.
import { describe, expect, it } from 'vitest';
import { positionOf } from '../../src/config/load.js';
import { registry } from '../../src/plugins/registry.js';
import { testDaemon } from '../helpers/daemon.js';
import { until } from '../helpers/wait.js';
import { expectError, localYaml, webhookYaml, workArea } from './_helpers.js';

describe('GET /api/plugins/schemas', () => {
  it('has every registered plugin, each with its JSON Schema, summary and examples, and the pipeline schema', async () => {
    const d = await testDaemon();
    const keys = (await d.call('GET', '/api/plugins')).body as Record<string, string[]>;
    const r = await d.call('GET', '/api/plugins/schemas');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/application\/json/);
    expect(Object.keys(r.body).sort()).toEqual(['pipeline', 'serializers', 'sink_common', 'sinks', 'sources', 'transforms']);
    for (const cat of ['sources', 'sinks', 'serializers', 'transforms']) {
      expect(Object.keys(r.body[cat]).sort(), cat).toEqual([...keys[cat]!].sort());
      for (const [key, doc] of Object.entries(r.body[cat] as Record<string, any>)) {
        expect(doc.key).toBe(key);
        expect(doc.schema.type, `${cat}.${key}`).toBe('object');
        expect(typeof doc.summary).toBe('string');
        expect(Array.isArray(doc.examples)).toBe(true);
      }
    }
    // The plugin's own schema, unchanged (TypeBox's symbol keys aside).
    const local = registry.sink.get('local')!;
    expect(r.body.sinks.local.schema).toEqual(JSON.parse(JSON.stringify(local.config)));
    expect(r.body.sinks.local.delivery.guarantee).toMatch(/at-(least|most)-once/);
    expect(r.body.pipeline.properties.schedule.properties.type).toBeDefined();
    expect(r.body.sink_common.properties.retry_count.description).toEqual(expect.any(String));
  });

  it('GET /api/plugins/{kind}/{key} answers one plugin; unknown ones are {detail} errors', async () => {
    const d = await testDaemon();
    const all = (await d.call('GET', '/api/plugins/schemas')).body;
    const one = await d.call('GET', '/api/plugins/transforms/filter');
    expect(one.status).toBe(200);
    expect(one.body).toEqual(all.transforms.filter);
    expect(expectError(await d.call('GET', '/api/plugins/sinks/nope'), 404)).toMatch(/no sink plugin 'nope'; registered: .*local/);
    expectError(await d.call('GET', '/api/plugins/widgets/local'), 422);
  });

  it('is in the OpenAPI description', async () => {
    const d = await testDaemon();
    const paths = (await d.call('GET', '/openapi.json')).body.paths;
    expect(paths['/api/plugins/schemas'].get.summary).toMatch(/JSON Schema/);
    expect(paths['/api/plugins/{kind}/{key}'].get.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['key', 'kind']);
  });
});

describe('POST /api/pipelines/dry-run?diagnostics=true', () => {
  it('adds each problem with path, line and column; without the flag the body stays {valid, issues}', async () => {
    const d = await testDaemon();
    const w = workArea();
    const yaml = localYaml('dry', w).replace('file_pattern:', 'file_patern:');
    const line = yaml.split('\n').findIndex((l) => l.includes('file_patern')) + 1;
    const column = yaml.split('\n')[line - 1]!.indexOf('file_patern') + 1;
    const r = await d.call('POST', '/api/pipelines/dry-run?diagnostics=true', { yaml });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['diagnostics', 'issues', 'valid']);
    expect(r.body.valid).toBe(false);
    expect(r.body.diagnostics).toEqual([
      {
        code: 'CFG_UNKNOWN_KEY',
        path: 'pipeline.source.file_patern',
        message: expect.stringContaining("did you mean 'file_pattern'"),
        severity: 'error',
        line,
        column,
      },
    ]);
    const plain = await d.call('POST', '/api/pipelines/dry-run', { yaml });
    expect(Object.keys(plain.body).sort()).toEqual(['issues', 'valid']);
    expect(plain.body.issues).toEqual(r.body.issues);
  });

  it("lists the problems in line order (the editor's list follows it), a YAML syntax error at the line to fix", async () => {
    const d = await testDaemon();
    const yaml = `version: "1"
pipeline:
  name: order
  sinks:
    - { type: local, path: /out, pathh: x }
  source: { type: local, path: /in, file_patern: "*" }
  schedule: { type: manual }
  bogus: 1
`;
    const r = await d.call('POST', '/api/pipelines/dry-run?diagnostics=true', { yaml });
    const at = r.body.diagnostics.map((x: { line: number; path: string }) => `${x.line} ${x.path}`);
    expect(at).toEqual(['5 pipeline.sinks[0].pathh', '6 pipeline.source.file_patern', '8 pipeline.bogus']);
    const syntax = await d.call('POST', '/api/pipelines/dry-run?diagnostics=true', { yaml: 'version: "1"\npipeline:\n  name: x\n   source: {}\n' });
    expect(syntax.body.diagnostics).toEqual([
      expect.objectContaining({ code: 'CFG_YAML', line: 4, message: expect.stringMatching(/^this line is indented deeper than line 3/) }),
    ]);
  });

  it('positionOf: where instantiation failures (which carry no position) are shown', () => {
    const yaml = 'version: "1"\npipeline:\n  name: x\n  sinks:\n    - type: local\n      path: /out\n  dlq: { type: local, path: /dlq }\n';
    expect(positionOf(yaml, ['pipeline', 'sinks', 0])).toEqual({ line: 5, column: 7 });
    expect(positionOf(yaml, ['pipeline', 'dlq'])).toEqual({ line: 7, column: 3 });
    // A missing node: its nearest existing ancestor.
    expect(positionOf(yaml, ['pipeline', 'source'])).toEqual({ line: 3, column: 3 });
  });

  it('a body that is not YAML text still answers 200 with a diagnostic', async () => {
    const d = await testDaemon();
    const r = await d.call('POST', '/api/pipelines/dry-run?diagnostics=true', { body: { nope: 1 } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ valid: false, issues: [expect.any(String)], diagnostics: [expect.objectContaining({ code: null, severity: 'error' })] });
  });
});

describe('GET /api/pipelines/{name}/versions/{version}', () => {
  it('answers one stored version with its YAML; a missing version or pipeline is 404 {detail}', async () => {
    const d = await testDaemon();
    const w = workArea();
    const v1 = localYaml('ver-yaml', w);
    const v2 = localYaml('ver-yaml', { ...w, description: 'second' });
    expect((await d.call('POST', '/api/pipelines', { yaml: v1 })).status).toBe(201);
    expect((await d.call('PUT', '/api/pipelines/ver-yaml', { yaml: v2 })).status).toBe(200);
    const one = await d.call('GET', '/api/pipelines/ver-yaml/versions/1');
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ id: expect.any(Number), name: 'ver-yaml', version: 1, created_at: expect.any(String), is_active: 0, yaml: v1 });
    expect((await d.call('GET', '/api/pipelines/ver-yaml/versions/2')).body).toMatchObject({ version: 2, is_active: 1, yaml: v2 });
    expect(expectError(await d.call('GET', '/api/pipelines/ver-yaml/versions/9'), 404)).toBe("pipeline 'ver-yaml' has no version 9");
    expectError(await d.call('GET', '/api/pipelines/ghost/versions/1'), 404);
    expectError(await d.call('GET', '/api/pipelines/ver-yaml/versions/zero'), 422);
  });
});

describe('GET /api/cluster/nodes and /api/cluster/streams (standalone)', () => {
  it('says standalone with no workers, and lists the running streams as single-slot placements', async () => {
    const d = await testDaemon();
    const w = workArea();
    expect((await d.call('GET', '/api/cluster/nodes')).body).toEqual({ mode: 'standalone', workers: [] });
    expect((await d.call('GET', '/api/cluster/streams')).body).toEqual({ streams: [] });
    await d.call('POST', '/api/pipelines', { yaml: webhookYaml('placed', { path: 'placed', outDir: w.outDir }) });
    await d.call('POST', '/api/pipelines', { yaml: localYaml('batchy', w) });
    const streams = await until(async () => {
      const r = await d.call('GET', '/api/cluster/streams');
      return r.body.streams.length === 1 ? r.body.streams : undefined;
    });
    expect(streams[0]).toMatchObject({ pipeline_name: 'placed', status: 'running', slot_count: 1, slots: [expect.objectContaining({ status: 'running' })] });
    const paths = (await d.call('GET', '/openapi.json')).body.paths;
    expect(Object.keys(paths)).toEqual(expect.arrayContaining(['/api/cluster/nodes', '/api/cluster/streams']));
  });
});

describe('GET /api/pipelines/{name}/alerts: last_fired', () => {
  it('says when each rule last fired with a confirmed delivery, null when never', async () => {
    const d = await testDaemon();
    const w = workArea();
    await d.call('POST', '/api/pipelines', { yaml: localYaml('al-fired', w) });
    await d.call('POST', '/api/pipelines/al-fired/alerts', {
      body: { name: 'never', condition: 'failed', action: 'webhook', webhook_url: 'http://127.0.0.1:9/x' },
    });
    await d.store.alerts.add('al-fired', {
      name: 'fired',
      condition: 'records_in > 0',
      action: 'webhook',
      webhook_url: 'http://127.0.0.1:9/x',
      cooldown_seconds: 60,
    });
    await d.store.alerts.setFired('al-fired', 'fired', '2024-05-01T10:00:00.000Z');
    const list = (await d.call('GET', '/api/pipelines/al-fired/alerts')).body as { name: string; last_fired: string | null }[];
    expect(Object.fromEntries(list.map((r) => [r.name, r.last_fired]))).toEqual({ never: null, fired: '2024-05-01T10:00:00.000Z' });
  });
});
