// Generates the reference pages in docs/ from the schemas: one page per plugin, the pipeline
// definition, and the diagnostic code catalog. `npm run docs` writes them; a test fails when the
// checked-in pages differ from what the schemas say.
import { Kind, type TObject, type TSchema } from '@sinclair/typebox';
import { CODES } from '../config/diagnostics.js';
import { HTTP_ERRORS } from '../core/http-errors.js';
import { Pipeline, Schedule, SinkCommon } from '../config/pipeline-schema.js';
import { typeOf } from '../config/schema-errors.js';
import { registry } from '../plugins/registry.js';
import { SETTINGS } from '../settings.js';
import type { AnyPlugin, Example, PluginKind } from '../plugins/types.js';

const GENERATED = '<!-- Generated from the plugin schemas by `npm run docs`; do not edit by hand. -->';

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function fmtDefault(s: TSchema): string {
  if (!('default' in s)) return '';
  return '`' + JSON.stringify(s.default) + '`';
}

/** A markdown table of an object schema's fields. */
export function fieldTable(schema: TObject): string {
  const required = new Set(schema.required ?? []);
  const rows = Object.entries(schema.properties).map(([name, s]) => {
    const t = s[Kind] === 'Object' && s.additionalProperties !== false && Object.keys(s.properties ?? {}).length <= 1 ? 'component' : typeOf(s);
    const secret = s.writeOnly ? ' Secret: masked in every error, log line and answer.' : '';
    return `| ${name} | ${cell(t)} | ${required.has(name) && !('default' in s) ? 'yes' : ''} | ${fmtDefault(s)} | ${cell((s.description ?? '') + secret)} |`;
  });
  return ['| Field | Type | Required | Default | Description |', '|---|---|---|---|---|', ...rows].join('\n');
}

const KIND_DIR: Record<PluginKind, string> = { source: 'sources', sink: 'sinks', serializer: 'serializers', transform: 'transforms' };

function examplePart(e: Example): string {
  const parts = [`### ${e.title}`, '```yaml\n' + e.yaml.trim() + '\n```'];
  if (e.worked) {
    const enc = e.worked.encoding ?? 'utf8';
    parts.push(enc === 'utf8' ? 'Input:' : `Input (${enc}):`, '```\n' + e.worked.input.replace(/\n$/, '') + '\n```');
    parts.push('Records:', '```json\n' + e.worked.records.map((r) => JSON.stringify(r)).join('\n') + '\n```');
  }
  return parts.join('\n\n');
}

/** The metrics a connector declares (its metrics.ts), as its runs report them on /metrics. */
function metricsPart(p: AnyPlugin): string {
  const declared = p.kind === 'source' || p.kind === 'sink' ? (p.metrics ?? []) : [];
  if (!declared.length) return '';
  const rows = declared.map((m) => `| \`${m.name}\` | ${m.kind} | ${['pipeline', ...m.labels].map((l) => `\`${l}\``).join(', ')} | ${cell(m.help)} |`);
  return [
    '## Metrics',
    'Besides the metrics every pipeline has ([observability](../../observability.md#metrics)), on the `/metrics` of the daemon or worker that runs it:',
    ['| Metric | Type | Labels | Help |', '|---|---|---|---|', ...rows].join('\n'),
  ].join('\n\n');
}

function pluginPage(p: AnyPlugin): string {
  const facts: string[] = [];
  if (p.kind === 'source') facts.push(`Mode: ${p.mode === 'both' ? 'batch or stream (by the schedule)' : p.mode}.`);
  if (p.kind === 'sink')
    facts.push(
      `Takes: ${p.accepts === 'records' ? 'records' : 'the serialized payload'}. Also takes the [sink common fields](../../pipeline.md#sink-common-fields).`,
    );
  if (p.kind === 'serializer')
    facts.push(`Direction: ${p.direction === 'both' ? 'read and write' : p.direction === 'in' ? 'read only (serializer_in)' : 'write only'}.`);
  if (p.kind === 'transform' && p.stateful) facts.push('Stateful: needs `thread_workers: 1` and the pipeline-level transform chain (rule 4).');
  const examples = p.examples.map(examplePart).join('\n\n');
  const delivery =
    p.kind === 'source' || p.kind === 'sink' ? `**Delivery: ${p.delivery.guarantee}.** ${p.delivery.why[0]!.toUpperCase()}${p.delivery.why.slice(1)}` : '';
  return [
    GENERATED,
    `# ${p.kind} \`${p.key}\``,
    p.summary,
    facts.join(' '),
    delivery,
    '## Parameters',
    Object.keys(p.config.properties).length ? fieldTable(p.config) : 'None.',
    metricsPart(p),
    examples ? `## Examples\n\n${examples}` : '',
  ]
    .filter(Boolean)
    .join('\n\n')
    .concat('\n');
}

function indexPage(): string {
  const sections = (Object.keys(KIND_DIR) as PluginKind[]).map((kind) => {
    const lines = [...registry[kind].values()].map((p) => `- [\`${p.key}\`](${KIND_DIR[kind]}/${p.key}.md): ${p.summary}`);
    return `## ${KIND_DIR[kind][0]!.toUpperCase()}${KIND_DIR[kind].slice(1)}\n\n${lines.join('\n')}`;
  });
  return [GENERATED, '# Plugin reference', ...sections].join('\n\n') + '\n';
}

function pipelinePage(): string {
  return (
    [
      GENERATED,
      '# Pipeline definition',
      'A pipeline file is YAML with `version: "1"` and a `pipeline` object. See [configuration.md](configuration.md) for the execution rules and examples.',
      '## Pipeline fields',
      fieldTable(Pipeline),
      '## Schedule',
      fieldTable(Schedule),
      '## Sink common fields',
      'Every sink takes these on top of its own parameters; the runtime implements them.',
      fieldTable(SinkCommon),
    ].join('\n\n') + '\n'
  );
}

function errorsPage(): string {
  const rows = Object.entries(CODES).map(([code, text]) => `| \`${code}\` | ${cell(text)} |`);
  return (
    [
      GENERATED,
      '# Configuration diagnostics',
      'Every problem `svc validate` (and the API) reports has the form `file:line:col path: message [CODE]`; all problems are reported at once.',
      ['| Code | Meaning |', '|---|---|', ...rows].join('\n'),
    ].join('\n\n') + '\n'
  );
}

function apiErrorsPage(): string {
  const rows = Object.entries(HTTP_ERRORS).map(([code, e]) => `| \`${code}\` | ${e.status} | ${cell(e.meaning)} |`);
  return (
    [
      GENERATED,
      '# HTTP errors',
      'Every error the pipeline API (`svc serve`), the operator console and a worker\'s ingress answer has the body `{"detail": "..."}`: one sentence that says what is wrong and what to do. Each comes from one catalog (src/core/http-errors.ts) of stable codes; the code is the error\'s stable name (`code` of the thrown error), the status the HTTP status of the answer.',
      ['| Code | Status | Meaning |', '|---|---|---|', ...rows].join('\n'),
    ].join('\n\n') + '\n'
  );
}

function settingsPage(): string {
  // Defaults that depend on the machine are described rather than shown.
  const machine: Record<string, string> = {
    DB_PATH: '`~/.svc/svc.db`',
    NODE_ID: 'host name',
    WORKER_ID: 'host name',
    AUTH_SECRET: 'random at each start',
    SMTP_FROM: '`svc@<host name>`',
    UI_DIR: 'the bundled UI (`dist/ui` of the package)',
  };
  const rows = Object.entries(SETTINGS).map(([k, spec]) => {
    const def =
      machine[k] ??
      (() => {
        const v = (spec.default as (env: Record<string, string | undefined>) => unknown)({});
        return Array.isArray(v) ? (v.length ? '`' + v.join(',') + '`' : 'empty') : v === '' ? 'empty' : '`' + String(v) + '`';
      })();
    return `| \`SVC_${k}\` | ${def} | ${cell(spec.doc)} |`;
  });
  return (
    [
      GENERATED,
      '# Environment variables',
      'Read once when `svc serve` starts; a bad value stops the start with a one-line error naming the variable.',
      ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n'),
    ].join('\n\n') + '\n'
  );
}

/** Every generated page: path under docs/ -> content. */
export function generatedDocs(): Map<string, string> {
  const pages = new Map<string, string>();
  pages.set('plugins/README.md', indexPage());
  for (const kind of Object.keys(KIND_DIR) as PluginKind[]) {
    for (const p of registry[kind].values()) pages.set(`plugins/${KIND_DIR[kind]}/${p.key}.md`, pluginPage(p));
  }
  pages.set('pipeline.md', pipelinePage());
  pages.set('errors.md', errorsPage());
  pages.set('api-errors.md', apiErrorsPage());
  pages.set('settings.md', settingsPage());
  return pages;
}
