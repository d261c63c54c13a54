// The JSON Schema that applies at a path of a pipeline document, from GET /api/plugins/schemas: the
// pipeline document's own schema, and at each component (source, sinks[i], transforms[i], the
// serializers, dlq) the schema of the plugin its `type` names. Feeds completion and hover.
import type { JsonSchema, PluginDoc, PluginSchemas } from '../api/types.js';
import type { Seg } from './yaml-outline.js';

export type ComponentKind = 'source' | 'sink' | 'serializer' | 'transform';

const CATEGORY = { source: 'sources', sink: 'sinks', serializer: 'serializers', transform: 'transforms' } as const;

/** Which kind of component sits at `path`, if any. */
export function componentKindAt(path: readonly Seg[]): ComponentKind | undefined {
  switch (path.map((s) => (typeof s === 'number' ? '#' : s)).join('/')) {
    case 'pipeline/source':
      return 'source';
    case 'pipeline/sinks/#':
    case 'pipeline/dlq':
      return 'sink';
    case 'pipeline/serializer_in':
    case 'pipeline/serializer_out':
    case 'pipeline/sinks/#/serializer_out':
    case 'pipeline/dlq/serializer_out':
      return 'serializer';
    case 'pipeline/transforms/#':
    case 'pipeline/sinks/#/transforms/#':
    case 'pipeline/dlq/transforms/#':
      return 'transform';
    default:
      return undefined;
  }
}

const variants = (s: JsonSchema): JsonSchema[] => [s, ...(s.anyOf ?? []), ...(s.oneOf ?? [])];

function child(s: JsonSchema, seg: Seg): JsonSchema | undefined {
  for (const v of variants(s)) {
    if (typeof seg === 'number' && v.items) return v.items;
    if (typeof seg === 'string' && v.properties?.[seg]) return v.properties[seg];
  }
  for (const v of variants(s)) if (typeof seg === 'string' && typeof v.additionalProperties === 'object') return v.additionalProperties;
  return undefined;
}

export class SchemaIndex {
  constructor(readonly schemas: PluginSchemas) {}

  plugins(kind: ComponentKind): Record<string, PluginDoc> {
    return this.schemas[CATEGORY[kind]];
  }

  plugin(kind: ComponentKind, key: string | undefined): PluginDoc | undefined {
    return key ? this.plugins(kind)[key] : undefined;
  }

  private root(): JsonSchema {
    return {
      type: 'object',
      properties: { version: { const: '1', description: 'Format version of the pipeline document: always "1".' }, pipeline: this.schemas.pipeline },
      required: ['version', 'pipeline'],
    };
  }

  /** A component's schema: `type`, the sink common fields for sinks, and the named plugin's parameters. */
  component(kind: ComponentKind, type: string | undefined): JsonSchema {
    const doc = this.plugin(kind, type);
    const common = kind === 'sink' ? { ...this.schemas.sink_common.properties } : {};
    delete common.type;
    return {
      type: 'object',
      description: doc?.summary,
      properties: {
        type: { type: 'string', description: `The ${kind} plugin to use.`, enum: Object.keys(this.plugins(kind)) },
        ...common,
        ...(doc?.schema.properties ?? {}),
      },
      required: ['type', ...(doc?.schema.required ?? [])],
    };
  }

  /** The schema at `path`; `typeOf(componentPath)` says which plugin a component names. */
  at(path: readonly Seg[], typeOf: (componentPath: Seg[]) => string | undefined): JsonSchema | undefined {
    let s: JsonSchema | undefined = this.root();
    for (let i = 0; i < path.length && s; i++) {
      const prefix = path.slice(0, i + 1);
      const kind = componentKindAt(prefix);
      s = kind ? this.component(kind, typeOf(prefix)) : child(s, path[i]!);
    }
    return s;
  }
}

/** A key the user must write: required by the schema and without a default to fall back on. */
export function mustWrite(holder: JsonSchema | undefined, key: string): boolean {
  return !!holder?.required?.includes(key) && holder.properties?.[key]?.default === undefined;
}

/** Keys an object schema takes (over all its variants), with their schemas. */
export function keyOptions(s: JsonSchema): [string, JsonSchema][] {
  const seen = new Map<string, JsonSchema>();
  for (const v of variants(s)) for (const [k, p] of Object.entries(v.properties ?? {})) if (!seen.has(k)) seen.set(k, p);
  return [...seen];
}

/** Values a scalar schema allows, when they can be listed. */
export function valueOptions(s: JsonSchema): string[] {
  const out = new Set<string>();
  for (const v of variants(s)) {
    if (v.const !== undefined) out.add(String(v.const));
    for (const e of v.enum ?? []) out.add(String(e));
    if (v.type === 'boolean') ['true', 'false'].forEach((b) => out.add(b));
  }
  return [...out];
}

/** A short type label: string, integer ≥ 1, one of a | b, list, object. */
export function typeLabel(s: JsonSchema): string {
  const values = valueOptions(s);
  if (values.length && s.type !== 'boolean') return values.length <= 6 ? `one of ${values.join(' | ')}` : 'one of the registered keys';
  const types = variants(s)
    .map((v) => (Array.isArray(v.type) ? v.type.join(' | ') : v.type))
    .filter(Boolean);
  const t = types[0] ?? 'any';
  const range = [s.minimum !== undefined ? `≥ ${s.minimum}` : '', s.maximum !== undefined ? `≤ ${s.maximum}` : ''].filter(Boolean).join(', ');
  return (t === 'array' ? 'list' : t) + (range ? ` ${range}` : '');
}

/** The hover text of a key: type, default, description. */
export function describe(key: string, s: JsonSchema, required: boolean): { title: string; body: string } {
  const def = s.default !== undefined ? ` · default ${JSON.stringify(s.default)}` : '';
  return { title: `${key}: ${typeLabel(s)}${required ? ' · required' : ''}${def}`, body: s.description ?? '' };
}
