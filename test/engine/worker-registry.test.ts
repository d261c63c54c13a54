import { describe, expect, it } from 'vitest';
import { planPlugins, workerRegistry } from '../../src/engine/worker-registry.js';
import { registry } from '../../src/plugins/registry.js';
import { pipeline } from '../helpers/pipeline.js';

const config = pipeline(`
version: "1"
pipeline:
  name: w
  schedule: { type: manual }
  source: { type: local, path: /nonexistent }
  serializer_in: { type: csv }
  transforms:
    - { type: rename, fields: { a: b } }
    - { type: filter, expression: b > 1 }
  serializer_out: { type: ndjson }
  sinks:
    - { type: local, path: /nonexistent }
    - { type: local, path: /nonexistent, serializer_out: { type: xml }, transforms: [{ type: cast, fields: { b: int } }, { type: rename, fields: { b: c } }] }
`);

const importUrl = (url: URL) => import(url.href);

describe('the registry of a chunk worker', () => {
  it('names the serializers and transforms of the plan, sink-level ones included, and no source or sink', () => {
    expect(planPlugins(config)).toEqual([
      ['serializer', 'csv'],
      ['serializer', 'ndjson'],
      ['serializer', 'xml'],
      ['transform', 'rename'],
      ['transform', 'filter'],
      ['transform', 'cast'],
      ['transform', 'rename'],
    ]);
  });

  it('holds exactly those plugins, the same objects as the full registry', async () => {
    const reg = await workerRegistry(config, importUrl);
    expect([...reg.serializer.keys()].sort()).toEqual(['csv', 'ndjson', 'xml']);
    expect([...reg.transform.keys()].sort()).toEqual(['cast', 'filter', 'rename']);
    expect(reg.source.size + reg.sink.size).toBe(0);
    expect(reg.serializer.get('csv')).toBe(registry.serializer.get('csv'));
  });

  it('falls back to the full registry for a plugin that is not where the convention puts it', async () => {
    const odd = { ...config, transforms: [{ type: 'no_such_transform' }] };
    expect(await workerRegistry(odd, importUrl)).toBe(registry);
  });
});
