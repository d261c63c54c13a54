// The plugin reference, rendered from the same schemas the editor completes from: every source,
// sink, serializer and transform with its parameters, defaults and examples; a filter box on top.
import { useState } from 'preact/hooks';
import { daemon, type JsonSchema, type PluginDoc, type PluginSchemas } from '../../api/daemon.js';
import { Notice } from '../../components/notice.js';
import { PageHeader } from '../../components/page-header.js';
import { href } from '../../lib/router.js';
import { usePoll } from '../../lib/use-poll.js';
import { mustWrite, typeLabel } from '../../editor/schema-lookup.js';

const CATEGORIES = ['sources', 'sinks', 'serializers', 'transforms'] as const;
type Category = (typeof CATEGORIES)[number];
/** `#/plugins/sink/local` is `#/plugins/sinks/local`: a plugin's kind is singular everywhere else (its page title, the API's `kind`). */
const SINGULAR: Record<string, Category> = { source: 'sources', sink: 'sinks', serializer: 'serializers', transform: 'transforms' };
const categoryOf = (kind: string): Category | undefined => ((CATEGORIES as readonly string[]).includes(kind) ? (kind as Category) : SINGULAR[kind]);

function Parameters({ schema, common }: { schema: JsonSchema; common?: JsonSchema }) {
  const rows = Object.entries(schema.properties ?? {});
  const commonRows = Object.entries(common?.properties ?? {}).filter(([k]) => k !== 'type');
  return (
    <table class="table params" data-testid="plugin-params">
      <thead>
        <tr>
          <th>Parameter</th>
          <th>Type</th>
          <th>Default</th>
          <th>Description</th>
        </tr>
      </thead>
      <tbody>
        {[...rows.map((r) => [...r, false] as const), ...commonRows.map((r) => [...r, true] as const)].map(([k, s, isCommon]) => (
          <tr key={k}>
            <td>
              <code>{k}</code>
              {!isCommon && mustWrite(schema, k) && <span class="tag">required</span>}
              {isCommon && <span class="tag">every sink</span>}
            </td>
            <td>{typeLabel(s)}</td>
            <td>{s.default !== undefined ? <code>{JSON.stringify(s.default)}</code> : ''}</td>
            <td>{s.description ?? ''}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function PluginDetail({ doc, schemas }: { doc: PluginDoc; schemas: PluginSchemas }) {
  return (
    <section>
      <PageHeader title={`${doc.kind} ${doc.key}`} subtitle={doc.summary}>
        <a class="button" href={href(['plugins'])}>
          All plugins
        </a>
      </PageHeader>
      <dl class="facts">
        <dt>Status</dt>
        <dd>{doc.status}</dd>
        {doc.mode && (
          <>
            <dt>Mode</dt>
            <dd>{doc.mode}</dd>
          </>
        )}
        {doc.direction && (
          <>
            <dt>Direction</dt>
            <dd>{doc.direction === 'both' ? 'input and output' : doc.direction === 'in' ? 'input only (serializer_in)' : 'output only (serializer_out)'}</dd>
          </>
        )}
        {doc.delivery && (
          <>
            <dt>Delivery</dt>
            <dd>
              <strong>{doc.delivery.guarantee}</strong>: {doc.delivery.why}
            </dd>
          </>
        )}
        {doc.stateful && (
          <>
            <dt>State</dt>
            <dd>keeps state between runs</dd>
          </>
        )}
      </dl>
      <h2>Parameters</h2>
      <Parameters schema={doc.schema} common={doc.kind === 'sink' ? schemas.sink_common : undefined} />
      <h2>Examples</h2>
      {doc.examples.map((e) => (
        <figure key={e.title} class="example">
          <figcaption>{e.title}</figcaption>
          <pre>{e.yaml}</pre>
        </figure>
      ))}
    </section>
  );
}

export function PluginsPage({ kind, keyName }: { kind?: string; keyName?: string }) {
  const { data, error } = usePoll(() => daemon.schemas(), 0);
  const [filter, setFilter] = useState('');
  if (error) return <Notice tone="error">{error}</Notice>;
  if (!data) return <p class="muted">Loading…</p>;
  const category = kind === undefined ? undefined : categoryOf(kind);
  const doc = category && keyName && Object.hasOwn(data[category], keyName) ? data[category][keyName] : undefined;
  if (doc) return <PluginDetail doc={doc} schemas={data} />;
  // A link to a plugin that is not here says so, above the list to pick from.
  const missing =
    kind === undefined
      ? undefined
      : category === undefined
        ? `'${kind}' is not a kind of plugin: the kinds are ${CATEGORIES.join(', ')}.`
        : keyName !== undefined
          ? `This daemon has no ${category.replace(/s$/, '')} '${keyName}'.`
          : undefined;
  const f = filter.trim().toLowerCase();
  return (
    <section>
      {missing && (
        <div data-testid="plugin-missing">
          <Notice tone="error">{missing}</Notice>
        </div>
      )}
      <PageHeader title="Plugins" subtitle="Every source, sink, serializer and transform this daemon knows, from the plugins' own schemas.">
        <input
          type="search"
          placeholder="Filter by name or summary"
          aria-label="filter plugins"
          value={filter}
          onInput={(e) => setFilter(e.currentTarget.value)}
        />
      </PageHeader>
      <div class="plugin-columns">
        {CATEGORIES.map((cat) => {
          const list = Object.values(data[cat]).filter((p) => !f || p.key.includes(f) || p.summary.toLowerCase().includes(f));
          return (
            <div key={cat}>
              <h2>
                {cat} <span class="muted small">{list.length}</span>
              </h2>
              <ul class="plugin-list">
                {list.map((p) => (
                  <li key={p.key}>
                    <a href={href(['plugins', cat, p.key])}>{p.key}</a>
                    {p.status === 'beta' && <span class="tag">beta</span>}
                    <div class="muted small">{p.summary}</div>
                  </li>
                ))}
              </ul>
            </div>
          );
        })}
      </div>
    </section>
  );
}
