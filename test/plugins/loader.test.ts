import { describe, expect, it } from 'vitest';
import { loadPlugin, pluginModulePaths } from '../../src/plugins/loader.js';
import { registry } from '../../src/plugins/registry.js';
import type { PluginKind } from '../../src/plugins/types.js';

describe('loading one plugin by its key (src/plugins/loader.ts)', () => {
  it('finds every registered plugin where the folder convention puts it, as the same object', async () => {
    for (const [kind, plugins] of Object.entries(registry) as [PluginKind, typeof registry.source][]) {
      for (const [key, plugin] of plugins) expect(await loadPlugin(kind, key), `${kind} ${key} (${pluginModulePaths(kind, key).join(' or ')})`).toBe(plugin);
    }
  });

  it('answers undefined for an unknown key, a key of another kind, and a key that is a path', async () => {
    expect(await loadPlugin('transform', 'no_such_thing')).toBeUndefined();
    expect(await loadPlugin('sink', 'rename')).toBeUndefined(); // a transform, not a sink
    expect(await loadPlugin('source', 'kafka')).toBe(registry.source.get('kafka'));
    for (const key of ['../registry', '..', 'sources/local', 'LOCAL', '']) expect(await loadPlugin('source', key)).toBeUndefined();
  });
});
