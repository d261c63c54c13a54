// The OpenSearch client (@opensearch-project/opensearch 3.9.0) for the opensearch sink: the same
// node fields as elasticsearch (client.ts there), its own retries off (the runtime retries), and
// POST /_bulk in the shape the shared bulk write (connector-runtime/search-bulk.ts) takes.
import type { Client } from '@opensearch-project/opensearch';
import { once } from '../../connector-runtime/lazy.js';
import type { BulkConnection, BulkResponse } from '../../connector-runtime/search-bulk.js';
import { REQUEST_TIMEOUT_MS, type NodeConfig } from '../../connector-runtime/search-nodes.js';

const osSdk = once(() => import('@opensearch-project/opensearch'));

/** An OpenSearch client that never retries (maxRetries 0) and does no I/O until its first request. */
export async function osClient(c: NodeConfig): Promise<Client> {
  const { Client } = await osSdk();
  return new Client({
    nodes: c.hosts,
    ...(c.username !== undefined ? { auth: { username: c.username, password: c.password ?? '' } } : {}),
    ...(c.verify_ssl ? {} : { ssl: { rejectUnauthorized: false } }),
    maxRetries: 0,
    requestTimeout: REQUEST_TIMEOUT_MS,
    name: 'svc',
  });
}

/** Runs a request of the client, aborting it when `signal` fires (the client takes no signal). */
async function abortable<T>(req: Promise<T> & { abort(): void }, signal?: AbortSignal): Promise<T> {
  if (!signal) return req;
  const onAbort = () => req.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    return await req;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** POST /_bulk through the OpenSearch client (application/x-ndjson). */
export function osBulk(os: Client): BulkConnection {
  return {
    bulk: async (body, query, signal) =>
      (
        await abortable(
          os.transport.request({ method: 'POST', path: '/_bulk', querystring: query, bulkBody: body }, { requestTimeout: REQUEST_TIMEOUT_MS }),
          signal,
        )
      ).body as BulkResponse,
    close: () => os.close(),
  };
}

/** GET / (cluster info): authenticates; resolves with the cluster's version line for messages. */
export async function osInfo(os: Client, signal?: AbortSignal): Promise<{ distribution?: string; number?: string }> {
  const res = await abortable(os.transport.request({ method: 'GET', path: '/' }), signal);
  return ((res.body as { version?: { distribution?: string; number?: string } })?.version ?? {}) as { distribution?: string; number?: string };
}
