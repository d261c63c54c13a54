// What a pipeline's source needs from the deployment, as the source itself declares it
// (SourcePlugin.resources, src/plugins/types.ts): the ports it listens on, or the worker ingress it
// takes pushes on. The cluster names no source type: a new listening source gets its Service and
// its placement from its own declaration (docs/connectors/README.md, "What a source needs from the
// deployment").
import { Value } from '@sinclair/typebox/value';
import type { ComponentConfig } from '../config/pipeline-schema.js';
import { sources as registeredSources } from '../plugins/registry.js';
import type { AnyPlugin, SourcePlugin, SourceResource } from '../plugins/types.js';

/** Source plugins by type: the registry's, or one a test builds (a Registry's `source`). */
export type SourceLookup = ReadonlyMap<string, AnyPlugin>;

/**
 * The resources `source` declares, with its schema defaults applied first (a syslog source without
 * `port` listens on the 514 of its schema). [] for an unknown type or a source that declares none.
 */
export function sourceResources(source: ComponentConfig, sources: SourceLookup = registeredSources): SourceResource[] {
  const p = sources.get(source.type) as SourcePlugin | undefined;
  if (p?.kind !== 'source' || !p.resources) return [];
  return p.resources(Value.Default(p.config, Value.Clone(source)) as never);
}

/**
 * The source takes pushes any replica may answer: on the worker ingress (webhook, prometheus_rw) or
 * on listen ports it declares `pushes` (otlp). Its stream runs on every worker.
 */
export function takesIngressPushes(source: ComponentConfig, sources: SourceLookup = registeredSources): boolean {
  return sourceResources(source, sources).some((r) => r.kind === 'ingress' || (r.kind === 'listen' && r.pushes === true));
}
