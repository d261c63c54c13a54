// Sink `elasticsearch`: each record is one document, indexed with `_bulk` `index` actions into the
// index that index_template names (bulk.ts, shared with the opensearch sink), through an ingest
// pipeline when `pipeline` is set. Per-item refusals are reported to the runtime (429/503 retried,
// the rest dead-lettered with the item's error); the serializer is not used.
import type { Client } from '@elastic/elasticsearch';
import { Type } from '@sinclair/typebox';
import { defineSink } from '../../types.js';
import { bulkFields, bulkSink, indexTemplateDescription, lintBulk, type BulkResponse } from '../../connector-runtime/search-bulk.js';
import { hostList, lintNodes, nodeFields, readFailure, REQUEST_TIMEOUT_MS } from '../../connector-runtime/search-nodes.js';
import { esClient } from './client.js';

const config = Type.Object(
  {
    ...nodeFields('elasticsearch'),
    index_template: Type.String({ minLength: 1, maxLength: 255, description: indexTemplateDescription }),
    ...bulkFields,
    pipeline: Type.Optional(
      Type.String({ minLength: 1, description: 'Ingest pipeline that processes every document (the `pipeline` parameter of _bulk); it must exist.' }),
    ),
  },
  { additionalProperties: false },
);

/** POST /_bulk through the Elasticsearch client (its ndjson content type, product check, no retries). */
export const esBulk = (es: Client) => ({
  bulk: (body: string, query: Record<string, string>, signal: AbortSignal) =>
    es.transport.request<BulkResponse>({ method: 'POST', path: '/_bulk', querystring: query, bulkBody: body }, { signal, requestTimeout: REQUEST_TIMEOUT_MS }),
  close: () => es.close(),
});

export default defineSink({
  key: 'elasticsearch',
  summary:
    'Index each record as a document with _bulk (chunk_size per request), optionally through an ingest pipeline; per-document failures are retried (429) or dead-lettered.',
  accepts: 'records',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a record counts as written once its _bulk item answered 2xx (the node has it in its translog); a request whose answer is lost is sent again by the runtime, so without id_field a document can be indexed twice (with id_field the second write overwrites the first).',
  },
  config,
  lint: (c) => [...lintNodes(c), ...lintBulk(c, c.index_template, 'index_template')],
  examples: [
    {
      title: 'Daily indices by run date, ids from the record, 429s retried',
      yaml: 'type: elasticsearch\nhosts: [https://es-1.example.net:9200, https://es-2.example.net:9200]\nusername: svc_writer\npassword: ${ES_PASSWORD:-change-me}\nindex_template: alarms-{YYYY}.{MM}.{DD}\nid_field: alarm_id\nretry_count: 5\nretry_delay_seconds: 1',
    },
    {
      title: 'Through an ingest pipeline, daily indices by the event time',
      yaml: 'type: elasticsearch\nhosts: [http://localhost:9200]\nindex_template: pm-{pipeline}-{YYYY}.{MM}\ntimestamp_field: collected_at\npipeline: pm-enrich\nchunk_size: 1000',
    },
  ],
  // GET / authenticates and passes the product check; an ingest pipeline must exist.
  async test(c, { signal }) {
    const es = await esClient(c);
    try {
      try {
        await es.info(undefined, { signal });
      } catch (e) {
        throw new Error(readFailure(e, 'elasticsearch', `GET / on ${hostList(c.hosts)}`).message, { cause: e });
      }
      if (c.pipeline) {
        try {
          await es.ingest.getPipeline({ id: c.pipeline }, { signal });
        } catch (e) {
          const f = readFailure(e, 'elasticsearch', `GET _ingest/pipeline/${c.pipeline}`);
          throw new Error(
            f.status === 404 ? `ingest pipeline '${c.pipeline}' does not exist on ${hostList(c.hosts)}; create it or correct pipeline` : f.message,
            { cause: e },
          );
        }
      }
    } finally {
      await es.close();
    }
  },
  create(c, ctx) {
    return bulkSink(
      {
        product: 'elasticsearch',
        hosts: c.hosts,
        index: c.index_template,
        id_field: c.id_field,
        chunk_size: c.chunk_size,
        timestamp_field: c.timestamp_field,
        pipeline: c.pipeline,
        connect: async () => esBulk(await esClient(c)),
      },
      ctx,
    );
  },
});
