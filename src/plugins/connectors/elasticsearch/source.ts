// Source `elasticsearch` (batch): one scroll through every hit of `query` in `index`, batch_size
// hits per page, sorted by _doc (the cheapest order for a scroll). Each page is one unit of
// messages: each hit is its own JSON document, `_source` with the hit's `_index` and `_id` added as
// fields, decoded by serializer_in (json, the default, or ndjson). The scroll is cleared when the
// run ends, however it ends (last page, stop, failure). Reading consumes nothing: the next run
// reads everything again.
import type { Client } from '@elastic/elasticsearch';
import { Type, type Static } from '@sinclair/typebox';
import { SourceError } from '../../../core/errors.js';
import { connectionReporter } from '../../connector-runtime/reconnect.js';
import { defineSource, type LintIssue, type SourceUnit } from '../../types.js';
import { hostList, lintNodes, nodeFields, readFailure } from '../../connector-runtime/search-nodes.js';
import { esClient } from './client.js';

/** The time units Elasticsearch accepts for a keep-alive (`2m`, `30s`, `1h`). */
export const TIME_VALUE = '^[0-9]+(nanos|micros|ms|s|m|h|d)$';

const config = Type.Object(
  {
    ...nodeFields('elasticsearch'),
    index: Type.String({ minLength: 1, description: 'Index, alias or data stream to read; a comma-separated list and wildcards (`alarms-*`) work too.' }),
    // No schema default: defaults of object fields are merged into the configured object.
    query: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description:
          'The query clause (Query DSL), what goes under "query" in a search body: `{range: {ts: {gte: now-1d}}}`, `{bool: {...}}`. Unset: `{match_all: {}}`, every document.',
      }),
    ),
    scroll: Type.String({
      pattern: TIME_VALUE,
      default: '2m',
      description: 'How long the server keeps the scroll between two pages (a time value: 30s, 2m, 1h); a page not asked for within it fails the run.',
    }),
    batch_size: Type.Integer({ minimum: 1, maximum: 10_000, default: 500, description: 'Hits per page (the search `size`); each page is one unit.' }),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

/** Every document: doc 3's default query. */
const MATCH_ALL = { match_all: {} };

function lint(c: Config): LintIssue[] {
  const out = lintNodes(c);
  if (c.query === undefined) return out;
  const keys = Object.keys(c.query);
  if (keys.length === 1 && keys[0] === 'query') out.push({ path: 'query', message: 'query is the query clause itself: remove the outer `query:` level' });
  else if (keys.length !== 1)
    out.push({
      path: 'query',
      message: `a query clause has exactly one query type (match_all, term, range, bool...), got ${keys.length === 0 ? 'none' : keys.join(', ')}; combine several with bool`,
    });
  return out;
}

interface Hit {
  _index: string;
  _id: string;
  _source?: Record<string, unknown>;
}

interface Page {
  _scroll_id?: string;
  hits: { hits: Hit[]; total?: { value: number; relation: 'eq' | 'gte' } | number };
}

/** The exact number of matches when the answer gives it. */
const totalOf = (p: Page) => {
  const t = p.hits.total;
  return typeof t === 'number' ? t : t?.relation === 'eq' ? t.value : undefined;
};

/** One hit as a document: its source with `_index` and `_id`. */
const documentOf = (h: Hit) => Buffer.from(JSON.stringify({ ...h._source, _index: h._index, _id: h._id }));

function explain(e: unknown, c: Config, what: string): string {
  const f = readFailure(e, 'elasticsearch', what);
  if (f.type === 'index_not_found_exception') return `${what}: index '${c.index}' does not exist on ${hostList(c.hosts)}`;
  if (f.type === 'search_context_missing_exception' || (f.status === 404 && /scroll/.test(what))) {
    return `${what}: the scroll expired before the next page was asked for (scroll: ${c.scroll}); raise scroll or lower batch_size (${f.message})`;
  }
  return f.message;
}

export default defineSource({
  key: 'elasticsearch',
  summary: 'Read every document that matches a query from an Elasticsearch index, by scroll, one unit per page.',
  mode: 'batch',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a scroll consumes nothing: a run that fails or stops leaves the index as it was and the next run reads every match again, so documents can be read twice but none is skipped by the source.',
  },
  config,
  lint,
  examples: [
    {
      title: 'Every document of the last day, 1,000 per page',
      yaml: 'type: elasticsearch\nhosts: [https://es-1.example.net:9200]\nusername: svc_reader\npassword: ${ES_PASSWORD:-change-me}\nindex: alarms-*\nquery:\n  range:\n    raised_at:\n      gte: now-1d\nbatch_size: 1000',
    },
    { title: 'A whole index, default page size and keep-alive', yaml: 'type: elasticsearch\nhosts: [http://localhost:9200]\nindex: inventory' },
  ],
  // The configured query with size 0: authenticates, and checks that the index exists and the query parses.
  async test(c, { signal }) {
    const es = await esClient(c);
    try {
      await es.search({ index: c.index, size: 0, query: (c.query ?? MATCH_ALL) as never, track_total_hits: false }, { signal });
    } catch (e) {
      throw new Error(explain(e, c, `search '${c.index}' on ${hostList(c.hosts)}`), { cause: e });
    } finally {
      await es.close();
    }
  },
  create(c, ctx) {
    const report = connectionReporter(ctx, 'elasticsearch');
    let es: Client | undefined;
    /** A request, its failure read (a SourceError) and its connection state reported. */
    const ask = async <T>(what: string, op: (es: Client) => Promise<T>): Promise<T> => {
      try {
        es ??= await esClient(c);
        const r = await op(es);
        report('connected');
        return r;
      } catch (e) {
        const f = readFailure(e, 'elasticsearch', what);
        report(f.connectionLost ? 'disconnected' : 'connected', f.connectionLost ? f.message : undefined);
        throw new SourceError(`elasticsearch: ${explain(e, c, what)}`, { cause: e });
      }
    };
    return {
      async *units(signal) {
        report('connecting');
        const scrollIds = new Set<string>();
        try {
          let page = (await ask(`search '${c.index}' on ${hostList(c.hosts)}`, (es) =>
            es.search<Record<string, unknown>>(
              { index: c.index, scroll: c.scroll, size: c.batch_size, sort: ['_doc'], query: (c.query ?? MATCH_ALL) as never },
              { signal },
            ),
          )) as unknown as Page;
          const total = totalOf(page);
          let read = 0;
          for (let n = 1; ; n++) {
            if (page._scroll_id) scrollIds.add(page._scroll_id);
            const hits = page.hits.hits;
            if (hits.length === 0) return;
            read += hits.length;
            const unit: SourceUnit = {
              meta: { source_path: c.index, elasticsearch_page: n },
              messages: true,
              async *read() {
                for (const h of hits) yield documentOf(h);
              },
            };
            yield unit;
            // The last page: all matches read (saves asking for an empty one), or nothing to scroll on.
            if (signal.aborted || (total !== undefined && read >= total) || !page._scroll_id) return;
            const id = page._scroll_id;
            page = (await ask(`scroll page ${n + 1} of '${c.index}'`, (es) => es.scroll({ scroll_id: id, scroll: c.scroll }, { signal }))) as unknown as Page;
          }
        } finally {
          // However the run ends: a scroll holds segments open on the server until it expires.
          if (scrollIds.size && es)
            await es
              .clearScroll({ scroll_id: [...scrollIds] })
              .catch((e) =>
                ctx.log.warn(
                  { err: readFailure(e, 'elasticsearch', 'clear scroll').message },
                  'elasticsearch: could not clear the scroll; it expires by itself',
                ),
              );
        }
      },
      async close() {
        const c = es;
        es = undefined;
        await c?.close();
      },
    };
  },
});
