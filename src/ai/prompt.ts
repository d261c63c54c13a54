// What the model is told: the rules of the pipeline document and a compact catalogue of the
// registered plugins, rendered from their own TypeBox schemas (the one source, as for /api/plugins),
// one line per field: `name*: type = default — first sentence of the description` (* = required).
import type { TSchema } from '@sinclair/typebox';
import { Pipeline, SinkCommon } from '../config/pipeline-schema.js';
import { formatDiagnostic, type Diagnostic } from '../config/diagnostics.js';
import { registry as defaultRegistry } from '../plugins/registry.js';
import type { Registry } from '../config/load.js';
import type { AnyPlugin, PluginKind } from '../plugins/types.js';

/** TypeBox's SchemaOptions already admit any keyword (`description`, `enum`, `properties` ...). */
type Schema = TSchema;

/** Descriptions are cut to their first sentence and this many characters: the catalogue is sent with every request. */
const MAX_DESCRIPTION = 110;

const describe = (s: Schema): string => {
  const d = typeof s.description === 'string' ? s.description.replace(/\s+/g, ' ').trim() : '';
  // The first sentence or clause ("e.g." and "i.e." do not end one), without its closing mark.
  const first = (d.match(/^.*?(?<!\be\.g|\bi\.e)[.;:](\s|$)/)?.[0] ?? d).trim().replace(/[.;:]$/, '');
  return first.length > MAX_DESCRIPTION ? first.slice(0, MAX_DESCRIPTION - 1) + '…' : first;
};

/** A schema as a short type expression: `string`, `int`, `"a"|"b"`, `string[]`, `{k: int}`, `map`. */
export function typeExpr(s: Schema | undefined): string {
  if (!s) return 'any';
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (Array.isArray(s.enum)) return s.enum.map((v: unknown) => JSON.stringify(v)).join('|');
  const alts = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
  if (alts) return [...new Set(alts.map(typeExpr))].join('|');
  if (s.type === 'array') {
    const item = typeExpr(s.items as Schema | undefined);
    return (item.includes('|') ? `(${item})` : item) + '[]';
  }
  if (s.type === 'object') {
    const props = s.properties as Record<string, Schema> | undefined;
    if (!props || !Object.keys(props).length) return 'map';
    const req = new Set<string>(s.required ?? []);
    return `{${Object.entries(props)
      .map(([k, v]) => `${k}${req.has(k) && v.default === undefined ? '*' : ''}: ${typeExpr(v)}`)
      .join(', ')}}`;
  }
  if (s.type === 'integer') return 'int';
  return typeof s.type === 'string' ? s.type : 'any';
}

/** One line per field of an object schema; `skip` leaves out fields described elsewhere (`type`). */
function fieldLines(schema: Schema, indent: string, skip: ReadonlySet<string> = new Set(), described = true): string[] {
  const req = new Set<string>(schema.required ?? []);
  return Object.entries((schema.properties ?? {}) as Record<string, Schema>)
    .filter(([k]) => !skip.has(k))
    .map(([k, v]) => {
      const required = req.has(k) && v.default === undefined ? '*' : '';
      const def =
        v.default !== undefined && !(typeof v.default === 'object' && v.default !== null && !Array.isArray(v.default)) ? ` = ${JSON.stringify(v.default)}` : '';
      const secret = v.writeOnly ? ' (secret: write ${ENV_VAR})' : '';
      const d = described ? describe(v) : '';
      return `${indent}${k}${required}: ${typeExpr(v)}${def}${secret}${d ? ` — ${d}` : ''}`;
    });
}

function pluginBlock(p: AnyPlugin, described: boolean): string {
  const extra =
    p.kind === 'source'
      ? ` (${p.mode}: schedule ${p.mode === 'stream' ? 'stream' : 'interval, cron or manual'})`
      : p.kind === 'serializer'
        ? ` (${p.direction})`
        : '';
  const head = `${p.kind} ${p.key}${extra}: ${p.summary}`;
  const fields = fieldLines(p.config as Schema, '  ', new Set(['type']), described);
  return [head, ...fields].join('\n');
}

const KIND_ORDER: PluginKind[] = ['source', 'serializer', 'transform', 'sink'];

export interface CatalogueOptions {
  /** Only these plugins (per kind); default: all. */
  only?: Partial<Record<PluginKind, ReadonlySet<string>>>;
  /** Which plugins get their field descriptions (the rest: names, types and defaults); default: all. */
  described?: (p: AnyPlugin) => boolean;
}

/**
 * The plugin catalogue for the system prompt. Every field of every plugin with descriptions is
 * about 15k tokens; without them about half, so `generate` describes only the plugins its request
 * names (see namedIn) and lists the others' fields bare.
 */
export function pluginCatalogue(reg: Registry = defaultRegistry, opts: CatalogueOptions = {}): string {
  const blocks: string[] = [];
  for (const kind of KIND_ORDER) {
    for (const p of reg[kind].values()) if (!opts.only || opts.only[kind]?.has(p.key)) blocks.push(pluginBlock(p, opts.described?.(p) ?? true));
  }
  return blocks.join('\n');
}

/** Whether a text names a plugin: its key as a word, `_` also written as a space or a hyphen (`snmp poll`, `pm-xml`). */
export function namedIn(text: string): (p: AnyPlugin) => boolean {
  const t = text.toLowerCase();
  return (p) => new RegExp(`(^|[^a-z0-9])${p.key.toLowerCase().replace(/_/g, '[_ -]')}($|[^a-z0-9])`).test(t);
}

/** A small valid pipeline that shows the document's shape (a test keeps it valid). */
export const EXAMPLE_PIPELINE = `version: "1"
pipeline:
  name: kpi-csv-to-ndjson
  description: KPI exports in CSV -> NDJSON, every 5 minutes
  schedule: { type: interval, interval_seconds: 300 }
  source: { type: local, path: /data/kpi/in, file_pattern: "*.csv" }
  serializer_in: { type: csv }
  transforms:
    - type: filter
      expression: value > 0
  serializer_out: { type: ndjson }
  sinks:
    - type: local
      path: /data/kpi/out
      filename_template: "kpi_{timestamp}.ndjson"
`;

const documentRules = () =>
  [
    'A svc pipeline is one YAML document: `version: "1"` and a `pipeline` mapping with these fields:',
    ...fieldLines(Pipeline as Schema, '  '),
    'Each sink also takes these fields besides its own:',
    ...fieldLines(SinkCommon as Schema, '  ', new Set(['type'])),
    "Components (source, serializer_in, serializer_out, each transform and each sink) are mappings with `type` (a plugin key below) and that plugin's fields.",
    'A batch source needs schedule type interval, cron or manual; a stream source needs schedule type stream.',
    "Expressions (filter, condition, add_field) use record field names directly, e.g. `severity in ['critical', 'major'] and value > 0`.",
    'Write secrets (passwords, tokens, keys) as ${ENV_VAR} references, never as values.',
    'Example:',
    EXAMPLE_PIPELINE,
  ].join('\n');

/** System prompt of `generate`: the rules, the example and every plugin. */
export function generateSystemPrompt(catalogue: string): string {
  return [
    'You write pipeline configurations for svc, a telecom data-pipeline daemon.',
    'Answer with the complete pipeline YAML only: no prose, no explanations, no Markdown fences.',
    'Use only the plugins and fields listed below; a field marked * is required; omit fields whose default fits.',
    documentRules(),
    'Plugins (kind key: summary, then its fields):',
    catalogue,
  ].join('\n\n');
}

/** System prompt of `explain`: the rules and the plugins the YAML uses. */
export function explainSystemPrompt(catalogue: string): string {
  return [
    'You explain pipeline configurations of svc, a telecom data-pipeline daemon, to its operators.',
    'Explain in plain prose (short paragraphs or a short list): where the data comes from, when the pipeline runs, how records are',
    'decoded, transformed and filtered, and where they are written. Point out mistakes and risky settings. Do not repeat the YAML.',
    documentRules(),
    catalogue ? `The plugins this pipeline uses:\n${catalogue}` : '',
  ]
    .filter(Boolean)
    .join('\n\n');
}

/** The user message of `generate`: the request, with the pipeline to change when there is one. */
export function generateUserPrompt(prompt: string, yaml?: string): string {
  return yaml?.trim() ? `Change this pipeline as asked.\n\nRequest: ${prompt}\n\nCurrent pipeline:\n${yaml}` : prompt;
}

export function explainUserPrompt(prompt: string, yaml: string, problems: Diagnostic[]): string {
  const question = prompt.trim() || 'Explain what this pipeline does.';
  const found = problems.length ? `\n\nsvc validate reports:\n${problems.map((d) => '- ' + formatDiagnostic(d)).join('\n')}` : '';
  return `${question}\n\nPipeline:\n${yaml}${found}`;
}

/** The second round of `generate`: the model's answer failed validation. */
export function repairPrompt(problems: Diagnostic[]): string {
  return ['svc validate rejects that YAML:', ...problems.map((d) => '- ' + formatDiagnostic(d)), 'Answer with the corrected complete pipeline YAML only.'].join(
    '\n',
  );
}
