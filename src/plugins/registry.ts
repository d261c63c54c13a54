// The plugins, built from one list per kind (connectors/all.ts, serializers/all.ts,
// transforms/all.ts: one line per plugin folder). Validation, `svc plugins`, /api/plugins and
// docs/plugins/ are all built from these maps; adding a plugin means writing its folder and adding
// its line to its kind's list.
import type { AnyPlugin, MetricDeclaration, PluginEngine, PluginKind, SerializerPlugin, SinkPlugin, SourcePlugin, TransformPlugin } from './types.js';

import * as connectors from './connectors/all.js';
import * as serializerList from './serializers/all.js';
import * as transformList from './transforms/all.js';

const byKey = <P extends AnyPlugin>(list: P[]) => new Map(list.map((p) => [p.key, p] as const));
/** Each connector folder's index.ts exports its `source` and/or its `sink`. */
const sides = Object.values(connectors) as { source?: SourcePlugin; sink?: SinkPlugin }[];

export const sources: ReadonlyMap<string, SourcePlugin> = byKey(sides.flatMap((c) => (c.source ? [c.source] : [])));
export const sinks: ReadonlyMap<string, SinkPlugin> = byKey(sides.flatMap((c) => (c.sink ? [c.sink] : [])));
export const serializers: ReadonlyMap<string, SerializerPlugin> = byKey<SerializerPlugin>(Object.values(serializerList));
export const transforms: ReadonlyMap<string, TransformPlugin> = byKey<TransformPlugin>(Object.values(transformList));

export const registry: Record<PluginKind, ReadonlyMap<string, AnyPlugin>> = {
  source: sources,
  sink: sinks,
  serializer: serializers,
  transform: transforms,
};

/** Registered keys by category, and the engines of the connectors that choose one (kafka): `GET /api/plugins` and `svc plugins --json`. */
export function pluginKeys() {
  return {
    sources: [...sources.keys()],
    sinks: [...sinks.keys()],
    serializers: [...serializers.keys()],
    transforms: [...transforms.keys()],
    engines: pluginEngines(),
  };
}

/** The engine each connector with a choice would run on here, by key (judged from the files: nothing is loaded). */
export function pluginEngines(): Record<string, PluginEngine> {
  const out: Record<string, PluginEngine> = {};
  for (const p of [...sources.values(), ...sinks.values()]) if (p.engine && !out[p.key]) out[p.key] = p.engine();
  return out;
}

/**
 * The metrics the connectors declare, each once (a folder's source and sink may share one): the
 * runtime registers them on every daemon's registry. Two different declarations of one name are a
 * programming error, thrown at load.
 */
export function connectorMetrics(): MetricDeclaration[] {
  const byName = new Map<string, MetricDeclaration>();
  for (const p of [...sources.values(), ...sinks.values()]) {
    for (const m of p.metrics ?? []) {
      const seen = byName.get(m.name);
      if (seen && JSON.stringify(seen) !== JSON.stringify(m)) throw new Error(`metric ${m.name} is declared twice, differently (${p.kind} ${p.key})`);
      byName.set(m.name, m);
    }
  }
  return [...byName.values()];
}
