// The registry of `svc validate` (src/cli/plugin-loader.ts): the plugins a file names, each under
// every kind it exists as, the very objects the full registry holds.
import { describe, expect, it } from 'vitest';
import { namedTypes, registryFor } from '../../src/cli/plugin-loader.js';
import { registry } from '../../src/plugins/registry.js';

describe('plugin-loader', () => {
  it('collects the type of every component, nested or not, and builds a registry of them', async () => {
    const text = `pipeline:
  source: { type: local }
  transforms: [{ type: rename }, { type: filter }]
  sinks: [{ type: local, serializer_out: { type: csv } }]
  dlq: { type: kafka }
`;
    expect([...namedTypes(text)].sort()).toEqual(['csv', 'filter', 'kafka', 'local', 'rename']);
    expect(namedTypes('pipeline: [')).toEqual(new Set());
    const reg = await registryFor(text);
    expect([...reg.source.keys()].sort()).toEqual(['kafka', 'local']);
    expect([...reg.sink.keys()].sort()).toEqual(['kafka', 'local']);
    expect([...reg.transform.keys()].sort()).toEqual(['filter', 'rename']);
    expect(reg.serializer.get('csv')).toBe(registry.serializer.get('csv'));
  });
});
