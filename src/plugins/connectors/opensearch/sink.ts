// Sink `opensearch`: each record is one document, indexed with `_bulk` `index` actions into the
// index that `index` names. The write is the elasticsearch sink's (connector-runtime/search-bulk.ts: chunks,
// per-item 429/503 retried and other refusals dead-lettered, index tokens); only the client differs.
import { Type } from '@sinclair/typebox';
import { defineSink } from '../../types.js';
import { bulkFields, bulkSink, indexTemplateDescription, lintBulk } from '../../connector-runtime/search-bulk.js';
import { hostList, lintNodes, nodeFields, readFailure } from '../../connector-runtime/search-nodes.js';
import { osBulk, osClient, osInfo } from './client.js';

const config = Type.Object(
  {
    ...nodeFields('opensearch'),
    index: Type.String({ minLength: 1, maxLength: 255, description: indexTemplateDescription }),
    ...bulkFields,
  },
  { additionalProperties: false },
);

export default defineSink({
  key: 'opensearch',
  summary: 'Index each record as a document in OpenSearch with _bulk (chunk_size per request); per-document failures are retried (429) or dead-lettered.',
  accepts: 'records',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a record counts as written once its _bulk item answered 2xx; a request whose answer is lost is sent again by the runtime, so without id_field a document can be indexed twice (with id_field the second write overwrites the first).',
  },
  config,
  lint: (c) => [...lintNodes(c), ...lintBulk(c, c.index, 'index')],
  examples: [
    {
      title: 'Daily indices, self-signed test cluster',
      yaml: 'type: opensearch\nhosts: [https://localhost:9200]\nusername: admin\npassword: ${OPENSEARCH_PASSWORD:-change-me}\nverify_ssl: false\nindex: "{pipeline}-{YYYY}.{MM}.{DD}"\nretry_count: 3',
    },
    {
      title: 'Monthly indices by the record time, ids from the record',
      yaml: 'type: opensearch\nhosts: [https://os-1.example.net:9200, https://os-2.example.net:9200]\nusername: svc_writer\npassword: ${OPENSEARCH_PASSWORD:-change-me}\nindex: kpi-{YYYY}.{MM}\ntimestamp_field: period_start\nid_field: kpi_id',
    },
  ],
  // GET / authenticates (any distribution answers it; the bulk API is the same).
  async test(c, { signal }) {
    const os = await osClient(c);
    try {
      await osInfo(os, signal);
    } catch (e) {
      throw new Error(readFailure(e, 'opensearch', `GET / on ${hostList(c.hosts)}`).message, { cause: e });
    } finally {
      await os.close();
    }
  },
  create(c, ctx) {
    return bulkSink(
      {
        product: 'opensearch',
        hosts: c.hosts,
        index: c.index,
        id_field: c.id_field,
        chunk_size: c.chunk_size,
        timestamp_field: c.timestamp_field,
        connect: async () => osBulk(await osClient(c)),
      },
      ctx,
    );
  },
});
