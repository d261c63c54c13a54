// Pipeline YAML sent to a provider (explain, or generate with a pipeline to change) leaves the
// machine: secret values in it are masked first, found the way run records find them (fields
// marked writeOnly in the plugin's schema, secret-sounding names, URL credentials). A ${VAR}
// reference is not a secret and stays, so the model still sees where one is used.
import type { TSchema } from '@sinclair/typebox';
import { redactor, secretsOf } from '../core/secrets.js';
import { registry as defaultRegistry } from '../plugins/registry.js';
import type { Registry } from '../config/load.js';
import { parseYamlBounded } from '../config/yaml-bounds.js';
import type { PluginKind } from '../plugins/types.js';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const REFERENCE = /^\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}$/;

/** Each component of a parsed pipeline with its kind: source, serializers, transforms, sinks (and theirs), dlq. */
function components(p: Record<string, unknown>): [PluginKind, unknown][] {
  const list = (v: unknown) => (Array.isArray(v) ? v : []);
  const out: [PluginKind, unknown][] = [
    ['source', p.source],
    ['serializer', p.serializer_in],
    ['serializer', p.serializer_out],
    ['sink', p.dlq],
  ];
  for (const t of list(p.transforms)) out.push(['transform', t]);
  for (const s of list(p.sinks)) {
    out.push(['sink', s]);
    if (isObj(s)) {
      for (const t of list(s.transforms)) out.push(['transform', t]);
      out.push(['serializer', s.serializer_out]);
    }
  }
  return out;
}

/** Plugin keys the YAML uses, per kind (to describe just those to the model). */
export function pluginsUsed(yaml: string): Record<PluginKind, Set<string>> {
  const used: Record<PluginKind, Set<string>> = { source: new Set(), sink: new Set(), serializer: new Set(), transform: new Set() };
  const p = parsedPipeline(yaml);
  if (p) for (const [kind, c] of components(p)) if (isObj(c) && typeof c.type === 'string') used[kind].add(c.type);
  return used;
}

function parsedPipeline(yaml: string): Record<string, unknown> | undefined {
  try {
    // Bounded: the YAML comes from an API caller (an alias bomb, deep nesting are errors here).
    const doc: unknown = parseYamlBounded(yaml);
    return isObj(doc) && isObj(doc.pipeline) ? doc.pipeline : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A function that replaces every secret value of `yaml` with `***` in any text (the YAML itself, or a
 * message quoting it); for text that does not parse, URL credentials only.
 */
export function secretMasker(yaml: string, reg: Registry = defaultRegistry): (text: string) => string {
  const secrets = new Set<string>();
  const p = parsedPipeline(yaml);
  if (p) {
    for (const [kind, c] of components(p)) {
      if (!isObj(c)) continue;
      const schema = typeof c.type === 'string' ? (reg[kind].get(c.type)?.config as TSchema | undefined) : undefined;
      secretsOf(schema, c, secrets);
    }
  }
  return redactor([...secrets].filter((s) => !REFERENCE.test(s)));
}
