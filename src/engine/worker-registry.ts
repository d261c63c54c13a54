// The plugins a chunk worker needs, loaded alone: the serializers and transforms its plan names.
// A worker that imported the whole registry (every plugin and the libraries they import) spent
// about half a second starting, a third of a million-record run on two threads.
import type { PipelineConfig } from '../config/pipeline-schema.js';
import type { Registry } from '../config/load.js';
import type { AnyPlugin, PluginKind } from '../plugins/types.js';
import { loadPlugin, type ModuleImporter } from '../plugins/loader.js';

/** What buildPlan looks up for `config` (sinks themselves are not needed: the worker is told which take records). */
export function planPlugins(config: PipelineConfig): [PluginKind, string][] {
  const serializers = [config.serializer_in, config.serializer_out, ...config.sinks.map((s) => s.serializer_out)];
  const transforms = [...config.transforms, ...config.sinks.flatMap((s) => s.transforms)];
  return [
    ...serializers.flatMap((c) => (c ? [['serializer', c.type] as [PluginKind, string]] : [])),
    ...transforms.map((t) => ['transform', t.type] as [PluginKind, string]),
  ];
}

/**
 * A registry of exactly `planPlugins(config)`; the full one when a plugin is not where the convention
 * puts it. `load` imports a module (a worker run from TypeScript sources must use require()).
 */
export async function workerRegistry(config: PipelineConfig, load: ModuleImporter): Promise<Registry> {
  const reg: Record<PluginKind, Map<string, AnyPlugin>> = { source: new Map(), sink: new Map(), serializer: new Map(), transform: new Map() };
  for (const [kind, key] of planPlugins(config)) {
    if (reg[kind].has(key)) continue;
    const plugin = await loadPlugin(kind, key, load);
    if (!plugin) return ((await load(new URL('../plugins/registry.js', import.meta.url))) as { registry: Registry }).registry;
    reg[kind].set(key, plugin);
  }
  return reg;
}
