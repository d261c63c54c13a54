// Loading single plugins without the registry's list: a plugin's module sits where
// docs/development.md says (serializers/<key>/index.ts and transforms/<key>/index.ts, whose default
// export is the plugin; connectors/<key>/source.ts and sink.ts, which the folder's index.ts exports as
// `source` and `sink`), so a key finds its module. A side is loaded from its own module, not from the
// folder's index.ts, so that a source does not load its sink. Loading every plugin module (and the
// libraries they import) costs about half a second; a command that checks one file, or a worker
// thread that runs one plan, needs a handful.
// test/plugins/loader.test.ts checks that every registered plugin is found this way.
import type { AnyPlugin, PluginKind } from './types.js';

/** Loads the module at a file: URL. */
export type ModuleImporter = (url: URL) => Promise<unknown>;

const importUrl: ModuleImporter = (url) => import(/* @vite-ignore */ url.href);

/** Where the module of plugin `key` of `kind` may be, relative to src/plugins/. */
export function pluginModulePaths(kind: PluginKind, key: string): string[] {
  if (kind === 'source' || kind === 'sink') return [`./connectors/${key}/${kind}.js`];
  return [`./${kind}s/${key}/index.js`];
}

/** The plugin `key` of `kind`, or undefined when no module by the convention declares it. */
export async function loadPlugin(kind: PluginKind, key: string, load: ModuleImporter = importUrl): Promise<AnyPlugin | undefined> {
  // Keys come from the user's file: never let one name a path outside the plugin folders.
  if (!/^[a-z0-9_]+$/.test(key)) return undefined;
  for (const path of pluginModulePaths(kind, key)) {
    // A missing module means "not here"; a broken one shows up when the full registry is loaded.
    const mod = (await load(new URL(path, import.meta.url)).catch(() => undefined)) as { default?: AnyPlugin } | undefined;
    const plugin = mod?.default;
    if (plugin?.kind === kind && plugin.key === key) return plugin;
  }
  return undefined;
}
