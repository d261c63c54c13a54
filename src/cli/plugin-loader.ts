// A registry holding only the plugins a pipeline file names, for `svc validate`: loading every
// plugin module (and the libraries they import) costs most of a second, one file needs a handful.
// Each is found by its key alone (src/plugins/loader.ts).
import type { Registry } from '../config/pipeline-check.js';
import { parseYamlBounded } from '../config/yaml-bounds.js';
import { loadPlugin } from '../plugins/loader.js';
import type { AnyPlugin, PluginKind } from '../plugins/types.js';

const KINDS: readonly PluginKind[] = ['source', 'sink', 'serializer', 'transform'];

/** Every string under a `type` key anywhere in the YAML text (unparsable text: none). */
export function namedTypes(text: string): Set<string> {
  const found = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === 'type' && typeof x === 'string') found.add(x);
        else walk(x);
      }
    }
  };
  try {
    // Bounded: an alias bomb must not be expanded here, before the checker refuses it.
    walk(parseYamlBounded(text));
  } catch {
    // The checker reports the syntax error (or the bound) itself.
  }
  return found;
}

/**
 * A registry of the plugins `text` names, each under every kind it exists as. Lookups of other keys
 * miss, so a caller must not trust an "unknown plugin" answer from it (validate.ts falls back to the
 * full registry then).
 */
export async function registryFor(text: string): Promise<Registry> {
  const reg = Object.fromEntries(KINDS.map((k) => [k, new Map<string, AnyPlugin>()])) as Record<PluginKind, Map<string, AnyPlugin>>;
  const loads = [...namedTypes(text)].flatMap((key) =>
    KINDS.map(async (kind) => {
      const plugin = await loadPlugin(kind, key);
      if (plugin) reg[kind].set(key, plugin);
    }),
  );
  await Promise.all(loads);
  return reg;
}
