// One walk over every registered plugin: its schema compiles, its defaults validate, every field is
// described, every example lints clean in a real pipeline, and the generated docs are current.
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { Kind, type TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadPipelineText } from '../../src/config/load.js';
import { CODES, formatDiagnostic } from '../../src/config/diagnostics.js';
import { generatedDocs } from '../../src/docs/reference.js';
import { connectorMetrics, pluginKeys, registry, sinks, sources } from '../../src/plugins/registry.js';
import type { AnyPlugin, SerializerPlugin, SinkPlugin, SourcePlugin } from '../../src/plugins/types.js';
import { encoderFor } from '../../src/engine/plan.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { silentLogger } from '../../src/observability/log.js';
import { decodeUnit } from './serializers/helpers.js';
import { quiet } from '../helpers/wait.js';

const root = join(import.meta.dirname, '..', '..');
// Examples name schema files relative to SVC_SCHEMA_DIR; the ones they use ship in examples/schemas.
process.env.SVC_SCHEMA_DIR = join(root, 'examples', 'schemas');
const all: AnyPlugin[] = Object.values(registry).flatMap((m) => [...m.values()]);

/** A pipeline around one component, so an example is checked exactly as a user would write it. */
function wrap(p: AnyPlugin, component: Record<string, unknown>): string {
  const comp = JSON.stringify(component);
  const src = p.kind === 'source' ? comp : '{ type: local, path: /in }';
  const schedule = p.kind === 'source' && p.mode !== 'batch' ? 'stream' : 'manual';
  const serIn = p.kind === 'serializer' && p.direction !== 'out' ? comp : '{ type: json }';
  const serOut = p.kind === 'serializer' && p.direction !== 'in' ? comp : '{ type: json }';
  const transforms = p.kind === 'transform' ? `[${comp}]` : '[]';
  const sink = p.kind === 'sink' ? comp : '{ type: local, path: /out }';
  return `version: "1"\npipeline:\n  name: example\n  schedule: { type: ${schedule} }\n  source: ${src}\n  serializer_in: ${serIn}\n  serializer_out: ${serOut}\n  transforms: ${transforms}\n  sinks: [${sink}]\n`;
}

describe.each(all.map((p) => [`${p.kind} ${p.key}`, p] as const))('%s', (_name, p) => {
  it('has a schema that compiles, with a description on every field and defaults that validate', () => {
    expect(p.config[Kind]).toBe('Object');
    expect(p.config.additionalProperties).toBe(false);
    TypeCompiler.Compile(p.config);
    for (const [field, s] of Object.entries(p.config.properties) as [string, TSchema][]) {
      expect(s.description, `${p.key}.${field} needs a description`).toBeTruthy();
      if ('default' in s) expect(Value.Check(s, s.default), `${p.key}.${field} default`).toBe(true);
      // TypeBox's Value.Default merges an object default into an object the user gave (a configured
      // `{bool: ...}` query would gain `match_all`): such a field leaves the default to the plugin.
      const d = (s as { default?: unknown }).default;
      if (d !== null && typeof d === 'object' && !Array.isArray(d)) {
        expect(
          Object.keys(d),
          `${p.key}.${field}: a non-empty object default is merged into the user's value; make the field optional and apply the default in the plugin`,
        ).toEqual([]);
      }
    }
    expect(p.summary.length).toBeGreaterThan(10);
  });

  it('has examples that lint clean', () => {
    expect(p.examples.length).toBeGreaterThan(0);
    for (const ex of p.examples) {
      const component = parse(ex.yaml) as Record<string, unknown>;
      expect(component.type).toBe(p.key);
      const r = loadPipelineText(wrap(p, component), { env: {} });
      expect(
        r.diagnostics.map((d) => formatDiagnostic(d)),
        ex.title,
      ).toEqual([]);
    }
  });

  it.runIf(p.kind === 'source' || p.kind === 'sink')('states its delivery guarantee and has a reachability check; create() does no I/O (dry-run)', async () => {
    const c = p as SourcePlugin | SinkPlugin;
    expect(['at-least-once', 'at-most-once']).toContain(c.delivery.guarantee);
    expect(c.delivery.why.length).toBeGreaterThan(20);
    expect(typeof c.test).toBe('function');
    const sockets = () => process.getActiveResourcesInfo().filter((r) => /TCP|UDP|Pipe|TLS|DNS|GetAddrInfo/i.test(r)).length;
    for (const ex of p.examples) {
      const cfg = loadPipelineText(wrap(p, parse(ex.yaml) as Record<string, unknown>), { env: {} }).config!;
      const before = sockets();
      const ctx = { pipeline: 'example', log: silentLogger, signal: new AbortController().signal, processed: new MemoryProcessedFiles(), skipProcessed: false };
      if (p.kind === 'source') (p as SourcePlugin).create(cfg.source as never, ctx);
      else (p as SinkPlugin).create(cfg.sinks[0] as never, { ...ctx, encoder: encoderFor(registry, { type: 'json' }) });
      await quiet(20);
      expect(sockets(), `${ex.title}: create() opened a connection`).toBe(before);
    }
  });

  it('has worked examples whose input decodes to the records shown', async () => {
    for (const ex of p.examples.filter((e) => e.worked)) {
      expect(p.kind, 'worked examples are for serializers').toBe('serializer');
      const s = p as SerializerPlugin;
      const component = parse(ex.yaml) as Record<string, unknown>;
      const config = loadPipelineText(wrap(p, component), { env: {} }).config!.serializer_in;
      const w = ex.worked!;
      const decoded = await decodeUnit(s.decoder!(config as never, { schemaDir: process.env.SVC_SCHEMA_DIR }), Buffer.from(w.input, w.encoding ?? 'utf8'));
      expect(decoded.errors, ex.title).toEqual([]);
      expect(decoded.records, ex.title).toEqual(w.records);
    }
  });
});

describe('registry', () => {
  it("lists every plugin folder there is, each with its one line in its kind's list", () => {
    const keys = pluginKeys();
    const folders = (kind: string) =>
      readdirSync(join(root, 'src/plugins', kind), { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name)
        .sort();
    // A plugin is a folder <kind>/<key>/ with an index.ts, named by one line of <kind>/all.ts.
    for (const kind of ['connectors', 'serializers', 'transforms']) {
      const list = readFileSync(join(root, 'src/plugins', kind, 'all.ts'), 'utf8');
      for (const key of folders(kind)) {
        expect(existsSync(join(root, 'src/plugins', kind, key, 'index.ts')), `${kind}/${key}/index.ts`).toBe(true);
        expect(
          list.split('\n').filter((l) => l.includes(`'./${key}/index.js'`)),
          `${kind}/all.ts names ${key} once`,
        ).toHaveLength(1);
      }
    }
    // Connectors keep their source and sink in one folder per technology: connectors/<key>/{source,sink}.ts.
    const connectors = folders('connectors');
    const withSide = (file: string) => connectors.filter((d) => existsSync(join(root, 'src/plugins/connectors', d, file)));
    expect([...keys.sources].sort(), 'sources').toEqual(withSide('source.ts'));
    expect([...keys.sinks].sort(), 'sinks').toEqual(withSide('sink.ts'));
    expect([...keys.serializers].sort(), 'serializers').toEqual(folders('serializers'));
    expect([...keys.transforms].sort(), 'transforms').toEqual(folders('transforms'));
  });

  it('every metric a connector folder updates is declared by its plugins, and every declaration is well formed', () => {
    const dir = join(root, 'src/plugins/connectors');
    const sourcesOf = (folder: string): string[] =>
      readdirSync(folder, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? sourcesOf(join(folder, e.name)) : e.name.endsWith('.ts') ? [readFileSync(join(folder, e.name), 'utf8')] : [],
      );
    const declaredBy = (key: string) => [...(sources.get(key)?.metrics ?? []), ...(sinks.get(key)?.metrics ?? [])];
    // `telemetry.metric('name')` or `telemetry?.metric?.('name')`: any other argument would hide a name from this check.
    const calls = (text: string) => [...text.matchAll(/telemetry\??\.metric\??\.?\(\s*([^)]*?)\s*\)/g)].map((m) => m[1]!);
    let used = 0;
    for (const key of readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)) {
      const names = new Set(declaredBy(key).map((m) => m.name));
      for (const arg of sourcesOf(join(dir, key)).flatMap(calls)) {
        const literal = /^'([a-z0-9_]+)'$/.exec(arg);
        expect(literal, `connectors/${key}: metric(${arg}) names its metric by a literal`).not.toBeNull();
        expect(names, `connectors/${key} updates ${literal![1]}: declare it in its plugin's \`metrics\``).toContain(literal![1]);
        used++;
      }
    }
    expect(used, 'the scan finds the connectors that update their own metrics').toBeGreaterThanOrEqual(9);
    // The runtime shared by every connector declares nothing of its own here: it has no plugin to declare in.
    expect(sourcesOf(join(root, 'src/plugins/connector-runtime')).flatMap(calls)).toEqual([]);
    const builtin = new Set(['svc_connector_state', 'svc_connector_state_changes_total', 'svc_source_dropped_total']);
    for (const m of connectorMetrics()) {
      expect(m.name, m.name).toMatch(/^svc_[a-z0-9_]+$/);
      expect(builtin.has(m.name), `${m.name} is the runtime's`).toBe(false);
      if (m.kind === 'counter') expect(m.name, 'a counter ends in _total').toMatch(/_total$/);
      expect(m.labels, `${m.name}: the runtime adds pipeline`).not.toContain('pipeline');
      expect(new Set(m.labels).size, `${m.name}: labels once each`).toBe(m.labels.length);
      expect(m.buckets === undefined || m.kind === 'histogram', `${m.name}: buckets only on a histogram`).toBe(true);
      expect(m.help.length, `${m.name} has help`).toBeGreaterThan(0);
    }
  });

  it('generated docs are current (run `npm run docs` after changing a schema)', () => {
    for (const [path, text] of generatedDocs()) {
      const file = join(root, 'docs', path);
      expect(existsSync(file), `docs/${path} is missing`).toBe(true);
      expect(readFileSync(file, 'utf8'), `docs/${path} is stale`).toBe(text);
    }
  });

  it('every diagnostic code is used by the code and documented, and every code used is in the catalog', () => {
    const srcText = (dir: string): string =>
      readdirSync(dir, { withFileTypes: true })
        .map((e) => (e.isDirectory() ? srcText(join(dir, e.name)) : e.name.endsWith('.ts') ? readFileSync(join(dir, e.name), 'utf8') : ''))
        .join('\n');
    const code = srcText(join(root, 'src')).replace(/export const CODES = \{[\s\S]*?\} as const;/, '');
    const used = new Set(code.match(/'CFG_[A-Z_]+'/g)!.map((s) => s.slice(1, -1)));
    expect([...used].sort()).toEqual(Object.keys(CODES).sort());
  });
});
