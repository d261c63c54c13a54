// The editor's pure helpers: where the cursor is in half-typed pipeline YAML (ui/src/editor/
// yaml-outline.ts) and which plugin schema applies there (schema-lookup.ts).
import { describe, expect, it } from 'vitest';
import { contextAt, entryAt, outline, valueAt } from '../../ui/src/editor/yaml-outline.js';
import { componentKindAt, keyOptions, SchemaIndex, typeLabel, valueOptions } from '../../ui/src/editor/schema-lookup.js';
import { pluginSchemas } from '../../src/api/routes/plugins.js';
import type { PluginSchemas } from '../../ui/src/api/types.js';

const DOC = `version: "1"
pipeline:
  name: demo   # a comment
  description: |
    type: not-a-key
  schedule:
    type: manual
  source:
    type: local
    path: /in
  transforms:
    - type: filter
      expression: x > 1
    - type: rename
  sinks:
  - type: local
    path: "/out"
  - type: kafka
    topic: t
`;

/** Offset just after the first occurrence of `marker` (after `nth` earlier ones). */
const after = (text: string, marker: string, nth = 0) => {
  let i = -1;
  for (let n = 0; n <= nth; n++) i = text.indexOf(marker, i + 1);
  return i + marker.length;
};

describe('outline', () => {
  it('gives every key its full path, sequences with either indentation, and skips block scalars and comments', () => {
    const paths = outline(DOC).map((e) => e.path.join('.'));
    expect(paths).toEqual([
      'version',
      'pipeline',
      'pipeline.name',
      'pipeline.description',
      'pipeline.schedule',
      'pipeline.schedule.type',
      'pipeline.source',
      'pipeline.source.type',
      'pipeline.source.path',
      'pipeline.transforms',
      'pipeline.transforms.0.type',
      'pipeline.transforms.0.expression',
      'pipeline.transforms.1.type',
      'pipeline.sinks',
      'pipeline.sinks.0.type',
      'pipeline.sinks.0.path',
      'pipeline.sinks.1.type',
      'pipeline.sinks.1.topic',
    ]);
    const entries = outline(DOC);
    expect(valueAt(entries, ['pipeline', 'name'])).toBe('demo');
    expect(valueAt(entries, ['pipeline', 'sinks', 0, 'path'])).toBe('/out');
    expect(valueAt(entries, ['pipeline', 'sinks', 1, 'type'])).toBe('kafka');
    const hit = entryAt(entries, after(DOC, 'expr'));
    expect(hit?.entry.path).toEqual(['pipeline', 'transforms', 0, 'expression']);
    expect(hit?.on).toBe('key');
  });
});

describe('contextAt', () => {
  it('a key being typed: the mapping it goes into', () => {
    const text = DOC.replace('    path: /in\n', '    path: /in\n    fil');
    expect(contextAt(text, after(text, '    fil'))).toEqual({
      kind: 'key',
      container: ['pipeline', 'source'],
      prefix: 'fil',
      from: after(text, '    fil') - 3,
    });
    const item = 'pipeline:\n  sinks:\n    - type: local\n    - ty';
    expect(contextAt(item, item.length)).toMatchObject({ kind: 'key', container: ['pipeline', 'sinks', 1], prefix: 'ty' });
    const inItem = 'pipeline:\n  sinks:\n    - type: local\n      ';
    expect(contextAt(inItem, inItem.length)).toMatchObject({ kind: 'key', container: ['pipeline', 'sinks', 0], prefix: '' });
    const top = 'version: "1"\npi';
    expect(contextAt(top, top.length)).toMatchObject({ kind: 'key', container: [], prefix: 'pi' });
  });

  it('a value being typed: the key it belongs to', () => {
    const text = 'pipeline:\n  sinks:\n  - type: ka';
    expect(contextAt(text, text.length)).toEqual({ kind: 'value', path: ['pipeline', 'sinks', 0, 'type'], prefix: 'ka', from: text.length - 2 });
  });

  it('nothing inside comments, block scalars and flow collections', () => {
    expect(contextAt(DOC, after(DOC, '# a com'))).toBeUndefined();
    expect(contextAt(DOC, after(DOC, 'type: not-a'))).toBeUndefined();
    const flow = 'pipeline:\n  source: { type: lo';
    expect(contextAt(flow, flow.length)).toBeUndefined();
  });
});

describe('SchemaIndex (with the daemon plugin schemas)', () => {
  const index = new SchemaIndex(pluginSchemas() as unknown as PluginSchemas);
  const entries = outline(DOC);
  const typeOf = (p: (string | number)[]) => valueAt(entries, [...p, 'type']);

  it('knows the component kind of a path', () => {
    expect(componentKindAt(['pipeline', 'source'])).toBe('source');
    expect(componentKindAt(['pipeline', 'sinks', 3])).toBe('sink');
    expect(componentKindAt(['pipeline', 'sinks', 0, 'transforms', 2])).toBe('transform');
    expect(componentKindAt(['pipeline', 'serializer_in'])).toBe('serializer');
    expect(componentKindAt(['pipeline', 'schedule'])).toBeUndefined();
  });

  it('offers the pipeline keys, a plugin`s parameters with the sink common fields, and allowed values', () => {
    expect(keyOptions(index.at(['pipeline'], typeOf)!).map(([k]) => k)).toEqual(expect.arrayContaining(['name', 'schedule', 'source', 'sinks', 'on_error']));
    const localSource = keyOptions(index.at(['pipeline', 'source'], typeOf)!).map(([k]) => k);
    expect(localSource).toEqual(expect.arrayContaining(['type', 'path', 'file_pattern', 'move_after_read']));
    const kafkaSink = keyOptions(index.at(['pipeline', 'sinks', 1], typeOf)!).map(([k]) => k);
    expect(kafkaSink).toEqual(expect.arrayContaining(['type', 'topic', 'retry_count', 'condition']));
    expect(valueOptions(index.at(['pipeline', 'schedule', 'type'], typeOf)!)).toEqual(['interval', 'cron', 'manual', 'stream']);
    expect(valueOptions(index.at(['pipeline', 'sinks', 0, 'type'], typeOf)!)).toContain('local');
    expect(typeLabel(index.at(['pipeline', 'source', 'recursive'], typeOf)!)).toBe('boolean');
    expect(index.at(['pipeline', 'source', 'path'], typeOf)!.description).toMatch(/Directory/);
  });
});
