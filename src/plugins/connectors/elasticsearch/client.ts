// The Elasticsearch client (@elastic/elasticsearch 8.19.2) with its own retries off (the runtime
// retries). The node fields and the reading of its errors are shared with opensearch
// (connector-runtime/search-nodes.ts).
import type { Client } from '@elastic/elasticsearch';
import { once } from '../../connector-runtime/lazy.js';
import { REQUEST_TIMEOUT_MS, type NodeConfig } from '../../connector-runtime/search-nodes.js';

const esSdk = once(() => import('@elastic/elasticsearch'));

/** An Elasticsearch client that never retries (maxRetries 0) and does no I/O until its first request. */
export async function esClient(c: NodeConfig): Promise<Client> {
  const { Client } = await esSdk();
  return new Client({
    nodes: c.hosts,
    ...(c.username !== undefined ? { auth: { username: c.username, password: c.password ?? '' } } : {}),
    ...(c.verify_ssl ? {} : { tls: { rejectUnauthorized: false } }),
    maxRetries: 0,
    requestTimeout: REQUEST_TIMEOUT_MS,
    name: 'svc',
  });
}
